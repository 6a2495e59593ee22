"""Every validator kind, holding and not holding, and each with `require_change`, in one real run.

The app under test is tests/support/app.py (SQLite), started by the runner from the plan's `app:`;
PostgreSQL and moto's DynamoDB are the suite's loopback servers. The honest agent does the work;
validators decide. `require_change` cases: the state existed before the step (FAIL: the step
cannot be shown to have done it) or the step made it (PASS).
"""

from __future__ import annotations

import json
import sqlite3
import sys

import pytest

from tests.conftest import base_cli_env
from tests.runner.runner_helpers import agent_cmd, app_block, do_run, write_plan


def _steps(W, pg, ddb):
    sqlite_url = f"sqlite:///{W}/app.db"

    def post(title, body="", tags=()):
        return f"POST /api/notes {json.dumps({'title': title, 'body': body, 'tags': list(tags)})}"

    def step(sid, do="", validators=(), capture=()):
        s = {"id": sid, "do": do or "nothing to do", "validators": list(validators)}  # a do: is required
        if capture:
            s["capture"] = list(capture)
        return s

    def ddb_v(key, **kw):
        return {"kind": "ddb_row_present", "table": "vt_items", "key": {"pk": key}, "endpoint_url": ddb,
                "region": "us-east-1", **kw}

    return [
        # -- http_status_eq
        step("hs_hold", f"Create the note alpha.\n{post('alpha', 'hello alpha', ['red', 'blue'])}",
             [{"kind": "http_status_eq", "url": "/api/notes/by-title/alpha", "expected": 200}]),
        step("hs_not", "Nothing to do.",
             [{"kind": "http_status_eq", "url": "/api/notes/by-title/never", "expected": 200}]),
        step("hs_evidence", "Look at alpha.",
             [{"kind": "http_status_eq", "evidence": "created", "expected": 200}],
             [{"kind": "http", "name": "created", "url": "/api/notes/by-title/alpha"}]),
        step("hs_evidence_not", "Look at alpha.",
             [{"kind": "http_status_eq", "evidence": "created", "expected": 201}],
             [{"kind": "http", "name": "created", "url": "/api/notes/by-title/alpha"}]),
        # -- http_body_contains
        step("hb_hold", "",
             [{"kind": "http_body_contains", "url": "/api/notes/by-title/alpha", "text": "hello alpha"}]),
        step("hb_not", "", [{"kind": "http_body_contains", "url": "/api/notes/by-title/alpha", "text": "goodbye"}]),
        # -- json_path_eq
        step("jp_hold", "", [{"kind": "json_path_eq", "url": "/api/notes/by-title/alpha", "path": "$.tags[1]",
                              "expected": "blue"}]),
        step("jp_not", "", [{"kind": "json_path_eq", "url": "/api/notes/by-title/alpha", "path": "$.title",
                             "expected": "omega"}]),
        step("jp_file", 'SAVE data.json {"a": {"b": [5, 6]}}',
             [{"kind": "json_path_eq", "evidence": "data.json", "path": "$.a.b[0]", "expected": 5}]),
        step("jp_file_not", 'SAVE data.json {"a": {"b": [5, 6]}}',
             [{"kind": "json_path_eq", "evidence": "data.json", "path": "$.a.b[1]", "expected": 5}]),
        # -- file_exists (relative to the run's cwd W; the agent writes absolute paths)
        step("fe_hold", f"WRITE {W}/made/out.txt hello", [{"kind": "file_exists", "path": "made/out.txt"}]),
        step("fe_not", "", [{"kind": "file_exists", "path": "made/nothere.txt"}]),
        # -- text_contains / regex_match over the agent's files
        step("tc_hold", "SAVE log.txt the deploy finished OK",
             [{"kind": "text_contains", "evidence": "log.txt", "text": "finished OK"}]),
        step("tc_not", "SAVE log.txt nothing happened here",
             [{"kind": "text_contains", "evidence": "log.txt", "text": "finished OK"}]),
        step("rx_hold", "SAVE ver.txt version 1.42.7",
             [{"kind": "regex_match", "evidence": "ver.txt", "pattern": r"version \d+\.\d+\.\d+"}]),
        step("rx_not", "SAVE ver.txt version 1.42.7",
             [{"kind": "regex_match", "evidence": "ver.txt", "pattern": r"^release-\d+$"}]),
        # -- command_exit_code (cwd = where the run was started: W)
        step("ce_hold", "", [{"kind": "command_exit_code", "command": "test -f made/out.txt"}]),
        step("ce_not", "", [{"kind": "command_exit_code", "command": "test -f made/nothere.txt"}]),
        step("ce_expected", "", [{"kind": "command_exit_code",
                                  "command": f"{sys.executable} -c 'import sys; sys.exit(3)'", "expected": 3}]),
        step("ce_evidence", "", [{"kind": "command_exit_code", "evidence": "probe", "expected": 4}],
             [{"kind": "command", "name": "probe", "command": "echo probing; exit 4"}]),
        step("ce_evidence_not", "", [{"kind": "command_exit_code", "evidence": "probe"}],
             [{"kind": "command", "name": "probe", "command": "echo probing; exit 4"}]),
        # -- sql_row_present, SQLite
        step("sq_hold", "",
             [{"kind": "sql_row_present", "url": sqlite_url, "table": "notes", "where": {"title": "alpha"}}]),
        step("sq_not", "",
             [{"kind": "sql_row_present", "url": sqlite_url, "table": "notes", "where": {"title": "never"}}]),
        step("sq_query", "", [{"kind": "sql_row_present", "url": sqlite_url,
                               "query": "select id from notes where title = :t and body like :b",
                               "params": {"t": "alpha", "b": "hello%"}}]),
        step("sq_query_not", "", [{"kind": "sql_row_present", "url": sqlite_url,
                                   "query": "select id from notes where title = :t", "params": {"t": "never"}}]),
        # -- sql_row_present, PostgreSQL
        step("pg_hold", f"SQL {pg} insert into vt_items (name) values ('made-by-agent')",
             [{"kind": "sql_row_present", "url": pg, "table": "vt_items", "where": {"name": "made-by-agent"}}]),
        step("pg_not", "", [{"kind": "sql_row_present", "url": pg, "table": "vt_items", "where": {"name": "ghost"}}]),
        step("pg_query", "", [{"kind": "sql_row_present", "url": pg, "query": "select 1 from vt_items where name = :n",
                               "params": {"n": "made-by-agent"}}]),
        # -- ddb_row_present
        step("dd_hold", f'DDB_PUT {ddb} vt_items {{"pk": "agent-made", "n": 1}}', [ddb_v("agent-made")]),
        step("dd_not", "", [ddb_v("ghost")]),
        # -- two validators, one holds: FAIL, each with its own status
        step("mixed", "", [{"kind": "http_status_eq", "name": "alpha-is-there", "url": "/api/notes/by-title/alpha",
                            "expected": 200},
                           {"kind": "http_status_eq", "name": "ghost-is-there", "url": "/api/notes/by-title/ghost",
                            "expected": 200}]),
        # -- require_change: *_pre (state existed before the step) FAIL, *_new (the step made it) PASS
        step("rc_hs_pre", "", [{"kind": "http_status_eq", "url": "/api/notes/by-title/pre", "expected": 200,
                                "require_change": True}]),
        step("rc_hs_new", post("gamma"), [{"kind": "http_status_eq", "url": "/api/notes/by-title/gamma",
                                           "expected": 200, "require_change": True}]),
        step("rc_hb_pre", "", [{"kind": "http_body_contains", "url": "/api/notes", "text": "seeded before",
                                "require_change": True}]),
        step("rc_hb_new", post("delta", "fresh delta"), [{"kind": "http_body_contains", "url": "/api/notes",
                                                          "text": "fresh delta", "require_change": True}]),
        step("rc_jp_pre", "", [{"kind": "json_path_eq", "url": "/api/notes/by-title/pre", "path": "$.tags[0]",
                                "expected": "old", "require_change": True}]),
        step("rc_jp_new", post("epsilon", "", ["new"]), [{"kind": "json_path_eq", "url": "/api/notes/by-title/epsilon",
                                                          "path": "$.tags[0]", "expected": "new",
                                                          "require_change": True}]),
        step("rc_fe_pre", "", [{"kind": "file_exists", "path": "pre.txt", "require_change": True}]),
        step("rc_fe_new", f"WRITE {W}/made/new.txt new", [{"kind": "file_exists", "path": "made/new.txt",
                                                            "require_change": True}]),
        step("rc_ce_pre", "", [{"kind": "command_exit_code", "command": "test -f pre.txt", "require_change": True}]),
        step("rc_ce_new", f"WRITE {W}/made/cmd.txt x", [{"kind": "command_exit_code", "command": "test -f made/cmd.txt",
                                                          "require_change": True}]),
        step("rc_sq_pre", "", [{"kind": "sql_row_present", "url": sqlite_url, "table": "notes",
                                "where": {"title": "pre"}, "require_change": True}]),
        step("rc_sq_new", post("zeta"), [{"kind": "sql_row_present", "url": sqlite_url, "table": "notes",
                                          "where": {"title": "zeta"}, "require_change": True}]),
        step("rc_pg_pre", "", [{"kind": "sql_row_present", "url": pg, "table": "vt_items", "where": {"name": "pre"},
                                "require_change": True}]),
        step("rc_pg_new", f"SQL {pg} insert into vt_items (name) values ('rc-new')",
             [{"kind": "sql_row_present", "url": pg, "query": "select name from vt_items where name = :n",
               "params": {"n": "rc-new"}, "require_change": True}]),
        step("rc_dd_pre", "", [ddb_v("pre", require_change=True)]),
        step("rc_dd_new", f'DDB_PUT {ddb} vt_items {{"pk": "rc-new"}}', [ddb_v("rc-new", require_change=True)]),
    ]


