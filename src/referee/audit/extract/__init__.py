"""Evidence extractor backends behind one registry; each sees the claim-blind view and nothing else."""

from __future__ import annotations

from typing import Any, Iterable, Mapping, Protocol

from referee.audit.records import ALL_FIELDS, FINDING_FIELDS, Finding
from referee.audit.view.blind import ClaimBlindView, ViewObservation
from referee.core.registry import FACTORY, Registry


class Extractor(Protocol):
    """What a backend is: a name, a model and prompt version for the cache key, and `extract`."""

    name: str
    model: str | None
    prompt_version: str

    def extract(self, view: ClaimBlindView, sample: int) -> dict[str, Finding]: ...


# holds factories; referee.audit.run.backends builds one per audit with the keyword config it declares
extractors: Registry[Any] = Registry("extractor backend", "referee.extractors", item=FACTORY)


def get_extractor_factory(name: str) -> Any:
    """The factory registered under `name` (rules, llm, rules+llm, or a `referee.extractors` entry point).

    >>> get_extractor_factory("rules")().name
    'rules'
    """
    from referee.audit.extract import combined, llm, rules  # noqa: F401  (registration)

    return extractors.get(name)


def finding(value: str, support: Iterable[int] = (), note: str | None = None) -> Finding:
    """A finding citing `support` (sorted, each step once).

    >>> finding("yes", [3, 1, 3]).support
    [1, 3]
    """
    return Finding(value=value, support=sorted(set(support)), note=note)  # type: ignore[arg-type]


def obs_text(o: ViewObservation | None) -> str:
    """Everything an observation shows, as one text ('' for none); made once per observation (the view is frozen)."""
    return "" if o is None else o.as_text()


def abstain(fields: Mapping[str, Finding], observed: set[int]) -> dict[str, Finding]:
    """No observation, no `no`: a `no` must cite a step whose observation was recorded (an error answer, a
    read-back, another entity acted on); otherwise it becomes `unknown`, as absence alone never shows it.

    >>> out = abstain({"committed": Finding(value="no", support=[0])}, observed=set())
    >>> out["committed"].value, out["committed"].note
    ('unknown', 'abstained: no cited step has an observation that could show this')
    """
    out = dict(fields)
    for f, fe in fields.items():
        if fe.value == "no" and not set(fe.support) & observed:
            out[f] = Finding(value="unknown", support=[],
                                   note="abstained: no cited step has an observation that could show this")
    return out


def validate_citations(fields: Mapping[str, Finding], n_steps: int,
                       observed: set[int] | None = None) -> dict[str, Finding]:
    """Enforce the citation rule: a cited index outside the trace makes the field `unknown`, and so
    does a `yes` that cites nothing. Missing fields are `unknown`.

    >>> out = validate_citations({"action": Finding(value="yes", support=[7])}, 3)
    >>> out["action"].value, out["target_id"].value
    ('unknown', 'unknown')
    """
    out: dict[str, Finding] = {}
    for f in FINDING_FIELDS + tuple(k for k in fields if k not in FINDING_FIELDS and k in ALL_FIELDS):
        fe = fields.get(f)
        if fe is None:
            out[f] = Finding(value="unknown", note="not extracted")
            continue
        bad = [i for i in fe.support if not (0 <= i < n_steps)]
        if bad:
            out[f] = Finding(value="unknown", support=[], note=f"invalid citation {bad} (trace has {n_steps} steps)")
        elif fe.value == "yes" and not fe.support:
            out[f] = Finding(value="unknown", note="yes without a cited step")
        else:
            out[f] = fe
    return out if observed is None else abstain(out, observed)
