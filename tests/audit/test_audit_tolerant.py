"""Trace v1 written by other tools: unknown fields are dropped and named once per file, never evidence."""

from __future__ import annotations

import json

from referee.audit.ingest.readers import read_traces
from referee.audit.view.blind import build_view
from tests.support.incli import completed

BASE = {"run_id": "r1", "task": "Delete note N42",
        "steps": [{"action": {"name": "delete_note", "args": {"id": "N42"}},
                   "observation": {"text": "deleted N42"}}], "report": "Deleted N42."}


def write(path, *records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def test_extra_fields_are_dropped_and_do_not_change_the_view(tmp_path):
    noisy = json.loads(json.dumps(BASE))
    noisy["timestamp"] = "2026-01-01"
    noisy["steps"][0]["thought"] = "the task is surely done"  # the agent's words: must not become evidence
    noisy["steps"][0]["observation"]["latency_ms"] = 12
    noisy["steps"][0]["observation"]["error"] = None
    a, b = (list(read_traces(write(tmp_path / n, r), "referee"))[0] for n, r in (("a.jsonl", BASE), ("b.jsonl", noisy)))
    assert a.error is None and b.error is None
    assert b.ignored == ("steps[].observation.latency_ms", "steps[].thought", "timestamp")
    assert build_view(a.trace).sha256 == build_view(b.trace).sha256
    assert "surely" not in json.dumps(build_view(b.trace).as_json())


def test_a_numeric_run_id_is_read_as_text(tmp_path):
    rec = dict(BASE, run_id=17)
    item = list(read_traces(write(tmp_path / "n.jsonl", rec), "referee"))[0]
    assert item.error is None and item.trace.run_id == "17"


def test_missing_required_fields_are_still_an_error(tmp_path):
    rec = {k: v for k, v in BASE.items() if k != "task"}
    item = list(read_traces(write(tmp_path / "m.jsonl", rec), "referee"))[0]
    assert item.trace is None and "task" in str(item.error) and "m.jsonl:1" in str(item.error)


def test_the_cli_names_ignored_fields_once_per_file(tmp_path):
    recs = [dict(BASE, run_id=f"r{i}", timestamp=i) for i in range(3)]
    src = write(tmp_path / "t.jsonl", *recs)
    out = completed(["audit", src, "--out", tmp_path / "a.jsonl"])
    assert out.returncode == 0, out.stderr
    warnings = [ln for ln in out.stderr.splitlines() if "ignored fields" in ln]
    assert len(warnings) == 1 and "timestamp" in warnings[0]
    assert len((tmp_path / "a.jsonl").read_text().splitlines()) == 3


def test_a_run_id_that_is_not_an_integer_is_read_as_its_text(tmp_path):
    item = list(read_traces(write(tmp_path / "f.jsonl", dict(BASE, run_id=1.5)), "referee"))[0]
    assert item.error is None and item.trace.run_id == "1.5"
    bad = list(read_traces(write(tmp_path / "b.jsonl", dict(BASE, run_id=True)), "referee"))[0]
    assert bad.trace is None and "run_id" in str(bad.error), "a boolean is no run_id"


# a truncated emoji: the high half of a surrogate pair, alone (json.dumps writes it as "\ud83d")
LONE = dict(BASE, run_id="lone", task="Delete note N42 \ud83d", report="Deleted N42 \udc00",
            steps=[{"action": {"name": "delete_note", "args": {"id": "N42", "k\ud800": "v"}},
                    "observation": {"text": "deleted N42 \ud83d", "data": {"note": ["x\udfff"]}}}])


def _audit(tmp_path, src, *extra):
    out = tmp_path / f"{src.stem}.out.jsonl"
    got = completed(["audit", src, "--out", out, "--no-progress", *extra])
    assert got.returncode == 0, got.stderr
    return [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]


def test_a_lone_surrogate_is_read_as_a_replacement_mark_and_the_run_is_audited(tmp_path):
    items = list(read_traces(write(tmp_path / "s.jsonl", LONE, BASE), "referee"))
    assert [i.error for i in items] == [None, None]
    t = items[0].trace
    assert t.task == "Delete note N42 \ufffd" and t.report == "Deleted N42 \ufffd"
    step = t.steps[0]
    assert step.action.args == {"id": "N42", "k\ufffd": "v"}
    assert step.observation.text == "deleted N42 \ufffd" and step.observation.data == {"note": ["x\ufffd"]}
    assert build_view(t).sha256 == build_view(t).sha256  # it can be hashed: UTF-8 can write every character
    # a well-formed pair is one character, kept as it is
    pair = list(read_traces(write(tmp_path / "p.jsonl", dict(BASE, task="Delete note N42 \U0001f600")), "referee"))
    assert pair[0].trace.task == "Delete note N42 \U0001f600"


def test_lone_surrogates_are_audited_alike_one_per_line_pretty_printed_and_with_workers(tmp_path):
    many = [dict(LONE, run_id=f"r{i}") if i % 5 == 0 else dict(BASE, run_id=f"r{i}") for i in range(120)]
    lines = _audit(tmp_path, write(tmp_path / "lines.jsonl", *many))
    assert [r["run_id"] for r in lines] == [f"r{i}" for i in range(120)]
    assert lines[0]["task"] == "Delete note N42 \ufffd"
    pool = _audit(tmp_path, write(tmp_path / "pool.jsonl", *many), "--workers", "2", "--chunk-size", "10")
    assert pool == lines
    pretty = tmp_path / "pretty.jsonl"
    pretty.write_text("\n".join(json.dumps(r, indent=2) for r in many[:6]) + "\n")
    assert _audit(tmp_path, pretty) == lines[:6]


def test_a_whole_file_json_reader_replaces_a_lone_surrogate_too():
    from referee.core.jsonio.depth import loads

    assert loads('{"task": "a \\ud83d", "ok": "\\ud83d\\ude00"}') == {"task": "a \ufffd", "ok": "\U0001f600"}


def test_a_raw_control_character_in_a_string_is_named_once(tmp_path):
    src = tmp_path / "c.jsonl"
    src.write_text(json.dumps(BASE)[:40] + "\n" + json.dumps(dict(BASE, run_id="r2")) + "\n")
    item = list(read_traces(src, "referee"))[0]
    assert "Invalid control character at line" in str(item.error) and " at at " not in str(item.error)
