"""`referee[fast]` (RE2 and orjson) changes nothing referee writes: a black-box acceptance test.

The real CLI runs twice per input, in subprocesses: once as installed (both packages importable) and once
with both made unimportable, as if the extra were not installed. The audit JSONL, `--summary-json`,
`--gold-out`, the evidence cache's rows, stdout, stderr and exit codes of `referee audit`, and the output of
`referee replay` and `referee eval report`, must be byte for byte the same (the only thing masked is
wall-clock time: `elapsed_s` and the records-per-second figure). Inputs: a few hundred generated traces
built to trip regex and JSON corner cases (case folding past ASCII, odd whitespace, Unicode digits, long
reports, floats, integers past 64 bits, lone surrogates, key order past the BMP), plus the development
corpora when they are present. Written without reading the implementation: only the documented claim.
"""

from __future__ import annotations

import json
import os
import random
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.support.corpora import MINI_SWE, TAU  # noqa: E402

SRC = ROOT / "src"
FAST = ("re2", "orjson")
SEED = 20260530

# ------------------------------------------------------------------------------------------- running it


@pytest.fixture(scope="module")
def shim(tmp_path_factory) -> Path:
    """A folder that, first on PYTHONPATH, makes `re2` and `orjson` unimportable as if not installed.

    `sitecustomize` puts None in sys.modules (so `import` raises ModuleNotFoundError and
    `importlib.util.find_spec` answers None, as for a missing package); the two stub modules are a
    backstop should site customisation be skipped."""
    d = tmp_path_factory.mktemp("no-fast-extra")
    names = ", ".join(repr(n) for n in FAST)
    (d / "sitecustomize.py").write_text(f"import sys\nfor _n in ({names}):\n    sys.modules[_n] = None\n")
    for name in FAST:
        (d / f"{name}.py").write_text(f"raise ModuleNotFoundError('blocked for the test', name={name!r})\n")
    return d


def env_for(shim: Path | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("REFEREE_DEBUG", "PYTHONPATH", "PYTHONSTARTUP")}
    env["PYTHONPATH"] = os.pathsep.join([str(shim)] * (shim is not None) + [str(SRC)])
    env["COLUMNS"] = "200"  # the same table width both ways, whatever terminal pytest runs under
    return env


def python(args: list[str], cwd: Path, shim: Path | None, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], cwd=cwd, env=env_for(shim), capture_output=True,
                          timeout=timeout, stdin=subprocess.DEVNULL)


def cli(args: list[str], cwd: Path, shim: Path | None) -> subprocess.CompletedProcess:
    return python(["-m", "referee.cli.main", *args], cwd, shim)


class Pair:
    """Two working folders, `fast/` and `slow/`, the same command run in each with relative paths."""

    def __init__(self, base: Path, shim: Path) -> None:
        self.fast, self.slow, self.shim = base / "fast", base / "slow", shim
        self.fast.mkdir(parents=True)
        self.slow.mkdir(parents=True)

    def run(self, *args: str, files: tuple[str, ...] = (), index: dict[str, str] | None = None
            ) -> subprocess.CompletedProcess:
        """Run `referee ARGS` both ways; compare the exit codes, then `files` (whose differences name a run),
        then stderr and stdout. Returns the run with referee[fast]."""
        a = cli(list(args), self.fast, None)
        b = cli(list(args), self.slow, self.shim)
        what = "referee " + " ".join(args)
        assert a.returncode == b.returncode, (f"{what}: exit {a.returncode} with referee[fast], {b.returncode} "
                                              f"without\nstderr with:\n{tail(a.stderr)}\nwithout:\n{tail(b.stderr)}")
        assert a.returncode < 3, f"{what}: internal error\n{tail(a.stderr)}"
        for name in files:
            assert_same_file(self, name, index)
        assert mask(a.stderr) == mask(b.stderr), f"{what}: stderr differs\n{first_diff(a.stderr, b.stderr)}"
        assert mask(a.stdout) == mask(b.stdout), f"{what}: stdout differs\n{first_diff(a.stdout, b.stdout)}"
        return a


def tail(b: bytes, n: int = 3000) -> str:
    return b.decode("utf-8", "replace")[-n:]


# Wall-clock figures are the only things allowed to differ between two runs of the same audit.
_RATE = re.compile(rb"\(\d[\d,.]*(?:e[+-]?\d+)? rec/s\)")
_ELAPSED = re.compile(rb'"elapsed_s": ?[-0-9.eE+]+')


def mask(b: bytes) -> bytes:
    return _ELAPSED.sub(b'"elapsed_s": 0', _RATE.sub(b"(N rec/s)", b))


