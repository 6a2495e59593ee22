"""Gold labels: CSV and JSONL, strict values, errors that name file and line."""

from __future__ import annotations

import pytest

from referee.errors import GoldError
from referee.evaluation.gold import GoldLabel, load_gold, write_gold


def test_csv_with_optional_columns(tmp_path):
    p = tmp_path / "g.csv"
    p.write_text("run_id,completed,claim,group,split\n"
                 "a,true,success,agentA,dev\n"
                 "b,0,,agentB,\n"
                 "c,No,unclear,,test\n")
    g = load_gold(p)
    assert (g["a"].completed, g["a"].claim, g["a"].group, g["a"].split) == (True, "success", "agentA", "dev")
    assert (g["b"].completed, g["b"].claim, g["b"].split) == (False, None, None)
    assert (g["c"].completed, g["c"].claim, g["c"].group) == (False, "unclear", None)


def test_jsonl(tmp_path):
    p = tmp_path / "g.jsonl"
    p.write_text('{"run_id": "a", "completed": false, "claim": "success"}\n\n{"run_id": "b", "completed": true}\n')
    g = load_gold(p)
    assert set(g) == {"a", "b"} and g["a"].claim == "success" and g["b"].completed


def test_duplicate_run_id_names_both_lines(tmp_path):
    p = tmp_path / "g.csv"
    p.write_text("run_id,completed\na,true\nb,false\na,false\n")
    with pytest.raises(GoldError) as e:
        load_gold(p)
    msg = str(e.value)
    assert "g.csv:line 4" in msg and "first on line 2" in msg and "'a'" in msg


@pytest.mark.parametrize("body,needle", [
    ("run_id,completed\na,maybe\n", "completed must be true or false"),
    ("run_id,completed,claim\na,true,done\n", "claim"),
    ("run_id,completed,score\na,true,3\n", "unknown column 'score'"),
    ("run_id,claim\na,success\n", "missing 'completed'"),
    ("completed\ntrue\n", "no run_id column"),
])
def test_bad_rows_are_one_line_errors(tmp_path, body, needle):
    p = tmp_path / "g.csv"
    p.write_text(body)
    with pytest.raises(GoldError) as e:
        load_gold(p)
    assert needle in str(e.value)
    assert "\n" not in str(e.value)


def test_bad_json_line_and_format(tmp_path):
    p = tmp_path / "g.jsonl"
    p.write_text('{"run_id": "a", "completed": true}\n{oops\n')
    with pytest.raises(GoldError, match="line 2"):
        load_gold(p)
    q = tmp_path / "g.txt"
    q.write_text("x")
    with pytest.raises(GoldError, match="unknown gold label format"):
        load_gold(q)
    with pytest.raises(GoldError, match="cannot read"):
        load_gold(tmp_path / "absent.csv")


def test_json_a_number_too_long_to_read_is_a_bad_line_not_a_crash(tmp_path):
    # json.loads raises a plain ValueError (no .msg) past Python's integer digit limit
    p = tmp_path / "g.jsonl"
    p.write_text('{"run_id": "a", "completed": true}\n{"run_id": "b", "completed": ' + "1" * 5000 + "}\n")
    with pytest.raises(GoldError, match="line 2.*not a JSON line.*digits"):
        load_gold(p)


def test_empty_file_is_an_error(tmp_path):
    p = tmp_path / "g.csv"
    p.write_text("run_id,completed\n")
    with pytest.raises(GoldError, match="no labels"):
        load_gold(p)


@pytest.mark.parametrize("suffix", [".csv", ".jsonl"])
def test_write_then_read_round_trip(tmp_path, suffix):
    labels = [GoldLabel(run_id="a", completed=True, claim="success", group="g", split="dev"),
              GoldLabel(run_id="b", completed=False)]
    p = tmp_path / f"out{suffix}"
    assert write_gold(p, labels) == 2
    g = load_gold(p)
    assert g["a"].claim == "success" and g["a"].group == "g" and g["a"].split == "dev"
    assert g["b"].completed is False and g["b"].claim is None


def test_eval_gold_on_error_skip_warnings_drop_the_hint_to_pass_it(tmp_path, capsys):
    # auditor.md: with --on-error skip given, what is said of a skipped record leaves "or pass --on-error skip"
    # out; eval gold still told the user to pass the option they had passed
    from pathlib import Path

    from referee.cli.main import main

    examples = Path(__file__).resolve().parents[2] / "docs" / "examples" / "traces.jsonl"
    traces = tmp_path / "t.jsonl"
    traces.write_text(examples.read_text().splitlines()[0] + '\n{"trace_version": 1, "run_id": "x"}\n')
    assert main(["eval", "gold", str(traces), "-o", str(tmp_path / "g.jsonl"), "--on-error", "skip"]) == 0
    err = capsys.readouterr().err
    assert "skipped record: " in err and "t.jsonl:2: run_id x" in err and "fix the record" in err, err
    assert "--on-error skip" not in err, err
    assert main(["eval", "gold", str(traces), "-o", str(tmp_path / "g2.jsonl")]) == 2   # stopping: the hint stays
    assert "fix the record or pass --on-error skip" in capsys.readouterr().err
