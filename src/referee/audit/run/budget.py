"""The budget of one record: the CPU, wall time and memory one trace's audit may take before it is given up.

The agent writes everything the auditor reads, so one record can be made to take for ever (a pattern that
backtracks, a plugin that loops) or to take all memory. A record over its budget is written as `review` with an
error naming the budget (`over_budget_record`), and the audit goes on. How the budget is held:

- **On a local process pool** (`referee audit --workers N`, `BudgetWatch`): each worker says in a slot file of its
  own which record of which chunk it is on, since when, at what CPU time and RSS (one `pwrite` a record). A
  thread of this process reads the slots every `POLL_S` and ends a worker past a limit with SIGKILL, whatever it
  is stuck in (C code included), so its memory is given back. The pool is replaced, and the chunks that were in
  flight are sent again, that record marked: the worker writes its `review` record without auditing it, and
  audits the chunk's other records. Such a loss is not counted against the chunks (`_Pool.excused`).
- **In this process** (`--workers 1`, a small input audited here, chunks done here while the workers start): a
  timer (`SIGALRM` every `POLL_S`, main thread only) checks the same three limits and raises `OverBudget` inside
  the record's audit. It interrupts Python code and a regular expression's match (`re` checks for signals); it
  cannot stop C code that never returns to Python, and memory comes back as the record's objects are freed.
- Not held: threads (`--concurrency`, the llm backend: it waits on the network) and Dask workers (other machines).

CPU and memory are read from /proc (Linux); elsewhere only the wall time is held.
"""

from __future__ import annotations

import itertools
import os
import shutil
import signal
import struct
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, TypeVar

from referee.audit.records import AuditRecord, BackendRef, ClaimReading, OverBudgetNote, PolicyRef
from referee.core.executors import LocalPool

T = TypeVar("T")
POLL_S = 0.1  # how often a record's clocks and memory are looked at
LIMITS = ("cpu", "wall", "memory")
_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


@dataclass(frozen=True)
class RecordBudget:
    """What one record's audit may take: CPU seconds, wall seconds, and memory (MiB the process grows by).

    >>> RecordBudget().describe("cpu"), RecordBudget().describe("memory")
    ('10 s of CPU (--record-cpu-s)', '512 MiB of memory (--record-memory-mib)')
    """

    cpu_s: float = 10.0
    wall_s: float = 30.0
    memory_mib: int = 512

    def describe(self, limit: str) -> str:
        if limit == "cpu":
            return f"{self.cpu_s:g} s of CPU (--record-cpu-s)"
        if limit == "wall":
            return f"{self.wall_s:g} s of wall time (--record-wall-s)"
        return f"{self.memory_mib} MiB of memory (--record-memory-mib)"

    def over(self, wall: float, cpu: float | None, grown: int | None) -> str | None:
        """The limit crossed by a record that has run `wall` s, used `cpu` s and grown by `grown` bytes."""
        if cpu is not None and cpu > self.cpu_s:
            return "cpu"
        if grown is not None and grown > self.memory_mib << 20:
            return "memory"
        if wall > self.wall_s:
            return "wall"
        return None

    def larger_than(self, note: OverBudgetNote) -> bool:
        """Whether this budget gives more of the limit a record went over than the budget it went over."""
        now = {"cpu": self.cpu_s, "wall": self.wall_s, "memory": self.memory_mib}
        then = {"cpu": note.cpu_s, "wall": note.wall_s, "memory": note.memory_mib}
        return now[note.limit] > then[note.limit]


class OverBudget(BaseException):
    """A record went over its budget (`limit`: cpu, wall or memory). A BaseException, as KeyboardInterrupt is: a
    backend's or plugin's `except Exception` must not take it for one of its own failures."""

    def __init__(self, limit: str) -> None:
        super().__init__(limit)
        self.limit = limit


def over_budget_error(budget: RecordBudget, limit: str) -> str:
    """The error an over-budget record lists."""
    return (f"record budget: its audit went over {budget.describe(limit)} and was ended; the record is review. "
            f"A resume leaves it; raise {budget.describe(limit).split('(')[1][:-1]} to audit it again")


def over_budget_record(auditor: Any, budget: RecordBudget, limit: str, *, run_id: str, task: str,
                       meta: dict | None, view_sha256: str, claim_sha256: str) -> AuditRecord:
    """The `review` record of a run whose audit went over `limit`: nothing of it was read or decided (no claim,
    no evidence, task class `other`), and it says which budget it went over (`over_budget`)."""
    from referee.audit.view.blind import VIEW_VERSION

    x, r, p = auditor.extractor, auditor.claim_reader, auditor.policy
    meta = meta or {}

    def s(v: Any) -> str | None:
        return None if v in (None, "") else str(v)

    return AuditRecord(
        record_version=5, run_id=run_id, task=task, task_class="other",
        claim=ClaimReading(label="unclear", votes=[], backend=r.name, cue="not read: the record went over its budget"),
        evidence=[], run_states=[], trace_state="unknown", disposition="review",
        policy=PolicyRef(name=p.policy.name, sha256=p.sha256),
        backend=BackendRef(name=x.name, model=x.model, prompt_version=x.prompt_version, runs=auditor.samples),
        view_sha256=view_sha256, group=s(meta.get("group")), split=s(meta.get("split")), source=s(meta.get("source")),
        advisory=meta.get("advisory") is True, errors=[over_budget_error(budget, limit)],
        claim_reader=BackendRef(name=r.name, model=r.model, prompt_version=r.prompt_version),
        view_version=VIEW_VERSION, claim_sha256=claim_sha256,
        over_budget=OverBudgetNote(limit=limit, cpu_s=budget.cpu_s, wall_s=budget.wall_s,  # type: ignore[arg-type]
                                   memory_mib=budget.memory_mib))