EXPECTED = {
    "hs_hold": "PASS", "hs_not": "FAIL", "hs_evidence": "PASS", "hs_evidence_not": "FAIL",
    "hb_hold": "PASS", "hb_not": "FAIL",
    "jp_hold": "PASS", "jp_not": "FAIL", "jp_file": "PASS", "jp_file_not": "FAIL",
    "fe_hold": "PASS", "fe_not": "FAIL",
    "tc_hold": "PASS", "tc_not": "FAIL", "rx_hold": "PASS", "rx_not": "FAIL",
    "ce_hold": "PASS", "ce_not": "FAIL", "ce_expected": "PASS", "ce_evidence": "PASS", "ce_evidence_not": "FAIL",
    "sq_hold": "PASS", "sq_not": "FAIL", "sq_query": "PASS", "sq_query_not": "FAIL",
    "pg_hold": "PASS", "pg_not": "FAIL", "pg_query": "PASS",
    "dd_hold": "PASS", "dd_not": "FAIL",
    "mixed": "FAIL",
    "rc_hs_pre": "FAIL", "rc_hs_new": "PASS", "rc_hb_pre": "FAIL", "rc_hb_new": "PASS",
    "rc_jp_pre": "FAIL", "rc_jp_new": "PASS", "rc_fe_pre": "FAIL", "rc_fe_new": "PASS",
    "rc_ce_pre": "FAIL", "rc_ce_new": "PASS", "rc_sq_pre": "FAIL", "rc_sq_new": "PASS",
    "rc_pg_pre": "FAIL", "rc_pg_new": "PASS", "rc_dd_pre": "FAIL", "rc_dd_new": "PASS",
}


