"""Grade a run directory: every step's verdict from sealed, persisted evidence only; the claim sits beside it."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from referee.errors import EvidenceError, MissingExtraError
from referee.grader.evidence import RunEvidence
from referee.grader.outcome import agent_outcome, duration, not_run, with_attempts
from referee.grader.results import RunResults, StepResult, ValidatorResult, Verdict, summarize
from referee.grader.verify import OpenedRun, open_run
from referee.plan.captures import AGENT_PAGE_NOTE, agent_page_captures
from referee.plan.loader import LoadedPlan, TypedValidator
from referee.rundir.schema import Claim, Manifest
from referee.validators import Outcome, checker
from referee.validators.common import NoContent
from referee.validators.variables import check_with_values


def _run_check(tv: TypedValidator, view) -> Outcome:
    # `${NAME}` values filled from this environment; what the check says shows the names (validators.variables)
    return check_with_values(tv, lambda params: _checked(tv, params, view))


def _checked(tv: TypedValidator, params, view) -> Outcome:
    try:
        return checker(tv.params.kind).check(params, view, tv.index)
    except EvidenceError as exc:
        return Outcome.error(str(exc))
    except NoContent as exc:  # a file capture with nothing to read (no such file): whatever the check, no PASS
        return Outcome.fail(str(exc))
    except MissingExtraError as exc:  # not a crash: the install is short of an extra, and the fix is to add it
        return Outcome.error(f"needs the {exc.extra} extra: {exc.message}; {exc.fix}")
    except Exception as exc:  # a crashing validator means the grader could not look: ERROR, never PASS
        return Outcome.error(f"validator crashed: {type(exc).__name__}: {exc}")


def grade_validator(tv: TypedValidator, ev: RunEvidence, step_id: str) -> ValidatorResult:
    """One validator over one step's evidence, with the causal check for `require_change`."""
    after = _run_check(tv, ev.view(step_id, "after"))
    status, reason = after.status, after.reason
    if tv.params.require_change and status == "PASS":
        before = _run_check(tv, ev.view(step_id, "before"))
        if before.status == "PASS":
            status, reason = "FAIL", f"already true before the step ({before.reason}); the step did not make it so"
        elif before.status == "ERROR":
            status, reason = "ERROR", f"cannot tell whether the step changed anything: {before.reason}"
        else:
            reason = f"{after.reason}; and not before the step ({before.reason})"
    return ValidatorResult(name=tv.label, kind=tv.params.kind, status=status, reason=reason, matched=after.matched,
                           evidence=tv.spec.evidence_refs(tv.params, tv.index))


def _agent_pages(results: list[ValidatorResult], names: frozenset[str]) -> list[ValidatorResult]:
    """A validator that read a capture of the agent's own page (`source: agent_page`) says so in its reason."""
    return [r.model_copy(update={"reason": f"{r.reason} [{', '.join(hit)}: {AGENT_PAGE_NOTE}]"})
            if (hit := [e for e in r.evidence if e in names]) else r for r in results]


def grade_step(plan: LoadedPlan, step_id: str, manifest: Manifest, ev: RunEvidence, claim: Claim | None) -> StepResult:
    vals = plan.validators.get(step_id, ())
    rec = manifest.steps.get(step_id)
    claimed_pass = claim is not None and claim.passed is True
    if rec is not None and rec.status == "not_run":
        return not_run(step_id, rec)  # nobody acted and nothing was captured: no claim, no agent
    if rec is None and manifest.build is not None and manifest.build.failed:  # nothing started: every step says why
        return StepResult(id=step_id, verdict="ERROR", reason=f"not run: {manifest.error or 'the build failed'}")
    if not vals:
        res = StepResult(id=step_id, verdict="SKIPPED", reason="no validator: this step cannot be verified")
    elif rec is None:
        why = f": {manifest.error}" if manifest.error else ""
        res = StepResult(id=step_id, verdict="ERROR", reason=f"the step was never run (the run stopped before it{why})")
    elif rec.status != "done":
        res = StepResult(id=step_id, verdict="ERROR",
                         reason="the step did not finish (the run was interrupted); its evidence is incomplete")
    elif not rec.actor_started:
        # nobody acted: whatever the validators see now was there before the step
        why = (rec.actor_error or "").removeprefix("the agent could not be started: ")
        res = StepResult(id=step_id, verdict="ERROR",
                         reason=f"the agent could not be started, so nobody performed the step: {why}")
    else:
        results = _agent_pages([grade_validator(tv, ev, step_id) for tv in vals],
                               agent_page_captures(plan.captures.get(step_id, ())))
        statuses = {r.status for r in results}
        verdict: Verdict = "FAIL" if "FAIL" in statuses else "ERROR" if "ERROR" in statuses else "PASS"
        bad = [r for r in results if r.status != "PASS"]
        reason = "; ".join(f"{r.name}: {r.reason}" for r in bad) if bad else "every validator holds"
        if not bad and any(AGENT_PAGE_NOTE in r.reason for r in results):
            reason += f", one or more on {AGENT_PAGE_NOTE}"
        res = StepResult(id=step_id, verdict=verdict, reason=reason, validators=results)
    if rec is not None:
        res = with_attempts(res, rec)
        res.duration_s = duration(rec)
        if rec.status == "done":
            res.agent = agent_outcome(plan, step_id, rec, ev)
    res.claim = claim.as_given() if claim is not None else None
    # FLAKY: the claim was of the last attempt, and that attempt passed
    res.overclaim = claimed_pass and res.verdict not in ("PASS", "FLAKY")
    return res


