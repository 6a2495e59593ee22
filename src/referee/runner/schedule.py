"""The order in which a run performs its steps: `--only`/`-k`, `--retries` and `--fail-fast`.

`StepSchedule` yields the steps to perform, the same step again for a retry; the runner tells it
when each is done. Each step is graded right after its captures with the grader itself, over the
evidence already on disk: the verdict that decides a retry or a stop, and that the console shows
as the step ends, is the one `referee grade` would give (what it OCR'd is cached, signed, for the
final grading). Steps left out are recorded as not run.

A retried step's earlier attempt keeps its files: `evidence/<step>/` and `agent/<step>/` move to
`attempts/<step>/<n>/` (under the same relative paths), and the manifest lists them there, in
that step's record with the attempt number, the claim and the verdict of that attempt.
"""

from __future__ import annotations

import os
from typing import Any, Callable, Iterator

from referee.core.fsutil import own_dir
from referee.grader.evidence import RunEvidence
from referee.grader.grade import grade_step
from referee.grader.results import StepResult
from referee.plan.loader import LoadedPlan
from referee.plan.model import Step
from referee.plan.selection import selected
from referee.rundir.schema import AttemptRecord, RunOptions
from referee.runner.store import RunStore

Event = Callable[[str, str, dict], None]
DESELECTED_NOTE = "deselected by --only/-k"


def grade_now(plan: LoadedPlan, store: RunStore, step_id: str, scrub: Callable[[Any], Any] | None = None,
              progress: Event | None = None) -> StepResult:
    """The step's verdict from what is on disk now (the same pure grading `referee grade` does).

    `scrub`: the run's secret values out of what is cached; `progress`: told of each OCR (`RunEvidence`)."""
    ev = RunEvidence(store.run_dir, store.manifest, key=store.sealer.key, scrub=scrub, progress=progress)
    res = grade_step(plan, step_id, store.manifest, ev, store.claims.get(step_id))
    ev.save_caches()  # signed with the run's key: the final grading reuses what this one OCR'd
    return res


def archive_attempt(store: RunStore, step_id: str, res: StepResult) -> AttemptRecord:
    """Move the step's files out of the way of its next attempt and record this attempt in the manifest."""
    rec = store.manifest.steps[step_id]
    n = len(rec.attempts) + 1
    folder = f"attempts/{step_id}/{n}"
    for top, name in (("evidence", step_id), ("agent", step_id), ("claims", f"{step_id}.json")):
        src = store.run_dir / top / name
        if src.exists() or src.is_symlink():
            # real folders all the way (own_dir): a link planted at `attempts` is replaced, never followed
            parent, _ = own_dir(store.run_dir, "attempts", step_id, str(n), top)
            os.rename(src, parent / name)
    moved = [f for f in store.manifest.files if f.step == step_id]
    store.manifest.files = [f for f in store.manifest.files if f.step != step_id]
    files = [f.model_copy(update={"path": f"{folder}/{f.path}"}) for f in moved]
    snapshot = rec.model_copy(update={"attempts": []})
    claim = store.claims.get(step_id)
    attempt = AttemptRecord(attempt=n, folder=folder, record=snapshot, verdict=res.verdict, reason=res.reason,
                            claim=claim.as_given() if claim is not None else None, files=files)
    rec.attempts.append(attempt)
    store.record_claim(step_id, None)  # claims.json holds the claim of the attempt the grader reads
    store.flush()
    return attempt


class StepSchedule:
    """Iterate the steps a run performs; call `done(step_id)` after each one's captures.

    >>> # for step in (sched := StepSchedule(plan, store, options, on_event)): ...; sched.done(step.id)
    """

    def __init__(self, plan: LoadedPlan, store: RunStore, options: RunOptions | None, on_event: Event,
                 scrub: Callable[[Any], Any] | None = None) -> None:
        self.plan, self.store, self.on_event, self.scrub = plan, store, on_event, scrub
        self.options = options or RunOptions()
        ids = [s.id for s in plan.plan.steps]
        self.kept = set(selected(ids, self.options.only, self.options.keyword))
        self._last: StepResult | None = None
        self.stopped_after: str | None = None
        for sid in ids:  # known before anything runs: recorded now, so a run that stops early still says so
            if sid not in self.kept:
                store.step_not_run(sid, "deselected", DESELECTED_NOTE)

    @property
    def deciding(self) -> bool:
        """Whether a verdict decides what comes next (a retry or a stop), not only what the console shows."""
        return self.options.retries > 0 or self.options.fail_fast

    def __iter__(self) -> Iterator[Step]:
        for step in self.plan.plan.steps:
            if step.id not in self.kept:
                self.on_event("not_run", step.id, {"note": DESELECTED_NOTE, "why": "deselected"})
                continue
            if self.stopped_after is not None:
                note = f"--fail-fast: stopped after {self.stopped_after} failed"
                self.store.step_not_run(step.id, "fail_fast", note)
                self.on_event("not_run", step.id, {"note": note, "why": "fail_fast"})
                continue
            attempt = 1
            while True:
                self._last = None
                yield step
                res = self._last
                if res is None or res.verdict not in ("FAIL", "ERROR") or attempt > self.options.retries:
                    if res is not None:
                        self.on_event("graded", step.id, {"verdict": res.verdict, "reason": res.reason})
                        if res.verdict in ("FAIL", "ERROR") and self.options.fail_fast:
                            self.stopped_after = step.id
                    break
                attempt += 1
                archive_attempt(self.store, step.id, res)
                self.on_event("retry", step.id, {"attempt": attempt, "of": self.options.retries + 1,
                                                 "verdict": res.verdict, "reason": res.reason})

    def done(self, step_id: str) -> None:
        """The step's attempt has ended and its evidence is on disk: grade it, for a retry or a stop that may
        follow and for the line that says its verdict now rather than in the final table."""
        try:
            self._last = grade_now(self.plan, self.store, step_id, self.scrub, self.on_event)
        except Exception:
            if self.deciding:
                raise
            # only the progress line wanted it: the run goes on, and the final grading says what went wrong
            self._last = None
