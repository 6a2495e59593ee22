"""The task-class rule: frozen, deterministic, data-driven (ordered patterns from the policy), task text only."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from referee.audit.records import TASK_CLASSES


@dataclass(frozen=True)
class ClassPattern:
    """One rule line: if `pattern` (a case-insensitive regex) matches the task, it votes for `cls`."""

    cls: str
    pattern: str


@dataclass(frozen=True)
class TaskClassRule:
    """Ordered patterns plus how to choose between matches.

    `earliest`: the match that starts earliest in the task text wins (ties: earlier pattern);
    `first`: the first pattern in order that matches anywhere wins. No match -> `other`.
    """

    patterns: tuple[ClassPattern, ...]
    mode: str = "earliest"


# A rule reads a task's first MAX_TASK_CHARS characters (cut back to a whole word): its patterns are policy data
# and may backtrack (`^\s*` under re.M rescans a run of blank lines from each line start), and a task is the
# agent's input, so a task of 100,000 newlines must cost no more than one of 2,000. On the development corpora
# no task's class is decided past its first 1,000 characters.
MAX_TASK_CHARS = 2000


def _head(task: str) -> str:
    """The task's first MAX_TASK_CHARS characters, less a word the cut splits (so `\b` sees no new word end)."""
    if len(task) <= MAX_TASK_CHARS:
        return task
    k = MAX_TASK_CHARS
    while k > 0 and (task[k].isalnum() or task[k] == "_") and (task[k - 1].isalnum() or task[k - 1] == "_"):
        k -= 1
    return task[:k]


@lru_cache(maxsize=512)
def _compile(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.I | re.M)


# what cannot be joined into one alternation without changing its meaning: group numbers shift
_UNJOINABLE = re.compile(r"\\[1-9]|\(\?P=|\(\?\(")


@lru_cache(maxsize=64)
def _joined(rule: TaskClassRule) -> re.Pattern[str] | None:
    """An `earliest` rule as one alternation, `(?P<_p0>...)|(?P<_p1>...)`: one scan finds the earliest start,
    and at that start the first pattern in order, which is what the loop below decides. None when the
    patterns cannot be joined safely (back-references, group conditions, clashing group names)."""
    if rule.mode != "earliest" or any(_UNJOINABLE.search(cp.pattern) for cp in rule.patterns):
        return None
    try:
        return re.compile("|".join(f"(?P<_p{i}>{cp.pattern})" for i, cp in enumerate(rule.patterns)), re.I | re.M)
    except re.error:
        return None


def classify_task(task: str, rule: TaskClassRule) -> tuple[str, str | None]:
    """Return (task class, the pattern that decided it) for a task text.

    >>> r = TaskClassRule((ClassPattern("delete", r"\\bdelete\\b"), ClassPattern("create_edit", r"\\bcreate\\b")))
    >>> classify_task("Create a note, then delete the old one", r)
    ('create_edit', '\\\\bcreate\\\\b')
    >>> classify_task("Dance", r)
    ('other', None)
    >>> classify_task("Dance " * 400 + "then delete it", r)  # past MAX_TASK_CHARS: not read
    ('other', None)
    """
    task = _head(task)
    joined = _joined(rule)
    if joined is not None:
        m = joined.search(task)
        if not m:
            return "other", None
        k = next(i for i in range(len(rule.patterns)) if m.group(f"_p{i}") is not None)
        return rule.patterns[k].cls, rule.patterns[k].pattern
    best: tuple[int, int, str, str] | None = None
    for order, cp in enumerate(rule.patterns):
        m = _compile(cp.pattern).search(task)
        if not m:
            continue
        if rule.mode == "first":
            return cp.cls, cp.pattern
        key = (m.start(), order, cp.cls, cp.pattern)
        if best is None or key < best:
            best = key
    if best is None:
        return "other", None
    return best[2], best[3]


def check_classes(rule: TaskClassRule) -> list[str]:
    """Problems in a rule (unknown classes, bad regexes), for the policy loader to report."""
    problems = []
    for cp in rule.patterns:
        if cp.cls not in TASK_CLASSES:
            problems.append(f"unknown task class {cp.cls!r} (known: {', '.join(TASK_CLASSES)})")
        try:
            _compile(cp.pattern)
        except re.error as exc:
            problems.append(f"bad pattern {cp.pattern!r}: {exc}")
    if rule.mode not in ("earliest", "first"):
        problems.append(f"unknown task_classes mode {rule.mode!r} (known: earliest, first)")
    return problems