def tampered(res: StepResult, changes: list[str]) -> StepResult:
    """A step whose listed evidence changed after the run is ERROR, naming each file, whatever its validators saw:
    the evidence is no longer the one the runner signed."""
    if res.verdict == "ERROR" and all(c in res.reason for c in changes):
        return res  # its validators read the changed files and said so already
    reason = "; ".join(changes) + (f"; {res.reason}" if res.reason else "")
    claimed_pass = res.claim is not None and res.claim.get("pass") is True
    return res.model_copy(update={"verdict": "ERROR", "reason": reason, "overclaim": claimed_pass})


def refused(run: OpenedRun) -> RunResults:
    """Every step ERROR: the seal (or the manifest's paths) did not hold, so no evidence of this run is read."""
    if run.plan is not None:
        ids = [s.id for s in run.plan.plan.steps]
    else:
        ids = list(run.manifest.steps) if run.manifest is not None else []
    why = f"not graded: {run.integrity.reason}"
    steps = [StepResult(id=i, verdict="ERROR", reason=why) for i in ids]
    plan = run.manifest.plan if run.manifest is not None else run.run_dir.name
    return RunResults(plan=plan, steps=steps, summary=summarize(steps), integrity=run.integrity)


def grade(run_dir: str | Path, *, allow_unsigned: bool = False, scrub: Callable[[Any], Any] | None = None,
          progress: Callable[[str, str, dict], None] | None = None) -> RunResults:
    """Grade a run directory from its files alone (no app, no network, no actor), after checking its seal.

    A seal that does not hold makes every step ERROR (`results.integrity` says which file and why);
    an unsigned run directory is refused that way too unless `allow_unsigned`, which grades it and
    marks the results unverified. `scrub`: what the runner passes to replace its secret values in what grading
    computes from the evidence and caches (OCR text of a screen that shows one). `progress`: told of each OCR
    as it starts and ends (`RunEvidence`).

    >>> grade("runs/demo/20260101T000000Z").summary  # doctest: +SKIP
    {'PASS': 3, 'FAIL': 2, 'SKIPPED': 1, 'ERROR': 0, 'overclaims': 3}
    """
    return grade_opened(open_run(run_dir, allow_unsigned=allow_unsigned), scrub=scrub, progress=progress)


def grade_opened(run: OpenedRun, *, save_caches: bool = True, scrub: Callable[[Any], Any] | None = None,
                 progress: Callable[[str, str, dict], None] | None = None) -> RunResults:
    """Grade a run directory `open_run` has checked (the auditor reads the same checked files beside it).

    `save_caches=False` leaves the run directory byte for byte as it was.
    """
    if run.integrity.status == "failed" or run.manifest is None or run.plan is None:
        return refused(run)
    manifest, plan = run.manifest, run.plan
    ev = RunEvidence(run.run_dir, manifest, key=run.key, signed=run.integrity.status == "verified", scrub=scrub,
                     progress=progress)
    steps = [grade_step(plan, s.id, manifest, ev, run.claims.get(s.id)) for s in plan.plan.steps]
    changed = ev.changed()
    steps = [tampered(s, changed[s.id]) if s.id in changed else s for s in steps]
    if save_caches:
        ev.save_caches()
    return RunResults(plan=manifest.plan, steps=steps, summary=summarize(steps), integrity=run.integrity)
