"""Black-box acceptance tests for `referee audit --workers N` on trace v1 line files (.jsonl/.ndjson).

Written from the contract alone (docs/scale.md, docs/auditor.md, issue 13), not from the code under
test: whatever the input, an audit on a local process pool writes the same audit file, cache rows,
gold file, summary, exit code and bad-record messages as `--workers 1` (all but the one line that
says a pool is used). Every case runs the real CLI twice, in two folders laid out alike (so paths
printed are the same), with a small `--chunk-size` so that each file spans many chunks.
"""

from __future__ import annotations

import json
import re
import shutil
import sqlite3
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import base_cli_env, run_cli

CHUNK = "6"
POOL_LINE = "referee: auditing on local process pool"
VERBS = ["Delete the note N{i}", "Create a task T{i} named report", "Send the invoice INV-{i} to ops",
         "What is the total of order O{i}?", "Set the timezone of user U{i} to UTC", "Tidy up workspace W{i}"]
ACTIONS = ["get_item", "update_item", "delete_item", "search", "send_message", "create_item"]


def trace(i: int, *, text: str = "", **extra) -> dict:
    """A short, varied trace v1 record (1 to 3 steps; every claim kind); `text` is added to each observation."""
    steps = []
    for k in range(1 + i % 3):
        obs: dict = {"text": f"ok item X{i}-{k} total ${k * 7}.50{text}", "data": {"id": f"X{i}-{k}", "n": k}}
        if (i + k) % 7 == 0:
            obs = {"text": f"Error: item X{i}-{k} not found{text}", "error": True}
        steps.append({"action": {"name": ACTIONS[(i + k) % len(ACTIONS)], "args": {"id": f"X{i}-{k}"}},
                      "observation": obs, "narration": f"step {k} of run {i}"})
    report = [f"Done, X{i}-0 updated.", "I could not finish.", None, f"The total is ${i}.50.",
              "Maybe it worked?"][i % 5]
    rec = {"trace_version": 1, "run_id": f"r{i:04d}", "task": VERBS[i % len(VERBS)].format(i=i), "steps": steps,
           "report": report, "meta": {"group": f"g{i % 4}"}}
    rec.update(extra)
    return rec


def line(rec: dict) -> str:
    return json.dumps(rec)


def lines(n: int, start: int = 0) -> list[str]:
    return [line(trace(i)) for i in range(start, start + n)]


def nested(depth: int) -> str:
    opens = "".join('{"k": ' if d % 2 else "[" for d in range(depth))
    closes = "".join("}" if d % 2 else "]" for d in reversed(range(depth)))
    return opens + "1" + closes


@dataclass
class Outcome:
    rc: int
    stdout: str
    stderr: list[str]  # without the pool line
    pool: bool  # the pool line was printed
    out: bytes | None
    gold: bytes | None
    summary: dict | None
    cache: list[tuple] | None

    def ids(self) -> list[str]:
        return [json.loads(ln)["run_id"] for ln in (self.out or b"").decode().splitlines()]


def evidence_rows(db: Path) -> list[tuple] | None:
    if not db.exists():
        return None
    con = sqlite3.connect(db)
    try:
        return sorted(con.execute("SELECT * FROM evidence").fetchall())
    finally:
        con.close()


def audit(run_dir: Path, inputs: list[str], *extra: str, workers: int, chunk: str = CHUNK,
          env: dict | None = None) -> Outcome:
    """`referee audit INPUTS --out audit.jsonl --workers N --chunk-size 6` run in `run_dir` (in this process from
    the main thread, in a child from any other)."""
    run_dir.mkdir(exist_ok=True)
    args = ["audit", *inputs, "--out", "audit.jsonl", "--workers", str(workers), "--chunk-size", chunk,
            "--no-progress", "--show", "all", "--summary-json", "summary.json", *extra]
    summary = run_dir / "summary.json"
    summary.unlink(missing_ok=True)
    rc, so, se = run_cli(args, cwd=run_dir, env=env or base_cli_env(), timeout=120)
    assert "Traceback" not in se and "internal error" not in se, se
    err = se.splitlines()
    pool = [ln for ln in err if ln.startswith(POOL_LINE)]
    summ = json.loads(summary.read_text()) if summary.exists() else None
    if summ is not None:
        summ.pop("elapsed_s", None)  # wall time: the one figure allowed to differ
    out, gold = run_dir / "audit.jsonl", run_dir / "gold.jsonl"
    return Outcome(rc=rc, stdout=re.sub(r"\([0-9.]+ rec/s\)", "(N rec/s)", so),
                   stderr=[ln for ln in err if not ln.startswith(POOL_LINE)], pool=bool(pool),
                   out=out.read_bytes() if out.exists() else None, gold=gold.read_bytes() if gold.exists() else None,
                   summary=summ, cache=evidence_rows(run_dir / "audit.jsonl.cache.sqlite"))


