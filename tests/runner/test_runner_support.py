"""Self-tests of the suite's own machinery: the servers, the test app and the agents work on their own.

If one of these fails, the runner's acceptance tests that depend on it tell you nothing.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest

from tests.conftest import AGENTS_DIR


def _req(method: str, url: str, body: dict | None = None):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=5) as r:
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()


def test_postgres_answers_select_1(pg_url):
    import sqlalchemy as sa

    eng = sa.create_engine(pg_url)
    try:
        with eng.connect() as conn:
            assert conn.execute(sa.text("select 1")).scalar() == 1
            assert "PostgreSQL" in conn.execute(sa.text("select version()")).scalar()
    finally:
        eng.dispose()


def test_moto_dynamodb_creates_a_table(moto_endpoint):
    import boto3

    ddb = boto3.client("dynamodb", endpoint_url=moto_endpoint, region_name="us-east-1",
                       aws_access_key_id="testing", aws_secret_access_key="testing")
    ddb.create_table(TableName="selftest", KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
                     AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
                     BillingMode="PAY_PER_REQUEST")
    ddb.put_item(TableName="selftest", Item={"pk": {"S": "a"}})
    assert ddb.get_item(TableName="selftest", Key={"pk": {"S": "a"}})["Item"]["pk"]["S"] == "a"


def test_app_routes(test_app):
    u = test_app.url
    assert _req("GET", u + "/health")[0] == 200
    assert _req("GET", u + "/api/notes/by-title/alpha")[0] == 404
    st, _, body = _req("POST", u + "/api/notes", {"title": "alpha", "body": "hello world", "tags": ["x", "y"]})
    assert st == 201 and json.loads(body)["title"] == "alpha"
    st, _, body = _req("GET", u + "/api/notes/by-title/alpha")
    assert st == 200 and json.loads(body)["tags"] == ["x", "y"]
    assert _req("POST", u + "/api/notes", {"nope": 1})[0] == 400
    st, headers, _ = _req("GET", u + "/api/session")
    assert st == 200 and "SECRETCOOKIE" in headers.get("Set-Cookie", "") and headers.get("X-Visible") == "yes"
    assert _req("GET", u + "/api/status/418")[0] == 418
    assert b"alpha" in _req("GET", u + "/")[2]
    assert _req("DELETE", u + "/api/notes/by-title/alpha")[0] == 204
    assert _req("GET", u + "/api/notes/by-title/alpha")[0] == 404
    import sqlite3

    with sqlite3.connect(test_app.db) as conn:
        assert conn.execute("select count(*) from notes").fetchone()[0] == 0


STEP_JSON = '{"id": "s1", "do": "x", "capture": [{"kind": "http", "name": "cap"}]}'


def _agent(name, tmp_path, do, app_url="", args=(), stdin=STEP_JSON):
    agent_dir = tmp_path / "run" / "agent" / "s1"
    env = {**os.environ, "REFEREE_STEP_ID": "s1", "REFEREE_STEP_DO": do, "REFEREE_APP_URL": app_url,
           "REFEREE_AGENT_DIR": str(agent_dir), "REFEREE_CLAIM_FILE": str(tmp_path / "claim.json")}
    r = subprocess.run([sys.executable, str(AGENTS_DIR / f"{name}.py"), *args], input=stdin, env=env,
                       capture_output=True, text=True, timeout=30, cwd=tmp_path)
    claim = tmp_path / "claim.json"
    return r, agent_dir, (claim.read_text() if claim.exists() else None)


def test_honest_agent_does_the_work_and_claims_truthfully(test_app, tmp_path):
    do = ('Create it.\nPOST /api/notes {"title": "beta"}\nSAVE note.txt hi there\n'
          f'WRITE {tmp_path}/f.txt content\nEXIT 3')
    r, adir, claim = _agent("honest", tmp_path, do, app_url=test_app.url)
    assert r.returncode == 3, r.stderr
    assert json.loads(claim)["pass"] is True
    assert (adir / "note.txt").read_text() == "hi there" and (tmp_path / "f.txt").exists()
    assert _req("GET", test_app.url + "/api/notes/by-title/beta")[0] == 200
    r, _, claim = _agent("honest", tmp_path, "DELETE /api/notes/by-title/nothere", app_url=test_app.url)
    assert json.loads(claim)["pass"] is False
    r, _, claim = _agent("honest", tmp_path, "", args=["--claim", "garbage"])
    with pytest.raises(ValueError):
        json.loads(claim)


def test_sql_and_ddb_instructions(pg_url, moto_endpoint, tmp_path):
    import boto3
    import sqlalchemy as sa

    eng = sa.create_engine(pg_url)
    with eng.begin() as conn:
        conn.execute(sa.text("create table if not exists selftest_items (name text)"))
    ddb = boto3.client("dynamodb", endpoint_url=moto_endpoint, region_name="us-east-1",
                       aws_access_key_id="testing", aws_secret_access_key="testing")
    ddb.create_table(TableName="selftest2", KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
                     AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
                     BillingMode="PAY_PER_REQUEST")
    r, _, claim = _agent("honest", tmp_path, f"SQL {pg_url} insert into selftest_items values ('zed')\n"
                         f'DDB_PUT {moto_endpoint} selftest2 {{"pk": "k1", "n": 3}}')
    assert json.loads(claim)["pass"] is True, (claim, r.stderr)
    with eng.connect() as conn:
        assert conn.execute(sa.text("select count(*) from selftest_items where name='zed'")).scalar() == 1
    eng.dispose()
    assert ddb.get_item(TableName="selftest2", Key={"pk": {"S": "k1"}})["Item"]["n"]["N"] == "3"


def test_liar_forger_envdump_agents(tmp_path):
    r, adir, claim = _agent("liar", tmp_path, "POST /api/notes {}")
    assert json.loads(claim)["pass"] is True and (adir / "proof.json").exists()
    r, adir, claim = _agent("forger", tmp_path, "TAMPER evidence/s0/after/x.json {\"status\": 200}")
    assert json.loads(claim)["pass"] is True
    assert (tmp_path / "run" / "evidence" / "s0" / "after" / "x.json").exists()
    assert json.loads((adir / "cap.json").read_text())["status"] == 200
    env_secret = {"REFEREE_TEST_SECRET": "s3cr3t"}
    os.environ.update(env_secret)
    try:
        r, adir, claim = _agent("envdump", tmp_path, "")
    finally:
        os.environ.pop("REFEREE_TEST_SECRET")
    assert json.loads((adir / "env.json").read_text())["REFEREE_TEST_SECRET"] == "s3cr3t"
    assert json.loads((adir / "stdin.json").read_text())["id"] == "s1"


def test_sleeper_agent_sleeps_and_records_pids(tmp_path):
    agent_dir = tmp_path / "run" / "agent" / "s1"
    env = {**os.environ, "REFEREE_STEP_ID": "s1", "REFEREE_STEP_DO": "", "REFEREE_AGENT_DIR": str(agent_dir),
           "REFEREE_CLAIM_FILE": str(tmp_path / "claim.json")}
    p = subprocess.Popen([sys.executable, str(AGENTS_DIR / "sleeper.py"), "30"], env=env, stdin=subprocess.DEVNULL,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while not (agent_dir / "started").exists() and p.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert (agent_dir / "started").exists()
        assert p.poll() is None  # it went to sleep (for 30 s) after its work
        assert int((agent_dir / "pid").read_text()) == p.pid
        child = int((agent_dir / "child_pid").read_text())
    finally:
        p.kill()
        p.wait()
    os.kill(child, 9)
