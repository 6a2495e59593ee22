"""Black-box acceptance tests: small files of a many-file input read whole by the pool's workers.

Written from the contract alone (docs/scale.md "referee audit --workers N", "What stays as it is with
workers", "Who reads the input"; docs/auditor.md), never from the code under test. When the input is
more than one file (a folder, or several paths), each small file (<= 2 MiB, a built-in or sniffed
format) is read whole by a worker; this process only names it. A file named alone, and a file over
2 MiB that is not a trace v1 line file, are read by this process. Whatever reads a file, the audit is
the one `--workers 1` makes: the audit file byte for byte, stderr (warnings, errors, notes) line for
line in the same order, the exit code, the summary, the gold file and the cache rows. Duplicates go to
the first run in input order, as serially, also when a big file read here repeats a run_id of a line
file whose last chunk is still in the workers' hands. A resume, also after SIGKILL of the whole process
group, ends with a serial run's file.

Who opened which input file is watched from outside the code: a `sitecustomize.py` put first on
PYTHONPATH (for the pooled runs; the serial reference runs in the test's own process) installs an audit
hook (PEP 578) that logs every `open` event's pid and path; forkserver workers inherit it from the
forkserver, which imports it too.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import pytest

from tests.audit.test_audit_workers_lines import evidence_rows, first_difference
from tests.conftest import ROOT, base_cli_env, run_cli

POOL_LINE = "referee: auditing on local process pool"
DATA = ROOT / "tests" / "data" / "traces"
MIB = 1024 * 1024

VERBS = ["Delete the note N{i}", "Create a task T{i} named report", "Send the invoice INV-{i} to ops",
         "What is the total of order O{i}?", "Set the timezone of user U{i} to UTC", "Tidy up workspace W{i}"]
ACTIONS = ["get_item", "update_item", "delete_item", "search", "send_message", "create_item"]

HOOK = r'''
import os, sys
_log = os.environ.get("REFEREE_TEST_OPEN_LOG")
_root = os.environ.get("REFEREE_TEST_OPEN_ROOT")
if _log and _root:
    try:
        _fd = os.open(_log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    except OSError:
        _fd = None
    _busy = []

    def _referee_test_hook(event, args):
        if event != "open" or _busy or _fd is None:
            return
        _busy.append(1)
        try:
            path = args[0]
            if isinstance(path, bytes):
                path = os.fsdecode(path)
            if isinstance(path, str):
                path = os.path.abspath(path)
                if path.startswith(_root):
                    os.write(_fd, ("%d\t%s\n" % (os.getpid(), path)).encode("utf-8", "surrogateescape"))
        except Exception:
            pass
        finally:
            _busy.pop()

    sys.addaudithook(_referee_test_hook)
'''


# ---------------------------------------------------------------- inputs


def trace(i: int, *, steps: int = 14, text: str = "", run_id: str | None = None, **extra) -> dict:
    """A varied trace v1 record (every claim kind, some failed observations); `text` goes into each observation."""
    st = []
    for k in range(steps):
        obs: dict = {"text": f"ok item X{i}-{k} total ${k * 7}.50 on 2024-05-{k % 28 + 1:02d}{text}",
                     "data": {"id": f"X{i}-{k}", "n": k, "tags": ["a", "b"][: k % 3]}}
        if (i + k) % 7 == 0:
            obs = {"text": f"Error: item X{i}-{k} not found{text}", "error": True}
        st.append({"action": {"name": ACTIONS[(i + k) % len(ACTIONS)], "args": {"id": f"X{i}-{k}", "v": k * 3.5}},
                   "observation": obs, "narration": f"step {k} of run {i}"})
    report = [f"Done, X{i}-1 updated for ${i}.50.", "I could not finish.", None, f"The total is ${i}.50.",
              "Maybe it worked?"][i % 5]
    rec = {"trace_version": 1, "run_id": run_id or f"r{i:04d}", "task": VERBS[i % len(VERBS)].format(i=i),
           "steps": st, "report": report, "meta": {"group": f"g{i % 4}"}}
    rec.update(extra)
    return rec


def put(path: Path, data: str | bytes | dict | list) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, (dict, list)):
        data = json.dumps(data, indent=1)
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    return path


def filler(folder: Path, start: int, n: int, **kw) -> list[Path]:
    """n one-run files, trace v1 .json (pretty-printed) and .jsonl (one line) in turn, some with gold."""
    made = []
    for i in range(start, start + n):
        extra = {"gold": {"completed": i % 3 == 0}} if i % 4 == 1 else {}
        rec = trace(i, **kw, **extra)
        if i % 2:
            made.append(put(folder / f"run{i:04d}.json", json.dumps(rec, indent=2)))
        else:
            made.append(put(folder / f"run{i:04d}.jsonl", json.dumps(rec) + "\n"))
    return made


SWE_TASK = ("<pr_description>\nConsider the following PR description:\nRename `foo` to `bar` in pkg/util.py\n"
            "</pr_description>\n\n<instructions>\nsubmit with echo COMPLETE</instructions>")


def swe_traj(instance_id: str) -> dict:
    msgs = [{"role": "system", "content": "You are a helpful assistant."},
            {"role": "user", "content": SWE_TASK},
            {"role": "assistant", "content": "THOUGHT: look around.\n\n```bash\ngrep -rn foo pkg\n```"},
            {"role": "user", "content": "<returncode>0</returncode>\n<output>\npkg/util.py:3:def foo():\n</output>"},
            {"role": "assistant", "content": "THOUGHT: edit it.\n```bash\nsed -i s/foo/bar/ pkg/util.py\n```"},
            {"role": "user", "content": "<returncode>0</returncode>\n<output>\n</output>"},
            {"role": "assistant", "content": "THOUGHT: a missing file.\n```bash\ncat nope.py\n```"},
            {"role": "user", "content": "<returncode>1</returncode>\n<output>\ncat: nope.py: No such file\n</output>"},
            {"role": "assistant", "content": "THOUGHT: I renamed foo to bar and the tests pass.\n\n```bash\n"
                                             "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git diff --cached\n```"},
            {"role": "user", "content": "diff --git a/pkg/util.py b/pkg/util.py\n-def foo():\n+def bar():\n"}]
    return {"instance_id": instance_id, "info": {"exit_status": "Submitted", "submission": "diff"},
            "messages": msgs, "trajectory_format": "mini-swe-agent-1"}


def latin1_file(path: Path, i: int) -> Path:
    rec = trace(i, steps=4, task=f"Delete the caf\u00e9 note N{i}")
    return put(path, (json.dumps(rec, ensure_ascii=False) + "\n").encode("latin-1"))


def long_run(path: Path, run_id: str = "long-run") -> Path:
    """One long run (4,000 steps, about 1 MB: still a small file) that takes this process a second or so to
    audit. Put first, it keeps this process busy with its own first chunk while the workers start, so the
    chunks after it go to the workers even on a busy machine (docs/scale.md: this process audits the oldest
    chunks itself until the workers are up, then every chunk goes to them)."""
    put(path, json.dumps(trace(5001, steps=4000, run_id=run_id)))
    assert path.stat().st_size < 2 * MIB
    return path


def mixed_folder(root: Path) -> dict[str, Path]:
    """A folder of ~75 small files in every built-in shape, the odd ones in its middle and at its end."""
    m = root / "mixed"
    named: dict[str, Path] = {}
    long_run(m / "a_0_long.json")
    filler(m / "a_fill", 0, 30)
    named["chat"] = put(m / "b_chat.json", (DATA / "chat.json").read_bytes())  # OpenAI chat
    named["tau"] = put(m / "c_tau.jsonl", (DATA / "tau_small.jsonl").read_bytes())  # tau-bench: gold, 1 bad run
    multi = [trace(900), trace(901, timestamp="2024-05-01T00:00:00Z"),
             trace(7, text=" again", task="Delete the note N7 (d_multi's copy)"), trace(902)]
    named["multi"] = put(m / "d_multi.jsonl", "".join(json.dumps(r) + "\n" for r in multi))  # repeats r0007
    named["bad"] = put(m / "e_bad.json", {k: v for k, v in trace(903).items() if k != "task"})
    named["cut"] = put(m / "e_cut.json", json.dumps(trace(904), indent=1)[:700])
    deep = "".join('{"k": ' if d % 2 else "[" for d in range(20000)) + "1" + "".join(
        "}" if d % 2 else "]" for d in reversed(range(20000)))
    named["deep"] = put(m / "e_deep.json", '{"trace_version": 1, "run_id": "deep", "task": "t", "steps": [], '
                                           '"x": %s}' % deep)  # 20,000 levels: what reading may raise on
    named["empty"] = put(m / "e_empty.json", "")
    named["latin1"] = latin1_file(m / "f_latin1.jsonl", 905)
    swe = m / "g_swe"
    for iid in ("acme__widgets-1", "acme__widgets-2", "acme__widgets-3"):
        put(swe / "trajs" / f"{iid}.traj.json", swe_traj(iid))
    put(swe / "reports" / "acme__widgets-1.report.json", {"acme__widgets-1": {"resolved": True}})
    put(swe / "reports" / "acme__widgets-2.report.json", '{"acme__widgets-2": {"resolved": tr')  # cut short
    put(swe / "reports" / "acme__widgets-3.report.json", {"resolved": False})
    filler(m / "h_fill", 50, 30)
    named["z_dup"] = put(m / "z_dup.json", trace(901, task="z_dup's copy"))  # repeats d_multi's r0901
    named["z_latin1"] = latin1_file(m / "z_latin1.jsonl", 906)
    named["z_thought"] = put(m / "z_thought.json", trace(907, thought="hmm"))
    named["z_bad"] = put(m / "z_bad.jsonl", '{"trace_version": 1, "run_id": "zbad", "steps": []}\n')
    return named


def big_array(path: Path, recs: list[dict], size: int = 2 * MIB + 300_000) -> Path:
    """A JSON array of runs over 2 MiB (each run carrying a big field trace v1 does not define)."""
    pad = size // len(recs) + 1
    recs = [{**r, "raw_log": "log line\n" * (pad // 9 + 1)} for r in recs]
    put(path, json.dumps(recs, indent=1))
    assert path.stat().st_size > 2 * MIB
    return path


# ---------------------------------------------------------------- running the CLI


@dataclass
class Outcome:
    rc: int
    stdout: str
    stderr: list[str]  # without the pool line
    pool: bool
    out: bytes | None
    gold: bytes | None
    summary: dict | None
    cache: list[tuple] | None
    reads: dict[int, set[str]] = field(default_factory=dict)  # pid -> input files it opened
    pid: int = 0

    def ids(self) -> list[str]:
        return [json.loads(ln)["run_id"] for ln in (self.out or b"").decode().splitlines()]

    def record(self, run_id: str) -> dict:
        found = [json.loads(ln) for ln in (self.out or b"").decode().splitlines()
                 if json.loads(ln)["run_id"] == run_id]
        assert len(found) == 1, (run_id, len(found))
        return found[0]

    def parent_reads(self) -> set[str]:
        return self.reads.get(self.pid, set())

    def worker_reads(self) -> set[str]:
        return set().union(*[v for k, v in self.reads.items() if k != self.pid])


def hooked_env(tmp_path: Path, run_dir: Path) -> dict:
    hook = tmp_path / "hook"
    if not (hook / "sitecustomize.py").exists():
        put(hook / "sitecustomize.py", HOOK)
    env = base_cli_env()
    env["PYTHONPATH"] = str(hook) + os.pathsep + env["PYTHONPATH"]
    env["REFEREE_TEST_OPEN_LOG"] = str(run_dir / "opens.log")
    env["REFEREE_TEST_OPEN_ROOT"] = str((tmp_path / "in").resolve()) + os.sep
    return env


def read_opens(log: Path) -> dict[int, set[str]]:
    reads: dict[int, set[str]] = {}
    if log.exists():
        for ln in log.read_text(encoding="utf-8", errors="replace").splitlines():
            pid, _, path = ln.partition("\t")
            reads.setdefault(int(pid), set()).add(path)
    return reads


def audit_args(inputs: list[str], workers: int | None, chunk: int, extra: tuple[str, ...]) -> list[str]:
    """The command; `workers` None leaves --workers out (the pool starts when the work looks worth it)."""
    return ["audit", *inputs, "--out", "audit.jsonl", *([] if workers is None else ["--workers", str(workers)]),
            "--chunk-size", str(chunk), "--no-progress", "--show", "all", "--summary-json", "summary.json", *extra]


def audit(tmp_path: Path, run_dir: Path, inputs: list[str], *extra: str, workers: int | None,
          chunk: int = 4, env: dict | None = None, here: bool = False) -> Outcome:
    """`referee audit INPUTS --out audit.jsonl --workers N --chunk-size C ...` in `run_dir`: in a child with
    the open log (`env`, made by `hooked_env` if not given), or, `here`, in this process (from the main thread;
    no open log: for a reference run, whose reads no test looks at)."""
    run_dir.mkdir(exist_ok=True)
    (run_dir / "summary.json").unlink(missing_ok=True)
    (run_dir / "opens.log").unlink(missing_ok=True)
    if here:
        rc, so, se = run_cli(audit_args(inputs, workers, chunk, extra), cwd=run_dir, env=base_cli_env(),
                             timeout=150)
        pid = 0
    else:
        cmd = [sys.executable, "-m", "referee.cli.main", *audit_args(inputs, workers, chunk, extra)]
        proc = subprocess.Popen(cmd, cwd=run_dir, env=env or hooked_env(tmp_path, run_dir), stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
        try:
            so, se = proc.communicate(timeout=150)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            so, se = proc.communicate()
            pytest.fail(f"referee audit did not finish in 150 s\n{se[-3000:]}")
        rc, pid = proc.returncode, proc.pid
    assert "Traceback" not in se and "internal error" not in se, se
    err = se.splitlines()
    summ_path = run_dir / "summary.json"
    summ = json.loads(summ_path.read_text()) if summ_path.exists() else None
    if summ is not None:
        summ.pop("elapsed_s", None)  # wall time: the one figure allowed to differ
    out, gold = run_dir / "audit.jsonl", run_dir / "gold.jsonl"
    return Outcome(rc=rc, stdout=re.sub(r"\([0-9.]+ rec/s\)", "(N rec/s)", so),
                   stderr=[ln for ln in err if not ln.startswith(POOL_LINE)],
                   pool=any(ln.startswith(POOL_LINE) for ln in err),
                   out=out.read_bytes() if out.exists() else None, gold=gold.read_bytes() if gold.exists() else None,
                   summary=summ, cache=evidence_rows(run_dir / "audit.jsonl.cache.sqlite"),
                   reads=read_opens(run_dir / "opens.log"), pid=pid)


def both(tmp_path: Path, inputs: list[str], *extra: str, chunk: int = 4, need: Callable[[Outcome], bool] | None = None,
         seed: Path | None = None, workers: int | None = 2) -> tuple[Outcome, Outcome]:
    """The same audit with --workers 1 (in tmp/w1) and --workers 2 (in tmp/w2); inputs relative to the run dir.

    This process audits the first chunks itself until the workers are up (docs/scale.md), so on a busy
    machine a short input may be done before any worker reads a file. `need` says what the pooled run must
    show of the workers (e.g. that they opened some of the odd files); the pooled run is made again, in a
    fresh folder, at most twice more until it does. `seed` is an audit file each run folder starts with."""

    def fresh(run_dir: Path) -> None:
        shutil.rmtree(run_dir, ignore_errors=True)
        run_dir.mkdir(parents=True)
        if seed is not None:
            shutil.copy(seed, run_dir / "audit.jsonl")

    fresh(tmp_path / "w1")
    fresh(tmp_path / "w2")
    # side by side: the pooled run in a child started from a thread, the serial one in this process meanwhile
    # (one interpreter's start spared); the child's environment is made first, as the in-process run sets this one's
    env = hooked_env(tmp_path, tmp_path / "w2")
    with ThreadPoolExecutor(1) as ex:
        pooled = ex.submit(audit, tmp_path, tmp_path / "w2", inputs, *extra, workers=workers, chunk=chunk, env=env)
        try:
            s = audit(tmp_path, tmp_path / "w1", inputs, *extra, workers=1, chunk=chunk, here=True)
        finally:
            p = pooled.result()
    for _ in range(2):
        if need is None or need(p):
            break
        assert_same(s, p, pool_expected=workers is not None)  # every try must be the serial audit
        fresh(tmp_path / "w2")
        p = audit(tmp_path, tmp_path / "w2", inputs, *extra, workers=workers, chunk=chunk)
    if need is not None:
        assert need(p), ("in three tries the workers never read what this test needs them to read (this process "
                         f"read everything itself?); worker reads: {sorted(p.worker_reads())[:10]}")
    return s, p


def workers_read(*names: str) -> Callable[[Outcome], bool]:
    """A `need`: some worker opened an input file whose name is one of `names` (any input file if none)."""
    def need(o: Outcome) -> bool:
        got = {Path(p).name for p in o.worker_reads()}
        return bool(got & set(names)) if names else bool(got)
    return need


def assert_same(serial: Outcome, pooled: Outcome, *, pool_expected: bool = True) -> None:
    """Everything the contract names is equal, and (unless told otherwise) the pool really ran."""
    if pool_expected:
        assert pooled.pool, "no 'auditing on local process pool' line: the pool never ran\n" + "\n".join(pooled.stderr)
    assert not serial.pool
    assert pooled.stderr == serial.stderr, "\n".join(["serial:", *serial.stderr, "pooled:", *pooled.stderr])
    assert pooled.rc == serial.rc, (serial.rc, pooled.rc)
    assert pooled.out == serial.out, first_difference(serial.out, pooled.out)
    assert pooled.gold == serial.gold, first_difference(serial.gold, pooled.gold)
    assert pooled.summary == serial.summary
    assert pooled.stdout == serial.stdout
    assert pooled.cache == serial.cache


def rel(tmp_path: Path, p: Path) -> str:
    return os.path.relpath(p, tmp_path / "w1")


def summary_line(stdout: str) -> str:
    found = [ln for ln in stdout.splitlines() if ln.startswith("wrote ")]
    assert len(found) == 1, stdout
    return found[0]


# ---------------------------------------------------------------- 1. a folder, or the same files as paths


@pytest.mark.parametrize("given", ["folder", "paths", "folder_workers_left_out"])
def test_a_mixed_many_file_input_audits_as_serially(tmp_path, given):
    """~75 small files (trace v1 .json and .jsonl, OpenAI chat, tau-bench with gold and a bad run,
    mini-swe-agent trajectories with SWE-bench reports, one cut short), with a bad record, a truncated
    file, two Latin-1 files, ignored fields and run_ids repeated across files: the pooled audit is the
    serial one in every byte and every stderr line, and its workers did read some of the small files."""
    named = mixed_folder(tmp_path / "in")
    odd = [p.name for p in named.values()] + ["acme__widgets-1.traj.json", "acme__widgets-2.traj.json",
                                              "acme__widgets-3.traj.json"]
    workers, need = 2, workers_read(*odd)
    if given == "folder_workers_left_out":  # the pool starts only if the work looks worth it: not required here
        if len(os.sched_getaffinity(0)) < 2:
            pytest.skip("--workers left out uses every core: one core here")
        workers, need = None, None
    if given.startswith("folder"):
        inputs = [rel(tmp_path, tmp_path / "in" / "mixed")]
    else:  # several paths, in an order no walk would give, the odd files last
        files = sorted(p for p in (tmp_path / "in" / "mixed").rglob("*") if p.is_file() and "reports" not in p.parts)
        inputs = [rel(tmp_path, p) for p in [f for f in files if f.name == "a_0_long.json"]
                  + [f for f in files if f.name not in odd and f.name != "a_0_long.json"][::-1]
                  + [f for f in files if f.name in odd][::-1]]
    serial, pooled = both(tmp_path, inputs, "--gold-out", "gold.jsonl", need=need, workers=workers)
    assert_same(serial, pooled, pool_expected=workers is not None)

    err = pooled.stderr
    assert pooled.rc == 1, err  # bad records skipped, --on-error not given
    ids = pooled.ids()
    assert len(ids) == len(set(ids))
    assert {f"r{i:04d}" for i in [*range(30), *range(50, 80)]} <= set(ids)
    assert {"r0900", "r0901", "r0902", "r0905", "r0906", "r0907", "chat-1", "task0-trial0"} <= set(ids)
    assert {"acme__widgets-1", "acme__widgets-2", "acme__widgets-3"} <= set(ids)
    assert "r0903" not in ids and "r0904" not in ids and "zbad" not in ids and "deep" not in ids
    # r0007 (a_fill, before d_multi in the folder) and r0901 (d_multi, before z_dup): the first is audited
    if given.startswith("folder"):
        assert pooled.record("r0901")["task"] == trace(901)["task"]
        assert pooled.record("r0007")["task"] == trace(7)["task"]
        assert pooled.summary is not None and pooled.summary["duplicates"] == 2, pooled.summary
    for key in ("latin1", "z_latin1"):
        assert len([ln for ln in err if "not UTF-8" in ln and named[key].name in ln]) == 1, err
    for key in ("bad", "cut", "deep", "z_bad"):
        assert any(ln.startswith("referee: warning: skipped record:") and named[key].name in ln for ln in err), err
    assert any("acme__widgets-2.report.json" in ln for ln in err), err  # a gold report that did not read
    assert any("ignored fields" in ln and "thought" in ln for ln in err), err
    gold = [json.loads(ln) for ln in (pooled.gold or b"").decode().splitlines()]
    gold_ids = {g["run_id"] for g in gold}
    assert {"task0-trial0", "acme__widgets-1", "acme__widgets-3", "r0001"} <= gold_ids, gold_ids

    if workers is not None:
        assert pooled.worker_reads(), "no worker opened any input file: this process read them all"


# ---------------------------------------------------------------- 2. a file named alone is read here


def test_a_file_named_alone_is_read_here_and_a_folder_of_small_files_by_the_workers(tmp_path):
    """One JSON array file of 120 runs (not a line file) named alone: this process reads it and sends its
    traces in chunks; no worker opens it. The same runs as 120 one-run .json files in a folder: the workers
    open them (this process names them), and a file opened on a worker is not opened here too."""
    recs = [trace(i) for i in range(120)]
    arr = put(tmp_path / "in" / "alone" / "runs.json", json.dumps(recs, indent=1))
    assert arr.stat().st_size < 2 * MIB
    serial, pooled = both(tmp_path, [rel(tmp_path, arr)])
    assert_same(serial, pooled)
    assert pooled.ids() == [f"r{i:04d}" for i in range(120)]
    assert str(arr.resolve()) in pooled.parent_reads()
    assert not pooled.worker_reads(), f"a worker opened the file named alone: {pooled.worker_reads()}"

    folder = tmp_path / "in" / "many"
    long_run(folder / "f.json")  # sorts first
    for i, r in enumerate(recs):
        put(folder / f"f{i:04d}.json", json.dumps(r))
    serial2, pooled2 = both(tmp_path, [rel(tmp_path, folder)], chunk=6, need=workers_read())
    assert_same(serial2, pooled2)
    assert pooled2.out is not None and pooled.out is not None
    assert pooled2.out.endswith(pooled.out)  # the same runs, the same records, in the same order
    assert pooled2.ids()[0] == "long-run" and len(pooled2.ids()) == 121
    assert not (pooled2.parent_reads() & pooled2.worker_reads()), "files read both here and on a worker"


def test_one_run_jsonl_files_in_a_folder_are_read_by_the_workers(tmp_path):
    """docs/scale.md, "Small files": a JSONL file of one chunk of lines or fewer "is read whole by a worker";
    this process only names it ("for a `.jsonl` name its lines counted up to one chunk", which opens it here
    too, to count line ends). So the workers read one-run .jsonl files, and the audit is the serial one."""
    folder = tmp_path / "in" / "lines"
    long_run(folder / "a.json")  # sorts first
    for i in range(60):
        put(folder / f"r{i:03d}.jsonl", json.dumps(trace(i)) + "\n")
    serial, pooled = both(tmp_path, [rel(tmp_path, folder)], chunk=6, need=workers_read())
    assert_same(serial, pooled)
    assert len(pooled.ids()) == 61
    read = sorted(Path(p).name for p in pooled.worker_reads() if p.endswith(".jsonl"))
    assert read, "no one-run .jsonl file was read by a worker"


# ---------------------------------------------------------------- 3. a big file after a line file


@pytest.mark.parametrize("given", ["paths", "folder"])
def test_a_big_array_repeating_run_ids_of_a_line_files_last_chunk_loses_to_the_line_file(tmp_path, given):
    """Small files, then a trace v1 line file of 6 chunks (workers read it), then a JSON array over 2 MiB
    (read here) whose first runs repeat run_ids of the line file's last chunk and of an earlier one, with
    other tasks and other gold, then a small file repeating a run first seen in the big file. Each run_id is
    audited from its first place in input order, as serially; the duplicates are warned about at the big
    file's lines, in the serial order."""
    base = tmp_path / "in" / "set"
    long_run(base / "a_0_long.json")
    filler(base / "a_fill", 0, 24)
    line_recs = [trace(i, gold={"completed": True}) for i in range(100, 148)]  # chunks of 8: last is 140..147
    lf = put(base / "b_lines.jsonl", "".join(json.dumps(r) + "\n" for r in line_recs))
    big_recs = [trace(i, task=f"The big file's copy of run {i}", gold={"completed": False}) for i in (147, 141, 103)]
    big_recs += [trace(i, gold={"completed": i % 2 == 0}) for i in range(200, 224)]
    big = big_array(base / "c_big.json", big_recs)
    later = put(base / "d_later.json", trace(205, task="A later copy of run 205", gold={"completed": False}))
    if given == "folder":
        inputs = [rel(tmp_path, base)]
    else:
        inputs = [rel(tmp_path, base / "a_0_long.json"), rel(tmp_path, base / "a_fill"), rel(tmp_path, lf),
                  rel(tmp_path, big), rel(tmp_path, later)]
    # the workers were up before the line file: they read some of the small files before it
    fill = [p.name for p in (base / "a_fill").iterdir()]
    serial, pooled = both(tmp_path, inputs, "--gold-out", "gold.jsonl", chunk=8, need=workers_read(*fill))
    assert_same(serial, pooled)

    ids = pooled.ids()
    assert len(ids) == len(set(ids)) == 1 + 24 + 48 + 24, len(ids)
    assert ids.index("r0147") < ids.index("r0200")  # in input order
    for rid in ("r0147", "r0141", "r0103"):
        assert pooled.record(rid)["task"] == trace(int(rid[1:]))["task"], rid  # the line file's run, not the big one
    assert pooled.record("r0205")["task"] == trace(205)["task"]
    gold = {json.loads(ln)["run_id"]: json.loads(ln)["completed"] for ln in (pooled.gold or b"").decode().splitlines()}
    assert gold["r0147"] is True and gold["r0141"] is True and gold["r0103"] is True and gold["r0204"] is True
    dups = [ln for ln in pooled.stderr if "duplicate run_id" in ln]
    assert len(dups) == 4, pooled.stderr
    assert [re.search(r"run_id (r\d+)", ln).group(1) for ln in dups] == ["r0147", "r0141", "r0103", "r0205"]
    assert all("c_big.json" in ln for ln in dups[:3]) and "d_later.json" in dups[3]
    assert pooled.summary is not None and pooled.summary["duplicates"] == 4


