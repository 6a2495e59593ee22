"""A file that is no text at all (random bytes, gzip, a zip) named like a trace is one bad record that says so.

Black-box, through the CLI: one line naming the file and what to do (decompress it first, for gzip), never a
line of "invalid JSON" per newline byte; the other inputs of the audit still audit; a Latin-1 file and a file
with a NUL-filled tail are still read as text.
"""

from __future__ import annotations

import gzip
import io
import json
import random
import zipfile

import pytest


def good(i: int) -> str:
    return json.dumps({"trace_version": 1, "run_id": f"ok{i}", "task": "Delete the note named a.md",
                       "steps": [{"action": {"name": "delete_note", "args": {"name": "a.md"}},
                                  "observation": {"text": "deleted a.md"}}], "report": "Done, deleted a.md."})


def _random() -> bytes:
    rng = random.Random(0)
    return bytes(rng.getrandbits(8) for _ in range(4096))


def _gzip() -> bytes:
    return gzip.compress(("\n".join(good(i) for i in range(50)) + "\n").encode())


def _zip() -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("t.jsonl", "\n".join(good(i) for i in range(50)) + "\n")
    return buf.getvalue()


CASES = {"random": (_random, "binary data"), "gzip": (_gzip, "gzip-compressed data): decompress it first"),
         "zip": (_zip, "a zip archive): unpack it first")}


@pytest.mark.parametrize("workers", ["1", "2"])
@pytest.mark.parametrize("kind", list(CASES))
def test_a_binary_file_is_one_line_naming_it_and_the_audit_goes_on(tmp_path, referee_cli, kind, workers):
    make, said = CASES[kind]
    (tmp_path / "bin.jsonl").write_bytes(make())
    (tmp_path / "ok.jsonl").write_text(good(1) + "\n" + good(2) + "\n")
    rc, _, err = referee_cli("audit", "bin.jsonl", "ok.jsonl", "--out", "a.jsonl", "--workers", workers,
                             "--no-progress", "--show", "none", cwd=tmp_path)
    assert "internal error" not in err and "Traceback" not in err, err
    assert rc == 1  # one record skipped
    audited = [json.loads(ln)["run_id"] for ln in (tmp_path / "a.jsonl").read_text().splitlines()]
    assert audited == ["ok1", "ok2"]
    warned = [ln for ln in err.splitlines() if ln.startswith("referee: warning:")]
    assert len(warned) == 1, err
    assert warned[0].startswith("referee: warning: skipped record: bin.jsonl:1: not a text file (")
    assert said in warned[0], warned[0]
    assert "invalid JSON" not in err


def test_text_with_odd_bytes_is_still_text(tmp_path, referee_cli):
    # Latin-1 is read as U+FFFD with its note; a NUL-filled tail (a crash) costs its own line only
    (tmp_path / "latin.jsonl").write_bytes(good(1).replace("a.md", "caf\u00e9.md").encode("latin-1") + b"\n")
    (tmp_path / "tail.jsonl").write_bytes((good(2) + "\n" + good(3) + "\n").encode() + bytes(2000))
    rc, _, err = referee_cli("audit", "latin.jsonl", "tail.jsonl", "--out", "a.jsonl", "--workers", "1",
                             "--no-progress", "--show", "none", "--on-error", "skip", cwd=tmp_path)
    assert rc == 0 and "not a text file" not in err, err
    audited = [json.loads(ln)["run_id"] for ln in (tmp_path / "a.jsonl").read_text().splitlines()]
    assert audited == ["ok1", "ok2", "ok3"]
    assert "latin.jsonl: 4 bytes that are not UTF-8 were read as U+FFFD" in err  # one é in each of 4 places