def first_diff(a: bytes, b: bytes, index: dict[str, str] | None = None) -> str:
    """The first line that differs, both ways, and (for audit records) the input trace it came from."""
    la, lb = a.split(b"\n"), b.split(b"\n")
    for i, (x, y) in enumerate(zip(la, lb)):
        if x != y:
            break
    else:
        i = min(len(la), len(lb))
        return f"line {i + 1}: one output has {len(la)} lines, the other {len(lb)}"
    x, y = la[i].decode("utf-8", "replace"), lb[i].decode("utf-8", "replace")
    col = next((k for k, (p, q) in enumerate(zip(x, y)) if p != q), min(len(x), len(y)))
    msg = (f"line {i + 1}, column {col}:\n  with fast:    {x[max(0, col - 200):col + 300]!r}\n"
           f"  without fast: {y[max(0, col - 200):col + 300]!r}")
    try:
        run_id = str(json.loads(la[i])["run_id"])
    except (ValueError, KeyError, TypeError):
        return msg
    msg += f"\n  run_id: {run_id!r}"
    if index and run_id in index:
        msg += f"\n  input trace: {index[run_id][:4000]}"
    return msg


def assert_same_file(pair: Pair, name: str, index: dict[str, str] | None = None) -> bytes:
    a, b = (pair.fast / name).read_bytes(), (pair.slow / name).read_bytes()
    if mask(a) != mask(b):
        pytest.fail(f"{name} differs with and without referee[fast]\n{first_diff(mask(a), mask(b), index)}")
    return a


def cache_rows(path: Path) -> dict[str, list[tuple]]:
    """Every table's schema and rows, sorted: the cache's contents (the file's bytes also hold commit counters)."""
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        out: dict[str, list[tuple]] = {}
        for name, sql in db.execute("SELECT name, sql FROM sqlite_master WHERE type = 'table' ORDER BY name"):
            out[name] = [(sql,), *sorted(db.execute(f'SELECT * FROM "{name}"'), key=repr)]
        return out
    finally:
        db.close()


def assert_same_cache(pair: Pair, name: str) -> dict[str, list[tuple]]:
    a, b = cache_rows(pair.fast / name), cache_rows(pair.slow / name)
    assert a.keys() == b.keys(), f"{name}: tables {sorted(a)} with fast, {sorted(b)} without"
    for table in a:
        if a[table] != b[table]:
            extra = sorted(set(a[table]) ^ set(b[table]), key=repr)[:2]
            pytest.fail(f"{name}: table {table} differs with and without referee[fast]; rows in one only: {extra}")
    return a


def audit_both_ways(pair: Pair, inputs: list[str], *extra: str, index: dict[str, str] | None = None,
                    gold: bool = True) -> bytes:
    """`referee audit` both ways; every file it writes compared. Returns the audit file's bytes."""
    args = ["audit", *inputs, "--out", "audit.jsonl", "--summary-json", "summary.json", "--no-progress", *extra]
    if gold:
        args += ["--gold-out", "gold.jsonl"]
    pair.run(*args, files=("audit.jsonl", "summary.json", *("gold.jsonl",) * gold), index=index)
    rows = assert_same_cache(pair, "audit.jsonl.cache.sqlite")
    assert rows.get("evidence", [None])[1:], "the audit cached no evidence: nothing was compared"
    return (pair.fast / "audit.jsonl").read_bytes()


def replay_and_eval_both_ways(pair: Pair, index: dict[str, str] | None = None, gold: bool = True) -> None:
    g = ["--gold", "gold.jsonl"] if gold else []
    for policy in ("final-state", "strict"):
        pair.run("replay", "audit.jsonl", "--policy", policy, "--out", f"replay-{policy}.jsonl", *g,
                 files=(f"replay-{policy}.jsonl",), index=index)
    if gold:  # the JSON report (stdout) and every scored record
        pair.run("eval", "report", "audit.jsonl", *g, "--json", "--no-plot", "--resamples", "50",
                 "--records-out", "scored.jsonl", files=("scored.jsonl",), index=index)


# ----------------------------------------------------------------------------------- generated traces

# Characters that trip a regex prefilter or a JSON writer: case folds past ASCII (Kelvin sign, long s,
# dotted and dotless i, Angstrom sign, micro sign, Greek final sigma, ligatures), whitespace Python's \s
# knows and RE2's may not, digits past ASCII (\d matches them; superscripts are isdigit() but not \d),
# line and paragraph separators, C0/C1 controls, BOM, noncharacters, astral code points, combining marks.
ODD = ["“", "”", "‘", "’", "«", "»", "„", "é", "ï", "\u212a", "ſ", "İ", "ı", "\u212b", "µ", "ς", "Σ", "ϐ", "ß",
       "ﬁ", "ﬅ", "ﬆ", "—", "–", "😀", "👍🏽", "\u2028", "\u2029", "\x85", "\xa0", "\u3000", "\u200b", "\u200d",
       "\ufeff", "\ufffd", "\uffff", "\U0010ffff", "\U0001d7d2", "٤", "４", "²", "½", "Ⅻ", "\u0301", "日本",
       "\x7f", "\x9f", "\u180e", "\U0001f1fa\U0001f1f8", "ǅ", "ẞ", "ﬀ", "ŉ"] + [chr(c) for c in range(32)]
WS = [" ", "  ", "\t", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x1f", "\x85", "\xa0", "\u2028", "\u2029",
      "\u3000", "\u200b", "\r\n", "\n", " \u2009 ", "\u1680"]
