"""Blind acceptance tests for issue 29: the runner's sandbox against a hostile agent.

Written from the docs only (README, docs/runner.md, docs/security*.md, docs/screens.md), without
reading src/ or the other tests. Every test runs the real ``referee`` command (in the test's process,
tests.support.incli, unless the test is about the runner's own process: then the script), as
root, with agents under ``tests/security/acceptance_agents/`` and a tiny app on loopback
(``log_app.py``: http.server, which logs every request line).
"""

from __future__ import annotations

import importlib.util
import json
import os
import pwd
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

from tests.conftest import FORCE_PROCESS
from tests.support.incli import completed, process_needed

REPO = Path(__file__).resolve().parents[2]
REFEREE = REPO / ".venv" / "bin" / "referee"
VENV_PY = REPO / ".venv" / "bin" / "python"
AGENTS = Path(__file__).resolve().parent / "acceptance_agents"
SYS_PY = "/usr/bin/python3"  # reachable by referee-agent (the venv's interpreter is under /root)
SECRET = "s3cr3t-ACC29-tok-7f3q"

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="acceptance tests of issue 29 run as root"),
    pytest.mark.skipif(not REFEREE.exists(), reason="needs .venv/bin/referee"),
    pytest.mark.skipif(not Path(SYS_PY).exists(), reason="needs /usr/bin/python3"),
    pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap"),
]

MODES = ["user", "bwrap"]


def app_block() -> str:
    return (
        "app:\n"
        f'  start: "{SYS_PY} {AGENTS / "log_app.py"} {{port}}"\n'
        '  url: "http://127.0.0.1:{port}"\n'
        "  ready: /health\n"
    )


def agent_cmd(script: str = "hostile_agent.py") -> str:
    return f"{SYS_PY} {AGENTS / script}"


@pytest.fixture
def area():
    """A world-reachable base: base/ws (the agent's workspace, the runner's cwd), base/runs."""
    base = Path(tempfile.mkdtemp(prefix="acc29-", dir="/tmp"))
    base.chmod(0o755)
    ws = base / "ws"
    ws.mkdir()
    ws.chmod(0o1777)
    runs = base / "runs"
    runs.mkdir()
    runs.chmod(0o755)
    yield base
    subprocess.run(["rm", "-rf", "--one-file-system", str(base)], check=False)


def referee(*args, cwd: Path, env: dict | None = None, timeout: float = 300,
            process: bool = False) -> subprocess.CompletedProcess:
    """`referee ARGS` with the user's environment: in this process (tests.support.incli: its environment,
    folder and descriptors are the script's), or the console script itself where `process` says the test is
    about the runner's own process."""
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("REFEREE_")}
    full_env.update(env or {})
    if not (process or FORCE_PROCESS) and process_needed(full_env) is None:
        return completed(args, cwd=cwd, env=full_env)
    return subprocess.run([str(REFEREE), *map(str, args)], cwd=cwd, env=full_env, capture_output=True,
                          text=True, timeout=timeout)


def run_plan(base: Path, text: str, *, name: str, agent: str | None = None, env: dict | None = None,
             timeout: float = 300, extra: tuple = ()) -> tuple[subprocess.CompletedProcess, Path]:
    plan = base / f"{name}.yaml"
    plan.write_text(text)
    args = ["run", plan, "--out", base / "runs", *extra]
    if agent:
        args += ["--agent", agent]
    proc = referee(*args, cwd=base / "ws", env=env, timeout=timeout)
    latest = base / "runs" / name / "latest"
    run_dir = latest.resolve() if latest.exists() else latest
    return proc, run_dir


def manifest(run_dir: Path) -> dict:
    return json.loads((run_dir / "manifest.json").read_text())


def results(run_dir: Path) -> dict:
    return {s["id"]: s for s in json.loads((run_dir / "results.json").read_text())["steps"]}


def explain(proc: subprocess.CompletedProcess) -> str:
    return f"exit {proc.returncode}\nstdout:\n{proc.stdout[-6000:]}\nstderr:\n{proc.stderr[-4000:]}"


def special_bits(*roots: Path) -> list[str]:
    hits = []
    for root in roots:
        for dirpath, dirnames, filenames in os.walk(root):
            for n in filenames + dirnames:
                p = Path(dirpath, n)
                st = p.lstat()
                if stat.S_ISREG(st.st_mode) and st.st_mode & (stat.S_ISUID | stat.S_ISGID):
                    hits.append(f"{p}: {oct(st.st_mode)}")
    return hits


# ---------------------------------------------------------------------------------------------
# 1. a fake stale agent home in /tmp with a link to a root-only victim folder
# ---------------------------------------------------------------------------------------------


def make_victim() -> Path:
    victim = Path(tempfile.mkdtemp(prefix="acc29-victim-", dir="/tmp"))
    victim.chmod(0o700)
    (victim / "deeper").mkdir()
    for i in range(20):
        (victim / f"precious{i}.txt").write_text(f"precious {i}\n")
        (victim / "deeper" / f"d{i}.txt").write_text(f"deep {i}\n")
    return victim


def victim_listing(victim: Path) -> list[str]:
    return sorted(str(p.relative_to(victim)) for p in victim.rglob("*"))


def drop_links_to(victim: Path) -> None:
    """Remove the homes our agents swapped for a link to the victim (and the homes moved aside)."""
    for p in Path(tempfile.gettempdir()).glob("referee-agent-home-*"):
        if p.is_symlink() and os.readlink(p) == str(victim):
            p.unlink()
            subprocess.run(["rm", "-rf", "--one-file-system", f"{p}.moved"], check=False)