# ---------------------------------------------------------------- 4. --on-error stop in the middle of a folder


@pytest.mark.parametrize("bad", ["no_task", "cut_json"])
def test_on_error_stop_at_a_bad_file_in_the_middle_of_a_folder(tmp_path, bad):
    """60 one-run files with a bad one at place 40 (in the workers' part of the input): the records of the
    files before it are written, in order, then the audit stops with one error naming that file, exit 2:
    what a serial audit does."""
    folder = tmp_path / "in" / "runs"
    long_run(folder / "run.json")  # sorts first
    filler(folder, 0, 60)
    target = folder / "run0041.json"
    if bad == "no_task":
        put(target, {k: v for k, v in trace(41).items() if k != "task"})
    else:
        put(target, json.dumps(trace(41), indent=2)[:500])
    before = [f"run{i:04d}.json{'' if i % 2 else 'l'}" for i in range(10, 41)]
    serial, pooled = both(tmp_path, [rel(tmp_path, folder)], "--on-error", "stop", need=workers_read(*before))
    assert_same(serial, pooled)
    assert pooled.rc == 2, pooled.stderr
    assert pooled.ids() == ["long-run"] + [f"r{i:04d}" for i in range(41)]
    errors = [ln for ln in pooled.stderr if ln.startswith("referee: error:")]
    assert len(errors) == 1 and "run0041.json" in errors[0], pooled.stderr


