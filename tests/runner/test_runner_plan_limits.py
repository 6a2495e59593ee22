"""Plans that fight the loader: YAML alias bombs, recursive aliases, deep nesting, odd tags and merge keys,
unset `${VAR}`s, and SQLite captures that must never create or change a database.

Each refusal is one line naming file:line (exit 2), never an internal error (exit 3) or a blown memory.
"""

from __future__ import annotations

import resource
import sqlite3
import subprocess
import sys

import pytest

from referee.plan import load_plan_text
from tests.conftest import run_cli
from tests.runner.runner_helpers import assert_one_line_error, write_plan

MEMORY_CAP = 1536 << 20  # the CLI with its imports needs a few hundred MB; an alias bomb needs 10 GB


def _capped() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP))


def check_capped(path, env, timeout=60) -> tuple[int, str, str]:
    """`referee check PATH` under a 1.5 GB address-space cap and a timeout."""
    proc = subprocess.run([sys.executable, "-m", "referee.cli.main", "check", str(path)], env=env, cwd=path.parent,
                          capture_output=True, text=True, timeout=timeout, preexec_fn=_capped)
    return proc.returncode, proc.stdout, proc.stderr


def billion_laughs() -> str:
    lines = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 10)]
    return "\n".join(lines) + "\nsteps:\n  - id: s\n    do: *a9\n"


def test_an_alias_bomb_is_refused_in_bounded_memory(tmp_path, cli_env):
    text = billion_laughs()
    assert len(text) < 1024  # a 1 KB file that expands to 9**10 strings
    path = write_plan(tmp_path / "bomb.yaml", text)
    rc, out, err = check_capped(path, cli_env)
    line = assert_one_line_error(rc, out, err)
    assert "bomb.yaml:1:" in line and "alias" in line, line


def test_the_same_bomb_as_a_step_list_value_is_refused_by_run_too(tmp_path, cli_env):
    path = write_plan(tmp_path / "bomb.yaml", billion_laughs())
    rc, out, err = run_cli(["run", path, "--agent", "true", "--out", tmp_path / "out"], env=cli_env, timeout=60)
    assert_one_line_error(rc, out, err)
    assert not (tmp_path / "out").exists(), "a refused plan must not leave a run directory"


def test_ordinary_anchors_aliases_and_merge_keys_still_work(tmp_path, referee_cli):
    text = """\
app: {url: "http://127.0.0.1:9"}
steps:
  - id: first
    do: x
    validators:
      - &status {kind: http_status_eq, url: /a, expected: 200, name: status}
      - &body
        kind: http_body_contains
        url: /b
        text: hello
      - &other {kind: http_status_eq, url: /c, expected: 404, require_change: true}
  - id: second
    do: x
    validators:
      - *status
      - <<: *body
        text: goodbye
      - <<: [*status, *other]
        name: both
"""
    path = write_plan(tmp_path / "anchors.yaml", text)
    rc, out, err = referee_cli("check", path)
    assert rc == 0, err
    assert "2 steps, 6 validators" in out, out
    lp = load_plan_text(text, "anchors.yaml")
    second = [tv.params for tv in lp.validators["second"]]
    assert (second[0].kind, second[0].expected) == ("http_status_eq", 200)
    assert (second[1].kind, second[1].url, second[1].text) == ("http_body_contains", "/b", "goodbye")
    # of several merged mappings the first wins; an explicit key wins over both
    merged = second[2]
    assert (merged.url, merged.expected, merged.require_change, merged.name) == ("/a", 200, True, "both")
    first = [tv.params for tv in lp.validators["first"]]
    assert first[1].text == "hello", "a merge must not change the anchor it copies"


def test_an_explicit_key_given_twice_is_still_a_duplicate_next_to_a_merge(tmp_path, referee_cli):
    path = write_plan(tmp_path / "dup.yaml", "steps:\n  - &s {id: a, do: x}\n  - <<: *s\n    id: b\n    id: c\n")
    line = assert_one_line_error(*referee_cli("check", path))
    assert "dup.yaml:5:5" in line and "duplicate key 'id'" in line, line


