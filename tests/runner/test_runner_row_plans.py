"""Row plans `referee check` refuses: a database query or lookup the runner would run wrong, which passed the
check and then held on every row, held on none, or was ERROR only once the step had run (cases a black-box
tester found). Each is one error naming file:line, the field and the fix, and `referee run` starts nothing.
"""

from __future__ import annotations

import json
import sqlite3

from tests.conftest import run_cli


def _check(tmp_path, cli_env, text: str) -> dict[int, dict]:
    """`referee check --json` of a plan: its errors by line (rc 2 asserted)."""
    path = tmp_path / "p.yaml"
    path.write_text(text)
    rc, out, err = run_cli(["check", "--json", str(path)], cwd=tmp_path, env=cli_env)
    assert rc == 2, out + err
    return {e["line"]: e for e in json.loads(out)[str(path)]["errors"]}


def _steps(*validators: str, capture: str = "") -> str:
    """A plan with one step per validator line (the validator on line 6 + 5*i), and `capture` in the first."""
    out = "steps:\n"
    for i, v in enumerate(validators):
        cap = capture if i == 0 and capture else "[]"
        out += f"  - id: s{i}\n    do: nothing\n    capture: {cap}\n    validators:\n      - {v}\n"
    return out


def _db(tmp_path) -> str:
    db = tmp_path / "app.db"
    with sqlite3.connect(db) as c:
        c.execute("create table items(v text)")
        c.execute("insert into items values ('a')")
    return f"sqlite:///{db}"


def test_a_where_beside_a_query_or_params_beside_a_table_is_a_plan_error(tmp_path, cli_env):
    """`where` was ignored beside `query` (and `params` beside `table`): the validator held on every row."""
    url = _db(tmp_path)
    plan = _steps("{kind: sql_row_present, evidence: r}",
                  f'{{kind: sql_row_present, url: "{url}", query: "select * from items", where: {{v: nope}}}}',
                  f'{{kind: sql_row_present, url: "{url}", table: items, params: {{v: nope}}}}',
                  capture=f'[{{kind: sql, name: r, url: "{url}", query: "select * from items", where: {{v: nope}}}}]')
    errors = _check(tmp_path, cli_env, plan)
    assert "invalid 'where': `where` goes with `table`" in errors[11]["message"], errors
    assert "invalid 'params'" in errors[16]["message"] and errors[16]["fix"] == "give the column values in `where`"
    assert "invalid 'where'" in errors[4]["message"] and "in `params`" in errors[4]["fix"], errors
    # the forms as documented still load
    ok = _steps(f'{{kind: sql_row_present, url: "{url}", query: "select * from items where v = :v", '
                'params: {v: a}}',
                f'{{kind: sql_row_present, url: "{url}", table: items, where: {{v: a}}}}')
    (tmp_path / "ok.yaml").write_text(ok)
    rc, out, err = run_cli(["run", "ok.yaml", "--out", "out", "--agent", "true"], cwd=tmp_path, env=cli_env)
    assert rc == 0, out + err
    rc, out, err = run_cli(["run", "p.yaml", "--out", "out2", "--agent", "true"], cwd=tmp_path, env=cli_env)
    assert rc == 2 and not (tmp_path / "out2").exists(), out + err