# ---------------------------------------------------------------- 5. resume


def test_resume_after_a_partial_audit_writes_only_the_missing_records(tmp_path):
    """A serial audit of a 90-file folder cut after 37 records (and once more in the middle of record 38):
    the same command with workers writes only the missing runs and ends with the serial file, byte for
    byte, as the serial resume does; a third run writes nothing."""
    mixed_folder(tmp_path / "in")
    long_run(tmp_path / "in" / "mixed" / "f_0_long.json", "long-run-2")  # keeps this process busy on the resume
    inputs = [rel(tmp_path, tmp_path / "in" / "mixed")]
    full = audit(tmp_path, tmp_path / "full", inputs, "--gold-out", "gold.jsonl", workers=1, here=True)
    assert full.out is not None
    total = len(full.ids())
    assert full.ids().index("long-run-2") > 38
    lines = full.out.splitlines(keepends=True)
    seed = put(tmp_path / "seed" / "cut_between.jsonl", b"".join(lines[:37]))
    serial, pooled = both(tmp_path, inputs, "--gold-out", "gold.jsonl", seed=seed, need=workers_read())
    assert_same(serial, pooled)
    assert pooled.out == full.out, first_difference(full.out, pooled.out)
    stats = summary_line(pooled.stdout)
    assert f"wrote {total - 37} records" in stats and "37 already there" in stats, stats
    again = audit(tmp_path, tmp_path / "w2", inputs, "--gold-out", "gold.jsonl", workers=2, here=True)
    assert again.out == full.out and "wrote 0 records" in summary_line(again.stdout)

    # a record cut in the middle, as a crash leaves it
    seed2 = put(tmp_path / "seed" / "cut_inside.jsonl", b"".join(lines[:37]) + lines[37][:90])
    serial2, pooled2 = both(tmp_path, inputs, "--gold-out", "gold.jsonl", seed=seed2, need=workers_read())
    assert_same(serial2, pooled2)
    assert [i for i in pooled2.ids()] == full.ids(), "the resume re-audited, dropped or reordered runs"


