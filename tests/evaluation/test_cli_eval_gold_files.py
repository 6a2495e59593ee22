"""`referee eval` and `eval gold` on the gold files `referee audit --gold-out` writes and users save.

Each test runs the CLI on real files in tmp_path and checks one promise the docs make (README.md, docs/auditor.md,
docs/scale.md, docs/evaluation.md), or that a user would take for granted, that the code once broke (found by a
black-box hunt written from the docs and `--help` only).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.support.cli_files import cli, no_crash, trace, write_jsonl  # noqa: E402


def test_gold_out_writes_one_label_per_run_id_so_eval_accepts_it(tmp_path):
    """A run_id that comes again is "audited once, the first time" (docs/auditor.md, Duplicate run_ids),
    but `--gold-out` wrote its gold label twice, and `referee eval --gold` then refuses the file it was
    given by the quick start (`run_id 'r1' is labelled twice`, exit 2)."""
    write_jsonl(tmp_path / "t.jsonl", [trace("r1", gold={"completed": False}),
                                       trace("r2", gold={"completed": True}),
                                       trace("r1", gold={"completed": False})])
    audit = cli("audit", "t.jsonl", "--out", "audit.jsonl", "--gold-out", "gold.jsonl", "--no-progress",
                cwd=tmp_path)
    assert audit.returncode == 0, audit.stderr
    gold_ids = [json.loads(line)["run_id"] for line in (tmp_path / "gold.jsonl").read_text().splitlines()]
    assert sorted(gold_ids) == ["r1", "r2"]
    ev = cli("eval", "audit.jsonl", "--gold", "gold.jsonl", "--no-plot", "--resamples", "0", cwd=tmp_path)
    assert ev.returncode == 0, ev.stderr


def test_eval_gold_on_a_bad_record_does_not_suggest_an_option_it_lacks(tmp_path):
    """`referee eval gold` stops at a broken line with `...; fix the record or pass --on-error skip`,
    and `referee eval gold ... --on-error skip` is `No such option '--on-error'`: the advice given
    cannot be followed."""
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps(trace("r1", gold={"completed": True})) + "\n" + '{"run_id": "r2", "task": \n'
                    + json.dumps(trace("r3", gold={"completed": False})) + "\n", encoding="utf-8")
    proc = cli("eval", "gold", "t.jsonl", "-o", "gold.jsonl", cwd=tmp_path)
    no_crash(proc)
    if "--on-error" in proc.stderr:
        again = cli("eval", "gold", "t.jsonl", "-o", "gold.jsonl", "--on-error", "skip", cwd=tmp_path)
        assert "No such option" not in again.stderr, again.stderr


def test_eval_gold_takes_a_folder_as_audit_does(tmp_path):
    """`referee eval gold TRACES` writes "the gold labels a trace reader finds beside the traces", but
    refused a folder (`File 'corpus' is a directory`) that `referee audit corpus --gold-out` reads: a
    folder of trajectories, and BrowserGym experiment folders or OpenHands sessions, whose gold exists
    only in folders, cannot be given to it at all."""
    (tmp_path / "corpus").mkdir()
    write_jsonl(tmp_path / "corpus" / "a.jsonl", [trace("r1", gold={"completed": True})])
    write_jsonl(tmp_path / "corpus" / "b.jsonl", [trace("r2", gold={"completed": False})])
    audit = cli("audit", "corpus", "--out", "audit.jsonl", "--gold-out", "audit_gold.jsonl", cwd=tmp_path)
    assert audit.returncode == 0, audit.stderr
    proc = cli("eval", "gold", "corpus", "-o", "gold.jsonl", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    got = {json.loads(line)["run_id"]: json.loads(line)["completed"]
           for line in (tmp_path / "gold.jsonl").read_text().splitlines()}
    assert got == {"r1": True, "r2": False}


def test_a_gold_csv_saved_with_a_byte_order_mark_reads(tmp_path):
    """Excel's "CSV UTF-8" starts the file with a BOM. Such a gold file was refused with
    `the header row has no run_id column` although its header is `run_id,completed`, which sends the
    user looking for a column that is there. (A BOM trace file audits fine.)"""
    write_jsonl(tmp_path / "t.jsonl", [trace("r1"), trace("r2", report="I could not delete it.")])
    assert cli("audit", "t.jsonl", "--out", "audit.jsonl", cwd=tmp_path).returncode == 0
    (tmp_path / "gold.csv").write_bytes(b"\xef\xbb\xbfrun_id,completed\r\nr1,false\r\nr2,false\r\n")
    proc = cli("eval", "audit.jsonl", "--gold", "gold.csv", "--no-plot", "--resamples", "0", "--json",
               cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["coverage"]["evaluated"] == 2
    # a JSONL gold file saved with a BOM reads the same
    (tmp_path / "gold.jsonl").write_bytes(b"\xef\xbb\xbf" + b"".join(
        json.dumps({"run_id": r, "completed": False}).encode() + b"\n" for r in ("r1", "r2")))
    proc = cli("eval", "audit.jsonl", "--gold", "gold.jsonl", "--no-plot", "--resamples", "0", "--json",
               cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["coverage"]["evaluated"] == 2


def test_eval_names_the_empty_audit_file_and_an_unknown_breakdown_method(tmp_path):
    """`eval` of an empty audit file blamed the gold file; `--breakdown-for nosuch` was accepted silently."""
    write_jsonl(tmp_path / "t.jsonl", [trace("r1", gold={"completed": True})])
    assert cli("audit", "t.jsonl", "--out", "audit.jsonl", "--gold-out", "gold.jsonl", cwd=tmp_path).returncode == 0
    (tmp_path / "empty.jsonl").write_text("")
    proc = cli("eval", "empty.jsonl", "--gold", "gold.jsonl", "--no-plot", cwd=tmp_path)
    assert proc.returncode == 2 and "empty.jsonl: the audit file holds no audit record" in proc.stderr, proc.stderr
    proc = cli("eval", "audit.jsonl", "--gold", "gold.jsonl", "--no-plot", "--breakdown-for", "auditr",
               "--resamples", "0", cwd=tmp_path)
    assert proc.returncode == 2 and "did you mean 'auditor'?" in proc.stderr, proc.stderr
