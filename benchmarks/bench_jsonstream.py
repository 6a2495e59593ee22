"""jsonstream benchmark: records per CPU-second and peak memory on a large generated JSON array with one bad element.

Generates an array of trace-like records (~0.5 KB each, one per line by default) with one malformed
element in the middle (`--bad token`: a bare word for a value; `unterminated`: a string that loses
its closing quote; `truncate`: a record cut after its first step, so that on one long line the rest
of the file reads as more steps: the worst case), then measures, each in a fresh subprocess:

* `iter_json_values` on that file: records per CPU-second (wall time misleads on a busy machine), wall
  time, peak Python allocation (tracemalloc) and peak RSS, how many good records and errors came back;
* the same on the same file without the bad element (a normal file);
* a bare `json.loads(path.read_text())` of that valid file (json.loads cannot read the bad one
  at all; for `--layout jsonl`, json.loads per line), as the speed and memory reference;
* the libraries one might use instead, on the valid file: ijson's C backend (`ijson.items`, streaming,
  `use_float=True`) and pydantic-core's `from_json` (the whole file, or per line for `--layout jsonl`);
  neither gives a record's line nor reads on past a broken record, so they run on the valid file only.
  Every reader of the valid file must give the same records (a SHA-256 of them, `same` in the table);
* optionally (`--compare FILE`) another jsonstream module, e.g. the previous version:
  `git show HEAD~1:src/referee/core/jsonio/values.py > /tmp/old_jsonstream.py`.

Run: python benchmarks/bench_jsonstream.py [--mb 200] [--layout oneline|pretty|inline|jsonl]
     [--bad token|truncate|unterminated] [--compare /tmp/old_jsonstream.py] [--no-tracemalloc]
     [--no-libraries] [--same] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

RECORD = {"run_id": "", "task": "Delete the file notes/a.txt and confirm it is gone",
          "steps": [{"action": {"name": "shell", "args": {"cmd": "rm -f notes/a.txt", "cwd": "/tmp/w"}},
                     "observation": {"text": "ok [exit 0] {\"deleted\": true} \\ done", "data": {"code": 0}}},
                    {"action": {"name": "shell", "args": {"cmd": "ls notes", "cwd": "/tmp/w"}},
                     "observation": {"text": "b.txt c.txt \u00e9t\u00e9", "data": {"code": 0, "lines": [1, 2]}}}],
          "report": "I deleted notes/a.txt; `ls` no longer shows it.", "meta": {"model": "m", "seed": 0}}


def generate(path: Path, good_path: Path, mb: float, layout: str, bad: str) -> tuple[int, int]:
    """Write the array with one bad element (and the same array without it); return (records, bad index)."""
    one = len(json.dumps(RECORD)) + 2
    n = max(3, int(mb * 1e6 / one))
    bad_at = n // 2
    seps = {"oneline": ("[", ",\n", "]\n"), "inline": ("[", ", ", "]"), "pretty": ("[\n", ",\n", "\n]\n"),
            "jsonl": ("", "\n", "\n")}
    head, sep, tail = seps[layout]
    with open(path, "w", encoding="utf-8") as fh, open(good_path, "w", encoding="utf-8") as good:
        fh.write(head)
        good.write(head)
        for i in range(n):
            rec = dict(RECORD, run_id=f"run-{i:07d}", meta={"model": "m", "seed": i})
            text = json.dumps(rec, indent=2 if layout == "pretty" else None, ensure_ascii=False)
            if layout == "pretty":
                text = "  " + text.replace("\n", "\n  ")
            good.write((sep if i else "") + text)
            if i == bad_at:
                if bad == "token":
                    text = text.replace('"task": "', '"task": undefined, "x": "', 1)
                elif bad == "truncate":  # a write cut after the first step: what follows reads as more steps
                    second = text.index('"action"', text.index('"action"') + 1)
                    text = text[:text.rindex(",", 0, second)]
                elif bad == "unterminated":
                    k = text.index('"task": "') + 9
                    text = text[:k] + text[k:].replace('"', "", 1)
            fh.write((sep if i else "") + text)
        fh.write(tail)
        good.write(tail)
    return n, bad_at


_CHILD = r"""
import json, resource, sys, time, tracemalloc, importlib.util
from pathlib import Path
kind, path, module, trace = sys.argv[1], Path(sys.argv[2]), sys.argv[3], sys.argv[4] == "1"
digest = sys.argv[6] == "1"  # keep the records and hash them (a run apart from the timed one)
got = []
if kind == "stream":
    if module:
        spec = importlib.util.spec_from_file_location("js_cmp", module)
        js = sys.modules["js_cmp"] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(js)
    else:
        sys.path.insert(0, sys.argv[5])
        import referee.core.jsonio.values as js
