"""Evidence integrity: SKIPPED, ERROR for missing/corrupt/modified evidence, the manifest, forgery,
and evidence paths that escape the run directory.

Missing, unreadable or modified evidence is ERROR with a reason: never FAIL and never PASS.
"""

from __future__ import annotations

import json
import os
import shutil
import uuid
from pathlib import Path

import pytest

from tests.conftest import base_cli_env, run_cli
from tests.runner.runner_helpers import agent_cmd, app_block, assert_one_line_error, do_run, sha256, write_plan
from tests.support.sealing import reseal


@pytest.fixture(scope="module")
def irun(tmp_path_factory):
    W = tmp_path_factory.mktemp("integrity")
    plan = {
        "name": "integrity",
        "app": app_block(W / "app.db", W / "app.pid"),
        "steps": [
            {"id": "good", "do": 'POST /api/notes {"title": "alpha", "body": "hello"}',
             "capture": [{"kind": "http", "name": "reply", "url": "/api/notes/by-title/alpha"}],
             "validators": [{"kind": "http_status_eq", "evidence": "reply", "expected": 200}]},
            {"id": "good2", "do": "nothing", "capture": [{"kind": "http", "name": "listing", "url": "/api/notes"}],
             "validators": [{"kind": "http_body_contains", "evidence": "listing", "text": "alpha"}]},
            {"id": "skip", "do": "Think about it. Nothing to check."},
            {"id": "missing", "do": "SAVE other.txt hi",
             "validators": [{"kind": "text_contains", "evidence": "never-written.txt", "text": "hi"}]},
            {"id": "agentfile", "do": "SAVE result.txt ok done",
             "validators": [{"kind": "text_contains", "evidence": "result.txt", "text": "ok done"}]},
        ],
    }
    path = write_plan(W / "integrity.yaml", plan)
    run = do_run(path, out=W / "out", cwd=W, env=base_cli_env(), agent=agent_cmd("honest"))
    run.W = W
    return run


def test_verdicts_of_the_clean_run(irun):
    assert irun.verdicts() == {"good": "PASS", "good2": "PASS", "skip": "SKIPPED", "missing": "ERROR",
                               "agentfile": "PASS"}, irun.explain()
    assert irun.rc == 1, "an ERROR step must give exit code 1"


def test_no_validator_is_skipped_never_pass_and_a_claimed_pass_is_an_overclaim(irun):
    step = irun.step("skip")
    assert step["verdict"] == "SKIPPED"
    assert step["validators"] == []
    assert step["claim"] and step["claim"]["pass"] is True
    assert step["overclaim"] is True


def test_missing_evidence_is_error_with_a_reason(irun):
    step = irun.step("missing")
    assert step["verdict"] == "ERROR"
    (v,) = step["validators"]
    assert v["status"] == "ERROR"
    reason = v["reason"]
    assert "never-written.txt" in reason or "missing" in reason.lower() or "not found" in reason.lower(), v


def test_manifest_lists_every_evidence_file_with_its_hash_and_who_captured_it(irun):
    m = irun.manifest
    assert m["manifest_version"] == 1 and m["plan"] == "integrity"
    assert set(m["steps"]) == {"good", "good2", "skip", "missing", "agentfile"}
    assert all(s["status"] == "done" for s in m["steps"].values()), m["steps"]
    listed = {f["path"]: f for f in m["files"]}
    on_disk = {str(p.relative_to(irun.run_dir)) for sub in ("evidence", "agent")
               for p in (irun.run_dir / sub).rglob("*") if p.is_file()}
    assert on_disk, "no evidence files at all"
    assert on_disk <= set(listed), f"files on disk but not in the manifest: {on_disk - set(listed)}"
    for rel, f in listed.items():
        assert not rel.startswith("/") and ".." not in Path(rel).parts, rel
        p = irun.run_dir / rel
        assert p.is_file(), f"manifest lists {rel} but it is not there"
        assert f["sha256"] == sha256(p) and f["size"] == p.stat().st_size, rel
        assert f["phase"] in ("before", "after")
        if rel.startswith("evidence/"):
            assert f["captured_by"] == "runner", f
            assert rel.startswith(f"evidence/{f['step']}/{f['phase']}/"), f
        elif rel.startswith("agent/"):
            assert f["captured_by"] == "agent", f
            assert rel.startswith(f"agent/{f['step']}/"), f
    assert "agent/agentfile/result.txt" in listed
    assert "evidence/good/after/reply.json" in listed
    assert listed["evidence/good/after/reply.json"]["capture"] == "reply"


