"""Agents that fight the grader: isolation of the agent and the end of every agent process with its step.

Each hostile agent is a real program under tests/support/agents/hostile/, copied into the test's
folder (reachable by the agent's account). A test runs it under the default isolation (`auto`)
and, where the host allows, under each explicit mode; on a host with no isolation at all (not
root, no working bwrap) the isolated cases skip, saying why. Controls under `isolation: none`
show the attacks are real: the same agent succeeds there.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.runner.runner_helpers import kill_marked, marked_pids, wait_unmarked

HOSTILE = ROOT / "tests" / "support" / "agents" / "hostile"
SECRETS = {"AWS_SECRET_ACCESS_KEY": "aws-iso-5c1d7e0b9a", "DATABASE_URL": "postgresql://app:dbpw-iso-77aa1e@db/app",
           "OPENAI_API_KEY": "sk-iso-2b8e44c19f"}
IS_ROOT = os.geteuid() == 0


def _bwrap_problem() -> str | None:
    exe = shutil.which("bwrap")
    if exe is None:
        return "bwrap is not installed"
    proc = subprocess.run([exe, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-pid", "true"],
                          capture_output=True, text=True, timeout=30)
    return None if proc.returncode == 0 else f"bwrap cannot make a sandbox here: {proc.stderr.strip()}"


BWRAP_PROBLEM = _bwrap_problem()


def _cgroup_v2_writable() -> bool:
    """Whether the runner makes a cgroup per step on this host (its own check, so the two never disagree)."""
    from referee.runner.reaper import cgroup_base

    return cgroup_base() is not None


def mode_param(mode: str):
    """A pytest param for an isolation mode, skipped (with the reason) where this host cannot isolate so."""
    why = None
    if mode == "user" and not IS_ROOT:
        why = "user isolation needs the runner to be root"
    elif mode == "bwrap" and BWRAP_PROBLEM:
        why = BWRAP_PROBLEM
    elif mode == "auto" and not IS_ROOT and BWRAP_PROBLEM:
        why = f"no isolation on this host: not root, and {BWRAP_PROBLEM}"
    return pytest.param(mode, id=mode, marks=[pytest.mark.skipif(why is not None, reason=why or "")])


MODES = [mode_param(m) for m in ("auto", "user", "bwrap")]


def agent(tmp_path: Path, name: str) -> str:
    """Copy a hostile agent into the test's folder (reachable by the agent's account); its command line."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    bin_dir.chmod(0o755)
    dst = bin_dir / name
    shutil.copyfile(HOSTILE / name, dst)
    dst.chmod(0o755)
    return f"/bin/sh {dst}" if name.endswith(".sh") else str(dst)


def actor(command: str, mode: str, **extra) -> dict:
    spec = {"kind": "command", "command": command, **extra}
    if mode != "auto":  # auto is the default: the plan says nothing
        spec["isolation"] = mode
    return spec


def isolation_of(run) -> dict:
    iso = run.manifest.get("isolation")
    assert iso, f"no isolation recorded in the manifest\n{run.explain()}"
    return iso


def assert_isolated(run, mode: str) -> dict:
    iso = isolation_of(run)
    assert iso["mode"] in ("user", "bwrap"), f"the agent ran unisolated: {iso}"
    if mode != "auto":
        assert iso["mode"] == mode, iso
    elif IS_ROOT:
        assert iso["mode"] == "user", f"as root, auto must isolate as another user here: {iso}"
    return iso


# ------------------------------------------------------------ the run directory is not the agent's


def _tamper_plan(command_actor: dict) -> dict:
    return {"name": "tamper", "actor": command_actor, "steps": [
        {"id": "first", "do": "Say hello.",
         "capture": [{"kind": "command", "name": "reply", "command": "echo ok"}],
         "validators": [{"kind": "text_contains", "evidence": "out.txt", "text": "hello"},
                        {"kind": "text_contains", "evidence": "reply", "text": "ok"}]},
        {"id": "second", "do": "Rewrite the run directory.",
         "validators": [{"kind": "command_exit_code", "command": "true"}]},
    ]}


