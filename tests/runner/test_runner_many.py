"""`referee run a.yaml b.yaml -j N` and `--executor dask`: plans at once, each with its own run directory, app and
port, one combined summary and the worst exit code."""

from __future__ import annotations

import json
import re
import shlex
import sys
from pathlib import Path

from tests.conftest import run_cli
from tests.runner.runner_helpers import acting_agents, app_block, write_plan

# an agent that notes when it started and stopped acting (to see plans overlap), then claims pass; it acts until
# the agents of all N plans have started (each leaves its plan's name in the folder BARRIER), at most 30 s: plans
# run at once overlap as soon as the last one starts, plans run one after another never do
AGENT = """\
import json, os, sys, time
p, barrier, n = os.environ['REFEREE_AGENT_DIR'], sys.argv[1], int(sys.argv[2])
t0 = time.time()
open(os.path.join(barrier, os.environ['REFEREE_PLAN']), 'w').close()
while len(os.listdir(barrier)) < n and time.time() < t0 + 30:
    time.sleep(0.02)
open(os.path.join(p, 'span'), 'w').write(f'{t0} {time.time()}')
open(os.environ['REFEREE_CLAIM_FILE'], 'w').write(json.dumps({'pass': True, 'note': 'done'}))
"""


def plans(tmp_path: Path, n: int, *, fail: int | None = None) -> list[str]:
    out = []
    for i in range(n):
        step = {"id": "check", "do": "look at the health page",
                "validators": [{"kind": "http_status_eq", "url": "/health", "expected": 404 if i == fail else 200}]}
        plan = {"name": f"plan-{i}", "app": app_block(tmp_path / f"app{i}.db"), "steps": [step]}
        out.append(str(write_plan(tmp_path / f"p{i}.yaml", plan)))
    return out


def agent(tmp_path: Path, n: int) -> str:
    """The command line of AGENT for `n` plans at once (its barrier folder in tmp_path, writable by every agent)."""
    barrier = tmp_path / "started"
    barrier.mkdir(mode=0o1777)
    barrier.chmod(0o1777)
    return " ".join(shlex.quote(str(a)) for a in (sys.executable, "-c", AGENT, barrier, n))


def spans(runs: list[dict]) -> list[tuple[float, float]]:
    got = []
    for r in runs:
        a, b = (Path(r["run_dir"]) / "agent" / "check" / "span").read_text().split()
        got.append((float(a), float(b)))
    return got


def ports(runs: list[dict]) -> set[str]:
    """The app port each run's runner captured from (read in its own evidence files)."""
    got = set()
    for r in runs:
        text = " ".join(f.read_text() for f in Path(r["run_dir"], "evidence").rglob("*.json"))
        found = set(re.findall(r"127\.0\.0\.1:(\d+)", text))
        assert len(found) == 1, found
        got |= found
    return got


def test_plans_run_at_once_each_with_its_own_run_directory_app_and_port(tmp_path, cli_env):
    ps = plans(tmp_path, 3, fail=1)
    rc, out, err = run_cli(["run", *ps, "-j", "3", "--agent", agent(tmp_path, 3), "--out", str(tmp_path / "runs"),
                            "--json"], cwd=tmp_path, env=cli_env, timeout=120, process=True)
    assert rc == 1, err  # the worst plan's code: plan-1 expects a 404 from a page that answers 200
    runs = json.loads(out)["runs"]
    assert [r["plan"] for r in runs] == ["plan-0", "plan-1", "plan-2"]  # in the order given
    assert len({r["run_dir"] for r in runs}) == 3 and all(Path(r["run_dir"], "results.json").exists() for r in runs)
    assert len(ports(runs)) == 3                      # three apps, three ports
    (a0, b0), (a1, b1), (a2, b2) = spans(runs)
    assert max(a0, a1, a2) < min(b0, b1, b2)          # all three agents were acting at the same moment
    assert [r["summary"]["PASS"] for r in runs] == [1, 0, 1] and runs[1]["summary"]["FAIL"] == 1
    assert "plans: 3; PASS 2 FAIL 1" in err and "exit 1" in err
    assert err.count("] finished: exit ") == 3        # each plan's own output, prefixed, then its end once


