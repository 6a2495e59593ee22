"""Catastrophic-backtracking check over every regex of the referee package (run by `make check`).

Every compiled pattern reachable from the package's modules (module globals, class attributes, the
tuples, dicts and dataclasses they hold, `Cue` wrappers, the shipped policies' task-class
patterns) and every regex literal written inline (`re.search(r"...", text)`) is searched over generated
worst-case inputs: long runs of whitespace and newlines, repeated separators and comment tokens,
unmatched delimiters and quotes, runs of word characters, and repeats of strings built from the pattern's
own literals. An input is suspect when the search over 4n characters costs over 8 times what it costs over
n (linear: 4, quadratic: 16) and takes at least 1 ms of CPU time; a suspect is measured again at twice the
size and must grow the same way to be reported. A search that runs past the hard timeout (exponential
backtracking; `--timeout`, CPU seconds of the worker) is reported too: each worker process is watched by this
one and killed.

Searched the way the package uses them: a module-level pattern at every start (`finditer`: the worst use),
a literal written into `re.match(...)`/`re.fullmatch(...)` from the text's start only. Not measured, and
counted apart: a pattern with no repeat longer than 100 (each start costs at most a bound set by the pattern,
so no input makes it superlinear) and a pattern in ACCEPTED (its call site bounds what it reads; `--all`
measures these too). Times are CPU times of the worker, so a busy machine does not make a finding.

    python tools/redos_check.py [--module referee.audit] [--size 500] [--timeout 20] [--list] [--family NAME] [--all]

Exit 0: no pattern grows faster than linearly; 1: the findings, one line each; 2: usage error.
It reads `re._parser`, which the package itself may not rely on; this tool is not shipped.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import functools
import importlib
import json
import os
import pkgutil
import queue
import re
import resource
import subprocess
import sys
import threading
import time
from pathlib import Path
from re import _constants as C  # type: ignore[attr-defined]
from re import _parser as P
from typing import Any, Iterator

REPO = Path(__file__).resolve().parents[1]
SRC = REPO / "src"
RATIO, FLOOR_S, HARD_TIMEOUT_S, SIZE = 8.0, 0.001, 20.0, 500
LONG = 100  # a repeat of more than this many counts as unbounded: at the sizes searched here, it is
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
_TASK = "the task-class rule: taskclass.classify_task reads a task's first MAX_TASK_CHARS (2,000) characters"
_PLAN = "input is the user's own plan or config, not agent-written"
ACCEPTED: dict[str, str] = {
    r"[A-Za-z][A-Za-z0-9+.-]*://": "plan.envvars: " + _PLAN,
    r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}": "plan.envvars: " + _PLAN,
    r"%24%7B(.*?)%7D": "runner/envsubst.py: " + _PLAN,
    r"(://[^:/@]+:)[^@]*@": "runner/envsubst.py masks a plan's database URL: " + _PLAN,
    r"^\s*\[\s*tool\s*\.\s*referee\s*\]": "settings.py reads the user's own pyproject.toml: " + _PLAN,
    (r"^(?P<path>[^\n`]+?)\n```[^\n]*\n<<<<<<< SEARCH\n(?>(?P<search>.*?)^=======\n)(?P<replace>.*?)"
     r"^>>>>>>> REPLACE\n```"): "aider._blocks matches it at the first header after the last block only",
    (r"^```[^\n]*\n(?P<path>[^\n`]+?)\n<<<<<<< SEARCH\n(?>(?P<search>.*?)^=======\n)"
     r"(?P<replace>.*?)^>>>>>>> REPLACE\n```"): "as aider._EDIT: aider._blocks matches it at one header only",
    r'(?:[^"\[\]{}]++|"[^"\\\n]*+(?:\\.[^"\\\n]*+)*+")*+':
        "jsonio.window.scan_brackets matches it at its position only (one possessive pass); a cut string is "
        "rescanned after the window doubles (linear in all)",
    r'(?:[^"\[\]{},]++|"[^"\\\n]*+(?:\\.[^"\\\n]*+)*+")*+':
        "as _SKIP_IN: jsonio.window.scan_brackets matches it at its position only",
    r"\s*<([a-z][\w-]*)(?:\s[^>]*)?>.*?</\1>\s*":
        "sessions.is_prompt_text matches it at the previous block's end only: each match is one scan",
    (r"^\s*(what|which|who|whom|when|where|why|how (many|much|long|far|often|old)|is there|are there|do i|does|did|"
     r"can you (tell|find|check)|tell me|find out|check (if|whether))\b"): _TASK,
    r"^\s*(is|are|was|were|has|have)\b[^.?]*\?": _TASK,
    r"\b(how many|how much|what is|what are|what was|what were|which of)\b[^.]*\?": _TASK,
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


def accepted(pattern: str | bytes) -> str | None:
    """Why a pattern that grows faster than linearly is accepted, or None."""
    source = _source(pattern)
    if source in ACCEPTED:
        return ACCEPTED[source]
    return _JOINED_WHY if source in _shipped_joined() else None


_JOINED_WHY = "joined into one alternation: " + _TASK


@functools.lru_cache(maxsize=1)
def _shipped_joined() -> frozenset[str]:
    """The source of the shipped task-class rule's joined alternation (the policies share that rule)."""
    if "referee" not in sys.modules:  # another package is checked (the tests' own): no need to import this one
        return frozenset()
    from referee.audit.decide.policyfile import load_policy
    from referee.audit.decide.taskclass import _joined

    joined = _joined(load_policy("causal").policy.task_classes.rule())
    return frozenset({joined.pattern} if joined is not None else ())