def assert_same(serial: Outcome, pooled: Outcome, *, pool_expected: bool = True) -> None:
    """Everything the contract names is equal; the pool really ran where the input spans chunks."""
    if pool_expected:
        assert pooled.pool, "no 'auditing on local process pool' line: the pool never ran\n" + "\n".join(pooled.stderr)
    assert not serial.pool
    assert pooled.rc == serial.rc, (serial.rc, pooled.rc, serial.stderr, pooled.stderr)
    assert pooled.stderr == serial.stderr
    assert pooled.out == serial.out, first_difference(serial.out, pooled.out)
    assert pooled.cache == serial.cache
    assert pooled.gold == serial.gold
    assert pooled.summary == serial.summary
    assert pooled.stdout == serial.stdout


def first_difference(a: bytes | None, b: bytes | None) -> str:
    if a is None or b is None:
        return f"serial file {'missing' if a is None else 'present'}, pooled {'missing' if b is None else 'present'}"
    la, lb = a.split(b"\n"), b.split(b"\n")
    for n, (x, y) in enumerate(zip(la, lb)):
        if x != y:
            return f"line {n + 1} differs:\nserial: {x[:300]!r}\npooled: {y[:300]!r}"
    return f"serial has {len(la)} lines, pooled {len(lb)}"


def both(tmp_path: Path, inputs: list[str], *extra: str, chunk: str = CHUNK) -> tuple[Outcome, Outcome]:
    """The same audit with --workers 1 (in tmp/w1) and --workers 2 (in tmp/w2); inputs relative to the run dir.

    Two independent folders: run side by side, to keep the file quick. The pooled audit runs in a child, started
    from a thread (every path it touches is absolute); the serial one in this process meanwhile, which spares
    one interpreter's start. The child's environment is made first: the in-process run sets this one's."""
    env = base_cli_env()
    with ThreadPoolExecutor(1) as pool:
        pooled = pool.submit(audit, tmp_path / "w2", inputs, *extra, workers=2, chunk=chunk, env=env)
        try:
            serial = audit(tmp_path / "w1", inputs, *extra, workers=1, chunk=chunk)
        finally:
            got = pooled.result()
        return serial, got


def write(tmp_path: Path, name: str, data: str | bytes) -> str:
    src = tmp_path / "in" / name
    src.parent.mkdir(parents=True, exist_ok=True)
    src.write_bytes(data.encode() if isinstance(data, str) else data)
    return f"../in/{name}"


def summary_line(stdout: str) -> str:
    found = [ln for ln in stdout.splitlines() if ln.startswith("wrote ")]
    assert len(found) == 1, stdout
    return found[0]


# -- 1. a clean file ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", [[], ["--format", "referee"]], ids=["sniffed", "format_given"])
def test_a_clean_jsonl_is_byte_for_byte_the_serial_audit_with_the_same_cache(tmp_path, fmt):
    src = write(tmp_path, "t.jsonl", "\n".join(lines(120)) + "\n")
    serial, pooled = both(tmp_path, [src], *fmt)
    assert_same(serial, pooled)
    assert pooled.rc == 0 and pooled.stderr == []
    assert pooled.ids() == [f"r{i:04d}" for i in range(120)]
    assert pooled.cache and len(pooled.cache) == 120
    assert "wrote 120 records" in summary_line(pooled.stdout)


# -- 2. broken lines, a record over several lines, a torn last line ---------------------------------------