FOLDS = {"s": ["ſ"], "k": ["\u212a", "K"], "i": ["ı", "İ"], "I": ["İ"], "K": ["\u212a"], "a": ["à", "\u212b"],
         "e": ["é", "ë"], "'": ["’", "ʼ"], '"': ["“", "”"], "-": ["—", "–", "‐"], "0": ["٠", "０"],
         "4": ["٤", "４", "𝟒"], "2": ["²", "٢"], "f": ["ﬀ"], "u": ["µ", "ü"], "o": ["ο", "ö"]}

PHRASES = [
    "I was unable to", "Successfully booked", "I will now check", "Would you like me to", "the answer is 42",
    "Done.", "not sure", "I have sent the message.", "The reservation has been cancelled.", "FINAL ANSWER: 23",
    "Shall I proceed?", "I think it should be saved now.", "You're welcome!", "Safe travels!",
    "Unfortunately, the site blocked access.", "A CAPTCHA appeared.", "Next I'll fix it.",
    "Once you have the reservation ID, I can continue.", "I deleted the file.", "All tests pass.",
    "The page did not load.", "I could not complete the step.", "The step is done.",
    "Let me know if you need anything else.", "I'm sorry, but I can't do that.",
    "The gyms near the park are A and B.", "50%", "X made no commits in May.",
    "I need to collect the data first; I'll start by", "Partially done:", "Error:", "It seems", "probably",
    "Booked!", "Everything is set.", "Your order has been placed.", "I've updated the settings.",
    "FINISH([\"S123\"])", "submit", "I successfully", "has been created", "were removed", "I could not",
    "Please confirm", "I'll transfer you to a human agent.", "It looks like", "I apologize", "Unable to",
    "should be done now", "is now set to", "COMPLETED", "failed", "not found", "Nothing to do.",
]
DATES = ["2024-05-20", "May 20th", "05/20/2024", "20 May", "20 May 2024", "May 20, 2024", "Monday, May 20",
         "2024/05/20", "20.05.2024", "Feb 29", "31 Feb", "2024-13-45", "Sept. 3rd", "3rd of September", "tomorrow"]
TIMES = ["7pm", "19:00", "12:30 a.m.", "7 PM", "07:05", "noon", "23:59:59", "7:00pm", "24:00", "9h", "12 p.m."]
MONEY = ["$1,234.50", "120 USD", "€99", "USD 5", "$0.99", "1.234,50 €", "£3", "$-5", "$1e3", "¥10,000",
         "$ 12", "12.5 dollars"]
EMAILS = ["alice@example.com", "bob.o'neil+tag@sub.example.co.uk", "ÜSER@exämple.com", "x@y",
          "a.b@c.d.e.f", "“mail”@example.org", "MIXED.Case@Example.COM"]
IDS = ["ORD-7731", "HAT123", "#W2378156", "S123", "ABC-DEF-001", "A1B2C3", "ord-7731", "HAT-123", "W2378156",
       "ORD‐7731", "ＯＲＤ-7731", "x.py", "groceries.md", "résumé.pdf", "N42", "INV-2024-05-20"]
NUMBERS = ["3 bags", "120 kg", "5 km", "42", "1,000,000", "0.5 miles", "٤٢ items", "４２ nights", "² rooms",
           "1.5e-05", "2 adults and 1 child", "no bags", "10%", "-3", "3.0", "007", "12,5", "1st", "2**70"]
QUOTED = ['"Standup"', "“Standup”", "‘x’", "'hello'", '"a \\"nested\\" one"', "«bonjour»", "'it''s'",
          '""', "“”", "'ſtandup'", '"café au lait"']
ATOMS = [DATES, TIMES, MONEY, EMAILS, IDS, NUMBERS, QUOTED]

TASKS = [
    "Delete the note named {id} in Notes", "Send a text message to {email} with message: {q}",
    "Create a calendar event titled {q} on {date} at {time}", "Book a flight for {date} at {time}; budget {money}",
    "What is the status of order {id}?", "Change the setting {id} to {q}",
    "If order {id} is still pending, cancel it; otherwise do nothing.",
    "Fix the failing test in x.py so that pytest passes", "Update the address for user {email} to {q}",
    "Remove all duplicate recipes", "Find the cheapest flight on {date} and tell me the price",
    "Add {num} to reservation {id}", "Cancel reservation {id} and refund {money} to {email}",
    "How many {num} are there? Answer with a number.", "Rename {id} to {q} and save it",
    "Schedule a visit on {date} {time} for patient {id}", "Reply to the thread {q} saying {q}",
]

FLOATS = [1.5e-05, 1e16, 0.1, -0.0, 0.0, 5e-324, 1.7976931348623157e308, 1e22, 1e-07, 1.2345678901234568e17,
          2.5, -1e-300, 3.14159, 1e21, 9007199254740993.0, 100.0, 0.30000000000000004]
INTS_64 = [0, -1, 7, 2**31, 2**53 + 1, 2**63 - 1, -2**63, 2**64 - 1, 42, 1234]  # what orjson may write
INTS_BIG = [2**64, -2**63 - 1, 2**70, -(2**70), 10**30]  # past 64 bits: json's text
KEYS = ["id", "name", "ok", "status", "é", "e", "E", "\u212a", "k", "ſ", "s", "😀", "\uffff", "\ue000", "", " ",
        "a", "A", "b", "_", "\x00", "\x1f", "\u2028", "日本", "status_code", "returncode", "error", "items",
        "ORD-7731", "\U0010ffff", "\U0001f600b", "zz", "Z"]  # "\uffff" < "😀" by code point, > by UTF-16


