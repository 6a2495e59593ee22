"""Bugs found by black-box hunting of the runner (`referee run`, `referee check`, `-j N`) as a user and as a
hostile acting agent. Each test drives the CLI in a subprocess over real files, processes and loopback servers,
and fails on the code it was written against."""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.conftest import run_cli
from tests.runner.runner_helpers import (
    PY,
    VERDICTS,
    acting_agents,
    app_block,
    find_run_dirs,
    kill_quietly,
    marked_pids,
    wait_dead,
    wait_unmarked,
    write_plan,
)
from tests.support.signals import default_stop_signals


def _sh(tmp_path: Path, name: str, body: str) -> str:
    """An agent script (sh) in the test's folder; returns the command line that runs it."""
    path = tmp_path / name
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return f"sh {shlex.quote(str(path))}"


def _one_run(out: Path) -> Path:
    dirs = find_run_dirs(out)
    assert len(dirs) == 1, dirs
    return dirs[0]


def _verdicts(run_dir: Path) -> dict[str, str]:
    return {s["id"]: s["verdict"] for s in json.loads((run_dir / "results.json").read_text())["steps"]}


def _steps(run_dir: Path) -> dict[str, dict]:
    return {s["id"]: s for s in json.loads((run_dir / "results.json").read_text())["steps"]}


_NAMED = ("cmdline", "environ")  # a runner, an app or an agent names the test's folder in one or the other


# ------------------------------------------------------------------ -j N: one plan's agent and the other plans


def _three_plans(tmp_path: Path, first_agent: str, plan_dir: Path, a_done: str) -> list[str]:
    """Plan a (its agent is `first_agent`), b (an agent that acts until the shell test `a_done` holds: what a's
    agent does is done, at most 30 s) and c: with -j 2, c starts only after a has done it. b and c check a file
    that does not exist, so both FAIL unless something changed them."""
    plan_dir.mkdir(mode=0o1777, exist_ok=True)
    plan_dir.chmod(0o1777)
    slow = _sh(tmp_path, "slow.sh", f"i=0; while ! {a_done} && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done\n")
    missing = str(tmp_path / "never-made.txt")
    paths = []
    for name, agent in (("a", first_agent), ("b", slow), ("c", "true")):
        plan = {"name": f"plan-{name}", "actor": {"kind": "command", "command": agent},
                "steps": [{"id": "s1", "do": "nothing", "validators": [{"kind": "file_exists", "path": missing}]}]}
        p = write_plan(plan_dir / f"{name}.yaml", plan)
        p.chmod(0o666)  # plans kept in the workspace the agent works in (a repository it edits)
        paths.append(str(p))
    return paths


def test_minus_j_runs_the_plan_it_validated_not_one_an_agent_rewrote_meanwhile(tmp_path, cli_env):
    """`referee run a.yaml b.yaml c.yaml -j 2` validates every plan, then runs each in a child process that reads
    its plan file again: plan a's agent rewrites c.yaml (it lies in the workspace) before c starts, and c's
    step, which checks a file that does not exist, PASSes against /etc/hostname instead."""
    plan_dir = tmp_path / "plans"
    rewrite = _sh(tmp_path, "rewrite.sh",
                  f"c={shlex.quote(str(plan_dir))}/c.yaml\n"
                  f"new=$(sed 's#{tmp_path}/never-made.txt#/etc/hostname#' \"$c\")\n"
                  "printf '%s\\n' \"$new\" > \"$c\"\n")
    ps = _three_plans(tmp_path, rewrite, plan_dir, f"grep -q /etc/hostname {shlex.quote(str(plan_dir))}/c.yaml")
    rc, out, err = run_cli(["run", *ps, "-j", "2", "--out", str(tmp_path / "runs"), "--json"],
                           cwd=tmp_path, env=cli_env, timeout=120, process=True)
    runs = {r["plan"]: r for r in json.loads(out)["runs"]}
    assert set(runs) == {"plan-a", "plan-b", "plan-c"}, err
    assert "/etc/hostname" in Path(ps[2]).read_text(), "plan a's agent did not rewrite c.yaml"
    c_dir = Path(runs["plan-c"]["run_dir"])
    # the plan that was validated checks never-made.txt; that is the plan c must be graded by
    assert _verdicts(c_dir) == {"s1": "FAIL"}, (c_dir / "plan.yaml").read_text()
    assert rc == 1, err


