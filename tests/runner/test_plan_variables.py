"""Issue 34 items 3, 7 and 10: plan variables everywhere they make sense, never written down; `do:` required;
`lint` asks only for the variables it uses.

The user's cases: `text: "${EXPECTED_TITLE}"` was compared literally (an honest agent marked OVERCLAIM);
`start: "... --db ${APP_DB}"` with APP_DB unset passed `check` and the shell made it empty; a step without `do:`
handed the agent an empty task; `lint` refused to run for an unset variable it never used.
"""

from __future__ import annotations

import json
import shlex
import sqlite3
import sys
from pathlib import Path

import pytest

from tests.runner.inprocess import referee, run_in_process
from tests.runner.runner_helpers import app_block, write_plan

TITLE = "Buy oat milk today"  # 18 characters: long enough that the runner searches for it in free text
CLAIM_PASS = "import os; open(os.environ['REFEREE_CLAIM_FILE'], 'w').write('{\"pass\": true}')"
AGENT = f"{shlex.quote(sys.executable)} -c {shlex.quote(CLAIM_PASS)}"


def _title_plan(folder: Path, page: str) -> Path:
    """A step whose evidence (a command's output) shows `page`, checked against ${EXPECTED_TITLE}."""
    return write_plan(folder / "titles.yaml", {
        "name": "titles", "actor": {"kind": "command", "command": AGENT},
        "steps": [{"id": "add_note", "do": "add a note with the expected title",
                   "capture": [{"kind": "command", "name": "page", "command": f"echo {shlex.quote(page)}",
                                "run_as": "runner"}],
                   "validators": [{"kind": "text_contains", "evidence": "page", "text": "${EXPECTED_TITLE}"}]}]})


def _files_holding(root: Path, needle: str) -> list[str]:
    return [str(p) for p in root.rglob("*") if p.is_file() and not p.is_symlink() and needle.encode() in p.read_bytes()]


def test_a_validator_text_from_a_variable_is_compared_with_its_value(tmp_path):
    plan = _title_plan(tmp_path, f"Notes: {TITLE}")
    ran = run_in_process(tmp_path, plan, tmp_path / "runs", env={"EXPECTED_TITLE": TITLE})
    step = ran.step("add_note")
    assert step["verdict"] == "PASS" and step["overclaim"] is False, ran.out + ran.err
    assert "${EXPECTED_TITLE}" in (ran.run_dir / "plan.yaml").read_text()  # the frozen plan keeps the variable


def test_a_fail_reason_of_a_validator_whose_text_is_a_variable_never_holds_the_value(tmp_path):
    plan = _title_plan(tmp_path, "Notes: Buy almond milk")
    ran = run_in_process(tmp_path, plan, tmp_path / "runs", env={"EXPECTED_TITLE": TITLE})
    step = ran.step("add_note")
    assert step["verdict"] == "FAIL" and step["overclaim"] is True, ran.out
    assert "${EXPECTED_TITLE}" in step["reason"], step["reason"]
    assert "Buy almond milk" in step["reason"], step["reason"]  # what it saw is still quoted
    assert _files_holding(ran.run_dir, TITLE) == []  # results.json, report.html, junit.xml, the evidence
    assert TITLE not in ran.out + ran.err


def test_grading_again_without_the_variable_is_an_error_naming_it_not_a_fail(tmp_path):
    plan = _title_plan(tmp_path, f"Notes: {TITLE}")
    ran = run_in_process(tmp_path, plan, tmp_path / "runs", env={"EXPECTED_TITLE": TITLE})
    assert ran.step("add_note")["verdict"] == "PASS", ran.out
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv("EXPECTED_TITLE", raising=False)
        code, out, err = referee(tmp_path, "grade", ran.run_dir)
    step = ran.step("add_note")  # results.json, written again by the grade
    assert code == 1 and step["verdict"] == "ERROR", out + err
    assert "${EXPECTED_TITLE}" in step["reason"] and "not set where this run is graded" in step["reason"], step
    code, out, err = referee(tmp_path, "grade", ran.run_dir, env={"EXPECTED_TITLE": TITLE})
    assert code == 0 and ran.step("add_note")["verdict"] == "PASS", out + err