@pytest.mark.parametrize("on_error", [[], ["--on-error", "skip"]], ids=["default", "skip_given"])
def test_broken_lines_and_a_pretty_printed_record_read_as_serially(tmp_path, on_error):
    ls = lines(110)
    ls[37] = ls[37][:45]  # truncated in the middle of the file
    ls[83] = json.dumps(trace(83), indent=2)  # one record over many lines, in a later chunk
    text = "\n".join(ls) + "\n" + line(trace(110))[:60]  # the last line torn, no newline
    src = write(tmp_path, "t.jsonl", text)
    serial, pooled = both(tmp_path, [src], *on_error)
    assert_same(serial, pooled)
    assert (serial.rc == 0) == bool(on_error) and any("t.jsonl:38" in ln for ln in serial.stderr), serial.stderr
    ids = pooled.ids()
    assert "r0036" in ids and "r0109" in ids  # records both sides of the bad ones are audited


# -- 3. duplicates, unknown fields, gold, a valid JSON that is no trace -------------------------------------


def test_duplicates_extra_fields_gold_and_a_record_without_task(tmp_path):
    recs = [trace(i, gold={"completed": i % 3 == 0}) if i % 2 else trace(i) for i in range(100)]
    recs[20]["timestamp"] = "2024-05-01T00:00:00Z"  # unknown fields, in several chunks
    recs[70]["thought"] = "hmm"
    recs[95]["timestamp"] = "2024-05-02T00:00:00Z"
    recs[50] = {k: v for k, v in recs[50].items() if k != "task"}  # valid JSON, not a trace
    recs.insert(60, trace(5, text=" repeated"))  # r0005 again, in another chunk, with other content
    recs.insert(90, trace(88))
    src = write(tmp_path, "t.jsonl", "\n".join(line(r) for r in recs) + "\n")
    serial, pooled = both(tmp_path, [src], "--gold-out", "gold.jsonl")
    ids = pooled.ids()
    assert ids.count("r0005") == 1 and ids.count("r0088") == 1 and "r0050" not in ids
    dup = [ln for ln in pooled.stderr if "duplicate run_id" in ln]
    assert len(dup) == 2, pooled.stderr
    assert pooled.summary is not None and pooled.summary["duplicates"] == 2
    for field in ("timestamp", "thought"):  # each named once per file (timestamp is in two chunks), not per chunk
        assert len([ln for ln in pooled.stderr if "ignored fields" in ln and field in ln]) == 1, pooled.stderr
    assert any("r0050" in ln and "task" in ln for ln in pooled.stderr), pooled.stderr
    assert pooled.gold and len(pooled.gold.splitlines()) == 50
    assert_same(serial, pooled)


def test_gold_labels_from_a_clean_jsonl_are_the_serial_ones(tmp_path):
    """`--gold-out` on a plain file: each label with its run's group (meta.group), as a serial audit writes it."""
    recs = [trace(i, gold={"completed": i % 2 == 0}) for i in range(60)]
    src = write(tmp_path, "t.jsonl", "\n".join(line(r) for r in recs) + "\n")
    serial, pooled = both(tmp_path, [src], "--gold-out", "gold.jsonl")
    assert serial.gold is not None
    first = json.loads(serial.gold.splitlines()[0])
    # the gold file `referee eval gold -o` writes: versioned, with the task text (eval split --by-task reads it)
    assert first == {"gold_version": 1, "run_id": "r0000", "completed": True, "group": "g0",
                     "task": recs[0]["task"]}, first
    assert_same(serial, pooled)


# -- 4. files that are not one JSON object per LF-ended line ------------------------------------------------