@pytest.mark.parametrize("mode", MODES)
def test_an_isolated_agent_cannot_rewrite_the_run_directory(tmp_path, run_plan, mode):
    run = run_plan(_tamper_plan(actor(agent(tmp_path, "tamper.sh"), mode)))
    assert run.run_dir is not None, run.explain()
    assert_isolated(run, mode)
    report = (run.run_dir / "agent/second/report.txt").read_text().splitlines()
    assert len(report) == 8, report  # every attempt was made
    assert not [line for line in report if line.startswith("wrote")], f"the agent wrote into the run: {report}"
    plan_text = (run.run_dir / "plan.yaml").read_text()
    assert "forged" not in plan_text and "name: tamper" in plan_text
    for name in ("manifest.json", "claims.json", "evidence/first/after/reply.json", "agent/first/out.txt"):
        assert "forged" not in (run.run_dir / name).read_text(), name
    assert not (run.run_dir / "cache/ocr.json").exists() or "forged" not in (run.run_dir / "cache/ocr.json").read_text()
    assert not (run.run_dir / "new-file.txt").exists() and not (run.run_dir / "plan.old").exists()
    assert run.verdict("first") == "PASS", run.explain()  # its evidence was not touched
    # its claim file was writable (the only file outside its folder the protocol names)
    assert run.step("second")["claim"] == {"pass": True, "note": "all good", "evidence": []}


def test_control_an_unisolated_agent_does_rewrite_the_run_directory(tmp_path, run_plan):
    run = run_plan(_tamper_plan(actor(agent(tmp_path, "tamper.sh"), "none")))
    assert run.run_dir is not None, run.explain()
    report = (run.run_dir / "agent/second/report.txt").read_text()
    assert "wrote evidence/first/after/reply.json" in report, report  # the attack is real
    assert isolation_of(run)["mode"] == "none"


# ------------------------------------------------------------ every agent process ends with its step


def _daemon_plan(command_actor: dict) -> dict:
    return {"name": "daemon", "actor": command_actor, "steps": [
        {"id": "plant", "do": "Leave a daemon behind.",
         "validators": [{"kind": "command_exit_code", "command": "true"}]},
        {"id": "later", "do": "Say hello.", "validators": [{"kind": "text_contains", "evidence": "out.txt",
                                                            "text": "hello"}]},
    ]}


def _assert_daemon_gone(run, tmp_path: Path) -> None:
    assert run.run_dir is not None, run.explain()
    ticks = tmp_path / "ticks.log"
    assert ticks.exists() and ticks.stat().st_size > 0, "the daemon never ran"
    assert not wait_unmarked(tmp_path, 5), "an agent process outlived its step"
    size = ticks.stat().st_size
    time.sleep(0.6)
    assert ticks.stat().st_size == size, "the daemon is still ticking after the run"
    assert run.verdict("later") == "PASS", run.explain()  # no daemon was left to spoil the later step
    assert (run.run_dir / "agent/later/out.txt").read_text() == "hello\n"


@pytest.mark.parametrize("mode", MODES)
def test_a_double_forked_daemon_is_gone_when_its_step_ends(tmp_path, run_plan, mode):
    try:
        run = run_plan(_daemon_plan(actor(agent(tmp_path, "daemon.sh"), mode)), timeout=90)
        _assert_daemon_gone(run, tmp_path)
        iso = assert_isolated(run, mode)
        if iso["mode"] == "user":  # bwrap's pid namespace may take it down before the runner counts
            assert run.manifest["steps"]["plant"]["actor_killed"] >= 1, run.manifest["steps"]["plant"]
    finally:
        kill_marked(tmp_path)


@pytest.mark.parametrize("mode", [mode_param("user"), mode_param("bwrap")])
def test_a_daemon_is_gone_without_cgroups_too(tmp_path, run_plan, cli_env, mode):
    """Where the runner may not make cgroups: the agent's uid (user) or its pid namespace (bwrap) find it."""
    try:
        run = run_plan(_daemon_plan(actor(agent(tmp_path, "daemon.sh"), mode)), timeout=90,
                       env={**cli_env, "REFEREE_CGROUP": "off"})
        _assert_daemon_gone(run, tmp_path)
        assert isolation_of(run)["tracking"] == {"user": "uid", "bwrap": "pidns"}[mode]
    finally:
        kill_marked(tmp_path)


