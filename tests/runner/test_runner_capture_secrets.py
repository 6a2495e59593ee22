"""Captures of what the agent could have written keep none of the run's secret values, and stay in the budget.

A workspace file a `file` capture copies, database rows a `sql` capture reads: the agent may have put a
`${VAR}` value it learned there. A copied file holding one is removed and not taken (the capture fails,
its validators are ERROR), as an agent file holding one is; rows are stored with the value replaced. A
sparse or oversized file is refused before it is copied, like the agent's own files. The value is also
found percent-encoded (as an HTTP client sends it and an app logs it).
"""

from __future__ import annotations

import io
import json
import os
import sqlite3
from pathlib import Path
from urllib.parse import quote, quote_plus

import pytest

from referee.plan.envvars import url_part
from referee.runner.envsubst import Secrets

TOKEN = "s3cr3t-CAPT-7f3q-long"
ODD = 'p@ss w\u00f6rd|{x}"<y>-long'


def _files_holding(root: Path, needle: str) -> list[str]:
    raw = needle.encode()
    return [str(p) for p in root.rglob("*") if p.is_file() and not p.is_symlink() and raw in p.read_bytes()]


def _uses_token() -> dict:
    # the plan substitutes ${API_TOKEN} somewhere: its value is the run's secret
    return {"kind": "command", "name": "uses_token", "command": "test -n ${API_TOKEN}"}


@pytest.mark.parametrize("form", [TOKEN, quote(TOKEN, safe=""), f"pre{TOKEN}post"], ids=["plain", "quoted", "inside"])
def test_a_workspace_file_holding_the_secret_is_not_copied_and_its_validator_is_error(tmp_path, run_plan,
                                                                                     cli_env, form):
    (tmp_path / "report.txt").write_text(f"token={form}\n")
    plan = {"steps": [{"id": "s", "do": "x", "capture": [_uses_token()],
                       "validators": [{"kind": "file_exists", "path": "report.txt"}]}]}
    run = run_plan(plan, agent="true", env={**cli_env, "API_TOKEN": TOKEN})
    assert run.verdicts() == {"s": "ERROR"}, run.explain()
    reason = run.step("s")["reason"]
    assert "holds a secret value of the run (${API_TOKEN})" in reason and "not taken" in reason, reason
    assert _files_holding(run.run_dir, TOKEN) == []
    assert not list(run.run_dir.rglob("report.txt"))


def test_a_workspace_file_without_the_secret_is_copied_and_passes(tmp_path, run_plan, cli_env):
    (tmp_path / "report.txt").write_text("all done\n")
    plan = {"steps": [{"id": "s", "do": "x", "capture": [_uses_token()],
                       "validators": [{"kind": "file_exists", "path": "report.txt"},
                                      {"kind": "text_contains", "evidence": "_v0_file_exists", "text": "all done"}]}]}
    run = run_plan(plan, agent="true", env={**cli_env, "API_TOKEN": TOKEN})
    assert run.verdicts() == {"s": "PASS"}, run.explain()
    step = run.manifest["steps"]["s"]
    assert step["hashed_bytes"] == len("all done\n"), step  # the copy counts in the hashing budget


@pytest.mark.parametrize("shape", ["sparse", "past_step_budget"])
def test_a_file_capture_refuses_a_sparse_or_oversized_file_before_copying_it(tmp_path, run_plan, shape):
    big = tmp_path / "big.bin"
    with open(big, "wb") as f:
        if shape == "sparse":
            f.truncate(64 << 20)
        else:
            f.write(os.urandom(3 << 20))
    plan = {"evidence": {"max_step_mb": 2}, "steps": [{"id": "s", "do": "x", "validators": [
        {"kind": "file_exists", "path": "big.bin"}]}]}
    run = run_plan(plan, agent="true")
    assert run.verdicts() == {"s": "ERROR"}, run.explain()
    reason = run.step("s")["reason"]
    assert ("sparse" if shape == "sparse" else "past the step's hashing budget") in reason, reason
    assert "not taken" in reason, reason
    assert not [p for p in run.run_dir.rglob("big.bin")], "the file was copied into the run directory"
    assert not any(f["path"].endswith("big.bin") for f in run.manifest["files"])


def test_database_rows_holding_the_secret_are_stored_with_it_replaced(tmp_path, run_plan, cli_env):
    with sqlite3.connect(tmp_path / "app.db") as db:
        db.execute("create table t (k text, v text)")
        db.execute("insert into t values ('a', ?)", (f"token={TOKEN}",))
    plan = {"steps": [{"id": "s", "do": "x", "capture": [
        _uses_token(), {"kind": "sql", "name": "rows", "url": "sqlite:///app.db", "table": "t"}],
        "validators": [{"kind": "sql_row_present", "url": "sqlite:///app.db", "table": "t", "where": {"k": "a"}},
                       {"kind": "json_path_eq", "evidence": "rows", "path": "$.rows[0].v",
                        "expected": "token=${API_TOKEN}"}]}]}
    run = run_plan(plan, agent="true", env={**cli_env, "API_TOKEN": TOKEN})
    assert run.verdicts() == {"s": "PASS"}, run.explain()
    assert _files_holding(run.run_dir, TOKEN) == []
    rows = json.loads((run.run_dir / "evidence" / "s" / "after" / "rows.json").read_text())["rows"]
    assert rows == [{"k": "a", "v": "token=${API_TOKEN}"}]


@pytest.mark.parametrize("form", [
    ODD,
    quote(ODD, safe=""),
    quote(ODD),
    quote_plus(ODD),
    quote(ODD, safe="@|{}"),  # what httpx sends in a query: p@ss%20w%C3%B6rd|{x}%22%3Cy%3E-long
    quote(ODD, safe="").lower(),
    url_part(ODD, keep_colon=True),
], ids=["plain", "quote_nosafe", "quote", "quote_plus", "httpx_query", "lower_hex", "url_part"])
def test_a_secret_is_scrubbed_in_every_percent_encoded_form(form):
    s = Secrets.of_plan(["T"], {"T": ODD})
    assert s.scrub(f"GET /api/item?token={form} HTTP/1.1") == "GET /api/item?token=${T} HTTP/1.1"
    out = io.BytesIO()
    s.scrub_stream(io.BytesIO(f"a {form} b\n".encode() * 3), out, chunk=7)  # split across chunks too
    assert out.getvalue() == b"a ${T} b\n" * 3


def test_an_encoded_form_of_another_text_is_left_alone():
    s = Secrets.of_plan(["T"], {"T": "a b-c-d-e-f"})
    assert s.scrub("a%2Bb-c-d-e-f a+b-c-d-e-f") == "a%2Bb-c-d-e-f ${T}"  # %2B is a plus, not a space