class Gen:
    """A seeded generator of odd but valid trace v1 content."""

    def __init__(self, seed: int, surrogates: bool = False) -> None:
        self.r = random.Random(seed)
        self.surrogates = surrogates  # lone surrogates (read as U+FFFD): only in the edge-case file

    def odd_text(self, n: int, surrogates: bool) -> str:
        r, parts = self.r, []
        for _ in range(n):
            k = r.random()
            if k < 0.35:
                parts.append(r.choice(ODD))
            elif k < 0.7:
                parts.append(self.atom())
            elif k < 0.8 and surrogates:
                parts.append(chr(r.randrange(0xD800, 0xE000)))  # a lone surrogate (\udXXX in the file)
            else:
                parts.append(r.choice(PHRASES))
        return r.choice(WS).join(parts)

    def atom(self) -> str:
        return self.r.choice(self.r.choice(ATOMS))

    def mutate(self, text: str) -> str:
        """Case, case folds, odd whitespace and punctuation: what a regex compiled with re.I meets in logs."""
        r = self.r
        mode = r.random()
        if mode < 0.1:
            text = text.upper()
        elif mode < 0.15:
            text = text.lower()
        elif mode < 0.2:
            text = text.title()
        if r.random() < 0.5:
            rate = r.choice([0.05, 0.2, 0.6])
            text = "".join(r.choice(FOLDS[c]) if c in FOLDS and r.random() < rate else c for c in text)
        if r.random() < 0.4:
            text = re.sub(" ", lambda _m: r.choice(WS) if r.random() < 0.3 else " ", text)
        if r.random() < 0.15:
            pos = r.randrange(len(text) + 1)
            text = text[:pos] + r.choice(ODD) + text[pos:]
        return text

    def fill(self, template: str) -> str:
        r = self.r
        return template.format(id=r.choice(IDS), email=r.choice(EMAILS), q=r.choice(QUOTED), date=r.choice(DATES),
                               time=r.choice(TIMES), money=r.choice(MONEY), num=r.choice(NUMBERS))

    def report(self) -> str | None:
        r = self.r
        k = r.random()
        if k < 0.05:
            return None
        if k < 0.1:
            return r.choice(["", " ", "\u2028", "Done.", "DONE", "done\x00", "Ok 👍"])
        n = r.choice([1, 2, 3, 5, 8, 40, 120])  # 40 and 120 phrases: reports past 2,000 characters
        parts = []
        for _ in range(n):
            p = r.choice(PHRASES)
            if r.random() < 0.6:
                p = f"{p} {self.atom()}"
            if r.random() < 0.3:
                p = f"{p} {self.atom()}."
            parts.append(self.mutate(p))
        return r.choice([" ", "\n", "\n\n", " — ", "\t", "\u2028"]).join(parts)

    def value(self, depth: int, dirty: bool, surrogates: bool):
        """A JSON value; `dirty` adds floats and integers past 64 bits (orjson must hand those to json)."""
        r = self.r
        k = r.random()
        if depth <= 0 or k < 0.5:
            kinds = ["str", "str", "int", "bool", "none"] + ["float", "big"] * dirty
            kind = r.choice(kinds)
            if kind == "str":
                return self.odd_text(r.randint(0, 4), surrogates) if r.random() < 0.6 else self.atom()
            if kind == "int":
                return r.choice(INTS_64)
            if kind == "float":
                return r.choice(FLOATS)
            if kind == "big":
                return r.choice(INTS_BIG)
            return r.choice([True, False]) if kind == "bool" else None
        if k < 0.75:
            return [self.value(depth - 1, dirty, surrogates) for _ in range(r.randint(0, 4))]
        keys = r.sample(KEYS, r.randint(0, 6))
        if surrogates and r.random() < 0.3:
            keys.append("k" + chr(r.randrange(0xD800, 0xE000)))
        return {key: self.value(depth - 1, dirty, surrogates) for key in keys}

    def step(self, dirty: bool, surrogates: bool) -> dict:
        r = self.r
        kind = r.random()
        obs: dict = {}
        if kind < 0.25:  # shell
            cmd = r.choice(["sed -i 's/a/b/' x.py && pytest -q", "cat x.py", "python -m pytest tests/test_x.py -q",
                            "echo 'done' > out.txt", "rm -rf build/", "git apply fix.patch",
                            "perl -i -pe 's/ſ/s/g' f.txt", "grep -rn 'café' .", "./run_tests.sh",
                            "python -c \"open('f','w').write('x')\"", "ls -la\x0b| head", "mkdir -p d && touch d/f",
                            "git commit -am 'fix: ORD-7731 — naïve café'", "tee out.log < in.txt"])
            rc = r.choice([0, 0, 1, 2, 127])
            action = {"name": r.choice(["bash", "sh", "run", "execute_bash"]), "args": {"command": cmd}}
            obs = {"text": f"<returncode>{rc}</returncode>\n<output>\n{self.odd_text(r.randint(0, 6), surrogates)}\n"
                           f"{r.choice(['3 passed in 0.5s', '1 failed, 2 passed', 'FAILED', 'OK', ''])}\n</output>",
                   "data": {"returncode": rc}}
            if rc:
                obs["error"] = r.choice([True, None])
        elif kind < 0.45:  # GUI
            labels = ["Save", "Send", "OK", "Cancel", "Delete", "Undo", "Sënd", "SAVE", "Submit ✓", "Ｓａｖｅ"]
            action = r.choice([
                {"name": "click", "args": {"index": r.randrange(6)}},
                {"name": "click", "args": {"element": r.choice(labels)}},
                {"name": f"click('a5{r.randrange(10)}')", "args": {}},
                {"name": "type", "args": {"text": self.mutate(r.choice(QUOTED + EMAILS + IDS))}},
                {"name": f"fill('b12', {self.mutate(r.choice(QUOTED))!r})", "args": {}},
                {"name": "goto", "args": {"url": "https://example.com/ü?q=" + r.choice(IDS)}},
                {"name": "scroll", "args": {"direction": "down"}},
            ])
            obs = {"text": "\n".join(f"[a5{i}] button '{r.choice(labels)}'" for i in range(r.randint(0, 4))),
                   "ui": [{"index": i, "id": f"a5{i}", "text": r.choice(labels)} for i in range(r.randint(0, 5))]}
        else:  # a named tool, HTTP or an answer call
            name = r.choice(["book_reservation", "get_order_details", "cancel_reservation", "delete_note",
                             "send_message", "update_settings", "create_event", "list_notes", "search",
                             "get_user_details", "zork_item", "frobit", "qux_send", "answer", "send_msg_to_user",
                             "submit", "finish", "transfer_to_human_agents", "placeOrder", "POST /api/orders",
                             "DELETE /api/notes/ORD-7731", "GET /api/orders?id=HAT123", "think", "réserver",
                             "\u212aill_process", "ſend_message", "SEND_MESSAGE", "update-settings"])
            args = self.value(3, dirty, surrogates)
            args = args if isinstance(args, dict) else {"value": args}
            if r.random() < 0.5:
                args["id"] = r.choice(IDS)
            if r.random() < 0.1:
                args["method"] = r.choice(["PATCH", "post", "DELETE", "GET"])
            action = {"name": name, "args": args}
            text = r.choice([
                lambda: json.dumps(self.value(3, dirty, False), ensure_ascii=r.random() < 0.5),
                lambda: '{"ok": false, "error": "not found"}', lambda: "[]", lambda: "HTTP/1.1 404 Not Found",
                lambda: json.dumps({"reservation_id": r.choice(IDS), "status": "cancelled", "amount": 1.5e-05}),
                lambda: self.odd_text(r.randint(0, 12), surrogates), lambda: "deleted groceries.md",
                lambda: "Error: " + self.mutate(r.choice(PHRASES)), lambda: "", lambda: '"just a JSON string"',
            ])()
            obs = {"text": text}
            if r.random() < 0.6:
                obs["data"] = self.value(4, dirty, surrogates)
            if r.random() < 0.2:
                obs["error"] = r.choice([True, False, None])
        step: dict = {"action": action}
        if r.random() < 0.9:
            step["observation"] = obs
        if r.random() < 0.5:
            step["narration"] = self.mutate(r.choice(PHRASES))
        return step

    def trace(self, i: int) -> dict:
        r = self.r
        dirty = r.random() < 0.4  # the rest holds only what orjson may write
        surrogates = self.surrogates and dirty
        run_id = r.choice([f"gen-{i:04d}", f"gen-{i:04d}-café-😀", f"gen {i:04d} \u2028 ſ"])
        t: dict = {"trace_version": 1, "run_id": run_id, "task": self.mutate(self.fill(r.choice(TASKS))),
                   "steps": [self.step(dirty, surrogates) for _ in range(r.choice([0, 1, 2, 3, 5, 8, 13]))],
                   "report": self.report(), "meta": {"group": f"g{i % 7}", "source": "generated"},
                   "gold": {"completed": r.random() < 0.5}}
        if r.random() < 0.3:
            t["initial_observation"] = {"text": self.odd_text(r.randint(0, 6), surrogates),
                                        "data": self.value(3, dirty, surrogates)}
        if r.random() < 0.15:
            t["tools"] = [{"name": "zork_item", "description": "Removes an item from the list"},
                          {"name": "frobit", "description": "Creates a frob"}]
        return t