@pytest.mark.skipif(not _cgroup_v2_writable(), reason="this host does not let the runner make cgroups")
def test_a_daemon_of_an_unisolated_agent_is_gone_too(tmp_path, run_plan):
    """With a cgroup per step even `isolation: none` ends every process (without one it cannot promise it)."""
    try:
        run = run_plan(_daemon_plan(actor(agent(tmp_path, "daemon.sh"), "none")), timeout=90)
        _assert_daemon_gone(run, tmp_path)
        assert isolation_of(run) | {"note": ""} == {"mode": "none", "requested": "none", "note": "", "user": None,
                                                    "tracking": "cgroup", "limits": None}
    finally:
        kill_marked(tmp_path)


@pytest.mark.skipif(not IS_ROOT or not _cgroup_v2_writable(), reason="needs root and cgroups the runner may make")
def test_agents_of_a_runner_killed_with_sigkill_are_ended_by_the_next_run(tmp_path, cli_env, run_plan):
    """SIGKILL gives the runner no chance to end its agent; the next run on the host ends it.

    Both runs go in a cgroup of this test's own: a run sweeps the step cgroups of dead runners next to it, so any
    other run on the host (another test, another suite) would otherwise end the orphans first."""
    from referee.runner.reaper import _cgroup2_dir

    group = _cgroup2_dir() / f"tests-orphans-{os.getpid()}-{tmp_path.name}"  # not referee-*: nobody else's to sweep
    group.mkdir()

    def join_group() -> None:
        (group / "cgroup.procs").write_text(str(os.getpid()))

    plan_path = tmp_path / "sleepy.yaml"
    plan_path.write_text(json.dumps({"name": "sleepy", "actor": actor(agent(tmp_path, "term_ignorer.sh"), "user"),
                                     "steps": [{"id": "s", "do": "Never finish."}]}))
    proc = subprocess.Popen([sys.executable, "-m", "referee.cli.main", "run", str(plan_path), "--out",
                             str(tmp_path / "out")], cwd=tmp_path, env=cli_env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True, preexec_fn=join_group)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not list(tmp_path.glob("out/*/*/agent/s/stdout.txt")) \
                and len(marked_pids(tmp_path)) < 3:
            time.sleep(0.05)
        assert len(marked_pids(tmp_path)) >= 3, "the agent never started"
        # looked for while the runner lives: under xdist another file's run may start, as any next run does,
        # and end the orphans and their home soon after the kill
        homes = list(Path(tempfile.gettempdir()).glob(f"referee-agent-home-{proc.pid}-*"))
        assert homes, "the runner's agent home is not where it should be"
        proc.kill()
        proc.wait(10)
        time.sleep(0.1)  # a death signal tied to the runner would have ended them by now
        assert marked_pids(tmp_path), "the agent died with the runner: nothing left to test"
        later_plan = tmp_path / "later.yaml"
        later_plan.write_text(json.dumps(_thief_plan(actor(agent(tmp_path, "well_behaved.sh"), "user"))))
        later = subprocess.run([sys.executable, "-m", "referee.cli.main", "run", str(later_plan), "--out",
                                str(tmp_path / "later")], cwd=tmp_path, env=cli_env, capture_output=True, text=True,
                               timeout=120, preexec_fn=join_group)
        assert later.returncode in (0, 1), later.stdout + later.stderr
        assert not wait_unmarked(tmp_path, 5), "the next run left the orphaned agent running"
        assert not [h for h in homes if h.exists()], "the next run left the dead runner's agent home"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        kill_marked(tmp_path)
        for _ in range(100):  # empty once what was in it is gone
            try:
                for d in group.glob("referee-*"):
                    d.rmdir()
                group.rmdir()
                break
            except OSError:
                time.sleep(0.05)