def dead_pid() -> int:
    p = subprocess.Popen(["true"])
    p.wait()
    return p.pid


@pytest.mark.parametrize("mode", MODES)
def test_a_planted_stale_home_linking_to_a_root_folder_costs_the_victim_nothing(area, mode):
    victim = make_victim()
    before = victim_listing(victim)
    acct = pwd.getpwnam("referee-agent")
    fake = Path(tempfile.mkdtemp(prefix=f"referee-agent-home-{dead_pid()}-", dir="/tmp"))
    swapper = None
    try:
        # an agent account's "stale home": files, links to the victim, and a live swapper
        os.chown(fake, acct.pw_uid, acct.pw_gid)
        swapper = subprocess.Popen(["setpriv", f"--reuid={acct.pw_uid}", f"--regid={acct.pw_gid}",
                                    "--clear-groups", SYS_PY, str(AGENTS / "swapper.py"), str(fake),
                                    str(victim), "120"])
        deadline = time.monotonic() + 10
        while not (fake / "link").is_symlink() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert (fake / "link").is_symlink(), "the swapper did not set the trap up"
        old = time.time() - 3 * 86400
        os.utime(fake, (old, old))
        plan = (
            f"name: sweep_{mode}\n" + app_block()
            + f"actor: {{kind: command, isolation: {mode}, timeout_s: 60, env: {{ACC_VICTIM: '{victim}'}}}}\n"
            "steps:\n"
            "  - id: swaphome\n"
            "    do: swap your own home for a link to the victim, for root to remove at the end\n"
            "    validators:\n"
            "      - {kind: http_status_eq, url: /health, expected: 200}\n"
            "  - id: plain\n"
            "    do: nothing\n"
            "    capture:\n"
            "      - {kind: command, name: who, command: 'id -u', run_as: agent}\n"
            "    validators:\n"
            "      - {kind: http_status_eq, url: /health, expected: 200}\n"
            "      - {kind: command_exit_code, command: 'true', run_as: agent}\n"
        )
        proc, run_dir = run_plan(area, plan, name=f"sweep_{mode}", agent=agent_cmd())
        assert proc.returncode == 0, explain(proc)
        # a second run, while the "stale home" is still there (the sweep runs at every run start)
        proc2, _ = run_plan(area, plan, name=f"sweep_{mode}", agent=agent_cmd())
        assert proc2.returncode == 0, explain(proc2)
    finally:
        if swapper:
            swapper.kill()
            swapper.wait()
    after = victim_listing(victim)
    drop_links_to(victim)
    shutil.rmtree(victim)
    assert after == before, f"root deleted files of the victim folder: {sorted(set(before) - set(after))[:10]}"
    # docs/security-isolation.md "Agent homes": nothing found by looking over /tmp is removed
    assert fake.exists(), "a home the runner never recorded was removed"
    subprocess.run(["rm", "-rf", "--one-file-system", str(fake)], check=False)


def test_a_home_swapped_live_while_root_removes_it_at_the_end_of_the_run_spares_the_victim(area):
    """The agent fills its (recorded) HOME with files and a link to a root-only folder; while the
    run ends, a process of the agent's account (outside the step, as another referee run's agent
    could be) keeps swapping a folder there for a link to the victim."""
    victim = make_victim()
    before = victim_listing(victim)
    plan = (
        "name: live_swap\n" + app_block()
        + f"actor: {{kind: command, isolation: user, timeout_s: 60, env: {{ACC_VICTIM: '{victim}'}}}}\n"
        "steps:\n"
        "  - id: trap_live\n"
        "    do: set a trap\n"
        "    validators:\n"
        "      - {kind: http_status_eq, url: /health, expected: 200}\n"
    )
    (area / "live_swap.yaml").write_text(plan)
    env = {k: v for k, v in os.environ.items() if not k.startswith("REFEREE_")}
    runner = subprocess.Popen([str(REFEREE), "run", str(area / "live_swap.yaml"), "--out", str(area / "runs"),
                               "--agent", agent_cmd()], cwd=area / "ws", env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True)
    info_file = area / "ws" / "home_path.json"
    swapper = None
    try:
        deadline = time.monotonic() + 90
        info = None
        while info is None and time.monotonic() < deadline and runner.poll() is None:
            try:
                info = json.loads(info_file.read_text())  # whole once it parses
            except (OSError, ValueError):
                time.sleep(0.05)
        assert info is not None, runner.communicate()[0][-3000:] if runner.poll() is not None else "no home"
        swapper = subprocess.Popen(["setpriv", f"--reuid={info['uid']}", f"--regid={info['gid']}",
                                    "--clear-groups", SYS_PY, str(AGENTS / "swapper.py"), info["home"],
                                    str(victim), "60"])
        out, _ = runner.communicate(timeout=300)
        assert runner.returncode == 0, out[-4000:]
    finally:
        if runner.poll() is None:
            runner.kill()
        if swapper:
            swapper.kill()
            swapper.wait()
    after = victim_listing(victim)
    drop_links_to(victim)
    shutil.rmtree(victim)
    assert after == before, f"root deleted files of the victim folder: {sorted(set(before) - set(after))[:10]}"
    # docs: a home is removed when its run ends (a swapped-in link costs the agent only its link)
    assert not Path(info["home"]).is_dir() or Path(info["home"]).is_symlink(), "the home outlived its run"