if trace:
    tracemalloc.start()
t, cpu = time.perf_counter(), time.process_time()
good = errors = 0
lines = []
if kind == "stream":
    for item in js.iter_json_values(path):
        if item.error is None:
            good += 1
            got.append(item.value) if digest else None
        else:
            errors += 1
            lines.append(item.line)
elif kind == "loads":
    got = json.loads(path.read_text(encoding="utf-8"))
elif kind == "lines":  # JSONL: json.loads per line, streaming (records kept only to hash them)
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            v = json.loads(line)
            got.append(v) if digest else None
            good += 1
elif kind.startswith("ijson"):
    import ijson
    assert ijson.backend == "yajl2_c", ijson.backend
    with open(path, "rb") as fh:
        prefix, multi = ("", True) if kind == "ijson-lines" else ("item", False)
        got = []
        for v in ijson.items(fh, prefix, use_float=True, multiple_values=multi):
            got.append(v) if digest else None
            good += 1
elif kind == "pydantic":
    from pydantic_core import from_json
    got = from_json(path.read_bytes())
else:  # pydantic-lines, streaming
    from pydantic_core import from_json
    with open(path, "rb") as fh:
        for line in fh:
            v = from_json(line)
            got.append(v) if digest else None
            good += 1
wall, cpu = time.perf_counter() - t, time.process_time() - cpu
if kind in ("loads", "pydantic"):
    good = len(got)
sha = None
if digest:
    import hashlib
    h = hashlib.sha256()
    for v in got:
        h.update(json.dumps(v, sort_keys=True).encode())
    sha = h.hexdigest()
peak = tracemalloc.get_traced_memory()[1] if trace else None
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(json.dumps({"wall_s": wall, "cpu_s": cpu, "good": good, "errors": errors, "error_lines": lines[:5],
                  "peak_alloc": peak, "peak_rss": rss, "sha": sha}))
