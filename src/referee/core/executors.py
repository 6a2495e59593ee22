"""Chunks of independent work on a local process pool or a Dask cluster, results back to one caller.

Both halves of referee map over independent units (a trace, a plan). The caller cuts the units
into chunks, this module runs one picklable function per chunk on other processes, and gives the
results back to the caller, in chunk order by default, so that the caller stays the only writer
of every output. A chunk whose worker was lost (a killed process, a Dask worker gone) is run
again, at most `MAX_LOSSES` times; each chunk's result is given back exactly once.

Dask is optional (`pip install 'referee[dask]'`); it is imported only when asked for.
"""

from __future__ import annotations

import os
from collections import deque
from dataclasses import dataclass
from typing import Any, Callable, Generic, Iterable, Iterator, Literal, TypeVar

from referee.errors import RefereeError, UsageError, require

S = TypeVar("S")
P = TypeVar("P")
R = TypeVar("R")

MAX_LOSSES = 3  # a chunk that was on a lost worker this often is given up, with an error naming it
PREFETCH = 4    # windows of chunks made ahead while a local pool's workers start


class WorkerLostError(RefereeError):
    """A chunk of work whose worker was lost `MAX_LOSSES` times (a unit that kills its worker, or a dying cluster)."""

    exit_code = 1


def default_workers() -> int:
    """The cores this process may use (its CPU affinity where the system has one).

    >>> default_workers() >= 1
    True
    """
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # macOS, Windows
        return max(1, os.cpu_count() or 1)


@dataclass(frozen=True)
class ExecutorOptions:
    """Where chunks run: `local` (a process pool of `workers`) or `dask` (`scheduler`, or a LocalCluster).

    >>> ExecutorOptions("local", workers=4).describe()
    'local process pool, 4 workers, chunks of 50'
    """

    kind: Literal["local", "dask"] = "local"
    workers: int = 0  # 0: every core (local), or a LocalCluster of that many workers (dask)
    scheduler: str | None = None  # dask only: tcp://HOST:PORT of a running scheduler
    chunk_size: int = 50

    @property
    def n_workers(self) -> int:
        return self.workers if self.workers > 0 else default_workers()

    @property
    def local_workers(self) -> int:
        """Processes on this machine for the work that must stay here (a Dask audit's claims): every core."""
        return self.n_workers if self.kind == "local" else default_workers()

    def describe(self) -> str:
        if self.kind == "dask":
            where = self.scheduler or f"a LocalCluster of {self.n_workers} workers on 127.0.0.1"
            return f"dask ({where}), chunks of {self.chunk_size}"
        return f"local process pool, {self.n_workers} workers, chunks of {self.chunk_size}"


def check_options(kind: str, workers: int | None, scheduler: str | None, chunk_size: int) -> ExecutorOptions:
    """Validate the command-line options into ExecutorOptions (a one-line UsageError for a bad one)."""
    if kind not in ("local", "dask"):
        raise UsageError(f"--executor {kind}: unknown executor", fix="use local or dask")
    if workers is not None and workers < 1:
        raise UsageError("--workers must be at least 1", fix="give a number of processes, or leave it out for "
                                                             "every core")
    if chunk_size < 1:
        raise UsageError("--chunk-size must be at least 1")
    if scheduler and kind != "dask":
        raise UsageError("--scheduler is for --executor dask", fix="add --executor dask, or leave --scheduler out")
    if scheduler and "://" not in scheduler:
        raise UsageError(f"--scheduler {scheduler}: not a scheduler address", fix="give tcp://HOST:PORT")
    return ExecutorOptions(kind, workers or 0, scheduler, chunk_size)  # type: ignore[arg-type]


# -- pools -----------------------------------------------------------------------------------------

