"""Read-only, hash-verified access to one run directory's evidence, as validators see it."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Callable, Literal

from referee.core.fsutil import (
    atomic_write_json,
    hash_regular,
    loads_json,
    own_dir,
    read_regular,
    safe_join,
    sha256_bytes,
)
from referee.errors import EvidenceError
from referee.rundir.keys import SigningKey
from referee.rundir.schema import (
    FAILURE_SUFFIX,
    MAX_EVIDENCE_BYTES,
    CaptureFailure,
    CaptureRecord,
    FileEntry,
    Manifest,
    is_record,
    parse_record,
)
from referee.rundir.seal import cache_mac

MAX_CACHE_BYTES = 64 << 20


class RunEvidence:
    """All evidence of one run directory; hands out per-step, per-phase views.

    A file is served only if the manifest lists it, it lies inside the run directory, it is a regular
    file reached without following any link (a FIFO or a symlink an agent planted is ERROR, never a
    hang), and its bytes still hash to what was recorded (size and SHA-256, checked on the bytes
    served, at every read).
    Capture records are parsed once, into `referee.rundir.schema` models. `key` signs and checks the
    entries of the on-disk caches (OCR): without it nothing cached on disk is read or written.
    `progress(kind, step_id, data)` hears of each slow computation a cache misses (kind "ocr"): once as it
    starts (`data["seconds"]` None), once when done, naming the file, so a console can say what it waits on.
    """

    def __init__(self, run_dir: Path, manifest: Manifest, key: SigningKey | None = None,
                 signed: bool = False, scrub: Callable[[Any], Any] | None = None,
                 progress: Callable[[str, str, dict], None] | None = None) -> None:
        self.run_dir = Path(run_dir)
        self.progress = progress
        self.last_read: str | None = None  # the run-relative path of the file a validator read last
        self._scrub = scrub  # applied to what is computed for a cache (OCR text): the runner's secret values out
        self.manifest = manifest
        self.key = key
        self._source = "the signed manifest" if signed else "the manifest"
        self._by_path: dict[str, FileEntry] = {f.path: f for f in manifest.files}
        self._by_capture: dict[tuple[str, str, str], FileEntry] = {}
        for f in manifest.files:
            if f.captured_by == "runner" and f.primary and f.capture is not None:
                self._by_capture.setdefault((f.step, f.phase, f.capture), f)
        self._records: dict[str, CaptureRecord] = {}
        self._caches: dict[str, dict[str, Any]] = {}
        self._dirty: set[str] = set()

    def view(self, step_id: str, phase: Literal["before", "after"]) -> "StepView":
        return StepView(self, step_id, phase)

    def entry_for(self, step_id: str, phase: str, ref: str) -> FileEntry:
        hit = self._by_capture.get((step_id, phase, ref))
        if hit is not None:
            return hit
        rel_runner = f"evidence/{step_id}/{phase}/{ref}"
        if rel_runner in self._by_path:
            return self._by_path[rel_runner]
        if phase == "before":
            raise EvidenceError(f"no before-the-step evidence '{ref}' in step '{step_id}'",
                                fix="require_change needs a runner capture (a capture name), not an agent-saved file")
        agent_root = self.run_dir / "agent" / step_id
        target = safe_join(agent_root, ref)
        rel = target.relative_to(self.run_dir).as_posix()
        if rel in self._by_path:
            return self._by_path[rel]
        rec = self.manifest.steps.get(step_id)
        left = next((n for n in rec.not_taken if n.path == rel), None) if rec is not None else None
        if left is not None:  # the runner refused it before reading it: the grader does not read it either
            raise EvidenceError(f"evidence '{ref}' of step '{step_id}' was not taken by the runner: {left.reason}",
                                fix="leave smaller, real files (the plan's `evidence:` budget says how much is hashed)")
        if target.exists():
            raise EvidenceError(f"evidence '{ref}' of step '{step_id}' is not in the manifest "
                                "(written after the step?)",
                                fix="the agent must save evidence into REFEREE_AGENT_DIR during its step")
        raise EvidenceError(f"evidence '{ref}' of step '{step_id}' not found",
                            fix="name a capture of this step or a file the agent saved in its folder")

    def _failed(self, entry: FileEntry) -> None:
        if entry.error:
            raise EvidenceError(f"capture '{entry.capture or entry.path}' failed: {entry.error}")

    def verified_path(self, entry: FileEntry) -> Path:
        """The entry's file after a hash check (for plugins that open files themselves; `verified_bytes` reads
        and checks the same bytes, which is what the built-in validators use)."""
        self._failed(entry)
        path = self._checked(entry)
        self._not_a_failure_record(entry)
        return path

    def verified_bytes(self, entry: FileEntry) -> bytes:
        """The entry's bytes, checked against the manifest's size and SHA-256 as they are served."""
        self._failed(entry)
        data = self._read_checked(entry)
        self._not_a_failure_record(entry)
        return data

    def _not_a_failure_record(self, entry: FileEntry) -> None:
        if entry.path.endswith(FAILURE_SUFFIX):  # a failure record the manifest does not flag: still no evidence
            rec = self.record(entry)
            if isinstance(rec, CaptureFailure):
                raise EvidenceError(f"capture '{entry.capture or entry.path}' failed: {rec.capture_error}")

    def _modified(self, entry: FileEntry, why: str) -> EvidenceError:
        return EvidenceError(f"evidence file {entry.path} was modified after capture: {why} {self._source}")

    def _open_error(self, entry: FileEntry, exc: BaseException) -> EvidenceError:
        if isinstance(exc, FileNotFoundError):
            return EvidenceError(f"evidence file {entry.path} is missing")
        if isinstance(exc, EvidenceError):  # a link, a FIFO, too big: the one-line reason, named by its path
            return EvidenceError(f"evidence file {entry.path}: {exc.message}")
        return EvidenceError(f"evidence file {entry.path} is unreadable: {exc}")

    def changed(self) -> dict[str, list[str]]:
        """Every listed file that no longer matches the manifest (missing, edited, swapped for a link), by step.

        Validators check only what they read; this checks the rest too (the agent's other files, every capture,
        claim.json), so no listed file changes unnoticed.
        """
        out: dict[str, list[str]] = {}
        for entry in self.manifest.files:
            try:
                self._checked(entry)
            except EvidenceError as exc:
                out.setdefault(entry.step, []).append(exc.message)
        return out

    def _checked(self, entry: FileEntry) -> Path:
        """The entry's file, inside the run directory and still hashing to what the manifest recorded."""
        path = safe_join(self.run_dir, entry.path)
        try:  # no link followed below the run directory, no FIFO waited on, at most MAX_EVIDENCE_BYTES
            actual, size = hash_regular(path, root=self.run_dir, max_bytes=MAX_EVIDENCE_BYTES)
        except (OSError, EvidenceError) as exc:
            raise self._open_error(entry, exc) from None
        self._compare(entry, size, actual)
        return path

    def _read_checked(self, entry: FileEntry) -> bytes:
        path = safe_join(self.run_dir, entry.path)
        try:
            data = read_regular(path, root=self.run_dir, max_bytes=MAX_EVIDENCE_BYTES)
        except (OSError, EvidenceError) as exc:
            raise self._open_error(entry, exc) from None
        self._compare(entry, len(data), sha256_bytes(data))
        return data

    def _compare(self, entry: FileEntry, size: int, sha: str) -> None:
        if size != entry.size:
            raise self._modified(entry, f"{size} bytes, not the {entry.size} of")
        if sha != entry.sha256:
            raise self._modified(entry, "its sha256 differs from")

    def record(self, entry: FileEntry) -> CaptureRecord | None:
        """The runner's record in a hash-checked file, parsed once; None for a file that is not a record
        (a screenshot, a DOM, a copied file, the agent's files). EvidenceError when it does not validate."""
        if not is_record(entry):
            return None
        self._failed(entry)
        if entry.path not in self._records:
            data = self._read_checked(entry)
            self._records[entry.path] = parse_record(data, entry.kind, where=f"evidence file {entry.path}")
        return self._records[entry.path]

    # -- cache (e.g. OCR by image hash): kept in the run dir so re-grading reuses it; every entry carries
    # an HMAC under the signing key, so an entry the agent (or anyone without the key) wrote is recomputed
    def cache(self, namespace: str) -> dict[str, Any]:
        if namespace not in self._caches:
            table: dict[str, Any] = {}
            if self.key is not None:
                path = self.run_dir / "cache" / f"{namespace}.json"
                try:  # a FIFO or a link planted as the cache: nothing cached
                    data = loads_json(read_regular(path, root=self.run_dir, max_bytes=MAX_CACHE_BYTES))
                except (OSError, ValueError, EvidenceError):
                    data = {}
                for k, v in (data.items() if isinstance(data, dict) else ()):
                    if (isinstance(v, dict) and set(v) == {"value", "mac"} and isinstance(v["mac"], str)
                            and v["mac"] == cache_mac(self.key, namespace, k, v["value"])):
                        table[k] = v["value"]
            self._caches[namespace] = table
        return self._caches[namespace]

    def cached(self, namespace: str, key: str, compute: Callable[[], Any]) -> Any:
        table = self.cache(namespace)
        if key not in table:
            table[key] = compute() if self._scrub is None else self._scrub(compute())
            self._dirty.add(namespace)
        return table[key]

    def save_caches(self) -> None:
        if self.key is None:
            return
        for ns in sorted(self._dirty):
            signed = {k: {"value": v, "mac": cache_mac(self.key, ns, k, v)} for k, v in self._caches[ns].items()}
            try:
                folder, _ = own_dir(self.run_dir, "cache")  # a link planted as cache/ is not written through
                atomic_write_json(folder / f"{ns}.json", signed)
            except (OSError, EvidenceError):
                pass  # a read-only run directory still grades; it just won't cache
        self._dirty.clear()


