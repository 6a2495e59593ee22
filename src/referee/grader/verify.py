"""Open a run directory for grading: check its seal, then hand out the manifest, plan and claims it covers.

Every byte the grader uses comes from here or from `RunEvidence`, read once and checked against
what the runner signed: manifest.json, claims.json and plan.yaml by the seal, each evidence file by
its hash and size in the signed manifest. The plan graded is the one the runner loaded (its bytes
are signed), never a plan.yaml rewritten later. A run whose seal does not hold is graded as every
step ERROR, naming the file and why. Unsigned (or sealed with a key this machine lacks) run
directories are refused unless `allow_unsigned`: then they are graded and marked unverified.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from referee.core.fsutil import inside_problem, loads_json, read_regular, sha256_bytes
from referee.errors import EvidenceError, PlanError, RefereeError, UsageError
from referee.grader.results import Integrity
from referee.plan.loader import MAX_PLAN_BYTES, LoadedPlan, load_plan_text
from referee.rundir.keys import KEY_ENV, SigningKey, existing_key, key_path
from referee.rundir.schema import (
    MAX_CLAIMS_BYTES,
    BuildRecord,
    Claims,
    Manifest,
    parse_claims,
    parse_manifest,
    read_manifest_bytes,
)
from referee.rundir.seal import SealCheck, check_seal

EVIDENCE_TOPS = ("evidence", "agent")  # the only folders the runner lists files from


@dataclass(frozen=True)
class OpenedRun:
    """A run directory as the grader may use it. With `integrity.status == "failed"`, `manifest` and
    `plan` are whatever could be read (only to name the steps that are then ERROR), or None."""

    run_dir: Path
    integrity: Integrity
    manifest: Manifest | None
    plan: LoadedPlan | None
    claims: Claims
    key: SigningKey | None  # signs and checks cache entries; None: nothing cached on disk is trusted


def _read_optional(path: Path, max_bytes: int) -> tuple[bytes | None, str | None]:
    """(bytes, None), (None, None) when missing, or (None, why) when it cannot be read (a folder, no permission,
    a link, a FIFO, too big: never followed or waited on)."""
    try:
        return read_regular(path, root=path.parent, max_bytes=max_bytes), None
    except FileNotFoundError:
        return None, None
    except EvidenceError as exc:
        return None, f"{path.name} is unreadable: {exc.message}"
    except OSError as exc:
        return None, f"{path.name} is unreadable ({exc.strerror or exc})"


def manifest_problems(run_dir: Path, manifest: Manifest) -> list[str]:
    """Every manifest entry whose path is not a plain file path under evidence/ or agent/ of the run directory.

    >>> m = Manifest(plan="p", files=[dict(path="../outside.json", step="s", phase="after", captured_by="runner",
    ...     kind="http", sha256="0" * 64, size=1, time="t")])
    >>> manifest_problems(Path("/nonexistent"), m)
    ["manifest.json: files[0] (step 's'): path '../outside.json' is refused: '..' leads out of the run directory"]
    """
    out = []
    for i, f in enumerate(manifest.files):
        why = inside_problem(run_dir, f.path)
        if why is None and f.path.split("/", 1)[0] not in EVIDENCE_TOPS:
            why = "it lies outside evidence/ and agent/"
        if why is not None:
            out.append(f"manifest.json: files[{i}] (step '{f.step}'): path '{f.path}' is refused: {why}")
    return out


def build_log_problem(run_dir: Path, build: BuildRecord) -> str | None:
    """Why the run's build.log is not the one the sealed manifest names (its SHA-256 and size), or None."""
    if build.log_sha256 is None:
        return None
    data, why = _read_optional(run_dir / build.log, (build.log_size or 0) + 1)
    if why is not None:
        return why
    if data is None:
        return f"{build.log} is missing: the build's sealed log is gone"
    if len(data) != build.log_size or sha256_bytes(data) != build.log_sha256:
        return f"{build.log}: sha256 differs from the one in the sealed manifest.json (edited after the run?)"
    return None


def _key() -> tuple[SigningKey | None, str | None]:
    key = existing_key()  # an exposed key file is the user's to fix: KeyFileError, one line
    if key is None:
        return None, f"no signing key at {key_path()} (copy the key of the machine that made the run, or set {KEY_ENV})"
    return key, None


def _unverified_fix(status: str) -> str:
    if status == "unsigned":
        return "; re-run the plan, or pass --allow-unsigned to grade it marked unverified"
    return f"; grade it where it was made, copy that key here (or set {KEY_ENV}), or pass --allow-unsigned"


def _best_effort(run_dir: Path, manifest_bytes: bytes, plan_bytes: bytes | None) -> tuple[Manifest | None,
                                                                                          LoadedPlan | None]:
    """What a refused run still says about its steps (their ids only: nothing in it is graded)."""
    manifest = plan = None
    try:
        manifest = parse_manifest(manifest_bytes)
    except RefereeError:
        pass
    if plan_bytes is not None:
        try:
            plan = load_plan_text(plan_bytes.decode("utf-8", errors="replace"), str(run_dir / "plan.yaml"),
                                  frozen=True)
        except (RefereeError, ValueError, RecursionError):
            pass
    return manifest, plan


