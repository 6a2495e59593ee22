"""The evidence cache: one SQLite file, keyed by (backend, model, prompt version, view hash, sample)."""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

from referee.errors import UsageError

if TYPE_CHECKING:
    from referee.audit.records import Finding

_SCHEMA = """
CREATE TABLE IF NOT EXISTS evidence (
  backend TEXT NOT NULL, model TEXT NOT NULL, prompt_version TEXT NOT NULL,
  view_sha256 TEXT NOT NULL, run_index INTEGER NOT NULL, fields TEXT NOT NULL,
  PRIMARY KEY (backend, model, prompt_version, view_sha256, run_index));  -- run_index: the sample (version-1 name)
CREATE TABLE IF NOT EXISTS claims (
  backend TEXT NOT NULL, model TEXT NOT NULL, prompt_version TEXT NOT NULL,
  report_sha256 TEXT NOT NULL, reading TEXT NOT NULL,
  PRIMARY KEY (backend, model, prompt_version, report_sha256));
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT);
"""
CACHE_VERSION = "1"
BATCH_S = 1.0  # writes are committed together, at most this long after the first of them
LOCK_WAIT_S = 30.0  # how long one process waits for another's lock on a shared cache file


def _set_up(db: sqlite3.Connection, wait_s: float = LOCK_WAIT_S) -> None:
    """Switch a cache file to WAL and create its tables, waiting for other processes opening it at once.

    Switching the journal mode answers "database is locked" at once, without SQLite's busy wait, when
    another process is opening the same new file; two audits started together share one cache.
    """
    deadline = time.monotonic() + wait_s
    pause = 0.01
    while True:
        try:
            # before anything is changed (WAL mode stays in the file): a database of something else is refused
            tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            if tables - _TABLES:
                raise _Foreign(sorted(tables - _TABLES))
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            db.executescript(_SCHEMA)
            db.execute("INSERT OR IGNORE INTO meta VALUES ('cache_version', ?)", (CACHE_VERSION,))
            return
        except sqlite3.OperationalError as e:
            if not _busy(str(e)) or time.monotonic() >= deadline:
                raise
            time.sleep(pause)
            pause = min(pause * 2, 0.25)


def _busy(why: str) -> bool:
    """Whether SQLite's error says another connection holds the file (worth waiting for)."""
    return "locked" in why or "busy" in why


_TABLES = frozenset({"evidence", "claims", "meta"})  # a cache's tables (_SCHEMA): any other is a foreign database


class _Foreign(Exception):
    """A SQLite database that holds tables no evidence cache has."""


def _unusable(path: Path, err: sqlite3.Error | OSError | _Foreign) -> UsageError:
    """The one-line error for a cache file that cannot be opened, with what to do about it."""
    why = err.strerror or str(err) if isinstance(err, OSError) else str(err)
    if isinstance(err, _Foreign):
        why = f"it is another database (tables {', '.join(err.args[0])})"
        fix = "pass --cache with a new file name (nothing in it was changed)"
    elif _busy(why):
        fix = f"another process held it for over {LOCK_WAIT_S:.0f} s; wait for it, or give this audit its own --cache"
    elif any(w in why for w in ("not a database", "malformed", "encrypted", "corrupt")):
        # the file is the problem, not the folder: a cache is never repaired in place, and this one is left as it is
        fix = "it is not a cache referee can read; pass --cache with a new file name (nothing in it was changed)"
    else:
        fix = "pass --cache with a file in a folder you can write to"
    return UsageError(f"cannot use it as the evidence cache: {why}", file=str(path), fix=fix)