def _variants() -> dict[str, tuple[str, bytes]]:
    body = lines(60)
    lf = "\n".join(body) + "\n"
    blank = "".join(ln + ("\n\n" if i % 5 == 0 else "\n   \n" if i % 7 == 0 else "\n") for i, ln in enumerate(body))
    arr = list(body)
    arr[40] = json.dumps([trace(200), trace(201)])  # a line holding an array
    deep = list(body)
    deep[30] = '{"trace_version": 1, "run_id": "deep1", "task": "t", "steps": [], "x": %s}' % nested(300)
    deep[50] = '{"trace_version": 1, "run_id": "deep2", "task": "t", "steps": [], "x": %s}' % nested(20000)
    two = list(body)
    two[50] = two[50] + " " + line(trace(300))  # two records on one line
    scal = list(body)
    scal[25], scal[55] = '"just a string"', "null"
    pretty_cut = list(body)
    pretty_cut[5] = json.dumps(trace(5), indent=1)  # ~40 lines: crosses any line-count cut
    pretty_cut[45] = json.dumps(trace(45), indent=4)
    uni = [trace(i, text=" caf\u00e9 \u2028 next \u0085 \u2029 \u2713" if i % 9 == 0 else "") for i in range(60)]
    uni_raw = "\n".join(json.dumps(r, ensure_ascii=False) for r in uni) + "\n"  # the separators raw, unescaped
    bad_utf8 = lf.encode().replace(b'"ok item X44-0', b'"ok \xff\xfe item X44-0')
    mixed = "\ufeff" + "".join(ln + ("\r\n\r\n" if i % 6 == 0 else "\r\n") for i, ln in enumerate(body))
    mixed += line(trace(999))[:30]
    redo = list(body)
    redo[10] = line({k: v for k, v in trace(10).items() if k != "task"})  # bad, then the same run_id good later
    redo[40] = line(trace(10))
    garbage = list(body)
    garbage[33] = garbage[33] + " trailing words"
    long = list(body)
    long[20] = line(trace(20, text=" " + "lorem ipsum " * 120_000))  # a 1.4 MB line
    pdup = list(body)
    pdup[20] = json.dumps(trace(20), indent=2)
    pdup[44] = line(trace(3, text=" again"))  # a repeat of a run_id of the first chunk, after the multi-line record
    pdup[50] = line(trace(22))  # and of one just after it
    return {
        "json_array_named_jsonl": ("t.jsonl", json.dumps([trace(i) for i in range(60)], indent=1).encode()),
        "all_records_pretty": ("t.jsonl", "\n".join(json.dumps(trace(i), indent=2) for i in range(60)).encode()),
        "pretty_then_duplicates": ("t.jsonl", ("\n".join(pdup) + "\n").encode()),
        "bad_then_good_same_run_id": ("t.jsonl", ("\n".join(redo) + "\n").encode()),
        "trailing_garbage": ("t.jsonl", ("\n".join(garbage) + "\n").encode()),
        "long_line": ("t.jsonl", ("\n".join(long) + "\n").encode()),
        "upper_case_suffix": ("t.JSONL", lf.encode()),
        "bom": ("t.jsonl", ("\ufeff" + lf).encode()),
        "crlf": ("t.jsonl", lf.replace("\n", "\r\n").encode()),
        "blank_lines": ("t.jsonl", blank.encode()),
        "ndjson": ("t.ndjson", lf.encode()),
        "no_final_newline": ("t.jsonl", lf[:-1].encode()),
        "array_line": ("t.jsonl", ("\n".join(arr) + "\n").encode()),
        "deep_lines": ("t.jsonl", ("\n".join(deep) + "\n").encode()),
        "two_records_one_line": ("t.jsonl", ("\n".join(two) + "\n").encode()),
        "scalar_lines": ("t.jsonl", ("\n".join(scal) + "\n").encode()),
        "pretty_records_across_cuts": ("t.jsonl", ("\n".join(pretty_cut) + "\n").encode()),
        "pretty_first_record": ("t.jsonl", "\n".join([json.dumps(trace(0), indent=2), *body[1:], ""]).encode()),
        "unicode_line_separators": ("t.jsonl", uni_raw.encode()),
        "invalid_utf8": ("t.jsonl", bad_utf8),
        "cr_only": ("t.jsonl", lf.replace("\n", "\r").encode()),
        "ndjson_bom_crlf_blank_torn": ("t.ndjson", mixed.encode()),
    }


VARIANTS = _variants()


@pytest.mark.parametrize("case", sorted(VARIANTS))
def test_odd_line_files_audit_as_serially(tmp_path, case):
    name, data = VARIANTS[case]
    src = write(tmp_path, name, data)
    serial, pooled = both(tmp_path, [src], "--gold-out", "gold.jsonl")
    assert serial.out is not None and len(serial.ids()) >= 55, (case, serial.stderr[:5])  # the case audits
    assert_same(serial, pooled)


def test_the_unicode_separators_stay_inside_their_record(tmp_path):
    """U+2028, U+2029 and NEL are legal raw inside a JSON string: not line ends of a JSONL file."""
    name, data = VARIANTS["unicode_line_separators"]
    src = write(tmp_path, name, data)
    serial, pooled = both(tmp_path, [src])
    assert_same(serial, pooled)
    assert pooled.rc == 0 and pooled.ids() == [f"r{i:04d}" for i in range(60)], pooled.stderr


