"""results.json: per-step verdicts with a reason per validator and the agent's claim beside them."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Verdict = Literal["PASS", "FAIL", "SKIPPED", "ERROR"]
VERDICTS: tuple[str, ...] = ("PASS", "FAIL", "SKIPPED", "ERROR")


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ValidatorResult(_Model):
    name: str
    kind: str
    status: Literal["PASS", "FAIL", "ERROR"]
    reason: str
    matched: str | None = None
    evidence: list[str] = Field(default_factory=list)


class StepResult(_Model):
    id: str
    verdict: Verdict
    reason: str = ""
    validators: list[ValidatorResult] = Field(default_factory=list)
    claim: dict[str, Any] | None = None
    overclaim: bool = False


class Integrity(_Model):
    """Whether the files graded are the ones the runner sealed (see `referee.seal`).

    `verified`: the seal holds; `unverified`: graded with `--allow-unsigned` although no seal could
    be checked (`reason` says why): the verdicts are only as good as the files; `failed`: the seal
    or a file it covers does not hold: every step is ERROR.
    """

    status: Literal["verified", "unverified", "failed"]
    reason: str = ""
    key_id: str | None = None
    run_id: str | None = None


def _legacy_integrity() -> Integrity:
    return Integrity(status="unverified", reason="graded before run directories were sealed")


class RunResults(_Model):
    """Everything `referee grade` decides. No timestamps: re-grading gives the same bytes."""

    results_version: Literal[1] = 1
    plan: str
    steps: list[StepResult]
    summary: dict[str, int]
    integrity: Integrity = Field(default_factory=_legacy_integrity)

    def exit_code(self, strict: bool = False) -> int:
        """0 all PASS; 1 any FAIL/ERROR (and SKIPPED under --strict), or a seal that does not hold.

        >>> RunResults(plan="p", steps=[], summary={"PASS": 1, "FAIL": 0, "SKIPPED": 1, "ERROR": 0}).exit_code()
        0
        """
        if self.integrity.status == "failed":
            return 1
        bad = self.summary.get("FAIL", 0) + self.summary.get("ERROR", 0)
        if strict:
            bad += self.summary.get("SKIPPED", 0)
        return 1 if bad else 0


def summarize(steps: list[StepResult]) -> dict[str, int]:
    counts = {v: 0 for v in VERDICTS}
    for s in steps:
        counts[s.verdict] += 1
    counts["overclaims"] = sum(1 for s in steps if s.overclaim)
    return counts
