"""Agents that fight the grader through the file system and the claim channel (issue 9).

Each agent is a real program (tests/support/agents/hostile.py) run by `referee run --agent`. It
plants FIFOs where the runner, the grader or the auditor will read, symlinks where they will read
or write, and claim notes made to break consoles, XML and HTML. Every command must finish (no
hang), stay inside the run directory, and grade from the runner's own evidence.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest

from tests.conftest import base_cli_env, run_cli
from tests.runner.runner_helpers import agent_cmd, assert_one_line_error, do_run, find_run_dirs, write_plan

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs POSIX FIFOs and symlinks")

HANG = 60  # seconds: far more than any of these runs needs; reaching it means a hang


def _copy_run(src: Path, dst: Path) -> Path:
    """A copy of a run directory, its FIFOs made again as FIFOs (shutil copies no FIFO)."""
    def copy(a, b):
        return os.mkfifo(b) if stat.S_ISFIFO(os.lstat(a).st_mode) else shutil.copy2(a, b)

    shutil.copytree(src, dst, symlinks=True, copy_function=copy)
    return dst


def _run(tmp: Path, plan: dict, name: str):
    # unisolated on purpose: these defences are for an agent that can write the whole run directory
    # (an isolated one cannot: test_runner_isolation.py)
    plan = {"actor": {"kind": "command", "isolation": "none"}, **plan}
    path = write_plan(tmp / f"{name}.yaml", plan)
    env = {**base_cli_env(), "COLUMNS": "400"}  # a wide console: notes are not wrapped in the table
    return do_run(path, out=tmp / "out", cwd=tmp, env=env, agent=agent_cmd("hostile"), timeout=HANG)


# -- FIFOs ----------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def fifo_run(tmp_path_factory):
    W = tmp_path_factory.mktemp("fifo")
    plan = {"name": "fifo", "steps": [
        {"id": "s1", "do": "SAVE result.txt all good",
         "capture": [{"kind": "command", "name": "out", "command": "echo captured-one"}],
         "validators": [{"kind": "text_contains", "evidence": "result.txt", "text": "all good"},
                        {"kind": "text_contains", "evidence": "out", "text": "captured-one"}]},
        {"id": "s2", "do": "Look around; nothing here can be checked.",
         "capture": [{"kind": "command", "name": "seen", "command": "echo seen-two"}]},
        {"id": "s3", "do": "CLAIM_FIFO\nFIFO agent/s1/result.txt\nFIFO evidence/s1/after/out.json\n"
                           "FIFO evidence/s2/after/seen.json\nSAVE mine.txt mine",
         "validators": [{"kind": "text_contains", "evidence": "mine.txt", "text": "mine"}]},
    ]}
    run = _run(W, plan, "fifo")
    run.W = W
    return run


def test_a_fifo_claim_file_is_no_claim_and_the_run_finishes(fifo_run):
    assert fifo_run.rc == 1, fifo_run.explain()
    s3 = fifo_run.step("s3")
    assert s3["verdict"] == "PASS" and s3["claim"] is None, fifo_run.explain()
    why = fifo_run.manifest["steps"]["s3"]["actor_error"]
    assert "agent/s3/claim.json" in why and "not a regular file" in why, why


def test_evidence_of_an_earlier_step_replaced_by_a_fifo_is_error_naming_the_file(fifo_run):
    s1 = fifo_run.step("s1")
    assert s1["verdict"] == "ERROR", fifo_run.explain()
    reasons = {v["evidence"][0]: v["reason"] for v in s1["validators"]}
    assert "agent/s1/result.txt" in reasons["result.txt"] and "not a regular file" in reasons["result.txt"]
    assert "evidence/s1/after/out.json" in reasons["out"] and "not a regular file" in reasons["out"]
    # s2 has no validator, but its listed capture was replaced too: every listed file is checked, so it is ERROR
    assert fifo_run.verdict("s2") == "ERROR" and "evidence/s2/after/seen.json" in fifo_run.step("s2")["reason"]


def test_grade_and_audit_of_a_run_directory_holding_fifos_finish(fifo_run, tmp_path):
    rc, out, err = run_cli(["grade", fifo_run.run_dir, "--json"], env=base_cli_env(), timeout=HANG)
    assert rc == 1, err
    steps = {s["id"]: s["verdict"] for s in json.loads(out)["runs"][0]["steps"]}
    assert steps == {"s1": "ERROR", "s2": "ERROR", "s3": "PASS"}
    rc, out, err = run_cli(["audit", fifo_run.run_dir, "--out", tmp_path / "audit.jsonl", "--no-progress"],
                           env=base_cli_env(), timeout=HANG)
    # no step is SKIPPED (s2's capture was replaced by a FIFO): the audit finishes with nothing to audit
    assert rc == 0 and "nothing to audit" in out, out + err


def test_grade_of_a_run_directory_whose_manifest_is_a_fifo_is_a_one_line_error(fifo_run, tmp_path):
    copy = _copy_run(fifo_run.run_dir, tmp_path / "run")
    (copy / "manifest.json").unlink()
    os.mkfifo(copy / "manifest.json")
    rc, out, err = run_cli(["grade", copy], env=base_cli_env(), timeout=HANG)
    # a refused manifest is a refused run: every output says so (not a stale PASS), and the console names the file
    assert rc == 1 and "Traceback" not in err, out + err
    assert "manifest.json" in out + err and "not a regular file" in out + err, out + err


@pytest.mark.parametrize("name", ["plan.yaml", "claims.json", "seal.json"])
def test_a_sealed_file_replaced_by_a_fifo_fails_the_seal_naming_it(fifo_run, tmp_path, name):
    copy = _copy_run(fifo_run.run_dir, tmp_path / "run")
    (copy / name).unlink()
    os.mkfifo(copy / name)
    rc, out, err = run_cli(["grade", copy, "--json"], env=base_cli_env(), timeout=HANG)
    assert rc == 1 and "Traceback" not in err, err
    (run,) = json.loads(out)["runs"]
    assert run["integrity"]["status"] == "failed", run["integrity"]
    assert name in run["integrity"]["reason"] and "not a regular file" in run["integrity"]["reason"], run["integrity"]
    assert {s["verdict"] for s in run["steps"]} == {"ERROR"}


def test_report_audit_and_grade_read_no_fifo_planted_as_results(fifo_run, tmp_path):
    copy = _copy_run(fifo_run.run_dir, tmp_path / "run")
    (copy / "results.json").unlink()
    os.mkfifo(copy / "results.json")
    rc, out, err = run_cli(["audit", copy, "--out", tmp_path / "a.jsonl", "--no-progress"], env=base_cli_env(),
                           timeout=HANG)
    assert rc == 0 and "Traceback" not in err, out + err
    assert "nothing to audit" in out  # graded again, no step is SKIPPED (s2's capture is a FIFO): results.json unread
    for cmd in (["report", copy], ["grade", copy, "--json"]):
        rc, out, err = run_cli(cmd, env=base_cli_env(), timeout=HANG)
        assert rc in (0, 1) and "Traceback" not in err and "internal error" not in err, err
    assert json.loads((copy / "results.json").read_text())["steps"][0]["verdict"] == "ERROR"


def test_the_grader_neither_reads_nor_writes_a_cache_through_a_planted_link_or_fifo(tmp_path):
    from referee.grader.evidence import RunEvidence
    from referee.rundir.keys import SigningKey
    from referee.rundir.schema import Manifest

    outside = tmp_path / "outside"
    outside.mkdir()
    run_dir = tmp_path / "run"
    (run_dir / "cache").mkdir(parents=True)
    os.mkfifo(run_dir / "cache" / "ocr.json")
    ev = RunEvidence(run_dir, Manifest(plan="p"), key=SigningKey(b"k" * 32, tmp_path / "key"))
    assert ev.cached("ocr", "img", lambda: {"lines": ["hi"]}) == {"lines": ["hi"]}  # the FIFO: nothing cached
    shutil.rmtree(run_dir / "cache")
    (run_dir / "cache").symlink_to(outside)
    ev.save_caches()
    assert list(outside.iterdir()) == []  # not written through the link
    assert (run_dir / "cache").is_dir() and not (run_dir / "cache").is_symlink()
    assert "img" in json.loads((run_dir / "cache" / "ocr.json").read_text())


# -- symlinks ----------------------------------------------------------------------------------------

def _tree(d: Path) -> dict[str, bytes]:
    return {p.relative_to(d).as_posix(): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file()}


def test_symlinks_planted_in_the_run_directory_are_never_followed(tmp_path):
    outside, outside_ev = tmp_path / "outside", tmp_path / "outside-ev"
    outside.mkdir()
    outside_ev.mkdir()
    (outside / "secret.txt").write_text("top secret")
    (outside / "claim.json").write_text(json.dumps({"pass": True, "note": "a claim from outside"}))
    before, before_ev = _tree(outside), _tree(outside_ev)
    plan = {"name": "links", "steps": [
        {"id": "s1", "do": f"LINK agent/s2 {outside}\nLINK evidence/s2 {outside_ev}\n"
                           f"LINK claims/s2.json {outside}/claim.json"},
        {"id": "s2", "do": "CLAIM_NONE\nSAVE note.txt hi",
         "capture": [{"kind": "command", "name": "probe", "command": "echo probe-output"}],
         "validators": [{"kind": "text_contains", "evidence": "secret.txt", "text": "top secret"},
                        {"kind": "text_contains", "evidence": "probe", "text": "probe-output"},
                        {"kind": "text_contains", "evidence": "note.txt", "text": "hi"}]},
        # no claim: its claim file lies in the folder it swaps, and the agent itself writing through
        # its own link is not what this checks (the runner never writing or reading through it is)
        {"id": "s3", "do": f"SWAP_OWN {outside}\nCLAIM_NONE",
         "validators": [{"kind": "text_contains", "evidence": "secret.txt", "text": "top secret"}]},
    ]}
    run = _run(tmp_path, plan, "links")
    assert run.rc == 1, run.explain()
    # nothing outside the run directory was read as evidence, written, or taken as a claim
    assert _tree(outside) == before and _tree(outside_ev) == before_ev
    secret = hashlib.sha256(b"top secret").hexdigest()
    assert all(f["sha256"] != secret for f in run.manifest["files"]), run.manifest["files"]
    assert run.step("s2")["claim"] is None
    # the runner put real folders where the agent had planted links, and said so
    s2 = run.step("s2")
    assert s2["verdict"] == "ERROR", run.explain()
    assert [v["status"] for v in s2["validators"]] == ["ERROR", "PASS", "PASS"], run.explain()
    for rel in ("agent/s2", "evidence/s2"):
        assert (run.run_dir / rel).is_dir() and not (run.run_dir / rel).is_symlink(), rel
    why2 = run.manifest["steps"]["s2"]["actor_error"]
    # (the claim file lies in agent/s2, which was made afresh: the link to outside/claim.json is gone with it)
    assert "agent/s2" in why2 and "evidence/s2" in why2, why2
    # an agent that swaps its own folder for a link gets none of the link's files taken
    assert run.verdict("s3") == "ERROR", run.explain()
    why3 = run.manifest["steps"]["s3"]["actor_error"]
    assert "agent/s3" in why3 and "link" in why3, why3
    # (only the runner's copy of its output is there, in a folder the runner made afresh)
    assert not any(f["path"].startswith("agent/s3/") and f["kind"] != "agent_stdout" for f in run.manifest["files"])


# -- names ----------------------------------------------------------------------------------------

LONG = "a" * 300


@pytest.mark.parametrize("plan, where", [
    ({"name": "a/b", "steps": [{"id": "s", "do": "x"}]}, "name"),
    ({"name": "../../escaped", "steps": [{"id": "s", "do": "x"}]}, "name"),
    ({"steps": [{"id": LONG}]}, "id"),
    ({"steps": [{"id": "s", "do": "nothing",
                 "capture": [{"kind": "command", "name": "../up", "command": "true"}]}]}, "name"),
    ({"steps": [{"id": "s", "do": "nothing",
                 "capture": [{"kind": "command", "name": "sub/dir", "command": "true"}]}]}, "name"),
    ({"steps": [{"id": "s", "do": "nothing",
                 "capture": [{"kind": "command", "name": "c" * 101, "command": "true"}]}]}, "name"),
    ({"steps": [{"id": "s", "do": "nothing", "capture": [{"kind": "command", "name": "c", "command": "true",
                                          "stdout_as": "../../../up.png"}]}]}, "stdout_as"),
    ({"steps": [{"id": "s", "do": "nothing", "capture": [{"kind": "command", "name": "c", "command": "true",
                                          "stdout_as": "sub/shot.png"}]}]}, "stdout_as"),
])
def test_names_that_are_paths_or_too_long_are_plan_errors(tmp_path, plan, where):
    path = write_plan(tmp_path / "names.yaml", plan)
    rc, out, err = run_cli(["check", path], env=base_cli_env(), timeout=HANG)
    line = assert_one_line_error(rc, out, err)
    assert f"{path}:" in line and f"'{where}'" in line, line
    # `--out a/out`: a plan name `../../escaped` would land in tmp_path itself
    rc, out, err = run_cli(["run", path, "--out", tmp_path / "a" / "out", "--agent", agent_cmd("hostile")],
                           env=base_cli_env(), timeout=HANG)
    assert_one_line_error(rc, out, err)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["names.yaml"], "the run wrote something"


def test_a_plan_file_whose_stem_is_no_name_still_runs_under_a_name(tmp_path):
    path = write_plan(tmp_path / "my plan (v2).yaml", {"steps": [{"id": "s", "do": "SAVE a.txt a"}]})
    run = do_run(path, out=tmp_path / "out", cwd=tmp_path, env=base_cli_env(), agent=agent_cmd("hostile"),
                 timeout=HANG)
    assert run.rc == 0, run.explain()
    assert [p.relative_to(tmp_path / "out").parts[0] for p in find_run_dirs(tmp_path / "out")] == ["my_plan_v2"]


# -- claim notes made to break consoles, XML and HTML ---------------------------------------------------

NOTES = {
    "markup": "CLAIM_RAW " + json.dumps({"pass": True, "note": "[/] [bold]not bold"}),
    "ansi": "CLAIM_RAW " + json.dumps({"pass": True, "note": "\x1b[31mred\x1b[0m\x1b]0;title\x07"}),
    "nul": "CLAIM_RAW " + json.dumps({"pass": True, "note": "before\x00after\x0b\x7f"}),
    "surrogate": 'CLAIM_RAW {"pass": true, "note": "lone \\ud800 half", "evidence": ["x\\udfff.txt"]}',
    "bytes": "CLAIM_HEX " + b'{"pass": true, "note": "caf\xe9 \xff\xfe end"}'.hex(),
    "deep": "CLAIM_DEEP 100000",
    "big": "CLAIM_BIG 2000000",
}


@pytest.fixture(scope="module")
def notes_run(tmp_path_factory):
    W = tmp_path_factory.mktemp("notes")
    steps = [{"id": sid, "do": f"SAVE ok.txt fine\n{verb}",
              "validators": [{"kind": "text_contains", "evidence": "ok.txt", "text": "fine"}]}
             for sid, verb in NOTES.items()]
    steps.append({"id": "unchecked", "do": NOTES["markup"]})  # SKIPPED: the note lands in the reason column too
    run = _run(W, {"name": "notes", "steps": steps}, "notes")
    return run


def test_hostile_claim_notes_run_and_grade(notes_run):
    assert notes_run.rc == 0, notes_run.explain()  # not 3: nothing crashed, every step PASSed
    assert set(notes_run.verdicts().values()) == {"PASS", "SKIPPED"}
    notes = {s["id"]: (s["claim"] or {}).get("note") for s in notes_run.results["steps"]}
    assert notes["markup"] == "[/] [bold]not bold"
    assert notes["surrogate"] == "lone \ufffd half"
    assert notes_run.step("surrogate")["claim"]["evidence"] == ["x\ufffd.txt"]
    assert notes["bytes"] == "caf\ufffd \ufffd\ufffd end"
    assert notes["deep"] is None and notes["big"] is None  # malformed claims: no claim
    errors = notes_run.manifest["steps"]
    assert "malformed claim" in errors["deep"]["actor_error"], errors["deep"]
    assert "malformed claim" in errors["big"]["actor_error"], errors["big"]


def test_the_console_shows_hostile_notes_escaped(notes_run):
    out = notes_run.stdout
    assert "\x1b" not in out and "\x00" not in out and "\x07" not in out
    assert "[/] [bold]not bold" in out
    assert "\\x1b[31mred" in out and "before\\x00after" in out


def test_junit_and_html_stay_valid_and_escaped(notes_run):
    root = ET.parse(notes_run.run_dir / "junit.xml").getroot()  # raises on invalid XML (a NUL, a surrogate)
    outs = {c.get("name"): (c.findtext("system-out") or "") for c in root.iter("testcase")}
    assert "before\\x00after\\x0b\\x7f" in outs["nul"]
    assert "\\x1b[31mred" in outs["ansi"]
    page = (notes_run.run_dir / "report.html").read_text(encoding="utf-8")
    for raw in ("\x00", "\x1b", "\x07", "\x0b"):
        assert raw not in page
    assert "before\\x00after" in page and "[/] [bold]not bold" in page
    rc, out, err = run_cli(["grade", notes_run.run_dir], env=base_cli_env(), timeout=HANG)
    assert rc == 0 and "\x1b" not in out, err


@pytest.mark.parametrize("name", ["referee.core.fsutil", "referee.core.safetext", "referee.plan.model",
                         "referee.runner.run"])
def test_doctests(name):
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0 and result.attempted > 0