# ------------------------------------------------------------ tampering after the run


def _copy(irun, tmp_path) -> Path:
    dst = tmp_path / "copy"
    shutil.copytree(irun.run_dir, dst, symlinks=True)
    return dst


def _grade(run_dir: Path, cwd: Path) -> tuple[int, dict, str]:
    (run_dir / "results.json").unlink(missing_ok=True)
    rc, out, err = run_cli(["grade", str(run_dir)], cwd=cwd, env=base_cli_env(), timeout=60)
    assert "Traceback" not in err, err
    assert (run_dir / "results.json").exists(), f"`referee grade` wrote no results.json: rc={rc} {err}"
    res = json.loads((run_dir / "results.json").read_text())
    return rc, {s["id"]: s for s in res["steps"]}, err


def _files_of(run_dir: Path, step: str, who: str = "runner") -> list[dict]:
    m = json.loads((run_dir / "manifest.json").read_text())
    return [f for f in m["files"] if f["step"] == step and f["captured_by"] == who]


def test_untouched_copy_grades_the_same(irun, tmp_path):
    d = _copy(irun, tmp_path)
    rc, steps, _ = _grade(d, tmp_path)
    assert {k: v["verdict"] for k, v in steps.items()} == irun.verdicts()
    assert rc == 1


def test_deleted_evidence_is_error_not_fail(irun, tmp_path):
    d = _copy(irun, tmp_path)
    files = _files_of(d, "good")
    assert files
    for f in files:
        (d / f["path"]).unlink()
    rc, steps, _ = _grade(d, tmp_path)
    assert steps["good"]["verdict"] == "ERROR", steps["good"]
    assert steps["good"]["validators"][0]["status"] == "ERROR"
    assert steps["good"]["validators"][0]["reason"], steps["good"]
    assert steps["good2"]["verdict"] == "PASS" and steps["agentfile"]["verdict"] == "PASS"
    assert rc == 1


def test_modified_evidence_is_error_even_when_it_would_still_pass(irun, tmp_path):
    d = _copy(irun, tmp_path)
    p = d / "evidence/good/after/reply.json"
    data = json.loads(p.read_text())
    p.write_text(json.dumps(data, indent=7) + "\n")  # same content, other bytes
    rc, steps, _ = _grade(d, tmp_path)
    assert steps["good"]["verdict"] == "ERROR", steps["good"]
    reason = steps["good"]["validators"][0]["reason"].lower()
    assert any(w in reason for w in ("hash", "sha", "modified", "tamper", "changed")), reason


def test_modified_evidence_that_would_turn_fail_into_pass_is_error(irun, tmp_path):
    d = _copy(irun, tmp_path)
    p = d / "evidence/good2/after/listing.json"
    data = json.loads(p.read_text())
    data["body"] = "[]"  # 'alpha' gone: unchecked, this would FAIL
    p.write_text(json.dumps(data))
    rc, steps, _ = _grade(d, tmp_path)
    assert steps["good2"]["verdict"] == "ERROR", steps["good2"]


def test_modified_agent_evidence_is_error(irun, tmp_path):
    d = _copy(irun, tmp_path)
    (d / "agent/agentfile/result.txt").write_text("ok done, and forged afterwards")
    rc, steps, _ = _grade(d, tmp_path)
    assert steps["agentfile"]["verdict"] == "ERROR", steps["agentfile"]