def test_minus_j_child_runners_never_import_code_an_agent_left_in_the_working_directory(tmp_path, cli_env):
    """Each plan of `-j N` runs as `python -m referee ... run PLAN` started in the working directory, so
    Python puts that directory first on sys.path. The working directory is the agent's workspace (writable by it
    in user and bwrap isolation): plan a's agent leaves a `yaml.py` there, and plan c's runner imports it and
    runs it unsandboxed, as the runner's user (here: root, outside bwrap), where it could rewrite or re-seal
    anything. Proof: the planted module writes a file in a folder the agent itself cannot write."""
    marker = tmp_path.parent / f"planted-code-ran-{tmp_path.name}"
    payload = (f"import os\nopen({str(marker)!r}, 'w').write(str(os.getuid()))\n"
               "raise ImportError('planted module')\n")
    plant = _sh(tmp_path, "plant.sh", f"cat > {shlex.quote(str(tmp_path))}/yaml.py <<'EOF'\n{payload}EOF\n")
    ps = _three_plans(tmp_path, plant, tmp_path / "plans", f"[ -s {shlex.quote(str(tmp_path))}/yaml.py ]")
    try:
        rc, out, err = run_cli(["run", *ps, "-j", "2", "--out", str(tmp_path / "runs")],
                               cwd=tmp_path, env=cli_env, timeout=120, process=True)
        assert (tmp_path / "yaml.py").exists(), f"the agent did not plant its module: {err[-2000:]}"
        assert not marker.exists(), (f"code the agent left in the working directory ran in a runner process "
                                     f"(uid {marker.read_text()}):\n{err[-2000:]}")
        assert rc == 1, err[-2000:]  # each plan FAILs its own step; none crashed
    finally:
        marker.unlink(missing_ok=True)


# ------------------------------------------------------------------ what the agent leaves in its folder


def _two_steps() -> list[dict]:
    ok = [{"kind": "command_exit_code", "command": "true"}]
    return [{"id": "s1", "do": "make files", "validators": ok}, {"id": "s2", "do": "again", "validators": ok}]


@pytest.mark.parametrize("what", ["a file name that is not UTF-8", "folders nested 1100 deep"])
def test_what_an_agent_leaves_in_its_folder_never_crashes_the_run(tmp_path, cli_env, what):
    """An agent that leaves a file whose name is not UTF-8 (`bad\\xff.txt`) makes `referee run` stop with
    `internal error: PydanticSerializationError ... surrogates not allowed` (exit 3); one that leaves folders
    nested 1100 deep stops it with `internal error: RecursionError`. The steps after it are never performed: the
    agent has turned its grade into an internal error and wiped out the rest of the run."""
    if what.startswith("a file name"):
        body = '[ "$REFEREE_STEP_ID" = s1 ] && printf hi > "$REFEREE_AGENT_DIR/$(printf \'bad\\377.txt\')"\n'
    else:  # one mkdir -p: 1100 one-letter folders are a path within PATH_MAX
        body = ('if [ "$REFEREE_STEP_ID" = s1 ]; then cd "$REFEREE_AGENT_DIR" && '
                f'mkdir -p {"/".join(["d"] * 1100)} || exit 9; fi\n')
    agent = _sh(tmp_path, "leave.sh", body + 'echo \'{"pass": true}\' > "$REFEREE_CLAIM_FILE"\n')
    plan = write_plan(tmp_path / "plan.yaml", {"name": "leave", "steps": _two_steps()})
    try:
        rc, out, err = run_cli(["run", str(plan), "--agent", agent, "--out", str(tmp_path / "out")],
                               cwd=tmp_path, env=cli_env, timeout=120)
        assert "internal error" not in err and rc != 3, err[-2000:]
        run_dir = _one_run(tmp_path / "out")
        steps = _steps(run_dir)
        assert steps["s1"]["verdict"] in VERDICTS
        assert steps["s2"]["verdict"] == "PASS", steps["s2"]  # the next step was performed and graded as usual
    finally:  # shutil.rmtree (the session's cleanup) recurses once per level: remove the deep tree here
        subprocess.run(["rm", "-rf", str(tmp_path / "out")], check=False)