def _refused_manifest(run_dir: Path, exc: EvidenceError, plan_bytes: bytes | None,
                      integrity: Integrity | None = None) -> OpenedRun:
    """A run whose manifest.json cannot be read or parsed: every step ERROR (the outputs say so), never a crash
    that leaves the last grade's results.json and report.html standing."""
    _, plan = _best_effort(run_dir, b"", plan_bytes)
    why = exc.message if exc.message.startswith("manifest.json") else f"manifest.json: {exc.message}"
    base = integrity or Integrity(status="failed")
    return OpenedRun(run_dir, base.model_copy(update={"status": "failed", "reason": why}), None, plan, Claims({}), None)


def open_run(run_dir: str | Path, *, allow_unsigned: bool = False) -> OpenedRun:
    """Check a run directory's seal and read what it covers (see the module docstring).

    >>> open_run("runs/demo/20260101T000000Z").integrity.status  # doctest: +SKIP
    'verified'
    """
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise UsageError("not a directory", file=str(run_dir), fix="pass the run directory `referee run` printed")
    plan_bytes, plan_problem = _read_optional(run_dir / "plan.yaml", MAX_PLAN_BYTES)
    try:
        manifest_bytes = read_manifest_bytes(run_dir)  # missing: UsageError, not a run directory
    except EvidenceError as exc:  # a link, a FIFO, unreadable: refused like a seal that does not hold
        return _refused_manifest(run_dir, exc, plan_bytes)
    claims_bytes, claims_problem = _read_optional(run_dir / "claims.json", MAX_CLAIMS_BYTES)
    key, key_problem = _key()
    chk = check_seal(run_dir, key, manifest=manifest_bytes, plan=plan_bytes, claims=claims_bytes,
                     key_problem=key_problem)
    if plan_problem or claims_problem:
        chk = SealCheck("failed", plan_problem or claims_problem or "", chk.seal)
    seal = chk.seal
    key_id, run_id = (seal.key_id, seal.run_id) if seal else (None, None)
    if chk.status == "verified":
        integrity = Integrity(status="verified", key_id=key_id, run_id=run_id)
    elif chk.status in ("unsigned", "foreign") and allow_unsigned:
        integrity = Integrity(status="unverified", reason=f"{chk.reason}; graded with --allow-unsigned",
                              key_id=key_id, run_id=run_id)
    else:
        fix = _unverified_fix(chk.status) if chk.status in ("unsigned", "foreign") else ""
        if chk.reason.startswith("plan.yaml differs"):  # a corrected plan goes beside the run, never into it
            fix = (f"; to grade with a corrected plan, put plan.yaml back as the run left it and pass the fix: "
                   f"`referee grade {run_dir} --plan FIXED.yaml`")
        manifest, plan = _best_effort(run_dir, manifest_bytes, plan_bytes)
        failed = Integrity(status="failed", reason=chk.reason + fix, key_id=key_id, run_id=run_id)
        return OpenedRun(run_dir, failed, manifest, plan, Claims({}), None)
    try:
        manifest = parse_manifest(manifest_bytes, str(run_dir / "manifest.json"))
    except EvidenceError as exc:  # only with --allow-unsigned: a signed manifest parsed when it was sealed
        return _refused_manifest(run_dir, exc, plan_bytes, integrity)
    problems = manifest_problems(run_dir, manifest)
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        _, plan = _best_effort(run_dir, manifest_bytes, plan_bytes)
        failed = integrity.model_copy(update={"status": "failed", "reason": problems[0] + more})
        return OpenedRun(run_dir, failed, manifest, plan, Claims({}), None)
    if manifest.build is not None and (why := build_log_problem(run_dir, manifest.build)) is not None:
        _, plan = _best_effort(run_dir, manifest_bytes, plan_bytes)
        return OpenedRun(run_dir, integrity.model_copy(update={"status": "failed", "reason": why}), manifest, plan,
                         Claims({}), None)
    if plan_bytes is None:
        raise EvidenceError("plan.yaml is missing from the run directory", file=str(run_dir))
    plan_path = run_dir / "plan.yaml"
    try:
        plan = load_plan_text(plan_bytes.decode("utf-8"), str(plan_path), frozen=True)
    except UnicodeDecodeError:
        raise EvidenceError("plan.yaml is not UTF-8 text", file=str(plan_path)) from None
    except PlanError as exc:
        raise RefereeError(f"the frozen plan no longer loads: {exc}", file=str(plan_path)) from None
    try:
        claims = parse_claims(loads_json(claims_bytes)) if claims_bytes is not None else Claims({})
    except ValueError:
        claims = Claims({})  # a claim never decides a verdict: unreadable claims are no claims
    return OpenedRun(run_dir, integrity, manifest, plan, claims, key)