def test_sigkill_of_the_process_group_mid_audit_then_resume_ends_as_a_serial_run(tmp_path):
    """`kill -9` of the whole process group while workers audit a folder of small files, then the same
    command again: the records written stand, the rest are audited, and the file is byte for byte the
    serial one."""
    folder = tmp_path / "in" / "runs"
    long_run(folder / "run.json")  # sorts first
    filler(folder, 0, 120)  # 100 files still to audit once 20 records are written: the kill lands mid-audit
    inputs = [rel(tmp_path, folder)]
    full = audit(tmp_path, tmp_path / "w1", inputs, workers=1, chunk=5, here=True)
    assert full.out is not None and full.rc == 0 and len(full.ids()) == 121

    run_dir = tmp_path / "w2"
    run_dir.mkdir()
    env = hooked_env(tmp_path, run_dir)
    cmd = [sys.executable, "-m", "referee.cli.main", *audit_args(inputs, 2, 5, ())]
    with open(run_dir / "stderr.txt", "w") as err_fh:
        proc = subprocess.Popen(cmd, cwd=run_dir, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=err_fh, start_new_session=True)
        out = run_dir / "audit.jsonl"
        deadline = time.monotonic() + 120
        try:
            while time.monotonic() < deadline and proc.poll() is None:
                written = out.read_bytes().count(b"\n") if out.exists() else 0
                pool_up = POOL_LINE in (run_dir / "stderr.txt").read_text()
                # kill once the workers have been handed files (one opened by a pid other than this one)
                worker_read = any(pid != proc.pid for pid in read_opens(run_dir / "opens.log"))
                if pool_up and worker_read and written >= 20:
                    break
                time.sleep(0.01)
        finally:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait(30)
    assert proc.returncode == -signal.SIGKILL, (
        f"the audit ended (rc {proc.returncode}) before the workers had opened any of the small files and 20 "
        f"records were written; worker reads: {sum(pid != proc.pid for pid in read_opens(run_dir / 'opens.log'))}")
    kept = out.read_bytes()
    n_kept = kept.count(b"\n")
    assert 20 <= n_kept < 121, n_kept
    assert full.out.startswith(kept[: kept.rfind(b"\n") + 1])  # what was written is the serial file's start

    rc, so, se = run_cli(audit_args(inputs, 2, 5, ()), cwd=run_dir, env=base_cli_env(), timeout=150)
    assert "Traceback" not in se and "internal error" not in se, se
    assert rc == 0, se
    assert out.read_bytes() == full.out, first_difference(full.out, out.read_bytes())
    stats = summary_line(so)
    assert f"{n_kept} already there" in stats and f"wrote {121 - n_kept} records" in stats, stats