def test_min_rows_and_other_counts_are_whole_numbers_in_their_range(tmp_path, cli_env):
    """`min_rows: 0` (or -1) held with no row found; `min_rows: true` was read as 1. The same for the other counts
    and thresholds of the validators: a size, a status, an exit code, a confidence."""
    url = _db(tmp_path)
    sql = f'{{kind: sql_row_present, url: "{url}", table: items, where: {{v: x}}, min_rows: '
    bad = [sql + "0}", sql + "-1}", sql + "true}", sql + "1.5}",
           "{kind: file_exists, path: x.txt, min_size: -1}", "{kind: file_exists, path: x.txt, min_size: true}",
           "{kind: http_status_eq, url: 'http://127.0.0.1:9/', expected: true}",
           "{kind: http_status_eq, url: 'http://127.0.0.1:9/', expected: 0}",
           "{kind: command_exit_code, command: 'true', expected: true}",
           "{kind: ocr_contains, evidence: shot.png, text: hi, min_confidence: true}"]
    errors = _check(tmp_path, cli_env, _steps(*bad))
    assert sorted(errors) == [6 + 5 * i for i in range(len(bad))], errors
    for line, field in [(6, "min_rows"), (11, "min_rows"), (16, "min_rows"), (21, "min_rows"), (26, "min_size"),
                        (31, "min_size"), (36, "expected"), (41, "expected"), (46, "expected"),
                        (51, "min_confidence")]:
        assert f"invalid '{field}'" in errors[line]["message"] and errors[line]["fix"], errors[line]
    assert errors[6]["fix"].startswith("give a whole number of 1 or more"), errors[6]
    ok = _steps(sql + "2}", "{kind: file_exists, path: x.txt, min_size: 0}",
                "{kind: command_exit_code, command: 'true', expected: 3}")
    (tmp_path / "ok.yaml").write_text(ok)
    rc, out, err = run_cli(["check", "ok.yaml"], cwd=tmp_path, env=cli_env)
    assert rc == 0, out + err


def test_certain_errors_of_row_plans_are_plan_errors_with_a_field_and_a_fix(tmp_path, cli_env):
    """A list as a `where` value, evidence naming a capture of another kind, an empty ddb capture, a NaN key: each
    was ERROR at run time only. An entry-wide rule named no field (`invalid 'value'`), a bad timeout no fix."""
    url = _db(tmp_path)
    ddb = "endpoint_url: 'http://127.0.0.1:9', region: us-east-1"
    plan = _steps("{kind: sql_row_present, evidence: c}",
                  f'{{kind: sql_row_present, url: "{url}", table: items, where: {{v: [a, b]}}}}',
                  f'{{kind: sql_row_present, url: "{url}", table: items, where: {{v: {{x: 1}}}}}}',
                  f"{{kind: ddb_row_present, table: t, key: {{pk: .nan}}, {ddb}}}",
                  f"{{kind: ddb_row_present, table: t, key: {{pk: .inf}}, {ddb}}}",
                  f"{{kind: ddb_row_present, table: t, key: {{pk: [1]}}, {ddb}}}",
                  f'{{kind: sql_row_present, url: "{url}", query: "select 1", table: items}}',
                  "{kind: http_status_eq, expected: 200}",
                  f'{{kind: sql_row_present, url: "{url}", table: items, timeout_s: 0}}',
                  capture="[{kind: command, name: c, command: 'true'}]")
    plan += ("  - id: ddb_capture\n    do: nothing\n"
             f"    capture: [{{kind: ddb, name: d, table: '', key: {{}}, {ddb}}}]\n")
    errors = _check(tmp_path, cli_env, plan)
    assert "evidence 'c' is a command capture, and sql_row_present reads a sql capture" in errors[6]["message"]
    assert errors[6]["fix"] == "name a sql capture of this step, or take one", errors[6]
    for line in (11, 16):
        assert "invalid 'where'" in errors[line]["message"] and "WHERE v IN" in errors[line]["fix"], errors[line]
    for line, what in [(21, "nan"), (26, "inf"), (31, "list")]:
        assert "invalid 'key'" in errors[line]["message"] and what in errors[line]["message"], errors[line]
        assert errors[line]["fix"].startswith("give each key attribute"), errors[line]
    assert errors[36]["message"].startswith("sql_row_present validator: `query` and `table` are both given")
    assert errors[41]["message"].startswith("http_status_eq validator: neither `url` nor `evidence`")
    assert errors[46]["fix"] == "give a number of seconds in that range, e.g. 30", errors[46]
    ddb_capture = [e["message"] for e in errors.values() if e["line"] == 49]
    assert "invalid 'table'" in ddb_capture[0] or "invalid 'key'" in ddb_capture[0], errors
    assert sorted(errors) == [6, 11, 16, 21, 26, 31, 36, 41, 46, 49], errors
    assert all("'value'" not in e["message"] and e["fix"] for e in errors.values()), errors