@pytest.mark.parametrize("snippet, where, words", [
    ('timeout_s: !!int "x"', "3:16", "'x' is not a valid !!int"),
    ("timeout_s: !!float abc", "3:16", "not a valid !!float"),
    ("do: !!bool maybe", "3:9", "not a valid !!bool"),
    ("do: !!binary aGVsbG8=", "3:9", "'!!binary' is not supported"),
    ("do: !!python/object/apply:os.system [echo hi]", "3:9", "'!!python/object/apply:os.system' is not supported"),
    ("do: !custom x", "3:9", "'!custom' is not supported"),
    ("do: !!set {a, b}", "3:9", "'!!set' is not supported"),
    ("do: !!omap [a: 1]", "3:9", "'!!omap' is not supported"),
])
def test_a_tag_a_plan_cannot_hold_is_a_plan_error_at_its_line(tmp_path, referee_cli, snippet, where, words):
    path = write_plan(tmp_path / "tag.yaml", f"steps:\n  - id: a\n    {snippet}\n")
    line = assert_one_line_error(*referee_cli("check", path))
    assert f"tag.yaml:{where}:" in line and words in line, line


def test_plain_tags_dates_anchored_keys_and_odd_scalars_load():
    text = """\
steps:
  - id: !!str 12
    do: 2001-12-14
    timeout_s: !!int "30"
  - &k id: b
    do: =
  - id: c
    do: <<
    validators:
      - {kind: json_path_eq, url: "http://127.0.0.1:9/x", path: $.when, expected: 2024-01-02T03:04:05Z}
"""
    lp = load_plan_text(text, "odd.yaml")
    a, b, c = lp.plan.steps
    assert (a.id, a.do, a.timeout_s) == ("12", "2001-12-14", 30)
    assert (b.id, b.do, c.do) == ("b", "=", "<<")
    # a date stays the text it was written as, so it compares equal to the same date in JSON
    assert lp.validators["c"][0].params.expected == "2024-01-02T03:04:05Z"


@pytest.mark.parametrize("text, words", [
    ("steps: &s\n  - id: a\n    do: *s\n", "recursive alias"),
    ("steps:\n  - &m {id: a, <<: *m}\n", "recursive alias"),
    ("steps:\n  - id: a\n    do: " + "[" * 300 + "]" * 300 + "\n", "nested more than 200 levels"),
    ("steps:\n  - id: a\n    do: " + "[" * 2000 + "]" * 2000 + "\n", "nest"),
    ("steps:\n  - id: a\n    <<: x\n", "merge key `<<` takes a mapping"),
    ("steps:\n  - ? [a, b]\n    : 1\n", "a key must be a plain value"),
])
def test_structures_that_never_end_or_make_no_sense_are_plan_errors(tmp_path, referee_cli, text, words):
    path = write_plan(tmp_path / "odd.yaml", text)
    line = assert_one_line_error(*referee_cli("check", path))
    assert "odd.yaml:" in line and words in line, line


# -- ${VAR}: unset is a plan error; SQLite is read-only ---------------------------------------------------


NOPE_PLAN = """\
steps:
  - id: a
    do: nothing
    validators:
      - kind: sql_row_present
        url: "sqlite:///${NOPE_DB}"
        table: todos
"""


def test_an_unset_variable_is_a_plan_error_naming_file_line_and_name(tmp_path, cli_env):
    cli_env.pop("NOPE_DB", None)
    path = write_plan(tmp_path / "nope.yaml", NOPE_PLAN)
    line = assert_one_line_error(*run_cli(["check", path], cwd=tmp_path, env=cli_env))
    assert "nope.yaml:6:14:" in line and "'NOPE_DB' is not set" in line and "${NOPE_DB:-" in line, line
    rc, out, err = run_cli(["run", path, "--agent", "true", "--out", tmp_path / "out"], cwd=tmp_path, env=cli_env)
    assert_one_line_error(rc, out, err)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["nope.yaml"], "nothing may be created, no '${NOPE_DB}'"


