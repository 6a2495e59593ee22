"""Gold written by `referee audit --gold-out` and `referee eval gold -o` is the same file either way: JSONL, or
CSV for a .csv name, carrying the task text (so `eval split --by-task` can check a task leak) and read back by
`referee eval --gold`. `--gold-out gold.csv` used to write JSON lines into the .csv, which eval then refused."""

from __future__ import annotations

import csv
import json

import pytest

from tests.conftest import base_cli_env, run_cli
from tests.support.corpora import TAU

pytestmark = pytest.mark.skipif(not TAU.exists(), reason="the tau-bench development corpus is not here")


@pytest.fixture(scope="module")
def traces(tmp_path_factory):
    d = tmp_path_factory.mktemp("gold")
    runs = json.loads(TAU.read_text())[:6]
    (d / "t.json").write_text(json.dumps(runs))
    return d


@pytest.mark.parametrize("how", ["audit", "eval-gold"])
def test_a_csv_gold_file_is_csv_with_the_task_text_and_eval_reads_it(traces, how):
    d, env = traces, base_cli_env()
    gold = d / f"{how}.csv"
    if how == "audit":
        args = ["audit", "t.json", "--out", "a-csv.jsonl", "--gold-out", gold.name, "--no-progress", "--workers", "1"]
    else:
        args = ["eval", "gold", "t.json", "-o", gold.name]
    rc, _, err = run_cli(args, cwd=d, env=env)
    assert rc == 0, err
    with gold.open(newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 6, rows
    assert all(r["completed"] in ("true", "false") and r["task"].strip() for r in rows), rows[0]
    assert not gold.read_text(encoding="utf-8").lstrip().startswith("{")

    rc, _, err = run_cli(["audit", "t.json", "--out", f"a-{how}.jsonl", "--no-progress", "--workers", "1"],
                         cwd=d, env=env)
    assert rc == 0, err
    rc, out, err = run_cli(["eval", f"a-{how}.jsonl", "--gold", gold.name, "--no-plot", "--resamples", "0", "--json"],
                           cwd=d, env=env)
    assert rc == 0, err
    assert json.loads(out)["coverage"]["evaluated"] == 6, out

    rc, out, err = run_cli(["eval", "split", gold.name, "--by-task"], cwd=d, env=env)
    assert rc == 0, err
    assert "no run has a task text" not in out + err, out + err


def test_audit_gold_out_jsonl_equals_eval_gold_jsonl(traces):
    d, env = traces, base_cli_env()
    rc, _, err = run_cli(["audit", "t.json", "--out", "a-j.jsonl", "--gold-out", "from-audit.jsonl", "--no-progress",
                          "--workers", "1"], cwd=d, env=env)
    assert rc == 0, err
    rc, _, err = run_cli(["eval", "gold", "t.json", "-o", "from-eval.jsonl"], cwd=d, env=env)
    assert rc == 0, err
    assert (d / "from-audit.jsonl").read_text() == (d / "from-eval.jsonl").read_text()