def test_the_home_of_a_runner_killed_mid_step_with_a_swapping_daemon_spares_the_victim(area):
    """The agent booby-traps its own (recorded) HOME, a daemon keeps swapping a folder there for a
    link to a root-only folder, and the runner is killed with SIGKILL: the next run sweeps it."""
    victim = make_victim()
    before = victim_listing(victim)
    plan_a = (
        "name: trap_home\n" + app_block()
        + f"actor: {{kind: command, isolation: user, timeout_s: 120, env: {{ACC_VICTIM: '{victim}'}}}}\n"
        "steps:\n"
        "  - id: trap\n"
        "    do: set a trap\n"
        "    validators:\n"
        "      - {kind: http_status_eq, url: /health, expected: 200}\n"
    )
    (area / "trap_home.yaml").write_text(plan_a)
    env = {k: v for k, v in os.environ.items() if not k.startswith("REFEREE_")}
    runner = subprocess.Popen([str(REFEREE), "run", str(area / "trap_home.yaml"), "--out", str(area / "runs"),
                               "--agent", agent_cmd("plant_home_agent.py")], cwd=area / "ws", env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    marker = area / "ws" / "home_path.txt"
    deadline = time.monotonic() + 90
    while not (marker.exists() and marker.read_text().strip()) and time.monotonic() < deadline \
            and runner.poll() is None:
        time.sleep(0.05)
    assert marker.exists(), (runner.poll(), runner.stdout.read().decode()[-3000:] if runner.poll() is not None else "")
    home = Path(marker.read_text().strip())
    assert (home / "sub").exists() or (home / "sub.aside").exists()
    runner.kill()  # SIGKILL to the runner only; its agent, daemon and app live on
    runner.wait()
    try:
        plan_b = (
            "name: after_kill\n" + app_block()
            + "actor: {kind: command, isolation: user, timeout_s: 60}\n"
            "steps:\n"
            "  - id: plain\n"
            "    do: nothing\n"
            "    validators:\n"
            "      - {kind: http_status_eq, url: /health, expected: 200}\n"
        )
        proc, _ = run_plan(area, plan_b, name="after_kill", agent=agent_cmd())
        assert proc.returncode == 0, explain(proc)
        after = victim_listing(victim)
        assert after == before, f"root deleted files of the victim folder: {sorted(set(before) - set(after))[:10]}"
        # docs: a home whose runner died (SIGKILL) is removed by the next run on the host
        assert not home.exists(), f"the killed runner's agent home {home} was not swept by the next run"
    finally:
        try:
            os.killpg(runner.pid, signal.SIGKILL)
        except OSError:
            pass
        shutil.rmtree(victim, ignore_errors=True)


# ---------------------------------------------------------------------------------------------
# 2. setuid / setgid copies of /bin/cat
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_no_setuid_or_setgid_file_outlives_the_step_and_the_record_says_so(area, mode):
    shared = area / "shared.txt"  # another user's world-writable file, for hard links
    shared.write_text("shared\n")
    os.chown(shared, 65534, 65534)
    shared.chmod(0o666)
    capture_cmd = ("cp /bin/cat cap_suid_ws && chmod 4755 cap_suid_ws; "
                   "cp /bin/cat $HOME/cap_home && chmod 4755 $HOME/cap_home; echo $HOME")
    plan = (
        f"name: suid_{mode}\n" + app_block()
        + f"actor: {{kind: command, isolation: {mode}, timeout_s: 60, env: {{ACC_SHARED: '{shared}'}}}}\n"
        "steps:\n"
        "  - id: setuid_a\n"
        "    do: leave privileges behind\n"
        "    capture:\n"
        f'      - {{kind: command, name: cap, command: "{capture_cmd}", run_as: agent}}\n'
        "    validators:\n"
        "      - {kind: http_status_eq, url: /health, expected: 200}\n"
    )
    proc, run_dir = run_plan(area, plan, name=f"suid_{mode}", agent=agent_cmd())
    assert proc.returncode == 0, explain(proc)
    st = shared.stat()
    assert (st.st_uid, stat.S_IMODE(st.st_mode), shared.read_text()) == (65534, 0o666, "shared\n"), \
        f"root changed another user's file through the agent's hard link: uid {st.st_uid} {oct(st.st_mode)}"
    cap = json.loads((run_dir / "evidence" / "setuid_a" / "after" / "cap.json").read_text())
    cap_home = Path(cap["stdout"].strip().splitlines()[-1]) if cap["stdout"].strip() else None
    if cap_home and (cap_home / "cap_home").exists():
        assert not (cap_home / "cap_home").stat().st_mode & stat.S_ISUID, "the capture's setuid file in its HOME"
    probe = json.loads((run_dir / "agent" / "setuid_a" / "probe.json").read_text())
    assert probe["id_u"] not in ("", "0") and probe["uid"] != 0, probe
    assert manifest(run_dir)["isolation"]["mode"] == mode
    leftovers = special_bits(run_dir, area / "ws")
    assert leftovers == [], leftovers
    step = manifest(run_dir)["steps"]["setuid_a"]
    removed = step.get("privileges_removed") or []
    # every copy that had its bit when the agent looked is listed in the step record
    expected = {
        "agent_suid": "agent/setuid_a/cat_suid", "agent_sgid": "agent/setuid_a/cat_sgid",
        "ws_suid": "ws_cat_suid_setuid_a", "ws_sgid": "ws_cat_sgid_setuid_a",
        "nested_suid": "nested_setuid_a/deeper/cat", "home_suid": "home_cat_suid",
        "locked_agent": "agent/setuid_a/locked/cat", "locked_ws": "locked_setuid_a/cat",
    }
    for key, name in expected.items():
        if probe[key] == "has bits":
            assert any(name in line for line in removed), (key, removed)
    for group in ("other_ways_agent_dir", "other_ways_ws"):
        for way, what in probe[group].items():
            if what == "has bits":
                assert any(f"way_{way}" in line for line in removed), (group, way, removed)
    if mode == "user":
        assert probe["id_u"] == str(pwd.getpwnam(probe_user(run_dir)).pw_uid)
        assert probe["agent_suid"] == "has bits"  # the attack took place: the record must say so
        assert removed, step
        assert any("cap_suid_ws" in line for line in removed), removed  # made by a run_as: agent capture
    else:
        # docs: a seccomp filter refuses every chmod and creation with the bits (x86_64, aarch64)
        made = [k for k, v in probe.items() if v == "has bits"]
        made += [f"{g}.{k}" for g in ("other_ways_agent_dir", "other_ways_ws")
                 for k, v in probe[g].items() if v == "has bits"]
        assert made == [], f"the bwrap agent set setuid/setgid bits during its step: {made} {probe}"


def probe_user(run_dir: Path) -> str:
    return manifest(run_dir)["isolation"].get("user") or "referee-agent"


# ---------------------------------------------------------------------------------------------
# 3. secrets through app.log and through what the agent writes
# ---------------------------------------------------------------------------------------------


def files_holding(root: Path, needle: str) -> list[str]:
    hits = []
    raw = needle.encode()
    for dirpath, dirnames, filenames in os.walk(root):
        for n in dirnames + filenames:
            p = Path(dirpath, n)
            if needle in n:
                hits.append(f"name: {p}")
            st = p.lstat()
            if stat.S_ISLNK(st.st_mode):
                if needle in os.readlink(p):
                    hits.append(f"link target: {p}")
            elif stat.S_ISREG(st.st_mode) and st.st_blocks * 512 >= min(st.st_size, 1):
                with open(p, "rb") as f:
                    if raw in f.read():
                        hits.append(f"bytes: {p}")
    return hits


@pytest.mark.parametrize("mode", MODES)
def test_the_secret_reaches_no_file_of_the_run_and_no_console(area, mode):
    leak = area / "leak.txt"  # what the agent "learnt out of band": a file it may read
    leak.write_text(SECRET + "\n")
    leak.chmod(0o644)
    plan = (
        f"name: secret_{mode}\n" + app_block()
        + f"actor: {{kind: command, isolation: {mode}, timeout_s: 60, env: {{ACC_LEAK: '{leak}'}}}}\n"
        "steps:\n"
        "  - id: secret_a\n"
        "    do: find the token\n"
        "    capture:\n"
        '      - {kind: http, name: item, url: "/api/item?token=${ACC_TOKEN}"}\n'
        "    validators:\n"
        '      - {kind: http_body_contains, url: "/api/item?token=${ACC_TOKEN}&v=1", text: never-there,'
        " require_change: true}\n"
        "      - {kind: text_contains, evidence: clean.txt, text: nothing secret}\n"
        "  - id: secret_b\n"
        "    do: a claim with the wrong types\n"
        "    validators:\n"
        "      - {kind: http_status_eq, url: /health, expected: 200}\n"
        "  - id: secret_c\n"
        "    do: a claim that is not JSON\n"
        "    validators:\n"
        "      - {kind: http_status_eq, url: /health, expected: 200}\n"
    )
    proc, run_dir = run_plan(area, plan, name=f"secret_{mode}", agent=agent_cmd(),
                             env={"ACC_TOKEN": SECRET, "COLUMNS": "400"})
    assert proc.returncode in (0, 1), explain(proc)
    assert (run_dir / "results.json").exists(), explain(proc)
    probe = json.loads((area / "ws" / "applog_probe.json").read_text())
    assert probe["secret_known"], probe
    # the log existed and logged the capture URL (the attack surface), redacted
    log = (run_dir / "app.log").read_text()
    assert "/api/item?token=" in log, log[-2000:]
    assert "${ACC_TOKEN}" in log, log[-2000:]
    # app.log was not readable by the agent during the run, and no open file gave the secret away
    assert not probe["app_log_readable"], probe
    assert not probe["secret_seen_in_logs"], probe
    # nor did the run directory while the step went on (the app echoes the token in body and header)
    assert not probe["secret_seen_in_run_dir"], probe
    grade = referee("grade", run_dir, cwd=area / "ws")
    report = referee("report", run_dir, cwd=area / "ws")
    hits = files_holding(run_dir, SECRET)
    assert hits == [], hits
    for name, out in [("run", proc), ("grade", grade), ("report", report)]:
        assert SECRET not in out.stdout + out.stderr, f"referee {name} console shows the secret"
    claims = json.loads((run_dir / "claims.json").read_text())
    assert "${ACC_TOKEN}" in claims["secret_a"]["note"], claims  # scrubbed, not dropped silently
    # every output file was there to grep
    for out in ("report.html", "junit.xml", "results.json", "claims.json", "manifest.json", "app.log"):
        assert (run_dir / out).exists(), out


def test_a_secret_the_http_client_percent_encodes_is_redacted_in_app_log_too(area):
    token = 'p@ss w\u00f6rd|{x}"<y>-long'
    plan = (
        "name: encoded\n" + app_block()
        + "actor: {kind: command, isolation: user, timeout_s: 60}\n"
        "steps:\n"
        "  - id: enc\n"
        "    do: nothing\n"
        "    capture:\n"
        '      - {kind: http, name: item, url: "/api/item?token=${ACC_TOKEN}"}\n'
        "    validators:\n"
        "      - {kind: http_status_eq, url: /health, expected: 200}\n"
    )
    proc, run_dir = run_plan(area, plan, name="encoded", agent="/bin/true", env={"ACC_TOKEN": token})
    assert proc.returncode == 0, explain(proc)
    log = (run_dir / "app.log").read_text()
    lines = [line for line in log.splitlines() if "/api/item" in line]
    assert lines, log[-2000:]
    assert all("token=${ACC_TOKEN}" in line for line in lines), lines


@pytest.mark.parametrize("mode", MODES)
def test_the_secret_in_a_workspace_file_a_file_capture_copies_reaches_no_file_of_the_run(area, mode):
    leak = area / "leak.txt"
    leak.write_text(SECRET + "\n")
    leak.chmod(0o644)
    plan = (
        f"name: wssecret_{mode}\n"
        + f"actor: {{kind: command, isolation: {mode}, timeout_s: 60, env: {{ACC_LEAK: '{leak}'}}}}\n"
        "steps:\n"
        "  - id: ws_secret\n"
        "    do: write report.txt\n"
        "    capture:\n"
        '      - {kind: command, name: uses_token, command: "cat report.txt; test -n ${ACC_TOKEN}"}\n'
        "    validators:\n"
        "      - {kind: file_exists, path: report.txt}\n"
    )
    proc, run_dir = run_plan(area, plan, name=f"wssecret_{mode}", agent=agent_cmd(), env={"ACC_TOKEN": SECRET})
    assert (run_dir / "manifest.json").exists(), explain(proc)
    assert SECRET in (area / "ws" / "report.txt").read_text()  # the agent did write it
    assert SECRET not in proc.stdout + proc.stderr
    assert "${ACC_TOKEN}" in (run_dir / "evidence" / "ws_secret" / "after" / "uses_token.json").read_text()
    hits = files_holding(run_dir, SECRET)
    assert hits == [], hits


@pytest.mark.parametrize("mode", MODES)
def test_the_secret_in_a_database_row_reaches_no_file_of_the_run(area, mode):
    leak = area / "leak.txt"
    leak.write_text(SECRET + "\n")
    leak.chmod(0o644)
    plan = (
        f"name: dbsecret_{mode}\n"
        + f"actor: {{kind: command, isolation: {mode}, timeout_s: 60, env: {{ACC_LEAK: '{leak}'}}}}\n"
        "steps:\n"
        "  - id: db_secret\n"
        "    do: store a row\n"
        "    capture:\n"
        '      - {kind: command, name: uses_token, command: "test -n ${ACC_TOKEN}"}\n'
        "      - {kind: sql, name: rows, url: 'sqlite:///app.db', table: t}\n"
        "    validators:\n"
        "      - {kind: sql_row_present, url: 'sqlite:///app.db', table: t, where: {k: a}}\n"
    )
    proc, run_dir = run_plan(area, plan, name=f"dbsecret_{mode}", agent=agent_cmd(), env={"ACC_TOKEN": SECRET})
    assert (run_dir / "results.json").exists(), explain(proc)
    assert results(run_dir)["db_secret"]["verdict"] == "PASS", results(run_dir)["db_secret"]
    grade = referee("grade", run_dir, cwd=area / "ws")
    for out in (proc, grade):
        assert SECRET not in out.stdout + out.stderr
    hits = files_holding(run_dir, SECRET)
    assert hits == [], hits


# ---------------------------------------------------------------------------------------------
# 4. sparse files
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_sparse_files_are_listed_as_not_taken_and_a_validator_citing_one_is_error(area, mode):
    plan = (
        f"name: sparse_{mode}\n" + app_block()
        # a step budget of 64 MiB, not the default 1024 (its value is plan/model.py's doctest): the agent's
        # 8 allocated files are 32 MiB each, so the budget is crossed as it was, for 1/16 of the hashing
        + "evidence: {max_step_mb: 64}\n"
        + f"actor: {{kind: command, isolation: {mode}, timeout_s: 60}}\n"
        "steps:\n"
        "  - id: sparse_a\n"
        "    do: leave big files\n"
        "    validators:\n"
        "      - {kind: text_contains, evidence: big3.bin, text: x}\n"
        "  - id: sparse_b\n"
        "    do: leave big files of other shapes\n"
        "    validators:\n"
        "      - {kind: text_contains, evidence: half.bin, text: y}\n"
        "  - id: after_sparse\n"
        "    do: nothing\n"
        "    validators:\n"
        "      - {kind: http_status_eq, url: /health, expected: 200}\n"
    )
    proc, run_dir = run_plan(area, plan, name=f"sparse_{mode}", agent=agent_cmd(), timeout=600)
    assert proc.returncode == 1, explain(proc)
    res = results(run_dir)
    assert res["sparse_a"]["verdict"] == "ERROR", res["sparse_a"]
    assert "not taken" in res["sparse_a"]["reason"], res["sparse_a"]["reason"]
    assert res["after_sparse"]["verdict"] == "PASS", res["after_sparse"]
    step = manifest(run_dir)["steps"]["sparse_a"]
    listed = {e["path"]: e["reason"] for e in step["not_taken"]}
    assert set(listed) == {f"agent/sparse_a/big{i}.bin" for i in range(8)}, listed
    assert all("sparse" in r for r in listed.values()), listed
    paths = {f["path"] for f in manifest(run_dir)["files"]}
    assert not any("big" in p for p in paths), sorted(paths)
    assert any(p.endswith("small.txt") for p in paths), sorted(paths)
    assert "agent_s" in step and "runner_s" in step, step
    # other shapes: a hole in a nested folder, 4 MiB written then a hole, 8 x 32 MiB allocated
    step_b = manifest(run_dir)["steps"]["sparse_b"]
    listed_b = {e["path"]: e["reason"] for e in step_b["not_taken"]}
    assert {"agent/sparse_b/nested/deep/hole.bin", "agent/sparse_b/half.bin"} <= set(listed_b), listed_b
    assert res["sparse_b"]["verdict"] == "ERROR", res["sparse_b"]
    alloc = {f"agent/sparse_b/alloc{i}.bin" for i in range(8)}
    assert len(alloc & set(listed_b)) >= 6, listed_b  # evidence.max_step_mb: 64, the plan's
    assert alloc - set(listed_b) <= paths, (alloc - set(listed_b), sorted(paths))
    assert all("past the step's hashing budget" in listed_b[p] for p in alloc & set(listed_b)), listed_b
    assert step_b["hashed_bytes"] <= (64 + 8) << 20, step_b["hashed_bytes"]
    grade = referee("grade", run_dir, cwd=area / "ws", timeout=600)
    assert grade.returncode == 1, explain(grade)
    assert "Traceback" not in grade.stderr + grade.stdout
    regraded = results(run_dir)
    assert regraded["sparse_a"]["verdict"] == "ERROR" and regraded["after_sparse"]["verdict"] == "PASS"


def test_a_sparse_workspace_file_a_file_capture_copies_stays_within_the_hashing_budget(area):
    plan = (
        "name: ws_sparse\n"
        "evidence: {max_step_mb: 64, max_run_mb: 128}\n"
        "actor: {kind: command, isolation: user, timeout_s: 60}\n"
        "steps:\n"
        "  - id: ws_sparse\n"
        "    do: write report.bin\n"
        "    validators:\n"
        "      - {kind: file_exists, path: report.bin}\n"
        "      - {kind: text_contains, evidence: note.txt, text: zzz}\n"
    )
    proc, run_dir = run_plan(area, plan, name="ws_sparse", agent=agent_cmd())
    assert (run_dir / "manifest.json").exists(), explain(proc)
    assert (area / "ws" / "report.bin").stat().st_blocks == 0  # the agent's file takes no disk
    m = manifest(run_dir)
    listed = sum(f["size"] for f in m["files"] if f["step"] == "ws_sparse")
    on_disk = sum(p.lstat().st_blocks * 512 for p in run_dir.rglob("*") if p.is_file() and not p.is_symlink())
    # bytes the runner hashed for the step, and wrote, stay within the plan's budget (64 MiB)
    assert listed <= 64 << 20, f"{listed >> 20} MiB hashed for a step whose budget is 64 MiB"
    assert on_disk <= 64 << 20, f"{on_disk >> 20} MiB written into the run directory from a 0-byte sparse file"


# ---------------------------------------------------------------------------------------------
# 5. a browser step whose agent paints the page over CDP
# ---------------------------------------------------------------------------------------------


class ListenerLog:
    """The owner (uid) of every listening TCP socket on the host while the block runs, by port: /proc/net/tcp
    read every 20 ms from a thread (the test's, as root: real uids)."""

    def __init__(self) -> None:
        self.seen: dict[int, set[int]] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)

    def _sample(self) -> None:
        for table in ("/proc/net/tcp", "/proc/net/tcp6"):
            try:
                lines = Path(table).read_text().splitlines()[1:]
            except OSError:
                continue
            for line in lines:
                f = line.split()
                if len(f) > 7 and f[3] == "0A":
                    self.seen.setdefault(int(f[1].rsplit(":", 1)[1], 16), set()).add(int(f[7]))

    def _watch(self) -> None:
        while not self._stop.is_set():
            self._sample()
            self._stop.wait(0.02)

    def __enter__(self) -> "ListenerLog":
        self._sample()
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()


