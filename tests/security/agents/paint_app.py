"""A small web app behind a login, for the painted-page tests: only a signed-in session sees its todos.

    python paint_app.py --port 8123

- ``GET /health``: 200.
- ``GET /login``: a form (user name, "Sign in"); ``POST /login`` sets an HttpOnly ``sid`` cookie, 303 to ``/``.
- ``GET /``: "Please sign in" without a session; with one, "Todos of <user>", the session's todos, and a form
  ("New todo", "Add") that ``POST /add``s one (303 to ``/``).

State lives in this process's memory (the server's state is the truth the runner must read).
"""

from __future__ import annotations

import argparse
import html
import secrets
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

SESSIONS: dict[str, str] = {}  # sid -> user
TODOS: dict[str, list[str]] = {}  # user -> titles
LOCK = threading.Lock()

PAGE = ("<!doctype html><html><head><meta charset='utf-8'><title>Todos</title>"
        "<style>body{{font-family:sans-serif;font-size:28px;margin:1.5em}}</style></head><body>{body}</body></html>")


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args) -> None:
        pass

    def _page(self, body: str, status: int = 200, headers: dict | None = None) -> None:
        data = PAGE.format(body=body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def _redirect(self, to: str, headers: dict | None = None) -> None:
        self.send_response(303)
        self.send_header("Location", to)
        self.send_header("Content-Length", "0")
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()

    def _user(self) -> str | None:
        for part in (self.headers.get("Cookie") or "").split(";"):
            name, _, value = part.strip().partition("=")
            if name == "sid":
                with LOCK:
                    return SESSIONS.get(value)
        return None

    def _form(self) -> dict[str, str]:
        n = int(self.headers.get("Content-Length") or 0)
        return {k: v[0] for k, v in parse_qs(self.rfile.read(n).decode() if n else "").items()}

    def do_GET(self) -> None:  # noqa: N802
        parts = urlsplit(self.path)
        if parts.path == "/health":
            return self._page("ok")
        if parts.path == "/login":
            return self._page("<h1>Sign in</h1><form method='post' action='/login'><label>User "
                              "<input name='user' aria-label='User'></label> <button type='submit'>Sign in</button>"
                              "</form>")
        if parts.path == "/":
            user = self._user()
            if user is None:
                return self._page("<h1>Please sign in</h1><a href='/login'>Sign in</a>")
            with LOCK:
                items = "".join(f"<li>{html.escape(t)}</li>" for t in TODOS.get(user, []))
            return self._page(f"<h1>Todos of {html.escape(user)}</h1><ul aria-label='Todos'>{items}</ul>"
                              "<form method='post' action='/add'><label>New todo <input name='title' "
                              "aria-label='New todo'></label> <button type='submit'>Add</button></form>")
        self._page("<h1>Not found</h1>", 404)

    def do_POST(self) -> None:  # noqa: N802
        path = urlsplit(self.path).path
        form = self._form()
        if path == "/login" and form.get("user"):
            sid = secrets.token_hex(16)
            with LOCK:
                SESSIONS[sid] = form["user"]
            return self._redirect("/", {"Set-Cookie": f"sid={sid}; HttpOnly; Path=/; SameSite=Lax"})
        if path == "/add":
            user = self._user()
            if user is None:
                return self._page("<h1>Please sign in</h1>", 403)
            if form.get("title"):
                with LOCK:
                    TODOS.setdefault(user, []).append(form["title"])
            return self._redirect("/")
        self._page("<h1>Bad request</h1>", 400)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    args = ap.parse_args()
    ThreadingHTTPServer(("127.0.0.1", args.port), Handler).serve_forever()


if __name__ == "__main__":
    main()
