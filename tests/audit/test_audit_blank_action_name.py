"""A step whose action has an empty or blank name is audited like any other, not skipped with an IndexError
(found by a helper fuzzing every reader's fields)."""

from __future__ import annotations

import json

from tests.conftest import run_cli


def test_blank_action_names_are_audited(tmp_path, cli_env):
    runs = [{"trace_version": 1, "run_id": "e", "task": "delete file a", "report": "Deleted a.",
             "steps": [{"action": {"name": "", "args": {}}, "observation": {"text": "ok"}},
                       {"action": {"name": "   ", "args": {"url": "http://127.0.0.1:9/x"}}}]},
            {"trace_version": 1, "run_id": "f", "task": "t", "steps": [], "report": "Done."}]
    trace = tmp_path / "t.jsonl"
    trace.write_text("".join(json.dumps(r) + "\n" for r in runs))
    out = tmp_path / "a.jsonl"
    rc, so, se = run_cli(["audit", str(trace), "--out", str(out), "--no-progress"], cwd=tmp_path, env=cli_env)
    assert rc == 0 and "could not be audited" not in se, se
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["run_id"] for r in records] == ["e", "f"]
    assert records[0]["disposition"] in ("pass", "flag", "review")