def dump(r: random.Random, obj) -> str:
    """One JSON line in one of several spellings (escaped or raw UTF-8, compact or spaced, sorted or not)."""
    ascii_only = r.random() < 0.4
    line = json.dumps(obj, ensure_ascii=ascii_only, sort_keys=r.random() < 0.3,
                      separators=r.choice([(",", ":"), (", ", ": ")]))
    try:
        line.encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates can only be written escaped
        line = json.dumps(obj, ensure_ascii=True)
    return line


def long_reports(g: Gen) -> list[dict]:
    """Reports around the reader's 20,000-character cut, with non-ASCII at its seams."""
    out = []
    for n, length in enumerate([1999, 2001, 5000, 19999, 20000, 20001, 25000]):
        body = ""
        while len(body) < length:
            body += g.mutate(g.r.choice(PHRASES) + " " + g.atom()) + " "
        body = body[:length]
        for seam in (5000, length - 15000, length - 1):
            if 0 < seam < length:
                body = body[:seam - 1] + "ſ\u212a😀"[seam % 3] + body[seam:]
        out.append({"trace_version": 1, "run_id": f"long-{n}", "task": "Book a flight for May 20th at 7pm",
                    "steps": [{"action": {"name": "book_reservation", "args": {"date": "2024-05-20"}},
                               "observation": {"text": "Successfully booked HAT123 for $1,234.50 on 2024-05-20"}}],
                    "report": body, "gold": {"completed": True}})
    return out


