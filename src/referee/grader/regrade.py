"""Re-grade a sealed run with a corrected plan: the run's evidence, the new plan's validators, a sealing of its own.

`referee grade RUN --plan FIXED.yaml` leaves the run as it was (its plan.yaml, results and seal) and
writes `RUN/regrades/<stamp>-<plan sha8>/`: results.json (a `RegradeResults`, naming both plans'
SHA-256), report.html, junit.xml, the corrected plan as plan.yaml, regrade.json and a seal.json over
them made with the runner's key. Rules, in one place:

- a step of the corrected plan that the run did not have is ERROR "not in this run";
- a validator reading a capture the run did not take (no capture of that name in the step, or one
  taken with other parameters, or no `before` evidence for `require_change`) is ERROR "not captured in
  this run": the run's evidence of something else never answers the new question;
- everything else is graded exactly as `referee grade` grades it, from the sealed evidence only.
"""

from __future__ import annotations

import hmac
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from referee.core.fsutil import read_regular, sha256_bytes
from referee.errors import EvidenceError, RefereeError
from referee.grader.evidence import RunEvidence
from referee.grader.grade import grade_step, tampered
from referee.grader.results import RunResults, StepResult, ValidatorResult, Verdict, summarize
from referee.grader.verify import OpenedRun
from referee.plan.loader import LoadedPlan, TypedValidator
from referee.rundir.keys import SigningKey
from referee.rundir.schema import Manifest
from referee.rundir.seal import FileDigest, canonical, mac_hex

__all__ = ["NOT_CAPTURED", "NOT_IN_RUN", "REGRADES", "RegradeCheck", "RegradeInfo", "RegradeResults", "RegradeSeal",
           "SEALED_FILES", "regrade", "sign_regrade", "verify_regrade"]

REGRADES = "regrades"  # RUN/regrades/<stamp>-<plan sha8>/
NOT_IN_RUN = "not in this run"
NOT_CAPTURED = "not captured in this run"
SEALED_FILES = ("plan.yaml", "regrade.json", "results.json", "junit.xml", "report.html")
SEAL_FILE = "seal.json"
_DOMAIN = b"referee-regrade-seal-v1\n"
_MAX_FILE = 256 << 20


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class RegradeInfo(_Model):
    """Which run was re-graded with which plan: both plans by their SHA-256."""

    regrade_version: Literal[1] = 1
    run: str  # the run directory's folder name (its UTC stamp)
    run_id: str | None = None
    run_plan_sha256: str  # the plan the runner loaded (sealed in the run)
    plan_sha256: str  # the corrected plan graded here (its copy: plan.yaml beside results.json)
    plan_file: str  # the corrected plan's path as given
    not_in_run: list[str] = Field(default_factory=list)  # steps of the corrected plan the run did not have
    not_in_plan: list[str] = Field(default_factory=list)  # steps of the run the corrected plan leaves out


class RegradeResults(RunResults):
    """A regrade's results.json: the run's results format, and `regrade` naming both plans."""

    regrade: RegradeInfo


class RegradeSeal(_Model):
    """A regrade folder's seal.json: the digest of each of its files, under the runner's key."""

    regrade_seal_version: Literal[1] = 1
    algorithm: Literal["hmac-sha256"] = "hmac-sha256"
    key_id: str = Field(pattern=r"^[0-9a-f]{16}$")
    run_plan_sha256: str
    plan_sha256: str
    files: dict[str, FileDigest]
    mac: str = Field(default="", pattern=r"^([0-9a-f]{64})?$")

    def message(self) -> bytes:
        """The canonical bytes the MAC covers: every field but `mac`, as sorted, compact JSON."""
        return canonical(_DOMAIN, self)


def sign_regrade(info: RegradeInfo, files: dict[str, bytes], key: SigningKey) -> RegradeSeal:
    """The seal over a regrade folder's files (name -> bytes), signed with `key`.

    >>> from pathlib import Path; k = SigningKey(b"k" * 32, Path("/k"))
    >>> i = RegradeInfo(run="r", run_plan_sha256="a", plan_sha256="b", plan_file="f.yaml")
    >>> s = sign_regrade(i, {"results.json": b"{}"}, k); len(s.mac), s.files["results.json"].size
    (64, 2)
    """
    seal = RegradeSeal(key_id=key.key_id, run_plan_sha256=info.run_plan_sha256, plan_sha256=info.plan_sha256,
                       files={n: FileDigest.of(b) for n, b in files.items()})
    return seal.model_copy(update={"mac": mac_hex(key, seal.message())})


