"""The llm extractor: any OpenAI-compatible model reads the claim-blind view and returns cited evidence fields."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, ClassVar

from referee.audit.extract import extractors
from referee.audit.records import ALL_FIELDS, FINDING_FIELDS, Finding
from referee.audit.view.blind import ClaimBlindView, canonical_json
from referee.core.llm import LLMError

EXTRACT_PROMPT_VERSION = "2"  # 2: details, abstention, information and conditional tasks, tool descriptions
MAX_VIEW_CHARS = 60_000     # long traces are cut in the middle: start and end carry the most evidence
MAX_OBS_CHARS = 1_500

SYSTEM = """You extract evidence from an AI agent's execution trace. You see the task, the initial
observation, and each step's action and observation. You do NOT see what the agent said about its
work, and you must not guess it. Decide each field from the trace alone:
- action: the agent performed an action relevant to the task.
- target_id: that action targeted the entity the task names (right item, right id, right recipient).
- transition: the relevant state changed during the run because of the agent (not already true at
  the start, not an empty list, not an unchanged screen).
- committed: the change was saved/sent/confirmed and accepted (no error, not left typed-but-unsaved).
- final_supports_goal: the final state shown in the trace satisfies the task.
- details: the details the task states (ids, dates, times, amounts, quoted text, options) are the ones
  the agent's write carried: yes = verified, no = contradicted, unknown = cannot be checked.
