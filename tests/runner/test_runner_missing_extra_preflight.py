"""A plan whose validators or captures need an extra this install lacks is stopped by `referee check` and by
`referee run` before anything runs, with the install hint at the line that needs it: it was 'ok', then each
such step was ERROR ('validator crashed: MissingExtraError') after the agent had acted."""

from __future__ import annotations

import json

from tests.conftest import run_cli
from tests.support.noextras import AWS, OCR, POSTGRES, env_without


def _plan(tmp_path):
    steps = [{"id": "read", "do": "x", "capture": [{"kind": "command", "name": "shot", "command": "true",
                                                    "stdout_as": "shot.png"}],
              "validators": [{"kind": "ocr_contains", "evidence": "shot", "text": "Saved"}]},
             {"id": "item", "do": "x", "validators": [
                 {"kind": "ddb_row_present", "table": "t", "key": {"id": "1"}, "endpoint_url": "http://127.0.0.1:9"}]},
             {"id": "row", "do": "x", "validators": [
                 {"kind": "sql_row_present", "url": "postgresql+psycopg://u@127.0.0.1:9/db", "table": "t"}]}]
    path = tmp_path / "plan.yaml"
    path.write_text(json.dumps({"name": "extras", "steps": steps}))
    return path


def test_check_and_run_name_each_missing_extra_before_anything_runs(tmp_path):
    plan = _plan(tmp_path)
    env = env_without(tmp_path / "shim", *OCR, *AWS, *POSTGRES)
    rc, out, err = run_cli(["check", str(plan)], env=env)
    assert rc == 2, out + err
    for hint in ("referee[ocr]", "referee[aws]", "referee[postgres]"):
        assert f"install with: pip install '{hint}'" in err, err
    assert "Traceback" not in err
    rc, out, err = run_cli(["run", str(plan), "--agent", "true", "--out", str(tmp_path / "runs")], env=env)
    assert rc == 2 and "referee[ocr]" in err, out + err
    assert not (tmp_path / "runs").exists(), "a run started although the plan cannot be graded here"


def test_with_the_extras_installed_the_same_plan_checks_ok(tmp_path):
    rc, out, err = run_cli(["check", str(_plan(tmp_path))], env=env_without(tmp_path / "shim"))
    assert rc == 0, out + err


def test_a_browser_plan_without_playwright_is_a_check_error_too(tmp_path):
    from tests.support.noextras import BROWSER

    plan = tmp_path / "b.yaml"
    step = {"id": "s", "do": "x", "validators": [{"kind": "dom_contains", "text": "x"}]}
    plan.write_text(json.dumps({"name": "b", "actor": {"kind": "browser"}, "steps": [step]}))
    rc, out, err = run_cli(["check", str(plan)], env=env_without(tmp_path / "shim", *BROWSER))
    assert rc == 2 and "install with: pip install 'referee[browser]'" in err, out + err