def chat_record(g: Gen, i: int) -> dict:
    """An OpenAI-style chat log: tool arguments travel as JSON strings the reader parses."""
    r = g.r
    task = g.mutate(g.fill(r.choice(TASKS)))
    msgs: list[dict] = [{"role": "system", "content": "You are an agent."}, {"role": "user", "content": task}]
    for k in range(r.randint(0, 4)):
        args = g.value(3, r.random() < 0.5, False)
        args = args if isinstance(args, dict) else {"value": args}
        msgs.append({"role": "assistant", "content": r.choice([None, "", g.mutate(r.choice(PHRASES))]),
                     "tool_calls": [{"id": f"c{k}", "type": "function",
                                     "function": {"name": r.choice(["cancel_reservation", "get_order_details",
                                                                    "send_message", "update_address"]),
                                                  "arguments": json.dumps(args, ensure_ascii=r.random() < 0.5)}}]})
        msgs.append({"role": "tool", "tool_call_id": f"c{k}",
                     "content": r.choice([g.odd_text(r.randint(0, 5), False), "Error: not found",
                                          json.dumps(g.value(2, True, False))])})
    report = g.report()
    if report is not None:
        msgs.append({"role": "assistant", "content": report})
    return {"run_id": f"chat-{i:03d}", "task": task, "messages": msgs, "gold": {"completed": r.random() < 0.5}}


@pytest.fixture(scope="module")
def generated(tmp_path_factory) -> tuple[list[str], dict[str, str]]:
    """Three input files (trace v1 JSONL, a pretty-printed trace v1 array, OpenAI chat JSONL) and an index
    run_id -> input text, so that a difference names the input that caused it."""
    d = tmp_path_factory.mktemp("inputs")
    g = Gen(SEED)
    index: dict[str, str] = {}
    traces = [g.trace(i) for i in range(320)] + long_reports(g)
    seen: set[str] = set()
    with open(d / "traces.jsonl", "w", encoding="utf-8", newline="") as fh:
        for t in traces:
            if t["run_id"] in seen:
                continue
            seen.add(t["run_id"])
            line = dump(g.r, t)
            index[t["run_id"]] = line
            fh.write(line + g.r.choice(["\n", "\n", "\r\n"]))
    pretty = [g.trace(1000 + i) for i in range(12)]
    for t in pretty:
        t["run_id"] = f"pretty-{t['run_id']}"
        index[t["run_id"]] = json.dumps(t, ensure_ascii=True)
    (d / "pretty.json").write_text(json.dumps(pretty, indent=2, ensure_ascii=True), encoding="utf-8")
    with open(d / "chat.jsonl", "w", encoding="utf-8") as fh:
        for i in range(60):
            rec = chat_record(g, i)
            line = dump(g.r, rec)
            index[rec["run_id"]] = line
            fh.write(line + "\n")
    return [str(d / "traces.jsonl"), str(d / "pretty.json"), str(d / "chat.jsonl")], index


# ----------------------------------------------------------------------------------------------- tests


def test_the_extra_is_installed_here_and_the_shim_really_removes_it(shim, tmp_path):
    probe = ("import importlib, importlib.util, json, sys\nout = {}\n"
             "for n in ('re2', 'orjson'):\n"
             "    try:\n        m = importlib.import_module(n)\n"
             "        out[n] = ['imported', getattr(m, '__file__', None)]\n"
             "    except ImportError as e:\n        out[n] = ['ImportError', type(e).__name__]\n"
             "    out[n + ':spec'] = importlib.util.find_spec(n) is not None\n"
             "print(json.dumps(out))\n")
    normal = python(["-c", probe], tmp_path, None)
    blocked = python(["-c", probe], tmp_path, shim)
    assert normal.returncode == 0 and blocked.returncode == 0, (normal.stderr, blocked.stderr)
    n, b = json.loads(normal.stdout), json.loads(blocked.stdout)
    for name in FAST:
        assert n[name][0] == "imported" and "site-packages" in str(n[name][1]), (
            f"{name} is not installed, so nothing here compares the fast path: install with: "
            f"pip install 'referee[fast]' (got {n[name]})")
        assert b[name] == ["ImportError", "ModuleNotFoundError"], f"the shim did not block {name}: {b[name]}"
        assert b[f"{name}:spec"] is False, f"find_spec still finds {name} through the shim"
    # and the plain statements a user would type
    for name in FAST:
        assert python(["-c", f"import {name}"], tmp_path, None).returncode == 0
        r = python(["-c", f"import {name}"], tmp_path, shim)
        assert r.returncode == 1 and b"ModuleNotFoundError" in r.stderr, r.stderr


