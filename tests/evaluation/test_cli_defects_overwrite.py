"""Every command that writes a file refuses an output that is one of its inputs (same file by inode, links
included): one line, exit 2, before anything is written."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.conftest import ROOT

EXAMPLE = ROOT / "docs" / "examples" / "traces.jsonl"


@pytest.fixture(scope="module")
def made(tmp_path_factory) -> Path:
    """traces.jsonl, and the audit.jsonl and gold.jsonl `referee audit` makes of it (made once, copied per test)."""
    from tests.conftest import base_cli_env, run_cli

    d = tmp_path_factory.mktemp("made")
    shutil.copy(EXAMPLE, d / "traces.jsonl")
    rc, out, err = run_cli(["audit", "traces.jsonl", "--out", "audit.jsonl", "--gold-out", "gold.jsonl",
                            "--no-progress"], cwd=d, env=base_cli_env())
    assert rc == 0, err
    return d


@pytest.fixture
def work(made, tmp_path) -> Path:
    for name in ("traces.jsonl", "audit.jsonl", "gold.jsonl"):
        shutil.copy(made / name, tmp_path / name)
    return tmp_path


def refused(rc: int, err: str, name: str) -> None:
    """One line naming the file, exit 2."""
    assert rc == 2, err
    line = err.strip()
    assert "\n" not in line and line.startswith("referee: error:") and name in line, err
    assert "given as an input" in line, err


def snapshot(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


def test_eval_gold_refuses_to_write_over_its_trace_file(referee_cli, work):
    shutil.copy(work / "traces.jsonl", work / "t1.jsonl")
    before = snapshot(work)
    rc, out, err = referee_cli("eval", "gold", "t1.jsonl", "-o", "t1.jsonl", cwd=work)
    refused(rc, err, "t1.jsonl")
    assert snapshot(work) == before


def test_eval_gold_refuses_a_hard_link_to_its_input(referee_cli, work):
    os.link(work / "traces.jsonl", work / "hard.jsonl")
    before = snapshot(work)
    rc, out, err = referee_cli("eval", "gold", "traces.jsonl", "-o", "hard.jsonl", cwd=work)
    refused(rc, err, "traces.jsonl")
    assert snapshot(work) == before


def test_eval_report_refuses_output_over_the_audit_file(referee_cli, work):
    before = snapshot(work)
    rc, out, err = referee_cli("eval", "audit.jsonl", "--gold", "gold.jsonl", "--markdown", "-o", "audit.jsonl",
                               "--no-plot", cwd=work)
    refused(rc, err, "audit.jsonl")
    assert snapshot(work) == before


def test_eval_report_refuses_records_out_over_gold_through_a_symlink(referee_cli, work):
    (work / "g-link.jsonl").symlink_to("gold.jsonl")
    before = snapshot(work)
    rc, out, err = referee_cli("eval", "audit.jsonl", "--gold", "gold.jsonl", "--records-out", "g-link.jsonl",
                               "--no-plot", cwd=work)
    refused(rc, err, "gold.jsonl")
    assert snapshot(work) == before and not list(work.glob("*.tmp"))


def test_eval_report_refuses_a_plot_over_an_input(referee_cli, work):
    before = snapshot(work)
    rc, out, err = referee_cli("eval", "audit.jsonl", "--gold", "gold.jsonl", "--plot", "gold.jsonl", cwd=work)
    refused(rc, err, "gold.jsonl")
    assert snapshot(work) == before


def test_eval_report_refuses_two_outputs_in_one_file(referee_cli, work):
    before = snapshot(work)
    rc, out, err = referee_cli("eval", "audit.jsonl", "--gold", "gold.jsonl", "--records-out", "r.jsonl",
                               "-o", "r.jsonl", "--no-plot", cwd=work)
    line = err.strip()
    assert rc == 2 and "\n" not in line and "r.jsonl" in line, err
    assert "given as --records-out and as --output" in line or "given as --output and as --records-out" in line, err
    assert snapshot(work) == before


def test_eval_report_with_distinct_outputs_still_writes(referee_cli, work):
    rc, out, err = referee_cli("eval", "audit.jsonl", "--gold", "gold.jsonl", "--markdown", "-o", "report.md",
                               "--records-out", "records.jsonl", "--no-plot", "--resamples", "0", cwd=work)
    assert rc == 0, err
    assert (work / "report.md").read_text().strip() and (work / "records.jsonl").read_text().strip()


def test_eval_report_refuses_output_over_a_predictions_file(referee_cli, work):
    (work / "preds.jsonl").write_text('{"run_id": "del-ok", "disposition": "flag"}\n')
    before = snapshot(work)
    rc, out, err = referee_cli("eval", "audit.jsonl", "--gold", "gold.jsonl", "--predictions", "tool=preds.jsonl",
                               "-o", "preds.jsonl", "--no-plot", cwd=work)
    refused(rc, err, "preds.jsonl")
    assert snapshot(work) == before


def test_eval_intervention_refuses_output_over_its_traces(referee_cli, work):
    before = snapshot(work)
    rc, out, err = referee_cli("eval", "intervention", "traces.jsonl", "--gold", "gold.jsonl", "-o", "traces.jsonl",
                               cwd=work)
    refused(rc, err, "traces.jsonl")
    assert snapshot(work) == before


@pytest.mark.parametrize("target", ["gold.jsonl", "audit.jsonl"])
def test_replay_refuses_out_over_an_input(referee_cli, work, target):
    before = snapshot(work)
    rc, out, err = referee_cli("replay", "audit.jsonl", "--gold", "gold.jsonl", "--out", target, cwd=work)
    refused(rc, err, target)
    assert snapshot(work) == before  # not even OUT.lock is made


def test_replay_refuses_out_over_its_policy_file(referee_cli, work):
    from referee.audit.decide.policyfile import POLICY_DIR

    shutil.copy(POLICY_DIR / "strict.yaml", work / "mine.yaml")
    before = snapshot(work)
    rc, out, err = referee_cli("replay", "audit.jsonl", "--policy", "mine.yaml", "--out", "mine.yaml", cwd=work)
    refused(rc, err, "mine.yaml")
    assert snapshot(work) == before


def test_replay_to_another_file_still_writes(referee_cli, work):
    rc, out, err = referee_cli("replay", "audit.jsonl", "--gold", "gold.jsonl", "--out", "r.jsonl", cwd=work)
    assert rc == 0, err
    assert len((work / "r.jsonl").read_text().splitlines()) == len((work / "audit.jsonl").read_text().splitlines())


def test_audit_refuses_a_hard_link_to_its_input_as_out(referee_cli, work):
    os.link(work / "traces.jsonl", work / "hard.jsonl")
    before = snapshot(work)
    rc, out, err = referee_cli("audit", "traces.jsonl", "--out", "hard.jsonl", "--no-progress", cwd=work)
    refused(rc, err, "traces.jsonl")
    assert snapshot(work) == before


def test_eval_gold_into_the_folder_it_walks_never_reads_its_own_output(referee_cli, work):
    (work / "d").mkdir()
    shutil.copy(work / "traces.jsonl", work / "d" / "traces.jsonl")
    for _ in range(2):  # the second run walks past the gold.jsonl the first one wrote
        rc, out, err = referee_cli("eval", "gold", "d", "-o", "d/gold.jsonl", cwd=work)
        assert rc == 0 and "wrote 5 gold labels" in err, err
