"""Issue 34 item 2: a FAIL reason quotes what the runner saw (the HTTP status and a body excerpt, the value at the
nearest JSON path that exists, the SQL that ran), the same in the console, results.json, report.html and junit.xml.

The app is tests/support/app.py on loopback; the agent does nothing and claims pass, so every validator reads the
app as it was."""

from __future__ import annotations

import html
import json
import shlex
import sqlite3
import sys

import pytest

from tests.runner.inprocess import home as _home
from tests.runner.inprocess import run_in_process
from tests.runner.runner_helpers import app_block, write_plan

SECRET = "s3cr3t-t0k3n-4417"
IDLE_AGENT = "import json, os; open(os.environ['REFEREE_CLAIM_FILE'], 'w').write(json.dumps({'pass': True}))\n"


@pytest.fixture(scope="module")
def reasons_run(_agent_reachable_base):
    tmp_path = _home(_agent_reachable_base)
    db = tmp_path / "app.db"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, title TEXT NOT NULL, body TEXT NOT NULL DEFAULT '', "
                     "tags TEXT NOT NULL DEFAULT '[]')")
        conn.execute("INSERT INTO notes (title, body) VALUES ('alpha', 'first note')")
        conn.execute("INSERT INTO notes (title, body) VALUES ('beta', ?)", (SECRET,))
    db.chmod(0o644)
    (tmp_path / "agent.py").write_text(IDLE_AGENT)
    agent = f"{shlex.quote(sys.executable)} {shlex.quote(str(tmp_path / 'agent.py'))}"
    plan = write_plan(tmp_path / "reasons.yaml", {
        "name": "reasons", "app": app_block(db), "actor": {"kind": "command", "command": agent},
        "steps": [
            {"id": "done_flag", "do": "mark note 999 done",
             "validators": [{"kind": "json_path_eq", "url": "/api/notes/999", "path": "$.done", "expected": True}]},
            {"id": "count", "do": "count the notes",
             "validators": [{"kind": "json_path_eq", "url": "/api/notes", "path": "$.length", "expected": 2}]},
            {"id": "deep", "do": "tag note 1",
             "validators": [{"kind": "json_path_eq", "url": "/api/notes/1", "path": "$.tags[0]",
                             "expected": "red"}]},
            {"id": "row", "do": "add the note zebra",
             "validators": [{"kind": "sql_row_present", "url": f"sqlite:///{db}",
                             "query": "select * from notes where title = :t", "params": {"t": "zebra"}}]},
            # the secret value the plan uses is in the app's answer: quoted as its ${NAME}, never as itself
            {"id": "secret", "do": "finish note 2",
             "validators": [{"kind": "json_path_eq", "url": "/api/notes/2?token=${API_TOKEN}", "path": "$.done",
                             "expected": True}]},
            {"id": "table", "do": "add a note",  # the case: a misspelt table
             "validators": [{"kind": "sql_row_present", "url": f"sqlite:///{db}", "table": "note",
                             "where": {"title": "alpha"}},
                            {"kind": "sql_row_present", "url": f"sqlite:///{db}",
                             "query": "select * from notez where title = 'alpha'"}]},
            {"id": "command", "do": "make the mark",
             "validators": [{"kind": "command_exit_code", "command": "ls no-such-mark"}]},
            {"id": "body", "do": "write the body",
             "validators": [{"kind": "http_body_contains", "url": "/api/notes/998", "text": "zebra"}]},
            {"id": "status", "do": "add note 997",  # every http kind quotes the body: a wrong status too
             "validators": [{"kind": "http_status_eq", "url": "/api/notes/997", "expected": 200}]},
            {"id": "value", "do": "rename note 1 to omega",  # and a wrong value on a 200
             "validators": [{"kind": "json_path_eq", "url": "/api/notes/1", "path": "$.title",
                             "expected": "omega"}]},
        ]})
    return run_in_process(tmp_path, plan, tmp_path / "runs", env={"API_TOKEN": SECRET})


# step -> what its FAIL reason must quote (the user's cases of the issue, then two more of the same rule)
QUOTED = [
    ("done_flag", ["$.done is absent", "404", '{"error": "not found"}']),
    ("count", ["$.length is absent", '"title": "alpha"', "200"]),
    ("deep", ["$.tags[0] is absent; $.tags is []", "200", '"body": "first note"']),
    ("row", ["0 row(s) found", "select * from notes where title = :t", "zebra"]),
    ("body", ["does not contain 'zebra'", "404", '{"error": "not found"}']),
    ("status", ["status 404, expected 200", 'the response was 404 {"error": "not found"}']),
    ("value", ["$.title is alpha, expected omega", "the response was 200", '"body": "first note"']),
    ("command", ["exit code 2, expected 0, from `ls no-such-mark`", "No such file"]),
    ("secret", ["$.done is absent", "200", '"title": "beta"', "${API_TOKEN}"]),
]


@pytest.mark.parametrize("sid,quoted", QUOTED, ids=[q[0] for q in QUOTED])
def test_a_fail_reason_quotes_what_the_runner_saw_in_every_output(reasons_run, sid, quoted):
    step = reasons_run.step(sid)
    assert step["verdict"] == "FAIL", step
    reason = step["validators"][0]["reason"]
    page = html.unescape((reasons_run.run_dir / "report.html").read_text())
    for text in quoted:
        assert text in reason, (text, reason)
        assert text in reasons_run.out, (text, reasons_run.out[-3000:])
        assert text in reasons_run.junit_text(sid), text
        assert text in page, text


def test_a_missing_table_lists_the_tables_there(reasons_run):
    step = reasons_run.step("table")
    assert step["verdict"] == "ERROR", step
    for v in step["validators"]:
        assert v["status"] == "ERROR" and "the tables there: notes" in v["reason"], v
    assert "the tables there: notes" in reasons_run.junit_text("table")


def test_no_output_quotes_the_runners_secret_value(reasons_run):
    assert SECRET not in reasons_run.out and SECRET not in reasons_run.err
    for name in ("results.json", "report.html", "junit.xml"):
        assert SECRET not in (reasons_run.run_dir / name).read_text(), name


def test_the_quoted_excerpt_is_short_and_on_one_line(reasons_run):
    for sid, _ in QUOTED:
        reason = reasons_run.step(sid)["validators"][0]["reason"]
        assert "\n" not in reason and len(reason) < 400, reason


def test_an_excerpt_is_cut_and_its_control_characters_escaped():
    from referee.validators.common import short

    assert short("a\x1b[31mred\nnext") == "a\\x1b[31mred\\x0anext"
    long = short(json.dumps({"k": "v" * 500}))
    assert len(long) == 120 and long.endswith("…")


def test_the_nearest_present_path_is_the_longest_that_exists():
    from referee.validators.common import nearest_present

    doc = {"a": [{"b": 1}], "c": None}
    assert nearest_present(doc, ["a", 0, "x"]) == ("$.a[0]", {"b": 1})
    assert nearest_present(doc, ["a", 5]) == ("$.a", [{"b": 1}])
    assert nearest_present([1, 2], ["length"]) == ("$", [1, 2])
    assert nearest_present(doc, ["weird key", "x"]) == ("$", doc)

