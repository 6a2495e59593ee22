"""Run a plan: start the app, let the actor do each step, capture evidence around it, then grade."""

from __future__ import annotations

import os
import shutil
import signal
import sys
import tempfile
import time
import uuid
from contextlib import ExitStack, nullcontext
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Callable

from referee.core.fsutil import loads_json, read_regular
from referee.core.safetext import clean, fs_name
from referee.core.stopsignals import handling
from referee.errors import ActorError, AppError, EvidenceError, PlanError
from referee.grader.outcome import seconds
from referee.plan.loader import LoadedPlan, TypedCapture
from referee.plan.model import ActorSpec
from referee.rundir.folders import update_links
from referee.rundir.keys import load_key
from referee.rundir.schema import FAILURE_SUFFIX, MAX_CLAIM_EVIDENCE, MAX_NOTE_CHARS, MAX_PATH_CHARS, Phase, RunOptions
from referee.runner.actors import actors
from referee.runner.actors import load_builtin as load_actors
from referee.runner.actors.base import ActorKind, ActorResult, StepRun
from referee.runner.app import App
from referee.runner.build import build_or_stop
from referee.runner.captures import load_builtin as load_captures
from referee.runner.captures.base import CaptureContext, CaptureFailed, captures, write_failure
from referee.runner.envsubst import Secrets
from referee.runner.schedule import StepSchedule
from referee.runner.store import OUTPUT_FILES, RunStore, new_run_dir

# (event, step_id, data): "isolation" | "start" | "acted" | "done" | "ocr" (as it starts and ends) | "graded" |
# "retry" | "not_run" (data["why"]: "deselected" | "fail_fast")
Event = Callable[[str, str, dict], None]
CLAIM_NAME = "claim.json"  # REFEREE_CLAIM_FILE: agent/<step>/claim.json

MAX_CLAIM_BYTES = 1 << 20
MAX_CLAIM_DEPTH = 16


@dataclass(frozen=True)
class RunOutcome:
    run_dir: Path
    results: Any  # referee.grader.RunResults
    interrupted: bool = False
    error: str | None = None
    isolation: Any = None  # referee.rundir.schema.IsolationRecord: how the agent ran (None: no agent process)
    incomplete: str | None = None  # why the run is not complete (runner.history): it moved no `latest`/`previous`
    previous: Path | None = None  # the plan's complete run before this one, if any


def _noop(event: str, step_id: str, data: dict) -> None:
    pass


def actor_spec(plan: LoadedPlan, agent: str | None) -> ActorSpec:
    """The plan's actor, with `--agent CMD` as the command (it makes a command actor if the plan names none)."""
    spec = plan.plan.actor or ActorSpec()
    if agent:
        spec = spec.model_copy(update={"command": agent})
    if spec.command:
        spec = spec.model_copy(update={"command": spec.command.replace("{python}", sys.executable)})
    if spec.kind == "command" and not spec.command:
        raise PlanError("no agent to perform the steps", file=str(plan.path),
                        fix="pass --agent CMD, or set actor.command in the plan")
    return spec


def before_captures(plan: LoadedPlan, step_id: str) -> list[TypedCapture]:
    """Captures a `require_change` validator reads: the runner takes them before the step too."""
    names: set[str] = set()
    for tv in plan.validators.get(step_id, ()):
        if tv.params.require_change:
            names.update(tv.spec.evidence_refs(tv.params, tv.index))
    return [c for c in plan.captures.get(step_id, ()) if c.params.name in names]


def take_captures(store: RunStore, caps, step_id: str, phase: Phase, base_ctx: dict) -> None:
    """Take each capture and list its files in the manifest; a failed or crashing capture is recorded, not raised.

    Each capture writes into a folder of its own, and its files join the phase folder only if none of
    their names is taken there: one capture's file never replaces another's (the plan loader refuses such
    plans; this holds for plugin captures and agents that plant files too).
    """
    out_dir = store.evidence_dir(step_id, phase)
    secrets = base_ctx["secrets"]
    for cap in caps:
        stage = Path(tempfile.mkdtemp(prefix=".capture-", dir=out_dir))  # a dot name: never a capture's file
        try:
            files, error = _take(cap, CaptureContext(step_id=step_id, phase=phase, out_dir=stage, **base_ctx),
                                 secrets)
            files, taken = _keep(stage, out_dir, files)
            if taken is not None:
                error = f"its file {taken} would replace a file of another capture of this step; not kept"
                files = [_failure_beside(stage, out_dir, cap.params, error)]
        finally:
            shutil.rmtree(stage, ignore_errors=True)
        for i, path in enumerate(dict.fromkeys(files)):  # a file listed once, even if a capture returns it twice
            try:
                # a `file` capture's copy (not its record, the primary file) counts in the hashing budget
                store.add_file(path, step=step_id, phase=phase, captured_by="runner", capture=cap.params.name,
                               kind=cap.params.kind, primary=(i == 0), error=error if i == 0 else None,
                               budgeted=cap.params.kind == "file" and i > 0)
            except (OSError, EvidenceError) as exc:  # its file is not a regular file any more, or too big
                why = exc.message if isinstance(exc, EvidenceError) else str(exc)
                failed = write_failure(out_dir, cap.params, f"its file cannot be kept as evidence: {why}")
                store.add_file(failed, step=step_id, phase=phase, captured_by="runner", capture=cap.params.name,
                               kind=cap.params.kind, primary=(i == 0), error=why if i == 0 else None)


