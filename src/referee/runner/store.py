"""The runner's writer of a run directory: frozen plan, manifest of every evidence file with its hash, claims, seal.

An isolated agent can write only its `agent/<step>` (referee.runner.isolation); an unisolated one
anywhere in the run directory, so the runner trusts no folder it did not just make: `agent/<step>`
and `evidence/<step>/<phase>` are made fresh (whatever an earlier step planted there is removed,
and said so), no link is followed on the way to a folder the runner writes into, and every file
is hashed without following links or waiting on a FIFO.
"""

from __future__ import annotations

import datetime as _dt
import os
import stat
import time
import uuid
from pathlib import Path
from typing import Any, Literal

from referee.core.fstree import remove_tree, walk_tree
from referee.core.fsutil import atomic_write_bytes, hash_regular, mostly_holes, own_dir
from referee.core.safetext import clean, fs_name
from referee.errors import EvidenceError, HoldsSecret
from referee.plan.model import EvidenceBudget
from referee.rundir.keys import SigningKey, load_key
from referee.rundir.schema import (
    MAX_EVIDENCE_BYTES,
    Claim,
    Claims,
    FileEntry,
    Manifest,
    NotTaken,
    Phase,
    StepRecord,
    utcnow,
)
from referee.rundir.seal import Sealer