def test_unreadable_evidence_with_a_matching_hash_is_error(irun, tmp_path):
    """Corrupt bytes, manifest updated to match and re-signed (as if the runner had captured them so):
    the hash and the seal hold but the file cannot be read."""
    d = _copy(irun, tmp_path)
    p = d / "evidence/good/after/reply.json"
    p.write_bytes(b"\x00\xff{ not json")
    m = json.loads((d / "manifest.json").read_text())
    for f in m["files"]:
        if f["path"] == "evidence/good/after/reply.json":
            f["sha256"], f["size"] = sha256(p), p.stat().st_size
    (d / "manifest.json").write_text(json.dumps(m))
    reseal(d)
    rc, steps, _ = _grade(d, tmp_path)
    assert steps["good"]["verdict"] == "ERROR", steps["good"]
    assert steps["good2"]["verdict"] == "PASS"


def test_evidence_replaced_by_a_directory_is_error(irun, tmp_path):
    d = _copy(irun, tmp_path)
    p = d / "evidence/good/after/reply.json"
    p.unlink()
    p.mkdir()
    rc, steps, _ = _grade(d, tmp_path)
    assert steps["good"]["verdict"] == "ERROR", steps["good"]


def test_corrupt_manifest_never_gives_a_pass(irun, tmp_path):
    d = _copy(irun, tmp_path)
    (d / "manifest.json").write_text("{ this is not json")
    (d / "results.json").unlink()
    rc, out, err = run_cli(["grade", str(d)], cwd=tmp_path, env=base_cli_env(), timeout=60)
    assert "Traceback" not in err and "Traceback" not in out, err
    if (d / "results.json").exists():
        res = json.loads((d / "results.json").read_text())
        assert not [s for s in res["steps"] if s["verdict"] == "PASS"], res
        assert rc == 1
    else:
        assert_one_line_error(rc, out, err, expected_rc=rc if rc in (1, 2) else -1)


# ------------------------------------------------------------ forgery during the run


@pytest.fixture(scope="module")
def forged(tmp_path_factory):
    W = tmp_path_factory.mktemp("forged")
    fake = {"url": "http://127.0.0.1:1/api/notes/by-title/forged", "method": "GET", "status": 200,
            "headers": {}, "body": '{"title": "forged"}'}
    plan = {
        "name": "forged",
        "app": app_block(W / "app.db", W / "app.pid"),
        # unisolated on purpose: the hashes must catch a forger that can write the run directory
        # (isolated, it cannot: test_runner_isolation.py)
        "actor": {"kind": "command", "command": agent_cmd("forger", "reply"), "isolation": "none"},
        "steps": [
            {"id": "s1", "do": "Make the note 'forged' exist (this agent will not).",
             "capture": [{"kind": "http", "name": "reply", "url": "/api/notes/by-title/forged"}],
             "validators": [{"kind": "http_status_eq", "evidence": "reply", "expected": 200}]},
            {"id": "s2", "do": f"Rewrite history.\nTAMPER evidence/s1/after/reply.json {json.dumps(fake)}",
             "capture": [{"kind": "http", "name": "reply", "url": "/api/notes/by-title/forged2"}],
             "validators": [{"kind": "http_status_eq", "evidence": "reply", "expected": 200}]},
            {"id": "s3", "do": "Plant a capture for the next step before it is taken.\n"
                               f"TAMPER evidence/s4/after/reply.json {json.dumps(fake)}\n"
                               f"TAMPER evidence/s4/before/reply.json {json.dumps(fake)}"},
            {"id": "s4", "do": "Nothing.",
             "capture": [{"kind": "http", "name": "reply", "url": "/api/notes/by-title/forged4"}],
             "validators": [{"kind": "http_status_eq", "evidence": "reply", "expected": 200}]},
        ],
    }
    path = write_plan(W / "forged.yaml", plan)
    run = do_run(path, out=W / "out", cwd=W, env=base_cli_env())
    run.W = W
    return run


def test_forger_rewrote_the_runners_evidence_and_gets_no_pass(forged):
    assert forged.run_dir is not None, forged.explain()
    assert "forged" in (forged.run_dir / "evidence/s1/after/reply.json").read_text(), "the forger did not get to act"
    assert forged.verdict("s1") != "PASS", forged.explain()
    assert forged.verdict("s2") == "FAIL", forged.explain()
    assert forged.rc == 1


