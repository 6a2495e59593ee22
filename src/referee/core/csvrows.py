"""CSV files of a user's (gold labels, splits, predictions) read row by row, each fault one error naming file and line.

Python's `csv` module raises its own `csv.Error` for a cell longer than its field limit (131,072 characters)
or a quote it cannot close; uncaught, that is an internal error (exit 3). Every CSV referee reads of
a user's goes through `dict_rows`, which reads each line up to MAX_LINE_CHARS (as JSON lines files are read,
`referee.core.jsonio.depth.json_lines`) and turns every such fault into the caller's one-line error (exit 2).
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Iterator, TextIO

from referee.core.jsonio.depth import MAX_LINE_CHARS
from referee.errors import RefereeError


class _LongLine(Exception):
    """A line longer than MAX_LINE_CHARS (raised by `_lines`, worded by `dict_rows`)."""

    def __init__(self, lineno: int) -> None:
        super().__init__(lineno)
        self.lineno = lineno


def _lines(fh: TextIO, most: int) -> Iterator[str]:
    """The lines of `fh`, each read up to `most` characters: a longer one is never held whole."""
    lineno = 0
    while line := fh.readline(most + 1):
        lineno += 1
        if len(line.rstrip("\r\n")) > most:
            raise _LongLine(lineno)
        yield line


def dict_rows(fh: TextIO, path: Path, error: type[RefereeError], *, delimiter: str = ",", need: str = "run_id",
              header_fix: str = "") -> Iterator[tuple[int, dict]]:
    """(line number, row) of a CSV with a header row that names `need`; each row as many cells as the header has
    columns. A fault is one `error` naming `path` and the line: a missing `need` column, a column named twice, a
    row of too many or too few cells, a cell longer than the csv module's field limit (131,072 characters, left as
    it is: a label cell is short), a line longer than MAX_LINE_CHARS.

    >>> import io
    >>> list(dict_rows(io.StringIO("run_id,completed\\nr1,true\\n"), Path("g.csv"), RefereeError))
    [(2, {'run_id': 'r1', 'completed': 'true'})]
    >>> list(dict_rows(io.StringIO('run_id,split\\n"' + "b" * 200_000 + '",dev\\n'), Path("s.csv"), RefereeError))
    Traceback (most recent call last):
    ...
    referee.errors.RefereeError: s.csv:line 2: a cell longer than 131072 characters; ...
    """
    reader = csv.DictReader(_lines(fh, MAX_LINE_CHARS), delimiter=delimiter)
    try:
        yield from _rows(reader, path, error, need, header_fix)
    except _LongLine as exc:
        raise error(f"a line longer than {MAX_LINE_CHARS} characters", file=str(path), place=f"line {exc.lineno}",
                    fix="write one short row per line (a label row is a few hundred characters)") from None
    except csv.Error as exc:
        raise _worded(exc, reader, path, error) from None


def _rows(reader: csv.DictReader, path: Path, error: type[RefereeError], need: str,
          header_fix: str) -> Iterator[tuple[int, dict]]:
    columns = list(reader.fieldnames or ())
    if need not in columns:
        raise error(f"the header row has no {need} column", file=str(path), place="line 1",
                    fix=header_fix or f"the first row names the columns, {need} among them")
    twice = next((c for i, c in enumerate(columns) if c in columns[:i]), None)
    if twice is not None:  # DictReader would keep the last of the two cells in silence
        raise error(f"the header names column '{twice}' twice", file=str(path), place="line 1",
                    fix="give each column once")
    for row in reader:
        # DictReader puts extra cells under None and fills missing ones with None: a cell dropped or
        # a column left empty without a word would be a label nobody wrote
        extra = row.get(None) or []
        cells = sum(v is not None for k, v in row.items() if k is not None) + len(extra)
        if extra or cells < len(columns):
            raise error(f"{cells} cells, but the header has {len(columns)} columns ({', '.join(columns)})",
                        file=str(path), place=f"line {reader.line_num}",
                        fix="give each row one cell per column (quote a cell that holds the delimiter)")
        yield reader.line_num, dict(row)


def _worded(exc: csv.Error, reader: csv.DictReader, path: Path, error: type[RefereeError]) -> RefereeError:
    """csv.Error as the caller's error, placed at the line its row began (DictReader.line_num is the last line of
    the last row read whole; its reader's, the line it failed in: a quote left open runs a row on for many)."""
    what = str(exc)
    if "field larger than field limit" in what:
        what = f"a cell longer than {csv.field_size_limit()} characters"
        fix = "a label cell is short: check the file (a quote left open makes the rest of the file one cell)"
    else:
        what = f"not CSV ({what})"
        fix = "close each quoted cell, and write one row per line"
    began, failed = reader.line_num + 1, max(reader.reader.line_num, 1)
    if failed > began:
        what += f" (the row runs on to line {failed}: a quote left open?)"
    return error(what, file=str(path), place=f"line {began}", fix=fix)
