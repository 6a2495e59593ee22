"""Database evidence a black-box tester found wrong: SQLite files made by a read-only capture, Infinity
written as null, counts past a million, PostgreSQL `where` types and read-write captures, DynamoDB
without a time limit. Each test drives `referee run` over real files and loopback servers (the suite's
PostgreSQL and moto), and failed on the code it was written against."""

from __future__ import annotations

import json
import os
import shlex
import socket
import threading
from pathlib import Path

import pytest

from tests.runner.runner_helpers import Run, do_run, write_plan


def _agent(tmp_path: Path) -> str:
    """A command agent that does nothing and claims pass."""
    path = tmp_path / "agent.sh"
    path.write_text("#!/bin/sh\nprintf '{\"pass\": true}' > \"$REFEREE_CLAIM_FILE\"\n")
    path.chmod(0o755)
    return f"sh {shlex.quote(str(path))}"


def _run(tmp_path: Path, env: dict, steps: list[dict], timeout: float = 120) -> Run:
    plan = write_plan(tmp_path / "plan.yaml", {"name": "db", "steps": steps})
    return do_run(plan, out=tmp_path / "out", cwd=tmp_path, env=env, agent=_agent(tmp_path), timeout=timeout)


def _evidence(run: Run, step: str, name: str) -> dict:
    assert run.run_dir is not None, run.explain()
    return json.loads((run.run_dir / "evidence" / step / "after" / f"{name}.json").read_text())


def _psql(pg_url: str, sql: str) -> None:
    import sqlalchemy

    eng = sqlalchemy.create_engine(pg_url)
    with eng.begin() as conn:
        conn.exec_driver_sql(sql)
    eng.dispose()


# ---------------------------------------------------------------- SQLite: read-only, never creates a file


def test_sqlite_capture_creates_no_database_file(tmp_path, cli_env):
    """`ATTACH DATABASE '/path/x.db'` made an empty file and `VACUUM INTO '/path/copy.db'` wrote a full copy
    of the database (owned by the runner's account), through a capture documented as read-only, never
    creating a database. Both must fail as writes: ERROR, with a reason saying so, and no file."""
    import sqlite3

    db = tmp_path / "app.db"
    with sqlite3.connect(db) as conn:
        conn.execute("create table items(v text)")
        conn.execute("insert into items values ('secret row')")
    attach, copy = tmp_path / "attached.db", tmp_path / "copy.db"
    run = _run(tmp_path, cli_env, [
        {"id": "attach", "do": "x", "validators": [
            {"kind": "sql_row_present", "url": f"sqlite:///{db}", "query": f"ATTACH DATABASE '{attach}' AS x"}]},
        {"id": "vacuum", "do": "x", "validators": [
            {"kind": "sql_row_present", "url": f"sqlite:///{db}", "query": f"VACUUM INTO '{copy}'"}]},
        {"id": "memory", "do": "x", "validators": [  # an in-memory database must not reach the disk either
            {"kind": "sql_row_present", "url": "sqlite://", "query": f"ATTACH DATABASE '{attach}' AS x"}]}])
    assert not attach.exists() and not copy.exists(), run.explain()
    for step in ("attach", "vacuum", "memory"):
        assert run.verdict(step) == "ERROR", run.explain()
        assert "read-only" in run.reasons(step), run.reasons(step)


# ---------------------------------------------------------------- values JSON has no number for


def test_sql_infinity_and_nan_are_text_not_null(tmp_path, cli_env, pg_url):
    """`select 1e999` (SQLite) and PostgreSQL 'NaN' / 'Infinity' floats were written as `null`, so
    `json_path_eq expected: null` PASSed on a value that is not SQL NULL. They are kept as text."""
    run = _run(tmp_path, cli_env, [
        {"id": "s", "do": "x",
         "capture": [{"kind": "sql", "name": "lite", "url": "sqlite://",
                      "query": "select 1e999 as pinf, -1e999 as ninf, null as none_"},
                     {"kind": "sql", "name": "pg", "url": pg_url,
                      "query": "select 'NaN'::float8 as nan, 'Infinity'::float8 as pinf, "
                               "'-Infinity'::float4 as ninf, 'NaN'::numeric as nnan, 1.5::float8 as ok"}],
         "validators": [{"kind": "json_path_eq", "evidence": "lite", "path": "$.rows[0].pinf", "expected": None}]}])
    assert run.verdict("s") == "FAIL", run.explain()
    assert _evidence(run, "s", "lite")["rows"] == [{"pinf": "Infinity", "ninf": "-Infinity", "none_": None}]
    assert _evidence(run, "s", "pg")["rows"] == [
        {"nan": "NaN", "pinf": "Infinity", "ninf": "-Infinity", "nnan": "NaN", "ok": 1.5}]