def test_an_isolated_agent_cannot_get_the_signing_key_copied_into_the_evidence(tmp_path, cli_env):
    """A `file_exists` validator on a file in the agent's workspace: the agent makes that path a symlink to the
    runner's signing key (0600, root's), the runner follows it and copies the key into
    evidence/<step>/after/NAME.data/, mode 0644, and the next step's isolated agent reads it from there.
    The docs promise an isolated agent cannot read the key (it could then seal forged run directories)."""
    key_file = Path(os.environ["REFEREE_KEY_FILE"])  # the suite's key; `referee run` makes it on first use
    target = tmp_path / "report.txt"
    agent = _sh(tmp_path, "steal.sh",
                f'if [ "$REFEREE_STEP_ID" = s1 ]; then ln -s {shlex.quote(str(key_file))} '
                f'{shlex.quote(str(target))}; fi\n'
                'if [ "$REFEREE_STEP_ID" = s2 ]; then find "$REFEREE_AGENT_DIR/../../evidence" -type f '
                '-exec cat {} + > "$REFEREE_AGENT_DIR/loot.txt" 2>/dev/null; fi\n'
                'echo \'{"pass": true}\' > "$REFEREE_CLAIM_FILE"\n')
    steps = [{"id": "s1", "do": "write report.txt",
              "validators": [{"kind": "file_exists", "path": str(target)}]},
             {"id": "s2", "do": "look around", "validators": [{"kind": "command_exit_code", "command": "true"}]}]
    plan = write_plan(tmp_path / "plan.yaml", {"name": "steal", "steps": steps})
    rc, out, err = run_cli(["run", str(plan), "--agent", agent, "--out", str(tmp_path / "out")],
                           cwd=tmp_path, env=cli_env, timeout=120)
    run_dir = _one_run(tmp_path / "out")
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["isolation"]["mode"] in ("user", "bwrap"), manifest["isolation"]
    key = key_file.read_bytes().strip()
    assert len(key) >= 32
    holding = [str(p.relative_to(run_dir)) for p in run_dir.rglob("*")
               if p.is_file() and not p.is_symlink() and key in p.read_bytes()]
    assert holding == [], f"the signing key was copied into the run directory: {holding}"


# ------------------------------------------------------------------ names the plan gives its captures


def test_a_capture_named_like_a_validators_own_capture_does_not_replace_it(tmp_path, cli_env):
    """A plan's capture named `_v0_command_exit_code` (a valid name) takes the place of the capture the runner
    makes for validator #0: `command_exit_code` with `command: "false"` is graded PASS from the plan's other
    command, `true`. `referee check` says ok."""
    plan = write_plan(tmp_path / "plan.yaml", {"name": "shadow", "steps": [{
        "id": "a", "do": "x",
        "capture": [{"kind": "command", "name": "_v0_command_exit_code", "command": "true"}],
        "validators": [{"kind": "command_exit_code", "command": "false"}]}]})
    rc, out, err = run_cli(["run", str(plan), "--agent", "true", "--out", str(tmp_path / "out")],
                           cwd=tmp_path, env=cli_env, timeout=60)
    assert rc != 0, f"`false` exits 1, yet the run passed:\n{out[-2000:]}"
    dirs = find_run_dirs(tmp_path / "out")
    if dirs:
        assert _verdicts(dirs[-1])["a"] != "PASS"


