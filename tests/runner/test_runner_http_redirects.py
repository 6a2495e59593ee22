"""An http capture follows redirects on the app's own origin only: a redirect to another host is recorded as the
answer (status and Location), and nothing is sent there. The capture followed every redirect, to any host, and
recorded the other host's connection error under the app's URL (found by a black-box tester)."""

from __future__ import annotations

import json
import socket
import sys
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

APP = r'''
import sys
from http.server import BaseHTTPRequestHandler, HTTPServer
port, other = sys.argv[1], sys.argv[2]
class H(BaseHTTPRequestHandler):
    def do_GET(self):
        moves = {"/redir": "/state", "/away": f"http://127.0.0.2:{other}/state", "/loop": "/loop"}
        if self.path in moves:
            self.send_response(302)
            self.send_header("Location", moves[self.path])
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        body = b"ok" if self.path == "/health" else b"state: done"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass
HTTPServer(("127.0.0.1", int(port)), H).serve_forever()
'''


def _other_host() -> tuple[HTTPServer, list[str]]:
    hits: list[str] = []

    class Other(BaseHTTPRequestHandler):
        def do_GET(self):
            hits.append(self.path)
            self.send_response(200)
            self.send_header("Content-Length", "5")
            self.end_headers()
            self.wfile.write(b"other")

        def log_message(self, *a):
            pass

    with socket.socket() as s:  # a free port on 127.0.0.2 (loopback)
        s.bind(("127.0.0.2", 0))
        port = s.getsockname()[1]
    server = HTTPServer(("127.0.0.2", port), Other)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, hits


def test_redirects_are_followed_on_the_apps_origin_only(tmp_path, run_plan):
    other, hits = _other_host()
    try:
        app = tmp_path / "app.py"
        app.write_text(APP)
        caps = [{"kind": "http", "name": n, "url": f"/{n}"} for n in ("redir", "away", "loop")]
        run = run_plan({"name": "redirects", "app": {"start": f"{sys.executable} {app} {{port}} {other.server_port}",
                                                     "url": "http://127.0.0.1:{port}", "ready": "/health"},
                        "steps": [{"id": "s", "do": "look", "capture": caps, "validators": [
                            {"kind": "http_body_contains", "evidence": "redir", "text": "state: done"},
                            {"kind": "http_status_eq", "evidence": "away", "expected": 302},
                            {"kind": "http_status_eq", "evidence": "loop", "expected": 302}]}]}, agent="true")
        assert run.verdict("s") == "PASS", run.explain()
        away = json.loads((run.run_dir / "evidence/s/after/away.json").read_text())
        assert away["status"] == 302 and away["headers"]["location"].startswith("http://127.0.0.2:"), away
        assert hits == [], f"the capture sent requests to another host: {hits}"
    finally:
        other.shutdown()