def _take(cap: TypedCapture, ctx: CaptureContext, secrets: Secrets) -> tuple[list[Path], str | None]:
    """Perform one capture into `ctx.out_dir`: its files and, for a failed one, why (only its failure record kept)."""
    try:
        files = captures.get(cap.params.kind).take(cap.params, ctx)
        reported = _reported_failure(files)
        return files, secrets.scrub(reported) if reported else None
    except CaptureFailed as exc:
        error = secrets.scrub(exc.why)
        detail = secrets.scrub_all(exc.detail)
    except Exception as exc:  # an exception's text may quote what the capture used (an invalid URL)
        error, detail = secrets.scrub(f"{type(exc).__name__}: {exc}"), None
    _empty(ctx.out_dir)  # what it wrote before it failed is not evidence
    return [write_failure(ctx.out_dir, cap.params, error, detail)], error


def _keep(stage: Path, out_dir: Path, files: list[Path]) -> tuple[list[Path], str | None]:
    """Move what a capture wrote in `stage` into `out_dir`, with `files` moved along; when one of its names
    is taken in `out_dir`, nothing moves and that name comes back."""
    names = sorted(os.listdir(stage))
    taken = next((n for n in names if os.path.lexists(out_dir / n)), None)
    if taken is not None:
        return [], taken
    for n in names:
        os.rename(stage / n, out_dir / n)
    return [out_dir / p.relative_to(stage) if p.is_relative_to(stage) else p for p in map(Path, files)], None


def _failure_beside(stage: Path, out_dir: Path, params, why: str) -> Path:
    """A failure record for a capture whose files were not kept, under a free name if its usual one is taken
    (the manifest says whose record it is)."""
    _empty(stage)
    path = write_failure(stage, params, why)
    dest = out_dir / path.name
    if os.path.lexists(dest):
        dest = out_dir / f"{params.name}.{uuid.uuid4().hex[:8]}{FAILURE_SUFFIX}"
    os.rename(path, dest)
    return dest


def _empty(folder: Path) -> None:
    for child in folder.iterdir():
        shutil.rmtree(child) if child.is_dir() and not child.is_symlink() else child.unlink()


def _reported_failure(files: list[Path]) -> str | None:
    """A failure a capture wrote instead of raising CaptureFailed: `{"capture_error": ...}` in its
    first `.json` file (the contract before CaptureFailed; plugins written against it still do this)."""
    if not files or files[0].suffix != ".json":
        return None
    try:
        doc = loads_json(read_regular(files[0], root=files[0].parent, max_bytes=1_000_000))
    except (OSError, ValueError, EvidenceError):
        return None
    return str(doc["capture_error"]) if isinstance(doc, dict) and doc.get("capture_error") else None


def read_claim(claim_file: Path, *, root: Path | None = None) -> tuple[dict | None, str | None]:
    """The agent's claim file, or (None, why) for a missing or malformed one: "no claim", never a crash.

    The file is read as the agent left it, defensively: a regular file only (a FIFO is not waited on,
    a link below `root` is not followed), at most 1 MiB and 16 levels of JSON, invalid UTF-8 replaced.

    >>> import tempfile, pathlib; p = pathlib.Path(tempfile.mkdtemp()) / "c.json"
    >>> _ = p.write_bytes(b'{"pass": true, "note": "caf\\xe9"}'); read_claim(p)[0]["note"] == "caf\\ufffd"
    True
    >>> _ = p.write_text("[" * 100 + "]" * 100); read_claim(p)[1]
    'malformed claim file: JSON nested deeper than 16 levels'
    """
    try:
        raw = read_regular(claim_file, max_bytes=MAX_CLAIM_BYTES, root=root)
    except FileNotFoundError:
        return None, "no claim file"
    except EvidenceError as exc:  # a FIFO, a link, too big
        return None, f"malformed claim file: {exc}"
    except OSError as exc:
        return None, f"unreadable claim file: {exc.strerror or exc}"
    try:
        data = loads_json(raw, max_depth=MAX_CLAIM_DEPTH)
    except ValueError as exc:
        return None, f"malformed claim file: {exc}"
    if not isinstance(data, dict) or not isinstance(data.get("pass", None), (bool, type(None))):
        return None, "malformed claim file: expected {\"pass\": bool, \"note\": str, \"evidence\": [paths]}"
    evidence = data.get("evidence", [])
    return {"pass": data.get("pass"), "note": clean(str(data.get("note", ""))[:MAX_NOTE_CHARS]),
            "evidence": [clean(e[:MAX_PATH_CHARS]) for e in (evidence if isinstance(evidence, list) else [])
                         if isinstance(e, str)][:MAX_CLAIM_EVIDENCE]}, None