Each field is "yes", "no" or "unknown" with "support": the step indices (integers) that show it.
A "yes" must cite at least one step. A "no" must cite a step whose OBSERVATION shows the failure or
the contrary state; where nothing was observed, answer "unknown", never "no".
A task that only asks a question needs no write: transition and committed are "unknown" there, and
action/target_id are about looking up the right thing. A conditional task ("if X, do Y") where the
trace does not show whether X held: not acting is no evidence either way ("unknown").
Answer with JSON only, in this shape:
{"action": {"value": "yes", "support": [3]}, "target_id": {...}, "transition": {...},
 "committed": {...}, "final_supports_goal": {...}, "details": {...}}"""

_FIELD = {"type": "object", "properties": {"value": {"type": "string", "enum": ["yes", "no", "unknown"]},
                                           "support": {"type": "array", "items": {"type": "integer"}}},
          "required": ["value", "support"]}
SCHEMA = {"type": "object", "properties": {f: _FIELD for f in ALL_FIELDS}, "required": list(FINDING_FIELDS)}


def render_view(view: ClaimBlindView) -> str:
    """The prompt text for a view: compact JSON per step, long observations and traces trimmed."""
    lines = [f"TASK: {view.task}"]
    if view.tools:
        lines.append("TOOLS OFFERED: " + _trim("; ".join(f"{n}: {d}" for n, d in view.tools), 4 * MAX_OBS_CHARS))
    if view.initial_observation is not None:
        initial = canonical_json(view.initial_observation.as_json())
        lines.append("INITIAL OBSERVATION: " + _trim(initial, 4 * MAX_OBS_CHARS))
    for s in view.steps:
        lines.append(f"STEP {s.index}: " + _trim(canonical_json(s.as_json()), MAX_OBS_CHARS))
    text = "\n".join(lines)
    if len(text) > MAX_VIEW_CHARS:
        half = MAX_VIEW_CHARS // 2
        text = text[:half] + "\n... [middle of the trace omitted] ...\n" + text[-half:]
    return text


def _trim(s: str, n: int) -> str:
    return s if len(s) <= n else s[: n // 2] + " ... " + s[-n // 2:]


def parse_fields(data: dict[str, Any] | None) -> dict[str, Finding]:
    """Model JSON -> fields; anything malformed becomes `unknown` (never `yes`).

    >>> parse_fields({"action": {"value": "yes", "support": [1]}, "committed": "maybe"})["committed"].value
    'unknown'
    >>> [parse_fields({"action": {"value": "yes", "support": s}})["action"].value for s in ("10", [True], [0.9], 2)]
    ['unknown', 'unknown', 'unknown', 'yes']
    """
    out: dict[str, Finding] = {}
    for f in ALL_FIELDS:
        raw = (data or {}).get(f)
        if f not in FINDING_FIELDS and raw is None:
            out[f] = Finding(value="unknown", note="not given by the model")
            continue
        if isinstance(raw, str):  # a bare "yes" has no citation
            raw = {"value": raw, "support": []}
        if not isinstance(raw, dict) or raw.get("value") not in ("yes", "no", "unknown"):
            out[f] = Finding(value="unknown", note="missing or malformed in the model answer")
            continue
        sup = raw.get("support") or []
        if type(sup) is int:
            sup = [sup]
        # step indices are JSON integers: a string ("10" is no steps 1 and 0), a float or a boolean is no citation
        if not isinstance(sup, list) or not all(type(x) is int for x in sup):
            out[f] = Finding(value="unknown", note="non-integer citation")
            continue
        out[f] = Finding(value=raw["value"], support=list(sup))
    return out


@dataclass
class LLMExtractor:
    """n runs of one model over the same view; sample varies the request so caches key each run."""

    needs_llm: ClassVar[bool] = True  # built with client= (referee.audit.run.backends)
    default_runs: ClassVar[int] = 5   # a model's answers vary: vote over 5 runs unless --runs says otherwise

    client: Any  # referee.core.llm.LLMClient
    name: str = "llm"
    prompt_version: str = EXTRACT_PROMPT_VERSION
    temperature: float | None = None  # None: the client config decides (--temperature)

    @property
    def model(self) -> str:
        model: str = self.client.config.model
        return model

    def extract(self, view: ClaimBlindView, sample: int = 0) -> dict[str, Finding]:
        return self.ask(view, sample, FINDING_FIELDS)

    def ask(self, view: ClaimBlindView, sample: int, fields: tuple[str, ...]) -> dict[str, Finding]:
        """One call about `fields` only (all evidence fields: the `llm` backend's own prompt, unchanged); the
        `rules+llm` backend asks about the fields its rules left unknown (referee.audit.extract.combined)."""
        whole = set(fields) >= set(FINDING_FIELDS)
        only = "" if whole else f"\n\nAnswer only these fields: {', '.join(fields)}."
        schema = SCHEMA if whole else {"type": "object", "properties": {f: _FIELD for f in fields},
                                       "required": list(fields)}
        messages = [{"role": "system", "content": SYSTEM},
                    {"role": "user", "content": render_view(view) + only + f"\n\n(extraction run {sample})"}]
        res = self.client.chat(messages, json_schema=schema, schema_name="evidence", temperature=self.temperature)
        if res.data is None:
            # no answer to stand by (transport failure, timeout, a malformed response, no JSON object): the
            # auditor makes the sample unknown and caches nothing, so a later run asks again
            raise LLMError(f"model answer unusable: {res.error or 'no JSON'}"[:200])
        if not any(_answered(res.data.get(f)) for f in fields):
            # a JSON object that answers nothing asked ({"foo": "bar", "transition": 42}): no more an answer than
            # no JSON, and cached it would stand for this view until the prompt version changes
            raise LLMError(f"model answer unusable: no evidence field answered ({', '.join(fields)})")
        return parse_fields(res.data)


def _answered(raw: Any) -> bool:
    """Whether a model gave a field a value at all (yes, no or unknown), cited or not.

    >>> _answered({"value": "no", "support": []}), _answered("yes"), _answered(42), _answered({"value": "maybe"})
    (True, True, False, False)
    """
    value = raw.get("value") if isinstance(raw, dict) else raw
    return isinstance(value, str) and value in ("yes", "no", "unknown")


extractors.add("llm", LLMExtractor)


def dumps(ev: dict[str, Finding]) -> str:
    return json.dumps({k: v.model_dump() for k, v in ev.items()})