def have_browser() -> bool:
    if not Path("/usr/bin/chromium").exists() and not os.environ.get("REFEREE_CHROMIUM"):
        return False
    if Path(sys.prefix).resolve() == VENV_PY.parents[1].resolve():  # this interpreter is the venv's: no child
        return importlib.util.find_spec("playwright.sync_api") is not None
    return subprocess.run([str(VENV_PY), "-c", "import playwright.sync_api"], capture_output=True).returncode == 0


HAVE_BROWSER = have_browser()  # asked once at collection, not once per test


@pytest.mark.skipif(not HAVE_BROWSER, reason="needs Chromium and Playwright")
def test_a_page_the_agent_paints_over_cdp_fails_and_an_honest_change_passes(area):
    plan = (
        "name: paint\n" + app_block()
        + "actor:\n"
        "  kind: browser\n"
        f'  command: "{VENV_PY} {AGENTS / "cdp_painter.py"}"\n'
        "  isolation: bwrap\n"  # the agent needs the venv's Playwright, under /root
        "  timeout_s: 120\n"
        "steps:\n"
        "  - id: paint_dom\n"
        '    do: Add a todo "water the plants".\n'
        "    script: [{goto: /}]\n"
        "    validators:\n"
        "      - {kind: dom_contains, text: water the plants}\n"
        "      - {kind: aria_contains, text: water the plants}\n"
        "      - {kind: ocr_contains, text: water the plants}\n"
        "  - id: init_script\n"
        '    do: Add a todo "buy milk".\n'
        "    validators:\n"
        "      - {kind: dom_contains, text: buy milk}\n"
        "      - {kind: aria_contains, text: buy milk}\n"
        "      - {kind: ocr_contains, text: buy milk}\n"
        "  - id: honest\n"
        '    do: Add a todo "feed the cat".\n'
        "    validators:\n"
        "      - {kind: dom_contains, text: feed the cat}\n"
        "      - {kind: aria_contains, text: feed the cat}\n"
        "      - {kind: ocr_contains, text: feed the cat}\n"
    )
    with ListenerLog() as listeners:
        proc, run_dir = run_plan(area, plan, name="paint", timeout=600)
    assert (run_dir / "results.json").exists(), explain(proc)
    res = results(run_dir)
    # the controls: the painting did show in the agent's own browser
    assert "painted=True" in res["paint_dom"]["claim"]["note"], res["paint_dom"]["claim"]
    assert "painted=True" in res["init_script"]["claim"]["note"], res["init_script"]["claim"]
    for sid in ("paint_dom", "init_script"):
        assert res[sid]["verdict"] == "FAIL", (sid, res[sid]["verdict"], res[sid]["reason"])
        for v in res[sid]["validators"]:
            assert v["status"] == "FAIL", (sid, v)
    # no browser of the runner's answered on DevTools (its capture Chromium has no port). Other runs' agent
    # browsers, of the referee-browser account, may (docs/security-isolation.md), and other tests run at once:
    # every browser the agent painted listened as referee-browser (seen from here: in bwrap every other
    # account reads as nobody)
    note = res["init_script"]["claim"]["note"]
    assert "other_browser_ports=[" in note, res["init_script"]["claim"]
    painted = json.loads(note.split("other_browser_ports=", 1)[1])
    browser_uid = pwd.getpwnam("referee-browser").pw_uid
    owners = {port: listeners.seen.get(port) for port in painted}
    assert all(uids and browser_uid in uids for uids in owners.values()), \
        (owners, browser_uid, res["init_script"]["claim"])
    assert res["honest"]["verdict"] == "PASS", (res["honest"]["reason"], res["honest"]["claim"])
    assert proc.returncode == 1, explain(proc)