def _scrubbed(secrets: Secrets, data: bytes | None) -> bytes | None:
    """The agent's output with the plan's secret values replaced, its other bytes as they were."""
    if not data:
        return data
    return secrets.scrub(data.decode("utf-8", "surrogateescape")).encode("utf-8", "surrogateescape")


class _Terminated(BaseException):
    """SIGTERM turned into an exception so the app is stopped and the run stays gradeable."""


def run_plan(plan: LoadedPlan, *, out: Path, agent: str | None = None, on_event: Event = _noop,
             options: RunOptions | None = None) -> RunOutcome:
    """Run one plan and grade it; the run directory is complete and gradeable even if interrupted.

    `options`: which steps to perform (`only`, `keyword`), `retries` for a step that fails, and
    `fail_fast` (see `referee.runner.schedule`).

    >>> run_plan(load_plan("smoke.yaml"), out=Path("runs"), agent="python my_agent.py")  # doctest: +SKIP
    """
    from referee.report.outputs import grade_to_disk

    load_actors()
    load_captures()
    spec = actor_spec(plan, agent)
    actor_cls = actors.get(spec.kind)
    actor_cls.preflight(spec)  # a missing extra stops here, before a run directory exists
    key = load_key()  # and so does a signing key that is exposed or cannot be made
    run_dir = new_run_dir(out, plan.name)
    env, public = dict(os.environ), frozenset(plan.plan.public_env)
    # what the captures substitute from the environment is written nowhere: not in evidence, not in errors,
    # not in what the agent writes (its claim, output and files: it may have learned a value some other way)
    secrets = Secrets.of_plan(plan.env_names, env, public)
    store = RunStore(run_dir, plan.name, key, secrets=secrets.forms(), budget=plan.plan.evidence)
    store.manifest.actor = secrets.scrub(spec.command or spec.target or spec.kind)
    if options is not None and options != RunOptions():
        store.manifest.options = options
    store.save_plan(plan.text)
    store.flush()
    interrupted = False
    signals = ExitStack()  # SIGTERM ignored at start stays ignored, as in the CLI (referee.core.stopsignals)
    signals.enter_context(handling([signal.SIGTERM], _raise_terminated))
    actor: ActorKind | None = None
    acting: Path | None = None  # the agent folder of the step in flight
    try:
        if plan.plan.app and plan.plan.app.build:  # once, before the app starts: a failed build stops the run here
            build_or_stop(plan.plan.app, run_dir, secrets, store)
        no_app = nullcontext(SimpleNamespace(url=None))
        with App(plan.plan.app, run_dir / "app.log", secrets) if plan.plan.app else no_app as app:
            app_url = app.url
            actor = actor_cls()
            actor.search_path = (str(plan.path.resolve().parent),)
            actor.secrets = secrets
            actor.setup(spec, app_url=app_url, run_dir=run_dir)
            if actor.sandbox is not None:
                store.manifest.isolation = actor.sandbox.record()
                store.flush()
                on_event("isolation", "", store.manifest.isolation.model_dump())
            base_ctx = {"app_url": app_url, "cwd": Path.cwd(), "env": env, "public": public, "secrets": secrets,
                        "sandbox": actor.sandbox, "pages": getattr(actor, "pages", None),
                        "admit": store.admit_copy}
            # the same scrub as the final grading: what a step's grading OCRs is cached with secret values out
            schedule = StepSchedule(plan, store, options, on_event, scrub=secrets.scrub_all if secrets else None)
            for step in schedule:  # the steps --only/-k keep, each again for a retry
                if plan.plan.app:
                    app.check_alive()  # a crashed app's URL may be answered by something else
                on_event("start", step.id, {})
                store.step_started(step.id)
                began = time.monotonic()
                base_ctx["page"] = actor.page
                take_captures(store, before_captures(plan, step.id), step.id, "before", base_ctx)
                agent_dir = acting = store.agent_dir(step.id)
                # in the agent's own folder: the only place of the run directory it may write
                claim_file = agent_dir / CLAIM_NAME
                run = StepRun(step=step, plan_name=plan.name, app_url=app_url, agent_dir=agent_dir,
                              claim_file=claim_file, timeout_s=step.timeout_s or spec.timeout_s, env=dict(spec.env),
                              page=actor.page, cdp_url=getattr(actor, "cdp_url", None))
                acted = time.monotonic()
                result: ActorResult = actor.perform(run)  # every agent process has ended when it returns
                agent_s = time.monotonic() - acted  # the agent's own time; the rest of the step is the runner's
                foreign = actor.sandbox.seal(agent_dir) if actor.sandbox is not None else []
                acting = None
                claim, why = read_claim(claim_file, root=run_dir)
                claim, why = secrets.scrub_all(claim), secrets.scrub(why) if why else why
                store.record_claim(step.id, claim)
                on_event("acted", step.id, {"claim": claim, "no_claim": why, "exit_code": result.exit_code,
                                            "timed_out": result.timed_out, "started": result.started})
                refused = [f"agent/{step.id}/{fs_name(p)}: not made by the agent; not taken as evidence"
                           for p in foreign]
                # the agent's evidence first; then its claim file and its output, each of its own kind
                refused += store.add_agent_files(step.id, skip=frozenset(foreign) | OUTPUT_FILES | {CLAIM_NAME})
                store.add_claim_file(step.id, CLAIM_NAME)
                store.add_agent_output(step.id, _scrubbed(secrets, result.stdout), _scrubbed(secrets, result.stderr))
                base_ctx["page"] = actor.page
                take_captures(store, plan.captures.get(step.id, ()), step.id, "after", base_ctx)
                if actor.sandbox is not None:  # setuid/setgid bits and file capabilities taken off what it wrote
                    store.manifest.steps[step.id].privileges_removed = [
                        secrets.scrub(line) for line in actor.sandbox.take_stripped()] or None
                errors = [e for e in (result.error, why if claim is None and result.started else None, *refused,
                                      *store.take_removed()) if e]
                store.step_done(step.id, exit_code=result.exit_code, timed_out=result.timed_out,
                                error=secrets.scrub("; ".join(errors)) or None, started=result.started,
                                killed=result.killed,
                                stdout_bytes=result.stdout_bytes, stderr_bytes=result.stderr_bytes,
                                agent_s=agent_s, runner_s=max(0.0, time.monotonic() - began - agent_s))
                rec = store.manifest.steps[step.id]
                on_event("done", step.id, {"exit_code": result.exit_code, "timed_out": result.timed_out,
                                           "started": result.started, "error": secrets.scrub(result.error or "")
                                           or None, "seconds": seconds(rec.started, rec.finished),
                                           "agent_seconds": rec.agent_s, "runner_seconds": rec.runner_s,
                                           "hash_seconds": rec.hash_s})
                schedule.done(step.id)
    except (KeyboardInterrupt, _Terminated):
        interrupted = True
        store.manifest.error = "interrupted"
    except (AppError, ActorError, PlanError) as exc:
        # the run could not go on; what it has is still graded (unrun steps: ERROR), then the CLI says why
        store.manifest.error = secrets.scrub(str(exc))
    finally:
        if actor is not None:
            try:
                actor.teardown()
            except Exception:
                pass
            if actor.sandbox is not None:
                if acting is not None:  # interrupted mid-step: its folder must not stay the agent's either
                    try:
                        actor.sandbox.seal(acting)
                    except OSError:
                        pass
                actor.sandbox.close()
        signals.close()
        store.finish()
    # OCR text of a screen that shows a secret value is cached, and quoted in reasons, with it replaced
    results = grade_to_disk(run_dir, scrub=secrets.scrub_all if secrets else None)
    incomplete, previous = _promote(run_dir, results)
    return RunOutcome(run_dir, results, interrupted, store.manifest.error if not interrupted else None,
                      store.manifest.isolation, incomplete, previous)


def _promote(run_dir: Path, results: Any) -> tuple[str | None, Path | None]:
    """A complete run becomes its plan's `latest`, the complete run before it `previous`; a partial, stopped or
    interrupted one moves neither link. Returns why the run is not complete (None: it is) and that previous run."""
    from referee.runner.history import incomplete_reason, previous_complete

    previous = previous_complete(run_dir)
    why = incomplete_reason(run_dir, results)
    if why is None:
        update_links(run_dir, previous)
    return why, previous


def _raise_terminated(signum, frame):
    raise _Terminated()