# ---------------------------------------------------------------- counts past a million


def test_sql_row_count_past_a_million_proves_at_least_a_million(tmp_path, cli_env):
    """A query returning more than 1,000,000 rows: `total_rows` was null with nothing saying the count
    reached the cap, every `min_rows` above 1000 was ERROR and `min_rows: 5` said '1000 row(s) found'."""
    query = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c WHERE x < 1000005) SELECT x FROM c"
    run = _run(tmp_path, cli_env, [
        {"id": "s", "do": "x",
         "capture": [{"kind": "sql", "name": "many", "url": "sqlite://", "query": query}],
         "validators": [{"kind": "sql_row_present", "evidence": "many", "min_rows": n}
                        for n in (5, 5000, 1_000_000, 2_000_000)]}], timeout=300)
    checks = run.step("s")["validators"]
    assert [v["status"] for v in checks] == ["PASS", "PASS", "PASS", "ERROR"], run.explain()
    for v in checks:
        assert "more than 1,000,000 row" in v["reason"], v
    rec = _evidence(run, "s", "many")
    assert rec["total_rows"] is None and rec["total_rows_more_than"] == 1_000_000, {
        k: v for k, v in rec.items() if k != "rows"}


# ---------------------------------------------------------------- PostgreSQL


@pytest.fixture()
def pg_table(pg_url):
    table = f"dbev_typ_{os.getpid()}"
    _psql(pg_url, f"drop table if exists {table}; create table {table} (d date, u uuid, n int, t text);"
                  f"insert into {table} values ('2024-01-02', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', 7, '7')")
    return table


def test_pg_where_is_typed_by_the_column(tmp_path, cli_env, pg_url, pg_table):
    """`where` on a date or uuid column, or a quoted number on an int column, was always ERROR
    (`operator does not exist: date = character varying`; uuid: `CompileError`). The database now casts
    the plan's value to the column's type; a column the table lacks is named, with the ones it has."""
    wheres = {"date": {"d": "2024-01-02"}, "uuid": {"u": "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"},
              "int_as_text": {"n": "7"}, "int": {"n": 7}, "text_as_int": {"t": 7}, "null": {"d": None}}
    steps = [{"id": sid, "do": "x", "validators": [
        {"kind": "sql_row_present", "url": pg_url, "table": pg_table, "where": where}]}
        for sid, where in wheres.items()]
    steps.append({"id": "nosuch", "do": "x", "validators": [
        {"kind": "sql_row_present", "url": pg_url, "table": pg_table, "where": {"nosuch": 1}}]})
    run = _run(tmp_path, cli_env, steps)
    assert run.verdicts() == {"date": "PASS", "uuid": "PASS", "int_as_text": "PASS", "int": "PASS",
                              "text_as_int": "PASS", "null": "FAIL", "nosuch": "ERROR"}, run.explain()
    assert f"no column 'nosuch' in table {pg_table} (columns: d, u, n, t)" in run.reasons("nosuch")


def test_pg_capture_cannot_change_the_database(tmp_path, cli_env, pg_url):
    """`query: "commit; drop table victim; select 1"` dropped the table: captures ran read-write, several
    statements at once. A capture now runs one statement in a read-only transaction."""
    victim = f"dbev_victim_{os.getpid()}"
    _psql(pg_url, f"drop table if exists {victim}; create table {victim} (v int); insert into {victim} values (1)")
    run = _run(tmp_path, cli_env, [
        {"id": "multi", "do": "x", "validators": [
            {"kind": "sql_row_present", "url": pg_url, "query": f"commit; drop table {victim}; select 1"}]},
        {"id": "write", "do": "x", "validators": [
            {"kind": "sql_row_present", "url": pg_url, "query": f"delete from {victim} returning v"}]},
        {"id": "read", "do": "x", "validators": [
            {"kind": "sql_row_present", "url": pg_url, "query": f"select v from {victim}"}]}])
    assert run.verdicts() == {"multi": "ERROR", "write": "ERROR", "read": "PASS"}, run.explain()
    assert "one statement" in run.reasons("multi"), run.reasons("multi")
    assert "read-only" in run.reasons("write"), run.reasons("write")


# ---------------------------------------------------------------- DynamoDB


