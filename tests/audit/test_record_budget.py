"""A budget per record (issue 30): a record whose audit spins, sleeps or grows past the budget is written as `review`
with an error naming the budget, the audit goes on with every other record, the worker that ran it is ended and
replaced (its chunk's other records audited again), and a resume leaves the record until the budget is raised.

The slow record is made slow by a test-only extractor (tests/support/slow_extractor.py). Nothing here measures a
time: each test looks at the mechanism (the record, the other records, the process gone, the losses not counted)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from referee.audit.claim.reader import RulesClaimReader
from referee.audit.decide.policyfile import load_policy
from referee.audit.run.budget import RecordBudget
from referee.audit.run.options import CallbackEvents
from referee.audit.run.parallel import ParallelAudit
from referee.audit.run.pipeline import Auditor, audit_files
from referee.core.executors import ExecutorOptions, LocalPool
from tests.support.scale_work import write_corpus
from tests.support.slow_extractor import SlowOnPurpose

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

N, SLOW_AT = 14, 7  # the slow record is the 8th: the third chunk of three, in the middle of its chunk
WORD = {"cpu": "SPIN", "wall": "SLEEP", "memory": "HOG"}
# the wall budget is what the SLEEP record waits out; the other records, each asserted within budget, must finish
# in it on a busy machine (a worker's first one takes a few hundredths of a CPU second)
BUDGETS = {"cpu": RecordBudget(cpu_s=0.5, wall_s=600, memory_mib=4096),
           "wall": RecordBudget(cpu_s=600, wall_s=1.5, memory_mib=4096),
           "memory": RecordBudget(cpu_s=600, wall_s=600, memory_mib=64)}
FLAG = {"cpu": "--record-cpu-s", "wall": "--record-wall-s", "memory": "--record-memory-mib"}


@pytest.fixture
def workers_ready_at_once(monkeypatch):
    """The pool's workers started before the first chunk is made, so that no chunk is audited in this process
    while they start (which chunk that would be is a matter of timing): every record goes to a worker."""
    def start(self):
        if not self._launched:
            self._launched = True
            self._start_workers(self._pool)

    monkeypatch.setattr(LocalPool, "start", start)


def corpus(dir_: Path, shape: str, limit: str | None) -> list[Path]:
    """N traces; with `limit`, the SLOW_AT-th one's task names the word that makes it slow. `shape`: one JSONL file
    (the workers read its lines), one JSON array (read here, sent as view parts), or one small file per trace
    (sent by name, several to a chunk)."""
    lines = write_corpus(dir_ / "all.jsonl", N).read_text().splitlines()
    traces = [json.loads(ln) for ln in lines]
    if limit is not None:
        traces[SLOW_AT]["task"] = f"{WORD[limit]}: {traces[SLOW_AT]['task']}"
        (dir_ / "slow.json").write_text(json.dumps(traces[SLOW_AT]))
    (dir_ / "all.jsonl").unlink()
    if shape == "lines":
        p = dir_ / "traces.jsonl"
        p.write_text("".join(json.dumps(t) + "\n" for t in traces))
        return [p]
    if shape == "packed":
        p = dir_ / "traces.json"
        p.write_text(json.dumps(traces))
        return [p]
    folder = dir_ / "runs"
    folder.mkdir()
    for t in traces:
        (folder / f"{t['run_id']}.json").write_text(json.dumps(t))
    return [folder]


def auditor(tmp_path: Path, budget: RecordBudget | None) -> Auditor:
    pids = tmp_path / "pids"
    pids.mkdir(exist_ok=True)
    return Auditor(load_policy("causal"), SlowOnPurpose(pids=str(pids)), RulesClaimReader(), budget=budget)


def records(out: Path) -> dict[str, dict]:
    return {r["run_id"]: r for r in map(json.loads, out.read_text().splitlines())}


def expected(tmp_path: Path, shape: str) -> dict[str, dict]:
    """The records of the same traces with nothing slow, audited in this process with no budget."""
    d = tmp_path / "plain"
    d.mkdir()
    out = d / "audit.jsonl"
    audit_files(corpus(d, shape, None), auditor(d, None), out)
    return records(out)


def view_sha(dir_: Path) -> str:
    from referee.audit.trace import Trace
    from referee.audit.view.blind import build_view

    return build_view(Trace.model_validate_json((dir_ / "slow.json").read_text())).sha256


def check_slow_record(got: dict, limit: str) -> None:
    assert got["disposition"] == "review" and got["trace_state"] == "unknown"
    assert got["over_budget"]["limit"] == limit and got["record_version"] == 5
    assert len(got["errors"]) == 1 and "record budget" in got["errors"][0] and FLAG[limit] in got["errors"][0]


def slow_pids(tmp_path: Path) -> list[int]:
    return [int(p.name.split(".")[1]) for p in (tmp_path / "pids").iterdir()]


def gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except FileNotFoundError:
        return True


@pytest.mark.parametrize("shape,limit,word", [("lines", "cpu", "SPIN"), ("packed", "cpu", "BACKTRACK"),
                                              ("files", "cpu", "SPIN"), ("lines", "wall", "SLEEP"),
                                              ("lines", "memory", "HOG")])
def test_a_worker_over_the_budget_is_ended_and_its_chunk_audited_again(tmp_path, workers_ready_at_once, monkeypatch,
                                                                        shape, limit, word):
    monkeypatch.setitem(WORD, limit, word)
    want = expected(tmp_path, shape)
    out = tmp_path / "audit.jsonl"
    executor = ParallelAudit(ExecutorOptions("local", workers=2, chunk_size=3))
    stats = audit_files(corpus(tmp_path, shape, limit), auditor(tmp_path, BUDGETS[limit]), out, executor=executor)
    got = records(out)
    slow = f"r{SLOW_AT:04d}"
    assert stats.written == N and not stats.errors
    check_slow_record(got[slow], limit)
    assert {k: v for k, v in got.items() if k != slow} == {k: v for k, v in want.items() if k != slow}
    assert got[slow]["view_sha256"] == view_sha(tmp_path)  # what a resume compares
    # the worker that ran it was ended (the pool replaced), and that loss cost no chunk a try
    assert executor.ended == 1 and executor.lost == 0 and executor.in_process == 0 and executor.here == 0
    [pid] = slow_pids(tmp_path)
    assert pid != os.getpid() and gone(pid)


@pytest.mark.parametrize("limit,word", [("cpu", "SPIN"), ("cpu", "BACKTRACK"), ("wall", "SLEEP"), ("memory", "HOG")])
def test_in_this_process_a_timer_ends_the_record(tmp_path, limit, word, monkeypatch):
    monkeypatch.setitem(WORD, limit, word)
    if limit == "memory" and not Path("/proc/self/statm").exists():
        pytest.skip("memory is read from /proc")
    want = expected(tmp_path, "lines")
    out = tmp_path / "audit.jsonl"
    stats = audit_files(corpus(tmp_path, "lines", limit), auditor(tmp_path, BUDGETS[limit]), out)
    got = records(out)
    slow = f"r{SLOW_AT:04d}"
    assert stats.written == N and not stats.errors
    check_slow_record(got[slow], limit)
    assert {k: v for k, v in got.items() if k != slow} == {k: v for k, v in want.items() if k != slow}
    assert got[slow]["view_sha256"] == view_sha(tmp_path)
    assert slow_pids(tmp_path) == [os.getpid()]


class _Finalized:
    def __del__(self) -> None:
        sum(range(50))  # Python code run as a finalizer: an exception raised in it is printed and dropped


# the OverBudget Python drops in a finalizer is raised again at the next tick, and is no "Exception ignored" for
# the user: none reaches the hook that prints them (pytest's turns it into this warning, here an error)
@pytest.mark.filterwarnings("error::pytest.PytestUnraisableExceptionWarning")
def test_in_this_process_a_record_over_budget_while_finalizers_run_is_still_ended():
    from referee.audit.run.budget import budgeted

    def work() -> str:  # spins making objects whose finalizer runs Python code: most timer ticks land in one
        import time

        t0 = time.process_time()
        while time.process_time() - t0 < 5:
            for _ in range(1000):
                _Finalized()
        return "finished"  # only when the budget was never held: a tick's OverBudget dropped, the timer stopped

    assert budgeted(BUDGETS["cpu"], work, lambda limit: f"over {limit}") == "over cpu"


def test_a_resume_leaves_the_record_over_budget_until_the_budget_is_raised(tmp_path):
    paths = corpus(tmp_path, "lines", "cpu")
    out = tmp_path / "audit.jsonl"
    audit_files(paths, auditor(tmp_path, BUDGETS["cpu"]), out)
    lines = out.read_text().splitlines()
    notes: list[str] = []
    again = audit_files(paths, auditor(tmp_path, BUDGETS["cpu"]), out, events=CallbackEvents(note=notes.append))
    assert again.written == 0 and again.skipped_done == N and again.retried == 0
    assert out.read_text().splitlines() == lines
    [note] = notes  # not left in silence: the note names the run and how to audit it again
    assert f"run_id r{SLOW_AT:04d}" in note and "--record-cpu-s" in note
    raised = RecordBudget(cpu_s=1.0, wall_s=600, memory_mib=4096)
    third = audit_files(paths, auditor(tmp_path, raised), out)
    assert third.written == 1 and third.retried == 1 and third.skipped_done == N - 1
    last = json.loads(out.read_text().splitlines()[-1])
    check_slow_record(last, "cpu")
    assert last["over_budget"]["cpu_s"] == 1.0


def test_records_without_a_budget_note_read_as_before(tmp_path):
    from referee.audit.run.resume import scan

    out = tmp_path / "audit.jsonl"
    audit_files(corpus(tmp_path, "lines", None), auditor(tmp_path, None), out)
    done = scan(out)
    assert len(done) == N and all(d.over is None for d in done.values())
    assert all(json.loads(ln)["record_version"] == 6 and json.loads(ln)["over_budget"] is None
               for ln in out.read_text().splitlines())


def test_the_cli_holds_its_budget_options_and_a_resume_says_how_to_audit_again(tmp_path):
    import subprocess

    site = tmp_path / "site"
    dist = site / "referee_slow-0.1.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: referee-slow\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[referee.extractors]\nslow = tests.support.slow_extractor:SlowOnPurpose\n")
    [traces] = corpus(tmp_path, "lines", "cpu")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(site), str(ROOT), str(ROOT / "src")]))
    out = tmp_path / "a.jsonl"
    cmd = [sys.executable, "-m", "referee.cli.main", "audit", str(traces), "--backend", "slow", "--out", str(out),
           "--record-cpu-s", "0.5", "--record-wall-s", "600", "--workers", "2", "--chunk-size", "3", "--no-progress",
           "--show", "none", "--cache", str(tmp_path / "cache")]
    first = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300, cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    got = records(out)
    assert len(got) == N
    check_slow_record(got[f"r{SLOW_AT:04d}"], "cpu")
    assert got[f"r{SLOW_AT:04d}"]["over_budget"]["cpu_s"] == 0.5
    again = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300, cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert len(out.read_text().splitlines()) == N
    assert f"run_id r{SLOW_AT:04d}: its audit went over the record budget (cpu)" in again.stderr
    assert "raise --record-cpu-s to audit it again" in again.stderr