@pytest.mark.parametrize("chunk", ["1", "2", "6"])
def test_a_record_over_many_lines_whose_lines_are_traces_is_one_record(tmp_path, chunk):
    """Inside one record spread over lines, every other line is on its own a valid trace: cut anywhere, those
    lines are never records (a slice that looks clean is still part of the record begun before it)."""
    inner = "\n,\n".join(line(trace(i)).replace('"r0', '"in0') for i in range(700, 712))
    outer = ('{"trace_version": 1, "run_id": "outer", "task": "Delete the note N9", "steps": [], '
             '"report": "Deleted.", "meta": {"group": "g0", "inner": [\n' + inner + '\n]}}')
    ls = lines(40)
    ls[17] = outer
    src = write(tmp_path, "t.jsonl", "\n".join(ls) + "\n")
    serial, pooled = both(tmp_path, [src], chunk=chunk)
    assert "outer" in serial.ids() and not any(i.startswith("in0") for i in serial.ids()), serial.ids()
    assert_same(serial, pooled)


# -- 5. resume ---------------------------------------------------------------------------------------------


def test_resume_after_changes_and_additions_is_the_serial_resume(tmp_path):
    src = tmp_path / "in" / "t.jsonl"
    write(tmp_path, "t.jsonl", "\n".join(lines(100)) + "\n")
    first = both(tmp_path, ["../in/t.jsonl"])
    assert_same(*first)
    changed = [line(trace(i, text=" (edited)")) if i in (4, 47, 93) else ln for i, ln in enumerate(lines(100))]
    src.write_text("\n".join(changed + lines(5, start=100)) + "\n")
    second = both(tmp_path, ["../in/t.jsonl"])
    assert_same(*second)
    stats = summary_line(second[1].stdout)
    assert "wrote 8 records" in stats and "97 already there" in stats and "3 stale" in stats, stats
    ids = second[1].ids()
    assert len(ids) == 108 and ids[100:] == ["r0004", "r0047", "r0093", "r0100", "r0101", "r0102", "r0103",
                                             "r0104"]
    third = both(tmp_path, ["../in/t.jsonl"])
    assert_same(*third, pool_expected=False)  # nothing to do: no pool needed
    assert third[1].out == second[1].out and "wrote 0 records" in summary_line(third[1].stdout)


@pytest.mark.parametrize("crash", ["between_records", "mid_record", "cache_ahead_of_file"])
def test_resume_after_a_crash_ends_as_the_serial_file(tmp_path, crash):
    """A file cut short (as by kill -9 between records, or in the middle of one; or with the cache holding more
    than the file, as its commits may) then the same command again."""
    write(tmp_path, "t.jsonl", "\n".join(lines(100)) + "\n")
    full = audit(tmp_path / "full", ["../in/t.jsonl"], workers=1)
    assert full.out is not None and full.rc == 0
    kept = b"".join(full.out.splitlines(keepends=True)[:43])
    if crash == "mid_record":
        kept += full.out.splitlines(keepends=True)[43][:70]
    for w in ("w1", "w2"):
        (tmp_path / w).mkdir()
        (tmp_path / w / "audit.jsonl").write_bytes(kept)
        if crash == "cache_ahead_of_file":
            shutil.copy(tmp_path / "full" / "audit.jsonl.cache.sqlite", tmp_path / w / "audit.jsonl.cache.sqlite")
    serial, pooled = both(tmp_path, ["../in/t.jsonl"])
    assert_same(serial, pooled, pool_expected=False)  # 57 runs to do: whether a pool starts is not the point
    if crash != "mid_record":
        assert pooled.out == full.out and pooled.rc == 0
        assert "43 already there" in summary_line(pooled.stdout)


# -- 6. --on-error stop ------------------------------------------------------------------------------------


@pytest.mark.parametrize("bad", ["no_task", "broken_json", "deep"])
def test_on_error_stop_in_the_fifth_chunk_writes_what_came_before(tmp_path, bad):
    ls = lines(100)
    at = 27  # chunks of 6: the fifth chunk holds lines 25 to 30
    ls[at] = {"no_task": '{"trace_version": 1, "run_id": "bad", "steps": []}', "broken_json": ls[at][:40],
              "deep": '{"trace_version": 1, "run_id": "bad", "task": "t", "steps": [], "x": %s}' % nested(5000)}[bad]
    src = write(tmp_path, "t.jsonl", "\n".join(ls) + "\n")
    serial, pooled = both(tmp_path, [src], "--on-error", "stop")
    assert_same(serial, pooled)
    assert pooled.rc == 2 and pooled.ids() == [f"r{i:04d}" for i in range(at)], (pooled.rc, pooled.stderr)
    errors = [ln for ln in pooled.stderr if ln.startswith("referee: error:")]
    assert len(errors) == 1 and "t.jsonl:28" in errors[0], pooled.stderr


