"""One bounded, ordered concurrent map: results in input order, never more than a window of work in flight."""

from __future__ import annotations

from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Callable, Iterable, Iterator, TypeVar

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
