"""The evidence cache: one SQLite file, keyed by (backend, model, prompt version, view hash, sample)."""

from __future__ import annotations

import json
import sqlite3
import threading
from pathlib import Path

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


class EvidenceCache:
    """A thread-safe SQLite cache; every put commits at once, so a SIGKILL loses no answered model call.

    >>> import tempfile, pathlib
    >>> c = EvidenceCache(pathlib.Path(tempfile.mkdtemp()) / "c.sqlite")
    >>> c.put_evidence("llm", "m", "1", "abc", 0, {"action": Finding(value="yes", support=[2])})
    >>> c.get_evidence("llm", "m", "1", "abc", 0)["action"].support
    [2]
    >>> c.get_evidence("llm", "m", "1", "abc", 1) is None
    True
    """

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(str(self.path), check_same_thread=False, isolation_level=None, timeout=30)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.executescript(_SCHEMA)
        self._db.execute("INSERT OR IGNORE INTO meta VALUES ('cache_version', ?)", (CACHE_VERSION,))
        self.hits = 0
        self.misses = 0

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def get_evidence(self, backend: str, model: str | None, prompt_version: str, view_sha256: str,
                     sample: int) -> dict[str, Finding] | None:
        with self._lock:
            row = self._db.execute(
                "SELECT fields FROM evidence WHERE backend=? AND model=? AND prompt_version=? AND view_sha256=? "
                "AND run_index=?", (backend, model or "", prompt_version, view_sha256, sample)).fetchone()
            if row is None:
                self.misses += 1
                return None
            self.hits += 1
        return {k: Finding.model_validate(v) for k, v in json.loads(row[0]).items()}

    def put_evidence(self, backend: str, model: str | None, prompt_version: str, view_sha256: str, sample: int,
                     fields: dict[str, Finding]) -> None:
        blob = json.dumps({k: v.model_dump() for k, v in fields.items()}, sort_keys=True)
        with self._lock:
            self._db.execute("INSERT OR REPLACE INTO evidence VALUES (?,?,?,?,?,?)",
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
            self._db.execute("INSERT OR REPLACE INTO claims VALUES (?,?,?,?,?)",
                             (backend, model or "", prompt_version, report_sha256, json.dumps(reading)))

    def __len__(self) -> int:
        with self._lock:
            return self._db.execute("SELECT COUNT(*) FROM evidence").fetchone()[0]