@dataclass(frozen=True)
class RegradeCheck:
    """The outcome of `verify_regrade`: `ok`, or `reason` naming the file and why."""

    ok: bool
    reason: str = ""
    seal: RegradeSeal | None = None


def verify_regrade(folder: Path, key: SigningKey | None) -> RegradeCheck:
    """Check a regrade folder against its seal: the MAC under this machine's key, then every sealed file's bytes."""
    folder = Path(folder)
    try:
        seal = RegradeSeal.model_validate_json(read_regular(folder / SEAL_FILE, root=folder, max_bytes=1 << 20))
    except FileNotFoundError:
        return RegradeCheck(False, f"{SEAL_FILE} is missing: the regrade is not sealed")
    except (OSError, EvidenceError, ValidationError) as exc:
        why = exc.errors()[0]["msg"] if isinstance(exc, ValidationError) else str(exc)
        return RegradeCheck(False, f"{SEAL_FILE} is not a regrade seal: {why}")
    if key is None:
        return RegradeCheck(False, f"{SEAL_FILE}: cannot be checked here: no signing key", seal)
    if not hmac.compare_digest(seal.key_id, key.key_id):
        return RegradeCheck(False, f"{SEAL_FILE}: signed with another key (key id {seal.key_id})", seal)
    if not hmac.compare_digest(mac_hex(key, seal.message()), seal.mac):
        return RegradeCheck(False, f"{SEAL_FILE}: signature does not match (edited after the regrade?)", seal)
    for name in SEALED_FILES:
        if name not in seal.files:
            return RegradeCheck(False, f"{SEAL_FILE}: {name} is not sealed", seal)
        try:
            data = read_regular(folder / name, root=folder, max_bytes=_MAX_FILE)
        except (OSError, EvidenceError) as exc:
            return RegradeCheck(False, f"{name} is missing or unreadable ({exc})", seal)
        if FileDigest.of(data) != seal.files[name]:
            return RegradeCheck(False, f"{name}: sha256 differs from the sealed one (edited after the regrade?)", seal)
    return RegradeCheck(True, "", seal)


def _differs(old: dict, new: dict) -> str:
    keys = sorted(k for k in set(old) | set(new) if old.get(k) != new.get(k))
    return ", ".join(keys) or "parameters"


def uncaptured(tv: TypedValidator, step_id: str, fixed: LoadedPlan, ran: LoadedPlan, manifest: Manifest) -> str | None:
    """Why `tv` (of the corrected plan) would read evidence the run did not take, or None when it was taken.

    A name that is no capture of the corrected plan's step is a file the agent saved: read as the run left it.
    """
    mine = {c.params.name: c for c in fixed.captures.get(step_id, ())}
    theirs = {c.params.name: c for c in ran.captures.get(step_id, ())}
    phases = ("after", "before") if tv.params.require_change else ("after",)
    for ref in tv.spec.evidence_refs(tv.params, tv.index):
        cap = mine.get(ref)
        if cap is None:
            continue
        old = theirs.get(ref)
        if old is None:
            return f"{NOT_CAPTURED}: the run took no capture '{ref}' in step '{step_id}'"
        a, b = old.params.model_dump(mode="json"), cap.params.model_dump(mode="json")
        if a != b:
            return (f"{NOT_CAPTURED}: the run's capture '{ref}' was taken with another {_differs(a, b)}; "
                    "re-run the step to capture what this plan asks for")
        taken = {f.phase for f in manifest.files if f.step == step_id and f.capture == ref}
        for phase in phases:
            if phase not in taken:
                return f"{NOT_CAPTURED}: no {phase}-the-step evidence of capture '{ref}' in step '{step_id}'"
    return None


def _with_uncaptured(res: StepResult, bad: dict[int, str]) -> StepResult:
    """The step with the validators in `bad` (by position) ERROR, verdict and reason as grade_step makes them."""
    if not bad or not res.validators:
        return res
    vals: list[ValidatorResult] = [v.model_copy(update={"status": "ERROR", "reason": bad[i], "matched": None})
                                   if i in bad else v for i, v in enumerate(res.validators)]
    statuses = {v.status for v in vals}
    verdict: Verdict = "FAIL" if "FAIL" in statuses else "ERROR"
    reason = "; ".join(f"{v.name}: {v.reason}" for v in vals if v.status != "PASS")
    claimed = res.claim is not None and res.claim.get("pass") is True
    return res.model_copy(update={"validators": vals, "verdict": verdict, "reason": reason, "overclaim": claimed})


