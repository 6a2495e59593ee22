"""Fixtures for the screens tests: datasette (from PyPI) over a SQLite file, a Chromium per module, the journey run
(once per test session, shared by the xdist workers), and a tiny loopback server with a page that never finishes
loading."""

from __future__ import annotations

import asyncio
import fcntl
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import yaml

from tests.conftest import base_cli_env, free_port, run_cli, stop_process, wait_for_port, wait_http_ok

HERE = Path(__file__).resolve().parent
AGENT = HERE / "agents" / "cdp_agent.py"
PRODUCTS = [("Blue Widget", 9.5), ("Red Gadget", 12.0)]


def make_shop_db(path: Path) -> Path:
    """A SQLite file with one table, `products`, holding Blue Widget and Red Gadget."""
    with sqlite3.connect(path) as db:
        db.execute("create table products(id integer primary key, name text, price real)")
        db.executemany("insert into products(name, price) values (?, ?)", PRODUCTS)
    return path


def datasette_cmd(db: Path, port: str | int) -> list[str]:
    return [sys.executable, "-m", "datasette", "serve", str(db), "-p", str(port), "--host", "127.0.0.1"]


@pytest.fixture(scope="session")
def ds_server(tmp_path_factory):
    """datasette serving its own copy of the shop DB on loopback, started directly; yields its URL."""
    db = make_shop_db(tmp_path_factory.mktemp("ds") / "shop.db")
    port = free_port()
    proc = subprocess.Popen(datasette_cmd(db, port), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for_port(port, timeout=60, proc=proc)
        url = f"http://127.0.0.1:{port}"
        wait_http_ok(url + "/-/versions.json", interval=0.1)
        yield url
    finally:
        stop_process(proc)


@pytest.fixture(scope="module")
def browser():
    """One runner-style Chromium session (system Chromium, loopback only) for the tests of a module. Per module,
    not per session: while its Playwright runs, this process holds an asyncio loop, and every CLI call made here
    meanwhile needs a child interpreter (tests.support.incli.process_needed), whatever test file it is in."""
    from referee.runner.browser import BrowserSession

    sess = BrowserSession.start(headless=True, cdp=False)
    yield sess
    sess.close()


_SCREENSHOT = """
import sys
from pathlib import Path
from referee.runner.browser import BrowserSession

sess = BrowserSession.start(headless=True, cdp=False)
try:
    sess.page.goto(sys.argv[1], wait_until="load")
    Path(sys.argv[2]).write_bytes(sess.page.screenshot())
finally:
    sess.close()
"""


def runner_screenshot(url: str, path: Path) -> Path:
    """A screenshot of `url` by a runner-style Chromium session of its own, closed at once: in this process, or
    in a child where a module's `browser` holds this process's loop (a second sync Playwright cannot start)."""
    if loop_running():
        subprocess.run([sys.executable, "-c", _SCREENSHOT, url, str(path)], check=True, timeout=120)
        return path
    from referee.runner.browser import BrowserSession

    sess = BrowserSession.start(headless=True, cdp=False)
    try:
        sess.page.goto(url, wait_until="load")
        path.write_bytes(sess.page.screenshot())
    finally:
        sess.close()
    return path


def loop_running() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


@pytest.fixture(scope="session")
def home_control(ds_server, tmp_path_factory) -> Path:
    """A negative control: a screenshot of datasette's start page (it lists the table 'products')."""
    return runner_screenshot(ds_server + "/", tmp_path_factory.mktemp("controls") / "home.png")


def journey_plan(db: Path, controls: list[Path]) -> dict:
    """The browser journey over datasette: scripted steps, then an external agent over CDP."""
    return {
        "name": "shop-journey",
        "app": {"start": " ".join(datasette_cmd(db, "{port}")), "url": "http://127.0.0.1:{port}",
                "ready": "/-/versions.json", "ready_timeout_s": 60},
        "actor": {"kind": "browser", "command": f"{sys.executable} {AGENT}", "timeout_s": 90,
                  "env": {"SHOP_DB": str(db)}},
        "controls": [str(c) for c in controls],
        "steps": [
            {"id": "open_products", "do": "Open the products table.",
             "script": [{"goto": "/shop/products"}, {"wait_for": {"role": "cell", "name": "Red Gadget"}}],
             "capture": [{"kind": "aria", "name": "tree"}, {"kind": "dom", "name": "page"}],
             "validators": [
                 {"kind": "ocr_contains", "text": "Red Gadget", "require_change": True},
                 {"kind": "aria_contains", "evidence": "tree", "role": "cell", "text": "Blue Widget"},
                 {"kind": "dom_contains", "evidence": "page", "text": "2 rows"},
                 {"kind": "ocr_contains", "name": "loose_products", "text": "products"},
             ]},
            {"id": "products_again", "do": "Open the products table (it is already open).",
             "script": [{"goto": "/shop"}, {"click": {"role": "link", "name": "products", "exact": True}},
                        {"wait_for": {"role": "cell", "name": "Red Gadget"}}],
             "validators": [{"kind": "ocr_contains", "text": "Red Gadget", "require_change": True}]},
            {"id": "wrong_checks", "do": "Stay on the products table.",
             "validators": [
                 {"kind": "ocr_contains", "name": "ocr_absent", "text": "Purple Unicorn"},
                 {"kind": "aria_contains", "name": "aria_wrong_role", "role": "heading", "text": "Blue Widget"},
                 {"kind": "ocr_not_contains", "name": "ocr_not_present_but_is", "text": "Blue Widget"},
                 {"kind": "ocr_not_contains", "name": "ocr_not_holds", "text": "Purple Unicorn"},
                 {"kind": "aria_contains", "name": "aria_holds", "role": "cell", "text": "Blue Widget"},
             ]},
            {"id": "stale_claim", "do": "Add the product Green Lantern and show it in the table.",
             "capture": [{"kind": "screenshot", "name": "final"}],
             "validators": [
                 {"kind": "ocr_contains", "name": "agent_shot_alone", "evidence": "stale.png", "text": "Green Lantern"},
                 {"kind": "ocr_contains", "name": "agent_and_runner", "evidence": ["stale.png", "final"],
                  "text": "Green Lantern"},
             ]},
            {"id": "broken_shot", "do": "Save a screenshot.",
             "validators": [{"kind": "ocr_contains", "evidence": "shot.png", "text": "Red Gadget"}]},
            {"id": "add_product", "do": "Add the product Green Lantern and show it in the table.",
             "validators": [
                 {"kind": "ocr_contains", "text": "Green Lantern", "require_change": True},
                 {"kind": "ocr_contains", "name": "rapid", "engine": "rapidocr", "text": "Green Lantern"},
                 {"kind": "aria_contains", "role": "cell", "text": "Green Lantern", "require_change": True},
             ]},
            {"id": "filter_red", "do": "Show only the product named Red Gadget.",
             "script": [{"goto": "/shop/products"},
                        {"select": {"selector": "select[name=_filter_column]", "option": "name"}},
                        {"fill": {"role": "textbox", "value": "Red Gadget"}},
                        {"press": {"role": "textbox", "key": "Enter"}},
                        {"wait_for": {"role": "heading", "name": "1 row"}}],
             "validators": [
                 {"kind": "aria_contains", "role": "heading", "text": '1 row where name = "Red Gadget"'},
                 {"kind": "aria_contains", "role": "cell", "text": "Red Gadget", "exact": True},
                 {"kind": "ocr_not_contains", "text": "Blue Widget"},
                 {"kind": "ocr_not_contains", "text": "Green Lantern"},
             ]},
            {"id": "bad_script", "do": "Click a button that does not exist.",
             "script": [{"goto": "/shop/products"}, {"click": {"role": "button", "name": "Delete everything",
                                                               "timeout_s": 1}}],
             "validators": [{"kind": "dom_contains", "text": "products"}]},
        ],
    }


@dataclass(frozen=True)
class Journey:
    plan: Path
    run_dir: Path
    rc: int
    out: str
    err: str
    ocr_trace: Path  # one JSON line per real OCR engine call during the run (REFEREE_OCR_TRACE)
    key: Path  # the key that sealed the run (its own: each xdist worker has a signing key of its own)

    def env(self) -> dict:
        """The CLI's environment for grading or reporting the run (or a copy of it): with the run's key."""
        return {**base_cli_env(), "REFEREE_KEY_FILE": str(self.key)}

    def results(self) -> dict:
        return json.loads((self.run_dir / "results.json").read_text())

    def step(self, step_id: str) -> dict:
        return next(s for s in self.results()["steps"] if s["id"] == step_id)

    def validator(self, step_id: str, name: str) -> dict:
        return next(v for v in self.step(step_id)["validators"] if v["name"] == name)


def _run_journey(base: Path, control: Path) -> dict:
    """`referee run` of the journey plan into `base`; what the tests need of it, as JSON-ready data."""
    base.mkdir(parents=True, exist_ok=True)
    db = make_shop_db(base / "shop.db")
    plan = base / "journey.yaml"
    plan.write_text(yaml.safe_dump(journey_plan(db, [control]), sort_keys=False))
    trace = base / "ocr-calls.jsonl"
    keys = base / "signing-key"  # made on first use (mode 0600) by referee.rundir.keys
    keys.mkdir(mode=0o700)
    env = {**base_cli_env(), "REFEREE_OCR_TRACE": str(trace), "REFEREE_KEY_FILE": str(keys / "key")}
    # the agent adds a row to the app's database itself: that folder is its workspace (the working
    # directory, which an isolated agent may write; docs/security-isolation.md)
    rc, out, err = run_cli(["run", str(plan), "--out", str(base / "runs"), "--json"], cwd=base, env=env, timeout=240)
    try:
        run_dir = str(json.loads(out)["runs"][0]["run_dir"])
    except (ValueError, KeyError, IndexError):
        run_dir = None
    return {"plan": str(plan), "run_dir": run_dir, "rc": rc, "out": out, "err": err, "ocr_trace": str(trace),
            "key": str(keys / "key")}


@pytest.fixture(scope="session")
def journey(request, tmp_path_factory) -> Journey:
    """`referee run` of the journey plan through the CLI, once per test session: under pytest-xdist the first
    worker that needs it runs it (holding a lock in the temp folder all workers share) and leaves a marker with
    what the tests need; the others wait on the lock and read the marker. The tests only read the run's files
    (those that grade or report again do it on a copy)."""
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if worker is None:  # one process: nobody to share it with
        base = tmp_path_factory.mktemp("journey")
        done = _run_journey(base, request.getfixturevalue("home_control"))
    else:
        shared = tmp_path_factory.getbasetemp().parent  # this session's folder, above every worker's own
        marker = shared / "journey.done.json"
        with open(shared / "journey.lock", "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes (or the worker dies)
            if marker.is_file():
                done = json.loads(marker.read_text())
            else:
                base = Path(tempfile.mkdtemp(prefix="journey-", dir=shared))
                try:
                    control = base / "controls" / "home.png"  # a copy: the worker's own temp folder is its own
                    control.parent.mkdir(parents=True)
                    shutil.copyfile(request.getfixturevalue("home_control"), control)
                    done = _run_journey(base, control)
                except (Exception, pytest.fail.Exception) as exc:  # the others fail the same way, not run it again
                    done = {"run_dir": None, "rc": None, "out": "", "err": f"on {worker}: {exc!r}"}
                tmp = marker.with_name(f"{marker.name}.{worker}")
                tmp.write_text(json.dumps(done))
                tmp.replace(marker)
    if done["run_dir"] is None:
        pytest.fail(f"referee run gave no run directory (rc={done['rc']})\nstdout: {done['out'][-3000:]}\n"
                    f"stderr: {done['err'][-3000:]}")
    return Journey(Path(done["plan"]), Path(done["run_dir"]), done["rc"], done["out"], done["err"],
                   Path(done["ocr_trace"]), Path(done["key"]))


class _PagesHandler(BaseHTTPRequestHandler):
    """`/slow`: the headers and the start of a page, then nothing more for ever; anything else: a small page."""

    def log_message(self, *args) -> None:
        pass

    def do_GET(self) -> None:
        if self.path == "/slow":
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.end_headers()
            self.wfile.write(b"<html><body style='font-size:30px'><p>Slow loading")
            self.wfile.flush()
            time.sleep(120)  # the page never finishes: its load event never fires
            return
        body = b"<html><body style='font-size:40px'><h1>Static Screen Text</h1></body></html>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class _PagesServer(ThreadingHTTPServer):
    daemon_threads = True  # a `/slow` request still hanging never holds up the end of the session


@pytest.fixture(scope="session")
def pages_server():
    """A loopback server in this process (`/slow` never finishes loading, any other path is a static page
    showing "Static Screen Text"); yields its URL."""
    server = _PagesServer(("127.0.0.1", 0), _PagesHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