@pytest.fixture(scope="module")
def vrun(tmp_path_factory, pg_url, moto_endpoint):
    import boto3
    import sqlalchemy as sa

    W = tmp_path_factory.mktemp("validators")
    # state that exists before the run
    from tests.support.app import init_db

    init_db(str(W / "app.db"))
    with sqlite3.connect(W / "app.db") as conn:
        conn.execute("insert into notes (title, body, tags) values ('pre', 'seeded before', '[\"old\"]')")
    (W / "pre.txt").write_text("here before the run")
    eng = sa.create_engine(pg_url)
    with eng.begin() as conn:
        conn.execute(sa.text("drop table if exists vt_items"))
        conn.execute(sa.text("create table vt_items (id serial primary key, name text not null)"))
        conn.execute(sa.text("insert into vt_items (name) values ('pre')"))
    eng.dispose()
    ddb = boto3.client("dynamodb", endpoint_url=moto_endpoint, region_name="us-east-1",
                       aws_access_key_id="testing", aws_secret_access_key="testing")
    ddb.create_table(TableName="vt_items", KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
                     AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
                     BillingMode="PAY_PER_REQUEST")
    ddb.put_item(TableName="vt_items", Item={"pk": {"S": "pre"}})

    plan = {"name": "validators", "app": app_block(W / "app.db", W / "app.pid"),
            "steps": _steps(W, pg_url, moto_endpoint)}
    path = write_plan(W / "validators.yaml", plan)
    run = do_run(path, out=W / "out", cwd=W, env=base_cli_env(), agent=agent_cmd("honest"), timeout=150)
    run.W = W
    return run