def test_a_default_or_a_set_variable_loads(tmp_path, cli_env):
    cli_env.pop("NOPE_DB", None)
    path = write_plan(tmp_path / "d.yaml", NOPE_PLAN.replace("${NOPE_DB}", "${NOPE_DB:-app.db}"))
    rc, out, err = run_cli(["check", path], cwd=tmp_path, env=cli_env)
    assert rc == 0 and "ok" in out, err
    path = write_plan(tmp_path / "s.yaml", NOPE_PLAN)
    rc, out, err = run_cli(["check", path], cwd=tmp_path, env={**cli_env, "NOPE_DB": "x.db"})
    assert rc == 0, err


def test_an_unset_variable_in_a_header_points_at_that_header(tmp_path, cli_env):
    cli_env.pop("NOPE_TOKEN", None)
    text = ('steps:\n  - id: a\n    capture:\n      - kind: http\n        name: h\n        url: "http://127.0.0.1:9/"\n'
            '        headers:\n          Accept: "*/*"\n          X-Token: "Bearer ${NOPE_TOKEN}"\n    do: x\n')
    path = write_plan(tmp_path / "h.yaml", text)
    line = assert_one_line_error(*run_cli(["check", path], cwd=tmp_path, env=cli_env))
    assert "h.yaml:9:20:" in line and "'NOPE_TOKEN'" in line, line


def test_a_frozen_plan_grades_without_its_variables():
    # grading substitutes nothing: a run directory stays gradeable where the variables are gone
    lp = load_plan_text(NOPE_PLAN, "runs/x/plan.yaml", frozen=True, env={})
    assert [tv.params.kind for tv in lp.validators["a"]] == ["sql_row_present"]
    assert lp.env_names == {"NOPE_DB"}


def _sql_plan(url: str, query: str | None = None) -> dict:
    cap = {"kind": "sql", "name": "rows", "url": url}
    cap.update({"query": query} if query else {"table": "todos"})
    return {"steps": [{"id": "s", "do": "nothing", "capture": [cap],
                       "validators": [{"kind": "text_contains", "evidence": "rows", "text": "milk"}]}]}


def test_a_missing_sqlite_database_is_an_error_verdict_and_is_never_created(tmp_path, run_plan, cli_env):
    missing = tmp_path / "data" / "todo.db"
    (tmp_path / "data").mkdir()
    run = run_plan(_sql_plan("sqlite:///${TODO_DB}"), agent="true", env={**cli_env, "TODO_DB": str(missing)})
    assert run.verdicts() == {"s": "ERROR"}, run.explain()
    assert "no SQLite database" in run.reasons("s"), run.reasons("s")
    assert not missing.exists() and list((tmp_path / "data").iterdir()) == []


def test_sqlite_is_opened_read_only(tmp_path, run_plan, cli_env):
    db = tmp_path / "todo.db"
    with sqlite3.connect(db) as conn:
        conn.execute("create table todos (title text)")
        conn.execute("insert into todos values ('milk')")
    conn.close()
    before = db.read_bytes()
    ok = run_plan(_sql_plan(f"sqlite:///{db}"), agent="true", env=cli_env)
    assert ok.verdicts() == {"s": "PASS"}, ok.explain()
    writes = run_plan(_sql_plan(f"sqlite:///{db}", "insert into todos values ('milk')"),
                      agent="true", env=cli_env)
    assert writes.verdicts() == {"s": "ERROR"}, writes.explain()
    assert "readonly" in writes.reasons("s").replace("-", "").replace(" ", "").lower(), writes.reasons("s")
    assert db.read_bytes() == before, "a capture changed the database it only had to read"
