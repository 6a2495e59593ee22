"""The rules' `target_id`: whether the committed actions name the task's entity, or one the environment showed."""

from __future__ import annotations

import re
from typing import Any, Sequence

from referee.audit.extract import acting
from referee.audit.extract import finding as _fe
from referee.audit.extract import obs_text as _obs_text
from referee.audit.extract.lexicon import FILE_RE, shape
from referee.audit.records import Finding
from referee.audit.view.blind import ClaimBlindView

# a number of 3 digits or more in the task, not a year: an order number, a ticket, a room
_TASK_NUMBER = re.compile(r"(?<![\w.])\d{3,}(?![\w.])")
_YEAR = re.compile(r"(19|20)\d\d")
# an argument that holds an entity's number: `order_id`, `orderId`, `id`, `ticket_number`, `invoice_no`
_ID_KEY = re.compile(r"(^|_|[a-z](?=[A-Z]))(id|Id|ID|number|Number|no|num)$")
_DIGITS = re.compile(r"\d{4,12}")
_RUN = re.compile(r"\d{4,}")


def task_numbers(task: str) -> set[str]:
    """The numbers of 3 digits or more a task names, years left out.

    >>> sorted(task_numbers("Refund order 55102 from 2024 (ticket #812, 3 items)"))
    ['55102', '812']
    """
    return {n for n in _TASK_NUMBER.findall(task) if not _YEAR.fullmatch(n)}


def numeric_ids(args: Any) -> set[str]:
    """The entity numbers (4 to 12 digits) an action's arguments give under an id-like key, as integers or digit
    strings, and the all-digit segments of an HTTP path (` path`).

    >>> sorted(numeric_ids({"order_id": 55120, "qty": 3, "customerId": "7781", " path": "/api/orders/48213/cancel"}))
    ['48213', '55120', '7781']
    """
    found: set[str] = set()
    if not isinstance(args, dict):
        return found
    for k, v in args.items():
        if k == " path" and isinstance(v, str):
            found.update(seg for seg in v.split("?")[0].split("/") if _DIGITS.fullmatch(seg))
        elif isinstance(k, str) and _ID_KEY.search(k) and not isinstance(v, bool) and isinstance(v, (int, str)) \
                and _DIGITS.fullmatch(str(v)):
            found.add(str(v))
    return found


def grounded_before(view: ClaimBlindView, tok: str, before: int, initial_text: str,
                    task_runs: frozenset[str] = frozenset()) -> int | None:
    """The step whose observation showed `tok` before step `before` (-1: the initial observation or the task), or
    None. An id holding a number of 4 digits or more that the task gives (`task_runs`, the task's runs of 4+
    digits) is the task's ("my checking account (...8812)" names acc_chk_8812)."""
    if tok in initial_text:
        return -1
    if task_runs and not task_runs.isdisjoint(_RUN.findall(tok)):
        return -1
    for s in view.steps[:before]:
        if s.observation is not None and tok in _obs_text(s.observation):
            return s.index
    return None


def _file_tool(a: Any) -> bool:
    """A coding agent's file tool by its name's verb or its definition (not an HTTP call, whose `path` is a URL's):
    it names a file with an extension (`/r/test_x.py`, `a.py` in a patch)."""
    if a.via not in ("verb", "tool-definition"):
        return False
    path = acting.file_tool_path(a.step.action or "", a.step.plain_args())
    return path is not None and FILE_RE.fullmatch(path.rstrip("/").rsplit("/", 1)[-1]) is not None


def target_finding(view: ClaimBlindView, acts: Sequence[Any], task_ids: set[str], task_quoted: set[str],
                   initial_text: str) -> Finding:
    """`target_id` of the committed actions `acts` (rules.py's `_Act`s): yes when one names an entity of the task
    (an id, a quoted string, a number), no when one acts on an id of the task's shape but another, or on an id the
    environment never showed; unknown when they name no entity."""
    if not acts:
        return _fe("unknown", note="no successful relevant action to check")
    numbers = task_numbers(view.task)
    long_numbers = {n for n in numbers if len(n) >= 4}
    nums = [numeric_ids(a.id_args) if long_numbers else set() for a in acts]  # each act's entity numbers, once
    hit = [a.step.index for a, got in zip(acts, nums) if (a.arg_ids & task_ids) or
           any(q in a.arg_text.lower() for q in task_quoted) or
           (a.kind == "read" and any(re.search(rf"(?<!\d){n}(?!\d)", a.arg_text) for n in numbers)) or
           got & long_numbers or
           # the argument a user's tool map names as the target, when the task names that value
           (a.via == "tool-map" and any(re.search(rf"(?<![\w-]){re.escape(t)}(?![\w-])", view.task)
                                        for t in a.arg_ids))]
    if hit:
        return _fe("yes", hit, note="an entity named in the task is the target")
    for a, got in zip(acts, nums):
        # the task names an entity by its number and a write gives another number of that length as the id
        other = {n for n in got if any(len(n) == len(t) for t in long_numbers)}
        if other and a.kind != "read":
            return _fe("no", [a.step.index], note=f"acted on {sorted(other)[0]!r}, a number the task does not name")
    task_runs = frozenset(_RUN.findall(view.task))
    support: list[int] = []
    for a in acts:
        if not a.arg_ids:
            continue
        # where each id the action names was shown first: a step, -1 (the start or the task), None (never)
        where = {t: grounded_before(view, t, a.step.index, initial_text, task_runs) for t in a.arg_ids}
        shown = [j for j in where.values() if j not in (None, -1)]
        # a shell write names files, and making new ones (a script, a test) is normal; so is a coding agent's
        # file tool (Edit, write_file, apply_patch), whose arguments also hold the code it writes
        if a.via == "shell" or _file_tool(a):
            support.extend([a.step.index] + shown if shown else [])
            continue
        ungrounded = [t for t, j in where.items() if j is None]
        same_shape = {shape(t) for t in task_ids} & {shape(t) for t in a.arg_ids}
        if same_shape and not (a.arg_ids & task_ids):
            # the task names an id of this kind and the action used a different one
            return _fe("no", [a.step.index], note="acted on an id the task does not name")
        if ungrounded:
            return _fe("no", [a.step.index], note=f"id {sorted(ungrounded)[0]!r} never appeared before it was used")
        support.append(a.step.index)
        support.extend(shown)
    if support:
        return _fe("yes", support, note="target ids were shown by the environment before use")
    return _fe("unknown", note="the action names no entity")
