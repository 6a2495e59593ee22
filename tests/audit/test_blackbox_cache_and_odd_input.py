"""Black-box acceptance tests of `referee audit`: a shared evidence cache, unusable caches, odd JSON input.

Written from README.md, docs/auditor.md, docs/scale.md, docs/security-files.md and `referee audit
--help` only (not from the code under src/referee), by someone other than the author of the
change. Every check runs the real CLI in a subprocess (rules backend, the default) on real files,
and checks exact values (records, run_ids, messages, bytes), not only exit codes. What it proves:

1. Several `referee audit` processes started at the same instant on one NEW cache file (given as
   `--cache`, or being one process's default `OUT.cache.sqlite`), each with its own `--out` and
   input, one of them on worker processes, all finish (exit 0, no traceback, no "internal error",
   no "database is locked") and write every record; five rounds of it. Afterwards the cache passes
   SQLite's integrity check and holds every process's evidence: a further audit of all the inputs
   with that cache makes no backend call and writes the same records.
   Two or three audits on the SAME `--out` at once: the lock lets one write; another stops with the
   documented one-line error naming the holder's pid (exit 2), or, if it came after, writes nothing
   new; no run is ever written twice and `OUT.lock` stays, empty.
2. A `--cache` that cannot be used (text, random bytes, a corrupt SQLite file, a directory, a file
   in /proc, a folder that cannot be made): exit 2, one stderr line `referee: error: ...` naming
   the path and `--cache`, no traceback, the file left byte for byte, no sibling file made, and no
   record written or claimed.
3. Lone surrogate escapes (`"\\ud83d"`) in the task, report, action args (keys and values) and
   observation text and data: the run is audited, the record is valid UTF-8 and equals byte for
   byte the record of the same trace written with U+FFFD in their place (so the view and the claim
   were read with U+FFFD), while a well-formed pair stays the emoji. For one record per line,
   pretty-printed JSONL, a 300-line file on `--workers 2 --chunk-size 10` (worker processes seen
   to start, through a sitecustomize hook; output equal to the serial run's and to the U+FFFD
   file's) and openai-chat (arguments escaped inside or outside) and anthropic-messages records.
   Running the same audit again writes nothing.
4. A run_id that is a non-integer JSON number is read as its text (`1.5` -> `"1.5"`), also on
   workers; a boolean run_id is a bad record: skipped with one warning line naming file and line
   (the same line from a worker's slice as from a serial read), exit 1, or 0 with `--on-error skip`.

Two checks failed when written (a cache folder that cannot be made was not named as the --cache path,
and a damaged SQLite file was blamed on its folder); both were fixed.
Run against the code before the cache and surrogate changes (fed10c9), 11 of these tests fail;
the old "database is locked" race itself did not reproduce on a 2-core machine, old code or new.
"""

from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tests.conftest import base_cli_env, run_cli

WROTE = re.compile(r"wrote (\d+) records? to ")
CALLS = re.compile(r"(\d+) backend calls")

HI, LO, PAIR = "\ud83d", "\ude00", "\ud83d\ude00"  # a lone high, a lone low half, a well-formed pair
FIXED = ("\ufffd", "\ufffd", "\U0001f600")  # what a reader must make of them


# ---------------------------------------------------------------- helpers


def cli(*args, cwd: Path, env: dict | None = None, timeout: float = 120) -> tuple[int, str, str]:
    return run_cli(args, cwd=cwd, env=env or base_cli_env(), timeout=timeout)


