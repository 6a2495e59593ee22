"""Catastrophic-backtracking check over every regex of the referee package (run by `make check`).

Every compiled pattern reachable from the package's modules (module globals, class attributes, the
tuples, dicts and dataclasses they hold, `Cue` and `FastRegex` wrappers, the shipped policies' task-class
patterns) and every regex literal written inline (`re.search(r"...", text)`) is searched over generated
worst-case inputs: long runs of whitespace and newlines, repeated separators and comment tokens,
unmatched delimiters and quotes, runs of word characters, and repeats of strings built from the pattern's
own literals. An input is suspect when the search over 4n characters costs over 8 times what it costs over
n (linear: 4, quadratic: 16) and takes at least 40 ms; a suspect is measured again at twice the size and
must grow the same way to be reported. A search that runs past the hard timeout (exponential
backtracking) is reported too: each worker process is watched by this one and killed.

    python tools/redos_check.py [--module referee.audit] [--size 2000] [--list] [--family NAME]

Exit 0: no pattern grows faster than linearly; 1: the findings, one line each; 2: usage error.
It reads `re._parser`, which the package itself may not rely on; this tool is not shipped.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import importlib
import json
import os
import pkgutil
import re
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path
from re import _constants as C, _parser as P  # type: ignore[attr-defined]
from typing import Any, Iterator

REPO = Path(__file__).resolve().parents[1]
SRC = REPO / "src"
RATIO, FLOOR_S, HARD_TIMEOUT_S = 8.0, 0.04, 20.0
_CALLS = {"compile", "search", "match", "fullmatch", "findall", "finditer", "sub", "subn", "split"}
_FLAG_NAMES = {"I": re.I, "IGNORECASE": re.I, "M": re.M, "MULTILINE": re.M, "S": re.S, "DOTALL": re.S,
               "X": re.X, "VERBOSE": re.X, "A": re.A, "ASCII": re.A}

# families of worst-case inputs: (name, unit repeated, tail that makes the match fail at the end)
FIXED: tuple[tuple[str, str, str], ...] = (
    ("spaces", " ", "!"), ("newlines", "\n", "x"), ("tabs", "\t", "x"), ("space-newline", " \n", "x"),
    ("crlf", "\r\n", "x"), ("slashes", "/", "!"), ("commas", ",", "!"), ("dots", ".", "!"), ("semicolons", ";", "!"),
    ("colons", ":", "!"), ("dashes", "-", "!"), ("underscores", "_", "!"), ("sql-comment", "/* */", " zzz"),
    ("line-comment", "--\n", " zzz"), ("open-paren", "(", "!"), ("open-bracket", "[", "!"), ("open-brace", "{", "!"),
    ("double-quote", '"', "!"), ("single-quote", "'", "!"), ("backtick", "`", "!"), ("angle", "<", "!"),
    ("backslash", "\\", "!"), ("word", "a", "!"), ("digits", "1", "!"), ("word-space", "a ", "!"),
    ("digit-comma", "1,", "!"), ("word-dot", "a.", "!"), ("word-newline", "a\n", "!"), ("open-comma", "open(,", "!"),
    ("fence", "```", "!"), ("fence-a", "```\na", "!"), ("question", "? ", "x"), ("at", "a@", "!"),
)


# Patterns that grow faster than linearly on some input, each with why that is accepted: the call site bounds
# what it searches, or the pattern is someone's open work (named, so a new one fails the check and an old one is
# not forgotten). Keyed by the pattern's source text.
ACCEPTED: dict[str, str] = {
    r"```bash\s*\n(.*?)\n```": "mini_swe_agent.split_turn searches only up to the turn's last closing fence",
    r"[^)]*,\s*['\"](w|a|r\+|x)b?['\"]": "acting._OpenForWrite matches it once per `)`-delimited segment",
    r"\s*+(?:(?>--[^\n]*\n|/\*.*?\*/)\s*+)*+": "acting._sql_verb matches it once, at the statement's start",
    (r"(transfer|escalat|handoff|hand_off)\w*[_ ]?(to[_ ])?(a[_ ])?(human|agent|operator|support)"):
        "acting.recognise searches an action name's first MAX_NAME_CHARS (200) characters",
    r"[\w\-]+\.(?=[A-Za-z0-9]*[A-Za-z])[A-Za-z0-9]{1,5}": "lexicon.FILE_RE is only ever fullmatched (one start)",
    r"\s*([A-Za-z_][\w.]*)\s*\(": "browsergym._call_name matches it once, at the call's start",
    (r"\s*(?:the|your) (?:last )?command\b.{0,2000}?\b(?:timed out|took (?:more than|too long)|"
     r"was cancelled|has been killed)"): "mini_swe_agent matches it once, on a message's first 3,000 characters",
    (r"\s*(?:please always provide exactly one action|your (?:last )?output (?:was not formatted|"
     r"did not use)|your action could not be parsed)"): "mini_swe_agent matches it once, at a message's start",
}


@dataclasses.dataclass(frozen=True)
class Found:
    """One pattern and where it was found."""

    where: str
    pattern: str | bytes
    flags: int

    def compiled(self) -> re.Pattern[Any]:
        return re.compile(self.pattern, self.flags)


def _modules(root: str) -> Iterator[Any]:
    pkg = importlib.import_module(root)
    yield pkg
    for info in pkgutil.walk_packages(getattr(pkg, "__path__", []), root + "."):
        if info.name.endswith("__main__"):
            continue
        yield importlib.import_module(info.name)


def _walk(obj: Any, where: str, out: dict[tuple[Any, int], Found], depth: int = 0) -> None:
    """Patterns inside `obj`: compiled ones, `Cue`s and `FastRegex`es, in containers and dataclasses."""
    if depth > 4:
        return
    if isinstance(obj, re.Pattern):
        out.setdefault((obj.pattern, obj.flags), Found(where, obj.pattern, obj.flags))
        return
    kind = type(obj).__name__
    if kind == "FastRegex":
        _walk(obj.regex, where, out, depth + 1)
        return
    if kind == "Cue":  # searched with re.I on text past ASCII and as a lowered twin on ASCII text
        _walk(obj._i.regex, where, out, depth + 1)
        _walk(obj._low.regex, where + " (lowered)", out, depth + 1)
        return
    if isinstance(obj, (tuple, list, set, frozenset)):
        for i, x in enumerate(obj):
            _walk(x, f"{where}[{i}]", out, depth + 1)
    elif isinstance(obj, dict):
        for k, x in obj.items():
            _walk(x, f"{where}[{k!r}]", out, depth + 1)
    elif dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        for f in dataclasses.fields(obj):
            _walk(getattr(obj, f.name, None), f"{where}.{f.name}", out, depth + 1)


def _flags_of(node: ast.expr | None) -> int | None:
    if node is None:
        return 0
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "re":
        return _FLAG_NAMES.get(node.attr)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        a, b = _flags_of(node.left), _flags_of(node.right)
        return None if a is None or b is None else a | b
    return None


def _inline(root: str) -> Iterator[Found]:
    """Regex literals written inside functions: `re.search(r"...", text, re.I)` and the like."""
    top = Path(importlib.import_module(root).__file__ or "")
    files = sorted(top.parent.rglob("*.py")) if top.name == "__init__.py" else [top]
    for path in files:
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and isinstance(node.func.value, ast.Name) and node.func.value.id == "re"
                    and node.func.attr in _CALLS and node.args):
                continue
            first = node.args[0]
            if not (isinstance(first, ast.Constant) and isinstance(first.value, (str, bytes))):
                continue
            pos = {"compile": 1, "search": 2, "match": 2, "fullmatch": 2, "findall": 2, "finditer": 2,
                   "split": 3, "sub": 4, "subn": 4}[node.func.attr]
            kw = next((k.value for k in node.keywords if k.arg == "flags"), None)
            flags = _flags_of(kw if kw is not None else (node.args[pos] if len(node.args) > pos else None))
            if flags is not None:
                flags = re.compile(first.value, flags).flags  # as the module's own compile has them (re.U for text)
                yield Found(f"{path.relative_to(top.parent.parent)}:{node.lineno}", first.value, flags)


def collect(root: str = "referee") -> list[Found]:
    """Every pattern of the package under `root`, each (pattern, flags) once, in a stable order."""
    out: dict[tuple[Any, int], Found] = {}
    for mod in _modules(root):
        for name, val in sorted(vars(mod).items()):
            if isinstance(val, type) and val.__module__ == mod.__name__:
                for attr, x in sorted(vars(val).items()):
                    _walk(x, f"{mod.__name__}.{name}.{attr}", out)
            elif not callable(val) or isinstance(val, (re.Pattern,)) or type(val).__name__ in ("Cue", "FastRegex"):
                _walk(val, f"{mod.__name__}.{name}", out)
    if root in ("referee", "referee.audit", "referee.audit.taskclass", "referee.audit.policyfile"):
        _task_class_patterns(out)
    for f in _inline(root):
        out.setdefault((f.pattern, f.flags), f)
    return sorted(out.values(), key=lambda f: (f.where, str(f.pattern)))


def _task_class_patterns(out: dict[tuple[Any, int], Found]) -> None:
    from referee.audit.policyfile import POLICY_DIR, load_policy
    from referee.audit.taskclass import _joined

    for path in sorted(POLICY_DIR.glob("*.yaml")):
        if path.stem == "task_classes":
            continue
        rule = load_policy(path.stem).policy.task_classes.rule()
        for i, cp in enumerate(rule.patterns):
            out.setdefault((cp.pattern, re.I | re.M), Found(f"policy {path.stem} task_classes[{i}]", cp.pattern,
                                                            re.I | re.M))
        joined = _joined(rule)
        if joined is not None:
            _walk(joined, f"policy {path.stem} task_classes (joined)", out)


# ---- inputs made from the pattern's own literals ----

_REP = {C.CATEGORY_DIGIT: "1", C.CATEGORY_NOT_DIGIT: "a", C.CATEGORY_WORD: "a", C.CATEGORY_NOT_WORD: " ",
        C.CATEGORY_SPACE: " ", C.CATEGORY_NOT_SPACE: "a"}


def _one(op: Any, av: Any) -> str:
    """A character one single-character element matches (a guess: good enough to build inputs)."""
    if op is C.LITERAL:
        return chr(av)
    if op is C.NOT_LITERAL:
        return "a" if av != ord("a") else "b"
    if op is C.ANY:
        return "a"
    if op is C.CATEGORY:
        return _REP.get(av, "a")
    if op is C.IN:
        for o, a in av:
            if o is C.NEGATE:
                return "a" if all(not (x is C.LITERAL and y == ord("a")) for x, y in av) else "b"
            if o is C.LITERAL:
                return chr(a)
            if o is C.RANGE:
                return chr(a[0])
            if o is C.CATEGORY:
                return _REP.get(a, "a")
    return ""


def _sample(items: Any, choice: int = 0) -> str:
    """A string walking the pattern: each repeat once, the `choice`-th branch of each alternation."""
    out = []
    for op, av in items:
        if op in (C.LITERAL, C.NOT_LITERAL, C.ANY, C.CATEGORY, C.IN):
            out.append(_one(op, av))
        elif op is C.BRANCH:
            branches = av[1]
            out.append(_sample(branches[min(choice, len(branches) - 1)]))
        elif op is C.SUBPATTERN:
            out.append(_sample(av[3], choice))
        elif op in (C.MAX_REPEAT, C.MIN_REPEAT, getattr(C, "POSSESSIVE_REPEAT", None)):
            out.append(_sample(av[2], choice) * max(1, min(av[0], 3)))
        elif op is getattr(C, "ATOMIC_GROUP", None):
            out.append(_sample(av, choice))
    return "".join(out)


def _literals(items: Any, out: list[str]) -> None:
    run: list[str] = []
    for op, av in items:
        if op is C.LITERAL:
            run.append(chr(av))
            continue
        if run:
            out.append("".join(run))
            run = []
        if op is C.BRANCH:
            for b in av[1]:
                _literals(b, out)
        elif op is C.SUBPATTERN:
            _literals(av[3], out)
        elif op in (C.MAX_REPEAT, C.MIN_REPEAT, getattr(C, "POSSESSIVE_REPEAT", None)):
            _literals(av[2], out)
        elif op is getattr(C, "ATOMIC_GROUP", None):
            _literals(av, out)
    if run:
        out.append("".join(run))


def _source(pattern: str | bytes) -> str:
    return pattern.decode("latin-1") if isinstance(pattern, bytes) else pattern


def units(found: Found) -> list[tuple[str, str, str, str]]:
    """(family, prefix, unit, tail) inputs for one pattern: the fixed families, repeats of its own literals and
    of walks through it, and each literal followed by a long run (a fence and 100,000 `a`)."""
    pattern = found.pattern.decode("latin-1") if isinstance(found.pattern, bytes) else found.pattern
    parsed = P.parse(pattern, found.flags & ~re.DEBUG)
    lits: list[str] = []
    _literals(parsed, lits)
    lits = [x for x in dict.fromkeys(x.strip() or x for x in lits) if x][:24]
    walks = list(dict.fromkeys(_sample(parsed, c) for c in range(4)))
    got = [(fam, "", unit, tail) for fam, unit, tail in FIXED]
    for i, lit in enumerate(lits):
        got += [(f"literal-{i}", "", lit, "!"), (f"literal-{i}-space", "", lit + " ", "!"),
                (f"literal-{i}-nl", "", lit + "\n", "!")]
        got += [(f"literal-{i}-then-{name}", lit, run, "!") for name, run in _RUNS]
    for i, (a, b) in enumerate(zip(lits, lits[1:])):
        got.append((f"literal-pair-{i}", "", a + " " + b, "!"))
    for i, w in enumerate(walks):
        if w:
            got += [(f"walk-{i}", "", w, "!"), (f"walk-{i}-prefix", "", w[: max(1, len(w) // 2)], "!"),
                    (f"walk-{i}-tailless", "", w[:-1] or w, "")]
            got += [(f"walk-{i}-then-{name}", w, run, "!") for name, run in _RUNS]
    return got


_RUNS = (("word", "a"), ("spaces", " "), ("newlines", "\n"), ("digits", "1"), ("slashes", "/"), ("commas", ","))


def _text(prefix: str, unit: str, tail: str, size: int, as_bytes: bool) -> Any:
    s = prefix + unit * max(1, size // len(unit)) + tail
    return s.encode("utf-8", "replace") if as_bytes else s


def _cost(rx: re.Pattern[Any], text: Any, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _m in rx.finditer(text):
            pass
        best = min(best, time.perf_counter() - t0)
    return best


def _grows(rx: re.Pattern[Any], case: tuple[str, str, str, str], n: int, as_bytes: bool,
           repeat: int = 1) -> tuple[bool, float, float]:
    _, prefix, unit, tail = case
    big = _cost(rx, _text(prefix, unit, tail, 4 * n, as_bytes), repeat)
    if big < FLOOR_S:  # linear inputs stop here: one search of 4n characters, well under the floor
        return False, 0.0, big
    small = _cost(rx, _text(prefix, unit, tail, n, as_bytes), max(repeat, 3))
    big = min(big, _cost(rx, _text(prefix, unit, tail, 4 * n, as_bytes), 2))
    return big >= FLOOR_S and big > RATIO * max(small, 1e-6), small, big


def worker(root: str, start: int, size: int, family: str | None) -> None:
    """Measure patterns from `start` on, one JSON line per step, so the watcher knows where a hang is."""
    found = collect(root)
    for i in range(start, len(found)):
        f = found[i]
        rx = f.compiled()
        for case in units(f):
            fam, prefix, unit, tail = case
            if family and not fam.startswith(family):
                continue
            print(json.dumps({"begin": i, "family": fam, "where": f.where, "pattern": repr(f.pattern)}), flush=True)
            bad, small, big = _grows(rx, case, size, isinstance(f.pattern, bytes))
            if bad:  # confirm at twice the size: a busy machine's one slow measurement is not a finding
                bad, small, big = _grows(rx, case, 2 * size, isinstance(f.pattern, bytes), repeat=2)
            if bad:
                print(json.dumps({"finding": i, "accepted": ACCEPTED.get(_source(f.pattern)),
                                  "where": f.where, "pattern": repr(f.pattern), "family": fam,
                                  "unit": prefix[:20] + unit, "tail": tail, "ratio": round(big / max(small, 1e-6), 1),
                                  "seconds": round(big, 3)}), flush=True)
                break
        print(json.dumps({"done": i}), flush=True)
    print(json.dumps({"end": len(found)}), flush=True)


def check(root: str = "referee", size: int = 2000, family: str | None = None,
          timeout_s: float = HARD_TIMEOUT_S) -> tuple[list[str], int]:
    """Findings (one line each) and the number of patterns checked; each worker is killed past `timeout_s`
    without a word, and the pattern it was on is a finding."""
    findings: list[str] = []
    start, total = 0, None
    while total is None or start < total:
        cmd = [sys.executable, __file__, "--worker", "--module", root, "--start", str(start), "--size", str(size)]
        cmd += ["--family", family] if family else []
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONHASHSEED": "0"})
        assert proc.stdout is not None
        lines: queue.Queue[str] = queue.Queue()
        # each worker its own queue (bound now: a killed worker's reader still puts its end-of-file)
        threading.Thread(target=lambda out=proc.stdout, q=lines: [q.put(x) for x in out] + [q.put("")],
                         daemon=True).start()
        current: dict[str, Any] = {"begin": start, "family": "?", "where": "?", "pattern": "?"}
        while True:
            try:  # a worker's start (imports, the policies) may take longer than one search on a busy machine
                line = lines.get(timeout=timeout_s if "pattern" in current and current["where"] != "?" else 300)
            except queue.Empty:
                proc.kill()
                proc.wait()
                why = next((v for k, v in ACCEPTED.items() if repr(k) == current["pattern"]), None)
                if why is not None:
                    print(f"accepted ({why}): {current['where']}: {current['pattern']}", file=sys.stderr)
                else:
                    findings.append(f"{current['where']}: {current['pattern']}: no answer in {timeout_s:.0f} s on "
                                    f"input family {current['family']} (exponential, or quadratic at this size)")
                    print(findings[-1], flush=True)
                start = current["begin"] + 1
                break
            if not line:
                proc.kill()
                raise SystemExit(f"redos_check: the worker failed (exit {proc.wait()})")
            msg = json.loads(line)
            if "begin" in msg:
                current = msg
            elif "finding" in msg:
                if msg.get("accepted"):
                    print(f"accepted ({msg['accepted']}): {msg['where']}: {msg['pattern']}", file=sys.stderr)
                    continue
                findings.append(f"{msg['where']}: {msg['pattern']}: {msg['seconds']} s on {msg['family']} "
                                f"({msg['unit']!r} repeated, then {msg['tail']!r}): {msg['ratio']}x for 4x the input")
                print(findings[-1], flush=True)
            elif "end" in msg:
                proc.wait()
                total = start = msg["end"]
                break
    return findings, total or 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--module", default="referee", help="the package or module whose patterns are checked")
    ap.add_argument("--size", type=int, default=2000, help="n: inputs of n and 4n characters")
    ap.add_argument("--family", default=None, help="only input families whose name starts with this")
    ap.add_argument("--list", action="store_true", help="list the patterns found and stop")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--start", type=int, default=0, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.worker:
        worker(a.module, a.start, a.size, a.family)
        return 0
    if a.list:
        for f in collect(a.module):
            print(f"{f.where}: {f.pattern!r}")
        return 0
    t0 = time.perf_counter()
    findings, n = check(a.module, a.size, a.family)
    print(f"redos_check: {n} patterns, {len(findings)} growing faster than linearly "
          f"({time.perf_counter() - t0:.0f} s)", file=sys.stderr)
    return 1 if findings else 0


if __name__ == "__main__":
    sys.path.insert(0, str(SRC))
    raise SystemExit(main())
