"""The agent's own output as reports show it: the tails of `agent/<step>/stdout.txt` and `stderr.txt`.

Read only when the manifest lists the file, never through a link or from anything but a regular
file, capped, and checked against the manifest's hash (a file changed after the step is named as
such, not shown). Control characters, and whatever else XML 1.0 cannot hold, are shown as escapes,
so the same text is fit for an HTML page and for junit.xml.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from referee.core.fsutil import read_regular
from referee.errors import EvidenceError
from referee.grader.outcome import printable

SHOW_BYTES = 16 * 1024  # of each stream, in a report
READ_MAX = 2 * 1024 * 1024  # the runner keeps 1 MB; anything bigger was not written by it


@dataclass(frozen=True)
class Tail:
    """The end of one output stream of one step."""

    name: str  # stdout.txt | stderr.txt
    text: str  # the last SHOW_BYTES, printable; empty when nothing was written
    size: int  # bytes the agent wrote in all (the manifest's stdout_bytes/stderr_bytes), or the file's size
    shown: int  # bytes of it in `text`
    problem: str | None = None  # why it is not shown (missing, modified after the step, not a regular file)


def read_tail(run_dir: Path, files: list[dict[str, Any]], step_id: str, name: str, total: int | None = None,
              show: int = SHOW_BYTES) -> Tail | None:
    """The tail of `agent/<step>/<name>`, or None when the manifest does not list it (an older run)."""
    rel = f"agent/{step_id}/{name}"
    entry = next((f for f in files if isinstance(f, dict) and f.get("path") == rel), None)
    if entry is None or PurePosixPath(rel).is_absolute() or ".." in PurePosixPath(rel).parts:
        return None
    size = total if isinstance(total, int) else int(entry.get("size") or 0)
    try:
        data = read_regular(Path(run_dir) / rel, root=Path(run_dir), max_bytes=READ_MAX)
    except FileNotFoundError:
        return Tail(name, "", size, 0, "missing")
    except OSError as exc:
        return Tail(name, "", size, 0, f"unreadable: {exc.strerror or exc}")
    except EvidenceError as exc:  # a link, a FIFO, too big: named, never followed or waited on
        return Tail(name, "", size, 0, exc.message.split("; ")[0])
    if hashlib.sha256(data).hexdigest() != entry.get("sha256"):
        return Tail(name, "", size, 0, "modified after the step; not shown")
    cut = data[-show:]
    return Tail(name, printable(cut.decode("utf-8", errors="replace")), size, len(cut))


def step_tails(run_dir: Path, manifest: dict[str, Any], step_id: str) -> list[Tail]:
    """stdout then stderr of a step, those the manifest lists."""
    if not isinstance(manifest, dict):
        return []
    files = manifest.get("files") if isinstance(manifest.get("files"), list) else []
    rec = (manifest.get("steps") or {}).get(step_id) if isinstance(manifest.get("steps"), dict) else None
    rec = rec if isinstance(rec, dict) else {}
    out = []
    for name, key in (("stdout.txt", "stdout_bytes"), ("stderr.txt", "stderr_bytes")):
        tail = read_tail(run_dir, files or [], step_id, name, rec.get(key))
        if tail is not None:
            out.append(tail)
    return out


def size_text(n: int) -> str:
    """`0 B`, `812 B`, `1.5 KB`, `2.0 MB`.

    >>> size_text(812), size_text(1536), size_text(2 * 1024 * 1024)
    ('812 B', '1.5 KB', '2.0 MB')
    """
    if n < 1024:
        return f"{n} B"
    if n < 1024 * 1024:
        return f"{n / 1024:.1f} KB"
    return f"{n / 1024 / 1024:.1f} MB"