def lines(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines()


def records(path: Path) -> list[dict]:
    return [json.loads(b) for b in lines(path)]


def wrote(stdout: str) -> int:
    found = WROTE.findall(stdout)
    assert len(found) == 1, stdout
    return int(found[0])


def assert_clean_finish(rc: int, out: str, err: str, what: str) -> None:
    text = out + err
    assert rc == 0, f"{what}: exit {rc}\nstdout: {out[-2000:]}\nstderr: {err[-2000:]}"
    for bad in ("Traceback", "internal error", "database is locked"):
        assert bad not in text, f"{what}: {bad!r} in output\nstdout: {out[-2000:]}\nstderr: {err[-2000:]}"


def has_surrogate(obj) -> bool:
    if isinstance(obj, str):
        return any(0xD800 <= ord(ch) <= 0xDFFF for ch in obj)
    if isinstance(obj, dict):
        return any(has_surrogate(k) or has_surrogate(v) for k, v in obj.items())
    if isinstance(obj, list):
        return any(has_surrogate(v) for v in obj)
    return False


def write_jsonl(path: Path, items: list[dict], *, indent: int | None = None) -> Path:
    # ensure_ascii (the default) writes a lone surrogate as its JSON escape, as a truncated log does
    path.write_text("".join(json.dumps(it, indent=indent) + "\n" for it in items), encoding="ascii")
    return path


def delete_trace(run_id: str, name: str) -> dict:
    return {"trace_version": 1, "run_id": run_id, "task": f"Delete the note named {name}.md in Notes",
            "initial_observation": {"text": f"Notes: {name}.md, todo.md"},
            "steps": [{"action": {"name": "delete_note", "args": {"name": f"{name}.md"}},
                       "observation": {"text": f"deleted {name}.md", "data": {"notes": ["todo.md"]}}}],
            "report": f"Done - {name}.md was deleted."}


ZYGOTE = """\\
import json, os, sys
from referee.cli.main import main  # the console script's entry point
# what `referee audit` imports as it runs: paid once here, not once per process (each is forked from this one)
import referee.audit.run.session, referee.audit.run.stream, referee.audit.run.pipeline
import referee.audit.run.cache, referee.audit.run.parallel, referee.audit.extract.rules
import referee.audit.claim.reader, referee.audit.ingest.readers


def child(i, argv, out_dir, barrier):
    for fd, name in ((1, "out"), (2, "err")):
        f = os.open(os.path.join(out_dir, f"{i}.{name}"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(f, fd)
        os.close(f)
    os.read(barrier, 1)  # the barrier: one byte each, all written at once
    os.close(barrier)
    sys.argv = ["referee", *argv]
    sys.exit(main())  # as the console script `referee` does


if __name__ == "__main__":  # worker processes (forkserver) import this file again
    out_dir, argvs = sys.argv[1], json.loads(sys.argv[2])
    rfd, wfd = os.pipe()
    sys.stdout.flush()
    kids = []
    for i, argv in enumerate(argvs):
        pid = os.fork()
        if pid == 0:
            os.close(wfd)
            child(i, argv, out_dir, rfd)
        kids.append(pid)
    os.close(rfd)
    os.write(wfd, b"x" * len(kids))  # every child is ready: forked after the imports, blocked on the pipe
    os.close(wfd)
    print(json.dumps([[pid, os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])] for pid in kids]))
"""


def start_together(tmp: Path, argvs: list[list[str]], cwd: Path) -> list[tuple[int, int, str, str]]:
    """Start one `referee` per argv, release them at the same instant; (pid, rc, stdout, stderr) each. Each is a
    process of its own, forked (after the imports) from one interpreter that then waits for them all."""
    zygote = tmp / "zygote_referee.py"
    zygote.write_text(ZYGOTE)
    out_dir = Path(tempfile.mkdtemp(prefix="together-", dir=tmp))
    proc = subprocess.Popen([sys.executable, str(zygote), str(out_dir), json.dumps(argvs)], cwd=cwd,
                            env=base_cli_env(), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=90)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)  # the zygote's session: it and the audits it forked
        proc.communicate()
        pytest.fail(f"a simultaneous referee audit did not finish: {argvs}")
    assert proc.returncode == 0, err
    return [(pid, rc, (out_dir / f"{i}.out").read_text(), (out_dir / f"{i}.err").read_text())
            for i, (pid, rc) in enumerate(json.loads(out))]