def _app_db_plan(folder: Path) -> Path:
    block = app_block(Path("${APP_DB}"), folder / "app.pid")  # the app writes app.pid once it runs
    block["start"] = block["start"].replace("'${APP_DB}'", "${APP_DB}")
    return write_plan(folder / "appdb.yaml", {
        "name": "appdb", "app": block, "actor": {"kind": "command", "command": AGENT},
        "steps": [{"id": "health", "do": "nothing",
                   "validators": [{"kind": "http_status_eq", "url": "/health", "expected": 200}]}]})


def test_check_names_an_unset_variable_of_app_start_with_its_line(tmp_path):
    plan = _app_db_plan(tmp_path)
    code, out, err = referee(tmp_path, "check", plan)
    lines = [ln for ln in (out + err).splitlines() if "APP_DB" in ln]
    assert code == 2 and len(lines) == 1, out + err
    assert f"{plan}:" in lines[0] and "app.start" in lines[0] and "not set" in lines[0], lines[0]


def test_run_refuses_an_unset_variable_of_app_start_before_the_app_starts(tmp_path):
    plan = _app_db_plan(tmp_path)
    ran = run_in_process(tmp_path, plan, tmp_path / "runs")
    assert ran.code == 2 and "APP_DB" in ran.out + ran.err, ran.out + ran.err
    assert not (tmp_path / "app.pid").exists()  # the app never started
    assert ran.run_dir is None


def test_app_start_reads_a_set_variable_and_the_run_writes_its_value_nowhere(tmp_path):
    db = tmp_path / "private-notes-4f1e.db"
    sqlite3.connect(db).close()
    plan = _app_db_plan(tmp_path)
    ran = run_in_process(tmp_path, plan, tmp_path / "runs", env={"APP_DB": str(db)})
    assert ran.step("health")["verdict"] == "PASS", ran.out + ran.err
    assert (tmp_path / "app.pid").exists()
    assert _files_holding(ran.run_dir, str(db)) == []


def test_check_reports_every_unset_variable_once_each_with_its_line(tmp_path):
    plan = write_plan(tmp_path / "many.yaml", """\
name: many
app:
  start: "serve --db ${APP_DB} --key ${APP_KEY:-dev}"
  build: "make DB=${APP_DB}"
  env: {LOG_DIR: "${LOG_DIR}"}
actor:
  command: "agent --token ${AGENT_TOKEN}"
  env: {TITLE: "${EXPECTED_TITLE}"}
steps:
  - id: a
    do: "add the note"
    validators:
      - {kind: text_contains, evidence: out.txt, text: "${EXPECTED_TITLE}"}
      - {kind: json_path_eq, evidence: out.json, path: $.title, expected: "${OTHER_TITLE}"}
""")
    code, out, err = referee(tmp_path, "check", plan)
    said = [ln for ln in (out + err).splitlines() if "is not set" in ln]
    names = ["APP_DB", "LOG_DIR", "AGENT_TOKEN", "EXPECTED_TITLE", "OTHER_TITLE"]
    assert code == 2 and len(said) == len(names), out + err
    for name, line in zip(names, said):
        assert f"'{name}'" in line and f"{plan}:" in line, (name, line)
    assert "APP_KEY" not in out + err  # it has a default


def test_actor_env_takes_a_variable_the_agent_then_sees(tmp_path):
    write = ("import os; d = os.environ['REFEREE_AGENT_DIR']; "
             "open(d + '/len.txt', 'w').write(str(len(os.environ.get('TITLE', ''))))")
    plan = write_plan(tmp_path / "actor.yaml", {
        "name": "actor", "actor": {"kind": "command", "command": f"{shlex.quote(sys.executable)} -c "
                                                                  f"{shlex.quote(write)}",
                                   "env": {"TITLE": "${EXPECTED_TITLE}"}},
        "steps": [{"id": "a", "do": "look at the title",
                   "validators": [{"kind": "text_contains", "evidence": "len.txt", "text": str(len(TITLE))}]}]})
    ran = run_in_process(tmp_path, plan, tmp_path / "runs", env={"EXPECTED_TITLE": TITLE})
    assert ran.step("a")["verdict"] == "PASS", ran.out + ran.err


