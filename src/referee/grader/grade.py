"""Grade a run directory: every step's verdict from persisted evidence only; the claim sits beside it."""

from __future__ import annotations

from pathlib import Path

from referee.errors import EvidenceError, PlanError, RefereeError, UsageError
from referee.grader.evidence import RunEvidence
from referee.grader.results import RunResults, StepResult, ValidatorResult, Verdict, summarize
from referee.plan.loader import LoadedPlan, TypedValidator, load_plan_text
from referee.rundir import Claim, Manifest, read_claims, read_manifest
from referee.validators import Outcome, checker


def _run_check(tv: TypedValidator, view) -> Outcome:
    try:
        return checker(tv.params.kind).check(tv.params, view, tv.index)
    except EvidenceError as exc:
        return Outcome.error(str(exc))
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


def grade_step(plan: LoadedPlan, step_id: str, manifest: Manifest, ev: RunEvidence, claim: Claim | None) -> StepResult:
    vals = plan.validators.get(step_id, ())
    rec = manifest.steps.get(step_id)
    claimed_pass = claim is not None and claim.passed is True
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
        res = StepResult(id=step_id, verdict="ERROR",
                         reason=f"the agent could not be started, so nobody performed the step ({rec.actor_error})")
    else:
        results = [grade_validator(tv, ev, step_id) for tv in vals]
        statuses = {r.status for r in results}
        verdict: Verdict = "FAIL" if "FAIL" in statuses else "ERROR" if "ERROR" in statuses else "PASS"
        bad = [r for r in results if r.status != "PASS"]
        reason = "; ".join(f"{r.name}: {r.reason}" for r in bad) if bad else "every validator holds"
        res = StepResult(id=step_id, verdict=verdict, reason=reason, validators=results)
    res.claim = claim.as_given() if claim is not None else None
    res.overclaim = claimed_pass and res.verdict != "PASS"
    return res


def grade(run_dir: str | Path) -> RunResults:
    """Grade a run directory from its files alone (no app, no network, no actor).

    >>> grade("runs/demo/20260101T000000Z").summary  # doctest: +SKIP
    {'PASS': 3, 'FAIL': 2, 'SKIPPED': 1, 'ERROR': 0, 'overclaims': 3}
    """
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise UsageError("not a directory", file=str(run_dir), fix="pass the run directory `referee run` printed")
    manifest = read_manifest(run_dir)
    plan_path = run_dir / "plan.yaml"
    try:
        text = plan_path.read_text(encoding="utf-8")
    except OSError:
        raise EvidenceError("plan.yaml is missing from the run directory", file=str(run_dir)) from None
    try:
        plan = load_plan_text(text, str(plan_path), frozen=True)
    except PlanError as exc:
        raise RefereeError(f"the frozen plan no longer loads: {exc}", file=str(plan_path)) from None
    claims = read_claims(run_dir)
    ev = RunEvidence(run_dir, manifest)
    steps = [grade_step(plan, s.id, manifest, ev, claims.get(s.id)) for s in plan.plan.steps]
    ev.save_caches()
    return RunResults(plan=manifest.plan, steps=steps, summary=summarize(steps))
