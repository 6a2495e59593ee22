"""Captures the runner takes after a step: http (secret headers redacted), command, sql (SQLite and
PostgreSQL), ddb (moto), file; stored under evidence/<step>/after/ and listed in the manifest."""

from __future__ import annotations

import json

import pytest

from tests.conftest import base_cli_env
from tests.runner.runner_helpers import agent_cmd, app_block, do_run, sha256, write_plan
from tests.support.app import SECRET_HEADER_VALUES


@pytest.fixture(scope="module")
def crun(tmp_path_factory, pg_url, moto_endpoint):
    import boto3
    import sqlalchemy as sa

    W = tmp_path_factory.mktemp("captures")
    eng = sa.create_engine(pg_url)
    with eng.begin() as conn:
        conn.execute(sa.text("drop table if exists cap_items"))
        conn.execute(sa.text("create table cap_items (id serial primary key, name text not null)"))
    eng.dispose()
    ddb = boto3.client("dynamodb", endpoint_url=moto_endpoint, region_name="us-east-1",
                       aws_access_key_id="testing", aws_secret_access_key="testing")
    ddb.create_table(TableName="cap_items", KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
                     AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
                     BillingMode="PAY_PER_REQUEST")
    plan = {
        "name": "captures",
        "app": app_block(W / "app.db", W / "app.pid"),
        "steps": [
            {"id": "web", "do": 'POST /api/notes {"title": "alpha", "body": "hello"}',
             "capture": [{"kind": "http", "name": "session", "url": "/api/session"},
                         {"kind": "http", "name": "note", "url": "/api/notes/by-title/alpha"}],
             "validators": [{"kind": "http_status_eq", "evidence": "session", "expected": 200},
                            {"kind": "json_path_eq", "evidence": "note", "path": "$.title", "expected": "alpha"}]},
            {"id": "cmd", "do": "nothing",
             "capture": [{"kind": "command", "name": "listing", "command": "echo out-line; echo err-line >&2; exit 3"}],
             "validators": [{"kind": "command_exit_code", "evidence": "listing", "expected": 3}]},
            {"id": "db", "do": f"SQL {pg_url} insert into cap_items (name) values ('pg-row')\n"
                               f'DDB_PUT {moto_endpoint} cap_items {{"pk": "k1", "color": "green"}}',
             "capture": [{"kind": "sql", "name": "notes", "url": f"sqlite:///{W}/app.db",
                          "query": "select title, body from notes order by id"},
                         {"kind": "sql", "name": "pgrows", "url": pg_url, "query": "select name from cap_items"},
                         {"kind": "ddb", "name": "item", "table": "cap_items", "key": {"pk": "k1"},
                          "endpoint_url": moto_endpoint, "region": "us-east-1"}],
             "validators": [{"kind": "text_contains", "evidence": "pgrows", "text": "pg-row"},
                            {"kind": "text_contains", "evidence": "item", "text": "green"}]},
            {"id": "files", "do": f"WRITE {W}/made/report.md # Report\\nall good",
             "capture": [{"kind": "file", "name": "report", "path": "made/report.md"}],
             "validators": [{"kind": "file_exists", "path": "made/report.md"}]},
        ],
    }
    path = write_plan(W / "captures.yaml", plan)
    run = do_run(path, out=W / "out", cwd=W, env=base_cli_env(), agent=agent_cmd("honest"))
    run.W = W
    return run


def _cap(run, step, name) -> dict:
    p = run.run_dir / "evidence" / step / "after" / f"{name}.json"
    found = sorted(str(x.relative_to(run.run_dir)) for x in (run.run_dir / "evidence").rglob("*"))
    assert p.is_file(), f"no {p.relative_to(run.run_dir)}; evidence: {found}"
    return json.loads(p.read_text())


def test_all_capture_steps_pass(crun):
    assert crun.verdicts() == {"web": "PASS", "cmd": "PASS", "db": "PASS", "files": "PASS"}, crun.explain()
    assert crun.rc == 0


def test_http_capture_format_and_secret_headers_redacted(crun):
    cap = _cap(crun, "web", "session")
    assert {"url", "status", "headers", "body"} <= set(cap), cap
    assert cap["status"] == 200 and cap["url"].endswith("/api/session")
    headers = {k.lower(): v for k, v in cap["headers"].items()}
    assert headers.get("x-visible") == "yes", headers
    raw = (crun.run_dir / "evidence/web/after/session.json").read_text()
    for name, value in SECRET_HEADER_VALUES.items():
        secret = value.split("=", 1)[-1].split(";")[0].split(" ")[-1]
        assert secret not in raw, f"{name} was not redacted: {raw}"
    assert "set-cookie" in headers, "a redacted header should still be shown as present"
    body = cap["body"] if isinstance(cap["body"], (dict, list)) else json.loads(cap["body"])
    assert body == {"user": "tester"}


def test_no_secret_header_anywhere_in_the_run_dir(crun):
    secrets = [v.split("=", 1)[-1].split(";")[0].split(" ")[-1] for v in SECRET_HEADER_VALUES.values()]
    for p in crun.run_dir.rglob("*"):
        if p.is_file():
            data = p.read_bytes()
            for s in secrets:
                assert s.encode() not in data, f"{s} leaked into {p}"


def test_command_capture_format(crun):
    cap = _cap(crun, "cmd", "listing")
    assert cap["exit_code"] == 3 and cap["command"].startswith("echo out-line")
    assert "out-line" in cap["stdout"] and "err-line" in cap["stderr"], cap


def test_sql_capture_format_sqlite_and_postgres(crun):
    cap = _cap(crun, "db", "notes")
    assert {"url", "query", "columns", "rows"} <= set(cap), cap
    assert cap["columns"] == ["title", "body"]
    assert json.loads(json.dumps(cap["rows"])) in ([["alpha", "hello"]], [{"title": "alpha", "body": "hello"}]), cap
    pg = _cap(crun, "db", "pgrows")
    assert pg["columns"] == ["name"] and "pg-row" in json.dumps(pg["rows"]), pg
    assert "password" not in json.dumps(pg).lower()


def test_ddb_capture_format(crun):
    cap = _cap(crun, "db", "item")
    assert cap["table"] == "cap_items" and isinstance(cap["items"], list) and len(cap["items"]) == 1, cap
    assert "green" in json.dumps(cap["items"]) and "k1" in json.dumps(cap["items"])


def test_file_capture_is_a_copy_listed_in_the_manifest(crun):
    entries = [f for f in crun.manifest["files"] if f["step"] == "files" and f.get("capture") == "report"]
    assert entries, crun.manifest["files"]
    for e in entries:
        assert e["captured_by"] == "runner" and e["phase"] == "after" and e["path"].startswith("evidence/files/after/")
        assert sha256(crun.run_dir / e["path"]) == e["sha256"]
    original = (crun.W / "made/report.md").read_bytes()
    copies = [e for e in entries if (crun.run_dir / e["path"]).read_bytes() == original]
    assert copies, f"no byte-for-byte copy of made/report.md among {entries}"


def test_every_capture_is_in_the_manifest(crun):
    listed = {(f["step"], f.get("capture")) for f in crun.manifest["files"] if f["captured_by"] == "runner"}
    for want in [("web", "session"), ("web", "note"), ("cmd", "listing"), ("db", "notes"), ("db", "pgrows"),
                 ("db", "item"), ("files", "report")]:
        assert want in listed, f"{want} not in manifest: {sorted(listed, key=str)}"