class EvidenceCache:
    """A thread-safe SQLite cache whose writes are committed in batches of at most `batch_s` seconds.

    One commit per write cost more than the rules extractor itself; a batch is committed when it is
    `batch_s` old (by the next write, or by a timer when no write comes), on `flush()` and on `close()`.
    A SIGKILL loses at most that last second of answers, which a resume asks again; what is read back
    in this process includes the batch not yet committed.

    >>> import tempfile, pathlib
    >>> from referee.audit.records import Finding
    >>> c = EvidenceCache(pathlib.Path(tempfile.mkdtemp()) / "c.sqlite")
    >>> c.put_evidence("llm", "m", "1", "abc", 0, {"action": Finding(value="yes", support=[2])})
    >>> c.get_evidence("llm", "m", "1", "abc", 0)["action"].support
    [2]
    >>> c.get_evidence("llm", "m", "1", "abc", 1) is None
    True
    >>> c.close()
    """

    def __init__(self, path: Path, batch_s: float = BATCH_S) -> None:
        self.path = Path(path)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as e:  # a folder that cannot be made: the path given is what the user must change
            raise _unusable(self.path, e) from None
        self.batch_s = batch_s
        self._lock = threading.Lock()
        try:
            self._db = sqlite3.connect(str(self.path), check_same_thread=False, isolation_level=None,
                                       timeout=LOCK_WAIT_S)
        except sqlite3.Error as e:
            raise _unusable(self.path, e) from None
        try:
            _set_up(self._db)
        except (sqlite3.Error, _Foreign) as e:
            self._db.close()
            raise _unusable(self.path, e) from None
        self._batch_since: float | None = None  # monotonic time of the first write not yet committed
        self._wake = threading.Condition(self._lock)
        self._timer: threading.Thread | None = None
        self._closed = False
        self.hits = 0
        self.misses = 0
        self.commits = 0

    def _write(self, sql: str, row: tuple) -> None:
        """One write inside the open batch (caller holds the lock); commit the batch once it is old enough."""
        now = time.monotonic()
        if self._batch_since is None:
            # IMMEDIATE takes the write lock now, waiting for another process's batch; a deferred BEGIN
            # could fail at its first write without waiting, when that process committed in between.
            self._db.execute("BEGIN IMMEDIATE")
            self._batch_since = now
            if self._timer is None:
                self._timer = threading.Thread(target=self._commit_late, name="referee-cache-commit", daemon=True)
                self._timer.start()
            self._wake.notify()
        self._db.execute(sql, row)
        if now - self._batch_since >= self.batch_s:
            self._commit()

    def _commit(self) -> None:
        if self._batch_since is not None:
            self._db.execute("COMMIT")
            self._batch_since = None
            self.commits += 1

    def _commit_late(self) -> None:
        """Commit a batch that no later write came to commit (a slow backend, the last records)."""
        with self._lock:
            while not self._closed:
                if self._batch_since is None:
                    self._wake.wait()
                    continue
                left = self._batch_since + self.batch_s - time.monotonic()
                if left > 0:
                    self._wake.wait(left)
                    continue
                self._commit()

    def flush(self) -> None:
        """Commit what is written so far."""
        with self._lock:
            self._commit()

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._commit()
            self._closed = True
            self._wake.notify_all()
            self._db.close()

    def _evidence_row(self, what: str, key: tuple) -> tuple | None:
        """One evidence row's `what` for (backend, model, prompt_version, view_sha256, sample), counted as a hit
        or a miss."""
        backend, model, prompt_version, view_sha256, sample = key
        with self._lock:
            row = self._db.execute(
                f"SELECT {what} FROM evidence WHERE backend=? AND model=? AND prompt_version=? AND view_sha256=? "
                "AND run_index=?", (backend, model or "", prompt_version, view_sha256, sample)).fetchone()
            if row is None:
                self.misses += 1
            else:
                self.hits += 1
            return row

    def get_evidence(self, backend: str, model: str | None, prompt_version: str, view_sha256: str,
                     sample: int) -> dict[str, Finding] | None:
        row = self._evidence_row("fields", (backend, model, prompt_version, view_sha256, sample))
        if row is None:
            return None
        from referee.audit.records import Finding  # the records' models load with the first cached finding

        return {k: Finding.model_validate(v) for k, v in json.loads(row[0]).items()}

    def has_evidence(self, backend: str, model: str | None, prompt_version: str, view_sha256: str,
                     sample: int) -> bool:
        """Whether `get_evidence` would answer (counted as a hit or a miss as it counts), without reading it."""
        return self._evidence_row("1", (backend, model, prompt_version, view_sha256, sample)) is not None

    def put_evidence(self, backend: str, model: str | None, prompt_version: str, view_sha256: str, sample: int,
                     fields: dict[str, Finding]) -> None:
        from referee.audit.records import findings_json

        self.put_evidence_json(backend, model, prompt_version, view_sha256, sample, findings_json(fields))

    def put_evidence_json(self, backend: str, model: str | None, prompt_version: str, view_sha256: str,
                          sample: int, blob: str) -> None:
        """Store findings already serialised as `put_evidence` does (a process worker's answer, as it came)."""
        with self._lock:
            self._write("INSERT OR REPLACE INTO evidence VALUES (?,?,?,?,?,?)",
                        (backend, model or "", prompt_version, view_sha256, sample, blob))

    def get_claim(self, backend: str, model: str | None, prompt_version: str, report_sha256: str) -> dict | None:
        with self._lock:
            row = self._db.execute(
                "SELECT reading FROM claims WHERE backend=? AND model=? AND prompt_version=? AND report_sha256=?",
                (backend, model or "", prompt_version, report_sha256)).fetchone()
        return json.loads(row[0]) if row else None

    def put_claim(self, backend: str, model: str | None, prompt_version: str, report_sha256: str,
                  reading: dict) -> None:
        with self._lock:
            self._write("INSERT OR REPLACE INTO claims VALUES (?,?,?,?,?)",
                        (backend, model or "", prompt_version, report_sha256, json.dumps(reading)))

    def __len__(self) -> int:
        with self._lock:
            return self._db.execute("SELECT COUNT(*) FROM evidence").fetchone()[0]
