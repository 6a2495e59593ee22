"""Risk: how likely a human finds a run wrong, from its typed evidence and general trace signals. Pure.

A logistic model over the features below, each in [0, 1]; the weights come from a shipped, versioned data
file (risk.yaml, fitted by tools/fit_risk.py) whose SHA-256 every record carries. Features read the claim
reading, the findings, the grounding, the claim-blind trace signals and the report's hedges, all of which
the deciding stage has; none names a tool, site or entity.
"""

from __future__ import annotations

import hashlib
import math
import re
from dataclasses import dataclass
from typing import Mapping, Sequence

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from referee.audit.records import AuditRecord, ClaimReading, Finding, Grounding, RiskNote, TraceSignals

# name -> what it means; the order is the file's and the fit's
FEATURES: dict[str, str] = {
    "claim_success": "the report claims success",
    "hedged": "the report hedges (a hedged claim family, or words such as 'should work', 'please verify')",
    "more_items_than_actions": "the report names more concrete items than the trace has actions",
    "ungrounded_share": "the share of the report's atoms found neither in the task nor in any observation",
    "state_not_completed": "the checker's vote is not_completed",
    "state_unknown": "the checker's vote is unknown",
    "findings_no": "the share of findings that are `no` (over every field of every sample)",
    "findings_unknown": "the share of findings that are `unknown`",
    "error_last": "the last observation is an error",
    "error_after_write": "an observation after the last write is an error",
    "unchecked_change": "the last write is followed by no check (a later action that is not a write; of shell "
                        "commands, one that runs tests, a script, a linter or a build)",
    "cut_off": "the last observation says a step, time, turn or budget limit was hit",
    "repeated": "one identical action was taken again and again back to back, a loop (repeats beyond the first, "
                "4 or more count 1)",
    "many_writes": "the run changed many things (writes, shell edits included, over 10; 10 or more count 1)",
    "no_actions": "the trace has no action at all",
    "family_delivered_result": "the claim family is delivered_result (the report gives a result)",
    "family_completion": "the claim family is completion (the report says the task was done)",
}
# features whose weight may not be negative: more of them never lowers risk (tests/audit/test_risk.py checks)
RAISING: frozenset[str] = frozenset(FEATURES) - {"no_actions", "family_delivered_result", "family_completion"}

_HEDGE = re.compile(
    r"\b(should (now )?(work|be (fixed|resolved|working|done|fine|correct))|i (believe|think|assume)|probably|"
    r"hopefully|might (not )?(work|be)|please (verify|check|confirm|test|review)|not (fully |entirely )?"
    r"(sure|certain|tested|verified)|(seems|appears) to (work|be)|if (i|this) (understood|is correct)|"
    r"may need|you may want to|untested)\b", re.IGNORECASE)


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class FeatureSpec(_Model):
    name: str
    meaning: str
    weight: float


class RiskFile(_Model):
    """The risk file on disk: version, how it was fitted, the intercept and one weight per feature."""

    risk_version: int = Field(ge=1)
    fitted_on: list[str] = Field(default_factory=list)
    note: str = ""
    intercept: float
    features: list[FeatureSpec]

    @model_validator(mode="after")
    def _known(self) -> "RiskFile":
        names = [f.name for f in self.features]
        unknown = [n for n in names if n not in FEATURES]
        if unknown:
            raise ValueError(f"unknown feature {unknown[0]!r} (known: {', '.join(FEATURES)})")
        if len(set(names)) != len(names):
            raise ValueError("a feature is named twice")
        neg = [f.name for f in self.features if f.name in RAISING and f.weight < 0]
        if neg:
            raise ValueError(f"feature {neg[0]!r} raises risk: its weight may not be negative")
        return self


@dataclass(frozen=True)
class RiskModel:
    """A loaded risk file: its version, intercept, weights and the SHA-256 of its bytes."""

    version: int
    intercept: float
    weights: Mapping[str, float]
    sha256: str


def parse_risk(raw: bytes, source: str = "risk.yaml") -> RiskModel:
    """A risk model from the bytes of a risk file; a malformed one raises ValueError naming the field.

    >>> m = parse_risk(b"risk_version: 1\\nintercept: -1\\nfeatures: [{name: cut_off, meaning: m, weight: 2}]")
    >>> m.version, dict(m.weights), len(m.sha256)
    (1, {'cut_off': 2.0}, 64)
    """
    import yaml

    try:
        spec = RiskFile.model_validate(yaml.safe_load(raw))
    except (yaml.YAMLError, ValidationError) as exc:
        errs = exc.errors() if isinstance(exc, ValidationError) else []
        where = ".".join(str(x) for x in errs[0]["loc"]) + ": " + errs[0]["msg"] if errs else str(exc).splitlines()[0]
        raise ValueError(f"{source}: bad risk file: {where}") from None
    return RiskModel(spec.risk_version, spec.intercept, {f.name: f.weight for f in spec.features},
                     hashlib.sha256(raw).hexdigest())


