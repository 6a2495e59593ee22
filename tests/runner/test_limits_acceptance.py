"""Acceptance tests for `actor.limits`, written from the documentation only.

Sources: docs/security-isolation.md ("Modes", "Resource limits: `actor.limits`", "Every agent process ends
with its step"), docs/runner.md (the command actor, plans, verdicts), /work/shared/DESIGN.md (plan v1,
command-actor protocol, run directory).

Everything goes through the real `referee run` / `referee check` CLI with real agent programs
(/usr/bin/python3 or /bin/sh scripts written into the test's folder, readable by the agent's account).
What an agent observed about its own limits it writes into its `agent/<step>/` folder, which the test
then reads from the run directory.
"""

from __future__ import annotations

import errno
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import textwrap
from pathlib import Path

import pytest

from tests.conftest import run_cli
from tests.runner.runner_helpers import (
    assert_one_line_error,
    find_run_dirs,
    kill_marked,
    wait_unmarked,
    write_plan,
)

PY3 = "/usr/bin/python3"
MiB = 1 << 20
CPU_MSG = "the agent reached its CPU limit"


# ---------------------------------------------------------------- isolation modes available here


def _bwrap_works() -> bool:
    exe = shutil.which("bwrap")
    if not exe:
        return False
    try:
        r = subprocess.run([exe, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-pid",
                            "true"], capture_output=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return r.returncode == 0


IS_ROOT = os.geteuid() == 0
BWRAP_OK = _bwrap_works()

USER = pytest.param("user", id="user",
                    marks=pytest.mark.skipif(not IS_ROOT, reason="user isolation needs a root runner"))
BWRAP = pytest.param("bwrap", id="bwrap",
                     marks=pytest.mark.skipif(not BWRAP_OK, reason="bubblewrap is not installed or cannot run"))
NONE = pytest.param("none", id="none")
ALL_MODES = [USER, BWRAP, NONE]


# ---------------------------------------------------------------- agents and plans

PRELUDE = '''\
import errno, json, mmap, os, resource, signal, subprocess, sys, time
D = os.environ.get("REFEREE_AGENT_DIR", ".")


def save(name, obj):
    tmp = os.path.join(D, name + ".tmp")
    with open(tmp, "w") as f:
        json.dump(obj, f)
    os.replace(tmp, os.path.join(D, name))


def claim(ok, note="", evidence=()):
    with open(os.environ["REFEREE_CLAIM_FILE"], "w") as f:
        json.dump({"pass": ok, "note": note, "evidence": list(evidence)}, f)


'''


def write_agent(tmp_path: Path, name: str, source: str, *, prelude: bool = True) -> Path:
    """An agent script in a folder the agent's account can read (0755)."""
    folder = tmp_path / "agents"
    folder.mkdir(exist_ok=True)
    folder.chmod(0o755)
    path = folder / name
    path.write_text((PRELUDE if prelude else "") + textwrap.dedent(source))
    path.chmod(0o755)
    return path


def py_cmd(script: Path, *args) -> str:
    return " ".join(shlex.quote(str(x)) for x in [PY3, script, *args])


FINISHED = {"kind": "text_contains", "evidence": "report.json", "text": "finished"}


def one_step_plan(command: str, *, isolation: str | None, limits=None, validators=None, capture=None,
                  timeout_s: float = 20, name: str = "limits") -> dict:
    actor: dict = {"kind": "command", "command": command, "timeout_s": timeout_s}
    if isolation is not None:
        actor["isolation"] = isolation
    if limits is not None:
        actor["limits"] = limits
    step: dict = {"id": "s", "do": "do what the script says"}
    if capture:
        step["capture"] = capture
    step["validators"] = validators if validators is not None else [FINISHED]
    return {"name": name, "actor": actor, "steps": [step]}


def report(run) -> dict:
    path = run.run_dir / "agent" / "s" / "report.json"
    assert path.exists(), f"the agent wrote no report.json\n{run.explain()}"
    return json.loads(path.read_text())


def step_record(run) -> dict:
    return run.manifest["steps"]["s"]


def check_isolation(run, mode: str) -> dict:
    iso = run.manifest["isolation"]
    assert iso["mode"] == mode, iso
    assert iso["requested"] == mode, iso
    return iso


def in_mb(value: int, mb: int) -> bool:
    """`memory_mb`/`file_mb` of N: N megabytes, decimal or binary."""
    return mb * 10**6 <= value <= mb * MiB


@pytest.fixture(autouse=True)
def _no_leftovers(tmp_path):
    yield
    kill_marked(tmp_path)


# ---------------------------------------------------------------- memory_mb

MEMORY_AGENT = '''\
def alloc(mb):
    try:
        b = bytearray(mb << 20)
        b[::4096] = b"x" * len(b[::4096])
        return "ok"
    except MemoryError:
        return "MemoryError"


if sys.argv[1:2] == ["child"]:
    print(alloc(int(sys.argv[2])))
    sys.exit(0)


def child(mb):
    p = subprocess.run([sys.executable, __file__, "child", str(mb)], capture_output=True, text=True)
    return p.stdout.strip() or ("exit %s: %s" % (p.returncode, p.stderr[-300:]))


r = {"rlimit_data": list(resource.getrlimit(resource.RLIMIT_DATA))}
r["alloc_400"] = alloc(400)
r["child_alloc_400"] = child(400)
mine = bytearray(60 << 20)          # held while a child allocates as much again
mine[::4096] = b"y" * len(mine[::4096])
r["child_alloc_60_while_parent_holds_60"] = child(60)
m = mmap.mmap(-1, 1 << 30, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS, prot=0)   # reserved only
r["reserve_1g"] = "ok"
r["finished"] = True
save("report.json", r)
'''


@pytest.mark.parametrize("mode", ALL_MODES)
def test_memory_limit_caps_data_memory_of_each_process(mode, tmp_path, run_plan):
    """memory_mb caps data memory (RLIMIT_DATA) per process: an allocation past it fails (MemoryError) in
    the agent and in a child; per process, not a budget; a reservation alone is not counted."""
    agent = write_agent(tmp_path, "memory.py", MEMORY_AGENT)

    held = run_plan(one_step_plan(py_cmd(agent), isolation=mode, limits={"memory_mb": 100}), name="memory")
    assert held.rc == 0, held.explain()
    assert held.verdict("s") == "PASS", held.explain()
    iso = check_isolation(held, mode)
    assert iso["limits"] == {"memory_mb": 100}, iso
    r = report(held)
    soft, hard = r["rlimit_data"]
    assert soft == hard and in_mb(hard, 100), r
    assert r["alloc_400"] == "MemoryError", r
    assert r["child_alloc_400"] == "MemoryError", r
    assert r["child_alloc_60_while_parent_holds_60"] == "ok", r   # per process, not all together
    assert r["reserve_1g"] == "ok", r                               # address space only reserved

    control = run_plan(one_step_plan(py_cmd(agent), isolation=mode), name="memory_control")
    assert control.rc == 0, control.explain()
    assert check_isolation(control, mode)["limits"] is None
    r = report(control)
    assert r["alloc_400"] == "ok", r
    assert r["child_alloc_400"] == "ok", r


# ---------------------------------------------------------------- cpu_s

SPIN_AGENT = '''\
save("rlimit_cpu.json", list(resource.getrlimit(resource.RLIMIT_CPU)))
target = float(sys.argv[1])
if sys.argv[2] == "handler":        # keeps spinning after SIGXCPU: only SIGKILL stops it
    def on_xcpu(sig, frame):
        with open(os.path.join(D, "sigxcpu.txt"), "a") as f:
            f.write("%.2f\\n" % time.process_time())
    signal.signal(signal.SIGXCPU, on_xcpu)
elif sys.argv[2] == "ignore":
    signal.signal(signal.SIGXCPU, signal.SIG_IGN)
last = -1.0
while True:
    t = time.process_time()
    if t - last >= 0.05:  # written whole, then renamed: a kill between open and write left it empty once
        with open(os.path.join(D, "progress.tmp"), "w") as f:
            f.write("%.2f" % t)
        os.replace(os.path.join(D, "progress.tmp"), os.path.join(D, "progress.txt"))
        last = t
    if t >= target:
        break
save("report.json", {"finished": True, "cpu": time.process_time()})
'''


def _progress(run) -> float:
    return float((run.run_dir / "agent" / "s" / "progress.txt").read_text())


def _ended_by(rec: dict, sig: int) -> bool:
    """The agent's exit says `sig` ended it (itself, or a shell or bwrap in front of it saying 128 + sig)."""
    return rec["actor_exit"] in (-sig, 128 + sig)


def _cpu_rlimit(run) -> list[int]:
    """The agent's RLIMIT_CPU (soft, hard) as it read it: the kernel's SIGXCPU at the soft limit and SIGKILL at
    the hard one are the mechanism behind 'SIGXCPU, then SIGKILL a second later'."""
    return json.loads((run.run_dir / "agent" / "s" / "rlimit_cpu.json").read_text())


@pytest.mark.parametrize("mode", ALL_MODES)
def test_cpu_limit_ends_the_agent_and_says_so(mode, tmp_path, run_plan):
    """cpu_s: SIGXCPU at the limit ends an agent that does not handle it; the step's actor_error says
    `the agent reached its CPU limit`; the step does not wait for its timeout; without the limit the
    same agent spins on to the end."""
    agent = write_agent(tmp_path, "spin.py", SPIN_AGENT)

    held = run_plan(one_step_plan(py_cmd(agent, 8, "default"), isolation=mode, limits={"cpu_s": 1},
                                  timeout_s=25), name="cpu_plain")
    iso = check_isolation(held, mode)
    assert iso["limits"] == {"cpu_s": 1}, iso
    assert _cpu_rlimit(held) == [1, 2], _cpu_rlimit(held)
    # the mechanism, not the CPU clock: SIGXCPU ended it (not the SIGKILL of the hard limit, not the
    # timeout), the step says why, nothing of it is left, and it never reached the end of its spin
    rec = step_record(held)
    assert rec["actor_timed_out"] is False, rec
    assert _ended_by(rec, signal.SIGXCPU), rec
    assert CPU_MSG in (rec.get("actor_error") or "") and "SIGKILL" not in rec["actor_error"], rec
    assert not wait_unmarked(tmp_path, 5), "an agent process outlived its CPU limit"
    assert not (held.run_dir / "agent" / "s" / "report.json").exists()
    assert _progress(held) < 8, _progress(held)
    assert held.verdict("s") != "PASS"     # its report is missing: the validator cannot hold

    # past the 1 CPU second where the limit ended it above (and where a SIGXCPU would be logged)
    control = run_plan(one_step_plan(py_cmd(agent, 1.5, "handler"), isolation=mode, timeout_s=25),
                       name="cpu_control")
    assert control.rc == 0, control.explain()
    assert control.verdict("s") == "PASS", control.explain()
    assert report(control)["cpu"] >= 1.5
    assert CPU_MSG not in (step_record(control).get("actor_error") or ""), step_record(control)
    assert not (control.run_dir / "agent" / "s" / "sigxcpu.txt").exists()


@pytest.mark.parametrize("mode", ALL_MODES)
def test_cpu_limit_sigkills_an_agent_that_survives_sigxcpu_a_second_later(mode, tmp_path, run_plan):
    """`SIGXCPU`, then `SIGKILL` a second later: an agent that handles SIGXCPU and spins on is killed at
    about cpu_s + 1 CPU seconds, well before the step's timeout."""
    agent = write_agent(tmp_path, "spin.py", SPIN_AGENT)
    run = run_plan(one_step_plan(py_cmd(agent, 8, "handler"), isolation=mode, limits={"cpu_s": 1},
                                 timeout_s=25), name="cpu_stubborn")
    # the mechanism, not the clock (a loaded machine stretches both the wall and the CPU accounting: 0.83
    # CPU-s was once read at SIGXCPU): the limits the kernel enforces, the SIGXCPU the agent caught, the
    # SIGKILL that ended it after it spun on, and not the step's timeout
    assert _cpu_rlimit(run) == [1, 2], _cpu_rlimit(run)
    rec = step_record(run)
    assert rec["actor_timed_out"] is False, rec
    assert CPU_MSG in (rec.get("actor_error") or "") and "SIGKILL" in rec["actor_error"], rec
    adir = run.run_dir / "agent" / "s"
    assert _ended_by(rec, signal.SIGKILL), rec
    assert not wait_unmarked(tmp_path, 5), "an agent process outlived its CPU limit"
    assert not (adir / "report.json").exists()
    xcpu = [float(x) for x in (adir / "sigxcpu.txt").read_text().split()]
    assert xcpu, "the agent never caught SIGXCPU"
    assert xcpu[0] < _progress(run) < 8, (xcpu, _progress(run))      # it spun on after SIGXCPU, not to the end


@pytest.mark.parametrize("mode", ALL_MODES)
def test_cpu_limit_actor_error_also_when_sigkill_ends_the_agent(mode, tmp_path, run_plan):
    """The table row for cpu_s: '`SIGXCPU`, then `SIGKILL` a second later; the step's `actor_error` says
    `the agent reached its CPU limit`': also for an agent that ignores SIGXCPU and so ends by the SIGKILL."""
    agent = write_agent(tmp_path, "spin.py", SPIN_AGENT)
    run = run_plan(one_step_plan(py_cmd(agent, 8, "ignore"), isolation=mode, limits={"cpu_s": 1},
                                 timeout_s=25), name="cpu_ignores")
    assert _cpu_rlimit(run) == [1, 2], _cpu_rlimit(run)
    rec = step_record(run)
    assert rec["actor_timed_out"] is False, rec
    assert not (run.run_dir / "agent" / "s" / "report.json").exists()
    assert _ended_by(rec, signal.SIGKILL), rec                # SIGXCPU ignored: ended by the SIGKILL
    assert not wait_unmarked(tmp_path, 5), "an agent process outlived its CPU limit"
    assert CPU_MSG in (rec.get("actor_error") or ""), rec


# ---------------------------------------------------------------- file_mb

FILE_AGENT = '''\
size = 3 << 20
r = {"rlimit_fsize": list(resource.getrlimit(resource.RLIMIT_FSIZE))}
path = os.path.join(D, "big.bin")
written, err = 0, None
try:
    with open(path, "wb", buffering=0) as f:
        chunk = b"x" * 65536
        while written < size:
            written += f.write(chunk)
except OSError as e:
    err = e.errno
r["python_errno"] = err
r["python_size"] = os.path.getsize(path)
sh = subprocess.run(["/bin/sh", "-c", 'head -c 3145728 /dev/zero > "$REFEREE_AGENT_DIR/shell.bin"'])
r["shell_rc"] = sh.returncode
r["shell_size"] = os.path.getsize(os.path.join(D, "shell.bin"))
r["finished"] = True
save("report.json", r)
'''


@pytest.mark.parametrize("mode", ALL_MODES)
def test_file_limit_caps_the_size_of_files_written(mode, tmp_path, run_plan):
    """file_mb caps any file it writes (RLIMIT_FSIZE): the write fails (EFBIG) or SIGXFSZ ends the process."""
    agent = write_agent(tmp_path, "bigfile.py", FILE_AGENT)

    held = run_plan(one_step_plan(py_cmd(agent), isolation=mode, limits={"file_mb": 1}), name="file")
    assert held.rc == 0, held.explain()
    assert held.verdict("s") == "PASS", held.explain()
    iso = check_isolation(held, mode)
    assert iso["limits"] == {"file_mb": 1}, iso
    r = report(held)
    soft, hard = r["rlimit_fsize"]
    assert soft == hard and in_mb(hard, 1), r
    assert r["python_errno"] == errno.EFBIG, r
    assert 10**6 // 2 <= r["python_size"] <= MiB, r
    assert r["shell_rc"] != 0, r          # head got SIGXFSZ (or EFBIG) in a child
    assert r["shell_size"] <= MiB, r
    assert (held.run_dir / "agent" / "s" / "big.bin").stat().st_size <= MiB

    control = run_plan(one_step_plan(py_cmd(agent), isolation=mode), name="file_control")
    assert control.rc == 0, control.explain()
    r = report(control)
    assert r["python_errno"] is None and r["python_size"] == 3 * MiB, r
    assert r["shell_rc"] == 0 and r["shell_size"] == 3 * MiB, r


# ---------------------------------------------------------------- processes

FORK_AGENT = '''\
n = int(sys.argv[1])
r = {"rlimit_nproc": list(resource.getrlimit(resource.RLIMIT_NPROC))}
kids, err = [], None
for _ in range(n):
    try:
        pid = os.fork()
    except OSError as e:
        err = e.errno
        break
    if pid == 0:
        time.sleep(60)
        os._exit(0)
    kids.append(pid)
r["forked"] = len(kids)
r["errno"] = err
for k in kids:
    os.kill(k, signal.SIGKILL)
for k in kids:
    os.waitpid(k, 0)
r["finished"] = True
save("report.json", r)
'''


@pytest.mark.skipif(not IS_ROOT, reason="user isolation needs a root runner")
def test_processes_limit_holds_under_user_isolation(tmp_path, run_plan):
    """processes caps the processes of the agent's account at once (RLIMIT_NPROC): fork fails (EAGAIN)."""
    agent = write_agent(tmp_path, "forker.py", FORK_AGENT)

    held = run_plan(one_step_plan(py_cmd(agent, 30), isolation="user", limits={"processes": 10}), name="procs")
    assert held.rc == 0, held.explain()
    iso = check_isolation(held, "user")
    assert iso["limits"] == {"processes": 10}, iso
    r = report(held)
    assert r["rlimit_nproc"] == [10, 10], r
    assert r["errno"] == errno.EAGAIN, r
    assert 5 <= r["forked"] <= 9, r

    control = run_plan(one_step_plan(py_cmd(agent, 30), isolation="user"), name="procs_control")
    assert control.rc == 0, control.explain()
    r = report(control)
    assert r["forked"] == 30 and r["errno"] is None, r


@pytest.mark.parametrize("mode", [BWRAP, NONE])
def test_processes_is_left_out_under_bwrap_and_none_and_the_note_says_so(mode, tmp_path, run_plan):
    """Under bwrap or none `processes` is left out, and the manifest's isolation.note says so; the limits
    that held (the others) are recorded."""
    agent = write_agent(tmp_path, "forker.py", FORK_AGENT)
    run = run_plan(one_step_plan(py_cmd(agent, 20), isolation=mode, limits={"processes": 10, "memory_mb": 300}),
                   name="procs_left_out")
    assert run.rc == 0, run.explain()
    assert run.verdict("s") == "PASS", run.explain()
    iso = check_isolation(run, mode)
    assert iso["limits"] == {"memory_mb": 300}, iso
    assert "processes" in (iso.get("note") or ""), iso
    r = report(run)
    assert r["rlimit_nproc"] != [10, 10], r
    assert r["forked"] == 20 and r["errno"] is None, r


# ---------------------------------------------------------------- hard limits: no raising them again

RAISE_AGENT = '''\
INF = resource.RLIM_INFINITY
NAMES = {"memory_mb": resource.RLIMIT_DATA, "cpu_s": resource.RLIMIT_CPU,
         "file_mb": resource.RLIMIT_FSIZE, "processes": resource.RLIMIT_NPROC}


def attempt():
    out = {}
    for key, res in NAMES.items():
        soft, hard = resource.getrlimit(res)
        tries = {}
        for label, new in (("hard_unlimited", (soft, INF)), ("both_unlimited", (INF, INF)),
                           ("hard_doubled", (soft, hard * 2 if hard != INF else INF))):
            try:
                resource.setrlimit(res, new)
                tries[label] = "raised" if resource.getrlimit(res)[1] != hard else "unchanged"
            except (ValueError, OSError) as e:
                tries[label] = "refused: %s" % e
        out[key] = {"before": [soft, hard], "after": list(resource.getrlimit(res)), "tries": tries}
    try:
        b = bytearray(400 << 20)
        out["alloc_400"] = "ok"
        del b
    except MemoryError:
        out["alloc_400"] = "MemoryError"
    return out


if sys.argv[1:2] == ["child"]:
    print(json.dumps(attempt()))
    sys.exit(0)

r = {}
p = subprocess.run([sys.executable, __file__, "child"], capture_output=True, text=True)
r["child"] = json.loads(p.stdout) if p.returncode == 0 else {"error": p.stderr[-500:]}
shell = {}
for opt in ("d", "t", "f"):
    q = subprocess.run(["/bin/sh", "-c", "ulimit -H -%s unlimited 2>/dev/null && ulimit -H -%s" % (opt, opt)],
                       capture_output=True, text=True)
    shell[opt] = [q.returncode, q.stdout.strip()]
r["shell"] = shell
r["parent"] = attempt()
r["finished"] = True
save("report.json", r)
'''


@pytest.mark.parametrize("mode", ALL_MODES)
def test_agent_cannot_raise_its_limits_again(mode, tmp_path, run_plan):
    """The runner sets them soft and hard before it runs the agent, so every process the agent starts
    inherits them and none can raise them again (runner.md: 'it cannot raise them')."""
    limits = {"memory_mb": 100, "cpu_s": 10, "file_mb": 1}
    if mode == "user":
        limits["processes"] = 50
    agent = write_agent(tmp_path, "raise.py", RAISE_AGENT)
    run = run_plan(one_step_plan(py_cmd(agent), isolation=mode, limits=limits), name="raise")
    assert run.rc == 0, run.explain()
    iso = check_isolation(run, mode)
    assert iso["limits"] == limits, iso
    r = report(run)
    for who in ("child", "parent"):
        got = r[who]
        assert "error" not in got, got
        for key in limits:
            entry = got[key]
            assert entry["before"][1] != -1, (who, key, entry)           # a hard limit is set
            assert entry["after"][1] == entry["before"][1], (who, key, entry)
            assert not any(v == "raised" for v in entry["tries"].values()), (who, key, entry)
        assert got["alloc_400"] == "MemoryError", (who, got)              # and it still holds
    for opt, (rc, shown) in r["shell"].items():
        assert rc != 0 and shown != "unlimited", (opt, rc, shown)


# ---------------------------------------------------------------- what the manifest records

NOOP_AGENT = '''\
save("report.json", {"finished": True})
claim(True, "done")
'''


@pytest.mark.parametrize("mode", ALL_MODES)
def test_manifest_records_the_limits_that_held(mode, tmp_path, run_plan):
    """'The manifest records the limits that held: "isolation": {..., "limits": {"memory_mb": 4096,
    "cpu_s": 600}}'; no limits: "limits": null."""
    agent = write_agent(tmp_path, "noop.py", NOOP_AGENT)
    run = run_plan(one_step_plan(py_cmd(agent), isolation=mode, limits={"memory_mb": 4096, "cpu_s": 600}),
                   name="recorded")
    assert run.rc == 0, run.explain()
    iso = check_isolation(run, mode)
    assert iso["limits"] == {"memory_mb": 4096, "cpu_s": 600}, iso
    for key in ("mode", "requested", "note", "tracking", "limits"):
        assert key in iso, iso

    bare = run_plan(one_step_plan(py_cmd(agent), isolation=mode), name="unlimited")
    assert bare.rc == 0, bare.explain()
    assert check_isolation(bare, mode)["limits"] is None


# ---------------------------------------------------------------- a limit decides nothing

def _state_path(tmp_path: Path) -> Path:
    return tmp_path / "state.txt"


def _limit_agent(tmp_path: Path, kind: str, *, claim_first: bool) -> tuple[str, dict]:
    """An agent that does its work (writes the workspace's state.txt), then runs into `kind`'s limit."""
    state = _state_path(tmp_path)
    pre = f"open({str(state)!r}, 'w').write('order 42 placed\\n')\n"
    if claim_first:
        pre += "claim(True, 'all done', ['result.txt'])\n"
    if kind == "cpu":
        body = pre + "while True:\n    pass\nopen(os.path.join(D, 'result.txt'), 'w').write('done')\n"
        limits = {"cpu_s": 1}
    elif kind == "memory":
        body = pre + "b = bytearray(400 << 20)\nopen(os.path.join(D, 'result.txt'), 'w').write('done')\n"
        limits = {"memory_mb": 100}
    else:  # file: the result is written, but cut at the limit before its last word
        body = pre + ("with open(os.path.join(D, 'result.txt'), 'wb', buffering=0) as f:\n"
                      "    f.write(b'x' * (2 << 20))\n"       # cut at 1 MiB (a short write)
                      "    f.write(b'done')\n")
        limits = {"file_mb": 1}
    agent = write_agent(tmp_path, f"{kind}_agent.py", body)
    return py_cmd(agent), limits


@pytest.mark.parametrize("kind", ["cpu", "memory", "file"])
def test_an_agent_killed_by_a_limit_still_passes_on_runner_evidence(kind, tmp_path, run_plan):
    """'Hitting a limit decides nothing: the step is graded on its evidence like any other.'"""
    cmd, limits = _limit_agent(tmp_path, kind, claim_first=False)
    state = _state_path(tmp_path)
    plan = one_step_plan(cmd, isolation=None, limits=limits, timeout_s=20,
                         capture=[{"kind": "command", "name": "state", "command": f"cat {shlex.quote(str(state))}"}],
                         validators=[{"kind": "text_contains", "evidence": "state", "text": "order 42 placed"},
                                     {"kind": "file_exists", "path": str(state)}])
    run = run_plan(plan, name=f"dies_{kind}")
    rec = step_record(run)
    assert rec["actor_timed_out"] is False, rec      # the limit ended it, not the step's timeout
    if kind == "cpu":
        assert CPU_MSG in (rec.get("actor_error") or ""), rec
    else:
        assert rec["actor_exit"] not in (0, None), rec       # the limit ended it with a failure
    assert run.verdict("s") == "PASS", run.explain()
    assert run.rc == 0, run.explain()
    assert run.step("s")["overclaim"] is False


@pytest.mark.parametrize("kind,expected", [("cpu", "ERROR"), ("memory", "ERROR"), ("file", "FAIL")])
def test_a_claimed_pass_after_a_limit_is_not_pass_without_its_evidence(kind, expected, tmp_path, run_plan):
    """The claim never decides: an agent that claimed pass, then ran into a limit before its evidence was
    written (missing: ERROR) or whole (cut short: FAIL), is not PASS, and is an overclaim."""
    cmd, limits = _limit_agent(tmp_path, kind, claim_first=True)
    plan = one_step_plan(cmd, isolation=None, limits=limits, timeout_s=20,
                         validators=[{"kind": "text_contains", "evidence": "result.txt", "text": "done"}])
    run = run_plan(plan, name=f"overclaims_{kind}")
    assert step_record(run)["actor_timed_out"] is False, step_record(run)   # the limit ended it, not the timeout
    step = run.step("s")
    assert step["claim"] and step["claim"]["pass"] is True, step
    assert step["verdict"] == expected, run.explain()
    assert step["overclaim"] is True, step
    assert run.rc == 1, run.explain()
    if kind == "cpu":
        assert CPU_MSG in (step_record(run).get("actor_error") or "")
    if kind == "file":
        assert (run.run_dir / "agent" / "s" / "result.txt").stat().st_size <= MiB


# ---------------------------------------------------------------- bad values are plan errors

BAD_PLAN = """\
name: bad-limits
actor:
  command: {cmd}
  isolation: none
  limits:
    cpu_s: 30
    {entry}
steps:
  - id: s
    do: write a marker
    validators:
      - {{kind: text_contains, evidence: report.json, text: finished}}
"""

BAD_LIMITS_NOT_A_MAPPING = """\
name: bad-limits
actor:
  command: {cmd}
  isolation: none
  limits: 512
steps:
  - id: s
    do: write a marker
    validators:
      - {{kind: text_contains, evidence: report.json, text: finished}}
"""

BAD_ENTRIES = [
    pytest.param("memory_mb: 0", "memory_mb", id="memory_mb-zero"),
    pytest.param("cpu_s: 0", "cpu_s", id="cpu_s-zero"),
    pytest.param("file_mb: -1", "file_mb", id="file_mb-negative"),
    pytest.param("processes: -5", "processes", id="processes-negative"),
    pytest.param("memory_md: 100", "memory_md", id="unknown-key"),
    pytest.param("file_mb: lots", "file_mb", id="string"),
    pytest.param("cpu_s: [1, 2]", "cpu_s", id="list"),
    pytest.param("processes: {n: 3}", "processes", id="mapping"),
    pytest.param(None, "limits", id="limits-not-a-mapping"),
]


@pytest.mark.parametrize("entry,named", BAD_ENTRIES)
def test_bad_limit_values_are_a_one_line_plan_error(entry, named, tmp_path, cli_env):
    marker = tmp_path / "agent-ran.txt"
    agent = write_agent(tmp_path, "marker.py", f"open({str(marker)!r}, 'w').write('ran')\n")
    cmd = json.dumps(py_cmd(agent))
    if entry is None:
        text, line = BAD_LIMITS_NOT_A_MAPPING.format(cmd=cmd), 5
    else:
        text, line = BAD_PLAN.format(cmd=cmd, entry=entry), 7
    path = write_plan(tmp_path / "bad.yaml", text)

    for args in (["check", str(path)], ["run", str(path), "--out", str(tmp_path / "out")]):
        rc, out, err = run_cli(args, cwd=tmp_path, env=cli_env, timeout=60)
        msg = assert_one_line_error(rc, out, err, expected_rc=2)
        assert re.search(rf"bad\.yaml:{line}:\d+: ", msg), (args[0], msg)
        assert named in msg, (args[0], msg)
        if entry is not None and entry.startswith("memory_md"):
            assert "memory_mb" in msg, msg       # the known fields / the near miss
    assert not marker.exists(), "referee run started the agent of a plan with a bad limit"
    assert not find_run_dirs(tmp_path / "out"), "referee run made a run directory for a bad plan"


# ---------------------------------------------------------------- the docs' example, as written

DOCS_PLAN = """\
name: docs-limits
actor:
  command: "/usr/bin/python3 my_agent.py"
  limits: {memory_mb: 4096, cpu_s: 600, file_mb: 1024, processes: 256}   # each optional; left out: no limit
steps:
  - id: look
    do: Write down the limits you run under.
    validators:
      - kind: text_contains
        evidence: limits.txt
        text: Max data size
"""

DOCS_AGENT = """\
import json, os
d = os.environ["REFEREE_AGENT_DIR"]
with open("/proc/self/limits") as src, open(os.path.join(d, "limits.txt"), "w") as dst:
    dst.write(src.read())
with open(os.environ["REFEREE_CLAIM_FILE"], "w") as f:
    json.dump({"pass": True, "note": "wrote my limits", "evidence": ["limits.txt"]}, f)
"""


def _proc_limits(text: str) -> dict[str, tuple[str, str]]:
    rows = {}
    for line in text.splitlines()[1:]:
        m = re.match(r"(.+?)\s{2,}(\S+)\s+(\S+)", line)
        if m:
            rows[m.group(1).strip()] = (m.group(2), m.group(3))
    return rows


def test_the_docs_limits_example_checks_and_runs(tmp_path, cli_env):
    agent = tmp_path / "my_agent.py"
    agent.write_text(DOCS_AGENT)
    agent.chmod(0o644)
    path = write_plan(tmp_path / "docs.yaml", DOCS_PLAN)

    rc, out, err = run_cli(["check", str(path)], cwd=tmp_path, env=cli_env, timeout=60)
    assert rc == 0, (out, err)
    assert "Traceback" not in out + err

    rc, out, err = run_cli(["run", str(path), "--out", str(tmp_path / "out")], cwd=tmp_path, env=cli_env,
                           timeout=90)
    assert rc == 0, (out, err)
    run_dir = find_run_dirs(tmp_path / "out")[-1]
    results = json.loads((run_dir / "results.json").read_text())
    assert [s["verdict"] for s in results["steps"]] == ["PASS"], results
    iso = json.loads((run_dir / "manifest.json").read_text())["isolation"]
    assert iso["requested"] == "auto", iso
    every = {"memory_mb": 4096, "cpu_s": 600, "file_mb": 1024, "processes": 256}
    if iso["mode"] == "user":
        assert iso["limits"] == every, iso
    else:
        assert iso["limits"] == {k: v for k, v in every.items() if k != "processes"}, iso
        assert "processes" in (iso.get("note") or ""), iso
    if IS_ROOT:
        assert iso["mode"] == "user", iso     # auto takes user when the runner is root and it can reach all

    rows = _proc_limits((run_dir / "agent" / "look" / "limits.txt").read_text())
    data_soft, data_hard = rows["Max data size"]
    assert data_soft == data_hard and in_mb(int(data_hard), 4096), rows["Max data size"]
    size_soft, size_hard = rows["Max file size"]
    assert size_soft == size_hard and in_mb(int(size_hard), 1024), rows["Max file size"]
    cpu_soft, cpu_hard = rows["Max cpu time"]
    assert int(cpu_soft) == 600 and int(cpu_hard) in (600, 601), rows["Max cpu time"]
    if iso["mode"] == "user":
        assert rows["Max processes"] == ("256", "256"), rows["Max processes"]
