"""What reading a page the runner loads costs (docs/security-evidence.md, "Pages the runner loads").

Against a small loopback page: the runner's browser start; a screenshot of the agent's page (what captures read
before); the first capture from the capture browser (its launch included); a later phase's capture (new context,
page, load, screenshot); another capture of the same phase (the page is reused).
Run: python benchmarks/bench_capture_pages.py [--n 10] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from referee.runner.browser import BrowserSession  # noqa: E402

BODY = (b"<html><body style='font-size:28px'><h1>Todos</h1><ul>"
        + b"".join(b"<li>item %d</li>" % i for i in range(30)) + b"</ul></body></html>")


class _Page(BaseHTTPRequestHandler):
    def log_message(self, *args) -> None:
        pass

    def do_GET(self) -> None:  # noqa: N802
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(BODY)))
        self.end_headers()
        self.wfile.write(BODY)


def _timed(fn) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=10, help="repetitions of each timed capture")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Page)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/"
    t = time.perf_counter()
    sess = BrowserSession.start(cdp=True)
    start_s = time.perf_counter() - t
    try:
        sess.page.goto(url, wait_until="load")
        agent = [_timed(lambda: sess.page.screenshot()) for _ in range(args.n)]
        first = _timed(lambda: sess.fresh_page(url, 30, reuse=-1).screenshot())
        later = [_timed(lambda i=i: sess.fresh_page(url, 30, reuse=i).screenshot()) for i in range(args.n)]
        sess.fresh_page(url, 30, reuse="phase")
        same = [_timed(lambda: sess.fresh_page(url, 30, reuse="phase").screenshot()) for _ in range(args.n)]
    finally:
        sess.close()
        server.shutdown()
    figures = {"browser_start_s": round(start_s, 3),
               "agent_page_screenshot_ms": round(statistics.median(agent) * 1000),
               "first_capture_with_launch_s": round(first, 3),
               "later_phase_capture_ms": round(statistics.median(later) * 1000),
               "same_phase_capture_ms": round(statistics.median(same) * 1000)}
    for k, v in figures.items():
        print(f"{k}: {v}")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1) + "\n")


if __name__ == "__main__":
    main()
