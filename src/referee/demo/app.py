"""The demo app under test: a todo list with a JSON API, an HTML page and a SQLite database (stdlib only)."""

from __future__ import annotations

import argparse
import csv
import html
import json
import sqlite3
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs

SCHEMA = ("CREATE TABLE IF NOT EXISTS todos "
          "(id INTEGER PRIMARY KEY AUTOINCREMENT, title TEXT NOT NULL, done INTEGER NOT NULL DEFAULT 0)")


def _todo(row: sqlite3.Row) -> dict:
    return dict(row) | {"done": bool(row["done"])}


class TodoStore:
    def __init__(self, db: Path) -> None:
        self.db = db
        self.lock = threading.Lock()
        with self.conn() as c:
            c.execute(SCHEMA)

    def conn(self) -> sqlite3.Connection:
        c = sqlite3.connect(self.db)
        c.row_factory = sqlite3.Row
        return c

    def all(self) -> list[dict]:
        with self.conn() as c:
            return [_todo(r) for r in c.execute("SELECT * FROM todos ORDER BY id")]

    def get(self, tid: int) -> dict | None:
        with self.conn() as c:
            r = c.execute("SELECT * FROM todos WHERE id = ?", (tid,)).fetchone()
        return _todo(r) if r else None

    def add(self, title: str) -> dict:
        with self.lock, self.conn() as c:
            cur = c.execute("INSERT INTO todos (title) VALUES (?)", (title,))
            # read back in the same transaction: a delete in between cannot make the new todo vanish
            return _todo(c.execute("SELECT * FROM todos WHERE id = ?", (cur.lastrowid,)).fetchone())

    def set_done(self, tid: int) -> bool:
        with self.lock, self.conn() as c:
            return c.execute("UPDATE todos SET done = 1 WHERE id = ?", (tid,)).rowcount > 0

    def delete(self, tid: int) -> bool:
        with self.lock, self.conn() as c:
            return c.execute("DELETE FROM todos WHERE id = ?", (tid,)).rowcount > 0


PAGE = """<!doctype html><html><head><meta charset="utf-8"><title>Todo</title>
<style>body{{font-family:sans-serif;font-size:22px;margin:2em}} li{{margin:.3em 0}}
.done{{text-decoration:line-through}}</style>
</head><body><h1>{heading}</h1>
<form method="post" action="/add"><label>New todo <input name="title" aria-label="New todo"></label>
<button type="submit">Add</button></form>
<ul aria-label="Todos">{items}</ul><p>{count} items</p></body></html>"""


def make_handler(store: TodoStore, export_dir: Path):
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, fmt, *args):  # quiet: the runner keeps app.log small
            pass

        def send(self, code: int, body, ctype: str = "application/json") -> None:
            if isinstance(body, bytes):
                data = body
            else:
                data = (json.dumps(body) if ctype == "application/json" else body).encode()
            self.send_response(code)
            self.send_header("Content-Type", ctype + ("; charset=utf-8" if "json" in ctype or "html" in ctype else ""))
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def body(self) -> bytes:
            n = int(self.headers.get("Content-Length") or 0)
            return self.rfile.read(n) if n else b""

        def _id(self, parts: list[str]) -> int | None:
            try:
                return int(parts[2])
            except (IndexError, ValueError):
                return None

        def do_GET(self):
            parts = self.path.split("?")[0].strip("/").split("/")
            if self.path == "/health":
                return self.send(200, {"ok": True})
            if parts == [""]:
                todos = store.all()
                items = "".join(f'<li class="{"done" if t["done"] else ""}">{html.escape(t["title"])}</li>'
                                for t in todos)
                return self.send(200, PAGE.format(heading="My todos", items=items, count=len(todos)), "text/html")
            if parts[:2] == ["api", "todos"] and len(parts) == 2:
                todos = store.all()
                return self.send(200, {"count": len(todos), "todos": todos})
            if parts[:2] == ["api", "todos"] and len(parts) == 3:
                t = store.get(self._id(parts) or -1)
                return self.send(200, t) if t else self.send(404, {"error": "no such todo"})
            self.send(404, {"error": "not found"})

        def do_POST(self):
            parts = self.path.strip("/").split("/")
            if parts == ["add"]:  # the HTML form
                title = parse_qs(self.body().decode()).get("title", [""])[0].strip()
                if title:
                    store.add(title)
                self.send_response(303)
                self.send_header("Location", "/")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            if parts == ["api", "todos"]:
                try:
                    title = str(json.loads(self.body() or b"{}").get("title", "")).strip()
                except ValueError:
                    return self.send(400, {"error": "body must be JSON"})
                if not title:
                    return self.send(400, {"error": "title is required"})
                return self.send(201, store.add(title))
            if parts[:2] == ["api", "todos"] and len(parts) == 4 and parts[3] == "done":
                ok = store.set_done(self._id(parts) or -1)
                return self.send(200 if ok else 404, {"ok": ok})
            if parts == ["api", "export"]:
                path = export_dir / "todos.csv"
                with open(path, "w", newline="") as fh:
                    w = csv.writer(fh)
                    w.writerow(["id", "title", "done"])
                    for t in store.all():
                        w.writerow([t["id"], t["title"], int(t["done"])])
                return self.send(200, {"path": str(path)})
            self.send(404, {"error": "not found"})

        def do_DELETE(self):
            parts = self.path.strip("/").split("/")
            if parts[:2] == ["api", "todos"] and len(parts) == 3:
                ok = store.delete(self._id(parts) or -1)
                return self.send(204 if ok else 404, b"" if ok else {"error": "no such todo"})
            self.send(404, {"error": "not found"})

    return Handler


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description="referee's demo todo app")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--db", type=Path, required=True)
    ap.add_argument("--export-dir", type=Path, default=None)
    args = ap.parse_args(argv)
    args.db.parent.mkdir(parents=True, exist_ok=True)
    handler = make_handler(TodoStore(args.db), args.export_dir or args.db.parent)
    server = ThreadingHTTPServer(("127.0.0.1", args.port), handler)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
