"""Gold labels for evaluation: read CSV or JSONL, validate each row, report duplicates and bad values by line."""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Iterator, Literal

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from referee.core.csvrows import dict_rows
from referee.core.jsonio.depth import json_lines
from referee.errors import GoldError

ClaimLabel = Literal["success", "failure_or_incomplete", "unclear"]
GOLD_COLUMNS: tuple[str, ...] = ("run_id", "completed", "claim", "group", "split", "task", "note")


class GoldLabel(BaseModel):
    """One gold label line (JSONL) or row (CSV): did the run complete the task, and what did the agent claim.

    >>> GoldLabel(run_id="r1", completed="false").completed
    False
    """

    model_config = ConfigDict(extra="forbid")

    gold_version: Literal[1] = 1
    run_id: str
    completed: bool
    claim: ClaimLabel | None = None
    group: str | None = None
    split: str | None = None
    task: str | None = None      # optional, lets `referee eval split --by-task` work on the gold file alone
    note: str | None = None      # free text for annotators; never read

    @field_validator("completed", mode="before")
    @classmethod
    def _bool(cls, v):
        from referee.audit.trace import gold_completed  # one reading of yes/no, with a trace's own gold

        completed = gold_completed(v if isinstance(v, (bool, int, float, str)) else str(v))
        if completed is None:
            raise ValueError(f"completed must be true or false, got {v!r}")
        return completed

    @field_validator("claim", "group", "split", "task", "note", mode="before")
    @classmethod
    def _blank_is_none(cls, v):
        if isinstance(v, str) and not v.strip():
            return None
        return v


@dataclass(frozen=True)
class Gold:
    """The in-memory form of one gold label (what evaluation needs, nothing more)."""

    completed: bool
    claim: str | None = None
    group: str | None = None
    split: str | None = None
    task: str | None = None


def _rows(path: Path) -> Iterator[tuple[int, dict]]:
    """Yield (line number, raw mapping) from a CSV (header row) or JSONL gold file."""
    suffix = path.suffix.lower()
    try:
        fh = open(path, encoding="utf-8-sig", newline="")  # a BOM (Excel's "CSV UTF-8") is no part of the header
    except OSError as exc:
        raise GoldError(f"cannot read gold labels: {exc.strerror}", file=str(path),
                        fix="pass an existing CSV or JSONL file to --gold") from None
    try:
        with fh:
            yield from _parse_rows(fh, path, suffix)
    except UnicodeDecodeError as exc:
        raise GoldError(f"not UTF-8 text (byte 0x{exc.object[exc.start]:02x} cannot be decoded)", file=str(path),
                        fix="save the gold labels as UTF-8") from None


def _parse_rows(fh, path: Path, suffix: str) -> Iterator[tuple[int, dict]]:
    if suffix in (".jsonl", ".json", ".ndjson"):
        # depth- and size-capped (a line nested 5,000 deep is this error, not a RecursionError)
        for lineno, obj in json_lines(fh, lambda why, n: GoldError(f"not a JSON line ({why})", file=str(path),
                                                                    place=f"line {n}",
                                                                    fix="write one JSON object per line")):
            if not isinstance(obj, dict):
                raise GoldError("a gold line must be a JSON object", file=str(path), place=f"line {lineno}",
                                fix='write {"run_id": ..., "completed": true|false}')
            yield lineno, obj
    elif suffix in (".csv", ".tsv"):
        # a cell past the csv module's limit, a NUL or a line past MAX_LINE_CHARS is one GoldError naming its line
        yield from dict_rows(fh, path, GoldError, delimiter="\t" if suffix == ".tsv" else ",",
                             header_fix=f"use the columns {', '.join(GOLD_COLUMNS)}")
    else:
        raise GoldError(f"unknown gold label format '{suffix or path.name}'", file=str(path),
                        fix="use a .csv or .jsonl file")


def iter_gold(path: Path) -> Iterator[tuple[int, GoldLabel]]:
    """Stream validated gold labels with their line numbers; a bad row raises GoldError naming its line."""
    path = Path(path)
    for lineno, raw in _rows(path):
        rid = raw.get("run_id")
        place = f"line {lineno}" + (f" (run_id {rid})" if rid else "")
        try:
            yield lineno, GoldLabel.model_validate(raw)
        except ValidationError as exc:
            err = exc.errors()[0]
            loc = ".".join(str(p) for p in err["loc"]) or "row"
            if err["type"] == "extra_forbidden":
                msg, fix = f"unknown column '{loc}'", f"gold columns are {', '.join(GOLD_COLUMNS)}"
            elif err["type"] == "missing":
                msg, fix = f"missing '{loc}'", "every gold label needs run_id and completed"
            else:
                msg = f"{loc}: {err['msg']}"
                fix = "completed is true/false; claim is success|failure_or_incomplete|unclear"
            raise GoldError(msg, file=str(path), place=place, fix=fix) from None