@dataclasses.dataclass(frozen=True)
class Found:
    """One pattern and where it was found."""

    where: str
    pattern: str | bytes
    flags: int
    anchored: str = ""  # "match" or "fullmatch": written into such a call, searched from the text's start only

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
    """Patterns inside `obj`: compiled ones and `Cue`s, in containers and dataclasses."""
    if depth > 4:
        return
    if isinstance(obj, re.Pattern):
        out.setdefault((obj.pattern, obj.flags), Found(where, obj.pattern, obj.flags))
        return
    kind = type(obj).__name__
    if kind == "Cue":  # searched with re.I on text past ASCII and as a lowered twin on ASCII text
        ci, low = obj.regexes()
        _walk(ci, where, out, depth + 1)
        _walk(low, where + " (lowered)", out, depth + 1)
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
                yield Found(f"{path.relative_to(top.parent.parent)}:{node.lineno}", first.value, flags,
                            node.func.attr if node.func.attr in ("match", "fullmatch") else "")


def collect(root: str = "referee") -> list[Found]:
    """Every pattern of the package under `root`, each (pattern, flags) once, in a stable order."""
    out: dict[tuple[Any, int], Found] = {}
    for mod in _modules(root):
        for name, val in sorted(vars(mod).items()):
            if isinstance(val, type) and val.__module__ == mod.__name__:
                for attr, x in sorted(vars(val).items()):
                    _walk(x, f"{mod.__name__}.{name}.{attr}", out)
            elif not callable(val) or isinstance(val, (re.Pattern,)) or type(val).__name__ == "Cue":
                _walk(val, f"{mod.__name__}.{name}", out)
    if root in ("referee", "referee.audit", "referee.audit.decide.taskclass", "referee.audit.decide.policyfile"):
        _task_class_patterns(out)
    for f in _inline(root):
        if (f.pattern, f.flags) not in out or out[f.pattern, f.flags].anchored and not f.anchored:
            out[f.pattern, f.flags] = f  # one use at every start makes the pattern searched at every start
    return sorted(out.values(), key=lambda f: (f.where, str(f.pattern)))


def _task_class_patterns(out: dict[tuple[Any, int], Found]) -> None:
    from referee.audit.decide.policyfile import POLICY_DIR, load_policy
    from referee.audit.decide.taskclass import _joined

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


def _cost(rx: re.Pattern[Any], text: Any, repeat: int, anchored: str) -> float:
    """CPU seconds of the cheapest of `repeat` searches: a busy machine's waits are not counted."""
    best = float("inf")
    for _ in range(repeat):
        t0 = time.thread_time()
        if anchored:
            getattr(rx, anchored)(text)
        else:
            for _m in rx.finditer(text):
                pass
        best = min(best, time.thread_time() - t0)
    return best