class _Pool:
    """What the chunk loop needs of a pool: submit, wait for any, tell a lost worker from a failed function."""

    generation = 0  # bumped when the pool is replaced after a loss
    losses = 0      # chunks submitted again because their worker was lost

    def submit(self, fn: Callable[..., Any], *args: Any) -> Any:
        raise NotImplementedError

    def wait_any(self, futures: list[Any]) -> list[Any]:
        raise NotImplementedError

    def result(self, fut: Any) -> Any:
        return fut.result()

    def is_lost(self, exc: BaseException) -> bool:
        raise NotImplementedError

    def excused(self, fut: Any) -> bool:
        """Whether `fut` was lost with a worker the pool ended on purpose (referee.audit.run.budget: a record over its
        budget): the chunk is sent again without counting a loss against it."""
        return False

    def recover(self) -> None:
        """Make the pool usable again after a loss (the local pool is replaced; Dask heals itself)."""

    def start(self) -> None:
        """Start the workers of a pool made `lazy` (a local pool); nothing for the others, which are running."""

    def ready(self) -> bool:
        """Whether submitting now starts work at once (False while a local pool's workers are starting)."""
        return True

    @property
    def launched(self) -> bool:
        """Whether the workers were told to start (False: a lazy pool that may never start them)."""
        return True

    def wait_ready(self) -> None:
        """Block until `ready()`."""

    def close(self) -> None:
        raise NotImplementedError


def _mp_context(preload: tuple[str, ...]):
    import multiprocessing as mp

    # forkserver: workers fork from a clean server that imported `preload` once, never from this
    # process (which has threads: a progress bar, the cache's commit timer)
    if "forkserver" in mp.get_all_start_methods():
        ctx = mp.get_context("forkserver")
        ctx.set_forkserver_preload(list(preload))
        _start_forkserver_safe_path()
        return ctx
    return mp.get_context("spawn")


def _start_forkserver_safe_path() -> None:
    """Start the forkserver (and its resource tracker) now, with PYTHONSAFEPATH=1. Each is `python -c ...`,
    which puts the working directory first on sys.path (the forkserver never takes the parent's), so a
    `multiprocessing/` or `referee/` an agent left in the working directory was imported into every worker."""
    import os
    from multiprocessing import forkserver

    old = os.environ.get("PYTHONSAFEPATH")
    os.environ["PYTHONSAFEPATH"] = "1"
    try:
        forkserver.ensure_running()
    finally:
        if old is None:
            os.environ.pop("PYTHONSAFEPATH", None)
        else:
            os.environ["PYTHONSAFEPATH"] = old


class _FuturesPool(_Pool):
    """A pool over a `concurrent.futures` executor (`self._pool`): processes or threads."""

    _pool: Any

    def submit(self, fn: Callable[..., Any], *args: Any) -> Any:
        return self._pool.submit(fn, *args)

    def wait_any(self, futures: list[Any]) -> list[Any]:
        from concurrent.futures import FIRST_COMPLETED, wait

        done, _ = wait(futures, return_when=FIRST_COMPLETED)
        return list(done)


class LocalPool(_FuturesPool):
    """A `concurrent.futures` process pool; a worker killed mid-chunk breaks it, so it is replaced."""

    def __init__(self, workers: int, preload: tuple[str, ...] = (), initializer: Callable[..., Any] | None = None,
                 initargs: tuple = (), lazy: bool = False) -> None:
        import threading

        self.workers = workers
        self._ctx = _mp_context(preload)
        self._init = (initializer, initargs)  # run once in each worker as it starts (data every chunk needs)
        self._pool = self._new()  # no process yet: a process pool starts its workers on the first submit
        self._started = threading.Event()
        self._launched = False
        if not lazy:
            self.start()

    def start(self) -> None:
        """Start the workers, once: a fresh interpreter importing `preload` (a quarter second), on a thread of
        its own, while the caller reads and packs the first chunks (map_chunks prefetches until `ready`)."""
        import threading

        if not self._launched:
            self._launched = True
            threading.Thread(target=self._start_workers, args=(self._pool,), name="referee-pool-start",
                             daemon=True).start()

    def _start_workers(self, pool: Any) -> None:
        try:
            for _ in range(self.workers):  # each submit that finds no idle worker starts one
                pool.submit(_nothing)
        except Exception:  # noqa: BLE001 - a pool that cannot start says so on the first chunk submitted
            pass
        finally:
            self._started.set()

    def ready(self) -> bool:
        return self._started.is_set()

    @property
    def launched(self) -> bool:
        return self._launched

    def wait_ready(self) -> None:
        self.start()
        self._started.wait()

    def _new(self):
        from concurrent.futures import ProcessPoolExecutor

        return ProcessPoolExecutor(max_workers=self.workers, mp_context=self._ctx, initializer=_worker_start,
                                   initargs=(os.getpid(), *self._init))

    def is_lost(self, exc: BaseException) -> bool:
        from concurrent.futures.process import BrokenProcessPool

        return isinstance(exc, BrokenProcessPool)

    def recover(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
        self._pool = self._new()
        self.generation += 1

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)