@pytest.fixture(scope="module")
def browser_leak_run():
    """One browser run (a Chromium, the app, the runner) for the two tests below, which only read it: the
    agent writes the secret it learnt out of band to the browser's console and refused requests
    (`leak_console`), then stores it in the app through the app's form (`leak_page`)."""
    if not HAVE_BROWSER:
        pytest.skip("needs Chromium and Playwright")
    base = Path(tempfile.mkdtemp(prefix="acc29-", dir="/tmp"))
    try:
        base.chmod(0o755)
        (base / "ws").mkdir()
        (base / "ws").chmod(0o1777)
        (base / "runs").mkdir()
        (base / "runs").chmod(0o755)
        leak = base / "leak.txt"
        leak.write_text(SECRET + "\n")
        leak.chmod(0o644)
        plan = (
            "name: browserleak\n" + app_block()
            + "actor:\n"
            "  kind: browser\n"
            f'  command: "{VENV_PY} {AGENTS / "cdp_painter.py"}"\n'
            "  isolation: bwrap\n"
            "  timeout_s: 120\n"
            f"  env: {{ACC_LEAK: '{leak}'}}\n"
            "steps:\n"
            "  - id: leak_console\n"
            "    do: look around\n"
            "    script: [{goto: /}]\n"
            "    capture:\n"
            '      - {kind: http, name: item, url: "/api/item?token=${ACC_TOKEN}"}\n'
            "    validators:\n"
            "      - {kind: http_status_eq, url: /health, expected: 200}\n"
            "  - id: leak_page\n"
            "    do: add a todo\n"
            "    script: [{goto: /}]\n"
            "    capture:\n"
            '      - {kind: http, name: item, url: "/api/item?token=${ACC_TOKEN}"}\n'
            "    validators:\n"
            "      - {kind: dom_contains, text: never-there}\n"
            "      - {kind: aria_contains, text: never-there}\n"
        )
        # a wide console, so that no table wraps the secret across lines
        proc, run_dir = run_plan(base, plan, name="browserleak", env={"ACC_TOKEN": SECRET, "COLUMNS": "400"},
                                 timeout=600)
        assert (run_dir / "results.json").exists(), explain(proc)
        yield proc, run_dir
    finally:
        subprocess.run(["rm", "-rf", "--one-file-system", str(base)], check=False)