# ---------------------------------------------------------------- 1. shared cache, same --out


ROUNDS = 5
PROCS = 5
PER_INPUT = 40


def test_simultaneous_audits_on_a_new_shared_cache_all_finish_and_fill_it(tmp_path):
    for rnd in range(ROUNDS):
        d = tmp_path / f"round{rnd}"
        d.mkdir()
        cache = d / "p0.jsonl.cache.sqlite"  # process 0's default cache; the others name it with --cache
        assert not cache.exists()
        inputs, argvs = [], []
        for p in range(PROCS):
            src = write_jsonl(d / f"in{p}.jsonl",
                              [delete_trace(f"r{rnd}-p{p}-{i}", f"note{rnd}x{p}x{i}") for i in range(PER_INPUT)])
            inputs.append(src)
            argv = ["audit", src.name, "--out", f"p{p}.jsonl", "--no-progress", "--show", "none"]
            argv += ["--workers", "2", "--chunk-size", "10"] if p == PROCS - 1 else ["--workers", "1"]
            if p:
                argv += ["--cache", cache.name]
            argvs.append(argv)
        results = start_together(tmp_path, argvs, d)
        for p, (_pid, rc, out, err) in enumerate(results):
            assert_clean_finish(rc, out, err, f"round {rnd} process {p}")
            assert wrote(out) == PER_INPUT, out
            got = [r["run_id"] for r in records(d / f"p{p}.jsonl")]
            assert got == [f"r{rnd}-p{p}-{i}" for i in range(PER_INPUT)], f"round {rnd} process {p}"
        assert not (d / f"p{PROCS - 1}.jsonl.cache.sqlite").exists(), "--cache was given: no default cache"
        with sqlite3.connect(cache) as db:
            assert db.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        # every process's evidence is in the cache: a further audit of all inputs asks the backend nothing
        rc, out, err = cli("audit", *[s.name for s in inputs], "--out", "again.jsonl", "--cache", cache.name,
                           "--workers", "1", "--no-progress", "--show", "none", cwd=d)
        assert_clean_finish(rc, out, err, f"round {rnd}: audit after")
        assert wrote(out) == PROCS * PER_INPUT
        assert CALLS.findall(out) == ["0"], out
        assert lines(d / "again.jsonl") == [b for p in range(PROCS) for b in lines(d / f"p{p}.jsonl")]


LOCK_ERR = re.compile(r"referee: error: (?P<out>\S+): is being written by another process \(referee audit, "
                      r"pid (?P<pid>\d+), since [0-9T:+-]+\); wait for it to finish, or give another --out")


def test_simultaneous_audits_on_the_same_out_never_write_a_run_twice(tmp_path):
    n_runs = 400
    src = write_jsonl(tmp_path / "big.jsonl", [delete_trace(f"s{i}", f"item{i}") for i in range(n_runs)])
    expected_ids = [f"s{i}" for i in range(n_runs)]
    refused = 0
    for rnd in range(3):
        d = tmp_path / f"same{rnd}"
        d.mkdir()
        argv = ["audit", str(src), "--out", "audit.jsonl", "--workers", "1", "--no-progress", "--show", "none"]
        results = start_together(tmp_path, [argv] * 3, d)
        pids = {pid for pid, *_ in results}
        total = 0
        for pid, rc, out, err in results:
            assert "Traceback" not in out + err and "internal error" not in out + err, err
            if rc == 2:
                refused += 1
                assert err.count("\n") == 1, err
                m = LOCK_ERR.fullmatch(err.strip())
                assert m, err
                assert m["out"] == "audit.jsonl"
                assert int(m["pid"]) in pids - {pid}, "the lock names another of these processes as its holder"
                assert not WROTE.search(out), out
            else:
                assert rc == 0, f"exit {rc}\n{out}\n{err}"
                total += wrote(out)
        assert total == n_runs, "the runs were written exactly once between them"
        assert [r["run_id"] for r in records(d / "audit.jsonl")] == expected_ids
        assert (d / "audit.jsonl.lock").stat().st_size == 0
    assert refused, "no audit ever met the lock: the test did not make them overlap"


