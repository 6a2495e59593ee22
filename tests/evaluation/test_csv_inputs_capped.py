"""Every CSV `referee eval` reads (gold, split, predictions) goes through `referee.core.csvrows.dict_rows`: a cell past
the csv module's field limit (issue 30 acceptance finding 2: exit 3 "field larger than field limit" before), a line past
the line cap or a quote never closed is a one-line error naming the file and the line, exit 2."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from referee.core.csvrows import dict_rows
from referee.core.jsonio.depth import MAX_LINE_CHARS
from referee.errors import GoldError
from tests.evaluation.helpers import record, write_jsonl

LONG = "b" * 200_000

# fault -> (the row that holds it, the line it is reported at, a word of the error); the header is line 1, a good
# row line 2, the faulty row line 3
FAULTS = {
    "cell-200k-quoted": (f'"{LONG}"', 3, "longer than 131072"),
    "cell-200k-bare": (LONG, 3, "longer than 131072"),
    "line-over-cap": (",".join(["c"] * (MAX_LINE_CHARS // 2 + 1)), 3, f"longer than {MAX_LINE_CHARS}"),
    "quote-left-open": ('"r9' + "\nx" * 70_000, 3, "longer than 131072"),
}


def _write(tmp_path: Path, where: str, bad: str) -> tuple[Path, tuple]:
    audit = write_jsonl(tmp_path / "audit.jsonl", [record("r1"), record("r2", disposition="flag")])
    gold = tmp_path / "gold.jsonl"
    gold.write_text('{"run_id": "r1", "completed": true}\n{"run_id": "r2", "completed": false}\n')
    flags = ("--no-plot", "--no-policies", "--resamples", "0")
    if where == "gold":
        f = tmp_path / "labels.csv"
        f.write_text(f"run_id,completed\nr1,true\n{bad},false\n", encoding="utf-8")
        return f, ("eval", audit, "--gold", f, *flags)
    if where == "gold-tsv":
        f = tmp_path / "labels.tsv"
        f.write_text(f"run_id\tcompleted\nr1\ttrue\n{bad}\tfalse\n", encoding="utf-8")
        return f, ("eval", audit, "--gold", f, *flags)
    if where == "split":
        f = tmp_path / "split.csv"
        f.write_text(f"run_id,split\nr1,dev\n{bad},test\n", encoding="utf-8")
        return f, ("eval", "split", f)
    f = tmp_path / "pred.csv"
    f.write_text(f"run_id,disposition\nr1,pass\n{bad},flag\n", encoding="utf-8")
    return f, ("eval", audit, "--gold", gold, "--predictions", f"other={f}", *flags)


@pytest.mark.parametrize("fault", sorted(FAULTS))
@pytest.mark.parametrize("where", ["gold", "gold-tsv", "split", "predictions"])
def test_a_bad_csv_row_is_one_line_naming_file_and_line(cli, tmp_path, where, fault):
    bad, line, word = FAULTS[fault]
    if where == "gold-tsv":
        bad = bad.replace(",", "\t")
    f, args = _write(tmp_path, where, bad)
    code, _out, err = cli(*args)
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert "Traceback" not in err and "internal error" not in err, err[-1000:]
    assert code == 2, err[-1000:]
    assert len(lines) == 1, err[-1000:]
    assert f"{f.name}:line {line}" in lines[0] and word in lines[0], lines[0][:300]


def test_a_header_past_the_field_limit_is_line_1():
    with pytest.raises(GoldError, match=r"g\.csv:line 1: a cell longer than 131072"):
        list(dict_rows(io.StringIO(f"run_id,{LONG}\nr1,x\n"), Path("g.csv"), GoldError))


def test_good_rows_read_with_their_line_numbers_and_a_quoted_newline():
    text = 'run_id,note\nr1,"two\nlines"\n\nr2,x\n'
    rows = list(dict_rows(io.StringIO(text), Path("g.csv"), GoldError))
    assert rows == [(3, {"run_id": "r1", "note": "two\nlines"}), (5, {"run_id": "r2", "note": "x"})]


def test_a_predictions_csv_without_run_id_says_which_column_is_missing(cli, tmp_path):
    audit = write_jsonl(tmp_path / "audit.jsonl", [record("r1")])
    gold = tmp_path / "gold.jsonl"
    gold.write_text('{"run_id": "r1", "completed": true}\n')
    pred = tmp_path / "pred.csv"
    pred.write_text("id,disposition\nr1,pass\n")
    code, _out, err = cli("eval", audit, "--gold", gold, "--predictions", f"other={pred}", "--no-plot",
                          "--no-policies", "--resamples", "0")
    assert code == 2
    assert "pred.csv:line 1: the header row has no run_id column" in err and "run_id, disposition" in err