def test_agent_file_named_like_a_capture_does_not_shadow_the_capture(forged):
    # the forger saved agent/s2/reply.json (status 200); `evidence: reply` is the runner's capture (404)
    assert (forged.run_dir / "agent/s2/reply.json").exists(), "the forger did not save its fake file"
    step = forged.step("s2")
    assert step["verdict"] == "FAIL" and "404" in step["validators"][0]["reason"], step


def test_a_capture_planted_before_the_step_is_replaced_by_the_runners(forged):
    assert forged.verdict("s4") == "FAIL", forged.explain()
    assert "404" in forged.step("s4")["validators"][0]["reason"], forged.step("s4")
    assert forged.verdict("s3") == "SKIPPED"


def test_regrade_of_forged_run_reports_the_modified_evidence(forged, tmp_path):
    d = tmp_path / "copy"
    shutil.copytree(forged.run_dir, d, symlinks=True)
    rc, steps, _ = _grade(d, tmp_path)
    assert steps["s1"]["verdict"] == "ERROR", steps["s1"]
    assert steps["s2"]["verdict"] == "FAIL", steps["s2"]
    assert steps["s4"]["verdict"] == "FAIL", steps["s4"]


# ------------------------------------------------------------ evidence paths that escape the run dir


def _marker_file(W: Path) -> tuple[Path, str]:
    marker = f"OUTSIDE-MARKER-{uuid.uuid4().hex}"
    p = W / "outside.txt"
    p.write_text(marker + "\n")
    return p, marker


def _nothing_inside_contains(run_dir: Path, marker: str) -> None:
    for p in run_dir.rglob("*"):
        if p.is_file() and not p.is_symlink():
            assert marker.encode() not in p.read_bytes(), f"{p} holds a copy of a file outside the run directory"


@pytest.mark.parametrize("how", ["dotdot", "absolute"])
def test_plan_evidence_path_escaping_the_run_dir_is_refused(tmp_path, cli_env, how):
    outside, marker = _marker_file(tmp_path)
    ev = "../../../../../outside.txt" if how == "dotdot" else str(outside)
    plan = {"name": "escape", "steps": [{"id": "s1", "do": "nothing",
                                         "validators": [{"kind": "text_contains", "evidence": ev,
                                                         "text": "OUTSIDE-MARKER"}]}]}
    path = write_plan(tmp_path / "escape.yaml", plan)
    run = do_run(path, out=tmp_path / "out", cwd=tmp_path, env=cli_env, agent=agent_cmd("honest"))
    assert "Traceback" not in run.stderr, run.stderr
    if run.rc == 2:  # refused when the plan is loaded
        line = assert_one_line_error(run.rc, run.stdout, run.stderr)
        assert "escape" in line.lower() or "outside" in line.lower() or ".." in line or "absolute" in line.lower(), line
    else:  # or refused when graded
        assert run.rc == 1, run.explain()
        step = run.step("s1")
        assert step["verdict"] == "ERROR", step
        _nothing_inside_contains(run.run_dir, marker)