@pytest.mark.parametrize("mode", MODES)
def test_an_agent_that_ignores_sigterm_ends_at_its_timeout(tmp_path, run_plan, mode):
    plan = {"name": "stubborn", "actor": actor(agent(tmp_path, "term_ignorer.sh"), mode, timeout_s=1), "steps": [
        {"id": "s", "do": "Never finish.", "validators": [{"kind": "command_exit_code", "command": "true"}]}]}
    try:
        run = run_plan(plan, timeout=60)
        assert run.run_dir is not None, run.explain()
        # ended by its timeout (SIGTERM, ignored, then SIGKILL after the grace): the run goes on to grade
        rec = run.manifest["steps"]["s"]
        assert rec["actor_timed_out"] is True and rec["status"] == "done", rec
        assert "timed out after 1s" in (rec["actor_error"] or ""), rec
        assert not wait_unmarked(tmp_path, 5), "a SIGTERM-ignoring agent process survived"
        assert (run.run_dir / "agent/s/stdout.txt").read_text() == "started\n"
        assert_isolated(run, mode)
    finally:
        kill_marked(tmp_path)


@pytest.mark.parametrize("mode", MODES)
def test_a_grandchild_holding_stdout_does_not_block_the_step(tmp_path, run_plan, mode):
    plan = {"name": "holder", "actor": actor(agent(tmp_path, "stdout_holder.sh"), mode, timeout_s=60), "steps": [
        {"id": "s", "do": "Finish at once.", "validators": [{"kind": "command_exit_code", "command": "true"}]}]}
    try:
        run = run_plan(plan, timeout=60)
        assert run.run_dir is not None, run.explain()
        # the agent's own exit ended the step: not the grandchild's end (sleep 1000), nor the timeout of 60 s
        rec = run.manifest["steps"]["s"]
        assert rec["actor_exit"] == 0 and rec["actor_timed_out"] is False, rec
        assert (run.run_dir / "agent/s/stdout.txt").read_text() == "done quickly\n"
        assert not wait_unmarked(tmp_path, 5), "the grandchild outlived the step"
        assert run.verdict("s") == "PASS", run.explain()
        assert_isolated(run, mode)
    finally:
        kill_marked(tmp_path)


# ------------------------------------------------------------ the runner's environment stays the runner's


def _thief_plan(command_actor: dict) -> dict:
    return {"name": "thief", "actor": command_actor, "steps": [
        {"id": "s", "do": "Look around.", "validators": [{"kind": "command_exit_code", "command": "true"}]}]}


def _loot(run) -> str:
    return "\n".join(p.read_text(errors="replace") for p in run.run_dir.rglob("*") if p.is_file())


@pytest.mark.parametrize("mode", MODES)
def test_an_isolated_agent_cannot_read_the_runners_environment_from_proc(tmp_path, run_plan, cli_env, mode):
    # the runner in a process of its own, started with the secrets: the thief reads /proc/PID/environ
    run = run_plan(_thief_plan(actor(agent(tmp_path, "environ_thief.sh"), mode)), env={**cli_env, **SECRETS},
                   process=True)
    assert run.run_dir is not None, run.explain()
    assert (run.run_dir / "agent/s/loot.txt").exists(), "the thief did not run"
    everything = _loot(run)
    for key, value in SECRETS.items():
        assert value not in everything, f"the agent read the runner's {key}"
    assert_isolated(run, mode)


def test_control_an_unisolated_agent_does_read_the_runners_environment(tmp_path, run_plan, cli_env):
    run = run_plan(_thief_plan(actor(agent(tmp_path, "environ_thief.sh"), "none")), env={**cli_env, **SECRETS},
                   process=True)
    assert run.run_dir is not None, run.explain()
    assert SECRETS["OPENAI_API_KEY"] in (run.run_dir / "agent/s/loot.txt").read_text()  # the attack is real


def _key_plan(command_actor: dict) -> dict:
    return {"name": "keys", "actor": command_actor, "steps": [
        {"id": "s", "do": "Look around.", "validators": [{"kind": "command_exit_code", "command": "true"}]}]}


