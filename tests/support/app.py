"""A small real web app for tests: notes in SQLite behind a JSON API (stdlib only).

Run it as a process (this is what plans' `app.start` does)::

    python tests/support/app.py --port 8123 --db /tmp/notes.db [--pidfile F] [--not-ready]

Routes (all JSON unless noted):

- ``GET  /health``                       200 ``{"ok": true}`` (503 with ``--not-ready``)
- ``GET  /``                             200 text/html listing the note titles
- ``GET  /api/notes[?title=T]``          200 list of notes
- ``POST /api/notes``                    body ``{"title", "body"?, "tags"?: [..]}`` -> 201 the note
- ``GET  /api/notes/<id>``               200 the note, 404 ``{"error": "not found"}``
- ``GET  /api/notes/by-title/<title>``   same, looked up by title (URL-quoted)
- ``DELETE /api/notes/<id>`` and ``DELETE /api/notes/by-title/<title>``   204 / 404
- ``GET  /api/session``                  200 with secret ``Set-Cookie``, ``Authorization``, ``Cookie``
  response headers (values in SECRET_HEADER_VALUES) and a harmless ``X-Visible: yes``
- ``GET  /api/status/<code>``            answers with that status and ``{"status": code}``

A note is ``{"id": int, "title": str, "body": str, "tags": [str]}``. The DB file is created
(table ``notes(id INTEGER PRIMARY KEY, title TEXT, body TEXT, tags TEXT)``) if absent, so a
test may seed it before starting the app. ``--pidfile`` gets the process id once listening,
so a test can check that the runner stopped the app.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sqlite3
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, unquote, urlsplit

SECRET_HEADER_VALUES = {
    "Set-Cookie": "sid=SECRETCOOKIE-9f3a1c; HttpOnly",
    "Authorization": "Bearer SECRETTOKEN-77d2e0",
    "Cookie": "session=SECRETSESSION-5b8e44",
}

SCHEMA = ("CREATE TABLE IF NOT EXISTS notes (id INTEGER PRIMARY KEY, title TEXT NOT NULL, "
          "body TEXT NOT NULL DEFAULT '', tags TEXT NOT NULL DEFAULT '[]')")


def init_db(path: str) -> None:
    """Create the notes table in the SQLite file at `path` (idempotent)."""
    with sqlite3.connect(path) as conn:
        conn.execute(SCHEMA)


def _row(r) -> dict:
    return {"id": r[0], "title": r[1], "body": r[2], "tags": json.loads(r[3] or "[]")}


class Handler(BaseHTTPRequestHandler):
    server_version = "referee-test-app/1"
    db_path = ""
    lock = threading.Lock()
    ready = True

    def log_message(self, *args) -> None:  # keep test output quiet
        pass

    # -- helpers --
    def _db(self) -> sqlite3.Connection:
        return sqlite3.connect(self.db_path, timeout=10)

    def _send(self, status: int, payload=None, *, headers: dict | None = None, ctype="application/json") -> None:
        if payload is None:
            data = b""
        elif isinstance(payload, (bytes, str)):
            data = payload.encode() if isinstance(payload, str) else payload
        else:
            data = json.dumps(payload).encode()
        self.send_response(status)
        if data or status != 204:
            self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        if data:
            self.wfile.write(data)

    def _find(self, rest: str):
        with self._db() as conn:
            if rest.startswith("by-title/"):
                cur = conn.execute("SELECT id, title, body, tags FROM notes WHERE title = ? ORDER BY id LIMIT 1",
                                   (unquote(rest[len("by-title/"):]),))
            else:
                try:
                    nid = int(rest)
                except ValueError:
                    return None
                cur = conn.execute("SELECT id, title, body, tags FROM notes WHERE id = ?", (nid,))
            r = cur.fetchone()
        return _row(r) if r else None

    # -- routes --
    def do_GET(self) -> None:  # noqa: N802
        parts = urlsplit(self.path)
        path = parts.path
        if path == "/health":
            return self._send(200, {"ok": True}) if self.ready else self._send(503, {"ok": False})
        if path == "/":
            with self._db() as conn:
                titles = [r[0] for r in conn.execute("SELECT title FROM notes ORDER BY id")]
            items = "".join(f"<li>{t}</li>" for t in titles)
            return self._send(200, f"<html><body><h1>Notes</h1><ul>{items}</ul></body></html>", ctype="text/html")
        if path == "/api/session":
            return self._send(200, {"user": "tester"}, headers={**SECRET_HEADER_VALUES, "X-Visible": "yes"})
        if path.startswith("/api/status/"):
            try:
                code = int(path.rsplit("/", 1)[1])
            except ValueError:
                return self._send(400, {"error": "bad code"})
            return self._send(code, {"status": code})
        if path == "/api/notes":
            title = parse_qs(parts.query).get("title", [None])[0]
            with self._db() as conn:
                if title is None:
                    rows = conn.execute("SELECT id, title, body, tags FROM notes ORDER BY id").fetchall()
                else:
                    rows = conn.execute("SELECT id, title, body, tags FROM notes WHERE title = ? ORDER BY id",
                                        (title,)).fetchall()
            return self._send(200, [_row(r) for r in rows])
        if path.startswith("/api/notes/"):
            note = self._find(path[len("/api/notes/"):])
            return self._send(200, note) if note else self._send(404, {"error": "not found"})
        return self._send(404, {"error": "no such route"})

    def do_POST(self) -> None:  # noqa: N802
        path = urlsplit(self.path).path
        if path != "/api/notes":
            return self._send(404, {"error": "no such route"})
        length = int(self.headers.get("Content-Length") or 0)
        try:
            data = json.loads(self.rfile.read(length) or b"{}")
            title = data["title"]
            if not isinstance(title, str) or not title:
                raise ValueError
        except (ValueError, KeyError, TypeError):
            return self._send(400, {"error": "need a JSON object with a non-empty 'title'"})
        body = str(data.get("body", ""))
        tags = [str(t) for t in data.get("tags", [])]
        with self.lock, self._db() as conn:
            cur = conn.execute("INSERT INTO notes (title, body, tags) VALUES (?, ?, ?)",
                               (title, body, json.dumps(tags)))
            nid = cur.lastrowid
        return self._send(201, {"id": nid, "title": title, "body": body, "tags": tags})

    def do_DELETE(self) -> None:  # noqa: N802
        path = urlsplit(self.path).path
        if not path.startswith("/api/notes/"):
            return self._send(404, {"error": "no such route"})
        note = self._find(path[len("/api/notes/"):])
        if not note:
            return self._send(404, {"error": "not found"})
        with self.lock, self._db() as conn:
            conn.execute("DELETE FROM notes WHERE id = ?", (note["id"],))
        return self._send(204)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--db", required=True, help="SQLite file (created if absent)")
    ap.add_argument("--pidfile", help="write the process id here once listening")
    ap.add_argument("--not-ready", action="store_true", help="/health answers 503 forever")
    args = ap.parse_args(argv)

    init_db(args.db)
    Handler.db_path = args.db
    Handler.ready = not args.not_ready
    server = ThreadingHTTPServer((args.host, args.port), Handler)
    server.daemon_threads = True

    def _stop(signum, frame):  # SIGTERM: shut down cleanly
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, _stop)
    if args.pidfile:
        tmp = args.pidfile + ".tmp"
        with open(tmp, "w") as fh:
            fh.write(str(os.getpid()))
        os.replace(tmp, args.pidfile)
    try:
        server.serve_forever(poll_interval=0.1)
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