# ---------------------------------------------------------------- 2. unusable --cache


def _text(d: Path) -> Path:
    p = d / "notes.txt"
    p.write_text("these are my notes, not a database\n" * 20)
    return p


def _random(d: Path) -> Path:
    p = d / "blob.sqlite"
    p.write_bytes(bytes((i * 7919 + 13) % 251 for i in range(8192)))
    return p


def _corrupt(d: Path) -> Path:
    p = d / "broken.sqlite"
    with sqlite3.connect(p) as db:
        db.execute("CREATE TABLE t (a BLOB)")
        db.executemany("INSERT INTO t VALUES (?)", [(bytes([i % 256]) * 100,) for i in range(300)])
    db.close()
    data = bytearray(p.read_bytes())
    data[100:4096] = bytes((i * 31 + 7) % 256 for i in range(3996))  # the schema page is garbage
    p.write_bytes(bytes(data))
    return p


def _directory(d: Path) -> Path:
    p = d / "cachedir"
    p.mkdir()
    return p


UNUSABLE = [
    pytest.param(_text, id="text"),
    pytest.param(_random, id="random-bytes"),
    pytest.param(_corrupt, id="corrupt-sqlite"),
    pytest.param(_directory, id="directory"),
    pytest.param(lambda d: Path("/proc/referee-bb-cache.sqlite"), id="file-in-proc"),
    pytest.param(lambda d: Path("/proc/referee-bb-missing/cache.sqlite"), id="folder-that-cannot-be-made"),
]


@pytest.mark.parametrize("make", UNUSABLE)
def test_an_unusable_cache_is_one_line_exit_2_and_nothing_changes(tmp_path, make):
    where = tmp_path / "cache_here"
    where.mkdir()
    cache = make(where)
    before = {p.name: (p.read_bytes() if p.is_file() else None) for p in where.iterdir()}
    inside = sorted(os.listdir(cache)) if cache.is_dir() else None
    work = tmp_path / "work"
    work.mkdir()
    src = write_jsonl(work / "t.jsonl", [delete_trace(f"u{i}", f"n{i}") for i in range(3)])
    rc, out, err = cli("audit", str(src), "--out", "audit.jsonl", "--cache", str(cache), "--workers", "1",
                       "--no-progress", cwd=work)
    assert rc == 2, f"exit {rc}\n{out}\n{err}"
    assert "Traceback" not in out + err
    err_lines = err.splitlines()
    assert len(err_lines) == 1, err
    assert err_lines[0].startswith("referee: error: "), err
    assert str(cache) in err_lines[0], f"the path given is named: {err}"
    assert "--cache" in err_lines[0], f"the option is named: {err}"
    assert not WROTE.search(out + err) or WROTE.search(out + err).group(1) == "0"
    out_file = work / "audit.jsonl"
    assert not out_file.exists() or out_file.read_bytes() == b"", "no record written"
    after = {p.name: (p.read_bytes() if p.is_file() else None) for p in where.iterdir()}
    assert after == before, "the file is left byte for byte and nothing is made beside it"
    if inside is not None:
        assert sorted(os.listdir(cache)) == inside
    if str(cache).startswith("/proc/"):
        assert not os.path.lexists(cache)


def test_a_corrupt_cache_file_is_not_blamed_on_the_folder(tmp_path):
    cache = _corrupt(tmp_path)
    src = write_jsonl(tmp_path / "t.jsonl", [delete_trace("c1", "n1")])
    rc, _out, err = cli("audit", src.name, "--out", "a.jsonl", "--cache", cache.name, "--workers", "1", cwd=tmp_path)
    assert rc == 2
    assert "folder you can write to" not in err, err