@pytest.mark.parametrize("mode", MODES)
def test_an_isolated_agent_cannot_read_the_runners_signing_key(tmp_path, run_plan, cli_env, mode):
    key = Path(cli_env["REFEREE_KEY_FILE"])
    run = run_plan(_key_plan(actor(agent(tmp_path, "key_thief.sh"), mode, env={"KEY_PATH": str(key)})))
    assert run.run_dir is not None and key.is_file(), run.explain()
    assert (run.run_dir / "agent/s/claim.json").exists(), "the thief did not run"
    assert key.read_bytes().strip() not in _loot(run).encode(), "the agent copied the signing key"
    # nor was a copy found (and removed) by the runner, which keeps no file holding the key
    assert "signing key" not in (run.manifest["steps"]["s"]["actor_error"] or ""), run.manifest["steps"]["s"]
    assert_isolated(run, mode)


def test_control_an_unisolated_agent_does_read_the_signing_key(tmp_path, run_plan, cli_env):
    key = Path(cli_env["REFEREE_KEY_FILE"])
    run = run_plan(_key_plan(actor(agent(tmp_path, "key_thief.sh"), "none", env={"KEY_PATH": str(key)})))
    assert run.run_dir is not None, run.explain()
    # the attack is real: the runner found the key's bytes in the agent's file; it removed it, so the run
    # directory (shared, an artifact) does not carry the key on
    why = run.manifest["steps"]["s"]["actor_error"] or ""
    assert "agent/s/key.txt: holds the runner's signing key; removed" in why, why
    assert not (run.run_dir / "agent/s/key.txt").exists()
    assert key.read_bytes().strip() not in _loot(run).encode()


# ------------------------------------------------------------ the Python actor cannot touch the grader


def test_a_python_agent_that_replaces_the_grader_gains_nothing(tmp_path, run_plan):
    shutil.copyfile(HOSTILE / "grader_patch.py", tmp_path / "grader_patch.py")
    (tmp_path / "grader_patch.py").chmod(0o644)
    plan = {"name": "patcher", "actor": {"kind": "python", "target": "grader_patch:Patcher"}, "steps": [
        {"id": "s", "do": "Make never-made.txt.", "validators": [{"kind": "file_exists", "path": "never-made.txt"}]}]}
    run = run_plan(plan)
    step = run.step("s")
    assert step["claim"] == {"pass": True, "note": "all done", "evidence": []}, "the agent did not act"
    assert step["verdict"] == "FAIL", run.explain()
    assert step["overclaim"] is True
    assert "trust me" not in json.dumps(run.results)
    assert run.rc == 1


# ------------------------------------------------------------ output, and agents that never start


def test_agent_output_is_kept_bounded_and_replaces_what_the_agent_planted(tmp_path, run_plan):
    victim = tmp_path / "victim.txt"
    victim.write_text("untouched\n")
    victim.chmod(0o666)
    plan = {"name": "output", "actor": actor(agent(tmp_path, "output_planter.sh"), "auto"), "steps": [
        {"id": "s", "do": "Talk a lot.", "validators": [{"kind": "command_exit_code", "command": "true"}]}]}
    run = run_plan(plan)
    assert run.run_dir is not None, run.explain()
    assert victim.read_text() == "untouched\n", "the runner wrote through the agent's link"
    out, err = run.run_dir / "agent/s/stdout.txt", run.run_dir / "agent/s/stderr.txt"
    assert out.is_file() and not out.is_symlink() and err.is_file()
    data = out.read_bytes()
    assert len(data) == 1 << 20 and data.endswith(b"xxxxEND\n"), (len(data), data[-20:])
    assert err.read_text() == "a line on stderr\n"
    rec = run.manifest["steps"]["s"]
    assert rec["stdout_bytes"] == 3 * (1 << 20) + 4 and rec["stderr_bytes"] == 17, rec
    files = {f["path"]: f for f in run.manifest["files"]}
    assert files["agent/s/stdout.txt"]["kind"] == "agent_stdout", files.get("agent/s/stdout.txt")
    assert files["agent/s/stderr.txt"]["kind"] == "agent_stderr"


