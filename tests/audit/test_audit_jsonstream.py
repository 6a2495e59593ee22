"""jsonstream: a bad element costs one record (one error, at its line), memory stays flat, any layout."""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path

import pytest

from referee.core.jsonio.values import iter_json_values

# strings with brackets, braces, escaped quotes and backslashes, commas, multi-byte characters
TRICKY = 'ok ] } [ { "quoted" \\ back, é ü 日本 😀 "," :'


def _record(i: int, text: str = "") -> dict:
    return {"run_id": f"r{i}", "task": f"delete [a{i}] and {{b}} \"now\"",
            "steps": [{"action": {"name": "sh", "args": ["rm", f"a{i}", {"k": [1, [2, {"z": None}]]}]},
                       "observation": {"text": text or TRICKY}},
                      {"action": {"name": "ls", "args": []}, "observation": {"text": "] },{ ["}}],
            "n": i * 7.5, "ok": i % 2 == 0}


def _corrupt(text: str, kind: str) -> str:
    if kind == "token":  # a bare word where a value goes
        return text.replace('"task": ', '"task": undefined, "x": ', 1)
    if kind == "trailing_comma":  # brackets still balance
        return text.replace('"ok": ', '"ok": [1, 2,], "ok2": ', 1)
    if kind == "truncated":  # a write cut inside the steps list: what follows reads as more steps
        return text[:text.index('"steps": [') + len('"steps": [')] + "1"
    if kind == "unterminated":  # the task string loses its closing quote
        k = text.index('"task": "') + len('"task": "')
        return text[:k] + text[k:].replace('\\"now\\""', '\\"now\\"', 1)
    if kind == "unclosed":  # the record's last brace is missing
        return text[:text.rindex("}")]
    raise ValueError(kind)


LAYOUTS = {  # head, separator, tail, indent
    "one_per_line": ("[", ",\n", "]\n", None),
    "pretty": ("[\n", ",\n", "\n]\n", 2),
    "one_line": ("[", ", ", "]", None),
    "jsonl": ("", "\n", "\n", None),
    "pretty_values": ("", "\n", "\n", 2),
}


def _write(path: Path, layout: str, n: int, bad: dict[int, str], text: str = "") -> tuple[list[dict], dict[int, int]]:
    """Write n records (bad: index -> corruption); return the good records and the line of each bad one."""
    head, sep, tail, indent = LAYOUTS[layout]
    parts, good, lines = [], [], {}
    line = 1 + head.count("\n")
    for i in range(n):
        rec = _record(i, text)
        s = json.dumps(rec, ensure_ascii=i % 3 == 0, indent=indent)
        if indent and layout == "pretty":
            s = "  " + s.replace("\n", "\n  ")
        if i in bad:
            s = _corrupt(s, bad[i])
            lines[i] = line
        else:
            good.append(rec)
        parts.append(s)
        line += s.count("\n") + sep.count("\n")
    path.write_text(head + sep.join(parts) + tail, encoding="utf-8")
    return good, lines


def _read(path: Path, **kw) -> tuple[list, list]:
    items = list(iter_json_values(path, **kw))
    return [i.value for i in items if i.error is None], [i for i in items if i.error is not None]


def test_big_array_one_bad_element_costs_one_record_and_memory_stays_flat(tmp_path):
    # an ~18 MB array of ~4.6 KB records, one bad element in the middle, read in 256 KiB windows (the default is
    # 1 MiB: memory is a window or two plus the largest record, so a smaller window shows flat memory on a file
    # a quarter the size, with the same margins: peak ~2.4 MB here, ~9.6 MB for a 92 MB file in 1 MiB windows)
    path = tmp_path / "big.json"
    n, bad_at, window = 4_000, 2_000, 1 << 18
    text = TRICKY * 80
    with open(path, "w", encoding="utf-8") as fh:
        fh.write("[")
        for i in range(n):
            s = json.dumps({"run_id": f"r{i}", "task": "delete [a] and {b}", "steps": [
                {"action": {"name": "sh", "args": ["rm", "a"]}, "observation": {"text": text}}]}, ensure_ascii=False)
            fh.write(("," if i else "") + "\n" + (_corrupt(s, "token") if i == bad_at else s))
        fh.write("\n]\n")
    size = path.stat().st_size
    tracemalloc.start()
    try:
        ids, errors = [], []
        for item in iter_json_values(path, chunk=window):
            if item.error is None:
                ids.append(item.value["run_id"])
            else:
                errors.append(item)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert size > 15_000_000
    assert ids == [f"r{i}" for i in range(n) if i != bad_at]  # every valid record, once, in order
    assert len(errors) == 1 and errors[0].line == bad_at + 2 and "invalid JSON" in errors[0].error
    assert peak < 5_000_000, (peak, size)  # a few windows, however large the file