# -- one record, in a worker or here ------------------------------------------------------------------------

# token, record (-1: between records), wall, cpu and rss at its start, token again (a torn read has two)
_SLOT = struct.Struct("<qqdddq")
_IDLE = -1


@dataclass
class _Worker:
    """This worker process's slot and the chunk it runs: its token and the records marked over budget."""

    fd: int = -1
    statm: int = -1  # /proc/self/statm, kept open (read again at offset 0 for each record)
    token: int = 0
    marks: dict[int, str] = field(default_factory=dict)
    count: int = 0  # records begun in this chunk (their numbers, when the caller gives none)


_W = _Worker()
_ARMED: list[tuple] = []  # the timer of the record audited in this process, while one runs


def run_chunk(slot_dir: str, token: int, marks: dict[int, str], fn: Callable[..., T], *args: Any) -> T:
    """In a worker: `fn(*args)` (a chunk), its records announced in this worker's slot under `token`; a record in
    `marks` (its number -> the limit it went over) is not audited again (`budgeted` answers `over` for it)."""
    if _W.fd < 0:
        _W.fd = os.open(os.path.join(slot_dir, str(os.getpid())), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    _W.token, _W.marks, _W.count = token, marks, 0
    try:
        return fn(*args)
    finally:
        _write(_IDLE)
        _W.token = 0


def _write(record: int) -> None:
    rss = 0
    if record != _IDLE and _W.statm != -2:
        try:
            if _W.statm < 0:
                _W.statm = os.open("/proc/self/statm", os.O_RDONLY)
            rss = int(os.pread(_W.statm, 128, 0).split()[1]) * _PAGE
        except (OSError, ValueError, IndexError):
            _W.statm = -2  # no /proc: memory is not watched
    os.pwrite(_W.fd, _SLOT.pack(_W.token, record, time.monotonic(), time.process_time(), rss or 0, _W.token), 0)


def budgeted(budget: RecordBudget | None, work: Callable[[], T], over: Callable[[str], T],
             record: int | None = None) -> T:
    """`work()` for one record under `budget`; `over(limit)` (its over-budget answer) when the record went over.

    In a worker (`run_chunk`): the record is announced in the slot, for the parent's watch; a record marked over
    budget by an earlier try is answered `over` at once. In this process: a timer raises OverBudget in it.
    `record` numbers the record within its chunk (by default, the records are counted in the order they begin).
    """
    if record is None:
        record = _W.count
    _W.count = max(_W.count, record + 1)
    if _W.token:
        if record in _W.marks:
            _write(_IDLE)  # what an over-budget record costs (its hashes) is not watched
            return over(_W.marks[record])
        _write(record)
        try:
            return work()
        finally:
            _write(_IDLE)
    if budget is None or _ARMED or not hasattr(signal, "setitimer") or \
            threading.current_thread() is not threading.main_thread():
        return work()
    return _timed(budget, work, over)


def _timed(budget: RecordBudget, work: Callable[[], T], over: Callable[[str], T]) -> T:
    start = (time.monotonic(), time.process_time(), _rss(None))
    # the limit crossed, once one is; `on` is cleared as the record ends (a tick still pending then does nothing)
    state: dict[str, Any] = {"on": True, "limit": None}

    def check(_sig: int, _frame: Any) -> None:
        if not state["on"]:
            return
        if state["limit"] is None:
            rss = _rss(None)
            state["limit"] = budget.over(time.monotonic() - start[0], time.process_time() - start[1],
                                         None if rss is None or start[2] is None else rss - start[2])
        if state["limit"] is not None:
            # raised again at each tick until the record ends: one raised while a finalizer (`__del__`, a weakref
            # callback) runs is printed and dropped by Python, and must not leave the record unbudgeted
            raise OverBudget(state["limit"])

    def quiet(unraisable: Any) -> None:
        # an OverBudget that Python dropped in a finalizer is raised again at the next tick: not a user's traceback
        if not isinstance(unraisable.exc_value, OverBudget):
            hook(unraisable)

    before, hook = signal.signal(signal.SIGALRM, check), sys.unraisablehook
    sys.unraisablehook = quiet
    _ARMED.append(start)
    signal.setitimer(signal.ITIMER_REAL, POLL_S, POLL_S)
    try:
        try:
            return work()
        finally:
            state["on"] = False
            signal.setitimer(signal.ITIMER_REAL, 0)
    except OverBudget as exc:  # also one raised as the record ended, before the timer was stopped
        return over(exc.limit)
    finally:
        signal.signal(signal.SIGALRM, before if before is not None else signal.SIG_DFL)
        sys.unraisablehook = hook
        _ARMED.clear()


def _rss(pid: int | None) -> int | None:
    """Resident bytes of `pid` (None: this process), from /proc; None where there is none."""
    try:
        with open(f"/proc/{pid or 'self'}/statm", "rb") as fh:
            return int(fh.read().split()[1]) * _PAGE
    except (OSError, ValueError, IndexError):
        return None


def _cpu(pid: int) -> float | None:
    """CPU seconds (user + system) `pid` has used, from /proc; None where there is none."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            fields = fh.read().rsplit(b")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / _TICK
    except (OSError, ValueError, IndexError):
        return None


# -- the parent's watch over a local pool's workers ---------------------------------------------------------

class BudgetWatch:
    """A thread that reads the workers' slots every POLL_S and ends a worker whose record is over `budget`.

    `workers()` gives the pids of the pool's workers now (only those are ever signalled). What was ended is kept:
    `marks[token]` (record -> limit) for the chunk to be sent again, `generations` the pool generations a worker
    was ended in (their losses are excused), `ended` the pids ended.
    """

    def __init__(self, budget: RecordBudget, workers: Callable[[], set[int]], generation: Callable[[], int]) -> None:
        self.budget = budget
        self.dir = tempfile.mkdtemp(prefix="referee-budget-")
        self.marks: dict[int, dict[int, str]] = {}
        self.generations: set[int] = set()
        self.ended: list[int] = []
        self._workers, self._generation = workers, generation
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="referee-record-budget", daemon=True)
        self._thread.start()

    def marks_of(self, token: int) -> dict[int, str]:
        with self._lock:
            return dict(self.marks.get(token, {}))

    def _loop(self) -> None:
        while not self._stop.wait(POLL_S):
            try:
                names = os.listdir(self.dir)
            except OSError:
                return
            for name in names:
                self._look(name)

    def _look(self, name: str) -> None:
        try:
            with open(os.path.join(self.dir, name), "rb") as fh:
                token, record, wall0, cpu0, rss0, again = _SLOT.unpack(fh.read(_SLOT.size))
        except (OSError, struct.error):
            return
        if record == _IDLE or token != again or not token:
            return  # between records, or a slot read while it was being written
        pid = int(name)
        cpu, rss = _cpu(pid), _rss(pid)
        # the worker's process_time and /proc's ticks are one clock, read at 10 ms grain
        limit = self.budget.over(time.monotonic() - wall0, None if cpu is None else cpu - cpu0,
                                 None if rss is None or not rss0 else rss - rss0)
        if limit is None or pid not in self._workers():
            return
        with self._lock:
            marks = self.marks.setdefault(token, {})
            if record in marks:
                return  # ended already: its loss is on its way
            marks[record] = limit
            self.generations.add(self._generation())
            self.ended.append(pid)
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        try:
            os.unlink(os.path.join(self.dir, name))
        except OSError:
            pass

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        shutil.rmtree(self.dir, ignore_errors=True)


class BudgetPool(LocalPool):
    """A local process pool whose workers are watched (`BudgetWatch`): each chunk runs under a token
    (`run_chunk`), the same token when the chunk is sent again after a loss, with the records marked over budget
    since; a loss in a pool generation where the watch ended a worker is excused (`map_chunks` counts no try)."""

    def __init__(self, budget: RecordBudget, workers: int, preload: tuple[str, ...] = (),
                 initializer: Callable[..., Any] | None = None, initargs: tuple = (), lazy: bool = False) -> None:
        super().__init__(workers, preload, initializer, initargs, lazy=lazy)
        self.watch = BudgetWatch(budget, self._pids, lambda: self.generation)
        self._tokens: dict[int, tuple[int, Any]] = {}     # id(payload) -> (token, payload) until it is answered
        self._futs: dict[Any, tuple[int, int, int]] = {}   # future -> (token, pool generation, id(payload))
        self._next = itertools.count(1)

    def _pids(self) -> set[int]:
        return set(getattr(self._pool, "_processes", None) or ())

    def submit(self, fn: Callable[..., Any], *args: Any) -> Any:
        payload = args[-1]
        got = self._tokens.get(id(payload))
        if got is None or got[1] is not payload:
            got = self._tokens[id(payload)] = (next(self._next), payload)
        fut = self._pool.submit(run_chunk, self.watch.dir, got[0], self.watch.marks_of(got[0]), fn, *args)
        self._futs[fut] = (got[0], self.generation, id(payload))
        return fut

    def result(self, fut: Any) -> Any:
        got = fut.result()  # a loss raises here: the chunk is sent again under its token
        _, _, key = self._futs.pop(fut)
        self._tokens.pop(key, None)
        return got

    def excused(self, fut: Any) -> bool:
        _, generation, _ = self._futs.pop(fut, (0, -1, 0))
        return generation in self.watch.generations

    def close(self) -> None:
        try:
            super().close()
        finally:
            self.watch.close()
