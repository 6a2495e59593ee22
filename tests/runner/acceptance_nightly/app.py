"""The app under test of the nightly acceptance tests: a JSON API over sqlite and one HTML page."""

import argparse
import html
import json
import os
import sqlite3
import sys
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

TICKS: dict[str, int] = {}


def _args() -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--db", required=True)
    parser.add_argument("--title", default=os.environ.get("APP_TITLE", "Notes"))
    parser.add_argument("--need", default="", help="a file the build must have made")
    return parser.parse_args()


ARGS = argparse.Namespace()


def _prepare() -> None:
    if ARGS.need and not os.path.exists(ARGS.need):
        sys.exit(f"app: {ARGS.need} is missing: was the app built?")
    if not ARGS.db:
        sys.exit("app: --db is empty")
    # Every night starts from an empty database, as a fresh deployment would.
    if os.path.exists(ARGS.db):
        os.remove(ARGS.db)
    with sqlite3.connect(ARGS.db) as db:
        db.execute("create table notes (title text primary key, done integer not null default 0)")
    os.chmod(ARGS.db, 0o644)


class Handler(BaseHTTPRequestHandler):
    def log_message(self, fmt: str, *args: object) -> None:  # quiet: app.log stays short
        return

    def _send(self, status: int, body: object, ctype: str = "application/json") -> None:
        data = (body if isinstance(body, str) else json.dumps(body)).encode()
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _titles(self) -> list[str]:
        with sqlite3.connect(ARGS.db) as db:
            return [row[0] for row in db.execute("select title from notes order by title")]

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        path = urllib.parse.unquote(self.path)
        if path == "/health":
            self._send(200, {"ok": True})
        elif path == "/":
            items = "".join(f"<li>{html.escape(t)}</li>" for t in self._titles())
            page = (
                f"<html><head><title>{html.escape(ARGS.title)}</title></head>"
                f"<body><h1>{html.escape(ARGS.title)}</h1><ul>{items}</ul></body></html>"
            )
            self._send(200, page, "text/html; charset=utf-8")
        elif path == "/api/long":  # a long, many-line error page: reasons quote one short line of it
            self._send(404, "Not Found\n\tat line two\n" + "x" * 400, "text/plain; charset=utf-8")
        elif path == "/api/notes":
            self._send(200, {"notes": self._titles(), "tags": []})
        elif path.startswith("/api/notes/"):
            title = path[len("/api/notes/") :]
            if title in self._titles():
                self._send(200, {"title": title, "done": False})
            else:
                self._send(404, {"error": "not found"})
        else:
            self._send(404, {"error": "not found"})

    def do_POST(self) -> None:  # noqa: N802
        path = urllib.parse.unquote(self.path)
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        if path == "/api/notes":
            with sqlite3.connect(ARGS.db) as db:
                db.execute("insert or ignore into notes (title) values (?)", (body["title"],))
            self._send(201, {"title": body["title"]})
        elif path.startswith("/api/tick/"):
            key = path[len("/api/tick/") :]
            TICKS[key] = TICKS.get(key, 0) + 1
            self._send(200, {"n": TICKS[key]})
        else:
            self._send(404, {"error": "not found"})


if __name__ == "__main__":
    ARGS = _args()
    _prepare()
    ThreadingHTTPServer(("127.0.0.1", ARGS.port), Handler).serve_forever()