def test_an_agent_that_cannot_be_started_makes_its_step_error(tmp_path, run_plan):
    # a missing one is refused before the run starts (issue 34, tests/runner/test_plan_mistakes.py)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(mode=0o755)
    cmd = bin_dir / "agent"
    cmd.write_text("#!/bin/sh\necho hi\n")
    cmd.chmod(0o644)
    plan = {"name": "nobody", "actor": {"kind": "command", "command": str(cmd)}, "steps": [
        {"id": "s", "do": "Anything.", "validators": [{"kind": "command_exit_code", "command": "true"}]}]}
    run = run_plan(plan)
    assert run.run_dir is not None, run.explain()
    step = run.step("s")
    assert step["verdict"] == "ERROR", run.explain()  # `true` holds, but nobody acted
    assert "could not be started" in step["reason"], step["reason"]
    assert run.manifest["steps"]["s"]["actor_started"] is False


# ------------------------------------------------------------ what the reports say

HELLO_STEP = {"id": "s", "do": "Say hello.",
              "validators": [{"kind": "text_contains", "evidence": "out.txt", "text": "hello"}]}


def test_isolation_none_is_recorded_and_shown_as_unisolated(tmp_path, run_plan, referee_cli):
    plan = {"name": "plain", "actor": actor(agent(tmp_path, "well_behaved.sh"), "none"), "steps": [HELLO_STEP]}
    run = run_plan(plan)
    assert run.verdict("s") == "PASS", run.explain()
    iso = isolation_of(run)
    assert iso["mode"] == "none" and iso["requested"] == "none" and "isolation: none" in iso["note"], iso
    assert "UNISOLATED" in run.stdout, run.stdout
    assert "<b>UNISOLATED</b>" in (run.run_dir / "report.html").read_text()
    assert 'name="referee.isolation" value="unisolated"' in (run.run_dir / "junit.xml").read_text()
    rc, out, err = referee_cli("grade", str(run.run_dir), cwd=tmp_path)
    assert rc == 0 and "UNISOLATED" in out, (rc, out, err)


@pytest.mark.parametrize("mode", MODES)
def test_an_isolated_agent_has_a_home_a_temp_folder_and_its_workspace(tmp_path, run_plan, mode):
    plan = {"name": "plain", "actor": actor(agent(tmp_path, "well_behaved.sh"), mode), "steps": [HELLO_STEP]}
    run = run_plan(plan)
    assert run.verdict("s") == "PASS", run.explain()
    iso = assert_isolated(run, mode)
    adir = run.run_dir / "agent/s"
    assert (adir / "home.txt").read_text() == "ok\n", (adir / "stderr.txt").read_text()
    assert Path((adir / "cwd.txt").read_text().strip()).resolve() == tmp_path.resolve()
    if iso["mode"] == "user":
        assert (adir / "uid.txt").read_text().strip() != "0"
        assert re.fullmatch(r"referee-agent(-\d+)?", iso["user"]), iso  # one account per run going on
        # after the step its files are the runner's, so a later step cannot change them
        assert all(p.stat().st_uid == os.geteuid() for p in adir.iterdir())
    assert "UNISOLATED" not in run.stdout and "agent isolation:" in run.stdout
    assert 'name="referee.isolation" value="' + iso["mode"] + '"' in (run.run_dir / "junit.xml").read_text()


def test_an_explicit_mode_this_host_cannot_give_is_a_plan_error(tmp_path, run_plan):
    if IS_ROOT and not BWRAP_PROBLEM:
        pytest.skip("this host gives every mode")
    mode = "bwrap" if BWRAP_PROBLEM else "user"
    plan = {"name": "cannot", "actor": actor("/bin/true", mode), "steps": [{"id": "s", "do": "x"}]}
    run = run_plan(plan)
    assert run.rc == 2 and run.run_dir is None, run.explain()
    assert f"actor.isolation: {mode}" in run.stderr and "Traceback" not in run.stderr