def test_the_audit_really_loads_the_extra_when_it_is_there(shim, generated, tmp_path):
    """Otherwise the comparisons below would compare the slow path with itself."""
    inputs, _ = generated
    driver = ("import atexit, json, runpy, sys\n"
              "def _say():\n"
              "    mods = {n: (sys.modules.get(n) is not None) for n in ('re2', 'orjson')}\n"
              "    open('loaded.json', 'w').write(json.dumps(mods))\n"
              "atexit.register(_say)\n"
              "sys.argv = ['referee'] + sys.argv[1:]\n"
              "runpy.run_module('referee.cli.main', run_name='__main__')\n")
    args = ["-c", driver, "audit", inputs[0], "--out", "a.jsonl", "--workers", "1", "--no-progress"]
    for name, sh, expect in (("fast", None, True), ("slow", shim, False)):
        d = tmp_path / name
        d.mkdir()
        r = python(args, d, sh)
        assert r.returncode == 0, tail(r.stderr)
        loaded = json.loads((d / "loaded.json").read_text())
        assert loaded == {"re2": expect, "orjson": expect}, (name, loaded)


def test_generated_traces_audit_replay_and_eval_are_byte_for_byte_the_same(shim, generated, tmp_path):
    inputs, index = generated
    pair = Pair(tmp_path, shim)
    out = audit_both_ways(pair, inputs, "--workers", "1", "--on-error", "stop", index=index)
    lines = out.splitlines()
    assert len(lines) == len(index), f"{len(lines)} records for {len(index)} traces"
    records = [json.loads(x) for x in lines]
    # the inputs reach every disposition and claim label, so the comparison covers them all
    assert {r["disposition"] for r in records} == {"pass", "flag", "review"}
    assert {r["claim"]["label"] for r in records} == {"success", "failure_or_incomplete", "unclear"}
    assert sum(bool(r["claim"].get("atoms")) for r in records) > 50
    replay_and_eval_both_ways(pair, index)


def test_a_tool_map_with_regexes_gives_the_same_records(shim, generated, tmp_path):
    """User-written patterns (globs, /regex/ names, failure regexes with lookarounds, back-references,
    classes and flags) go through the same matching as the built-in ones."""
    inputs, index = generated
    tools = tmp_path / "tools.yaml"
    tools.write_text(
        "tools_version: 1\ntools:\n"
        "  - name: \"zork_*\"\n    kind: delete\n    target: id\n    failure: '\"ok\":\\s*false'\n"
        "  - name: \"/^frob(it|this)$/\"\n    kind: create\n    failure: '(?i)ſtatus:\\s*failed|\\bERR\\b'\n"
        "  - name: \"/^qux(?=_)/\"\n    kind: send\n    target: id\n    failure: '(\\w)\\1{3}|(?<!no )error'\n"
        "  - name: \"/(?i)^\u212aill/\"\n    kind: delete\n    failure: '[^\\x00-\\x7f]{2,}|\\d{3}'\n",
        encoding="utf-8")
    pair = Pair(tmp_path / "w", shim)
    audit_both_ways(pair, [inputs[0]], "--workers", "1", "--tools", str(tools), "--on-error", "stop",
                    index=index)
    replay_and_eval_both_ways(pair, index)