def load_gold(path: Path) -> dict[str, Gold]:
    """Read a gold file into {run_id: Gold}; a run_id given twice is an error naming both lines.

    >>> import tempfile, pathlib; p = pathlib.Path(tempfile.mkdtemp()) / "g.csv"
    >>> _ = p.write_text("run_id,completed,claim\\nr1,false,success\\nr2,true,\\n")
    >>> g = load_gold(p); (g["r1"].completed, g["r1"].claim, g["r2"].claim)
    (False, 'success', None)
    """
    out: dict[str, Gold] = {}
    first_line: dict[str, int] = {}
    for lineno, lab in iter_gold(path):
        if lab.run_id in out:
            raise GoldError(f"run_id '{lab.run_id}' is labelled twice (first on line {first_line[lab.run_id]})",
                            file=str(path), place=f"line {lineno}", fix="keep one gold label per run_id")
        first_line[lab.run_id] = lineno
        out[lab.run_id] = Gold(completed=lab.completed, claim=lab.claim, group=lab.group, split=lab.split,
                               task=lab.task)
    if not out:
        raise GoldError("the gold file holds no labels", file=str(path), fix="add rows with run_id and completed")
    return out


def write_gold(path: Path, labels: Iterable[GoldLabel]) -> int:
    """Write gold labels as JSONL (or CSV when the path ends in .csv), atomically; returns the count. Both carry
    every field a label has (a CSV's empty cell is a field left out), so `eval split --by-task` works on either."""
    from referee.core.fsutil import atomic_write_text

    labels = list(labels)
    path = Path(path)
    if path.suffix.lower() == ".csv":
        import io

        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(GOLD_COLUMNS)
        for lab in labels:
            row = lab.model_dump(exclude={"gold_version"})
            row["completed"] = "true" if lab.completed else "false"
            w.writerow([row[c] if row[c] is not None else "" for c in GOLD_COLUMNS])
        atomic_write_text(path, buf.getvalue())
    else:
        atomic_write_text(path, "".join(lab.model_dump_json(exclude_none=True) + "\n" for lab in labels))
    return len(labels)


def gold_from_traces(paths: Path | Iterable[Path], fmt: str | None = None, scorer: str | None = None,
                     threshold: float = 1.0, *,
                     on_bad: Callable[[Exception], None] | None = None,
                     on_note: Callable[[str], None] | None = None,
                     outputs: frozenset[Path] = frozenset()) -> tuple[list[GoldLabel], int]:
    """Gold labels a trace reader found beside the traces (tau-bench: `reward == 1.0`; with `scorer`, the
    named score of an Inspect AI log is at least `threshold`): (labels, runs without gold).

    `paths` are files, run folders or folders of them, as `referee audit` takes. The group is the trace's
    `meta.group` (tau-bench: the task id), so leave-one-group-out leaves out a task. A run_id that comes
    again keeps its first label, as the audit keeps its first record. A bad record raises, or with
    `on_bad` is handed to it and skipped; a gold source beside a run that does not read goes to `on_note`.
    A bad record that still carries gold (a crashed tau-bench run: no turn, a reward) gives its label, and
    `on_note` hears why it is no trace.
    `outputs` (real paths, as `own_outputs` gives them) are never read as traces by a walk.
    """
    from referee.audit.ingest.inputs import InputOptions, iter_inputs
    from referee.audit.trace import GoldScorer

    paths = [Path(paths)] if isinstance(paths, (str, Path)) else [Path(p) for p in paths]
    pick = GoldScorer(scorer, threshold) if scorer else None
    labels: list[GoldLabel] = []
    seen: set[str] = set()
    without = 0
    scorers: set[str] = set()
    for item in iter_inputs(paths, fmt, InputOptions(outputs=outputs)):  # a file, a run folder, or a folder of them
        if item.error is not None and item.gold is not None and item.run_id is not None:
            # a run that cannot be audited but whose gold the file records (a crashed tau-bench run, reward 0): the
            # benchmark counts it, so its label is written, and the reason it is no trace is said
            if str(item.run_id) not in seen:
                seen.add(str(item.run_id))
                labels.append(GoldLabel(run_id=str(item.run_id), completed=item.gold.completed,
                                        group=str(item.group) if item.group not in (None, "") else None))
            if on_note:
                on_note(f"{item.error.where()}{item.error.message}; its gold (completed "
                        f"{str(item.gold.completed).lower()}) is written")
            continue
        if item.error is not None:
            if on_bad is None:
                raise item.error
            on_bad(item.error)
            continue
        if pick is not None:
            item = pick.pick(item)
        if on_note:
            for note in item.notes:
                on_note(note)
        if item.gold is None or item.trace is None:  # a reader gives gold only beside a trace
            without += 1
            scorers.update(item.scores or ())
            continue
        if item.trace.run_id in seen:
            continue
        seen.add(item.trace.run_id)
        group = item.trace.meta.get("group")
        labels.append(GoldLabel(run_id=item.trace.run_id, completed=item.gold.completed,
                                group=str(group) if group not in (None, "") else None, task=item.trace.task))
    if not labels and scorers:
        raise GoldError(f"the runs carry scores ({', '.join(sorted(scorers))}) but no scorer is named as gold",
                        file=str(paths[0]) if len(paths) == 1 else None,
                        fix="pass --gold-scorer NAME: one that checks the state the run left, not the agent's answer")
    return labels, without