class StepView:
    """The EvidenceView of one step in one phase (see referee.validators.base.EvidenceView)."""

    def __init__(self, ev: RunEvidence, step_id: str, phase: Literal["before", "after"]) -> None:
        self._ev, self.step_id, self.phase = ev, step_id, phase

    def entry(self, ref: str) -> FileEntry:
        return self._ev.entry_for(self.step_id, self.phase, ref)

    def path(self, ref: str) -> Path:
        return self._ev.verified_path(self.entry(ref))

    def read_bytes(self, ref: str) -> bytes:
        entry = self.entry(ref)
        self._ev.last_read = entry.path  # what a cache miss right after is computed from (progress names it)
        return self._ev.verified_bytes(entry)

    def read_text(self, ref: str) -> str:
        return self.read_bytes(ref).decode("utf-8", errors="replace")

    def read_json(self, ref: str) -> Any:
        try:
            return loads_json(self.read_bytes(ref), max_depth=256)
        except ValueError as exc:
            raise EvidenceError(f"evidence '{ref}' of step '{self.step_id}' is not valid JSON: {exc}") from None

    def record(self, ref: str) -> CaptureRecord | None:
        entry = self.entry(ref)
        rec = self._ev.record(entry)
        if isinstance(rec, CaptureFailure):  # a failure the manifest does not flag (written by hand?): still ERROR
            raise EvidenceError(f"capture '{entry.capture or ref}' failed: {rec.capture_error}")
        return rec

    def cached(self, namespace: str, key: str, compute: Callable[[], Any]) -> Any:
        ev = self._ev
        if ev.progress is None or key in ev.cache(namespace):
            return ev.cached(namespace, key, compute)
        # a key is `<engine cache id>:<sha256>` (referee.ocr.cache_key): the engine's name leads its cache id
        said = {"file": ev.last_read or "an evidence file", "engine": key.split(":", 1)[0].split("-", 1)[0]}
        report = ev.progress

        def reported() -> Any:
            report(namespace, self.step_id, {**said, "seconds": None})
            began = time.monotonic()
            value = compute()
            report(namespace, self.step_id, {**said, "seconds": time.monotonic() - began})
            return value

        return ev.cached(namespace, key, reported)