def _lint_plan(folder: Path, text: str) -> Path:
    (folder / "control.txt").write_text("the home screen: nothing saved\n")
    return write_plan(folder / "lint.yaml", {
        "name": "lint", "steps": [{"id": "save", "do": "save the note",
                                   "capture": [{"kind": "command", "name": "page", "command": "echo ${API_TOKEN}"}],
                                   "validators": [{"kind": "text_contains", "evidence": "page", "text": text}]}]})


def test_lint_runs_with_an_unset_variable_it_does_not_use(tmp_path):
    plan = _lint_plan(tmp_path, "Saved")
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv("API_TOKEN", raising=False)
        code, out, err = referee(tmp_path, "lint", plan, "--control", tmp_path / "control.txt")
    assert code == 0 and "ok" in out, out + err


def test_lint_names_an_unset_variable_it_uses(tmp_path):
    plan = _lint_plan(tmp_path, "${SAVED_TEXT}")
    code, out, err = referee(tmp_path, "lint", plan, "--control", tmp_path / "control.txt")
    assert code == 2 and "SAVED_TEXT" in out + err and "API_TOKEN" not in out + err, out + err
    code, out, err = referee(tmp_path, "lint", plan, "--control", tmp_path / "control.txt",
                             env={"SAVED_TEXT": "nothing saved"})
    assert code == 1 and "TOO LOOSE" in out, out + err



def test_a_validator_comparing_with_a_secret_the_runner_sends_finds_it_where_the_evidence_hides_it(tmp_path):
    token = "s3cr3t-token-4d1c"  # the capture's record holds ${API_TOKEN} in its place
    plan = write_plan(tmp_path / "both.yaml", {
        "name": "both", "actor": {"kind": "command", "command": AGENT},
        "steps": [{"id": "a", "do": "nothing",
                   "capture": [{"kind": "command", "name": "page", "command": "echo token=${API_TOKEN}",
                                "run_as": "runner"}],
                   "validators": [{"kind": "text_contains", "evidence": "page", "text": "token=${API_TOKEN}"}]}]})
    ran = run_in_process(tmp_path, plan, tmp_path / "runs", env={"API_TOKEN": token})
    assert ran.step("a")["verdict"] == "PASS", ran.out + ran.err
    assert _files_holding(ran.run_dir, token) == []


def _notes_db(path: Path) -> Path:
    with sqlite3.connect(path) as conn:
        conn.execute("create table notes (id integer primary key, title text)")
        conn.execute("insert into notes (title) values (?)", (TITLE,))
    return path


def test_a_where_value_from_a_variable_finds_the_row_and_the_record_shows_the_variable(tmp_path):
    db = _notes_db(tmp_path / "notes.db")
    plan = write_plan(tmp_path / "rows.yaml", {
        "name": "rows", "actor": {"kind": "command", "command": AGENT},
        "steps": [{"id": "saved", "do": "save the note",
                   "validators": [{"kind": "sql_row_present", "url": f"sqlite:///{db}", "table": "notes",
                                   "where": {"title": "${EXPECTED_TITLE}"}},
                                  {"kind": "sql_row_present", "url": f"sqlite:///{db}",
                                   "query": "select * from notes where title = :t", "params": {"t": "${OTHER}"}}]}]})
    ran = run_in_process(tmp_path, plan, tmp_path / "runs", env={"EXPECTED_TITLE": TITLE, "OTHER": "Buy tea"})
    step = ran.step("saved")
    assert step["verdict"] == "FAIL", ran.out + ran.err  # the first holds; no note is titled "Buy tea"
    assert [v["status"] for v in step["validators"]] == ["PASS", "FAIL"], step
    assert "${OTHER}" in step["reason"] and "Buy tea" not in step["reason"], step["reason"]
    record = next(ran.run_dir.rglob("_v0_sql_row_present.json")).read_text()
    assert "${EXPECTED_TITLE}" in record, record
    assert _files_holding(ran.run_dir, TITLE) == []


