"""The runner's writer of a run directory: frozen plan, manifest of every evidence file with its hash, claims, seal."""

from __future__ import annotations

import datetime as _dt
import os
import uuid
from pathlib import Path
from typing import Any, Literal

from referee.errors import EvidenceError
from referee.fsutil import atomic_write_bytes, sha256_file
from referee.keys import SigningKey, load_key
from referee.rundir import Claim, Claims, FileEntry, Manifest, Phase, StepRecord, utcnow
from referee.seal import Sealer


OUTPUT_FILES = frozenset({"stdout.txt", "stderr.txt"})  # written by the runner into agent/<step>/


def new_run_dir(out: Path, plan_name: str) -> Path:
    """Make `out/<plan>/<UTC timestamp>/`, unique even when two runs start in the same second."""
    stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    base = Path(out) / plan_name
    base.mkdir(parents=True, exist_ok=True)
    for n in range(1000):
        d = base / (stamp if n == 0 else f"{stamp}-{n}")
        try:
            d.mkdir()
            return d
        except FileExistsError:
            continue
    raise EvidenceError(f"cannot make a run directory under {base}")


class RunStore:
    """Writer of one run directory, used by the runner only. The grader reads it back through its seal.

    manifest.json and claims.json are written through a `Sealer`: every write re-signs them
    (and the plan the runner loaded) with the key from `referee.keys`, so a killed run verifies.
    """

    def __init__(self, run_dir: Path, plan_name: str, key: SigningKey | None = None) -> None:
        self.run_dir = Path(run_dir)
        self.manifest = Manifest(plan=plan_name, started=utcnow())
        self.claims: dict[str, Claim | None] = {}
        self.sealer = Sealer(self.run_dir, key or load_key(), uuid.uuid4().hex)
        self._first = True

    # -- layout -------------------------------------------------------------------------------
    def evidence_dir(self, step_id: str, phase: Phase) -> Path:
        d = self.run_dir / "evidence" / step_id / phase
        d.mkdir(parents=True, exist_ok=True)
        return d

    def agent_dir(self, step_id: str) -> Path:
        d = self.run_dir / "agent" / step_id
        d.mkdir(parents=True, exist_ok=True)
        return d

    # -- writes -------------------------------------------------------------------------------
    def save_plan(self, text: str) -> None:
        """Freeze the plan the runner loaded; the seal signs these bytes, not whatever plan.yaml holds later."""
        data = text.encode("utf-8")
        self.sealer.set_plan(data)
        atomic_write_bytes(self.run_dir / "plan.yaml", data)

    def flush(self, durable: bool = False, final: bool = False) -> None:
        # pydantic's serializer, not json.dumps(indent=...): the manifest is rewritten every step;
        # the rename keeps it whole if the runner is killed, the final flush also survives a power cut
        data = self.manifest.model_dump_json(indent=2).encode() + b"\n"
        claims = Claims(self.claims).to_json() if self._first else None  # claims.json exists from the start
        self._first = False
        self.sealer.write(manifest=data, claims=claims, durable=durable, final=final)

    def step_started(self, step_id: str) -> None:
        self.manifest.steps[step_id] = StepRecord(started=utcnow())
        self.flush()

    def step_done(self, step_id: str, *, exit_code: int | None, timed_out: bool, error: str | None,
                  started: bool = True, killed: int = 0, stdout_bytes: int | None = None,
                  stderr_bytes: int | None = None) -> None:
        rec = self.manifest.steps[step_id]
        rec.status, rec.finished = "done", utcnow()
        rec.actor_exit, rec.actor_timed_out, rec.actor_error = exit_code, timed_out, error
        rec.actor_started, rec.actor_killed = started, killed
        rec.stdout_bytes, rec.stderr_bytes = stdout_bytes, stderr_bytes
        self.flush()

    def add_file(self, path: Path, *, step: str, phase: Phase, captured_by: Literal["runner", "agent"],
                 capture: str | None, kind: str, primary: bool = True, error: str | None = None) -> FileEntry:
        rel = Path(path).relative_to(self.run_dir).as_posix()
        entry = FileEntry(path=rel, step=step, phase=phase, captured_by=captured_by, capture=capture, kind=kind,
                          sha256=sha256_file(path), size=Path(path).stat().st_size, time=utcnow(), primary=primary,
                          error=error)
        self.manifest.files.append(entry)
        return entry

    def add_agent_output(self, step_id: str, stdout: bytes | None, stderr: bytes | None) -> None:
        """Write the agent's stdout and stderr (their last 1 MB, as the runner kept them) into its folder
        as `stdout.txt` and `stderr.txt`, replacing whatever the agent left under those names (an
        empty output leaves no file; the manifest's `stdout_bytes` says 0)."""
        from referee.runner.agentproc import write_output

        root = self.agent_dir(step_id)
        for name, data, kind in (("stdout.txt", stdout, "agent_stdout"), ("stderr.txt", stderr, "agent_stderr")):
            if data is None:
                continue
            path = write_output(root, name, data)
            if not data:
                continue
            # the agent's words, so `agent`: the auditor never reads them as the runner's observation
            self.add_file(path, step=step_id, phase="after", captured_by="agent", capture=None, kind=kind)

    def add_agent_files(self, step_id: str, skip: frozenset[str] = frozenset()) -> list[str]:
        """Hash every regular file the agent left in its folder; links and escapes are refused, not followed.

        `skip`: paths (relative to the folder) not to take. Returns the refusals, one line each, so
        the runner can record them.
        """
        root = self.agent_dir(step_id)
        refused: list[str] = []
        for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
            for fn in sorted(filenames):
                p = Path(dirpath) / fn
                rel = p.relative_to(root).as_posix()
                if fn.startswith(".") and fn.endswith(".tmp") or rel in skip:
                    continue
                if p.is_symlink() or not p.is_file():
                    refused.append(f"agent/{step_id}/{rel}: a link or special file; not taken as evidence")
                    continue
                self.add_file(p, step=step_id, phase="after", captured_by="agent", capture=None, kind="agent_file")
            dirnames[:] = [d for d in dirnames if not (Path(dirpath) / d).is_symlink()]
        return refused

    def record_claim(self, step_id: str, claim: dict[str, Any] | None) -> None:
        """Record the agent's claim (`{"pass", "note", "evidence"}`, as `read_claim` gives it) in claims.json."""
        self.claims[step_id] = Claim.model_validate(claim) if claim is not None else None
        # compact: claims.json is rewritten after every step (and re-sealed with it)
        self.sealer.write(claims=Claims(self.claims).to_json(), durable=False)

    def finish(self) -> None:
        self.manifest.finished = utcnow()
        self.flush(durable=True, final=True)