@pytest.fixture()
def silent_endpoint():
    """A loopback port that accepts connections and never answers."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(50)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        srv.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(srv.accept()[0])
            except OSError:
                continue

    t = threading.Thread(target=accept, daemon=True)
    t.start()
    yield f"http://127.0.0.1:{srv.getsockname()[1]}"
    stop.set()
    t.join(5)
    for s in held:
        s.close()
    srv.close()


def test_ddb_capture_has_a_time_limit(tmp_path, cli_env, silent_endpoint):
    """One get_item against an endpoint that accepts and never answers held the run for 636 s: ddb had no
    `timeout_s`. With `timeout_s: 1` the capture fails (ERROR) in seconds, saying why."""
    env = {**cli_env, "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
           "AWS_EC2_METADATA_DISABLED": "true"}
    # a get_item never given up holds the run until the test times out; the reasons say the capture's own
    # timeout_s stopped it
    run = _run(tmp_path, env, [
        {"id": "hang", "do": "x", "validators": [
            {"kind": "ddb_row_present", "table": "users", "key": {"pk": "a"}, "endpoint_url": silent_endpoint,
             "region": "us-east-1", "timeout_s": 1}]},
        {"id": "cap", "do": "x", "capture": [
            {"kind": "ddb", "name": "item", "table": "users", "key": {"pk": "a"}, "endpoint_url": silent_endpoint,
             "region": "us-east-1", "timeout_s": 1}],
         "validators": [{"kind": "ddb_row_present", "evidence": "item"}]}], timeout=90)
    assert run.verdicts() == {"hang": "ERROR", "cap": "ERROR"}, run.explain()
    assert "within 1 s (timeout_s)" in run.reasons("hang"), run.reasons("hang")
    assert "within 1 s (timeout_s)" in run.reasons("cap"), run.reasons("cap")


def test_a_wal_file_the_agent_planted_beside_a_database_it_cannot_write_is_not_read(tmp_path, run_plan):
    """SQLite reads committed rows from `<db>-wal`: an agent that may not write app.db (root's, 0644) but may
    write its folder copied it, inserted the row and saved the copy's WAL as app.db-wal, and the read-only
    capture PASSed on the forged row (and left a root-owned app.db-shm beside it)."""
    import sqlite3

    db = tmp_path / "app.db"
    with sqlite3.connect(db) as c:
        c.execute("pragma journal_mode=wal")
        c.execute("create table orders(id integer primary key, item text)")
    c.close()
    db.chmod(0o644)
    agent = tmp_path / "agent.py"
    agent.write_text(
        "import os, shutil, sqlite3\n"
        f"db = {str(db)!r}; copy = os.environ['TMPDIR'] + '/copy.db'\n"
        "shutil.copy(db, copy)\n"
        "c = sqlite3.connect(copy); c.execute('pragma wal_autocheckpoint=0')\n"
        "c.execute(\"insert into orders values (1, 'lamp')\"); c.commit()\n"
        "shutil.copy(copy + '-wal', db + '-wal')  # the connection is still open: not checkpointed\n"
        "open(os.environ['REFEREE_CLAIM_FILE'], 'w').write('{\"pass\": true}')\n"
        "os._exit(0)\n")
    steps = [{"id": "s", "do": "Order a lamp.", "validators": [
        {"kind": "sql_row_present", "url": f"sqlite:///{db}", "table": "orders", "where": {"id": 1, "item": "lamp"}}]}]
    run = run_plan({"name": "walplant", "actor": {"kind": "command", "command": f"/usr/bin/python3 {agent}"},
                    "steps": steps})
    assert run.run_dir is not None, run.explain()
    assert (tmp_path / "app.db-wal").exists(), "the agent planted nothing: the test proves nothing"
    if run.manifest["isolation"]["mode"] != "user":
        pytest.skip("the agent ran as the database's owner here (no user isolation): its WAL is the owner's")
    assert run.verdict("s") == "ERROR", run.explain()
    assert "was not made by its owner" in run.reasons("s"), run.reasons("s")
    assert not (tmp_path / "app.db-shm").exists()


def test_a_wal_database_without_a_writer_is_read_without_leaving_a_shm_file(tmp_path, run_plan):
    import sqlite3

    db = tmp_path / "app.db"
    with sqlite3.connect(db) as c:
        c.execute("pragma journal_mode=wal")
        c.execute("create table orders(id integer primary key, item text)")
        c.execute("insert into orders values (1, 'lamp')")
    c.close()
    assert not (tmp_path / "app.db-wal").exists()
    steps = [{"id": "s", "do": "x", "validators": [
        {"kind": "sql_row_present", "url": f"sqlite:///{db}", "table": "orders", "where": {"id": 1}}]}]
    run = run_plan({"name": "walread", "steps": steps}, agent="true")
    assert run.verdict("s") == "PASS", run.explain()
    assert not (tmp_path / "app.db-shm").exists() and not (tmp_path / "app.db-wal").exists()