def test_actor_command_gets_a_variable_it_names_through_its_shell(tmp_path):
    command = """sh -c 'echo "$1" > "$REFEREE_AGENT_DIR/arg.txt"' _ "${GREETING}" """
    plan = write_plan(tmp_path / "cmd.yaml", {
        "name": "cmd", "public_env": ["GREETING"], "actor": {"kind": "command", "command": command},
        "steps": [{"id": "a", "do": "say hello",
                   "validators": [{"kind": "text_contains", "evidence": "arg.txt", "text": "hello there; $x"}]}]})
    ran = run_in_process(tmp_path, plan, tmp_path / "runs", env={"GREETING": "hello there; $x"})
    assert ran.step("a")["verdict"] == "PASS", ran.out + ran.err  # one word, as the shell quoted it, never re-parsed


def test_app_env_takes_a_variable_and_app_start_names_what_app_env_sets(tmp_path):
    db = tmp_path / "env-notes.db"
    plan = _app_db_plan(tmp_path)
    text = plan.read_text().replace("${APP_DB}", "${NOTES_DB}")
    plan.write_text(text.replace("  url:", "  env: {NOTES_DB: '${APP_DB}'}\n  url:", 1))
    code, out, err = referee(tmp_path, "check", plan)
    assert code == 2 and "'APP_DB'" in out + err and "app.env" in out + err and "NOTES_DB" not in out + err, out + err
    ran = run_in_process(tmp_path, plan, tmp_path / "runs", env={"APP_DB": str(db)})
    assert ran.step("health")["verdict"] == "PASS", ran.out + ran.err
    assert db.exists()  # the app made its database where app.env's NOTES_DB, filled from APP_DB, said


def test_a_text_left_blank_by_an_empty_variable_is_an_error_never_a_pass(tmp_path):
    plan = _title_plan(tmp_path, "Notes: anything at all")
    ran = run_in_process(tmp_path, plan, tmp_path / "runs", env={"EXPECTED_TITLE": ""})
    step = ran.step("add_note")
    assert step["verdict"] == "ERROR" and "blank" in step["reason"] and "${EXPECTED_TITLE}" in step["reason"], step


WORDS = 'a"; echo pwned; echo "b $(echo pwned) `echo pwned`'  # shell syntax, were it pasted into the command


def _said_plan(folder: Path, run_as: str, public: bool) -> Path:
    return write_plan(folder / "said.yaml", {
        "name": "said", "actor": {"kind": "command", "command": AGENT}, **({"public_env": ["WORDS"]} if public else {}),
        "steps": [{"id": "say", "do": "nothing to do",
                   "capture": [{"kind": "command", "name": "said", "command": """printf '[%s]\\n' "${WORDS}" """,
                                "run_as": run_as}],
                   "validators": [{"kind": "command_exit_code", "evidence": "said"}]}]})


@pytest.mark.parametrize("run_as", ["runner", "agent"])
def test_a_command_capture_hands_a_variable_to_its_shell_as_one_word_and_nothing_in_it_runs(tmp_path, run_as):
    ran = run_in_process(tmp_path, _said_plan(tmp_path, run_as, public=True), tmp_path / "runs", env={"WORDS": WORDS})
    assert ran.step("say")["verdict"] == "PASS", ran.out + ran.err
    record = json.loads(next(ran.run_dir.rglob("said.json")).read_text())
    assert record["stdout"] == f"[{WORDS}]\n", record  # one argument, the value as it was; no `pwned` line


def test_a_secret_a_command_capture_names_is_scrubbed_from_what_it_printed(tmp_path):
    ran = run_in_process(tmp_path, _said_plan(tmp_path, "runner", public=False), tmp_path / "runs",
                         env={"WORDS": WORDS})
    assert ran.step("say")["verdict"] == "PASS", ran.out + ran.err
    record = json.loads(next(ran.run_dir.rglob("said.json")).read_text())
    assert record["stdout"] == "[${WORDS}]\n", record  # the whole value arrived, and was replaced
    assert _files_holding(ran.run_dir, WORDS) == []