def test_minus_j_one_is_the_plain_sequential_run(tmp_path, cli_env):
    ps = plans(tmp_path, 2)
    rc, out, err = run_cli(["run", *ps, "-j", "1", "--agent", "true", "--out", str(tmp_path / "runs"), "--json"],
                           cwd=tmp_path, env=cli_env, timeout=120)
    assert rc == 0, err
    assert [r["plan"] for r in json.loads(out)["runs"]] == ["plan-0", "plan-1"] and "plans: " not in err


def test_a_bad_plan_stops_everything_before_anything_runs(tmp_path, cli_env):
    ps = plans(tmp_path, 2)
    bad = write_plan(tmp_path / "bad.yaml", {"steps": [{"id": "x", "do": "y", "validators": [{"kind": "nope"}]}]})
    rc, out, err = run_cli(["run", *ps, str(bad), "-j", "2", "--agent", "true", "--out", str(tmp_path / "runs")],
                           cwd=tmp_path, env=cli_env, timeout=60)
    assert rc == 2 and "nope" in err and not (tmp_path / "runs").exists()


def test_plans_on_a_dask_cluster(tmp_path, cli_env):
    from distributed import LocalCluster

    ps = plans(tmp_path, 2, fail=0)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                      dashboard_address=None) as cluster:
        rc, out, err = run_cli(["run", *ps, "--executor", "dask", "--scheduler", cluster.scheduler_address,
                                "--agent", agent(tmp_path, 2), "--out", str(tmp_path / "runs"), "--json"],
                               cwd=tmp_path, env=cli_env, timeout=120)
    assert rc == 1, err
    runs = json.loads(out)["runs"]
    assert [r["plan"] for r in runs] == ["plan-0", "plan-1"] and len(ports(runs)) == 2
    assert [r["summary"]["FAIL"] for r in runs] == [1, 0]
    (a0, b0), (a1, b1) = spans(runs)
    assert max(a0, a1) < min(b0, b1)  # the two workers ran them at once
    assert "dask (tcp://127.0.0.1:" in err


# ------------------------------------------------------------------ what a child runs, and stopping the plans


def test_a_child_refuses_plan_text_whose_hash_is_not_the_one_validated(tmp_path, cli_env):
    """`--plan-on-stdin SHA256` (how a `-j` parent hands each child the text it validated): text that does not
    hash to SHA256 is refused with one line naming the plan, before any run directory exists."""
    from tests.runner.runner_helpers import assert_one_line_error, find_run_dirs

    p = write_plan(tmp_path / "p.yaml", {"steps": [{"id": "a", "do": "x", "validators": [
        {"kind": "file_exists", "path": "/etc/hostname"}]}]})
    rc, out, err = run_cli(["run", str(p), "--plan-on-stdin", "0" * 64, "--agent", "true", "--out",
                            str(tmp_path / "runs")], cwd=tmp_path, env=cli_env, input=p.read_text())
    line = assert_one_line_error(rc, out, err)
    assert str(p) in line and "SHA-256" in line
    assert find_run_dirs(tmp_path / "runs") == []


def test_minus_j_runs_a_python_actor_whose_module_lies_next_to_the_plan(tmp_path, cli_env):
    """The child gets the plan's text, not its file; the plan's folder still anchors what the plan names (here the
    python actor's module, found next to the plan and not in the working directory)."""
    plan_dir = tmp_path / "plans"
    plan_dir.mkdir()
    (plan_dir / "next_to_plan.py").write_text(
        "from referee import Actor\n\n"
        "class Writer(Actor):\n"
        "    def act(self, ctx):\n"
        "        ctx.save('made.txt', 'hi from next to the plan')\n"
        "        return ctx.claim(True, 'wrote it')\n")
    ps = []
    for name in ("a", "b"):
        plan = {"name": f"py-{name}", "actor": {"kind": "python", "target": "next_to_plan:Writer"},
                "steps": [{"id": "s", "do": "write made.txt",
                           "validators": [{"kind": "text_contains", "evidence": ["made.txt"], "text": "hi from"}]}]}
        ps.append(str(write_plan(plan_dir / f"{name}.yaml", plan)))
    work = tmp_path / "work"
    work.mkdir()
    rc, out, err = run_cli(["run", *ps, "-j", "2", "--out", str(tmp_path / "runs"), "--json"], cwd=work,
                           env=cli_env, timeout=120, process=True)
    assert rc == 0, err
    assert [r["summary"].get("PASS") for r in json.loads(out)["runs"]] == [1, 1], err


