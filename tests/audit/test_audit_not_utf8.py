"""Black-box tests: `referee audit` reads trace files as UTF-8 and warns once per file about bytes that are not.

Written from docs/auditor.md alone: bytes that are not UTF-8 (a Latin-1 file) are read as U+FFFD, the run is
still audited, and stderr carries one warning per file naming it, counting the bad bytes and showing the bytes
around the first one (Python-escaped), with or without `--workers`.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

TAIL = "; referee reads UTF-8: convert the file (e.g. iconv -f LATIN1 -t UTF-8) to audit the text as written"
NOT_UTF8 = "not UTF-8"
VOLATILE = ("audited_at", "created_at")
POOL_LINE = "referee: auditing on local process pool"


def record(i: int, task: str | None = None) -> dict:
    step = {"action": {"name": "delete", "args": {"id": f"N{i}"}}, "observation": {"text": f"deleted N{i}"}}
    return {"run_id": f"r{i}", "task": task or f"Delete note N{i}", "steps": [step],
            "report": f"Done, N{i} was deleted."}


def latin1_jsonl(path: Path, n: int = 300, bad: dict[int, str] | None = None) -> Path:
    """`n` trace v1 lines encoded as Latin-1; `bad` maps record index to a task holding one non-ASCII char."""
    bad = {40: "Delete the café note N40", 210: "Rename the naïve note N210"} if bad is None else bad
    text = "\n".join(json.dumps(record(i, bad.get(i)), ensure_ascii=False) for i in range(n)) + "\n"
    path.write_bytes(text.encode("latin-1"))
    return path


def audit(referee_cli, cwd: Path, *inputs: str, out: str = "out.jsonl", workers: list[str] | None = None):
    args = ["audit", *inputs, "--out", out, "--no-progress", "--show", "none", *(workers or ["--workers", "1"])]
    rc, stdout, stderr = referee_cli(*args, cwd=cwd)
    assert "Traceback" not in stderr and "internal error" not in stderr, stderr
    return rc, stdout, stderr


def warnings_about(stderr: str) -> list[str]:
    return [ln for ln in stderr.splitlines() if NOT_UTF8 in ln]


def parse_warning(line: str) -> tuple[str, int, str]:
    """(file, count, shown bytes) of one not-UTF-8 warning, checking its whole wording."""
    m = re.fullmatch(r"referee: warning: (.+?): (\d+) (bytes that are|byte that is) not UTF-8 (were|was) read as "
                     r"U\+FFFD \(the first: (.+)\)" + re.escape(TAIL), line)
    assert m, f"warning not in the documented form:\n{line}"
    n = int(m.group(2))
    assert (m.group(3), m.group(4)) == (("byte that is", "was") if n == 1 else ("bytes that are", "were")), line
    return m.group(1), n, m.group(5)


def records(path: Path) -> list[dict]:
    recs = [json.loads(ln) for ln in path.read_text(encoding="utf-8").splitlines() if ln.strip()]
    return [{k: v for k, v in r.items() if k not in VOLATILE} for r in recs]


def test_latin1_jsonl_is_audited_with_one_warning_naming_the_file(tmp_path, referee_cli):
    latin1_jsonl(tmp_path / "t.jsonl")
    rc, _, stderr = audit(referee_cli, tmp_path, "t.jsonl")
    assert rc == 0, stderr
    found = warnings_about(stderr)
    assert len(found) == 1, stderr
    name, count, shown = parse_warning(found[0])
    assert name == "t.jsonl"
    assert count == 2
    assert "caf\\xe9" in shown and "na\\xefve" not in shown  # the bytes around the FIRST bad byte
    recs = {r["run_id"]: r for r in records(tmp_path / "out.jsonl")}
    assert len(recs) == 300
    assert recs["r40"]["task"] == "Delete the caf\ufffd note N40"
    assert recs["r210"]["task"] == "Rename the na\ufffdve note N210"
    assert "\ufffd" not in recs["r41"]["task"]


def test_workers_give_the_same_warning_once_and_the_same_records(tmp_path, referee_cli):
    src = latin1_jsonl(tmp_path / "t.jsonl")
    (tmp_path / "w1").mkdir()
    (tmp_path / "w2").mkdir()
    rc1, _, err1 = audit(referee_cli, tmp_path / "w1", f"../{src.name}")
    pool = ["--workers", "2", "--chunk-size", "50"]
    rc2, _, err2 = audit(referee_cli, tmp_path / "w2", f"../{src.name}", workers=pool)
    assert rc1 == rc2 == 0, (err1, err2)
    assert POOL_LINE in err2 and POOL_LINE not in err1, (err1, err2)  # the pool really ran, the serial run did not
    serial, pooled = warnings_about(err1), warnings_about(err2)
    assert len(pooled) == 1, err2
    assert pooled == serial
    name, count, shown = parse_warning(pooled[0])
    assert (name, count) == ("../t.jsonl", 2) and "caf\\xe9" in shown
    assert records(tmp_path / "w2" / "out.jsonl") == records(tmp_path / "w1" / "out.jsonl")


def test_valid_utf8_with_non_ascii_text_gives_no_warning(tmp_path, referee_cli):
    lines = [json.dumps(record(i, "Delete the café note N%d" % i if i % 3 == 0 else None), ensure_ascii=False)
             for i in range(60)]
    (tmp_path / "u.jsonl").write_bytes(("\n".join(lines) + "\n").encode("utf-8"))
    rc, _, stderr = audit(referee_cli, tmp_path, "u.jsonl")
    assert rc == 0, stderr
    assert warnings_about(stderr) == [] and "U+FFFD" not in stderr, stderr
    recs = {r["run_id"]: r for r in records(tmp_path / "out.jsonl")}
    assert recs["r0"]["task"] == "Delete the café note N0"


def test_two_bad_files_give_one_warning_each(tmp_path, referee_cli):
    latin1_jsonl(tmp_path / "a.jsonl", n=30, bad={5: "Delete the café note N5"})
    b = [json.dumps(record(i + 100, "Delete the café note N%d" % (i + 100) if i in (3, 7, 9) else None),
                    ensure_ascii=False) for i in range(30)]
    (tmp_path / "b.jsonl").write_bytes(("\n".join(b) + "\n").encode("latin-1"))
    rc, _, stderr = audit(referee_cli, tmp_path, "a.jsonl", "b.jsonl")
    assert rc == 0, stderr
    found = [parse_warning(ln) for ln in warnings_about(stderr)]
    assert sorted((name, n) for name, n, _ in found) == [("a.jsonl", 1), ("b.jsonl", 3)], stderr
    assert all("caf\\xe9" in shown for _, _, shown in found)
    assert len(records(tmp_path / "out.jsonl")) == 60


def test_pretty_printed_json_array_with_one_bad_byte_uses_the_singular(tmp_path, referee_cli):
    recs = [record(i, "Delete the café note N7" if i == 7 else None) for i in range(20)]
    (tmp_path / "p.json").write_bytes(json.dumps(recs, indent=2, ensure_ascii=False).encode("latin-1"))
    rc, _, stderr = audit(referee_cli, tmp_path, "p.json")
    assert rc == 0, stderr
    found = warnings_about(stderr)
    assert len(found) == 1, stderr
    assert "1 byte that is not UTF-8 was read as U+FFFD" in found[0]
    name, count, shown = parse_warning(found[0])
    assert (name, count) == ("p.json", 1) and "caf\\xe9" in shown
    out = {r["run_id"]: r for r in records(tmp_path / "out.jsonl")}
    assert len(out) == 20 and out["r7"]["task"] == "Delete the caf\ufffd note N7"


def test_the_warning_names_the_line_of_the_first_bad_byte(tmp_path, referee_cli):
    # record 40 is on line 41, record 210 (the second bad one) on line 211: the first is named
    src = latin1_jsonl(tmp_path / "t.jsonl")
    for workers in (["--workers", "1"], ["--workers", "2", "--chunk-size", "50"]):
        rc, _, stderr = audit(referee_cli, tmp_path, src.name, out=f"out{workers[1]}.jsonl", workers=workers)
        assert rc == 0, stderr
        [warning] = warnings_about(stderr)
        assert parse_warning(warning)[2].startswith("line 41, ..."), warning
    recs = [record(i, "Delete the café note N7" if i == 7 else None) for i in range(20)]
    text = json.dumps(recs, indent=2, ensure_ascii=False)
    (tmp_path / "p.json").write_bytes(text.encode("latin-1"))
    rc, _, stderr = audit(referee_cli, tmp_path, "p.json", out="p.jsonl")
    [warning] = warnings_about(stderr)
    line = 1 + text[:text.index("café")].count("\n")
    assert parse_warning(warning)[2].startswith(f"line {line}, ..."), warning


def test_first_bad_line_across_blocks_and_at_the_end(tmp_path):
    from referee.core.jsonio.undecodable import first_bad_line

    p = tmp_path / "x.txt"
    good = "naïve ✓\n".encode("utf-8")  # characters of 2 and 3 bytes, cut by every small block size
    p.write_bytes(good * 5 + b"bad \xff here\n" + good)
    assert {first_bad_line(p, block=b) for b in (1, 2, 3, 5, 7, 1 << 20)} == {6}
    p.write_bytes(good * 3 + "é".encode("utf-8")[:1])  # cut inside its last character
    assert first_bad_line(p, block=4) == 4
    p.write_bytes(good * 3)
    assert first_bad_line(p) is None
    assert first_bad_line(tmp_path / "missing.jsonl") is None
    import os

    os.mkfifo(tmp_path / "pipe.jsonl")  # not waited on: only a regular file is read
    assert first_bad_line(tmp_path / "pipe.jsonl") is None and first_bad_line(tmp_path) is None
