"""A JSON integer longer than Python converts (over 4300 digits) costs its record, never the audit.

Black-box, through the CLI: such a record is one bad record (one line naming file and line), the other runs
of the file audit, with or without workers, in JSONL and in a JSON array; `referee eval gold` and
`referee show --traces` read the file the same way; an Inspect AI JSON log loses that sample only.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

BIG = "9" * 5000


def good(i: int, **extra) -> dict:
    return {"trace_version": 1, "run_id": f"ok{i}", "task": "Delete the note named a.md",
            "steps": [{"action": {"name": "delete_note", "args": {"name": "a.md"}},
                       "observation": {"text": "deleted a.md"}}], "report": "Done, deleted a.md.", **extra}


def with_big(rec: dict) -> str:
    """The record's JSON with every "@BIG@" string replaced by the 5000-digit integer."""
    return json.dumps(rec).replace('"@BIG@"', BIG)


def big_in_args() -> str:
    rec = good(2)
    rec["run_id"] = "big"
    rec["steps"][0]["action"]["args"]["id"] = "@BIG@"
    return with_big(rec)


def audited(path: Path) -> list[str]:
    return [json.loads(ln)["run_id"] for ln in path.read_text().splitlines() if ln.strip()]


def skipped(stderr: str) -> list[str]:
    return [ln for ln in stderr.splitlines() if ln.startswith("referee: warning: skipped record")]


def no_crash(stderr: str) -> None:
    assert "internal error" not in stderr and "Traceback" not in stderr, stderr


@pytest.mark.parametrize("workers", ["1", "2"])
def test_a_huge_integer_in_a_jsonl_record_is_one_bad_record(tmp_path, referee_cli, workers):
    src = tmp_path / "t.jsonl"
    src.write_text("\n".join([json.dumps(good(1)), big_in_args(), json.dumps(good(3))]) + "\n")
    rc, _, err = referee_cli("audit", src, "--out", tmp_path / "a.jsonl", "--workers", workers, "--no-progress",
                             "--show", "none", cwd=tmp_path)
    no_crash(err)
    assert rc == 1  # records were skipped
    assert audited(tmp_path / "a.jsonl") == ["ok1", "ok3"]
    [line] = skipped(err)
    assert f"{src}:2: " in line and "integer of more than 4300 digits" in line, line
    assert "set_int_max_str_digits" not in err  # Python's advice is no fix for a user's file


@pytest.mark.parametrize("layout", ["one_per_line", "one_line"])
def test_a_huge_integer_in_a_json_array_costs_that_element(tmp_path, referee_cli, layout):
    parts = [json.dumps(good(1)), big_in_args(), json.dumps(good(3))]
    src = tmp_path / "t.json"
    src.write_text("[\n" + ",\n".join(parts) + "\n]\n" if layout == "one_per_line" else "[" + ", ".join(parts) + "]")
    rc, _, err = referee_cli("audit", src, "--out", tmp_path / "a.jsonl", "--workers", "1", "--no-progress",
                             "--show", "none", "--on-error", "skip", cwd=tmp_path)
    no_crash(err)
    assert rc == 0 and audited(tmp_path / "a.jsonl") == ["ok1", "ok3"]
    [line] = skipped(err)
    assert f"{src}:{3 if layout == 'one_per_line' else 1}: " in line and "4300 digits" in line, line


def test_a_huge_integer_as_a_bare_jsonl_value_costs_its_line_only(tmp_path, referee_cli):
    src = tmp_path / "t.jsonl"
    src.write_text("\n".join([json.dumps(good(1)), BIG, json.dumps(good(3))]) + "\n")
    rc, _, err = referee_cli("audit", src, "--out", tmp_path / "a.jsonl", "--workers", "1", "--no-progress",
                             "--show", "none", cwd=tmp_path)
    no_crash(err)
    assert rc == 1 and audited(tmp_path / "a.jsonl") == ["ok1", "ok3"]
    assert len(skipped(err)) == 1 and f"{src}:2: " in skipped(err)[0]


def test_gold_show_and_eval_gold_read_the_file_the_same_way(tmp_path, referee_cli):
    src = tmp_path / "t.jsonl"
    lines = [json.dumps(good(1, gold={"completed": True})),
             with_big(dict(good(2), run_id="big", gold={"completed": "@BIG@"})),
             json.dumps(good(3, gold={"completed": False}))]
    src.write_text("\n".join(lines) + "\n")
    rc, _, err = referee_cli("audit", src, "--out", tmp_path / "a.jsonl", "--gold-out", tmp_path / "g.jsonl",
                             "--workers", "1", "--no-progress", "--show", "none", "--on-error", "skip", cwd=tmp_path)
    no_crash(err)
    assert rc == 0 and audited(tmp_path / "a.jsonl") == ["ok1", "ok3"]
    gold = [json.loads(ln) for ln in (tmp_path / "g.jsonl").read_text().splitlines()]
    assert [(g["run_id"], g["completed"]) for g in gold] == [("ok1", True), ("ok3", False)]

    rc, out, err = referee_cli("show", tmp_path / "a.jsonl", "ok3", "--traces", src, cwd=tmp_path)
    no_crash(err)
    assert rc == 0 and "run ok3" in out

    rc, _, err = referee_cli("eval", "gold", src, "-o", tmp_path / "g2.jsonl", cwd=tmp_path)
    no_crash(err)
    assert rc == 2 and f"{src}:2: " in err and "4300 digits" in err  # one line naming the record, exit 2
    assert len(err.strip().splitlines()) == 1, err
    rc, _, err = referee_cli("eval", "gold", src, "-o", tmp_path / "g3.jsonl", "--on-error", "skip", cwd=tmp_path)
    no_crash(err)
    assert rc == 0
    assert [json.loads(ln)["run_id"] for ln in (tmp_path / "g3.jsonl").read_text().splitlines()] == ["ok1", "ok3"]


def _sample(sid: str, arg: object = "locked.txt") -> dict:
    return {"id": sid, "epoch": 1, "input": "Delete the file locked.txt", "target": "",
            "messages": [{"role": "user", "content": "Delete the file locked.txt"},
                         {"role": "assistant", "content": "", "tool_calls": [
                             {"id": "t1", "function": "delete_file", "arguments": {"path": arg}}]},
                         {"role": "tool", "content": "deleted", "tool_call_id": "t1"},
                         {"role": "assistant", "content": "I deleted locked.txt."}],
            "output": {"completion": "I deleted locked.txt."}, "scores": {"state_check": {"value": "C"}}}


def test_a_huge_integer_in_an_inspect_json_log_costs_that_sample(tmp_path, referee_cli):
    log = {"version": 2, "status": "success", "eval": {"task": "files", "eval_id": "E1", "model": "m"},
           "samples": [_sample("s1"), _sample("s2", "@BIG@"), _sample("s3")], "reductions": []}
    src = tmp_path / "log.json"
    src.write_text(json.dumps(log, indent=1).replace('"@BIG@"', BIG))
    rc, _, err = referee_cli("audit", src, "--out", tmp_path / "a.jsonl", "--workers", "1", "--no-progress",
                             "--show", "none", "--on-error", "skip", cwd=tmp_path)
    no_crash(err)
    assert rc == 0 and audited(tmp_path / "a.jsonl") == ["files/s1/1@E1", "files/s3/1@E1"]
    [line] = skipped(err)
    assert f"{src}:" in line and "4300 digits" in line, line