# ---------------------------------------------------------------- 3. lone surrogates


def odd_trace(hi: str, lo: str, pair: str, run_id="odd-1") -> dict:
    """A trace v1 whose every part (task, report, args keys/values, observation text/data) holds the three."""
    return {"trace_version": 1, "run_id": run_id,
            "task": f"Delete the note named groceries{hi}.md {pair} in Markor",
            "initial_observation": {"text": f"Notes: groceries{hi}.md, todo.md {lo}"},
            "steps": [{"action": {"name": "delete_note",
                                  "args": {"name": f"groceries{hi}.md", f"k{lo}ey": f"v{lo}{hi}", f"e{pair}": pair,
                                           "rev": f"{lo}{hi}", "hipair": f"{hi}{pair}"}},
                       "observation": {"text": f"deleted groceries{hi}.md {pair} {lo}",
                                       "data": {f"no{hi}tes": [f"todo.md{lo}", pair], "ok": f"{pair}{hi}"}},
                       "narration": f"deleting {hi}"}],
            "report": f"Done - groceries{hi}.md was deleted {pair}{lo}."}


def test_lone_surrogates_one_record_per_line_read_as_replacement_char(tmp_path):
    write_jsonl(tmp_path / "odd.jsonl", [odd_trace(HI, LO, PAIR)])
    # the reference: the same trace written with U+FFFD (and the emoji) in their place, plus controls
    # that differ from it in one place each, to show that place reaches the record
    ref = [odd_trace(*FIXED)]
    for field, bad in [("task", "?"), ("args-key", "?"), ("obs-data", "?"), ("report", "?")]:
        t = odd_trace(*FIXED, run_id=f"ctl-{field}")
        if field == "task":
            t["task"] = t["task"].replace("\ufffd", bad)
        elif field == "args-key":
            args = t["steps"][0]["action"]["args"]
            args["k?ey"] = args.pop("k\ufffdey")
        elif field == "obs-data":
            t["steps"][0]["observation"]["data"]["ok"] = "\U0001f600?"
        else:
            t["report"] = t["report"].replace("\ufffd", bad)
        ref.append(t)
    (tmp_path / "ref.jsonl").write_text("".join(json.dumps(t, ensure_ascii=False) + "\n" for t in ref),
                                        encoding="utf-8")
    for name in ("odd", "ref"):
        rc, out, err = cli("audit", f"{name}.jsonl", "--out", f"{name}.out.jsonl", "--workers", "1",
                           "--no-progress", cwd=tmp_path)
        assert_clean_finish(rc, out, err, name)
        assert "warning" not in err, err
    raw = (tmp_path / "odd.out.jsonl").read_bytes()
    raw.decode("utf-8")  # strict: valid UTF-8
    (odd,) = records(tmp_path / "odd.out.jsonl")
    assert not has_surrogate(odd)
    assert odd["run_id"] == "odd-1"
    assert odd["task"] == "Delete the note named groceries\ufffd.md \U0001f600 in Markor"
    ref_lines = lines(tmp_path / "ref.out.jsonl")
    assert raw.splitlines() == ref_lines[:1], "the record is the U+FFFD trace's, byte for byte"
    base = json.loads(ref_lines[0])
    by_id = {r["run_id"]: r for r in map(json.loads, ref_lines[1:])}
    for field in ("task", "args-key", "obs-data"):
        assert by_id[f"ctl-{field}"]["view_sha256"] != base["view_sha256"], field
    assert by_id["ctl-report"]["view_sha256"] == base["view_sha256"]
    assert by_id["ctl-report"]["claim_sha256"] != base["claim_sha256"]
    # resume: the same audit again writes nothing
    rc, out, err = cli("audit", "odd.jsonl", "--out", "odd.out.jsonl", "--workers", "1", "--no-progress", cwd=tmp_path)
    assert_clean_finish(rc, out, err, "resume")
    assert wrote(out) == 0 and "0 stale" in out, out
    assert (tmp_path / "odd.out.jsonl").read_bytes() == raw