def test_a_record_that_never_closes_on_one_long_line_costs_the_rest_of_it_in_flat_memory(tmp_path):
    # one long line, a record cut inside a list: the rest of the file parses as that list's items, so nothing
    # but the file's end shows the error. No line starts a record after it, so nothing after it is read (the
    # reader does not guess a record start inside a line); it says so once, and never holds the rest
    path = tmp_path / "cut.json"
    recs = [{"run_id": f"r{i}", "task": "t", "steps": [{"text": "x] }" * 50}] * 4} for i in range(4000)]
    texts = [json.dumps(r) for r in recs]
    texts[10] = _corrupt(texts[10], "truncated")
    path.write_text("[" + ", ".join(texts) + "]")
    want = iter(recs[:10])
    tracemalloc.start()
    try:
        errors = []
        for item in iter_json_values(path, chunk=64 * 1024):  # compared as they come: nothing is kept
            if item.error is None:
                assert item.value == next(want)
            else:
                errors.append(item)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert path.stat().st_size > 3_000_000
    assert next(want, None) is None
    assert len(errors) == 1 and errors[0].line == 1 and "never closed" in errors[0].error
    assert "nothing after it could be read" in errors[0].error
    assert peak < 2_000_000, peak


# on one long line a record whose brackets never balance again leaves no place to resume: no line starts after it
LOSES_THE_LINE = {"truncated", "unterminated", "unclosed"}


@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("kind", ["token", "trailing_comma", "truncated", "unterminated", "unclosed"])
@pytest.mark.parametrize("where", ["first", "middle", "last"])
def test_one_bad_element_costs_one_record(tmp_path, layout, kind, where):
    n = 30
    bad_at = {"first": 0, "middle": 14, "last": n - 1}[where]
    path = tmp_path / "f.json"
    good, lines = _write(path, layout, n, {bad_at: kind})
    vals, errors = _read(path, chunk=1024)  # a small window: records and strings cross its edge
    if layout == "one_line" and kind in LOSES_THE_LINE:
        good = good[:bad_at]
        assert "nothing after it could be read" in errors[0].error
    assert vals == good
    assert [e.line for e in errors] == [lines[bad_at]], [e.error for e in errors]


@pytest.mark.parametrize("layout", ["one_per_line", "pretty", "one_line", "jsonl"])
def test_several_bad_elements_each_cost_one_record(tmp_path, layout):
    # side by side too, where records start lines; on one long line, up to the first that never balances
    bad = {0: "token", 5: "truncated", 6: "unterminated", 20: "trailing_comma", 39: "unclosed"}
    good, lines = _write(tmp_path / "f.json", layout, 40, bad)
    vals, errors = _read(tmp_path / "f.json", chunk=1024)
    if layout == "one_line":
        good, bad = good[:4], {0: "token", 5: "truncated"}
    assert vals == good
    assert [e.line for e in errors] == [lines[i] for i in sorted(bad)]


def test_strings_with_brackets_and_escaped_quotes_across_every_window_edge(tmp_path):
    tricky = json.dumps({"s": TRICKY, "nested": [[{"a": "]"}], {"b": ["}", "\\\""]}]})
    for pad in range(0, 80, 3):  # slide the tricky record across the 1024-character edge
        path = tmp_path / f"p{pad}.json"
        filler = json.dumps({"f": "x" * (960 + pad)})
        path.write_text(f"[{filler},\n{tricky},\n{tricky}]")
        vals, errors = _read(path, chunk=1024)
        assert not errors and vals == [json.loads(filler), json.loads(tricky), json.loads(tricky)]


