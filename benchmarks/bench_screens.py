"""Screens benchmarks: a browser step with its screenshot, and OCR per screenshot per engine, cold and cached.

The app is datasette (from PyPI) over a SQLite file made here; the browser is the system Chromium.
Run: python benchmarks/bench_screens.py [--steps 10] [--images 4] [--json OUT]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from referee.ocr import CALLS, get_engine, ocr_cached  # noqa: E402
from referee.ocr.base import run_engine  # noqa: E402
from referee.plan.model import ActorSpec, Step  # noqa: E402
from referee.runner.actors.base import StepRun  # noqa: E402
from referee.runner.actors.browser import BrowserActor  # noqa: E402
from referee.runner.captures.base import CaptureContext  # noqa: E402
from referee.runner.captures.screens import ScreenshotCapture  # noqa: E402

PAGES = ["/shop/products", "/", "/shop", "/shop/products?_sort=name", "/shop?sql=select+name,price+from+products",
         "/-/versions"]


def start_datasette(tmp: Path) -> tuple[subprocess.Popen, str]:
    db = tmp / "shop.db"
    with sqlite3.connect(db) as con:
        con.execute("create table products(id integer primary key, name text, price real)")
        con.executemany("insert into products(name, price) values (?, ?)",
                        [(f"Product {i}", i * 1.5) for i in range(1, 21)])
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cmd = [sys.executable, "-m", "datasette", "serve", str(db), "-p", str(port), "--host", "127.0.0.1"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            with urllib.request.urlopen(url + "/-/versions.json", timeout=2):
                return proc, url
        except OSError:
            if time.monotonic() > deadline or proc.poll() is not None:
                proc.kill()
                raise SystemExit("datasette did not start") from None
            time.sleep(0.1)


def ms(xs: list[float]) -> dict:
    xs = sorted(x * 1000 for x in xs)
    return {"n": len(xs), "median_ms": round(statistics.median(xs), 1), "min_ms": round(xs[0], 1),
            "p90_ms": round(xs[min(len(xs) - 1, int(len(xs) * 0.9))], 1)}


def bench_browser(url: str, tmp: Path, steps: int) -> tuple[dict, list[Path]]:
    actor = BrowserActor()
    t0 = time.perf_counter()
    actor.setup(ActorSpec(kind="browser"), app_url=url, run_dir=tmp)
    launch = time.perf_counter() - t0
    step_times, shot_times, shots = [], [], []
    try:
        for i in range(steps):
            page = PAGES[i % len(PAGES)]
            step = Step(id=f"s{i}", script=[{"goto": page}, {"wait_for": {"selector": "footer"}}])
            run = StepRun(step=step, plan_name="bench", app_url=url, agent_dir=tmp / "agent",
                          claim_file=tmp / f"c{i}.json", timeout_s=60)
            (tmp / "agent").mkdir(exist_ok=True)
            out = tmp / "ev" / f"s{i}"
            out.mkdir(parents=True)
            t0 = time.perf_counter()
            result = actor.perform(run)
            t1 = time.perf_counter()
            ctx = CaptureContext(step_id=step.id, phase="after", out_dir=out, page=actor.page)
            files = ScreenshotCapture().take(ScreenshotCapture.Params(kind="screenshot", name="shot"), ctx)
            t2 = time.perf_counter()
            if result.error or files[0].suffix != ".png":
                raise SystemExit(f"step {i} failed: {result.error or files[0].read_text()}")
            step_times.append(t2 - t0)
            shot_times.append(t2 - t1)
            shots.append(files[0])
    finally:
        actor.teardown()
    return {"chromium_launch_ms": round(launch * 1000, 1), "step_with_screenshot": ms(step_times),
            "screenshot_only": ms(shot_times)}, shots


def bench_ocr(engine: str, shots: list[Path], images: int) -> dict:
    eng = get_engine(engine)
    distinct: dict[str, bytes] = {}
    for p in shots:  # one per distinct screenshot: a repeated image would only measure the cache
        data = p.read_bytes()
        distinct.setdefault(hashlib.sha256(data).hexdigest(), data)
    datas = list(distinct.values())[:images]
    t0 = time.perf_counter()
    run_engine(eng, datas[0])  # the first call in a process (RapidOCR loads its models here)
    first = time.perf_counter() - t0
    cold, cached = [], []
    store: dict = {}

    def cache(ns, key, compute):
        table = store.setdefault(ns, {})
        if key not in table:
            table[key] = json.loads(json.dumps(compute()))  # what the grader persists
        return table[key]

    calls0 = CALLS.calls
    for data in datas:
        t0 = time.perf_counter()
        ocr_cached(data, engine, cache)
        cold.append(time.perf_counter() - t0)
    for _ in range(3):
        for data in datas:
            t0 = time.perf_counter()
            ocr_cached(data, engine, cache)
            cached.append(time.perf_counter() - t0)
    return {"first_call_in_process_ms": round(first * 1000, 1), "cold": ms(cold), "cached": ms(cached),
            "engine_calls_cold": len(datas), "engine_calls_total": CALLS.calls - calls0}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--images", type=int, default=4)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="referee-bench-screens-") as d:
        tmp = Path(d)
        proc, url = start_datasette(tmp)
        try:
            browser, shots = bench_browser(url, tmp, args.steps)
        finally:
            proc.terminate()
            proc.wait(10)
        report = {"machine": {"cpus": os.cpu_count(), "loadavg_1m": round(os.getloadavg()[0], 2)},
                  "viewport": "1280x800", "browser": browser,
                  "ocr": {e: bench_ocr(e, shots, args.images) for e in ("tesseract", "rapidocr")}}
    b = report["browser"]
    print(f"machine: {report['machine']['cpus']} CPUs, load {report['machine']['loadavg_1m']}")
    print(f"chromium launch: {b['chromium_launch_ms']:.0f} ms")
    step, shot = b["step_with_screenshot"], b["screenshot_only"]
    print(f"browser step (goto + wait_for) with screenshot: median {step['median_ms']:.0f} ms, "
          f"p90 {step['p90_ms']:.0f} ms (screenshot alone {shot['median_ms']:.0f} ms)")
    for e, r in report["ocr"].items():
        print(f"OCR {e}: cold {r['cold']['median_ms']:.0f} ms/screenshot (median of {r['cold']['n']}), "
              f"cached {r['cached']['median_ms']:.1f} ms, "
              f"first call in process {r['first_call_in_process_ms']:.0f} ms, "
              f"engine calls {r['engine_calls_total']} for {r['engine_calls_cold']} images")
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