def test_on_error_stop_on_a_pretty_printed_file_part(tmp_path):
    """A bad record after a multi-line record: the stop place and what is written are the serial ones."""
    ls = lines(100)
    ls[10] = json.dumps(trace(10), indent=2)
    ls[64] = '{"trace_version": 1, "run_id": "bad", "steps": []}'
    src = write(tmp_path, "t.jsonl", "\n".join(ls) + "\n")
    serial, pooled = both(tmp_path, [src], "--on-error", "stop")
    assert_same(serial, pooled)
    assert pooled.rc == 2 and pooled.ids() == [f"r{i:04d}" for i in range(64)], pooled.stderr


# -- 7. a resume made with other settings -------------------------------------------------------------------


def _seed(tmp_path: Path, src_lines: list[str]) -> bytes:
    """An audit file made with the default policy, copied (with its cache) to w1 and w2."""
    write(tmp_path, "seed.jsonl", "\n".join(src_lines) + "\n")
    seed = audit(tmp_path / "seed", ["../in/seed.jsonl"], workers=1)
    assert seed.rc == 0 and seed.out
    for w in ("w1", "w2"):
        (tmp_path / w).mkdir()
        for f in ("audit.jsonl", "audit.jsonl.cache.sqlite"):
            shutil.copy(tmp_path / "seed" / f, tmp_path / w / f)
    return seed.out


def test_resume_with_another_policy_stops_with_the_serial_error_and_keeps_the_file(tmp_path):
    before = _seed(tmp_path, lines(100))
    src = write(tmp_path, "t.jsonl", "\n".join(lines(100)) + "\n")
    serial, pooled = both(tmp_path, [src], "--policy", "strict")
    assert_same(serial, pooled, pool_expected=False)
    assert pooled.rc == 2 and pooled.out == before and serial.out == before
    errors = [ln for ln in pooled.stderr if ln.strip()]
    assert len(errors) == 1 and errors[0].startswith("referee: error: audit.jsonl:line 1: run_id r0000"), errors
    assert "--reaudit-changed" in errors[0]


def test_reaudit_changed_with_another_policy_is_the_serial_reaudit(tmp_path):
    """Every run audited again under the new policy, appended; the cached evidence is reused, as serially."""
    before = _seed(tmp_path, lines(60))
    src = write(tmp_path, "t.jsonl", "\n".join(lines(60)) + "\n")
    serial, pooled = both(tmp_path, [src], "--policy", "strict", "--reaudit-changed")
    assert pooled.rc == 0 and len(pooled.ids()) == 120 and pooled.out is not None and pooled.out.startswith(before)
    assert_same(serial, pooled)


def test_resume_with_another_policy_where_the_old_runs_are_late_in_the_input(tmp_path):
    """Runs 0-59 are new and 60-99 were audited with another policy: workers stop where a serial audit does."""
    before = _seed(tmp_path, lines(40, start=60))
    src = write(tmp_path, "t.jsonl", "\n".join(lines(100)) + "\n")
    serial, pooled = both(tmp_path, [src], "--policy", "strict")
    assert_same(serial, pooled, pool_expected=False)
    assert pooled.rc == 2 and serial.out is not None and serial.out.startswith(before)
    assert any("run_id r0060" in ln for ln in pooled.stderr), pooled.stderr


# -- 8. several inputs ---------------------------------------------------------------------------------------


def test_the_same_file_twice_and_a_folder_audit_as_serially(tmp_path):
    src = write(tmp_path, "t.jsonl", "\n".join(lines(60)) + "\n")
    write(tmp_path, "more/one.json", json.dumps(trace(500), indent=2))
    write(tmp_path, "more/two.jsonl", "\n".join(lines(20, start=600)) + "\n")
    serial, pooled = both(tmp_path, [src, src, "../in/more"])
    assert_same(serial, pooled)
    ids = pooled.ids()
    assert len(ids) == len(set(ids)) == 81 and "r0500" in ids and "r0619" in ids
    assert pooled.summary is not None and pooled.summary["duplicates"] == 60