def _grows(rx: re.Pattern[Any], case: tuple[str, str, str, str], n: int, as_bytes: bool, anchored: str = "",
           repeat: int = 1) -> tuple[bool, float, float]:
    _, prefix, unit, tail = case
    big = _cost(rx, _text(prefix, unit, tail, 4 * n, as_bytes), repeat, anchored)
    if big < FLOOR_S:  # linear inputs stop here: one search of 4n characters, well under the floor
        return False, 0.0, big
    small = _cost(rx, _text(prefix, unit, tail, n, as_bytes), max(repeat, 3), anchored)
    big = min(big, _cost(rx, _text(prefix, unit, tail, 4 * n, as_bytes), 2, anchored))
    return big >= FLOOR_S and big > RATIO * max(small, 1e-6), small, big


def _longest_repeat(items: Any) -> int:
    """The largest upper bound of any repeat in a parsed pattern, lookarounds and groups included."""
    most = 0
    for op, av in items:
        if op in (C.MAX_REPEAT, C.MIN_REPEAT, getattr(C, "POSSESSIVE_REPEAT", None)):
            most = max(most, av[1], _longest_repeat(av[2]))
        elif op is C.BRANCH:
            most = max([most] + [_longest_repeat(b) for b in av[1]])
        elif op is C.SUBPATTERN:
            most = max(most, _longest_repeat(av[3]))
        elif op in (C.ASSERT, C.ASSERT_NOT):
            most = max(most, _longest_repeat(av[1]))
        elif op is getattr(C, "ATOMIC_GROUP", None):
            most = max(most, _longest_repeat(av))
        elif op is C.GROUPREF_EXISTS:
            most = max(most, _longest_repeat(av[1]), _longest_repeat(av[2] or []))
    return most


def skip_reason(found: Found, measure_accepted: bool = False) -> str | None:
    """Why a pattern need not be measured: no long repeat (linear whatever the input), or accepted; else None."""
    if not measure_accepted and (why := accepted(found.pattern)) is not None:
        return f"accepted: {why}"
    if _longest_repeat(P.parse(_source(found.pattern), found.flags & ~re.DEBUG)) <= LONG:
        return "no repeat longer than %d" % LONG
    return None


def worker(root: str, start: int, size: int, family: str | None, measure_accepted: bool = False) -> None:
    """Measure patterns from `start` on, one JSON line per step, so the watcher knows where a hang is."""
    found = collect(root)
    for i in range(start, len(found)):
        f = found[i]
        skip = skip_reason(f, measure_accepted)
        if skip is not None:
            print(json.dumps({"skipped": i, "why": skip}), flush=True)
            continue
        rx = f.compiled()
        as_bytes = isinstance(f.pattern, bytes)
        for case in units(f):
            fam, prefix, unit, tail = case
            if family and not fam.startswith(family):
                continue
            print(json.dumps({"begin": i, "family": fam, "where": f.where, "pattern": repr(f.pattern),
                              "accepted": accepted(f.pattern)}), flush=True)
            bad, small, big = _grows(rx, case, size, as_bytes, f.anchored)
            if bad:  # confirm at twice the size: one slow measurement is not a finding
                bad, small, big = _grows(rx, case, 2 * size, as_bytes, f.anchored, repeat=2)
            if bad:
                print(json.dumps({"finding": i, "accepted": accepted(f.pattern),
                                  "where": f.where, "pattern": repr(f.pattern), "family": fam,
                                  "unit": prefix[:20] + unit, "tail": tail, "ratio": round(big / max(small, 1e-6), 1),
                                  "seconds": round(big, 3)}), flush=True)
                break
        print(json.dumps({"done": i}), flush=True)
    print(json.dumps({"end": len(found)}), flush=True)