def test_lone_surrogates_in_pretty_printed_jsonl(tmp_path):
    traces = [odd_trace(HI, LO, PAIR, run_id=f"pp-{i}") for i in range(3)]
    refs = [odd_trace(*FIXED, run_id=f"pp-{i}") for i in range(3)]
    write_jsonl(tmp_path / "pretty.jsonl", traces, indent=2)
    (tmp_path / "ref.jsonl").write_text("".join(json.dumps(t, ensure_ascii=False) + "\n" for t in refs),
                                        encoding="utf-8")
    assert (tmp_path / "pretty.jsonl").read_text().count("\n") > 60, "really one value over many lines"
    for name in ("pretty", "ref"):
        rc, out, err = cli("audit", f"{name}.jsonl", "--out", f"{name}.out.jsonl", "--workers", "1",
                           "--no-progress", cwd=tmp_path)
        assert_clean_finish(rc, out, err, name)
        assert wrote(out) == 3, out
    got = (tmp_path / "pretty.out.jsonl").read_bytes()
    got.decode("utf-8")
    assert got == (tmp_path / "ref.out.jsonl").read_bytes()
    assert not any(has_surrogate(r) for r in records(tmp_path / "pretty.out.jsonl"))
    rc, out, err = cli("audit", "pretty.jsonl", "--out", "pretty.out.jsonl", "--workers", "1", "--no-progress",
                       cwd=tmp_path)
    assert_clean_finish(rc, out, err, "resume")
    assert wrote(out) == 0
    assert (tmp_path / "pretty.out.jsonl").read_bytes() == got


SITECUSTOMIZE = """\
import os
_d = os.environ.get("BB_PID_DIR")
if _d:
    def _mark(kind):
        try:
            open(os.path.join(_d, "%s-%d" % (kind, os.getpid())), "w").close()
        except OSError:
            pass
    _mark("start")
    os.register_at_fork(after_in_child=lambda: _mark("fork"))
"""


BOOL_AT = 100


def _big(hi: str, lo: str, pair: str, n: int) -> list[dict]:
    out = []
    for i in range(n):
        if i % 3 == 0:
            t = odd_trace(hi, lo, pair, run_id=f"big-{i}")
            t["task"] += f" (copy {i})"
        else:
            t = delete_trace(f"big-{i}", f"plain{i}")
        if i % 50 == 7:
            t["run_id"] = i + 0.5  # a non-integer number: read as its text
        if i == BOOL_AT:
            t["run_id"] = True  # a bad record, on a worker's slice too
        out.append(t)
    return out