EDGE_LINES = [
    # not strict JSON, but Python's json reads these: whatever referee does with them, it must do it both ways
    '{"trace_version": 1, "run_id": "edge-nan", "task": "What is the total of order ORD-7731?", "steps": '
    '[{"action": {"name": "get_order_details", "args": {"id": "ORD-7731"}}, "observation": {"text": "total", '
    '"data": {"total": NaN, "tax": Infinity, "rebate": -Infinity}}}], "report": "the answer is 42"}',
    '{"trace_version": 1, "run_id": "edge-1e400", "task": "What is the total of order ORD-7731?", "steps": '
    '[{"action": {"name": "get_order_details", "args": {"id": "ORD-7731", "n": 1e400}}, "observation": '
    '{"text": "42", "data": {"total": 1e400, "tiny": 1e-400, "neg": -0.0}}}], "report": "the answer is 42"}',
    '{"trace_version": 1, "run_id": "edge-dupkeys", "task": "Delete the note named N42", "steps": '
    '[{"action": {"name": "delete_note", "args": {"name": "N41", "name": "N42"}}, "observation": '
    '{"text": "deleted", "data": {"ok": false, "ok": true}}}], "report": "Done - N42 was deleted."}',
    '{"trace_version": 1, "run_id": "edge-surrogates", "task": "Send \\ud83d a message to x@y with message: '
    '\'hi\'", "steps": [{"action": {"name": "send_message", "args": {"to": "x@y", "\\udc00": "\\ud800hi"}}, '
    '"observation": {"text": "sent \\udfff", "data": {"\\ud83d\\ude00": 1, "\\uffff": 2, "\\ud800": [3]}}}], '
    '"report": "I have sent the message \\ud800 \'hi\' to x@y."}',
    '{"trace_version": 1, "run_id": "edge-nul", "task": "Create a note titled \\"a\\u0000b\\"", "steps": '
    '[{"action": {"name": "create_note", "args": {"title": "a\\u0000b\\u001f\\u007f\\u2028\\u2029"}}, '
    '"observation": {"text": "created \\"a\\u0000b\\"", "data": {"\\u0000": "\\u0000", "": ""}}}], '
    '"report": "Created \\"a\\u0000b\\" on 2024-05-20."}',
    '{"trace_version": 1, "run_id": 12345678901234567890123, "task": "Delete the note named N42", "steps": [], '
    '"report": "Done."}',
    '{"trace_version": 1, "run_id": 1.5e-05, "task": "Delete the note named N42", "steps": [], "report": "Done."}',
    '{"trace_version": 1, "run_id": 7, "task": "Delete the note named N42", "steps": [{"action": {"name": '
    '"delete_note", "args": {"n": 18446744073709551615, "m": 18446744073709551616, "i": -9223372036854775808, '
    '"j": -9223372036854775809}}, "observation": {"text": "ok", "data": {"big": 18446744073709551616, '
    '"u64": 18446744073709551615}}}], "report": "Done."}',
    '{"trace_version": 1, "run_id": "edge-deep", "task": "Delete the note named N42", "steps": [{"action": '
    '{"name": "delete_note", "args": {"name": "N42"}}, "observation": {"text": "ok", "data": '
    + "[" * 300 + "1" + "]" * 300 + "}}], \"report\": \"Done.\"}",
    # just inside the readers' nesting limit (200 levels): deep enough for a JSON writer's own recursion limit
    '{"trace_version": 1, "run_id": "edge-deep-dicts", "task": "Delete the note named N42", "steps": [{"action": '
    '{"name": "delete_note", "args": {"name": "N42"}}, "observation": {"text": "ok", "data": '
    + '{"\u212a":' * 190 + "1" + "}" * 190 + "}}], \"report\": \"Done.\"}",
    '{"trace_version": 1, "run_id": "edge-deep-lists", "task": "Delete the note named N42", "steps": [{"action": '
    '{"name": "delete_note", "args": {"name": "N42"}}, "observation": {"text": "ok", "data": '
    + "[" * 190 + '"\u2028"' + "]" * 190 + "}}], \"report\": \"Done.\"}",
    '{"trace_version": 1, "run_id": "edge-truncated", "task": "Delete',
    '',
    '   ',
    '["not", "a", "trace"]',
    '{"trace_version": 1, "run_id": "edge-no-task", "steps": []}',
    '{"trace_version": 1, "run_id": "edge-ok", "task": "Delete the note named N42", "steps": [{"action": '
    '{"name": "delete_note", "args": {"name": "N42"}}, "observation": {"text": "deleted N42"}}], '
    '"report": "Done \u2014 N42 was deleted \U0001f600."}',
]


def test_odd_and_bad_records_are_handled_the_same_way(shim, tmp_path):
    traces = tmp_path / "edge.jsonl"
    g = Gen(SEED + 1, surrogates=True)
    with_surrogates = [json.dumps(g.trace(2000 + i)) for i in range(40)]
    traces.write_bytes(("\ufeff" + "\n".join(EDGE_LINES + with_surrogates) + "\n").encode("utf-8")
                       + b'{"trace_version": 1, "run_id": "edge-bad-utf8", "task": "Delete \xff\xfe N42", '
                         b'"steps": [], "report": "Done."}\n')
    pair = Pair(tmp_path / "w", shim)
    a = pair.run("audit", str(traces), "--out", "audit.jsonl", "--summary-json", "summary.json",
                 "--workers", "1", "--no-progress", files=("audit.jsonl", "summary.json"))
    assert a.returncode in (0, 1), tail(a.stderr)
    assert_same_cache(pair, "audit.jsonl.cache.sqlite")
    out = (pair.fast / "audit.jsonl").read_bytes()
    for run_id in (b"edge-ok", b"edge-deep-dicts", b"edge-deep-lists", b"edge-nul", b"edge-dupkeys"):
        assert b'"run_id":"' + run_id + b'"' in out, run_id  # audited, not skipped: their text was compared
    pair.run("replay", "audit.jsonl", "--policy", "final-state", "--out", "replay.jsonl", files=("replay.jsonl",))


@pytest.mark.parametrize("corpus", ["tau-bench", "mini-swe-agent"])
def test_development_corpora_are_byte_for_byte_the_same(shim, tmp_path, corpus):
    path = TAU if corpus == "tau-bench" else MINI_SWE / "trajs"
    if not path.exists():
        pytest.skip(f"development corpus not present at {path} (CI lays it in ../shared/corpora beside the "
                    f"repository; REFEREE_SHARED overrides)")
    pair = Pair(tmp_path, shim)
    # two workers: the pool's processes must be as blocked (or not) as the parent, and write the same
    out = audit_both_ways(pair, [str(path)], "--workers", "2", "--chunk-size", "16")
    assert len(out.splitlines()) >= 100
    replay_and_eval_both_ways(pair)