def test_nested_arrays_and_objects_are_elements_not_records(tmp_path):
    p = tmp_path / "n.json"
    p.write_text('[[1, [2, [3]]], {"a": {"b": [{"c": {}}]}}, [], {}, "s", 4, null]')
    vals, errors = _read(p)
    assert not errors and vals == [[1, [2, [3]]], {"a": {"b": [{"c": {}}]}}, [], {}, "s", 4, None]


def test_truncated_file(tmp_path):
    p = tmp_path / "t.json"
    body = '[{"a": 1},\n{"a": 2},\n{"a": 3, "b": [1, 2'
    p.write_text(body)
    vals, errors = _read(p)
    assert vals == [{"a": 1}, {"a": 2}] and [e.line for e in errors] == [3]
    assert "ends inside" in errors[0].error
    p.write_text('[{"a": 1},\n{"a": 2}\n')  # no closing bracket: both records, one error
    vals, errors = _read(p)
    assert vals == [{"a": 1}, {"a": 2}] and len(errors) == 1 and "closing ']'" in errors[0].error


def test_concatenated_values(tmp_path):
    p = tmp_path / "c.json"
    p.write_text('{"a": 1}{"b": 2} {"c": [1,\n2]}\n"s"\n3\n{\n  "d": {"e": null}\n}\n')
    vals, errors = _read(p)
    assert not errors and vals == [{"a": 1}, {"b": 2}, {"c": [1, 2]}, "s", 3, {"d": {"e": None}}]


def test_jsonl_with_bad_lines(tmp_path):
    p = tmp_path / "l.jsonl"
    p.write_text('{"a": 1}\n{"a": 2,, "b": 3}\nnot json at all\n{"a": 4, "t": "cut\n{"a": 5}\n"run_id": 6}\n{"a": 7}\n')
    items = list(iter_json_values(p))
    assert [(i.line, i.value) for i in items if i.error is None] == [(1, {"a": 1}), (5, {"a": 5}), (7, {"a": 7})]
    # a line that starts like a record is one (its own error); other text goes with the error before it
    assert [i.line for i in items if i.error] == [2, 4, 6]


def test_pretty_records_with_a_broken_one(tmp_path):
    p = tmp_path / "pretty.json"
    p.write_text(json.dumps({"a": 1}, indent=2) + "\n{\n  \"broken\": \n" + json.dumps({"a": 3}, indent=2) + "\n")
    vals, errors = _read(p)
    assert vals == [{"a": 1}, {"a": 3}] and [e.line for e in errors] == [4]


def test_a_record_larger_than_the_lookahead_is_read_whole(tmp_path):
    # on one long line a record bigger than max(4 chunks, 4 x the largest so far) is scanned, then re-read
    recs = [{"run_id": f"r{i}", "t": "s"} for i in range(5)]
    recs[2]["big"] = [{"x": "é]} \"" * 20, "n": i} for i in range(300)]
    p = tmp_path / "big.json"
    p.write_text("[" + ", ".join(json.dumps(r, ensure_ascii=False) for r in recs) + "]")
    assert p.stat().st_size > 4 * 1024 * 4
    vals, errors = _read(p, chunk=1024)
    assert not errors and vals == recs


def test_lenient_separators_and_arrays_one_after_another(tmp_path):
    p = tmp_path / "s.json"
    p.write_text('[{"a": 1} {"a": 2},, {"a": 3},]\n[{"a": 4}]\n')
    vals, errors = _read(p)
    assert not errors and vals == [{"a": i} for i in range(1, 5)]


def test_jsonl_of_lists_reads_each_line_as_one_value(tmp_path):
    p = tmp_path / "m.jsonl"
    p.write_text('[{"role": "user", "content": "hi"}]\n[{"role": "user", "content": "yo"}, {"role": "assistant"}]\n')
    vals, errors = _read(p)
    assert not errors and [len(v) for v in vals] == [1, 2]


def test_bom_and_invalid_utf8(tmp_path):
    p = tmp_path / "b.json"
    p.write_bytes('\ufeff[{"a": "é"},\n{"a": "'.encode() + b"\xff" + b'"}]')
    vals, errors = _read(p)
    assert not errors and vals == [{"a": "é"}, {"a": "\ufffd"}]


def test_empty_and_blank_files(tmp_path):
    for body in ("", "  \n", "[]", "[ ]\n"):
        p = tmp_path / "e.json"
        p.write_text(body)
        assert _read(p) == ([], [])