def _cpu_s(pid: int) -> float | None:
    """CPU seconds a process has used so far (Linux's /proc), or None where that cannot be read."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime
    except (OSError, ValueError, IndexError):
        return None


def _spent(pid: int, cpu0: float | None, wall0: float) -> float:
    """Seconds the worker spent on its current step: CPU seconds where they can be read, else wall seconds."""
    now = _cpu_s(pid) if cpu0 is not None else None
    return now - cpu0 if now is not None and cpu0 is not None else time.monotonic() - wall0


def check(root: str = "referee", size: int = SIZE, family: str | None = None,
          timeout_s: float = HARD_TIMEOUT_S, measure_accepted: bool = False) -> tuple[list[str], int, dict[str, int]]:
    """Findings (one line each), the number of patterns and how many were not measured, by why; a worker
    that spends `timeout_s` of CPU time on one step without a word is killed, and the pattern it was on is a
    finding (a busy machine's waits are not counted; wall time where the CPU time cannot be read)."""
    findings: list[str] = []
    skipped: dict[str, int] = {}
    start, total = 0, None
    while total is None or start < total:
        cmd = [sys.executable, __file__, "--worker", "--module", root, "--start", str(start), "--size", str(size)]
        cmd += ["--family", family] if family else []
        cmd += ["--all"] if measure_accepted else []
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONHASHSEED": "0"})
        assert proc.stdout is not None
        lines: queue.Queue[str] = queue.Queue()
        # each worker its own queue (bound now: a killed worker's reader still puts its end-of-file)
        threading.Thread(target=lambda out=proc.stdout, q=lines: [q.put(x) for x in out] + [q.put("")],
                         daemon=True).start()
        current: dict[str, Any] = {"begin": start, "family": "?", "where": "?", "pattern": "?"}
        begun_wall, begun_cpu = time.monotonic(), None
        while True:
            searching = current["where"] != "?"  # not yet: the worker's start (imports, the policies)
            wait = max(timeout_s - _spent(proc.pid, begun_cpu, begun_wall), 0.02) if searching else 300.0
            try:
                line = lines.get(timeout=wait)
            except queue.Empty:
                if (searching and _spent(proc.pid, begun_cpu, begun_wall) < timeout_s
                        and time.monotonic() - begun_wall < max(300.0, 10 * timeout_s)):
                    continue  # a busy machine: the search has not had its timeout's worth of CPU yet
                proc.kill()
                proc.wait()
                why = current.get("accepted")
                if why is not None:
                    print(f"accepted ({why}): {current['where']}: {current['pattern']}", file=sys.stderr)
                else:
                    findings.append(f"{current['where']}: {current['pattern']}: no answer in {timeout_s:g} s on "
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
                begun_wall, begun_cpu = time.monotonic(), _cpu_s(proc.pid)
            elif "skipped" in msg:
                kind = msg["why"].split(":")[0]
                skipped[kind] = skipped.get(kind, 0) + 1
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
    return findings, total or 0, skipped


def _children_cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--module", default="referee", help="the package or module whose patterns are checked")
    ap.add_argument("--size", type=int, default=SIZE, help="n: inputs of n and 4n characters")
    ap.add_argument("--timeout", type=float, default=HARD_TIMEOUT_S, metavar="SECONDS",
                    help="a search with no answer after this long is a finding (default %(default)s)")
    ap.add_argument("--all", action="store_true", help="measure the accepted patterns too")
    ap.add_argument("--family", default=None, help="only input families whose name starts with this")
    ap.add_argument("--list", action="store_true", help="list the patterns found and stop")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--start", type=int, default=0, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.worker:
        worker(a.module, a.start, a.size, a.family, a.all)
        return 0
    if a.list:
        for f in collect(a.module):
            print(f"{f.where}: {f.pattern!r}" + (f" ({why})" if (why := skip_reason(f, a.all)) else ""))
        return 0
    t0, c0 = time.perf_counter(), _children_cpu()
    if a.timeout <= 0:
        ap.error("--timeout must be positive")
    findings, n, skipped = check(a.module, a.size, a.family, timeout_s=a.timeout, measure_accepted=a.all)
    print(f"redos_check: {n} patterns, {len(findings)} growing faster than linearly "
          f"(not measured: {skipped.get('no repeat longer than %d' % LONG, 0)} without a long repeat, "
          f"{skipped.get('accepted', 0)} accepted; {time.perf_counter() - t0:.0f} s, "
          f"{_children_cpu() - c0:.0f} s CPU)", file=sys.stderr)
    return 1 if findings else 0


if __name__ == "__main__":
    sys.path.insert(0, str(SRC))
    raise SystemExit(main())