MAX_AGENT_FILES = 10_000  # files taken from one step's agent folder; the rest are refused
MAX_AGENT_DEPTH = 32  # folders below agent/<step> looked into; deeper ones are refused
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
    (and the plan the runner loaded) with the key from `referee.rundir.keys`, so a killed run verifies.
    """

    def __init__(self, run_dir: Path, plan_name: str, key: SigningKey | None = None, *,
                 secrets: tuple[tuple[bytes, str], ...] = (), budget: EvidenceBudget | None = None) -> None:
        self.run_dir = Path(run_dir)
        self.manifest = Manifest(plan=plan_name, started=utcnow())
        self.claims: dict[str, Claim | None] = {}
        self.sealer = Sealer(self.run_dir, key or load_key(), uuid.uuid4().hex)
        secret = self.sealer.key.secret
        # the key as its file holds it (hex) and as bytes: no capture, command or agent file may carry it
        # into a run directory that the agent's next step, or whoever gets the artifacts, can read
        self._refuse = (secret.hex().encode(), secret.hex().upper().encode(), secret)
        # and the run's secret values (`Secrets.forms`): an agent that learned one may not store it in a file
        self._secrets = secrets
        self._agent_refuse = self._refuse + tuple(form for form, _ in secrets)
        self._agent_refused_as = (("the runner's signing key",) * 3
                                  + tuple(f"a secret value of the run ({shown})" for _, shown in secrets))
        self.budget = budget or EvidenceBudget()
        self._run_left = self.budget.max_run_mb << 20  # bytes of agent files the run may still hash
        self._step_left = 0
        self._first = True
        self._made: set[tuple[str, ...]] = set()
        self._removed: list[str] = []

    # -- layout -------------------------------------------------------------------------------
    def evidence_dir(self, step_id: str, phase: Phase) -> Path:
        return self._fresh("evidence", step_id, phase)

    def agent_dir(self, step_id: str) -> Path:
        return self._fresh("agent", step_id)

    def take_removed(self) -> list[str]:
        """What the runner found planted where its own folders go, and removed, since the last call (one line each)."""
        out, self._removed = self._removed, []
        return out

    def _fresh(self, *parts: str) -> Path:
        """`run_dir/parts...` as a folder this run made: links on the way replaced, and the first time,
        anything already there (an earlier step's agent put it there) removed."""
        parent, removed = own_dir(self.run_dir, *parts[:-1])
        self._removed += removed
        d = parent / parts[-1]
        if parts not in self._made:
            try:
                st = os.lstat(d)
            except FileNotFoundError:
                st = None
            if st is not None:
                what = "a folder" if stat.S_ISDIR(st.st_mode) else "a link" if stat.S_ISLNK(st.st_mode) else "a file"
                remove_tree(d)  # follows no link inside, and survives any depth
                self._removed.append(f"{'/'.join(parts)} was already there ({what}, not made by the runner); removed")
            self._made.add(parts)
        d, removed = own_dir(self.run_dir, *parts)
        self._removed += removed
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
        old = self.manifest.steps.get(step_id)
        # a step performed again (--retries) keeps the record of its earlier attempts
        self.manifest.steps[step_id] = StepRecord(started=utcnow(), attempts=old.attempts if old else [])
        self._step_left = self.budget.max_step_mb << 20
        self.flush()

    def step_not_run(self, step_id: str, why: Literal["deselected", "fail_fast"], note: str | None = None) -> None:
        """Record a step the run leaves out: the grader makes it SKIPPED with `note` as the reason."""
        self.manifest.steps[step_id] = StepRecord(status="not_run", not_run=why, note=note)
        self.flush()

    def step_done(self, step_id: str, *, exit_code: int | None, timed_out: bool, error: str | None,
                  started: bool = True, killed: int = 0, stdout_bytes: int | None = None,
                  stderr_bytes: int | None = None, agent_s: float | None = None,
                  runner_s: float | None = None) -> None:
        rec = self.manifest.steps[step_id]
        rec.status, rec.finished = "done", utcnow()
        # clean: the error quotes what the agent named, and one lone surrogate would make the manifest unwritable
        rec.actor_exit, rec.actor_timed_out, rec.actor_error = exit_code, timed_out, clean(error) if error else error
        rec.actor_started, rec.actor_killed = started, killed
        rec.stdout_bytes, rec.stderr_bytes = stdout_bytes, stderr_bytes
        rec.agent_s = round(agent_s, 3) if agent_s is not None else None
        rec.runner_s = round(runner_s, 3) if runner_s is not None else None
        self.flush()

    def add_file(self, path: Path, *, step: str, phase: Phase, captured_by: Literal["runner", "agent"],
                 capture: str | None, kind: str, primary: bool = True, error: str | None = None,
                 budgeted: bool = False) -> FileEntry:
        """List `path` in the manifest with its hash. `budgeted`: a runner's copy of a file where the agent writes
        (a `file` capture's): counted in the hashing budget like the agent's own files (`admit_copy` let it in)."""
        rel = Path(path).relative_to(self.run_dir).as_posix()
        # a runner file listed twice was written twice: the later write replaced the earlier capture's evidence
        if captured_by == "runner" and any(f.path == rel for f in self.manifest.files):
            raise EvidenceError(f"{rel} is listed already, as another capture's evidence; it is not listed twice")
        agent = captured_by == "agent"
        admit = self._admit if kind == "agent_file" or budgeted else None
        t0 = time.monotonic()
        try:
            digest, size = hash_regular(path, root=self.run_dir, max_bytes=MAX_EVIDENCE_BYTES, admit=admit,
                                        refuse=self._agent_refuse if agent else self._refuse,
                                        refused_as=self._agent_refused_as if agent else ())
        except HoldsSecret as exc:
            os.unlink(path)  # not kept for the agent's next step to read, nor in the artifacts
            what = exc.message if agent else "holds the runner's signing key"
            raise EvidenceError(f"{what}; removed", file=rel) from None
        finally:
            if (agent or budgeted) and step in self.manifest.steps:
                rec = self.manifest.steps[step]
                rec.hash_s = round((rec.hash_s or 0.0) + time.monotonic() - t0, 3)
        if admit is not None:
            self._step_left -= size
            self._run_left -= size
            if step in self.manifest.steps:
                done = self.manifest.steps[step]
                done.hashed_bytes = (done.hashed_bytes or 0) + size
        entry = FileEntry(path=rel, step=step, phase=phase, captured_by=captured_by, capture=capture, kind=kind,
                          sha256=digest, size=size, time=utcnow(), primary=primary, error=error)
        self.manifest.files.append(entry)
        return entry

    def admit_copy(self, st: os.stat_result) -> None:
        """EvidenceError (saying why) unless a file of this `fstat` may be copied into the evidence and hashed:
        the `file` capture asks before it copies a file that may be the agent's (a sparse one, one past the budget)."""
        self._admit(st)

    def _admit(self, st: os.stat_result) -> None:
        """Refuse an agent file before a byte of it is read: mostly holes, or past the step's or the run's budget."""
        if self.budget.sparse == "refuse" and mostly_holes(st):
            raise _NotTaken(f"sparse ({st.st_size} bytes long, {st.st_blocks * 512} on disk); not hashed, not taken")
        for left, which, mb in ((self._step_left, "step", self.budget.max_step_mb),
                                (self._run_left, "run", self.budget.max_run_mb)):
            if st.st_size > left:
                raise _NotTaken(f"{st.st_size} bytes, past the {which}'s hashing budget ({max(left, 0)} bytes "
                                f"left of evidence.max_{which}_mb: {mb}); not hashed, not taken")

    def add_claim_file(self, step_id: str, name: str) -> None:
        """List the agent's claim file (kind `agent_claim`) if it is a regular file in its real folder;
        anything else was refused already (by `read_claim`, or by `add_agent_files` for the folder)."""
        folder = self.run_dir / "agent" / step_id
        try:
            if not stat.S_ISDIR(os.lstat(folder).st_mode) or not stat.S_ISREG(os.lstat(folder / name).st_mode):
                return
            self.add_file(folder / name, step=step_id, phase="after", captured_by="agent", capture=None,
                          kind="agent_claim")
        except (OSError, EvidenceError):
            return

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
            try:
                self.add_file(path, step=step_id, phase="after", captured_by="agent", capture=None, kind=kind)
            except EvidenceError as exc:  # it printed the signing key
                self._removed.append(str(exc))

    def add_agent_files(self, step_id: str, skip: frozenset[str] = frozenset()) -> list[str]:
        """Hash every regular file the agent left in its folder; links, FIFOs and escapes are refused, not followed.

        `skip`: paths (relative to the folder) not to take. Returns the refusals, one line each, so
        the runner can record them.
        """
        for parts in (("agent",), ("agent", step_id)):
            try:
                mode = os.lstat(self.run_dir.joinpath(*parts)).st_mode
            except FileNotFoundError:
                return []
            if not stat.S_ISDIR(mode):
                kind = "a link" if stat.S_ISLNK(mode) else "a file"
                return [f"{'/'.join(parts)} was replaced by {kind} during the step; none of its files are taken"]
        root = self.run_dir / "agent" / step_id
        refused: list[str] = self._drop_secret_names(root, step_id)
        left_out: list[tuple[Path, str]] = []
        not_taken: list[NotTaken] = []
        taken = 0
        # iterative and at most MAX_AGENT_DEPTH deep: a tree nested 1100 folders deep is not a RecursionError
        for folder, _dirs, filenames in walk_tree(root, max_depth=MAX_AGENT_DEPTH, left_out=left_out):
            for fn in filenames:
                p = folder / fn
                rel = p.relative_to(root).as_posix()
                if fn.startswith(".") and fn.endswith(".tmp") or rel in skip:
                    continue
                if taken >= MAX_AGENT_FILES:
                    refused.append(f"agent/{step_id}: more than {MAX_AGENT_FILES} files; the rest are not taken")
                    return refused
                if not _utf8(rel):  # the manifest is JSON: a name it cannot hold is named escaped and refused
                    refused.append(f"agent/{step_id}/{fs_name(rel)}: its name is not UTF-8; not taken as evidence")
                    continue
                try:
                    if not stat.S_ISREG(os.lstat(p).st_mode):
                        refused.append(f"agent/{step_id}/{rel}: a link or special file; not taken as evidence")
                        continue
                    self.add_file(p, step=step_id, phase="after", captured_by="agent", capture=None,
                                  kind="agent_file")
                    taken += 1
                except _NotTaken as exc:  # listed in the step record, one line for all of them in the error
                    not_taken.append(NotTaken(path=f"agent/{step_id}/{rel}", reason=exc.message))
                except (OSError, EvidenceError) as exc:  # swapped for a FIFO or a link after the look, too big
                    why = exc.message if isinstance(exc, EvidenceError) else (exc.strerror or str(exc))
                    refused.append(f"agent/{step_id}/{rel}: {why}; not taken as evidence")
        refused += [f"agent/{step_id}/{fs_name(p.relative_to(root).as_posix())}: {why}" for p, why in left_out]
        if not_taken:
            self.manifest.steps[step_id].not_taken = not_taken
            shown = ", ".join(n.path for n in not_taken[:3]) + (f" and {len(not_taken) - 3} more"
                                                                 if len(not_taken) > 3 else "")
            refused.append(f"{len(not_taken)} file(s) not taken (sparse or past the hashing budget; the step record "
                           f"lists each with why): {shown}")
        return refused

    def _drop_secret_names(self, root: Path, step_id: str) -> list[str]:
        """Remove whatever in the agent's folder has a secret value of the run in its name (a file, a folder and
        all below it): a name is shown in the manifest, the reports and a listing of the artifacts."""
        if not self._secrets:
            return []
        refused: list[str] = []
        for folder, dirnames, filenames in walk_tree(root, max_depth=MAX_AGENT_DEPTH):
            for name in [*dirnames, *filenames]:
                raw = os.fsencode(name)
                if not any(form in raw for form, _ in self._secrets):
                    continue
                for form, shown in self._secrets:
                    raw = raw.replace(form, shown.encode())
                rel = (folder / os.fsdecode(raw)).relative_to(root).as_posix()
                try:
                    remove_tree(folder / name)
                    refused.append(f"agent/{step_id}/{fs_name(rel)}: its name holds a secret value of the run; removed")
                except OSError as exc:
                    refused.append(f"agent/{step_id}/{fs_name(rel)}: its name holds a secret value of the run; "
                                   f"not taken, and not removed ({exc.strerror or exc})")
                if name in dirnames:
                    dirnames.remove(name)
        return refused

    def record_claim(self, step_id: str, claim: dict[str, Any] | None) -> None:
        """Record the agent's claim (`{"pass", "note", "evidence"}`, as `read_claim` gives it) in claims.json."""
        self.claims[step_id] = Claim.model_validate(claim) if claim is not None else None
        # compact: claims.json is rewritten after every step (and re-sealed with it)
        self.sealer.write(claims=Claims(self.claims).to_json(), durable=False)

    def finish(self) -> None:
        self.manifest.finished = utcnow()
        self.flush(durable=True, final=True)


class _NotTaken(EvidenceError):
    """An agent file the runner does not hash (`RunStore._admit`): listed in the step record's `not_taken`."""


def _utf8(name: str) -> bool:
    try:
        name.encode("utf-8")
        return True
    except UnicodeEncodeError:
        return False
