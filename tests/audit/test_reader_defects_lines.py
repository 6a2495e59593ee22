"""A cut JSONL line costs that line: whatever bracket it starts with, the lines after it still audit.

Black-box, through the CLI, and at the stream reader: a line cut short that starts with `[` (a truncated
array) is one bad record like one that starts with `{`, in the middle of the file or as its first line, with
or without workers; a file that is one JSON array over many lines still reads as one array.
"""

from __future__ import annotations

import json

import pytest

from referee.core.jsonio.values import iter_json_values


def good(i: int) -> str:
    return json.dumps({"trace_version": 1, "run_id": f"ok{i}", "task": "Delete the note named a.md",
                       "steps": [{"action": {"name": "delete_note", "args": {"name": "a.md"}},
                                  "observation": {"text": "deleted a.md"}}], "report": "Done, deleted a.md."})


CUT_ARRAY = '[{"trace_version": 1, "run_id": "x", "task": "t", "steps": []}, {"trace'
CUT_OBJECT = '{"trace_version": 1, "run_id": "x", "task": "t", "steps": [{"tra'


def audited(path) -> list[str]:
    return [json.loads(ln)["run_id"] for ln in path.read_text().splitlines() if ln.strip()]


@pytest.mark.parametrize("workers", ["1", "2"])
@pytest.mark.parametrize("cut", [CUT_ARRAY, CUT_OBJECT], ids=["starts_with_bracket", "starts_with_brace"])
@pytest.mark.parametrize("at", [0, 1], ids=["first_line", "second_line"])
def test_a_cut_jsonl_line_is_one_bad_record_and_the_later_lines_audit(tmp_path, referee_cli, workers, cut, at):
    lines = [good(1), good(2), good(3)]
    lines.insert(at, cut)
    src = tmp_path / "t.jsonl"
    src.write_text("\n".join(lines) + "\n")
    rc, _, err = referee_cli("audit", src, "--out", tmp_path / "a.jsonl", "--workers", workers, "--no-progress",
                             "--show", "none", cwd=tmp_path)
    assert "internal error" not in err and "Traceback" not in err, err
    assert rc == 1  # one record skipped
    assert audited(tmp_path / "a.jsonl") == ["ok1", "ok2", "ok3"]
    warned = [ln for ln in err.splitlines() if ln.startswith("referee: warning: skipped record")]
    assert len(warned) == 1 and f"{src}:{at + 1}: " in warned[0], warned
    assert "nothing after it could be read" not in err


def test_later_lines_of_either_bracket_are_read_after_a_cut_one(tmp_path):
    p = tmp_path / "m.jsonl"
    p.write_text("\n".join([good(1), CUT_ARRAY, good(2), '[{"role": "user", "content": "hi"}]', good(3)]) + "\n")
    items = list(iter_json_values(p))
    assert [(i.line, i.error is not None) for i in items] == [(1, False), (2, True), (3, False), (4, False),
                                                               (5, False)]
    assert items[3].value == [{"role": "user", "content": "hi"}]


@pytest.mark.parametrize("body", [
    '[{"a": 1},\n{"a": 2},\n{"a": 3}]\n',
    '[{"a": 1},\n {"a": 2},\n {"a": 3}\n]\n',
    '[\n  {"a": 1},\n  {"a": 2},\n  {"a": 3}\n]\n',
    '[{"a": 1}, {"a": 2},\n{"a": 3}]\n',
])
def test_an_array_over_many_lines_is_still_one_array(tmp_path, body):
    p = tmp_path / "a.json"
    p.write_text(body)
    items = list(iter_json_values(p))
    assert [(i.value, i.error) for i in items] == [({"a": n}, None) for n in (1, 2, 3)]


def test_an_array_whose_first_line_is_cut_inside_a_string_is_not_taken_for_jsonl(tmp_path):
    # the second line is no whole value: this is one broken array, read as before (its later elements kept)
    p = tmp_path / "a.json"
    p.write_text('[{"a": "cut\n, "b": 1},\n{"a": 2},\n{"a": 3}]\n')
    items = list(iter_json_values(p))
    assert [i.value for i in items if i.error is None] == [{"a": 2}, {"a": 3}]
    assert [i.line for i in items if i.error] == [1]