def test_lone_surrogates_on_worker_processes_equal_the_serial_run(tmp_path):
    n = 300
    write_jsonl(tmp_path / "big.jsonl", _big(HI, LO, PAIR, n))
    (tmp_path / "ref.jsonl").write_text("".join(json.dumps(t, ensure_ascii=False) + "\n" for t in _big(*FIXED, n)),
                                        encoding="utf-8")
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(SITECUSTOMIZE)

    def audit(src: str, out: str, workers: int) -> tuple[str, list[str], int]:
        pids = tmp_path / f"pids-{out}"
        pids.mkdir(exist_ok=True)
        env = base_cli_env()
        env["PYTHONPATH"] = f"{hook}{os.pathsep}{env['PYTHONPATH']}"
        env["BB_PID_DIR"] = str(pids)
        rc, so, se = cli("audit", src, "--out", out, "--workers", str(workers), "--chunk-size", "10",
                         "--on-error", "skip", "--no-progress", "--show", "none", cwd=tmp_path, env=env)
        assert_clean_finish(rc, so, se, f"{src} workers={workers}")
        warned = [ln for ln in se.splitlines() if ln.startswith("referee: warning:")]
        return so, warned, len({name.split("-")[1] for name in os.listdir(pids)})

    so, warn_parallel, procs_parallel = audit("big.jsonl", "par.jsonl", 2)
    assert wrote(so) == n - 1
    so, warn_serial, procs_serial = audit("big.jsonl", "ser.jsonl", 1)
    assert wrote(so) == n - 1
    # the reference needs no process count: audited in this process (tests.support.incli)
    rc, so, se = cli("audit", "ref.jsonl", "--out", "ref.out.jsonl", "--workers", "1", "--chunk-size", "10",
                     "--on-error", "skip", "--no-progress", "--show", "none", cwd=tmp_path)
    assert_clean_finish(rc, so, se, "ref.jsonl workers=1")
    assert len(warn_serial) == 1 and f"big.jsonl:{BOOL_AT + 1}:" in warn_serial[0], warn_serial
    assert warn_parallel == warn_serial
    assert procs_serial == 1, "the detector sees one process for a serial audit"
    assert procs_parallel >= 3, f"--workers 2 started worker processes (saw {procs_parallel} processes)"
    par = (tmp_path / "par.jsonl").read_bytes()
    par.decode("utf-8")
    assert par == (tmp_path / "ser.jsonl").read_bytes(), "workers write the serial file, byte for byte"
    assert par == (tmp_path / "ref.out.jsonl").read_bytes(), "lone surrogates read as U+FFFD on workers too"
    recs = records(tmp_path / "par.jsonl")
    assert [r["run_id"] for r in recs] == [f"{i + 0.5}" if i % 50 == 7 else f"big-{i}" for i in range(n)
                                           if i != BOOL_AT]
    assert recs[57]["run_id"] == "57.5" and recs[BOOL_AT]["run_id"] == f"big-{BOOL_AT + 1}"
    assert recs[3]["task"] == "Delete the note named groceries\ufffd.md \U0001f600 in Markor (copy 3)"
    assert not any(has_surrogate(r) for r in recs)
    rc, so, se = cli("audit", "big.jsonl", "--out", "par.jsonl", "--workers", "2", "--chunk-size", "10",
                     "--on-error", "skip", "--no-progress", "--show", "none", cwd=tmp_path)  # in this process
    assert_clean_finish(rc, so, se, "resume on workers")
    assert wrote(so) == 0 and f"{n - 1} already there" in so, so
    assert (tmp_path / "par.jsonl").read_bytes() == par