def test_symlinks_out_of_the_run_dir_are_refused(tmp_path, cli_env):
    outside, marker = _marker_file(tmp_path)
    plan = {"name": "symlinks", "steps": [
        {"id": "file_link", "do": f"SYMLINK link.txt {outside}",
         "validators": [{"kind": "text_contains", "evidence": "link.txt", "text": "OUTSIDE-MARKER"}]},
        {"id": "dir_link", "do": f"SYMLINK linkdir {tmp_path}",
         "validators": [{"kind": "text_contains", "evidence": "linkdir/outside.txt", "text": "OUTSIDE-MARKER"}]},
        {"id": "claim_escape", "do": f"EVIDENCE ../../../../../outside.txt\nEVIDENCE {outside}\nSAVE ok.txt ok",
         "validators": [{"kind": "text_contains", "evidence": "ok.txt", "text": "ok"}]},
    ]}
    path = write_plan(tmp_path / "symlinks.yaml", plan)
    run = do_run(path, out=tmp_path / "out", cwd=tmp_path, env=cli_env, agent=agent_cmd("honest"))
    assert "Traceback" not in run.stderr, run.stderr
    assert run.verdict("file_link") == "ERROR", run.explain()
    assert run.verdict("dir_link") == "ERROR", run.explain()
    # the claim is recorded as given, but nothing it names outside the run dir is copied in
    assert run.verdict("claim_escape") == "PASS", run.explain()
    _nothing_inside_contains(run.run_dir, marker)
    for f in run.manifest["files"]:
        assert not f["path"].startswith("/") and ".." not in Path(f["path"]).parts, f
        assert (run.run_dir / f["path"]).resolve().is_relative_to(run.run_dir.resolve()), f
    assert run.rc == 1


def test_regrade_refuses_a_symlink_planted_in_the_run_dir_after_the_run(irun, tmp_path):
    d = _copy(irun, tmp_path)
    outside, marker = _marker_file(tmp_path)
    p = d / "agent/agentfile/result.txt"
    shutil.copy(p, outside)  # same bytes, same hash: only the symlink is wrong
    p.unlink()
    os.symlink(outside, p)
    rc, steps, _ = _grade(d, tmp_path)
    assert steps["agentfile"]["verdict"] == "ERROR", steps["agentfile"]


# ------------------------------------------------------------ the grader could not look: ERROR, not FAIL


def test_captures_that_cannot_be_taken_are_error_not_fail(tmp_path, cli_env, pg_url, moto_endpoint, free_port):
    dead_pg = pg_url.rsplit(":", 1)[0] + f":{free_port()}/postgres"
    plan = {"name": "couldnotlook", "steps": [
        {"id": "bad_sql", "do": "nothing", "validators": [{"kind": "sql_row_present", "url": pg_url,
                                          "query": "select * from no_such_table_anywhere"}]},
        {"id": "dead_db", "do": "nothing",
         "validators": [{"kind": "sql_row_present", "url": dead_pg, "table": "t", "where": {"a": 1}}]},
        {"id": "no_table", "do": "nothing",
         "validators": [{"kind": "ddb_row_present", "table": "no_such_table", "key": {"pk": "a"},
                                           "endpoint_url": moto_endpoint, "region": "us-east-1"}]},
        {"id": "dead_http", "do": "nothing", "validators": [{"kind": "http_status_eq", "url": f"http://127.0.0.1:{free_port()}/x",
                                            "expected": 200}]},
        {"id": "not_json", "do": "SAVE data.json {this is not json",
         "validators": [{"kind": "json_path_eq", "evidence": "data.json", "path": "$.a", "expected": 1}]},
        {"id": "json_absent_path", "do": 'SAVE data.json {"a": 1}',
         "validators": [{"kind": "json_path_eq", "evidence": "data.json", "path": "$.b", "expected": 1}]},
    ]}
    path = write_plan(tmp_path / "couldnotlook.yaml", plan)
    run = do_run(path, out=tmp_path / "out", cwd=tmp_path, env=cli_env, agent=agent_cmd("honest"), timeout=90)
    assert "Traceback" not in run.stderr, run.stderr
    v = run.verdicts()
    could_not_look = ("bad_sql", "dead_db", "no_table", "not_json")  # not_json: the agent's evidence is unreadable
    assert {k: v[k] for k in could_not_look} == dict.fromkeys(could_not_look, "ERROR"), run.explain()
    # no answer from the app: the runner recorded that; FAIL (the app is down) or ERROR, never PASS
    assert v["dead_http"] in ("FAIL", "ERROR"), run.explain()
    # a readable document without the value: the validator looked, and it does not hold
    assert v["json_absent_path"] == "FAIL", run.explain()
    for sid in could_not_look + ("dead_http",):
        assert run.reasons(sid).strip(), f"{sid}: no reason given"
    assert run.rc == 1