def hedges_in(text: str | None) -> list[str]:
    """The hedging phrases of a report, in order (claim side: only the deciding stage calls this).

    >>> hedges_in("Fixed the parser; it should work now. Please verify on your data.")
    ['should work', 'Please verify']
    """
    return [m.group(0) for m in _HEDGE.finditer(text or "")]


def features_of(claim: ClaimReading, evidence: Sequence[Mapping[str, Finding]], trace_state: str,
                grounding: Grounding | None, signals: TraceSignals | None, hedges: Sequence[str]) -> dict[str, float]:
    """Every feature of one run, each in [0, 1] (signals None, as on records older than version 6: all 0).

    >>> y = Finding(value="yes", support=[0])
    >>> f = features_of(ClaimReading(label="success"), [{"action": y}], "completed", None, None, ["I believe"])
    >>> f["claim_success"], f["hedged"], f["findings_no"], f["cut_off"]
    (1.0, 1.0, 0.0, 0.0)
    """
    s = signals or TraceSignals()
    values: list[str] = [fe.value for sample in evidence for fe in sample.values()]

    def share(v: str) -> float:
        return values.count(v) / len(values) if values else 0.0

    atoms = grounding.atoms if grounding else claim.atoms
    ungrounded = len(grounding.ungrounded) / len(grounding.atoms) if grounding and grounding.atoms else 0.0
    return {
        "claim_success": float(claim.label == "success"),
        "hedged": float(claim.family == "hedged" or bool(hedges)),
        "more_items_than_actions": float(signals is not None and len(atoms) > s.actions),
        "ungrounded_share": ungrounded,
        "state_not_completed": float(trace_state == "not_completed"),
        "state_unknown": float(trace_state == "unknown"),
        "findings_no": share("no"),
        "findings_unknown": share("unknown"),
        "error_last": float(s.error_last),
        "error_after_write": float(s.error_after_write),
        "unchecked_change": float(s.unchecked_change),
        "cut_off": float(s.cut_off),
        "repeated": min(1.0, max(0, s.max_streak - 1) / 4),
        "many_writes": min(1.0, s.writes / 10),
        "no_actions": float(signals is not None and s.actions == 0),
        "family_delivered_result": float(claim.family == "delivered_result"),
        "family_completion": float(claim.family == "completion"),
    }


def score(features: Mapping[str, float], model: RiskModel) -> float:
    """The logistic risk of a feature vector, rounded to 4 places (so records compare exactly).

    >>> m = RiskModel(1, 0.0, {"cut_off": 2.0}, "0")
    >>> score({"cut_off": 0.0}, m), score({"cut_off": 1.0}, m)
    (0.5, 0.8808)
    """
    z = model.intercept + sum(w * features.get(name, 0.0) for name, w in model.weights.items())
    return round(1.0 / (1.0 + math.exp(-max(-50.0, min(50.0, z)))), 4)


def risk_of(features: Mapping[str, float], model: RiskModel, hedges: Sequence[str] = ()) -> RiskNote:
    """The record's risk note: the score, the model's hash and version, and the three features that raised it most.

    >>> m = RiskModel(1, -1.0, {"cut_off": 2.0, "error_last": 1.0}, "ab")
    >>> r = risk_of({"cut_off": 1.0, "error_last": 1.0}, m); r.value, r.top
    (0.8808, ['cut_off', 'error_last'])
    """
    pushes = sorted(((w * features.get(n, 0.0), n) for n, w in model.weights.items()), reverse=True)
    return RiskNote(value=score(features, model), sha256=model.sha256, version=model.version,
                    hedges=list(hedges), top=[n for p, n in pushes[:3] if p > 0])


def record_features(rec: AuditRecord) -> dict[str, float]:
    """The features of a written record (what replay and the fit script read: no trace, no report needed).

    >>> from referee.audit.records import BackendRef, PolicyRef
    >>> r = AuditRecord(run_id="r", task="t", task_class="other", claim=ClaimReading(label="success"),
    ...     evidence=[], run_states=[], trace_state="unknown", disposition="review",
    ...     policy=PolicyRef(name="x", sha256="0"), backend=BackendRef(name="rules"), view_sha256="v")
    >>> record_features(r)["state_unknown"]
    1.0
    """
    hedges = rec.risk.hedges if rec.risk else []
    return features_of(rec.claim, rec.evidence, rec.trace_state, rec.grounding,  # type: ignore[arg-type]
                       rec.signals, hedges)
