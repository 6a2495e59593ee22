"""A damaged line in `--out` (issue 30 acceptance finding 3): the resume warns of it once and leaves it, and the
reading at the end of the audit (summary, `--show`, `--summary-json`) passes over it the same way. Before, a line
of `[` x 5000 or a deeply nested object made the audit warn, audit every run, then exit 2 "not an audit record"."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from referee.audit.run.auditfile import AuditFileError, iter_records
from tests.conftest import base_cli_env, run_cli

# a line of --out that holds no run_id: as written there (bytes)
DAMAGED = {
    "brackets-5000": b"[" * 5000,
    "object-5000-deep": b'{"a":' * 5000 + b"1" + b"}" * 5000,
    "array": b"[1, 2]",
    "string": b'"text"',
    "not-json": b"half a record, hand-edited",
    "no-run-id": b'{"record_version": 5, "disposition": "pass"}',
    "run-id-a-number": b'{"run_id": 7}',
    "not-utf8": b"\xff\xfe{\x00",
}


def _trace(rid: str) -> dict:
    return {"trace_version": 1, "run_id": rid, "task": "Delete the file notes.txt",
            "steps": [{"action": {"name": "delete_file", "args": {"path": "notes.txt"}},
                       "observation": {"text": "deleted notes.txt"}}],
            "report": "Done - notes.txt was deleted."}


def _audit(tmp_path: Path, *extra: str):
    return run_cli(["audit", "t.jsonl", "--out", "audit.jsonl", "--workers", "1", "--no-progress", "--show", "all",
                    "--summary-json", "s.json", *extra], cwd=tmp_path, env=base_cli_env(), timeout=120)


@pytest.mark.parametrize("where", ["first", "between"])
@pytest.mark.parametrize("bad", sorted(DAMAGED))
def test_a_damaged_out_line_is_warned_of_once_left_and_passed_over_at_the_end(tmp_path, bad, where):
    (tmp_path / "t.jsonl").write_text("".join(json.dumps(_trace(r)) + "\n" for r in ("r1", "r2", "r3")))
    out = tmp_path / "audit.jsonl"
    if where == "between":  # r1 audited, then the damaged line: the resume audits r2 and r3
        rc, _, err = run_cli(["audit", "t.jsonl", "--out", "audit.jsonl", "--workers", "1", "--no-progress"],
                             cwd=tmp_path, env=base_cli_env(), timeout=120)
        assert rc == 0, err
        first = out.read_bytes().splitlines(keepends=True)[0]
        out.write_bytes(first + DAMAGED[bad] + b"\n")
        line = 2
    else:
        out.write_bytes(DAMAGED[bad] + b"\n")
        line = 1
    rc, stdout, err = _audit(tmp_path)
    assert "Traceback" not in err and "internal error" not in err, err[-2000:]
    assert rc == 0, err[-2000:]
    assert out.read_bytes().splitlines()[line - 1] == DAMAGED[bad]  # left as it is
    assert err.count("no audit record (damaged?)") == 1 and f"line {line}:" in err, err[-2000:]
    summary = json.loads((tmp_path / "s.json").read_text())
    assert summary["records"] == 3
    listed = sorted(ln.split()[0] for ln in stdout.splitlines() if ln.startswith("  r") and "[" in ln)
    assert listed == ["r1", "r2", "r3"], stdout  # --show all: every run, and no line for the damaged one

    # a second resume: nothing to audit, the same one warning, the same summary
    rc, stdout, err = _audit(tmp_path)
    assert rc == 0, err[-2000:]
    assert err.count("no audit record (damaged?)") == 1, err[-2000:]
    assert "wrote 0 records" in stdout and json.loads((tmp_path / "s.json").read_text())["records"] == 3


def test_iter_records_raises_on_a_damaged_line_unless_asked_to_pass_over_it(tmp_path):
    """`referee replay`, `show` and `eval` still name the line: only the audit that warned of it passes it over."""
    out = tmp_path / "audit.jsonl"
    (tmp_path / "t.jsonl").write_text(json.dumps(_trace("r1")) + "\n")
    rc, _, err = run_cli(["audit", "t.jsonl", "--out", "audit.jsonl", "--no-progress"], cwd=tmp_path,
                         env=base_cli_env(), timeout=120)
    assert rc == 0, err
    good = out.read_bytes()
    for bad in DAMAGED.values():
        out.write_bytes(bad + b"\n" + good)
        with pytest.raises(AuditFileError, match="line 1"):
            list(iter_records(out))
        assert [(n, r.run_id) for n, r in iter_records(out, skip_damaged=True)] == [(2, "r1")]
    # a line with a run_id that is no audit record is still an error, skip_damaged or not: it is no damage the
    # resume left (a run of this input is audited again and supersedes it; another run's is the user's to mend)
    out.write_bytes(b'{"run_id": "zz", "disposition": "maybe"}\n' + good)
    with pytest.raises(AuditFileError, match="not an audit record"):
        list(iter_records(out, skip_damaged=True))