@pytest.mark.parametrize("module", ["referee", "referee.cli.main"])
def test_a_runner_started_with_python_m_imports_nothing_the_agent_left_in_the_working_directory(tmp_path, cli_env,
                                                                                                 module):
    """`python -m referee run` puts the working directory (the agent's workspace) first on sys.path; a module
    the agent leaves there under the name of one the runner imports after the step (`html`, for the report)
    would run as the runner's user. Proof: the planted module would write a file next to the workspace."""
    marker = tmp_path.parent / f"planted-ran-{tmp_path.name}"
    payload = f"open({str(marker)!r}, 'w').write('ran')\nraise ImportError('planted')\n"
    script = tmp_path / "plant.sh"
    script.write_text("#!/bin/sh\n" + "".join(f"cat > {tmp_path}/{m}.py <<'EOF'\n{payload}EOF\n"
                                               for m in ("html", "_markupbase", "yaml", "rich")))
    plan = tmp_path / "p.yaml"
    plan.write_text(json.dumps({"name": "plant", "actor": {"kind": "command", "command": f"sh {script}"},
                                "steps": [{"id": "s", "do": "x",
                                           "validators": [{"kind": "file_exists", "path": "/etc/hostname"}]}]}))
    try:
        cmd = [sys.executable, "-m", module, "run", str(plan), "--out", str(tmp_path / "runs")]
        proc = subprocess.run(cmd, cwd=tmp_path, env=cli_env, capture_output=True, text=True, timeout=120)
        assert (tmp_path / "html.py").exists(), proc.stderr
        assert not marker.exists(), f"a module the agent planted ran in the runner:\n{proc.stderr[-2000:]}"
        assert proc.returncode == 0, proc.stdout + proc.stderr
    finally:
        marker.unlink(missing_ok=True)


@pytest.mark.parametrize("module", ["referee", "referee.cli.main"])
def test_python_m_referee_started_later_in_the_workspace_imports_nothing_the_agent_left_there(tmp_path, cli_env,
                                                                                               module):
    """A user who re-grades with `python -m referee grade` from the agent's workspace: the working directory
    is first on sys.path from the start, and referee's own first imports (`re`, `typing`, `dataclasses`, ...)
    came before the CLI took it off. (Python's runpy imports a few more itself, `collections` among them,
    before any of referee runs: security-isolation.md says to use the `referee` script or `python -P`.)"""
    marker = tmp_path.parent / f"planted-early-{tmp_path.name}"
    payload = f"open({str(marker)!r}, 'a').write(__name__ + ' ')\nraise ImportError('planted')\n"
    for name in ("re", "typing", "dataclasses", "enum", "inspect", "click", "yaml", "pydantic"):
        (tmp_path / f"{name}.py").write_text(payload)
    try:
        proc = subprocess.run([sys.executable, "-m", module, "grade", str(tmp_path / "no-such-run")], cwd=tmp_path,
                              env=cli_env, capture_output=True, text=True, timeout=60)
        assert not marker.exists(), f"planted modules ran in referee: {marker.read_text()}\n{proc.stderr[-2000:]}"
        assert proc.returncode == 2 and "no-such-run" in proc.stderr, proc.stderr
    finally:
        marker.unlink(missing_ok=True)


@pytest.mark.parametrize("name", ["referee.runner.agentproc", "referee.runner.isolation", "referee.runner.reaper",
                                  "referee.report.console"])
def test_doctests(name):
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0 and result.attempted > 0


@pytest.mark.skipif(not IS_ROOT, reason="user isolation needs the runner to be root")
def test_a_relative_out_keeps_user_isolation(tmp_path, cli_env):
    """`--out runs` (relative) made the user-isolation probe look for `runs/.../agent` from elsewhere, fail,
    and drop to bwrap with a note: the agent ran with less isolation than the same run with an absolute --out."""
    from tests.conftest import run_cli

    tmp_path.chmod(0o755)
    plan = tmp_path / "plan.yaml"
    plan.write_text("version: 1\nname: rel\nsteps:\n  - id: a\n    do: say who you are\n    validators:\n"
                    "      - kind: command_exit_code\n        command: 'true'\n")
    rc, out, err = run_cli(["run", "plan.yaml", "--agent", "id -un", "--out", "runs"], cwd=tmp_path, env=cli_env)
    assert rc == 0, out + err
    assert re.search(r"agent isolation: user as referee-agent\b", out) and "user isolation: cannot" not in out, out
    (stdout,) = list((tmp_path / "runs").rglob("agent/a/stdout.txt")) or list((tmp_path / "runs").rglob("stdout.txt"))
    assert re.fullmatch(r"referee-agent(-\d+)?", stdout.read_text().strip())