"""


def child(kind: str, path: Path, module: str = "", trace: bool = False, digest: bool = False) -> dict:
    out = subprocess.run([sys.executable, "-c", _CHILD, kind, str(path), module, "1" if trace else "0",
                          str(ROOT / "src"), "1" if digest else "0"], capture_output=True, text=True)
    if out.returncode:
        raise SystemExit(f"{kind} run failed:\n{out.stderr}")
    return json.loads(out.stdout)


def measure(kind: str, path: Path, module: str, trace: bool, same: bool = False) -> dict:
    r = child(kind, path, module)  # timing without tracemalloc (it slows allocation down), nor the records kept
    if trace:
        r["peak_alloc"] = child(kind, path, module, trace=True)["peak_alloc"]
    if same:
        r["sha"] = child(kind, path, module, digest=True)["sha"]
    return r


def mb(x: float | None) -> str:
    return "-" if x is None else f"{x / 2**20:.1f} MiB"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=float, default=200.0, help="array size in MB (default 200)")
    ap.add_argument("--layout", choices=["oneline", "pretty", "inline", "jsonl"], default="oneline")
    ap.add_argument("--bad", choices=["token", "truncate", "unterminated"], default="token")
    ap.add_argument("--compare", default="", help="another jsonstream.py to measure the same way")
    ap.add_argument("--no-tracemalloc", action="store_true", help="skip the tracemalloc runs (faster)")
    ap.add_argument("--no-libraries", action="store_true", help="skip ijson and pydantic-core")
    ap.add_argument("--same", action="store_true", help="check every reader of the valid file gives the same "
                    "records (one more run each, keeping them)")
    ap.add_argument("--dir", default=None, help="where to write the generated files (default: a temp dir)")
    ap.add_argument("--json", default=None, help="write the results here as JSON")
    args = ap.parse_args()
    trace = not args.no_tracemalloc

    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        path, good_path = Path(tmp) / "big.json", Path(tmp) / "good.json"
        t = time.perf_counter()
        n, bad_at = generate(path, good_path, args.mb, args.layout, args.bad)
        size = path.stat().st_size
        print(f"generated {size / 1e6:.0f} MB, {n} records ({args.layout}), bad element #{bad_at} ({args.bad}) "
              f"in {time.perf_counter() - t:.1f}s")
        res = {"file_bytes": size, "records": n, "bad_index": bad_at, "layout": args.layout, "bad": args.bad}
        res["jsonstream"] = measure("stream", path, "", trace)
        res["jsonstream_valid"] = measure("stream", good_path, "", trace, same=args.same)
        if args.compare:
            cmp = str(Path(args.compare).resolve())
            res["compare"] = measure("stream", path, cmp, trace)
            res["compare_valid"] = measure("stream", good_path, cmp, trace, same=args.same)
        lines = args.layout == "jsonl"
        res["json_loads_valid"] = measure("lines" if lines else "loads", good_path, "", trace, same=args.same)
        if not args.no_libraries:
            res["ijson_valid"] = measure("ijson-lines" if lines else "ijson", good_path, "", trace, same=args.same)
            res["pydantic_valid"] = measure("pydantic-lines" if lines else "pydantic", good_path, "", trace,
                                            same=args.same)

    ref = res["json_loads_valid"]
    print(f"{'':20} {'records':>9} {'errors':>6} {'wall':>8} {'CPU':>8} {'records/CPU-s':>13} {'peak alloc':>12}"
          f" {'peak RSS':>11} {'same':>5}")
    names = {"jsonstream": "jsonstream", "jsonstream_valid": "jsonstream (valid)", "compare": "compare",
             "compare_valid": "compare (valid)", "json_loads_valid": "json.loads (valid)",
             "ijson_valid": "ijson yajl2_c (valid)", "pydantic_valid": "pydantic-core (valid)"}
    want_sha = res["jsonstream_valid"].get("sha")
    for key, name in names.items():
        if key not in res:
            continue
        r = res[key]
        r["records_per_s"] = r["good"] / r["wall_s"] if r["wall_s"] else 0.0
        r["records_per_cpu_s"] = r["good"] / r["cpu_s"] if r["cpu_s"] else 0.0
        same = "-" if not r.get("sha") or not want_sha else ("yes" if r["sha"] == want_sha else "NO")
        print(f"{name:20} {r['good']:>9} {r['errors']:>6} {r['wall_s']:>7.2f}s {r['cpu_s']:>7.2f}s "
              f"{r['records_per_cpu_s']:>13,.0f} "
              f"{mb(r['peak_alloc']):>12} {mb(r['peak_rss']):>11} {same:>5}")
    s = res["jsonstream"]
    res["ratios"] = {"speed_vs_json_loads": s["records_per_cpu_s"] / ref["records_per_cpu_s"],
                     "rss_vs_json_loads": s["peak_rss"] / ref["peak_rss"]}
    if "compare_valid" in res:
        res["ratios"]["speed_vs_compare_on_valid"] = (res["jsonstream_valid"]["records_per_cpu_s"]
                                                      / res["compare_valid"]["records_per_cpu_s"])
    if trace and s["peak_alloc"] and ref["peak_alloc"]:
        res["ratios"]["alloc_vs_json_loads"] = s["peak_alloc"] / ref["peak_alloc"]
    print("jsonstream vs json.loads: " + ", ".join(f"{k} {v:.2f}x" for k, v in res["ratios"].items()))
    ok = s["good"] == n - 1 and s["errors"] == 1
    ok = ok and all(r.get("sha") in (None, want_sha) for r in res.values() if isinstance(r, dict))
    print(f"jsonstream: {s['good']} of {n - 1} good records, {s['errors']} error(s) at line(s) {s['error_lines']}"
          f" -> {'OK' if ok else 'MISMATCH'}")
    if args.json:
        Path(args.json).write_text(json.dumps(res, indent=2))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
