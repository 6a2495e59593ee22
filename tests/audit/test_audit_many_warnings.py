"""Black-box tests: `referee audit` prints at most 20 warnings of each kind and counts the rest.

Written from docs/auditor.md alone ("Duplicate run_ids" and "Many warnings"): a repeated run_id is audited
once and each repeat is one warning naming file, line and run_id; at most 20 warnings of each kind are
printed as they come, the 21st prints `referee: warning: more warnings of this kind (KIND) follow: not
printed; ...` instead, and after the audit one note line counts what was not printed (`referee: note: N
warnings were not printed (N duplicate run_ids): --summary-json FILE lists them`); `--summary-json` has
`duplicates` and every unprinted warning, word for word, in `warnings_not_printed`. Skipped records are
listed after the summary (the first 20) and all in `--summary-json`'s `errors`. A pooled audit
(`--workers 2 --chunk-size 50`) gives the same warnings and the same records as a serial one.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

PREFIX = "referee: warning: "
DUP = "duplicate run_id"
MORE_DUP = "referee: warning: more warnings of this kind (duplicate run_ids) follow: not printed"
MORE_SKIP = "referee: warning: more warnings of this kind (skipped records) follow: not printed"
NOTE = "referee: note: "
VOLATILE = ("audited_at", "created_at")
POOL_LINE = "referee: auditing on local process pool"
SERIAL = ["--workers", "1"]
POOL = ["--workers", "2", "--chunk-size", "50"]

# a printed duplicate warning: FILE:LINE: run_id X: duplicate run_id (first at FILE:LINE)...
DUP_RE = re.compile(r"(?P<file>[^:]+):(?P<line>\d+): run_id (?P<rid>\S+): duplicate run_id "
                    r"\(first at (?P<ffile>[^:]+):(?P<fline>\d+)\)(?P<rest>.*)")


def record(i: int) -> dict:
    step = {"action": {"name": "delete", "args": {"id": f"N{i}"}}, "observation": {"text": f"deleted N{i}"}}
    return {"run_id": f"r{i}", "task": f"Delete note N{i}", "steps": [step], "report": f"Done, N{i} was deleted."}


def dup_jsonl(path: Path, unique: int = 120, repeats: int = 45) -> Path:
    """`unique` runs r0..r{unique-1} (lines 1..unique), then repeats of r0, r2, r4, ... (one per line)."""
    assert 2 * (repeats - 1) < unique
    lines = [json.dumps(record(i)) for i in range(unique)] + [json.dumps(record(2 * k)) for k in range(repeats)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def expected_repeat(k: int, name: str, unique: int = 120) -> tuple[str, int, str, int]:
    """(file, line, run_id, first line) of the k-th repeat (0-based) in `dup_jsonl`."""
    return name, unique + 1 + k, f"r{2 * k}", 2 * k + 1


def audit(referee_cli, cwd: Path, *inputs: str, out: str = "out.jsonl", extra: list[str] | None = None,
          workers: list[str] | None = None):
    args = ["audit", *inputs, "--out", out, "--no-progress", "--show", "none", *(workers or SERIAL), *(extra or [])]
    rc, stdout, stderr = referee_cli(*args, cwd=cwd)
    assert "Traceback" not in stderr and "internal error" not in stderr, stderr
    return rc, stdout, stderr


def records(path: Path) -> list[dict]:
    recs = [json.loads(ln) for ln in path.read_text(encoding="utf-8").splitlines() if ln.strip()]
    return [{k: v for k, v in r.items() if k not in VOLATILE} for r in recs]


def dup_warnings(stderr: str) -> list[str]:
    """The printed duplicate-run_id warnings (not the 'more warnings' line, not the note)."""
    return [ln for ln in stderr.splitlines() if ln.startswith(PREFIX) and f": {DUP} (first at " in ln]


def parse_dup(text: str) -> tuple[tuple[str, int, str, int], str]:
    """((file, line, run_id, first line), template) of one duplicate warning without its prefix."""
    m = DUP_RE.fullmatch(text)
    assert m, f"duplicate warning not in the documented form:\n{text}"
    assert m["ffile"] == m["file"], text
    template = DUP_RE.sub(lambda mm: "F:L: run_id X: duplicate run_id (first at F:L)" + mm["rest"], text)
    return (m["file"], int(m["line"]), m["rid"], int(m["fline"])), template


def closing_line(stdout: str) -> str:
    found = [ln for ln in stdout.splitlines() if ln.startswith("wrote ")]
    assert len(found) == 1, stdout
    return found[0]


def test_duplicates_past_20_are_counted_not_printed_and_listed_in_summary_json(tmp_path, referee_cli):
    dup_jsonl(tmp_path / "t.jsonl")
    rc, stdout, stderr = audit(referee_cli, tmp_path, "t.jsonl", extra=["--summary-json", "s.json"])
    assert rc == 0, stderr
    lines = stderr.splitlines()

    # exactly 20 live duplicate warnings: the first 20 repeats, in input order, each naming file:line and run_id
    printed = dup_warnings(stderr)
    assert len(printed) == 20, stderr
    parsed = [parse_dup(ln[len(PREFIX):]) for ln in printed]
    assert [p for p, _ in parsed] == [expected_repeat(k, "t.jsonl") for k in range(20)], stderr
    templates = {t for _, t in parsed}
    assert len(templates) == 1, templates

    # then exactly one "more warnings of this kind (duplicate run_ids)" line, after the 20
    more = [i for i, ln in enumerate(lines) if ln.startswith(MORE_DUP)]
    assert len(more) == 1, stderr
    assert more[0] > max(lines.index(ln) for ln in printed), stderr
    assert sum("more warnings of this kind" in ln for ln in lines) == 1, stderr

    # one note line counting the 25 not printed
    notes = [ln for ln in lines if "not printed" in ln and ln.startswith(NOTE)]
    assert len(notes) == 1, stderr
    assert notes[0].startswith("referee: note: 25 warnings were not printed (25 duplicate run_ids)"), notes[0]
    assert lines.index(notes[0]) > more[0], stderr

    # --summary-json: duplicates and every unprinted warning, word for word as printed ones read
    summary = json.loads((tmp_path / "s.json").read_text(encoding="utf-8"))
    assert summary["duplicates"] == 45, summary
    unprinted = summary["warnings_not_printed"]
    assert isinstance(unprinted, list) and len(unprinted) == 25, unprinted
    assert all(isinstance(w, str) for w in unprinted), unprinted
    parsed_np = [parse_dup(w) for w in unprinted]
    assert [p for p, _ in parsed_np] == [expected_repeat(k, "t.jsonl") for k in range(20, 45)], unprinted
    assert {t for _, t in parsed_np} == templates, (templates, unprinted)  # same wording as the printed ones
    # none of the unprinted ones was printed after all
    assert not any(w in stderr for w in unprinted), stderr

    # the closing line counts them; each run_id is audited once
    closing = closing_line(stdout)
    assert re.match(r"wrote 120 records to out\.jsonl \(", closing), closing
    assert "; 45 duplicate run_ids" in closing, closing
    recs = records(tmp_path / "out.jsonl")
    assert len(recs) == 120
    assert sorted(r["run_id"] for r in recs) == sorted(f"r{i}" for i in range(120))


def test_pooled_audit_gives_the_same_warnings_note_and_records(tmp_path, referee_cli):
    src = dup_jsonl(tmp_path / "t.jsonl")
    (tmp_path / "w1").mkdir()
    (tmp_path / "w2").mkdir()
    extra = ["--summary-json", "s.json"]
    rc1, out1, err1 = audit(referee_cli, tmp_path / "w1", f"../{src.name}", extra=extra)
    rc2, out2, err2 = audit(referee_cli, tmp_path / "w2", f"../{src.name}", extra=extra, workers=POOL)
    assert rc1 == rc2 == 0, (err1, err2)
    assert POOL_LINE in err2 and POOL_LINE not in err1, (err1, err2)  # the pool really ran, the serial run did not

    def relevant(stderr: str) -> list[str]:
        return [ln for ln in stderr.splitlines() if DUP in ln or "not printed" in ln]

    serial, pooled = relevant(err1), relevant(err2)
    assert len(dup_warnings(err1)) == 20 and len(dup_warnings(err2)) == 20, (err1, err2)
    assert sum(ln.startswith(MORE_DUP) for ln in pooled) == 1, err2
    assert sum(ln.startswith("referee: note: 25 warnings were not printed (25 duplicate run_ids)")
               for ln in pooled) == 1, err2
    assert set(pooled) == set(serial), (err1, err2)
    assert len(pooled) == len(serial) == 22, (serial, pooled)
    assert pooled == serial  # and in the same order

    s1 = json.loads((tmp_path / "w1" / "s.json").read_text(encoding="utf-8"))
    s2 = json.loads((tmp_path / "w2" / "s.json").read_text(encoding="utf-8"))
    assert s1["duplicates"] == s2["duplicates"] == 45
    assert s2["warnings_not_printed"] == s1["warnings_not_printed"]
    assert len(s2["warnings_not_printed"]) == 25
    assert "; 45 duplicate run_ids" in closing_line(out2), out2

    r1, r2 = records(tmp_path / "w1" / "out.jsonl"), records(tmp_path / "w2" / "out.jsonl")
    assert len(r1) == 120
    assert r2 == r1


def test_without_summary_json_the_note_points_to_summary_json(tmp_path, referee_cli):
    dup_jsonl(tmp_path / "t.jsonl")
    rc, stdout, stderr = audit(referee_cli, tmp_path, "t.jsonl")
    assert rc == 0, stderr
    notes = [ln for ln in stderr.splitlines() if ln.startswith(NOTE) and "not printed" in ln]
    assert len(notes) == 1, stderr
    assert notes[0].startswith("referee: note: 25 warnings were not printed (25 duplicate run_ids)"), notes[0]
    assert notes[0].endswith("--summary-json FILE lists them"), notes[0]
    assert len(dup_warnings(stderr)) == 20, stderr
    assert "; 45 duplicate run_ids" in closing_line(stdout), stdout


def test_more_than_20_skipped_records_print_20_and_all_are_in_errors(tmp_path, referee_cli):
    lines, bad_lines = [], []
    for i in range(90):
        lines.append(json.dumps(record(i)))
        if i % 3 == 0:
            lines.append('{"run_id": "bad%d", "task": ' % i)  # not valid JSON
            bad_lines.append(len(lines))
    assert len(bad_lines) == 30
    (tmp_path / "b.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    rc, stdout, stderr = audit(referee_cli, tmp_path, "b.jsonl", extra=["--summary-json", "s.json",
                                                                         "--on-error", "skip"])
    assert rc == 0, stderr
    err_lines = stderr.splitlines()

    live = [ln for ln in err_lines
            if ln.startswith(PREFIX) and "skipped record" in ln and "more warnings of this kind" not in ln]
    assert len(live) == 20, stderr
    more = [i for i, ln in enumerate(err_lines) if ln.startswith(MORE_SKIP)]
    assert len(more) == 1, stderr
    assert more[0] > max(err_lines.index(ln) for ln in live), stderr
    assert sum("more warnings of this kind" in ln for ln in err_lines) == 1, stderr
    # the live warnings name the first 20 bad lines, in input order
    named = [int(re.search(r"b\.jsonl:(\d+):", ln).group(1)) for ln in live]
    assert named == bad_lines[:20], live

    summary = json.loads((tmp_path / "s.json").read_text(encoding="utf-8"))
    errors = summary["errors"]
    assert len(errors) == 30, errors
    assert [int(re.match(r"b\.jsonl:(\d+):", e).group(1)) for e in errors] == bad_lines, errors
    # listed after the summary: the first 20, not the rest
    stripped = {ln.strip() for ln in err_lines} | {ln.strip() for ln in stdout.splitlines()}
    assert all(e in stripped for e in errors[:20]), stderr
    assert not any(e in stripped for e in errors[20:]), stderr

    closing = closing_line(stdout)
    assert re.match(r"wrote 90 records to out\.jsonl \(", closing), closing
    assert "; 30 bad records skipped" in closing, closing
    assert len(records(tmp_path / "out.jsonl")) == 90


def test_fewer_than_21_duplicates_are_all_printed_with_no_more_line_and_no_note(tmp_path, referee_cli):
    dup_jsonl(tmp_path / "t.jsonl", unique=30, repeats=7)
    rc, stdout, stderr = audit(referee_cli, tmp_path, "t.jsonl", extra=["--summary-json", "s.json"])
    assert rc == 0, stderr
    printed = dup_warnings(stderr)
    assert len(printed) == 7, stderr
    assert [parse_dup(ln[len(PREFIX):])[0] for ln in printed] == \
        [expected_repeat(k, "t.jsonl", unique=30) for k in range(7)], stderr
    assert "more warnings of this kind" not in stderr, stderr
    assert "not printed" not in stderr, stderr
    summary = json.loads((tmp_path / "s.json").read_text(encoding="utf-8"))
    assert summary["duplicates"] == 7
    assert summary.get("warnings_not_printed", []) == [], summary
    assert "; 7 duplicate run_ids" in closing_line(stdout), stdout
    assert len(records(tmp_path / "out.jsonl")) == 30
