"""A tiny todo app for the issue-29 acceptance tests.

It logs every request line to stderr (http.server's default), so a URL holding a secret
lands in the app's log. State lives in the server only (no client-side storage).
"""

import html
import json
import sys
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

TODOS: list[str] = []
HITS = {"item": 0}


class Handler(BaseHTTPRequestHandler):
    def _send(self, status, body, ctype="text/html; charset=utf-8", extra=()):
        data = body.encode()
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        for k, v in extra:
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        url = urllib.parse.urlsplit(self.path)
        if url.path == "/health":
            return self._send(200, "ok", "text/plain")
        if url.path == "/api/item":
            HITS["item"] += 1
            # an app that echoes what it was asked (the token too) in its body and a header
            q = urllib.parse.parse_qs(url.query)
            body = {"hits": HITS["item"], "todos": TODOS, "echo": q}
            token = (q.get("token") or [""])[0]
            return self._send(200, json.dumps(body), "application/json", [("X-Echo-Token", token)])
        if url.path == "/":
            items = "".join(f"<li>{html.escape(t)}</li>" for t in TODOS) or "<li>nothing yet</li>"
            page = (
                "<!doctype html><html><head><title>Todos</title></head><body>"
                "<h1>Todos</h1>"
                f"<ul id='todos'>{items}</ul>"
                "<form method='post' action='/add'>"
                "<label for='title'>New todo</label> <input id='title' name='title'>"
                "<button type='submit'>Add</button></form></body></html>"
            )
            return self._send(200, page)
        return self._send(404, "not found", "text/plain")

    def do_POST(self):
        url = urllib.parse.urlsplit(self.path)
        if url.path == "/add":
            n = int(self.headers.get("Content-Length") or 0)
            form = urllib.parse.parse_qs(self.rfile.read(n).decode())
            title = (form.get("title") or [""])[0].strip()
            if title:
                TODOS.append(title)
            return self._send(303, "", "text/plain", [("Location", "/")])
        return self._send(404, "not found", "text/plain")


def main():
    port = int(sys.argv[1])
    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    server.serve_forever()


if __name__ == "__main__":
    main()