# ---------------------------------------------------------------- 6. notes and warnings in order


def test_notes_from_files_the_workers_read_come_at_their_files_turn(tmp_path):
    """Per-file notes (bytes not UTF-8, ignored fields), skipped records and duplicate warnings spread over
    90 files, three to a chunk: stderr is the serial one line for line, and each file's message comes
    at its file's turn (the files' names in stderr are in input order)."""
    folder = tmp_path / "in" / "notes"
    long_run(folder / "n.json")  # sorts first
    noted = []
    for i in range(90):
        name = folder / f"n{i:03d}.jsonl"
        if i % 7 in (3, 5) or i % 11 == 6 or i % 13 == 9:
            noted.append(name.name)
        if i % 7 == 3:
            latin1_file(name, i)
        elif i % 7 == 5:
            put(name, json.dumps(trace(i, steps=6, timestamp=f"2024-05-{i % 28 + 1:02d}")) + "\n")
        elif i % 11 == 6:
            put(name, json.dumps(trace(i - 5, steps=6, text=" repeat")) + "\n")  # run_id of file i-5
        elif i % 13 == 9:
            put(name, json.dumps({k: v for k, v in trace(i).items() if k != "task"}) + "\n")
        else:
            put(name, json.dumps(trace(i)) + "\n")
    serial, pooled = both(tmp_path, [rel(tmp_path, folder)], chunk=3, need=workers_read(*noted))
    assert_same(serial, pooled)
    named = [int(m.group(1)) for ln in pooled.stderr if ln.startswith("referee: warning:")
             for m in [re.search(r"n(\d{3})\.jsonl", ln)] if m]
    assert len(named) >= 20, pooled.stderr
    assert named == sorted(named), named  # each file's message at its turn
    assert len([ln for ln in pooled.stderr if "not UTF-8" in ln]) == len([i for i in range(90) if i % 7 == 3])