@pytest.mark.parametrize("captures", [
    [{"kind": "command", "name": "c", "command": "echo hi"},
     {"kind": "command", "name": "d", "command": "echo hi", "stdout_as": "c.json"}],
    [{"kind": "command", "name": "c", "command": "echo hi", "stdout_as": "c.json"}],
], ids=["another-captures-record", "its-own-record"])
def test_stdout_as_that_collides_with_a_record_is_caught_by_check(tmp_path, cli_env, captures):
    """`stdout_as: c.json` names the file of capture c's own record. `referee check` says ok; the run then
    overwrites one file with the other: with two captures the runner reports its own fresh evidence as
    `evidence/a/after/c.json was modified after capture` (a false tampering alarm, ERROR); with one, the
    manifest lists c.json twice and the command's output is lost (text_contains reads an empty stdout)."""
    plan = write_plan(tmp_path / "plan.yaml", {"name": "collide", "steps": [{
        "id": "a", "do": "x", "capture": captures,
        "validators": [{"kind": "command_exit_code", "evidence": "c"}]}]})
    rc_check, out_check, err_check = run_cli(["check", str(plan)], cwd=tmp_path, env=cli_env, timeout=60)
    if rc_check == 2:
        assert "stdout_as" in err_check and "Traceback" not in err_check, err_check
        return
    rc, out, err = run_cli(["run", str(plan), "--agent", "true", "--out", str(tmp_path / "out")],
                           cwd=tmp_path, env=cli_env, timeout=60)
    run_dir = _one_run(tmp_path / "out")
    manifest = json.loads((run_dir / "manifest.json").read_text())
    paths = [f["path"] for f in manifest["files"]]
    assert len(paths) == len(set(paths)), f"one file listed twice: {paths}"
    assert "modified after capture" not in out, out[-2000:]
    assert _verdicts(run_dir) == {"a": "PASS"} and rc == 0, f"check said ok, but:\n{out[-2000:]}"


# ------------------------------------------------------------------ numbers check lets through


@pytest.mark.parametrize("value", ["-1", "0", ".nan"])
def test_an_actor_timeout_that_is_not_a_positive_number_is_a_plan_error(tmp_path, cli_env, value):
    """`actor.timeout_s: -1` (or 0) passes `referee check`, and the run kills every agent at once
    (`timed out after -1s`): nobody acts, with no word of a plan mistake. `.nan` passes too, and means no
    timeout at all."""
    plan = tmp_path / "plan.yaml"
    plan.write_text(f'actor: {{kind: command, command: "true", timeout_s: {value}}}\n'
                    "steps:\n  - {id: a, do: x}\n")
    rc, out, err = run_cli(["check", str(plan)], cwd=tmp_path, env=cli_env, timeout=60)
    assert rc == 2, f"check accepted timeout_s: {value}\n{out}{err}"
    assert "timeout_s" in err and "plan.yaml:1:" in err and "Traceback" not in err, err


def test_a_huge_validator_timeout_is_a_plan_error_not_an_overflow_at_run_time(tmp_path, cli_env):
    """`command_exit_code` with `timeout_s: 1e308` passes `referee check`; the run's capture then fails with
    `OverflowError: cannot convert float infinity to integer` (ERROR, a Python exception in the reason)."""
    plan = tmp_path / "plan.yaml"
    plan.write_text("steps:\n  - id: a\n    do: x\n    validators:\n"
                    '      - {kind: command_exit_code, command: "true", timeout_s: 1e308}\n')
    rc_check, _, err_check = run_cli(["check", str(plan)], cwd=tmp_path, env=cli_env, timeout=60)
    if rc_check == 2:
        assert "timeout_s" in err_check and "Traceback" not in err_check, err_check
        return
    rc, out, err = run_cli(["run", str(plan), "--agent", "true", "--out", str(tmp_path / "out")],
                           cwd=tmp_path, env=cli_env, timeout=60)
    assert "OverflowError" not in out + err, out[-2000:]
    assert rc == 0 and _verdicts(_one_run(tmp_path / "out")) == {"a": "PASS"}, out[-2000:]


# ------------------------------------------------------------------ the app


def test_an_app_that_cannot_bind_its_port_is_not_replaced_by_whatever_answers_there(tmp_path, cli_env, test_app):
    """The plan's app listens on a fixed port another server already holds: the app dies at once
    (`OSError: [Errno 98] Address already in use`, in app.log), the ready URL is answered by the other server,
    and the whole plan is performed and graded against that server: PASS, exit 0, not a word about the app."""
    app = app_block(tmp_path / "mine.db")
    app["start"] = app["start"].replace("{port}", str(test_app.port))
    app["url"] = test_app.url
    plan = write_plan(tmp_path / "plan.yaml", {"name": "port", "app": app, "steps": [{
        "id": "s1", "do": "look", "validators": [{"kind": "http_status_eq", "url": "/health", "expected": 200}]}]})
    rc, out, err = run_cli(["run", str(plan), "--agent", "sleep 1", "--out", str(tmp_path / "out")],
                           cwd=tmp_path, env=cli_env, timeout=90)
    assert test_app.proc.poll() is None  # the other server is still the one on that port
    assert rc != 0, f"the plan's app never ran, yet:\n{out[-1500:]}{err[-1500:]}"
    dirs = find_run_dirs(tmp_path / "out")
    if dirs and (dirs[-1] / "results.json").exists():
        assert _verdicts(dirs[-1])["s1"] != "PASS"