@pytest.mark.skipif(not HAVE_BROWSER, reason="needs Chromium and Playwright")
def test_the_secret_an_agent_writes_to_the_browser_console_reaches_no_file_of_the_run(browser_leak_run):
    proc, run_dir = browser_leak_run
    assert results(run_dir)["leak_console"]["claim"]["note"] == "leaked into the console"
    assert SECRET not in proc.stdout + proc.stderr
    hits = files_holding(run_dir, SECRET)
    assert hits == [], hits


@pytest.mark.skipif(not HAVE_BROWSER, reason="needs Chromium and Playwright")
def test_the_secret_an_agent_stores_in_the_app_reaches_no_file_of_the_run_nor_the_console(browser_leak_run):
    proc, run_dir = browser_leak_run
    res = results(run_dir)["leak_page"]
    assert res["claim"]["note"] == "stored it in the app", res
    assert res["verdict"] == "FAIL", res
    hits = files_holding(run_dir, SECRET)
    assert SECRET not in proc.stdout + proc.stderr, "referee run's console shows the secret"
    assert hits == [], hits


# ---------------------------------------------------------------------------------------------
# 6. referee/ and click.py planted in the working directory
# ---------------------------------------------------------------------------------------------

PLANT = """\
import os, sys
try:
    with open({marker!r} + "-" + str(os.getpid()), "w") as f:
        f.write(repr((os.getuid(), sys.argv, sys.path)))
except OSError:
    pass
"""