def openai_record(hi: str, lo: str, pair: str, run_id: str, inner_escaped: bool) -> dict:
    # a tool call's arguments are JSON text: the lone half either escaped inside it or a raw character in it
    args = json.dumps({"path": f"report{hi}-7.txt", f"mo{lo}de": pair}, ensure_ascii=inner_escaped)
    return {"run_id": run_id, "messages": [
        {"role": "user", "content": f"Delete the file report{hi}-7.txt {pair}"},
        {"role": "assistant", "content": None,
         "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "delete_file", "arguments": args}}]},
        {"role": "tool", "tool_call_id": "c1", "content": f"Error: permission denied {lo} {pair}"},
        {"role": "assistant", "content": f"Deleted report{hi}-7.txt {pair}."}]}


def anthropic_record(hi: str, lo: str, pair: str, run_id: str) -> dict:
    tools = [{"name": "delete_file", "input_schema": {}}]
    return {"run_id": run_id, "system": f"You manage files{lo}.", "tools": tools,
            "messages": [
                {"role": "user", "content": f"Delete the file report{hi}-7.txt {pair}"},
                {"role": "assistant", "content": [
                    {"type": "thinking", "thinking": f"hmm{hi}"},
                    {"type": "text", "text": f"Deleting it now{hi}."},
                    {"type": "tool_use", "id": "tu1", "name": "delete_file",
                     "input": {"path": f"report{hi}-7.txt", f"k{lo}": [pair, hi]}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "tu1", "is_error": True,
                                              "content": f"permission denied {hi}{pair}"}]},
                {"role": "assistant", "content": [{"type": "text", "text": f"Deleted report{hi}-7.txt {pair}."}]}]}


@pytest.mark.parametrize("fmt", ["openai-chat", "anthropic-messages"])
def test_lone_surrogates_in_other_formats(tmp_path, fmt):
    if fmt == "openai-chat":
        odd = [openai_record(HI, LO, PAIR, "o-inner", True), openai_record(HI, LO, PAIR, "o-raw", False)]
        ref = [openai_record(*FIXED, "o-inner", True), openai_record(*FIXED, "o-raw", False)]
    else:
        odd, ref = [anthropic_record(HI, LO, PAIR, "a1")], [anthropic_record(*FIXED, "a1")]
    write_jsonl(tmp_path / "odd.jsonl", odd)
    (tmp_path / "ref.jsonl").write_text("".join(json.dumps(t, ensure_ascii=False) + "\n" for t in ref),
                                        encoding="utf-8")
    for name in ("odd", "ref"):  # sniffed, as a user would run it
        rc, out, err = cli("audit", f"{name}.jsonl", "--out", f"{name}.out.jsonl", "--workers", "1",
                           "--no-progress", cwd=tmp_path)
        assert_clean_finish(rc, out, err, f"{fmt} {name}")
        assert wrote(out) == len(odd), out
    got = (tmp_path / "odd.out.jsonl").read_bytes()
    got.decode("utf-8")
    assert got == (tmp_path / "ref.out.jsonl").read_bytes()
    for r in records(tmp_path / "odd.out.jsonl"):
        assert not has_surrogate(r)
        assert r["task"] == "Delete the file report\ufffd-7.txt \U0001f600"
        # the documented worked example: a failed delete, a claimed success -> flag
        assert r["claim"]["label"] == "success" and r["disposition"] == "flag", r
    rc, out, err = cli("audit", "odd.jsonl", "--out", "odd.out.jsonl", "--workers", "1", "--no-progress",
                       cwd=tmp_path)
    assert_clean_finish(rc, out, err, "resume")
    assert wrote(out) == 0
    assert (tmp_path / "odd.out.jsonl").read_bytes() == got


# ---------------------------------------------------------------- 4. run_id numbers and booleans


def test_run_id_float_is_its_text_and_boolean_is_a_bad_record(tmp_path):
    items = [delete_trace("x", "a") for _ in range(5)]
    for t, rid in zip(items, [1.5, True, -0.25, False, 3], strict=True):
        t["run_id"] = rid
        t["task"] += f" {rid}"
    write_jsonl(tmp_path / "ids.jsonl", items)
    rc, out, err = cli("audit", "ids.jsonl", "--out", "ids.out.jsonl", "--workers", "1", "--no-progress", cwd=tmp_path)
    assert rc == 1, "bad records skipped by default: exit 1 (--help)"
    assert "Traceback" not in out + err
    assert [r["run_id"] for r in records(tmp_path / "ids.out.jsonl")] == ["1.5", "-0.25", "3"]
    warnings = [ln for ln in err.splitlines() if ln.startswith("referee: warning:")]
    assert len(warnings) == 2, err
    assert "ids.jsonl:2:" in warnings[0] and "run_id" in warnings[0], warnings
    assert "ids.jsonl:4:" in warnings[1] and "run_id" in warnings[1], warnings
    assert wrote(out) == 3
    # given explicitly, --on-error skip accepts them: exit 0, and the resume writes nothing
    rc, out, err = cli("audit", "ids.jsonl", "--out", "ids.out.jsonl", "--workers", "1", "--on-error", "skip",
                       "--no-progress", cwd=tmp_path)
    assert rc == 0, err
    assert wrote(out) == 0
    assert len(lines(tmp_path / "ids.out.jsonl")) == 3