@pytest.mark.parametrize("mode", MODES)
def test_an_isolated_agent_cannot_read_the_users_default_key_when_another_is_active(tmp_path, run_plan, cli_env,
                                                                                       mode):
    # REFEREE_KEY_FILE names this run's key; the user's default key signs their other runs and was left readable
    # in the bwrap sandbox (only the active key was hidden)
    config = tmp_path / "config"
    default = config / "referee" / "key"
    default.parent.mkdir(parents=True, mode=0o700)
    default.write_text(os.urandom(32).hex())
    default.chmod(0o600)
    env = {**cli_env, "XDG_CONFIG_HOME": str(config)}
    run = run_plan(_key_plan(actor(agent(tmp_path, "key_thief.sh"), mode, env={"KEY_PATH": str(default)})), env=env)
    assert run.run_dir is not None, run.explain()
    assert (run.run_dir / "agent/s/claim.json").exists(), "the thief did not run"
    assert default.read_text() not in _loot(run), "the agent copied the user's default signing key"
    assert_isolated(run, mode)


@pytest.mark.parametrize("mode", MODES)
def test_an_isolated_agent_and_its_command_captures_have_no_new_privs(tmp_path, run_plan, mode):
    """security-isolation.md: no_new_privs, so a setuid program gives the agent nothing. The launcher imported
    ctypes after dropping to the agent's account, which cannot read an interpreter under /root: the import
    failed, was ignored, and agents ran with NoNewPrivs 0 (a setuid copy of a shell let one run's agent act as
    another run's account)."""
    script = tmp_path / "nnp.sh"
    script.write_text('#!/bin/sh\ngrep NoNewPrivs /proc/self/status > "$REFEREE_AGENT_DIR/nnp.txt"\n'
                      'echo \'{"pass": true}\' > "$REFEREE_CLAIM_FILE"\n')
    script.chmod(0o755)
    plan = {"name": "nnp", "actor": actor(f"sh {script}", mode), "steps": [
        {"id": "s", "do": "x",
         "capture": [{"kind": "command", "name": "cap", "command": "grep NoNewPrivs /proc/self/status"}],
         "validators": [{"kind": "text_contains", "evidence": "cap", "text": "NoNewPrivs:\t1"}]}]}
    run = run_plan(plan)
    assert run.run_dir is not None, run.explain()
    iso = assert_isolated(run, mode)
    assert (run.run_dir / "agent/s/nnp.txt").read_text().split() == ["NoNewPrivs:", "1"], iso
    assert run.verdict("s") == "PASS", run.explain()  # the command capture, run as the agent, too


@pytest.mark.parametrize("mode", MODES)
def test_a_key_beside_the_active_one_is_hidden_from_the_agent_too(tmp_path, run_plan, cli_env, mode):
    """bwrap hid the active key file alone; a bwrap agent is the runner's user (root), so another key in the same
    folder (a CI key other runs use) was its to read. The key folders are now empty in the sandbox."""
    active = Path(cli_env["REFEREE_KEY_FILE"])
    sibling = active.parent / f"sibling-{tmp_path.name}.key"
    sibling.write_text(os.urandom(32).hex())
    sibling.chmod(0o600)
    try:
        run = run_plan(_key_plan(actor(agent(tmp_path, "key_thief.sh"), mode, env={"KEY_PATH": str(sibling)})))
        assert run.run_dir is not None, run.explain()
        assert (run.run_dir / "agent/s/claim.json").exists(), "the thief did not run"
        assert sibling.read_text() not in _loot(run), "the agent copied a key kept beside the active one"
        assert_isolated(run, mode)
    finally:
        sibling.unlink()