def plant_imports(ws: Path) -> Path:
    markers = ws / "markers"
    markers.mkdir()
    markers.chmod(0o1777)
    (ws / "referee").mkdir()
    (ws / "referee" / "__init__.py").write_text(PLANT.format(marker=str(markers / "referee")))
    (ws / "click.py").write_text(PLANT.format(marker=str(markers / "click")))
    (ws / "multiprocessing").mkdir()
    (ws / "multiprocessing" / "__init__.py").write_text(PLANT.format(marker=str(markers / "multiprocessing")))
    return markers


def test_a_planted_referee_package_and_click_module_are_never_imported(area):
    ws = area / "ws"
    markers = plant_imports(ws)
    (area / "acc_pyagent.py").write_text(
        "import referee\n\n"
        "class Agent(referee.Actor):\n"
        "    def act(self, ctx):\n"
        "        return ctx.claim(True, 'python actor here')\n"
    )
    (area / "acc_pyagent.py").chmod(0o644)
    plan_a = (
        "name: cwd_a\n" + app_block()
        + f'actor: {{kind: command, command: "{agent_cmd()}", timeout_s: 60}}\n'
        "steps:\n"
        "  - id: one\n"
        "    do: nothing\n"
        "    capture:\n"
        "      - {kind: command, name: who, command: 'id -u'}\n"
        "    validators:\n"
        "      - {kind: http_status_eq, url: /health, expected: 200}\n"
        "      - {kind: command_exit_code, command: 'true'}\n"
    )
    plan_b = (
        "name: cwd_b\n" + app_block()
        + "actor: {kind: python, target: 'acc_pyagent:Agent', timeout_s: 60}\n"
        "steps:\n"
        "  - id: one\n"
        "    do: nothing\n"
        "    validators:\n"
        "      - {kind: http_status_eq, url: /health, expected: 200}\n"
    )
    (area / "cwd_a.yaml").write_text(plan_a)
    (area / "cwd_b.yaml").write_text(plan_b)
    # the console script itself: what its own process imports from the working directory is the question
    single = referee("run", area / "cwd_a.yaml", "--out", area / "runs", cwd=ws, process=True)
    both = referee("run", area / "cwd_a.yaml", area / "cwd_b.yaml", "-j", "2", "--out", area / "runs", cwd=ws,
                   timeout=600, process=True)
    checked = referee("check", area / "cwd_a.yaml", cwd=ws, process=True)
    graded = referee("grade", area / "runs" / "cwd_b", cwd=ws, process=True)
    found = {p.name: p.read_text()[:600] for p in markers.iterdir()}
    assert found == {}, found
    assert single.returncode == 0, explain(single)
    assert both.returncode == 0, explain(both)
    assert checked.returncode == 0, explain(checked)
    assert graded.returncode == 0, explain(graded)


