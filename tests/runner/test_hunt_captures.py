"""Bugs found by black-box hunting of the runner's captures, screen captures and `referee grade` on tampered
run directories. Each test drives the CLI in a subprocess over real files, processes and loopback servers
(PostgreSQL, moto's DynamoDB, Chromium, tiny HTTP servers started here), and fails on the code it was
written against; it passes once the bug is fixed."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tests.conftest import free_port, run_cli, stop_process, wait_for_port
from tests.runner.runner_helpers import find_run_dirs, write_plan

# ---------------------------------------------------------------- helpers


def _agent(tmp_path: Path, body: str = "") -> str:
    """A command agent (sh) that runs `body`, then claims pass."""
    path = tmp_path / "agent.sh"
    claim = "printf '{\"pass\": true, \"note\": \"done\"}' > \"$REFEREE_CLAIM_FILE\"\n"
    path.write_text("#!/bin/sh\n" + body + "\n" + claim)
    path.chmod(0o755)
    return f"sh {shlex.quote(str(path))}"


def _run(tmp_path: Path, plan: dict, env: dict, *, agent: str | None = None, timeout: float = 120,
         name: str = "plan") -> tuple[int, str, str, Path | None]:
    path = write_plan(tmp_path / f"{name}.yaml", plan)
    out = tmp_path / f"out-{name}"
    args = ["run", str(path), "--out", str(out)]
    if agent is not None:
        args += ["--agent", agent]
    rc, so, se = run_cli(args, cwd=tmp_path, env=env, timeout=timeout)
    dirs = find_run_dirs(out)
    return rc, so, se, (dirs[-1] if dirs else None)


def _steps(run_dir: Path) -> dict[str, dict]:
    return {s["id"]: s for s in json.loads((run_dir / "results.json").read_text())["steps"]}


def _reasons(step: dict) -> str:
    return " | ".join(str(v.get("reason") or "") for v in step["validators"])


_HTTP_SERVER = r'''
import gzip, sys, time
from http.server import ThreadingHTTPServer, BaseHTTPRequestHandler
class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a): pass
    def do_GET(self):
        if self.path == "/latin1":
            body = "caf\xe9 Saved".encode("latin-1")
            self.send_response(200); self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(body))); self.end_headers(); self.wfile.write(body); return
        if self.path == "/trickle":  # one byte every 0.2 s for 10 minutes: every read is quick
            self.send_response(200); self.send_header("Content-Length", "3000"); self.end_headers()
            for _ in range(3000):
                self.wfile.write(b"a"); self.wfile.flush(); time.sleep(0.2)
            return
        if self.path == "/gzbomb":  # 100 KB on the wire, 100 MB of NUL bytes once decoded
            body = gzip.compress(b"\0" * (100 * 1024 * 1024), compresslevel=9)
            self.send_response(200); self.send_header("Content-Encoding", "gzip")
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(body))); self.end_headers(); self.wfile.write(body); return
        self.send_response(404); self.send_header("Content-Length", "0"); self.end_headers()
ThreadingHTTPServer.daemon_threads = True
ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
'''


@pytest.fixture
def hostile_http(tmp_path):
    """A loopback HTTP server with hostile answers; yields its base URL."""
    script = tmp_path / "hostile_http.py"
    script.write_text(_HTTP_SERVER)
    port = free_port()
    proc = subprocess.Popen([sys.executable, str(script), str(port)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        wait_for_port(port, timeout=30, proc=proc)
        yield f"http://127.0.0.1:{port}"
    finally:
        stop_process(proc)


def _peak_rss_kb(args: list[str], cwd: Path, env: dict, timeout: float) -> tuple[int, int]:
    """Run the CLI in a child of a fresh Python and return (its exit code, the peak RSS in KB of the
    biggest process it waited for: the runner, or a command it ran)."""
    probe = textwrap.dedent("""
        import resource, subprocess, sys
        rc = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode
        print(rc, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
    """)
    res = subprocess.run([sys.executable, "-c", probe, sys.executable, "-m", "referee.cli.main", *args],
                         cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    rc, kb = res.stdout.split()
    return int(rc), int(kb)


# ---------------------------------------------------------------- file captures read by text validators


def test_text_contains_on_a_file_capture_reads_the_file_not_its_record(tmp_path, cli_env):
    """`text_contains` with `evidence: <file capture>` searched the capture's JSON record (path, `exists`,
    `resolved`), not the copied file: a file that holds the text FAILed ('rep does not contain hello
    ({"record_version": 1, ...')`, and a file that does not exist PASSed because its *path* holds the text."""
    (tmp_path / "real.txt").write_text("hello there\n")
    plan = {"name": "filecap", "steps": [
        {"id": "real", "do": "x", "capture": [{"kind": "file", "name": "rep", "path": "real.txt"}],
         "validators": [{"kind": "text_contains", "evidence": "rep", "text": "hello"}]},
        {"id": "missing", "do": "x",
         "capture": [{"kind": "file", "name": "orders", "path": "exports/Saved-orders.csv"}],
         "validators": [{"kind": "text_contains", "evidence": "orders", "text": "Saved"},
                        {"kind": "regex_match", "evidence": "orders", "pattern": "csv"}]},
    ]}
    rc, so, se, rd = _run(tmp_path, plan, cli_env, agent=_agent(tmp_path))
    assert rd is not None, se
    steps = _steps(rd)
    assert steps["missing"]["verdict"] != "PASS", (
        "a file that was never written PASSed text_contains/regex_match: " + _reasons(steps["missing"]))
    assert steps["real"]["verdict"] == "PASS", (
        "the copied file holds 'hello' but the validator read the record: " + _reasons(steps["real"]))


# ---------------------------------------------------------------- http captures


def test_http_capture_timeout_is_an_overall_deadline(tmp_path, cli_env, hostile_http):
    """An http capture with `timeout_s: 2` against a server that trickles one byte every 0.2 s held the
    run until the server was done (a 1000-byte body took 500 s; a never-ending chunked answer holds it
    forever): the timeout was per read, so a slow or hostile endpoint stops every run. (1 s here: each
    read still takes 0.2 s, well within it.)"""
    plan = {"name": "trickle", "steps": [
        {"id": "s1", "do": "x", "capture": [{"kind": "http", "name": "t", "url": hostile_http + "/trickle",
                                             "timeout_s": 1}],
         "validators": [{"kind": "http_status_eq", "evidence": "t", "expected": 200}]}]}
    # a per-read timeout would hold the run for the server's 600 s, until the test times out
    rc, so, se, rd = _run(tmp_path, plan, cli_env, agent=_agent(tmp_path), timeout=90)
    assert rd is not None, se
    step = _steps(rd)["s1"]
    assert step["verdict"] != "PASS"
    assert "no whole answer within timeout_s (1 s)" in _reasons(step), _reasons(step)


def test_http_body_that_is_not_utf8_is_still_searched(tmp_path, cli_env, hostile_http):
    """A body in Latin-1 without a charset (`caf\\xe9 Saved`) was stored as `body: ""` plus `body_base64`,
    and `http_body_contains text: Saved` FAILed with `body does not contain 'Saved' (body: )`: the body is
    not empty, and it contains the text."""
    plan = {"name": "latin1", "steps": [
        {"id": "s1", "do": "x",
         "validators": [{"kind": "http_body_contains", "url": hostile_http + "/latin1", "text": "Saved"}]}]}
    rc, so, se, rd = _run(tmp_path, plan, cli_env, agent=_agent(tmp_path))
    assert rd is not None, se
    step = _steps(rd)["s1"]
    assert step["verdict"] == "PASS", _reasons(step)


def test_http_capture_of_a_gzip_bomb_is_bounded(tmp_path, cli_env, hostile_http):
    """100 KB of gzip on the wire decoding to 100 MB of NUL bytes: the runner decoded it all, wrote a
    600 MB JSON record (each NUL escaped as \\u0000), refused it as over the 512 MiB evidence limit, and
    left that file in evidence/ next to the failure record; with 1 GB decoded it took 15 GB of memory and
    left a 6.4 GB file. An answer's size must be bounded while it is read."""
    plan = {"name": "bomb", "steps": [
        {"id": "s1", "do": "x", "capture": [{"kind": "http", "name": "g", "url": hostile_http + "/gzbomb",
                                             "timeout_s": 30}],
         "validators": [{"kind": "http_status_eq", "evidence": "g", "expected": 200}]}]}
    path = write_plan(tmp_path / "bomb.yaml", plan)
    out = tmp_path / "out-bomb"
    rc, peak_kb = _peak_rss_kb(["run", str(path), "--out", str(out), "--agent", _agent(tmp_path)],
                               tmp_path, cli_env, timeout=300)
    rd = find_run_dirs(out)[-1]
    listed = {f["path"] for f in json.loads((rd / "manifest.json").read_text())["files"]}
    big = [(str(p.relative_to(rd)), p.stat().st_size) for p in (rd / "evidence").rglob("*")
           if p.is_file() and p.stat().st_size > 64 * 1024 * 1024]
    unlisted = [p for p, _ in big if p not in listed]
    assert not unlisted, f"files the capture left behind, in no manifest: {big}"
    assert peak_kb < 1024 * 1024, f"the runner peaked at {peak_kb // 1024} MB for a 100 KB answer"


# ---------------------------------------------------------------- command captures


def test_command_capture_that_times_out_is_killed(tmp_path, cli_env):
    """`command_exit_code` with `command: sleep 60.25, timeout_s: 1` was reported as timed out, and the
    `sleep` went on running after `referee run` had exited (orphaned to init), as did a capture's
    `sleep; echo`: a runner check that hangs leaves a process behind on every run."""
    marker = "61.37"
    plan = {"name": "cmdto", "steps": [
        {"id": "s1", "do": "x",
         "validators": [{"kind": "command_exit_code", "command": f"sleep {marker}", "timeout_s": 1}]}]}
    try:
        rc, so, se, rd = _run(tmp_path, plan, cli_env, agent=_agent(tmp_path), timeout=60)
        assert rd is not None, se
        # the sleep never ends on its own within the deadline: only a kill makes it go
        deadline = time.monotonic() + 5
        while (left := _procs_with_cmdline(f"sleep {marker}")) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not left, f"the timed-out command still runs after the run: pids {left}"
    finally:
        for pid in _procs_with_cmdline(f"sleep {marker}"):
            try:
                os.kill(pid, 9)
            except ProcessLookupError:
                pass


def _procs_with_cmdline(text: str) -> list[int]:
    want = text.replace(" ", "\0").encode()
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/cmdline", "rb") as fh:
                if want in fh.read():
                    found.append(int(name))
        except OSError:
            pass
    return found


def test_command_capture_exit_code_with_a_background_child(tmp_path, cli_env):
    """`command_exit_code` on `sleep 30 & echo started` (a command that starts a daemon, which keeps the
    shell's stdout, and exits 0 at once) FAILed with '`sleep 30 & echo started` timed out' after its
    timeout_s: the runner waited for the daemon to close the output pipe, and recorded `exit_code: null`."""
    plan = {"name": "bg", "steps": [
        {"id": "s1", "do": "x",
         "validators": [{"kind": "command_exit_code", "command": "sleep 30.71 & echo started",
                         "timeout_s": 5}]}]}
    try:
        rc, so, se, rd = _run(tmp_path, plan, cli_env, agent=_agent(tmp_path), timeout=60)
        assert rd is not None, se
        step = _steps(rd)["s1"]
        assert step["verdict"] == "PASS", _reasons(step)
    finally:
        for pid in _procs_with_cmdline("sleep 30.71"):
            try:
                os.kill(pid, 9)
            except ProcessLookupError:
                pass


def test_command_capture_output_that_is_not_utf8_is_still_searched(tmp_path, cli_env):
    """stdout `Saved\\xff\\xfe ok` was stored as `stdout: ""` plus `stdout_base64`, and `text_contains
    evidence: <command capture>, text: Saved` FAILed with `bin does not contain 'Saved' ()`."""
    plan = {"name": "binout", "steps": [
        {"id": "s1", "do": "x",
         "capture": [{"kind": "command", "name": "bin", "command": "printf 'Saved\\377\\376 ok'"}],
         "validators": [{"kind": "text_contains", "evidence": "bin", "text": "Saved"}]}]}
    rc, so, se, rd = _run(tmp_path, plan, cli_env, agent=_agent(tmp_path))
    assert rd is not None, se
    step = _steps(rd)["s1"]
    assert step["verdict"] == "PASS", _reasons(step)


def test_command_capture_memory_is_bounded_by_what_it_keeps(tmp_path, cli_env):
    """A command capture keeps the last 1 MB of stdout, but read all of it into memory first: 300 MB of
    output took the runner to ~700 MB, and `yes` with `timeout_s: 3` to 7 GB (and 13 s)."""
    plan = {"name": "bigout", "steps": [
        {"id": "s1", "do": "x",
         "capture": [{"kind": "command", "name": "y", "timeout_s": 60,
                      "command": "head -c 300000000 /dev/zero | tr '\\0' a; echo Saved"}],
         "validators": [{"kind": "text_contains", "evidence": "y", "text": "Saved"}]}]}
    path = write_plan(tmp_path / "bigout.yaml", plan)
    rc, peak_kb = _peak_rss_kb(["run", str(path), "--out", str(tmp_path / "out"), "--agent", _agent(tmp_path)],
                               tmp_path, cli_env, timeout=180)
    assert rc == 0
    assert peak_kb < 300 * 1024, f"the runner peaked at {peak_kb // 1024} MB to keep 1 MB of output"


# ---------------------------------------------------------------- file captures of special files


def test_file_exists_on_a_fifo_says_what_it_is(tmp_path, cli_env):
    """`file_exists` on a FIFO (or a socket, or /dev/null) FAILed with '... does not exist after the
    step': it exists; it is not a regular file, which is what the reason must say."""
    os.mkfifo(tmp_path / "f.txt")
    plan = {"name": "fifo", "steps": [
        {"id": "s1", "do": "x", "validators": [{"kind": "file_exists", "path": "f.txt"}]}]}
    rc, so, se, rd = _run(tmp_path, plan, cli_env, agent=_agent(tmp_path))
    assert rd is not None, se
    step = _steps(rd)["s1"]
    assert step["verdict"] != "PASS"
    reason = _reasons(step)
    assert "does not exist" not in reason and "FIFO" in reason.upper(), reason


# ---------------------------------------------------------------- SQL


def _psql(pg_url: str, sql: str) -> None:
    import sqlalchemy

    eng = sqlalchemy.create_engine(pg_url)
    with eng.begin() as conn:
        conn.exec_driver_sql(sql)
    eng.dispose()


def test_sql_row_present_min_rows_beyond_the_kept_rows(tmp_path, cli_env, pg_url):
    """`sql_row_present` with `min_rows: 1500` on a query returning 5000 rows FAILed with '1000 row(s) found,
    expected at least 1500': the capture keeps 1000 rows and the check counted the kept ones, and said so
    as if the table held 1000."""
    table = f"hunt_many_{os.getpid()}"
    _psql(pg_url, f"drop table if exists {table}; create table {table} (id int);"
                  f"insert into {table} select g from generate_series(1, 5000) g")
    plan = {"name": "minrows", "steps": [
        {"id": "s1", "do": "x",
         "validators": [{"kind": "sql_row_present", "url": pg_url, "query": f"select id from {table}",
                         "min_rows": 1500}]}]}
    rc, so, se, rd = _run(tmp_path, plan, cli_env, agent=_agent(tmp_path))
    assert rd is not None, se
    step = _steps(rd)["s1"]
    assert step["verdict"] == "PASS", _reasons(step)


def test_sql_capture_of_an_infinite_timestamp(tmp_path, cli_env, pg_url):
    """A PostgreSQL row whose timestamptz is 'infinity' (a common "valid until" value) made every capture
    that read it fail: `DataError: timestamp too large (after year 10K): 'infinity'`, so
    `sql_row_present table/where` on that row was ERROR."""
    table = f"hunt_inf_{os.getpid()}"
    _psql(pg_url, f"drop table if exists {table}; create table {table} (id int, valid_until timestamptz);"
                  f"insert into {table} values (1, 'infinity'), (2, '-infinity')")
    plan = {"name": "inf", "steps": [
        {"id": "s1", "do": "x",
         "validators": [{"kind": "sql_row_present", "url": pg_url, "table": table, "where": {"id": 1}}]}]}
    rc, so, se, rd = _run(tmp_path, plan, cli_env, agent=_agent(tmp_path))
    assert rd is not None, se
    step = _steps(rd)["s1"]
    assert step["verdict"] == "PASS", _reasons(step)


def test_sql_capture_that_never_returns_ends(tmp_path, cli_env, pg_url):
    """A SQL capture has no timeout: a query that does not return (here `pg_sleep`; an agent with the
    database on loopback can make the plan's table a view that sleeps) held `referee run` for as long as
    the server took, with no way out but Ctrl-C. http and command captures give up after `timeout_s`
    (15 s and 60 s by default); a SQL capture must give up too (after `timeout_s`, 30 s by default; 1 s
    here), as a failed capture (ERROR)."""
    plan = {"name": "sqlhang", "steps": [
        {"id": "s1", "do": "x",
         "validators": [{"kind": "sql_row_present", "url": pg_url, "query": "select 1 from pg_sleep(3600)",
                         "timeout_s": 1}]}]}
    t0 = time.monotonic()
    rc, so, se, rd = _run(tmp_path, plan, cli_env, agent=_agent(tmp_path), timeout=200)
    assert rd is not None, se
    assert _steps(rd)["s1"]["verdict"] == "ERROR", f"took {time.monotonic() - t0:.0f}s"


# ---------------------------------------------------------------- DynamoDB


def _ddb(endpoint: str):
    import boto3

    return boto3.client("dynamodb", endpoint_url=endpoint, region_name="us-east-1",
                        aws_access_key_id="testing", aws_secret_access_key="testing")


def _ddb_table(endpoint: str, name: str, sk_type: str = "N") -> None:
    _ddb(endpoint).create_table(
        TableName=name, BillingMode="PAY_PER_REQUEST",
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"},
                              {"AttributeName": "sk", "AttributeType": sk_type}])


def test_ddb_item_with_a_binary_attribute(tmp_path, cli_env, moto_endpoint):
    """An item with a Binary (`B`) attribute could not be captured at all: `TypeError: __str__ returned
    non-string (type bytes)`, so `ddb_row_present` on it was ERROR."""
    table = f"hunt_bin_{os.getpid()}"
    _ddb_table(moto_endpoint, table)
    _ddb(moto_endpoint).put_item(TableName=table, Item={"pk": {"S": "a"}, "sk": {"N": "1"},
                                                        "blob": {"B": b"\xff\x00hello"}})
    plan = {"name": "ddbbin", "steps": [
        {"id": "s1", "do": "x",
         "validators": [{"kind": "ddb_row_present", "table": table, "key": {"pk": "a", "sk": 1},
                         "endpoint_url": moto_endpoint, "region": "us-east-1"}]}]}
    rc, so, se, rd = _run(tmp_path, plan, cli_env, agent=_agent(tmp_path))
    assert rd is not None, se
    step = _steps(rd)["s1"]
    assert step["verdict"] == "PASS", _reasons(step)


def test_ddb_key_with_a_fractional_number(tmp_path, cli_env, moto_endpoint):
    """A number key that is not whole (`sk: 1.5`) failed the capture with boto3's
    `TypeError: Float types are not supported. Use Decimal types instead.`: ERROR, on an item that exists."""
    table = f"hunt_dec_{os.getpid()}"
    _ddb_table(moto_endpoint, table)
    _ddb(moto_endpoint).put_item(TableName=table, Item={"pk": {"S": "a"}, "sk": {"N": "1.5"}, "v": {"S": "ok"}})
    plan = {"name": "ddbdec", "steps": [
        {"id": "s1", "do": "x",
         "validators": [{"kind": "ddb_row_present", "table": table, "key": {"pk": "a", "sk": 1.5},
                         "endpoint_url": moto_endpoint, "region": "us-east-1"}]}]}
    rc, so, se, rd = _run(tmp_path, plan, cli_env, agent=_agent(tmp_path))
    assert rd is not None, se
    step = _steps(rd)["s1"]
    assert step["verdict"] == "PASS", _reasons(step)


# ---------------------------------------------------------------- screens


_SLOW_APP = r'''
import sys, time
from http.server import ThreadingHTTPServer, BaseHTTPRequestHandler
class H(BaseHTTPRequestHandler):
    def log_message(self, *a): pass
    def do_GET(self):
        if self.path == "/slow":
            time.sleep(3600); return
        b = b"<html><body><h1>Home</h1></body></html>"
        self.send_response(200); self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(b))); self.end_headers(); self.wfile.write(b)
ThreadingHTTPServer.daemon_threads = True
ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
'''


@pytest.mark.skipif(not (shutil.which("chromium") or os.environ.get("REFEREE_CHROMIUM")),
                    reason="needs the system Chromium (apt-get install chromium)")
def test_dom_capture_of_a_page_that_never_loads_ends(tmp_path, cli_env):
    """A page still loading (a `goto` to an address that never answers; the script's action timed out
    after its `timeout_s`, 1 s here) made the `dom` capture wait forever: the run never ended. The `screenshot`
    and `aria` captures give up after their `timeout_s` (30 s by default; 2 s here) as failed captures; `dom`
    must too."""
    app = tmp_path / "slow_app.py"
    app.write_text(_SLOW_APP)
    plan = {"name": "neverloads",
            "app": {"start": f"{shlex.quote(sys.executable)} {shlex.quote(str(app))} {{port}}",
                    "url": "http://127.0.0.1:{port}", "ready": "/"},
            "actor": {"kind": "browser", "timeout_s": 20},
            "steps": [{"id": "s1", "do": "x", "script": [{"goto": {"url": "/slow", "timeout_s": 1}}],
                       "capture": [{"kind": "dom", "name": "d", "timeout_s": 2}],
                       "validators": [{"kind": "dom_contains", "evidence": "d", "text": "Home"}]}]}
    try:
        rc, so, se, rd = _run(tmp_path, plan, cli_env, timeout=150)
        assert rd is not None, se
        step = _steps(rd)["s1"]
        assert step["verdict"] == "ERROR", _reasons(step)
        # the run ended because the capture gave up after its own timeout_s (2 s), not the default 30 s
        assert "DOM capture failed: the page was still loading after the capture's timeout_s (2s)" in _reasons(step), (
            _reasons(step))
    finally:  # a runner killed on timeout cannot stop its app
        for pid in _procs_with_cmdline(str(app)):
            try:
                os.kill(pid, 9)
            except ProcessLookupError:
                pass


# ---------------------------------------------------------------- grading a tampered run directory


def _sealed_run(tmp_path: Path, env: dict) -> Path:
    """A finished, sealed run: s1 reads the agent's proof.txt; s2 checks a command; the agent also saves
    notes.txt in s2, which no validator reads."""
    body = ('echo hello > "$REFEREE_AGENT_DIR/proof.txt"\n'
            'echo "my notes" > "$REFEREE_AGENT_DIR/notes.txt"')
    plan = {"name": "sealed", "steps": [
        {"id": "s1", "do": "x", "validators": [{"kind": "text_contains", "evidence": "proof.txt", "text": "hello"}]},
        {"id": "s2", "do": "x", "capture": [{"kind": "command", "name": "listing", "command": "echo listing"}],
         "validators": [{"kind": "command_exit_code", "command": "true"}]}]}
    rc, so, se, rd = _run(tmp_path, plan, env, agent=_agent(tmp_path, body))
    assert rc == 0 and rd is not None, se
    return rd


def test_grade_refusing_the_manifest_rewrites_the_report_too(tmp_path, cli_env):
    """`referee grade` on a run whose manifest.json was emptied (or made invalid JSON) rewrote
    results.json and junit.xml with every step ERROR, but left report.html as it was: all PASS."""
    rd = _sealed_run(tmp_path, cli_env)
    (rd / "manifest.json").write_text("")
    rc, so, se = run_cli(["grade", str(rd)], cwd=tmp_path, env=cli_env)
    assert rc != 0
    assert "manifest.json" in so + se
    assert {s["verdict"] for s in json.loads((rd / "results.json").read_text())["steps"]} == {"ERROR"}
    report = (rd / "report.html").read_text()
    assert ">PASS<" not in report, "report.html still shows the steps as PASS after grade refused the run"


def test_grade_notices_every_listed_file_that_changed(tmp_path, cli_env):
    """A file the signed manifest lists (the agent's notes.txt, the runner's capture `listing`, the raw
    agent/<step>/claim.json) deleted or edited after the run went unnoticed when no validator reads it:
    `referee grade` printed all PASS and 'seal verified', and named nothing."""
    rd = _sealed_run(tmp_path, cli_env)
    rc0, so0, _ = run_cli(["grade", str(rd)], cwd=tmp_path, env=cli_env)
    assert rc0 == 0, so0
    (rd / "agent" / "s2" / "notes.txt").unlink()
    listing = rd / "evidence" / "s2" / "after" / "listing.json"
    listing.write_text(listing.read_text().replace("listing", "FORGED"))
    rc, so, se = run_cli(["grade", str(rd)], cwd=tmp_path, env=cli_env)
    out = so + se + (rd / "results.json").read_text()
    assert "notes.txt" in out and "listing.json" in out, (
        f"grade did not name the deleted and the edited evidence files (rc={rc}):\n{so}\n{se}")
