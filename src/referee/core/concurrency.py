"""One bounded, ordered concurrent map (results in input order, a window of work in flight), and one caller per key."""

from __future__ import annotations

import threading
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any, Callable, Iterable, Iterator, TypeVar

T = TypeVar("T")
R = TypeVar("R")


def ordered_map(fn: Callable[[T], R], items: Iterable[T], concurrency: int = 1, *,
                name: str = "referee") -> Iterator[R]:
    """Apply `fn` on a thread pool, yielding results in input order as soon as the head is done.

    At most 2 x `concurrency` items are in flight, so a stream of any length stays bounded; with
    `concurrency` 1 it is a plain loop. An exception in `fn` is raised where its result is yielded.

    >>> list(ordered_map(lambda x: x * 2, range(5), concurrency=3))
    [0, 2, 4, 6, 8]
    """
    n = max(1, int(concurrency or 1))
    if n == 1:
        for it in items:
            yield fn(it)
        return
    with ThreadPoolExecutor(max_workers=n, thread_name_prefix=name) as pool:
        window: deque[Future[R]] = deque()
        for it in items:
            window.append(pool.submit(fn, it))
            while len(window) >= 2 * n or (window and window[0].done()):
                yield window.popleft().result()
        while window:
            yield window.popleft().result()


_FLIGHTS: dict[object, list[Any]] = {}  # key -> [lock, holders]: one entry per key someone is working on now
_FLIGHTS_LOCK = threading.Lock()


@contextmanager
def single_flight(key: object) -> Iterator[None]:
    """Hold the one lock of `key` for the block: threads that ask for the same key (the same report, the same
    view) wait for the first, then find its answer in the cache instead of asking the model again.

    >>> with single_flight(("claim", "abc")):
    ...     pass
    >>> _FLIGHTS
    {}
    """
    with _FLIGHTS_LOCK:
        entry = _FLIGHTS.setdefault(key, [threading.Lock(), 0])
        entry[1] += 1
    try:
        with entry[0]:
            yield
    finally:
        with _FLIGHTS_LOCK:
            entry[1] -= 1
            if not entry[1]:
                del _FLIGHTS[key]
