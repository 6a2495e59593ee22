"""A run directory as the runner wrote it before capture records had a schema (record_version 1).

Written by hand, file by file, with the old dict shapes: records without `record_version` or
`kind`, a sql record with a `capture_error` key inside `<name>.json`, a screen capture's failure
as `<name>.error.json` holding only `{"capture_error": ...}`, claims without `claim_version`.
Kept free of referee imports so the same builder can be run against older code.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

PLAN = """name: legacy
steps:
  - id: web
    do: Create note alpha.
    validators:
      - {kind: http_status_eq, evidence: note, expected: 200}
      - {kind: json_path_eq, evidence: note, path: $.title, expected: alpha}
      - {kind: http_body_contains, evidence: note, text: alpha}
  - id: down
    do: Look at a server that is gone.
    validators:
      - {kind: http_status_eq, evidence: gone, expected: 200}
  - id: cmd
    do: Run things.
    validators:
      - {kind: command_exit_code, evidence: listing, expected: 3}
      - {kind: text_contains, evidence: listing, text: out-line}
      - {kind: command_exit_code, evidence: screen}
  - id: rows
    do: Store rows.
    validators:
      - {kind: sql_row_present, evidence: notes}
      - {kind: json_path_eq, evidence: notes, path: "$.rows[0].title", expected: alpha}
      - {kind: ddb_row_present, evidence: item}
      - {kind: text_contains, evidence: item, text: green}
  - id: broken
    do: A database that refuses us, and no browser.
    validators:
      - {kind: sql_row_present, evidence: refused}
      - {kind: ocr_contains, evidence: shot, text: hello}
  - id: files
    do: Write report.md.
    validators:
      - {kind: file_exists, path: made/report.md}
  - id: tidy
    do: Make it tidy.
    capture:
      - {kind: command, name: listing, command: "ls"}
"""

T = "2026-01-01T00:00:00.000Z"

# (step, file name, capture, kind, content (dict -> JSON, bytes -> as is), primary, error)
FILES = [
    ("web", "note.json", "note", "http",
     {"url": "http://127.0.0.1:5000/api/notes/1", "method": "GET", "status": 200,
      "headers": {"content-type": "application/json", "set-cookie": "[redacted]"},
      "body": "{\"id\": 1, \"title\": \"alpha\"}"}, True, None),
    ("down", "gone.json", "gone", "http",
     {"url": "http://127.0.0.1:9/x", "method": "GET", "status": None, "headers": {}, "body": "",
      "error": "ConnectError: [Errno 111] Connection refused"}, True, None),
    ("cmd", "listing.json", "listing", "command",
     {"command": "echo out-line; exit 3", "exit_code": 3, "stdout": "out-line\n", "stderr": "", "timed_out": False},
     True, None),
    ("cmd", "home.png", "screen", "command", b"\x89PNG\r\n\x1a\nnot really", True, None),
    ("cmd", "screen.json", "screen", "command",
     {"command": "adb exec-out screencap -p", "exit_code": 0, "stdout": "", "stderr": "", "timed_out": False,
      "stdout_file": "home.png"}, False, None),
    ("rows", "notes.json", "notes", "sql",
     {"url": "sqlite:///app.db", "query": "select title from notes", "columns": ["title"],
      "rows": [{"title": "alpha"}]}, True, None),
    ("rows", "item.json", "item", "ddb",
     {"table": "items", "key": {"pk": "k1"}, "items": [{"pk": "k1", "color": "green"}]}, True, None),
    ("broken", "refused.json", "refused", "sql",
     {"url": "postgresql://u:***@127.0.0.1:1/db", "query": "select 1", "columns": [], "rows": [],
      "capture_error": "OperationalError: connection refused"}, True, "OperationalError: connection refused"),
    ("broken", "shot.error.json", "shot", "screenshot",
     {"capture_error": "no browser page: screen captures need `actor: {kind: browser}`"}, True,
     "no browser page: screen captures need `actor: {kind: browser}`"),
    ("files", "_v0_file_exists.json", "_v0_file_exists", "file",
     {"path": "made/report.md", "resolved": "/work/made/report.md", "exists": True, "size": 9,
      "copy": "_v0_file_exists.data/report.md"}, True, None),
    ("files", "_v0_file_exists.data/report.md", "_v0_file_exists", "file", b"# Report\n", False, None),
    ("tidy", "listing.json", "listing", "command",
     {"command": "ls", "exit_code": 0, "stdout": "a.txt\nb.txt\n", "stderr": "", "timed_out": False}, True, None),
]

CLAIMS = {"web": {"pass": True, "note": "Created it.", "evidence": []},
          "down": {"pass": True, "note": "Looked.", "evidence": []},
          "cmd": None,
          "rows": {"pass": False, "note": "Not sure.", "evidence": []},
          "broken": {"pass": True, "note": "", "evidence": []},
          "files": {"pass": True, "note": "Wrote it.", "evidence": ["report.md"]},
          "tidy": {"pass": True, "note": "The list looks tidy.", "evidence": []}}


def write_old_run_dir(run_dir: Path) -> Path:
    """Write the legacy run directory into `run_dir` (created) and return it."""
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "plan.yaml").write_text(PLAN)
    entries = []
    for step, name, capture, kind, content, primary, error in FILES:
        rel = f"evidence/{step}/after/{name}"
        path = run_dir / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        data = content if isinstance(content, bytes) else (json.dumps(content, indent=2) + "\n").encode()
        path.write_bytes(data)
        entries.append({"path": rel, "step": step, "phase": "after", "captured_by": "runner", "capture": capture,
                        "kind": kind, "sha256": hashlib.sha256(data).hexdigest(), "size": len(data), "time": T,
                        "primary": primary, "error": error})
    steps = {s: {"status": "done", "started": T, "finished": T, "actor_exit": 0, "actor_timed_out": False,
                 "actor_error": None} for s in ("web", "down", "cmd", "rows", "broken", "files", "tidy")}
    manifest = {"manifest_version": 1, "plan": "legacy", "actor": "agent", "error": None, "started": T,
                "finished": T, "steps": steps, "files": entries}
    (run_dir / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    (run_dir / "claims.json").write_text(json.dumps(CLAIMS))
    return run_dir