def _nothing() -> None:
    """What a local pool's workers are started with."""


PARENT_POLL_S = 1.0  # how often a local worker looks whether the process that made its pool is still there


def _worker_start(parent: int, initializer: Callable[..., Any] | None, initargs: tuple) -> None:
    """A local worker's start: the pool's own initializer, and a watch on the process that made the pool. A
    worker's parent is the forkserver, so nothing else tells it that process was killed (SIGKILL, the OOM
    killer): it would wait on its queue for ever, holding memory and the input's pipes."""
    import threading
    import time

    def watch() -> None:
        while True:
            time.sleep(PARENT_POLL_S)
            try:
                os.kill(parent, 0)
            except ProcessLookupError:
                os._exit(0)  # nobody is left to take what this worker would answer
            except PermissionError:
                pass  # there, under another uid (a recycled pid would be too: rare, and then it stays as before)

    threading.Thread(target=watch, name="referee-parent-watch", daemon=True).start()
    if initializer is not None:
        initializer(*initargs)


class ThreadPool(_FuturesPool):
    """Threads, for work that waits on other processes (a plan's own `referee run`); nothing is ever lost."""

    def __init__(self, workers: int) -> None:
        from concurrent.futures import ThreadPoolExecutor

        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="referee-plan")

    def is_lost(self, exc: BaseException) -> bool:
        return False

    def close(self) -> None:
        self._pool.shutdown(wait=True)


class DaskPool(_Pool):
    """A Dask client: of the scheduler at `scheduler`, or of a LocalCluster on loopback it starts and stops."""

    def __init__(self, scheduler: str | None, workers: int) -> None:
        distributed = require("distributed", "dask")
        self._d = distributed
        self.cluster = None
        if scheduler:
            try:
                self.client = distributed.Client(scheduler, timeout="10s")
            except OSError as exc:
                raise UsageError(f"--scheduler {scheduler}: cannot reach the Dask scheduler ({exc})",
                                 fix="start it (`dask scheduler`) or give its tcp://HOST:PORT") from None
        else:
            self.cluster = distributed.LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                                    host="127.0.0.1", dashboard_address=None)
            self.client = distributed.Client(self.cluster)
        self._done = distributed.as_completed()

    def submit(self, fn: Callable[..., Any], *args: Any) -> Any:
        fut = self.client.submit(fn, *args, pure=False)
        self._done.add(fut)
        return fut

    def wait_any(self, futures: list[Any]) -> list[Any]:
        wanted = set(futures)
        while True:  # results reach the caller through as_completed, in the order they finish
            got = [f for f in [next(self._done)] + self._done.next_batch(block=False) if f in wanted]
            if got:
                return got

    def result(self, fut: Any) -> Any:
        return fut.result()

    def is_lost(self, exc: BaseException) -> bool:
        from distributed.comm.core import CommClosedError
        from distributed.scheduler import KilledWorker

        return isinstance(exc, (KilledWorker, CommClosedError))

    def close(self) -> None:
        self.client.close()
        if self.cluster is not None:
            self.cluster.close()


def make_pool(options: ExecutorOptions, preload: tuple[str, ...] = (), initializer: Callable[..., Any] | None = None,
              initargs: tuple = (), lazy: bool = False) -> _Pool:
    """The pool `options` name; a missing Dask says how to install it. `initializer(*initargs)` runs once in
    each local worker (Dask workers get what they need with each chunk). A `lazy` local pool starts its workers
    when `start()` is called (or a chunk waits on them), not now."""
    if options.kind == "dask":
        return DaskPool(options.scheduler, options.n_workers)
    return LocalPool(options.n_workers, preload, initializer, initargs, lazy=lazy)


