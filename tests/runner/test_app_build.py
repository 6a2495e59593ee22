"""Issue 34, build before run: `app.build` runs once per run before the app starts, its output kept (secrets replaced)
as build.log and sealed in the manifest; a failed or timed-out build makes every step ERROR with its exit and the
log's last lines, starts neither the app nor the agent, and `referee history` shows it as a build failure."""

from __future__ import annotations

import hashlib
import json
import shlex
import sys
from pathlib import Path

import pytest

from referee.cli.main import main
from tests.conftest import base_cli_env, run_cli
from tests.runner.runner_helpers import app_block, find_run_dirs, wait_unmarked, write_plan

SECRET = "s3cr3t-build-token-81f2"


def _plan(home: Path, build: str, **app) -> Path:
    block = app_block(home / "app.db", home / "app.pid")  # the app writes app.pid once it runs: the marker
    block.update(build=build, **app)
    claim = "import os; open(os.environ['REFEREE_CLAIM_FILE'], 'w').write('{}')"
    agent = f"{shlex.quote(sys.executable)} -c {shlex.quote(claim)}"
    return write_plan(home / "built.yaml", {
        "name": "built", "app": block, "actor": {"kind": "command", "command": agent},
        "steps": [
            {"id": "artifact", "do": "nothing",
             "validators": [{"kind": "command_exit_code",
                             "command": f"test -f {shlex.quote(str(home / 'artifact.txt'))}",
                             "run_as": "runner"}]},
            {"id": "look", "do": "nothing to check"},  # no validator: SKIPPED when built, ERROR when not
            {"id": "health", "do": "nothing",
             "validators": [{"kind": "http_status_eq", "url": "/health", "expected": 200}],
             # the plan names the secret, so the runner knows its value and keeps it out of what it writes
             "capture": [{"kind": "command", "name": "tok", "command": "echo ${BUILD_TOKEN}", "run_as": "runner"}]},
        ]})


def _run(home: Path, plan: Path):
    env = base_cli_env()
    env["BUILD_TOKEN"] = SECRET
    code, out, err = run_cli(["run", plan, "--out", home / "runs"], cwd=home, env=env)
    run_dir = find_run_dirs(home / "runs")[-1]
    return code, out + err, run_dir, json.loads((run_dir / "results.json").read_text())


def test_a_build_that_passes_runs_before_the_app_and_its_log_is_kept_scrubbed_and_sealed(tmp_path, capsys):
    artifact = shlex.quote(str(tmp_path / "artifact.txt"))
    build = f'echo compiling; echo "token $BUILD_TOKEN"; test ! -e app.pid && touch {artifact}'
    code, out, run_dir, res = _run(tmp_path, _plan(tmp_path, build, cwd=str(tmp_path)))
    assert code == 0, out
    assert {s["id"]: s["verdict"] for s in res["steps"]} == {"artifact": "PASS", "look": "SKIPPED", "health": "PASS"}
    log = (run_dir / "build.log").read_bytes()
    assert b"compiling" in log and SECRET.encode() not in log and b"${BUILD_TOKEN}" in log
    build_rec = json.loads((run_dir / "manifest.json").read_text())["build"]
    assert build_rec["exit_code"] == 0 and build_rec["log_sha256"] == hashlib.sha256(log).hexdigest()
    assert (tmp_path / "app.pid").exists()  # the app started, after the build (which found no app.pid)
    # build.log is sealed: the manifest (signed) holds its digest, so an edit is a seal failure
    (run_dir / "build.log").write_bytes(log.replace(b"compiling", b"compiled!"))
    assert main(["grade", str(run_dir), "--json"]) == 1
    doc = json.loads(capsys.readouterr().out)["runs"][0]
    assert doc["integrity"]["status"] == "failed" and doc["integrity"]["reason"].startswith("build.log: sha256 differs")


def test_a_build_that_fails_makes_every_step_error_with_its_exit_and_log_tail_and_starts_nothing(tmp_path):
    build = 'echo compiling; echo "x.c:1:2: error: boom $BUILD_TOKEN" >&2; exit 2'
    code, out, run_dir, res = _run(tmp_path, _plan(tmp_path, build))
    assert code == 1
    for s in res["steps"]:
        assert s["verdict"] == "ERROR", s
        assert "the build failed (exit 2)" in s["reason"] and "x.c:1:2: error: boom ${BUILD_TOKEN}" in s["reason"], s
        assert SECRET not in s["reason"]
    assert not (tmp_path / "app.pid").exists()  # the app never started
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["steps"] == {}, manifest["steps"]  # nor did the agent: no step was begun
    assert manifest["build"]["exit_code"] == 2 and (run_dir / "build.log").is_file()
    assert "the build failed (exit 2)" in out


def test_a_build_that_times_out_is_stopped_and_every_step_is_error(tmp_path):
    marker = tmp_path / "still-building"
    build = f"echo start; {shlex.quote(sys.executable)} -c 'import time; time.sleep(60)' {shlex.quote(str(marker))}"
    code, out, run_dir, res = _run(tmp_path, _plan(tmp_path, build,
                                                   build_timeout_s=1))
    assert code == 1
    for s in res["steps"]:
        assert s["verdict"] == "ERROR" and "the build failed (timed out after 1s)" in s["reason"], s
    assert wait_unmarked(marker, timeout=5, parts=("cmdline",)) == []  # the build and what it started are gone
    assert not (tmp_path / "app.pid").exists()
    assert json.loads((run_dir / "manifest.json").read_text())["build"]["timed_out"] is True


def test_history_shows_a_failed_build_as_a_build_failure_not_as_step_failures(tmp_path, capsys):
    toggle = tmp_path / "broken"
    artifact = shlex.quote(str(tmp_path / "artifact.txt"))
    plan = _plan(tmp_path, f"test ! -e {shlex.quote(str(toggle))} && touch {artifact}")
    assert _run(tmp_path, plan)[0] == 0
    assert _run(tmp_path, plan)[0] == 0
    toggle.write_text("yes")
    code, _, broken, _ = _run(tmp_path, plan)
    assert code == 1
    assert main(["history", str(tmp_path / "runs" / "built"), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [b["run"] for b in doc["build_failures"]] == [broken.name]
    assert "the build failed (exit 1)" in doc["build_failures"][0]["why"]
    assert doc["new_failures"] == [] and len(doc["runs"]) == 2
    assert main(["history", str(tmp_path / "runs" / "built")]) == 0
    out = capsys.readouterr().out
    assert f"skipped {broken.name}: stopped early: the build failed (exit 1)" in " ".join(out.split())


@pytest.mark.parametrize("build, why", [("", "invalid 'build'"), ("make", None)])
def test_check_takes_app_build(tmp_path, build, why):
    plan = write_plan(tmp_path / "p.yaml", {"app": {"build": build, "build_timeout_s": 30},
                                            "steps": [{"id": "a", "do": "x"}]})
    code, out, err = run_cli(["check", plan], env=base_cli_env())
    if why is None:
        assert code == 0, err
    else:
        assert code == 2 and why in err, err