def _wait_files(paths: list[Path], timeout: float = 30) -> list[int]:
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if all(p.exists() and p.read_text().strip() for p in paths):
            return [int(p.read_text()) for p in paths]
        time.sleep(0.05)
    raise AssertionError(f"never written: {paths}")


def _wait_acting(tmp_path: Path, n: int, timeout: float = 30) -> None:
    """Until `n` agents of this test are running, and a moment more: a stop signal that reaches a plan's runner
    while it is still in subprocess.Popen of its agent (which has exec'd already) leaves that agent untracked."""
    import time

    deadline = time.monotonic() + timeout
    while len(acting_agents(tmp_path)) < n:
        assert time.monotonic() < deadline, f"the agents never started: {acting_agents(tmp_path)}"
        time.sleep(0.05)
    time.sleep(0.3)


def test_an_interrupt_stops_the_running_plans_skips_the_rest_and_says_what_finished(tmp_path, cli_env):
    """SIGINT to `referee run a b c -j 2` while a and b act: both are stopped (their apps and agents with them),
    c is never started, the summary names each, the exit code is 130, and a and b's run directories grade."""
    import os
    import signal
    import subprocess
    import time

    from tests.runner.runner_helpers import PY, kill_marked, wait_dead, wait_unmarked

    ps, pidfiles = [], []
    for name in ("a", "b", "c"):
        pidfiles.append(tmp_path / f"{name}.pid")
        step = {"id": "s", "do": "wait", "validators": [{"kind": "http_status_eq", "url": "/health", "expected": 200}]}
        plan = {"name": name, "app": app_block(tmp_path / f"{name}.db", pidfiles[-1]),
                "actor": {"kind": "command", "command": "sleep 60"}, "steps": [step]}
        ps.append(str(write_plan(tmp_path / f"{name}.yaml", plan)))
    cmd = [PY, "-m", "referee.cli.main", "run", *ps, "-j", "2", "--out", str(tmp_path / "runs"), "--json"]
    proc = subprocess.Popen(cmd, cwd=tmp_path, env=cli_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        apps = _wait_files(pidfiles[:2])
        _wait_acting(tmp_path, 2)  # both agents are acting
        t0 = time.monotonic()
        os.kill(proc.pid, signal.SIGINT)
        out, err = proc.communicate(timeout=40)
        assert proc.returncode == 130, err
        assert time.monotonic() - t0 < 20, err  # not the agents' 60 s
        assert all(wait_dead(pid, 5) for pid in apps)
        assert not pidfiles[2].exists()  # plan c never started its app
        assert wait_unmarked(tmp_path, 10) == []  # no agent left
        assert "c.yaml: not run: interrupted" in err and "interrupted (SIGINT)" in err, err
        body = json.loads(out)
        runs = body["runs"]
        assert [r["plan"] for r in runs] == ["a", "b"]
        # every plan given is in the JSON, also the one that never ran, with why
        assert [(p["plan"], p["exit_code"]) for p in body["plans"]] == [(ps[0], 130), (ps[1], 130), (ps[2], 130)]
        assert body["plans"][2]["note"] == "not run: interrupted" and body["plans"][2]["run_dirs"] == []
        assert (body["exit_code"], body["interrupted"]) == (130, "SIGINT"), body
        for r in runs:
            rc, _, gerr = run_cli(["grade", r["run_dir"]], env=cli_env)
            assert rc == 1, gerr  # the interrupted step is ERROR: graded, not a crash
    finally:
        if proc.poll() is None:
            proc.kill()
        kill_marked(tmp_path)


def test_a_minus_j_parent_killed_with_sigkill_takes_its_plans_down_gradeable(tmp_path, cli_env):
    """SIGKILL cannot be caught, so the parent cannot pass it on: each plan's runner asks the kernel for a SIGTERM
    when its parent goes, stops its app and agent, and leaves a run directory with results. They ran on as
    orphans to the end of their step before, and stopped with no results.json."""
    import os
    import signal
    import subprocess
    import time

    from tests.runner.runner_helpers import PY, kill_marked, wait_dead, wait_unmarked

    ps, pidfiles = [], []
    for name in ("a", "b"):
        pidfiles.append(tmp_path / f"{name}.pid")
        step = {"id": "s", "do": "wait", "validators": [{"kind": "http_status_eq", "url": "/health", "expected": 200}]}
        plan = {"name": name, "app": app_block(tmp_path / f"{name}.db", pidfiles[-1]),
                "actor": {"kind": "command", "command": "sleep 60"}, "steps": [step]}
        ps.append(str(write_plan(tmp_path / f"{name}.yaml", plan)))
    cmd = [PY, "-m", "referee.cli.main", "run", *ps, "-j", "2", "--out", str(tmp_path / "runs")]
    proc = subprocess.Popen(cmd, cwd=tmp_path, env=cli_env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        apps = _wait_files(pidfiles)
        _wait_acting(tmp_path, 2)  # both agents are acting
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        assert all(wait_dead(pid, 20) for pid in apps), "a plan's app outlived the killed parent"
        assert wait_unmarked(tmp_path, 20) == []  # no agent left
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and len(list((tmp_path / "runs").glob("*/2*/results.json"))) < 2:
            time.sleep(0.2)
        for name in ("a", "b"):
            (run_dir,) = [d for d in (tmp_path / "runs" / name).iterdir() if d.is_dir() and not d.is_symlink()]
            assert (run_dir / "results.json").exists(), sorted(p.name for p in run_dir.iterdir())
            assert json.loads((run_dir / "manifest.json").read_text())["error"] == "interrupted"
    finally:
        if proc.poll() is None:
            proc.kill()
        kill_marked(tmp_path)


def _sigterm_while_the_app_starts(tmp_path, cli_env, ready_timeout_s: float, ignored: bool = False):
    """`referee run` of a plan whose app is never ready, sent SIGTERM once the app has started (with SIGTERM
    ignored from the start when `ignored`): (exit code, stdout + stderr, the app's pid)."""
    import os
    import signal
    import subprocess

    from tests.runner.runner_helpers import PY, kill_quietly

    pidfile = tmp_path / "app.pid"
    plan = {"name": "slow-app",
            "app": app_block(tmp_path / "app.db", pidfile, ready="/never", ready_timeout_s=ready_timeout_s),
            "steps": [{"id": "s", "do": "x", "validators": [{"kind": "file_exists", "path": "/etc/hostname"}]}]}
    p = write_plan(tmp_path / "p.yaml", plan)
    cmd = [PY, "-m", "referee.cli.main", "run", str(p), "--agent", "true", "--out", str(tmp_path / "runs")]
    ignore = (lambda: signal.signal(signal.SIGTERM, signal.SIG_IGN)) if ignored else None
    proc = subprocess.Popen(cmd, cwd=tmp_path, env=cli_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True, preexec_fn=ignore)
    app = None
    try:
        (app,) = _wait_files([pidfile])
        os.kill(proc.pid, signal.SIGTERM)
        out, err = proc.communicate(timeout=60)
        return proc.returncode, out + err, app
    except BaseException:
        if app is not None:
            kill_quietly(app)
        raise
    finally:
        if proc.poll() is None:
            proc.kill()


def test_sigterm_while_the_app_starts_stops_the_app(tmp_path, cli_env):
    """SIGTERM to a runner still waiting for its app to be ready (here it never is) stops the app too."""
    from tests.runner.runner_helpers import kill_quietly, wait_dead

    rc, said, app = _sigterm_while_the_app_starts(tmp_path, cli_env, 60)
    try:
        assert rc == 130, said
        assert wait_dead(app, 10), "the app outlived the runner's SIGTERM"
    finally:
        kill_quietly(app)


def test_sigterm_ignored_when_the_runner_started_stays_ignored(tmp_path, cli_env):
    """A runner started with SIGTERM ignored (as a supervisor may start it) does not stop on one: here it
    waits out its app's readiness timeout and says so, instead of ending as interrupted."""
    import signal

    from tests.runner.runner_helpers import kill_quietly

    rc, said, app = _sigterm_while_the_app_starts(tmp_path, cli_env, 4, ignored=True)
    kill_quietly(app)
    assert rc not in (0, 130, -signal.SIGTERM), said
    assert "interrupted" not in said and "ready" in said, said


def test_doctests():
    import doctest

    from referee.runner import many

    result = doctest.testmod(many, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0 and result.attempted > 0


def test_a_plan_without_an_agent_stops_everything_before_anything_runs(tmp_path, cli_env):
    """`referee run good.yaml noagent.yaml` ran good, then stopped at noagent (exit 2); in the other order nothing
    ran: 'every plan is validated first' held only for errors the plan file itself shows."""
    good = write_plan(tmp_path / "good.yaml", {"name": "good", "actor": {"kind": "command", "command": "true"},
                                               "steps": [{"id": "s", "do": "x", "validators": [
                                                   {"kind": "file_exists", "path": "/etc/hostname"}]}]})
    noagent = write_plan(tmp_path / "noagent.yaml", {"name": "noagent", "steps": [{"id": "s", "do": "x"}]})
    for extra in ([], ["-j", "2"]):
        rc, out, err = run_cli(["run", str(good), str(noagent), *extra, "--out", str(tmp_path / "runs")],
                               env=cli_env)
        assert rc == 2 and "noagent.yaml: no agent to perform the steps" in err, err
        assert not (tmp_path / "runs").exists(), "a plan ran before the plan without an agent stopped the run"


def test_an_empty_selection_or_a_stray_scheduler_is_a_usage_error_not_a_full_local_run(tmp_path, cli_env):
    (p,) = plans(tmp_path, 1)
    for bad in (["-k", ""], ["--only", ""], ["--only", ","], ["--scheduler", "tcp://127.0.0.1:1"]):
        rc, out, err = run_cli(["run", p, "--agent", "true", "--out", str(tmp_path / "runs"), *bad], env=cli_env)
        assert rc == 2 and err.startswith("referee: error:") and err.count("\n") == 1, (bad, err)
        assert not (tmp_path / "runs").exists(), bad


def test_browser_plans_run_at_once_are_warned_about(tmp_path, cli_env):
    """Chromium's DevTools port takes any local client, so with -j one plan's agent could drive another's page:
    referee says so when it starts more than one browser plan at once."""
    ps = []
    for name in ("a", "b"):
        plan = {"name": name, "actor": {"kind": "browser"},
                "steps": [{"id": "s", "do": "look", "validators": [{"kind": "dom_contains", "text": "nothing here"}]}]}
        ps.append(str(write_plan(tmp_path / f"{name}.yaml", plan)))
    rc, out, err = run_cli(["run", *ps, "-j", "2", "--out", str(tmp_path / "runs")], cwd=tmp_path, env=cli_env,
                           timeout=180, process=True)
    assert rc == 1, err  # the pages hold no such text: FAIL, graded
    assert "warning: 2 browser plans run at once on this host" in out + err, out + err
    rc, out, err = run_cli(["run", ps[0], "--out", str(tmp_path / "runs")], cwd=tmp_path, env=cli_env, timeout=180)
    assert "browser plans run at once" not in out + err, out + err
