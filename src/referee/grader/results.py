"""results.json: per-step verdicts with a reason per validator and the agent's claim beside them."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

# FLAKY (results v2): the step failed, was performed again (--retries) and then passed. Never PASS:
# it exits 0 like PASS, and 1 under --strict.
Verdict = Literal["PASS", "FAIL", "SKIPPED", "ERROR", "FLAKY"]
NotRun = Literal["deselected", "fail_fast"]
VERDICTS: tuple[str, ...] = ("PASS", "FAIL", "SKIPPED", "ERROR", "FLAKY")


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ValidatorResult(_Model):
    name: str
    kind: str
    status: Literal["PASS", "FAIL", "ERROR"]
    reason: str
    matched: str | None = None
    evidence: list[str] = Field(default_factory=list)


class AgentOutcome(_Model):
    """How the agent's run of a step ended, from the manifest (and the tail of its stderr.txt): shown
    beside the verdict, deciding nothing (except that an agent that could not start at all makes the
    step ERROR: nobody acted)."""

    started: bool = True
    exit_code: int | None = None
    timed_out: bool = False
    timeout_s: float | None = None  # the step's timeout, from the frozen plan
    error: str | None = None
    stdout_bytes: int | None = None
    stderr_bytes: int | None = None
    stderr_tail: list[str] = Field(default_factory=list)  # its last lines, control characters escaped
    agent_s: float | None = None  # the agent's own time (the step's duration less the runner's)
    runner_s: float | None = None  # the runner's captures, sealing and hashing around it
    claim_warning: str | None = None  # its claim file had a key the protocol does not know (`passed` for `pass`)

    @property
    def failed(self) -> bool:
        """The agent did not end well: not started, timed out, or a non-zero exit."""
        return not self.started or self.timed_out or (self.exit_code is not None and self.exit_code != 0)

    def status(self) -> str:
        """One line: `exit 0`, `exit 3`, `timed out after 2s`, `could not start`.

        >>> AgentOutcome(timed_out=True, timeout_s=2.0).status(), AgentOutcome(exit_code=3).status()
        ('timed out after 2s', 'exit 3')
        """
        if not self.started:
            return "could not start"
        if self.timed_out:
            return f"timed out after {self.timeout_s:g}s" if self.timeout_s is not None else "timed out"
        return f"exit {self.exit_code}" if self.exit_code is not None else "no exit code"


class Attempt(_Model):
    """An earlier attempt of a retried step, as graded when it ended (its files: attempts/<step>/<n>/)."""

    attempt: int
    verdict: str
    reason: str = ""
    duration_s: float | None = None
    claim: dict[str, Any] | None = None  # the agent's claim of that attempt, as given (absent in older results)
    overclaim: bool = False  # it claimed pass and that attempt was not PASS: counted like any overclaim


class StepResult(_Model):
    id: str
    verdict: Verdict
    reason: str = ""
    validators: list[ValidatorResult] = Field(default_factory=list)
    claim: dict[str, Any] | None = None
    overclaim: bool = False
    # results v2
    not_run: NotRun | None = None  # SKIPPED because it was not run: left out by --only/-k, or after --fail-fast
    duration_s: float | None = None  # from the step's first start to its last finish (all attempts)
    attempts: list[Attempt] = Field(default_factory=list)  # earlier attempts (--retries); the verdict is the last's
    agent: AgentOutcome | None = None


class Integrity(_Model):
    """Whether the files graded are the ones the runner sealed (see `referee.rundir.seal`).

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

    results_version: Literal[1, 2] = 2  # 2: FLAKY, not_run, duration_s, attempts, agent
    plan: str
    steps: list[StepResult]
    summary: dict[str, int]
    integrity: Integrity = Field(default_factory=_legacy_integrity)

    def exit_code(self, strict: bool = False) -> int:
        """0 all PASS; 1 any FAIL/ERROR (and, under --strict, SKIPPED, FLAKY or an agent failure), or a seal
        that does not hold.
        A step not run because --only/-k left it out is not held against the run, even under --strict.

        >>> RunResults(plan="p", steps=[], summary={"PASS": 1, "FAIL": 0, "SKIPPED": 1, "ERROR": 0}).exit_code()
        0
        >>> RunResults(plan="p", steps=[], summary={"PASS": 1, "FLAKY": 1}).exit_code(strict=True)
        1
        """
        if self.integrity.status == "failed":
            return 1
        bad = self.summary.get("FAIL", 0) + self.summary.get("ERROR", 0)
        if strict:  # an agent that crashed, timed out or never started is a broken nightly job, whatever it left
            bad += self.summary.get("agent_failures", 0)
            # a summary with `deselected` counts them apart already; an older one counted them as SKIPPED
            deselected = 0 if "deselected" in self.summary else sum(
                1 for s in self.steps if s.verdict == "SKIPPED" and s.not_run == "deselected")
            bad += self.summary.get("SKIPPED", 0) - deselected + self.summary.get("FLAKY", 0)
        return 1 if bad else 0


def plan_errors(step: StepResult) -> int:
    """ERROR validators of a step whose verdict is FAIL: plan mistakes (an unknown table, a missing file) the FAIL
    would hide. A step that is ERROR counts as ERROR already."""
    return sum(1 for v in step.validators if v.status == "ERROR") if step.verdict == "FAIL" else 0


def summarize(steps: list[StepResult]) -> dict[str, int]:
    """Steps by verdict; `overclaims` in every attempt (a retried step's earlier false pass too); `plan_errors`:
    ERROR validators inside FAIL steps; `agent_failures`: steps whose agent exited non-zero, timed out or never
    started (whatever the validators saw); `deselected` (only when there are any): steps --only/-k left out,
    which are not counted as SKIPPED (their verdict in `steps` stays SKIPPED, with `not_run: deselected`).

    >>> s = StepResult(id="a", verdict="FAIL", validators=[ValidatorResult(name="v", kind="k", status="ERROR",
    ...                reason="no such table")], agent=AgentOutcome(exit_code=1))
    >>> {k: v for k, v in summarize([s]).items() if v}
    {'FAIL': 1, 'plan_errors': 1, 'agent_failures': 1}
    """
    counts = {v: 0 for v in VERDICTS}
    deselected = 0
    for s in steps:
        if s.not_run == "deselected":  # left out on purpose: no verdict of the run, so in no verdict's count
            deselected += 1
        else:
            counts[s.verdict] += 1
    counts["overclaims"] = sum(int(s.overclaim) + sum(1 for a in s.attempts if a.overclaim) for s in steps)
    counts["plan_errors"] = sum(plan_errors(s) for s in steps)
    counts["agent_failures"] = sum(1 for s in steps if s.agent is not None and s.agent.failed)
    if deselected:
        counts["deselected"] = deselected
    return counts
