"""A CSV row whose cells do not line up with its header is a one-line error naming file and line, never a
value dropped or a column left empty in silence (gold, split and predictions files alike)."""

from __future__ import annotations

import shutil

import pytest

from tests.conftest import ROOT

EXAMPLE = ROOT / "docs" / "examples" / "traces.jsonl"
RUN_IDS = ("del-ok", "del-empty", "send-unsent", "create-err", "fail-claim")


@pytest.fixture(scope="module")
def audit_file(tmp_path_factory):
    from tests.conftest import base_cli_env, run_cli

    d = tmp_path_factory.mktemp("audit")
    shutil.copy(EXAMPLE, d / "t.jsonl")
    rc, out, err = run_cli(["audit", "t.jsonl", "--out", "a.jsonl", "--no-progress"], cwd=d, env=base_cli_env())
    assert rc == 0, err
    return d / "a.jsonl"


def one_line(rc: int, err: str) -> str:
    line = err.strip()
    assert rc == 2 and "\n" not in line and line.startswith("referee: error:"), err
    return line


@pytest.mark.parametrize("strict", [False, True])
def test_a_gold_row_with_an_extra_cell_is_an_error(referee_cli, audit_file, tmp_path, strict):
    gold = tmp_path / "g.csv"
    gold.write_text("run_id,completed\ndel-ok,true,false\n" + "".join(f"{r},false\n" for r in RUN_IDS[1:]))
    rc, out, err = referee_cli("eval", audit_file, "--gold", gold, "--no-plot", "--resamples", "0",
                               *(["--strict"] if strict else []))
    line = one_line(rc, err)
    assert "g.csv:line 2" in line and "3 cells" in line and "2 columns" in line, line


def test_a_gold_row_with_a_missing_cell_is_an_error(referee_cli, audit_file, tmp_path):
    gold = tmp_path / "g.csv"
    gold.write_text("run_id,completed,claim\ndel-ok,true,success\ndel-empty,false\n"
                    + "".join(f"{r},false,\n" for r in RUN_IDS[2:]))
    rc, out, err = referee_cli("eval", audit_file, "--gold", gold, "--no-plot", "--resamples", "0")
    line = one_line(rc, err)
    assert "g.csv:line 3" in line and "2 cells" in line and "3 columns" in line, line


def test_a_quoted_comma_is_one_cell_and_blank_lines_are_no_rows(referee_cli, audit_file, tmp_path):
    gold = tmp_path / "g.csv"
    gold.write_text('run_id,completed,group\n\ndel-ok,true,"a, b"\n' + "".join(f"{r},false,x\n" for r in RUN_IDS[1:]))
    rc, out, err = referee_cli("eval", audit_file, "--gold", gold, "--no-plot", "--resamples", "0", "--strict")
    assert rc == 0, err


def test_a_split_row_with_an_extra_cell_is_an_error(referee_cli, tmp_path):
    split = tmp_path / "s.csv"
    split.write_text("run_id,split\na,train\nb,test,oops\n")
    rc, out, err = referee_cli("eval", "split", split)
    line = one_line(rc, err)
    assert "s.csv:line 3" in line and "3 cells" in line, line


def test_a_predictions_row_with_an_extra_cell_is_an_error(referee_cli, audit_file, tmp_path):
    gold = tmp_path / "g.csv"
    gold.write_text("run_id,completed\n" + "".join(f"{r},false\n" for r in RUN_IDS))
    preds = tmp_path / "p.csv"
    preds.write_text("run_id,disposition\ndel-ok,flag\ndel-empty,pass,flag\n")
    rc, out, err = referee_cli("eval", audit_file, "--gold", gold, "--predictions", f"tool={preds}", "--no-plot",
                               "--resamples", "0")
    line = one_line(rc, err)
    assert "p.csv:line 3" in line and "3 cells" in line, line