# -- the chunk loop --------------------------------------------------------------------------------

@dataclass
class _Flight(Generic[S, P]):
    index: int
    state: S
    payload: P
    generation: int
    losses: int = 0


def map_chunks(pool: _Pool, fn: Callable[..., R], chunks: Iterable[tuple[S, P | None]], *, fixed: tuple = (),
               window: int = 4, ordered: bool = True, here: Callable[..., R] | None = None,
               describe: Callable[[S], str] = lambda s: "a chunk") -> Iterator[tuple[S, R | None]]:
    """Run `fn(*fixed, payload)` for each (state, payload) on the pool; yield (state, result) once each.

    `state` stays here (what the caller needs to finish the chunk); only `payload` crosses to a
    worker. A chunk with payload None is not sent (its result is None). At most `window` chunks are
    in flight; with `ordered` the results come in chunk order. A chunk on a lost worker is submitted
    again; an exception raised by `fn` itself is raised here. An error raised while the caller's
    chunks are produced (a bad record with `--on-error stop`) is raised after the chunks already
    made are given back, so nothing done is lost. With `here` (`fn`, callable in this process), the
    oldest chunk made is run here while the pool's workers are still starting, one at a time.
    """
    source = enumerate(chunks)
    inflight: dict[Any, _Flight] = {}
    ready: dict[int, tuple[S, R | None]] = {}
    order: deque[int] = deque()  # chunk indices not yet given back, oldest first
    queued: deque[_Flight] = deque()  # made while the pool was starting, not yet submitted
    pending_error: BaseException | None = None
    exhausted = False

    def fill() -> None:
        nonlocal exhausted, pending_error
        # while the pool starts, chunks are made ahead (up to PREFETCH windows), then all submitted at once; a lazy
        # pool not started makes one window ahead: reading more (this process parses what it reads itself) would
        # only put off the chunks done here that say whether to start it. Asked at each chunk: a pool that becomes
        # ready meanwhile stops the making ahead
        while not exhausted and len(order) < (PREFETCH * window if pool.launched and not pool.ready() else window):
            try:
                idx, (state, payload) = next(source)
            except StopIteration:
                exhausted = True
                break
            except RefereeError as exc:  # raised once what is already made is given back
                pending_error, exhausted = exc, True
                break
            order.append(idx)
            if payload is None:
                ready[idx] = (state, None)
            else:
                queued.append(_Flight(idx, state, payload, pool.generation))
        if pool.ready():
            while queued:
                fl = queued.popleft()
                fl.generation = pool.generation
                inflight[pool.submit(fn, *fixed, fl.payload)] = fl

    fill()
    while order:
        if ordered:
            while order and order[0] in ready:
                yield ready.pop(order.popleft())
        else:
            for idx in [i for i in order if i in ready]:
                order.remove(idx)
                yield ready.pop(idx)
        fill()
        if queued and here is not None and not pool.ready():
            fl = queued.popleft()  # the workers are not up yet: this process does the oldest chunk itself
            ready[fl.index] = (fl.state, here(*fixed, fl.payload))
            continue
        if not inflight and queued:  # nothing more to make ahead: wait for the workers, then send it all
            pool.wait_ready()
            fill()
        if not inflight:
            continue
        for fut in pool.wait_any(list(inflight)):
            fl = inflight.pop(fut)
            try:
                ready[fl.index] = (fl.state, pool.result(fut))
            except BaseException as exc:
                if not pool.is_lost(exc):
                    raise
                if not pool.excused(fut):
                    fl.losses += 1
                    pool.losses += 1
                if fl.losses >= MAX_LOSSES:
                    raise WorkerLostError(f"a worker was lost {fl.losses} times while running {describe(fl.state)} "
                                          f"({type(exc).__name__}: {str(exc)[:200]})",
                                          fix="look for a unit that crashes its worker (memory, a native crash), "
                                              "or run with --workers 1 to see its error") from None
                if fl.generation == pool.generation:
                    pool.recover()
                fl.generation = pool.generation
                inflight[pool.submit(fn, *fixed, fl.payload)] = fl
    if pending_error is not None:
        raise pending_error
