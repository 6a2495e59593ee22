"""Check a split file: counts per split and group, no run_id in two splits, and (when asked) no task in two splits."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

from referee.core.csvrows import dict_rows
from referee.core.jsonio.depth import json_lines
from referee.errors import GoldError

NONE = "(none)"


@dataclass(frozen=True)
class SplitRow:
    """One line of a split file (a gold file works too: it has run_id, split and group)."""

    line: int
    run_id: str
    split: str
    group: str
    task: str | None = None


def iter_split_rows(path: Path) -> Iterator[SplitRow]:
    """Stream rows of a CSV or JSONL split file; run_id is required, split/group/task are read when present."""
    path = Path(path)
    suffix = path.suffix.lower()
    try:
        fh = open(path, encoding="utf-8-sig", newline="")
    except OSError as exc:
        raise GoldError(f"cannot read split file: {exc.strerror}", file=str(path)) from None
    with fh:
        if suffix == ".csv":
            rows = dict_rows(fh, path, GoldError,
                             header_fix="a split file has columns run_id, split and optionally group, task")
        elif suffix in (".jsonl", ".json", ".ndjson"):
            rows = ((i, _object(obj, path, i)) for i, obj in json_lines(
                fh, lambda why, n: GoldError(f"not a JSON line ({why})", file=str(path), place=f"line {n}",
                                             fix="write one JSON object per line")))
        else:
            raise GoldError(f"unknown split file format '{suffix or path.name}'", file=str(path),
                            fix="use a .csv or .jsonl file")
        for lineno, r in rows:
            rid = r.get("run_id")
            if not rid:
                raise GoldError("a row without run_id", file=str(path), place=f"line {lineno}",
                                fix="give every row a run_id")
            yield SplitRow(lineno, str(rid), str(r.get("split") or NONE), str(r.get("group") or NONE),
                           (str(r["task"]) if r.get("task") else None))


def _object(obj: object, path: Path, lineno: int) -> dict:
    if not isinstance(obj, dict):
        raise GoldError("a split line must be a JSON object", file=str(path), place=f"line {lineno}")
    return obj


@dataclass
class SplitReport:
    """What `referee eval split` found; `ok` is False when any run_id or (asked-for) task crosses splits."""

    path: str
    counts: dict[str, dict[str, int]] = field(default_factory=dict)   # split -> group -> runs
    runs_in_two_splits: dict[str, list[str]] = field(default_factory=dict)
    tasks_in_two_splits: dict[str, list[str]] = field(default_factory=dict)
    repeated_rows: list[str] = field(default_factory=list)            # the same run_id twice in one split
    no_split: int = 0
    tasks_checked: bool = False
    tasks_unknown: int = 0                                            # rows whose task could not be found

    @property
    def ok(self) -> bool:
        return not self.runs_in_two_splits and not self.tasks_in_two_splits

    def totals(self) -> dict[str, int]:
        return {s: sum(g.values()) for s, g in self.counts.items()}

    def to_dict(self) -> dict:
        return {"split_report_version": 1, "path": self.path, "ok": self.ok, "counts": self.counts,
                "totals": self.totals(), "runs_in_two_splits": self.runs_in_two_splits,
                "tasks_in_two_splits": self.tasks_in_two_splits, "repeated_rows": self.repeated_rows,
                "no_split": self.no_split, "tasks_checked": self.tasks_checked, "tasks_unknown": self.tasks_unknown}


def check_splits(path: Path, *, by_task: bool = False, tasks: dict[str, str] | None = None) -> SplitReport:
    """Count runs per split and group and find leaks between splits.

    `tasks` maps run_id -> task text (from audit records) for files that carry no `task` column.

    >>> import tempfile, pathlib; p = pathlib.Path(tempfile.mkdtemp()) / "s.csv"
    >>> _ = p.write_text("run_id,split,task\\na,dev,t1\\nb,test,t1\\na,test,t1\\n")
    >>> r = check_splits(p, by_task=True); (r.ok, r.runs_in_two_splits, r.tasks_in_two_splits)
    (False, {'a': ['dev', 'test']}, {'t1': ['dev', 'test']})
    """
    rep = SplitReport(path=str(path), tasks_checked=by_task)
    counts: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    split_of: dict[str, set[str]] = defaultdict(set)
    task_splits: dict[str, set[str]] = defaultdict(set)
    for row in iter_split_rows(path):
        if row.split in split_of.get(row.run_id, ()):
            rep.repeated_rows.append(row.run_id)
            continue
        split_of[row.run_id].add(row.split)
        counts[row.split][row.group] += 1
        if row.split == NONE:
            rep.no_split += 1
        if by_task:
            task = row.task or (tasks or {}).get(row.run_id)
            if task is None:
                rep.tasks_unknown += 1
            else:
                task_splits[" ".join(task.split())].add(row.split)
    rep.counts = {s: dict(sorted(g.items())) for s, g in sorted(counts.items())}
    rep.runs_in_two_splits = {r: sorted(s) for r, s in split_of.items() if len(s) > 1}
    rep.tasks_in_two_splits = {t: sorted(s) for t, s in task_splits.items() if len(s) > 1}
    return rep


def tasks_from_audit(audit_path: Path) -> dict[str, str]:
    """run_id -> task text from an audit JSONL (streamed; only two strings per record are kept)."""
    from referee.evaluation.dataset import iter_records

    return {rec.run_id: rec.task for _, rec in iter_records(audit_path)}


def split_lines(rep: SplitReport) -> list[str]:
    """Human-readable lines of a split report."""
    lines = [f"split file: {rep.path}"]
    for s, groups in rep.counts.items():
        detail = ", ".join(f"{g}: {n}" for g, n in groups.items())
        lines.append(f"  {s}: {sum(groups.values())} runs ({detail})")
    if rep.no_split:
        lines.append(f"  {rep.no_split} run(s) carry no split")
    if rep.repeated_rows:
        lines.append(f"  {len(rep.repeated_rows)} run_id(s) listed twice in the same split (counted once)")
    for rid, ss in sorted(rep.runs_in_two_splits.items()):
        lines.append(f"  LEAK: run_id {rid} is in splits {', '.join(ss)}")
    for task, ss in sorted(rep.tasks_in_two_splits.items()):
        short = task if len(task) <= 80 else task[:77] + "..."
        lines.append(f"  LEAK: task in splits {', '.join(ss)}: {short}")
    if rep.tasks_checked and rep.tasks_unknown:
        lines.append(f"  {rep.tasks_unknown} run(s) have no task text (add a task column or pass --audit)")
    # tasks were looked at only where a run had one: with none known, "no task in two splits" would claim a check
    tasks_seen = rep.tasks_checked and rep.tasks_unknown < sum(rep.totals().values())
    if rep.ok:
        lines.append("ok: no run_id" + (" or task" if tasks_seen else "") + " in two splits"
                     + (" (tasks not checked: no run has a task text)" if rep.tasks_checked and not tasks_seen
                        else ""))
    else:
        lines.append("not ok: runs or tasks cross splits")
    return lines