# ------------------------------------------------------------------ signals to `referee run -j N`


def _sleepy_plans(tmp_path: Path) -> tuple[list[str], list[Path]]:
    paths, pidfiles = [], []
    for name in ("p1", "p2"):
        pidfile = tmp_path / f"{name}.pid"
        step = {"id": "s", "do": "wait", "validators": [{"kind": "http_status_eq", "url": "/health", "expected": 200}]}
        plan = {"name": name, "app": app_block(tmp_path / f"{name}.db", pidfile),
                "actor": {"kind": "command", "command": "sleep 30"}, "steps": [step, {**step, "id": "t"}]}
        paths.append(str(write_plan(tmp_path / f"{name}.yaml", plan)))
        pidfiles.append(pidfile)
    return paths, pidfiles


def _start_many(tmp_path: Path, cli_env: dict, ps: list[str]) -> subprocess.Popen:
    cmd = [PY, "-m", "referee.cli.main", "run", *ps, "-j", "2", "--out", str(tmp_path / "runs")]
    return subprocess.Popen(cmd, cwd=tmp_path, env=cli_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True, preexec_fn=default_stop_signals)


def _wait_apps(pidfiles: list[Path], tmp_path: Path, timeout: float = 30) -> list[int]:
    """The plans' app pids, once every app is up and every plan's agent (of its first step) is running, and a
    moment more: a stop signal that reaches a plan's runner while it is still in subprocess.Popen of its agent
    (which has exec'd already) leaves that agent untracked."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        written = all(p.exists() and p.read_text().strip() for p in pidfiles)
        if written and len(acting_agents(tmp_path)) >= len(pidfiles):
            time.sleep(0.3)
            return [int(p.read_text()) for p in pidfiles]
        time.sleep(0.05)
    raise AssertionError("the plans' apps and agents never started")


def _cleanup(proc: subprocess.Popen, tmp_path: Path) -> None:
    kill_quietly(proc.pid)
    for pid in marked_pids(tmp_path, _NAMED):
        kill_quietly(pid)


def test_sigterm_to_minus_j_stops_every_plans_runner_app_and_agent(tmp_path, cli_env):
    """SIGTERM to `referee run a.yaml b.yaml -j 2` (what CI and `kill` send) ends the parent at once, and leaves
    both plans' runners, their apps and their agents running, orphaned: the docs promise the app is stopped on
    SIGTERM, and a single-plan run does stop it."""
    ps, pidfiles = _sleepy_plans(tmp_path)
    proc = _start_many(tmp_path, cli_env, ps)
    try:
        app_pids = _wait_apps(pidfiles, tmp_path)
        os.kill(proc.pid, signal.SIGTERM)
        proc.communicate(timeout=60)
        left = wait_unmarked(tmp_path, 15, _NAMED)
        assert all(wait_dead(pid, 1) for pid in app_pids), "a plan's app outlived `referee run -j 2` on SIGTERM"
        assert left == [], f"processes of the run outlived it: {left}"
    finally:
        _cleanup(proc, tmp_path)


def test_sigint_to_minus_j_interrupts_the_plans_instead_of_waiting_for_them(tmp_path, cli_env):
    """SIGINT sent to the `referee run -j 2` process (not to its whole process group) is held until both plans
    have performed every step (about a minute here), then it exits 130 saying only `interrupted`. An interrupt
    should interrupt: the plans stop, their apps are stopped, and the run directories stay gradeable."""
    ps, pidfiles = _sleepy_plans(tmp_path)
    proc = _start_many(tmp_path, cli_env, ps)
    try:
        _wait_apps(pidfiles, tmp_path)
        t0 = time.monotonic()
        os.kill(proc.pid, signal.SIGINT)
        try:
            proc.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            pytest.fail(f"`referee run -j 2` was still running {time.monotonic() - t0:.0f}s after SIGINT")
        assert proc.returncode == 130
        assert wait_unmarked(tmp_path, 10, _NAMED) == []
    finally:
        _cleanup(proc, tmp_path)
