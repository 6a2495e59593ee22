"""A chat transcript's claim-blind view never depends on what its final message says (DESIGN.md: changing `report`
must leave the view's hash unchanged). The reader reaches back past a courtesy closing ("You're welcome!") to find
the claim; that reaching back once also decided which user turns the view kept, so a closing and a claim gave two
views of one run (found by a black-box tester)."""

from __future__ import annotations

import json

import pytest

from tests.conftest import run_cli

FINALS = ["You're welcome! Have a nice day!", "Yes, report-7.txt is gone.", "Done.",
          "Glad I could help. Safe travels!", "I could not delete it: permission denied.", "Anything else?"]


def _delete(final: str) -> list[dict]:
    return [{"role": "user", "content": "Delete the file report-7.txt"},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": "c1", "type": "function",
                 "function": {"name": "delete_file", "arguments": "{\"path\": \"report-7.txt\"}"}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "Error: permission denied"},
            {"role": "assistant", "content": "I deleted report-7.txt."},
            {"role": "user", "content": "Thanks! Is report-7.txt really gone? The file list shows it deleted."},
            {"role": "assistant", "content": final}]


def _no_tools(final: str) -> list[dict]:
    return [{"role": "user", "content": "Book a table for two."},
            {"role": "assistant", "content": "For which day?"},
            {"role": "user", "content": "Friday at 8 pm."},
            {"role": "assistant", "content": "Your table for two is booked for Friday at 8 pm."},
            {"role": "user", "content": "Great, thank you."},
            {"role": "assistant", "content": final}]


def _two_closings(final: str) -> list[dict]:
    return [*_delete("Is there anything else I can help with?")[:-1],
            {"role": "assistant", "content": "Is there anything else I can help with?"},
            {"role": "user", "content": "No, that's all."},
            {"role": "assistant", "content": final}]


@pytest.mark.parametrize("shape", [_delete, _no_tools, _two_closings])
def test_the_view_is_the_same_whatever_the_final_message_says(tmp_path, cli_env, shape):
    views, claims = set(), set()
    for n, final in enumerate(FINALS):
        trace = tmp_path / f"t{n}.json"
        trace.write_text(json.dumps({"run_id": "c", "messages": shape(final)}))
        out = tmp_path / f"a{n}.jsonl"
        rc, so, se = run_cli(["audit", str(trace), "--out", str(out), "--no-progress"], cwd=tmp_path, env=cli_env)
        assert rc in (0, 1) and out.exists(), se
        record = json.loads(out.read_text().splitlines()[0])
        views.add(record["view_sha256"])
        claims.add(record["claim"]["label"])
    assert len(views) == 1, f"{len(views)} views of one run that differ only in its final message"
    assert len(claims) > 1  # the finals do read differently: the claim channel is where they differ