def _attempts_regraded(fixed: LoadedPlan, ran: LoadedPlan, step_id: str, run: OpenedRun,
                      manifest: Manifest) -> Manifest:
    """The manifest with the step's earlier attempts (--retries) graded again with the corrected plan, each over its
    own files (attempts/<step>/<n>/, listed with their hashes in the signed manifest): the FLAKY or FAIL the run's
    plan gave an attempt says nothing under the corrected one."""
    rec = manifest.steps.get(step_id)
    if rec is None or not rec.attempts:
        return manifest
    redone = []
    for a in rec.attempts:
        prefix = a.folder.rstrip("/") + "/"
        files = [f.model_copy(update={"path": f.path[len(prefix):]}) for f in a.files if f.path.startswith(prefix)]
        seen = Manifest(plan=manifest.plan, steps={step_id: a.record}, files=files)
        ev = RunEvidence(run.run_dir / a.folder, seen, key=None, signed=run.integrity.status == "verified")
        res = grade_step(fixed, step_id, seen, ev, None)
        res = _with_uncaptured(res, {i: why for i, tv in enumerate(fixed.validators.get(step_id, ()))
                                     if (why := uncaptured(tv, step_id, fixed, ran, seen)) is not None})
        redone.append(a.model_copy(update={"verdict": res.verdict, "reason": res.reason}))
    return manifest.model_copy(update={"steps": {**manifest.steps,
                                                 step_id: rec.model_copy(update={"attempts": redone})}})


def _settled(res: StepResult) -> StepResult:
    """A step whose every attempt passes under the corrected plan is PASS: only the run's plan made it retry."""
    if res.verdict == "FLAKY" and res.attempts and all(a.verdict == "PASS" for a in res.attempts):
        return res.model_copy(update={"verdict": "PASS", "reason": f"every validator holds, in each of its "
                                                                    f"{len(res.attempts) + 1} attempts"})
    return res


def regrade(run: OpenedRun, fixed: LoadedPlan, fixed_bytes: bytes, plan_file: str) -> RegradeResults:
    """Grade the run's sealed evidence with the corrected plan's validators (see the module docstring). Pure:
    it reads the run directory and writes nothing (the run's caches are left as they were)."""
    if run.integrity.status == "failed" or run.manifest is None or run.plan is None:
        raise RefereeError(f"cannot re-grade: {run.integrity.reason or 'the run does not read'}",
                           file=str(run.run_dir),
                           fix="a regrade reads sealed evidence only: put the run back as the runner left it, "
                               "or re-run the plan")
    manifest, ran = run.manifest, run.plan
    ran_ids = {s.id for s in ran.plan.steps}
    ev = RunEvidence(run.run_dir, manifest, key=run.key, signed=run.integrity.status == "verified")
    steps: list[StepResult] = []
    for s in fixed.plan.steps:
        if s.id not in ran_ids:
            known = ", ".join(sorted(ran_ids)[:20])
            steps.append(StepResult(id=s.id, verdict="ERROR",
                                    reason=f"{NOT_IN_RUN}: the run's plan has no step '{s.id}' (its steps: {known}); "
                                           "the step ids must match"))
            continue
        res = grade_step(fixed, s.id, _attempts_regraded(fixed, ran, s.id, run, manifest), ev, run.claims.get(s.id))
        bad = {i: why for i, tv in enumerate(fixed.validators.get(s.id, ()))
               if (why := uncaptured(tv, s.id, fixed, ran, manifest)) is not None}
        steps.append(_settled(_with_uncaptured(res, bad)))
    changed = ev.changed()
    steps = [tampered(s, changed[s.id]) if s.id in changed else s for s in steps]
    fixed_ids = {s.id for s in fixed.plan.steps}
    info = RegradeInfo(run=run.run_dir.name, run_id=run.integrity.run_id,
                       run_plan_sha256=sha256_bytes(ran.text.encode("utf-8")), plan_sha256=sha256_bytes(fixed_bytes),
                       plan_file=plan_file, not_in_run=[s.id for s in fixed.plan.steps if s.id not in ran_ids],
                       not_in_plan=[s.id for s in ran.plan.steps if s.id not in fixed_ids])
    return RegradeResults(plan=manifest.plan, steps=steps, summary=summarize(steps), integrity=run.integrity,
                          regrade=info)
