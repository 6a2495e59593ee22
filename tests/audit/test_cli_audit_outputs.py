"""`referee audit`'s outputs: --out and the side outputs, one writer per file, resume, the console, bad options.

Each test runs the CLI on real files in tmp_path and checks one promise the docs make (README.md, docs/auditor.md,
docs/scale.md, docs/evaluation.md), or that a user would take for granted, that the code once broke (found by a
black-box hunt written from the docs and `--help` only).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.support.cli_files import cli, no_crash, trace, write_jsonl  # noqa: E402
from tests.support.llm_stub import LLMStub  # noqa: E402


@pytest.mark.parametrize("option", ["--gold-out", "--summary-json"])
def test_a_side_output_naming_the_out_file_does_not_wipe_the_audit(tmp_path, option):
    """`--out` is append-only and "nothing already done is lost". Giving `--gold-out` (or
    `--summary-json`) the same path as `--out` (a slip when editing a command line) replaced every
    audit record in it with gold labels (or the summary), even records of earlier runs, then failed
    reading its own file: the audit is gone. Expected: a usage error before anything is written, or
    at least the audit file left as it was."""
    write_jsonl(tmp_path / "t.jsonl", [trace("r1"), trace("r2", gold={"completed": False})])
    first = cli("audit", "t.jsonl", "--out", "audit.jsonl", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    before = (tmp_path / "audit.jsonl").read_bytes()
    proc = cli("audit", "t.jsonl", "--out", "audit.jsonl", option, "audit.jsonl", cwd=tmp_path)
    no_crash(proc)
    assert (tmp_path / "audit.jsonl").read_bytes() == before


def test_an_audit_of_its_own_folder_run_again_does_not_read_its_output_and_an_input_is_no_output(tmp_path):
    """`referee audit . --out audit.jsonl`, run a second time (a nightly job), read its own audit.jsonl as traces:
    five bad records and exit 1. And `--out` naming an input file read the traces as earlier audit records."""
    write_jsonl(tmp_path / "t.jsonl", [trace("r1"), trace("r2")])
    for _ in range(2):
        proc = cli("audit", ".", "--out", "audit.jsonl", "--gold-out", "gold.jsonl", "--summary-json", "s.json",
                   cwd=tmp_path)
        no_crash(proc)
        assert proc.returncode == 0 and "bad record" not in proc.stderr, proc.stdout + proc.stderr
    assert "wrote 0 records" in proc.stdout and "2 already there" in proc.stdout
    before = (tmp_path / "t.jsonl").read_bytes()
    proc = cli("audit", "t.jsonl", "--out", "./t.jsonl", "--reaudit-changed", cwd=tmp_path)
    assert proc.returncode == 2 and "given as an input and as --out" in proc.stderr, proc.stderr
    assert (tmp_path / "t.jsonl").read_bytes() == before


@pytest.mark.parametrize("option", ["--out", "--gold-out", "--summary-json", "--cache"])
def test_an_output_that_is_a_folder_is_one_line_and_leaves_nothing_behind(tmp_path, option):
    """`--gold-out DIR` named a temp file in its error; `audit --out DIR` made DIR.cache.sqlite and DIR.lock
    before failing."""
    write_jsonl(tmp_path / "t.jsonl", [trace("r1")])
    (tmp_path / "dd").mkdir()
    args = ["audit", "t.jsonl", "--out", "audit.jsonl", option, "dd"] if option != "--out" else \
        ["audit", "t.jsonl", "--out", "dd"]
    before = sorted(p.name for p in tmp_path.iterdir())
    proc = cli(*args, cwd=tmp_path)
    no_crash(proc)
    assert proc.returncode == 2 and f"dd: {option} is a folder; give {option} a file name" in proc.stderr, \
        proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == before and not any((tmp_path / "dd").iterdir())


def test_replay_to_a_folder_or_of_a_bad_file_leaves_no_half_file(tmp_path):
    """`replay --out DIR` left DIR.tmp behind; so did a replay that stopped at a bad record."""
    write_jsonl(tmp_path / "t.jsonl", [trace("r1"), trace("r2")])
    assert cli("audit", "t.jsonl", "--out", "audit.jsonl", cwd=tmp_path).returncode == 0
    (tmp_path / "dd").mkdir()
    proc = cli("replay", "audit.jsonl", "--out", "dd", cwd=tmp_path)
    assert proc.returncode == 2 and "--out is a folder" in proc.stderr, proc.stderr
    assert not (tmp_path / "dd.tmp").exists()
    bad = tmp_path / "bad.jsonl"
    bad.write_text((tmp_path / "audit.jsonl").read_text().splitlines()[0] + "\n{not a record\n")
    (tmp_path / "out.jsonl").write_text("kept\n")
    proc = cli("replay", "bad.jsonl", "--out", "out.jsonl", cwd=tmp_path)
    no_crash(proc)
    assert proc.returncode == 2, proc.stderr
    assert (tmp_path / "out.jsonl").read_text() == "kept\n" and not (tmp_path / "out.jsonl.tmp").exists()


def test_one_writer_holds_through_a_symlink_to_the_out_file(tmp_path):
    """docs/auditor.md "One writer": a second `referee audit` on the same file stops at once, exit 2.
    Given the same file through a symlink (`latest.jsonl -> nightly.jsonl`), the second audit took its
    lock on `latest.jsonl.lock`, so both wrote into nightly.jsonl: every run was written twice."""
    write_jsonl(tmp_path / "t.jsonl", [trace(f"r{i}", task=f"Delete the note n{i}.md") for i in range(6)])
    (tmp_path / "latest.jsonl").symlink_to("nightly.jsonl")
    answer = {f: {"value": "yes", "support": [0]} for f in
              ("action", "target_id", "transition", "committed", "final_supports_goal")}
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    gate = threading.Event()  # the first audit's answers wait until the second has tried: it holds its lock

    def held(body: dict) -> dict:
        gate.wait(60)
        return answer

    with LLMStub(handler=held) as stub:
        args = ["audit", "t.jsonl", "--backend", "llm", "--base-url", stub.url, "--model", "m",
                "--samples", "1", "--concurrency", "1"]
        first = subprocess.Popen([sys.executable, "-m", "referee", *args, "--out", "nightly.jsonl"],
                                 cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            deadline = time.monotonic() + 30
            while stub.calls == 0 and time.monotonic() < deadline:  # the first holds its lock by now
                time.sleep(0.05)
            second = cli(*args, "--out", "latest.jsonl", cwd=tmp_path, timeout=60, process=True)  # a second process
        finally:
            gate.set()
            first.communicate(timeout=60)
    assert second.returncode == 2, second.stderr[-2000:]
    assert "is being written by another process" in second.stderr
    ids = [json.loads(line)["run_id"] for line in (tmp_path / "nightly.jsonl").read_text().splitlines()]
    assert sorted(ids) == [f"r{i}" for i in range(6)]


def test_a_damaged_line_in_out_is_said_on_resume_not_silently_reaudited(tmp_path):
    write_jsonl(tmp_path / "t.jsonl", [trace("r1"), trace("r2"), trace("r3")])
    assert cli("audit", "t.jsonl", "--out", "audit.jsonl", cwd=tmp_path).returncode == 0
    lines = (tmp_path / "audit.jsonl").read_text().splitlines()
    lines[1] = lines[1][:40] + "#" + lines[1][41:]  # a byte flipped in the middle of the file
    (tmp_path / "audit.jsonl").write_text("\n".join(lines) + "\n")
    proc = cli("audit", "t.jsonl", "--out", "audit.jsonl", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "audit.jsonl: line 2: no audit record (damaged?)" in proc.stderr and "wrote 1 records" in proc.stdout


def test_a_newline_in_a_run_id_never_makes_a_line_of_its_own_on_the_console(tmp_path):
    """docs/security.md: the agent's text "is escaped wherever it is shown (control characters on the
    console)"; security-files.md: "a newline in a file name cannot make a second line". A trace whose
    run_id holds a newline printed it raw, in the list of runs to look at (stdout) and in the
    skipped-record warning (stderr), so a hostile trace can forge a line of the summary such as
    `other-run  [pass] ...`."""
    forged = "FORGED-LINE  [pass] delete  claim: success"
    write_jsonl(tmp_path / "t.jsonl", [trace("r1\n" + forged, task="Delete note N1", report="Done."),
                                       {"run_id": "r2\n" + forged, "task": 5, "steps": [], "report": "Done."}])
    proc = cli("audit", "t.jsonl", "--out", "audit.jsonl", "--show", "all", cwd=tmp_path)
    no_crash(proc)
    assert (tmp_path / "audit.jsonl").read_text().count("\n") == 1  # r1 audited, r2 a bad record
    for stream in (proc.stdout, proc.stderr):
        assert not any(line.startswith("FORGED-LINE") for line in stream.splitlines()), stream


@pytest.mark.parametrize("option", [("--timeout", "-1"), ("--temperature", "nan")])
def test_an_out_of_range_llm_option_is_a_usage_error_not_a_bad_record_per_run(tmp_path, option):
    """`--timeout -1` (or `--temperature nan`) with `--backend llm` was accepted; then every run became
    a "bad record" (`run_id r1: could not be audited: ValueError: Timeout value out of range; fix the
    record, or report it if it looks valid`), exit 1: the records are fine, the option is not.
    Expected: one line naming the option, exit 2, before any run is audited."""
    write_jsonl(tmp_path / "t.jsonl", [trace("r1"), trace("r2")])
    with LLMStub(default={"action": {"value": "yes", "support": [0]}}) as stub:
        proc = cli("audit", "t.jsonl", "--backend", "llm", "--base-url", stub.url, "--model", "m",
                   "--samples", "1", "--max-retries", "0", "--out", "audit.jsonl", *option, cwd=tmp_path)
    no_crash(proc)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert option[0] in proc.stderr and "fix the record" not in proc.stderr, proc.stderr[-2000:]