def test_the_python_actors_host_does_not_import_a_planted_sitecustomize(area):
    ws = area / "ws"
    markers = ws / "markers"
    markers.mkdir()
    markers.chmod(0o1777)
    (ws / "sitecustomize.py").write_text(PLANT.format(marker=str(markers / "sitecustomize")))
    (area / "acc_pyagent.py").write_text(
        "import referee\n\n"
        "class Agent(referee.Actor):\n"
        "    def act(self, ctx):\n"
        "        return ctx.claim(True, 'python actor here')\n"
    )
    plan = (
        "name: sitecust\n"
        "actor: {kind: python, target: 'acc_pyagent:Agent', timeout_s: 60}\n"
        "steps:\n"
        "  - id: one\n"
        "    do: nothing\n"
        "    validators:\n"
        "      - {kind: command_exit_code, command: 'true', run_as: runner}\n"
    )
    proc, run_dir = run_plan(area, plan, name="sitecust")
    assert proc.returncode == 0, explain(proc)
    found = {p.name: p.read_text()[:600] for p in markers.iterdir()}
    assert found == {}, found


def test_python_m_referee_does_not_import_a_planted_click_module(area):
    ws = area / "ws"
    markers = ws / "markers"
    markers.mkdir()
    markers.chmod(0o1777)
    (ws / "click.py").write_text(PLANT.format(marker=str(markers / "click")))
    proc = subprocess.run([str(VENV_PY), "-m", "referee", "kinds"], cwd=ws, capture_output=True, text=True,
                          timeout=120)
    found = {p.name: p.read_text()[:600] for p in markers.iterdir()}
    assert found == {}, found
    assert proc.returncode == 0, proc.stderr[-2000:]


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__, "-q"]))
