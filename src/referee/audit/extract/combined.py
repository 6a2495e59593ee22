"""The `rules+llm` extractor: the rules first, then one model call per record for the fields they left unknown."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Mapping

from referee.audit.extract import extractors, validate_citations
from referee.audit.extract.llm import LLMExtractor
from referee.audit.extract.rules import RulesExtractor, rules_extractor
from referee.audit.records import FINDING_FIELDS, Finding
from referee.audit.view.blind import ClaimBlindView
from referee.errors import BackendError

# 1: the model fills only fields the rules left unknown, with the llm backend's citation rules; the cache key is
# "<this>/rules:<rules version>/llm:<llm prompt version>", so neither backend's cached findings stand for these
COMBINED_VERSION = "1"
FROM_MODEL = "from the model (the rules left it unknown)"


def open_fields(findings: Mapping[str, Finding]) -> tuple[str, ...]:
    """The evidence fields the rules left `unknown`: the ones the model is asked about.

    >>> open_fields({"action": Finding(value="yes", support=[0]), "target_id": Finding(value="unknown")})
    ('target_id', 'transition', 'committed', 'final_supports_goal')
    """
    return tuple(f for f in FINDING_FIELDS if f not in findings or findings[f].value == "unknown")


def ask_model(findings: Mapping[str, Finding]) -> bool:
    """Whether the rules' findings leave something the model may settle: a field `unknown` and none `no`.

    A rules `no` stands (the model never overrides the rules), and a state with one `no` among the fields a policy
    requires is not completed whatever the others are; the extractor is claim-blind and policy-blind (it does not
    know which fields the task class requires), so any `no` counts. This is the hook for other triggers (a risk
    score above a threshold): everything that decides whether a record costs a model call is here.

    >>> ask_model({"action": Finding(value="yes", support=[0]), "committed": Finding(value="unknown")})
    True
    >>> ask_model({"action": Finding(value="no", support=[0]), "committed": Finding(value="unknown")})
    False
    """
    return bool(open_fields(findings)) and not any(findings[f].value == "no" for f in FINDING_FIELDS if f in findings)


class ModelUnanswered(BackendError):
    """The model call got no usable answer: the rules' findings are `kept` (the auditor lists the error, caches
    nothing, and a resume asks again)."""

    def __init__(self, message: str, kept: dict[str, Finding]) -> None:
        super().__init__(message)
        self.kept = kept


def merge(rules: Mapping[str, Finding], model: Mapping[str, Finding], asked: tuple[str, ...], n_steps: int,
          observed: set[int]) -> dict[str, Finding]:
    """The rules' findings with each asked field the model settled: its answer passes the llm backend's citation
    rules (validate_citations: steps that exist, a `yes` cites one, a `no` cites an observed step) or the field
    stays `unknown`, with a note saying why. A field the rules settled is never changed.

    >>> yes, unk = Finding(value="yes", support=[0]), Finding(value="unknown")
    >>> out = merge({"action": yes, "committed": unk}, {"action": Finding(value="no", support=[0]),
    ...             "committed": Finding(value="yes", support=[9])}, ("committed",), 2, {0, 1})
    >>> out["action"].value, out["committed"].value, out["committed"].note
    ('yes', 'unknown', 'model answer discarded: invalid citation [9] (trace has 2 steps)')
    """
    checked = validate_citations({f: model[f] for f in asked if f in model}, n_steps, observed)
    out = dict(rules)
    for f in asked:
        said, got = model.get(f), checked[f]
        if got.value != "unknown":
            out[f] = Finding(value=got.value, support=list(got.support), note=FROM_MODEL)
        elif said is not None and said.value != "unknown":  # answered, but not as the citation rules ask
            out[f] = Finding(value="unknown", note=f"model answer discarded: {got.note}")
        else:
            why = f" ({said.note})" if said is not None and said.note else ""
            out[f] = Finding(value="unknown", note=f"the model left it unknown{why}")
    return out


@dataclass(frozen=True)
class RulesLLMExtractor:
    """The rules on every record; the model once per record, and only where the rules leave a field unknown."""

    needs_llm: ClassVar[bool] = True   # built with client= (referee.audit.run.backends)
    default_runs: ClassVar[int] = 1    # the rules are deterministic; --runs n asks the model n times per record

    rules: RulesExtractor
    llm: LLMExtractor
    name: str = "rules+llm"

    @property
    def model(self) -> str | None:
        return self.llm.model

    @property
    def prompt_version(self) -> str:
        return f"{COMBINED_VERSION}/rules:{self.rules.prompt_version}/llm:{self.llm.prompt_version}"

    def extract(self, view: ClaimBlindView, sample: int = 0) -> dict[str, Finding]:
        found = self.rules.extract(view, sample)
        if not ask_model(found):
            return found
        asked = open_fields(found)
        try:
            answer = self.llm.ask(view, sample, asked)
        except BackendError as exc:
            raise ModelUnanswered(exc.message, kept=found) from exc
        observed = {s.index for s in view.steps if s.observation is not None}
        return merge(found, answer, asked, len(view.steps), observed)


def rules_llm_extractor(*, client: Any, tools: Path | None = None) -> RulesLLMExtractor:
    """The `rules+llm` backend's factory: the rules (with the tool map, when `--tools` is given) and the model.

    >>> x = rules_llm_extractor(client=None); x.name, x.prompt_version.startswith(COMBINED_VERSION + "/rules:")
    ('rules+llm', True)
    """
    return RulesLLMExtractor(rules=rules_extractor(tools=tools), llm=LLMExtractor(client))


# function attributes, read by referee.audit.run.backends (needs_llm, takes_tools); mypy has no notion of those
rules_llm_extractor.needs_llm = True  # type: ignore[attr-defined]
rules_llm_extractor.takes_tools = True  # type: ignore[attr-defined]
extractors.add("rules+llm", rules_llm_extractor)
