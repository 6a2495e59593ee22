"""Processes that open one new cache file at the same moment all get it (two audits started together
share the default cache), and each one's answers are there for the others afterwards."""

from __future__ import annotations

import multiprocessing as mp
import sqlite3
import traceback

from referee.audit.records import Finding
from referee.audit.run.cache import EvidenceCache

PROCS = 4
ROUNDS = 8


def _open_and_write(path: str, who: int, barrier) -> str | None:
    try:
        barrier.wait(30)
        cache = EvidenceCache(path, batch_s=0.05)
        for i in range(20):
            cache.has_evidence("llm", "m", "1", f"shared-{i}", 0)
            cache.put_evidence("llm", "m", "1", f"p{who}-{i}", 0, {"action": Finding(value="yes", support=[i])})
        cache.close()
        return None
    except Exception:  # noqa: BLE001 - the failure is the test's finding, carried back as text
        return traceback.format_exc()


def test_processes_opening_one_new_cache_at_once_all_open_it_and_keep_every_write(tmp_path):
    ctx = mp.get_context("spawn")
    with ctx.Manager() as manager, ctx.Pool(PROCS) as pool:
        for r in range(ROUNDS):
            path = tmp_path / f"round{r}.sqlite"
            barrier = manager.Barrier(PROCS)
            failures = [x for x in pool.starmap(_open_and_write, [(str(path), w, barrier) for w in range(PROCS)]) if x]
            assert not failures, failures[0]
            rows = sqlite3.connect(path).execute("SELECT COUNT(*) FROM evidence").fetchone()[0]
            assert rows == PROCS * 20, f"round {r}: {rows} rows"
            back = EvidenceCache(path)
            assert back.get_evidence("llm", "m", "1", "p3-19", 0)["action"].support == [19]
            back.close()
