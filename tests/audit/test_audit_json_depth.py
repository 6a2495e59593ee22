"""A trace record nested deeper than 200 levels is one bad record: skipped with `--on-error skip`, named
with file:line, never exit 3 and never a RecursionError for the whole file; audit JSONL files too."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from referee.audit.run.auditfile import done_run_ids
from referee.core.jsonio.values import MAX_DEPTH, iter_json_values, loads, too_deep
from tests.conftest import base_cli_env, run_cli


def good(run_id: str) -> str:
    return json.dumps({"run_id": run_id, "task": "Delete note N42",
                       "steps": [{"action": {"name": "delete_note", "args": {"id": "N42"}},
                                  "observation": {"text": "deleted N42"}}], "report": "Deleted N42."})


def nested(depth: int) -> str:
    """A JSON value `depth` levels deep (arrays and objects in turn)."""
    opens = "".join('{"k": ' if i % 2 else "[" for i in range(depth))
    closes = "".join("}" if i % 2 else "]" for i in reversed(range(depth)))
    return opens + "1" + closes


def deep(run_id: str, depth: int) -> str:
    # the record itself is one level: the value under `x` adds `depth - 1`
    return '{"run_id": "%s", "task": "t", "steps": [], "x": %s}' % (run_id, nested(depth - 1))


def audit(tmp_path: Path, src: Path, *extra: str) -> tuple[int, str, str, list[str]]:
    out = tmp_path / "audit.jsonl"
    rc, so, se = run_cli(["audit", src, "--out", out, *extra], env=base_cli_env(), timeout=120)
    ids = [json.loads(line)["run_id"] for line in out.read_text().splitlines()] if out.exists() else []
    return rc, so, se, ids


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 900, 100_000])
def test_a_deep_record_is_one_bad_record_named_by_file_and_line(tmp_path, depth):
    src = tmp_path / "t.jsonl"
    src.write_text("\n".join([good("a"), deep("b", depth), good("c")]) + "\n")
    rc, so, se, ids = audit(tmp_path, src, "--on-error", "skip")
    assert rc == 0 and "internal error" not in se and "Traceback" not in se, se
    assert ids == ["a", "c"]
    skipped = [ln for ln in se.splitlines() if "skipped record" in ln]
    assert len(skipped) == 1 and f"t.jsonl:2: invalid JSON: nested deeper than {MAX_DEPTH} levels" in skipped[0], se
    assert "1 bad records skipped" in so


def test_with_on_error_stop_the_deep_record_stops_the_audit_with_one_line(tmp_path):
    src = tmp_path / "t.jsonl"
    src.write_text("\n".join([good("a"), deep("b", 100_000), good("c")]) + "\n")
    rc, so, se, ids = audit(tmp_path, src, "--on-error", "stop")
    lines = [ln for ln in se.splitlines() if ln.strip()]
    assert rc == 2 and len(lines) == 1 and lines[0].startswith("referee: error:") and "t.jsonl:2:" in lines[0], se
    assert ids == ["a"]


def test_exactly_the_limit_is_still_a_record(tmp_path):
    src = tmp_path / "t.jsonl"
    src.write_text("\n".join([deep("a", MAX_DEPTH), deep("b", MAX_DEPTH + 1)]) + "\n")
    values = list(iter_json_values(src))
    assert [v.error is None for v in values] == [True, False]
    assert values[0].value["run_id"] == "a"


@pytest.mark.parametrize("layout", ["jsonl", "array-one-line", "array-per-line", "pretty"])
def test_the_records_after_a_deep_one_are_read_in_every_layout(tmp_path, layout):
    recs = [json.loads(good("a")), None, json.loads(good("c"))]
    bad = deep("b", 5000)
    if layout == "jsonl":
        text = "\n".join([good("a"), bad, good("c")]) + "\n"
    elif layout == "array-one-line":
        text = "[" + ", ".join([good("a"), bad, good("c")]) + "]"
    elif layout == "array-per-line":
        text = "[" + ",\n ".join([good("a"), bad, good("c")]) + "]\n"
    else:
        a, c = (json.dumps(r, indent=2) for r in (recs[0], recs[2]))
        text = "[\n" + ",\n".join([a, bad, c]) + "\n]\n"
    src = tmp_path / "t.json"
    src.write_text(text)
    values = list(iter_json_values(src, chunk=1024))
    assert [v.value["run_id"] for v in values if v.error is None] == ["a", "c"], values
    errors = [v.error for v in values if v.error]
    assert len(errors) == 1 and "nested deeper" in errors[0]


def test_a_deep_array_first_line_still_lets_the_next_records_through(tmp_path):
    src = tmp_path / "t.jsonl"
    src.write_text(nested(5000) + "\n" + good("c") + "\n")
    values = list(iter_json_values(src))
    assert [(v.line, v.error is None) for v in values] == [(1, False), (2, True)]


def test_brackets_inside_strings_do_not_count():
    text = json.dumps({"run_id": "a", "s": "[" * 5000 + '\\"{' * 300, "t": ["]]]", "{{{"] * 100})
    assert not too_deep(text)
    assert loads(text)["run_id"] == "a"
    escaped = json.dumps(["\\" * 7 + '"' + "[" * 500])
    assert not too_deep(escaped) and too_deep(nested(MAX_DEPTH + 1)) and not too_deep(nested(MAX_DEPTH))


def test_the_depth_check_costs_nothing_on_a_record_with_few_brackets():
    # fewer brackets than the limit: decided by counting, whatever the length
    assert not too_deep('{"a": "' + "x" * 10_000_000 + '"}')


def test_an_audit_file_with_a_deep_line_is_an_error_naming_its_line_not_a_crash(tmp_path):
    src = tmp_path / "t.jsonl"
    src.write_text(good("a") + "\n" + good("c") + "\n")
    rc, so, se, ids = audit(tmp_path, src)
    assert rc == 0 and ids == ["a", "c"], se
    out = tmp_path / "audit.jsonl"
    with open(out, "a") as fh:
        fh.write('{"run_id": "zz", "x": ' + nested(100_000) + "}\n")
    assert done_run_ids(out) == {"a", "c"}  # resume reads past it
    rc, so, se = run_cli(["replay", out], env=base_cli_env())
    lines = [ln for ln in se.splitlines() if ln.strip()]
    assert rc == 2 and len(lines) == 1 and "line 3" in lines[0] and "internal error" not in se, se


def test_resume_over_an_audit_file_with_a_deep_line_does_not_crash(tmp_path):
    src = tmp_path / "t.jsonl"
    src.write_text(good("a") + "\n")
    out = tmp_path / "audit.jsonl"
    out.write_text('{"run_id": "zz", "x": ' + nested(100_000) + "}\n")
    rc, so, se = run_cli(["audit", src, "--out", out], env=base_cli_env())
    assert "internal error" not in se and "Traceback" not in se, se
    # the resume names the damaged line once and leaves it; the end of the audit passes over it as the
    # resume did (issue 30: a damaged --out line no longer turns a finished audit into exit 2)
    assert rc == 0 and "audit.jsonl: line 1" in se and "left as it is" in se, se
    assert json.loads(out.read_text().splitlines()[1])["run_id"] == "a"  # the new record was written



def test_a_deep_event_file_fails_its_session_not_the_audit(tmp_path):
    from tests.support import openhands_events as oe

    for name in ("fixed", "overclaim"):
        getattr(oe, name)().write(tmp_path, f"conv-{name}")
    sessions = tmp_path / "sessions"
    (sessions / "conv-fixed" / "events" / "4.json").write_text('{"id": 4, "x": ' + nested(100_000) + "}")
    rc, so, se, ids = audit(tmp_path, sessions)
    assert "internal error" not in se and "Traceback" not in se, se
    assert len(ids) == 1 and "4.json" in se and "nested deeper than" in se, se


def test_a_deep_tool_result_in_a_chat_is_kept_as_text(tmp_path):
    from referee.audit.ingest.readers import read_traces

    args = json.dumps({"id": "N42", "deep": json.loads(nested(MAX_DEPTH - 5))})
    chat = {"messages": [
        {"role": "user", "content": "Delete note N42"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "delete_note", "arguments": args}}]},
        {"role": "tool", "tool_call_id": "c1", "content": nested(5000)},
        {"role": "assistant", "content": "Deleted N42."}]}
    src = tmp_path / "chat.jsonl"
    src.write_text(json.dumps(chat) + "\n")
    (item,) = read_traces(src, "openai-chat")
    step = item.trace.steps[0]
    assert step.action.args["id"] == "N42"  # arguments within the limit are parsed
    assert step.observation.text.startswith("[{") and step.observation.data is None  # too deep: text, not data
    rc, so, se, ids = audit(tmp_path, src, "--format", "openai-chat")
    assert rc == 0 and len(ids) == 1 and "internal error" not in se, se


def test_a_deep_inspect_sample_is_one_bad_part_in_both_log_formats(tmp_path):
    import zipfile

    from referee.audit.ingest.readers.inspect_files import iter_eval_zip, iter_json_log

    deep_sample = '{"id": 2, "x": ' + nested(MAX_DEPTH + 50) + "}"
    log = tmp_path / "log.json"
    log.write_text('{"version": 2, "eval": {"task": "t"},\n "samples": [\n {"id": 1},\n ' + deep_sample
                   + ',\n {"id": 3}]}')
    parts = [(p.kind, p.line, p.value) for p in iter_json_log(log)]
    assert parts[0][0] == "header" and parts[1] == ("sample", 3, {"id": 1}) and parts[3] == ("sample", 5, {"id": 3})
    assert parts[2][:2] == ("error", 4)
    zipped = tmp_path / "log.eval"
    with zipfile.ZipFile(zipped, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("header.json", '{"eval": {"task": "t"}}')
        zf.writestr("samples/2_epoch_1.json", deep_sample)
        zf.writestr("samples/3_epoch_1.json", '{"id": 3}')
    parts = [(p.kind, p.where, p.error) for p in iter_eval_zip(zipped)]
    assert parts[1][:2] == ("error", "samples/2_epoch_1.json") and "nested deeper" in parts[1][2], parts
    assert parts[2][:2] == ("sample", "samples/3_epoch_1.json")


def test_the_depth_limit_is_exact_deep_in_a_long_file(tmp_path):
    # past the first records the reader's fast path takes each line: the limit holds there too, to the level
    src = tmp_path / "t.jsonl"
    lines = [good(f"g{i}") for i in range(40)]
    lines += [deep("at", MAX_DEPTH), deep("over", MAX_DEPTH + 1), deep("way-over", MAX_DEPTH + 2), good("last")]
    src.write_text("\n".join(lines) + "\n")
    got = list(iter_json_values(src))
    assert [v.line for v in got] == list(range(1, 45))
    assert got[40].error is None and got[40].value["run_id"] == "at"
    for v in got[41:43]:
        assert v.error == f"invalid JSON: nested deeper than {MAX_DEPTH} levels at line {v.line}"
    assert got[43].value["run_id"] == "last"