def test_plan_covers_every_step():  # the plan alone: no run needed
    assert set(EXPECTED) == {s["id"] for s in _steps("/w", "pg", "ddb")}


def test_run_exit_code_is_1_because_some_steps_fail(vrun):
    assert vrun.rc == 1, vrun.explain()


@pytest.mark.parametrize("sid", sorted(EXPECTED))
def test_verdict(vrun, sid):
    step = vrun.step(sid)
    assert step["verdict"] == EXPECTED[sid], f"{sid}: {json.dumps(step, indent=1)}\nstderr: {vrun.stderr[-2000:]}"
    statuses = [v["status"] for v in step["validators"]]
    assert statuses, step
    if EXPECTED[sid] == "PASS":
        assert set(statuses) == {"PASS"}, step
    else:
        failing = [v for v in step["validators"] if v["status"] == "FAIL"]
        assert failing, step
        assert all((v.get("reason") or "").strip() for v in failing), f"a FAIL without a reason: {step}"
    for v in step["validators"]:
        assert v["kind"] in sid_kinds(sid), (sid, v)


def sid_kinds(sid: str) -> set[str]:
    return {v["kind"] for s in _steps("/w", "pg", "ddb") if s["id"] == sid for v in s["validators"]}


@pytest.mark.parametrize("sid", sorted(s for s in EXPECTED if s.startswith("rc_") and s.endswith("_pre")))
def test_require_change_failure_says_it_held_before(vrun, sid):
    reason = vrun.reasons(sid).lower()
    assert any(w in reason for w in ("before", "already", "change")), f"{sid}: reason does not say why: {reason!r}"


@pytest.mark.parametrize("sid", sorted(s for s in EXPECTED if s.startswith("rc_")))
def test_require_change_captures_before_the_step(vrun, sid):
    files = [f for f in vrun.manifest["files"] if f["step"] == sid]
    before = [f for f in files if f["phase"] == "before"]
    after = [f for f in files if f["phase"] == "after"]
    assert before and after, f"{sid}: expected before and after captures, manifest has {files}"
    assert all(f["captured_by"] == "runner" for f in before), before
    assert all(f["path"].startswith(f"evidence/{sid}/before/") for f in before), before
    assert all((vrun.run_dir / f["path"]).is_file() for f in before)


def test_mixed_step_reports_each_validator_by_name(vrun):
    by_name = {v["name"]: v for v in vrun.step("mixed")["validators"]}
    assert by_name["alpha-is-there"]["status"] == "PASS", by_name
    assert by_name["ghost-is-there"]["status"] == "FAIL", by_name


def test_summary_counts_match(vrun):
    s = vrun.results["summary"]
    want = {k: list(EXPECTED.values()).count(k) for k in ("PASS", "FAIL", "SKIPPED", "ERROR")}
    assert {k: s[k] for k in want} == want, s
