"""An RE2 prefilter for a Python regex: where in a text a match may start, found in linear time.

Python's regex engine tries a big alternation (`\\b(unable to|failed|...)`) at every position of a
text; RE2 scans it once with an automaton, some ten times faster. RE2 lacks lookarounds and
back-references and reads `\\s` and `$` another way, so it never decides a match here: it runs a
*wider* pattern (every lookaround dropped, every class spelled out as the ASCII characters Python's
regex matches) whose matches include every match of the Python one. Python's regex is then tried
only where the wider pattern matches, so the result is exactly Python's. A text past ASCII is read
by RE2 with each other character as `?`, against a pattern widened once more for that.

RE2 is optional (`pip install 'referee[fast]'`); without it, or for a pattern this module cannot
widen, a `FastRegex` searches with Python alone. Pure.
"""

from __future__ import annotations

import re
import weakref
from functools import lru_cache
from typing import Any, Callable, Iterator

try:  # the optional accelerator: the results are the same without it
    import re2 as _re2
except ImportError:  # pragma: no cover - depends on the install
    _re2 = None

from re import _constants as C  # type: ignore[attr-defined]  # the regex parser Python's own `re` compiles with (3.11+)
from re import _parser as P  # type: ignore[attr-defined]

_MAXREPEAT = C.MAXREPEAT
_CATEGORY = {C.CATEGORY_DIGIT: r"\d", C.CATEGORY_NOT_DIGIT: r"\D", C.CATEGORY_WORD: r"\w",
             C.CATEGORY_NOT_WORD: r"\W", C.CATEGORY_SPACE: r"\s", C.CATEGORY_NOT_SPACE: r"\S"}
_FLAGS = re.I | re.S | re.A | re.U  # what decides which characters one element matches


class _Unsupported(Exception):
    pass


def _u(c: int) -> str:
    return "\\U%08x" % c


def _source(op: Any, av: Any) -> str:
    """Python regex source for one single-character element of a parsed pattern."""
    if op is C.LITERAL:
        return _u(av)
    if op is C.NOT_LITERAL:
        return f"[^{_u(av)}]"
    if op is C.ANY:
        return "."
    if op is C.CATEGORY and av in _CATEGORY:
        return _CATEGORY[av]
    if op is C.IN:
        parts = []
        for o, a in av:
            if o is C.NEGATE:
                parts.append("^")
            elif o is C.LITERAL:
                parts.append(_u(a))
            elif o is C.RANGE:
                parts.append(f"{_u(a[0])}-{_u(a[1])}")
            elif o is C.CATEGORY and a in _CATEGORY:
                parts.append(_CATEGORY[a])
            else:
                raise _Unsupported(str(o))
        return "[" + "".join(parts) + "]"
    raise _Unsupported(str(op))


_OTHER = 0x3F  # '?': what every character past ASCII becomes in the text RE2 reads (text.encode("ascii", "replace"))
_UNI = 1 << 30  # a flag of this module's own: widen for such a text


@lru_cache(maxsize=4096)
def _ascii_class(source: str, flags: int) -> str:
    """The ASCII characters one element matches, as an RE2 class: found by asking Python's regex about each of
    the 128, so case folding (re.I lets `K`, the Kelvin sign, match `k`), `\\s` (\\x0b and \\x1c are spaces to
    Python) and `.` are exactly Python's on ASCII text. For text past ASCII (`_UNI`) the class also takes
    `?`, which may stand for any character the element matches there."""
    rx = re.compile(source, flags & _FLAGS)
    got = [c for c in range(128) if rx.fullmatch(chr(c)) or (c == _OTHER and flags & _UNI)]
    if len(got) == 128:
        return "(?s:.)"
    if not got:
        return "[^\\x00-\\x{10ffff}]"  # matches nothing (an ASCII text has no such character)
    if len(got) == 1:
        return "\\x{%x}" % got[0]
    runs, start = [], got[0]
    for a, b in zip(got, got[1:] + [-1]):
        if b != a + 1:
            runs.append("\\x{%x}" % start if start == a else "\\x{%x}-\\x{%x}" % (start, a))
            start = b
    return "[" + "".join(runs) + "]"


def _seq(items: Any, flags: int) -> str:
    return "".join(_op(op, av, flags) for op, av in items)


def _op(op: Any, av: Any, flags: int) -> str:
    if op in (C.LITERAL, C.NOT_LITERAL, C.ANY, C.IN, C.CATEGORY):
        return _ascii_class(_source(op, av), flags)
    if op is C.AT:
        if av is C.AT_BEGINNING:
            return "(?m:^)" if flags & re.M else "\\A"
        if av is C.AT_BEGINNING_STRING:
            return "\\A"
        if av is C.AT_END:
            return "(?m:$)" if flags & re.M else ""  # Python's `$` also matches before a final newline: wider
        if av is C.AT_END_STRING:
            return "\\z"
        if av is C.AT_BOUNDARY:  # past ASCII, `?` may be a letter or not: no boundary can be told, so none is asked
            return "" if flags & _UNI else "\\b"
        if av is C.AT_NON_BOUNDARY:
            return "" if flags & _UNI else "\\B"
        raise _Unsupported(str(av))
    if op is C.BRANCH:
        return "(?:" + "|".join(_seq(b, flags) for b in av[1]) + ")"
    if op is C.SUBPATTERN:
        _, add, remove, sub = av
        return "(?:" + _seq(sub, (flags | add) & ~remove) + ")"  # (?i:...) and the like: its own flags
    if op in (C.MAX_REPEAT, C.MIN_REPEAT, getattr(C, "POSSESSIVE_REPEAT", None)):
        lo, hi, sub = av
        body = "(?:" + _seq(sub, flags) + ")"
        if lo > 1000 or (hi is not _MAXREPEAT and hi > 1000):
            lo, hi = min(lo, 1000), _MAXREPEAT  # RE2 counts to 1000: more is wider, not narrower
        rep = "{%d,}" % lo if hi is _MAXREPEAT else "{%d,%d}" % (lo, hi)
        return body + rep + ("?" if op is C.MIN_REPEAT else "")  # a possessive repeat is wider greedy
    if op in (C.ASSERT, C.ASSERT_NOT):
        return ""  # a lookaround only narrows what matches: without it, wider
    if op is getattr(C, "ATOMIC_GROUP", None):
        return "(?:" + _seq(av, flags) + ")"
    raise _Unsupported(str(op))  # back-references, conditionals


def widen(pattern: str, flags: int = 0, other: bool = False) -> str | None:
    """The RE2 pattern that matches wherever `pattern` does on ASCII text (and maybe elsewhere); None when
    `pattern` has a construct RE2 cannot stand in for (back-references, group conditions). With `other`, for a
    text whose characters past ASCII are each replaced by `?`.

    >>> print(widen(r"\\bno(?!t)\\s"), widen("k", re.I), widen("(?i)x"))
    \\b\\x{6e}\\x{6f}[\\x{9}-\\x{d}\\x{1c}-\\x{20}] [\\x{4b}\\x{6b}] [\\x{58}\\x{78}]
    >>> widen(r"(a)\\1") is None
    True
    """
    try:
        parsed = _parsed(pattern, flags)
        return _seq(parsed, parsed.state.flags | (_UNI if other else 0))  # with the pattern's own (?i), (?m), (?s)
    except (_Unsupported, re.error, RecursionError):
        return None


@lru_cache(maxsize=128)  # a pattern is parsed once for both its RE2 sides and its width (big cues: ~4 ms a parse)
def _parsed(pattern: str, flags: int) -> Any:
    return P.parse(pattern, flags)


_MADE_LATER: "weakref.WeakSet[FastRegex]" = weakref.WeakSet()


def make_all() -> int:
    """Make the ASCII RE2 side of every FastRegex made so far (a process pool's forkserver calls this once, so
    each worker starts with them); the number made."""
    todo = [f for f in list(_MADE_LATER) if not f._made]
    for f in todo:
        f._make()
    return len(todo)


class FastRegex:
    """A compiled Python regex searched with an RE2 prefilter when one is to be had: the same matches as the
    regex alone (every match is the regex's own), found by skipping to where one may start.

    RE2 reads the text as ASCII bytes, each character past ASCII replaced by `?` (so its offsets are the
    text's), with a pattern widened for that. Below `short` characters the regex alone is faster than a
    call to RE2, and is used.

    >>> r = FastRegex(re.compile(r"\\b(unable to|failed)"))
    >>> [m.group(0) for m in r.finditer("it failed; unable to go")], r.search("all fine")
    (['failed', 'unable to'], None)
    """

    __slots__ = ("regex", "_ascii", "_other", "_short", "_iter", "_made", "__weakref__")

    def __init__(self, regex: re.Pattern[str], short: int = 48) -> None:
        self.regex, self._short = regex, short
        # each RE2 side is made on its first use (about 3 ms each): importing a module of patterns stays cheap,
        # and a corpus of ASCII text never makes the other
        self._made = False
        self._ascii: Callable[[bytes, int], int] | None = None
        self._other: Callable[[bytes, int], int] | None | bool = False  # False: not made yet
        self._iter = False
        _MADE_LATER.add(self)

    def _make(self) -> None:
        regex = self.regex
        self._ascii = _prefilter(regex.pattern, regex.flags)
        # after an empty match finditer may still match at the same place: such a pattern is iterated by Python
        self._iter = self._ascii is not None and _parsed(regex.pattern, regex.flags).getwidth()[0] > 0
        self._made = True

    @property
    def _pre(self) -> Callable[[bytes, int], int] | None:
        if not self._made:
            self._make()
        return self._ascii

    def _reader(self, text: str, data: bytes | None) -> tuple[Callable[[bytes, int], int] | None, bytes]:
        """The prefilter for this text and the bytes it reads (`data`: the ASCII text's bytes, when known)."""
        if len(text) < self._short:
            return None, b""
        if not self._made:
            self._make()
        if text.isascii():
            return self._ascii, text.encode("ascii") if data is None else data
        if self._other is False:
            regex = self.regex
            self._other = _prefilter(regex.pattern, regex.flags, other=True) if self._ascii is not None else None
        return self._other, text.encode("ascii", "replace")  # type: ignore[return-value]

    def search(self, text: str, data: bytes | None = None, pos: int = 0) -> re.Match[str] | None:
        """`regex.search(text, pos)`; `data` is the text as ASCII bytes, when the caller has it already."""
        pre, data = self._reader(text, data)
        return self.regex.search(text, pos) if pre is None else self._next(pre, text, data, pos)

    def match(self, text: str, data: bytes | None = None) -> re.Match[str] | None:
        """`regex.match(text)`."""
        pre, data = self._reader(text, data)
        return self.regex.match(text) if pre is None or pre(data, 0) == 0 else None

    def finditer(self, text: str, data: bytes | None = None) -> Iterator[re.Match[str]]:
        """`regex.finditer(text)`, one prefiltered search at a time."""
        pre, data = self._reader(text, data)
        if pre is None or not self._iter:
            yield from self.regex.finditer(text)
            return
        pos = 0
        while (m := self._next(pre, text, data, pos)) is not None:
            yield m
            pos = m.end()  # never an empty match (_iter): the next one starts at or after its end

    def _next(self, pre: Callable[[bytes, int], int], text: str, data: bytes, pos: int) -> re.Match[str] | None:
        """The regex's leftmost match at or after pos: tried only where RE2 says a match may start. A match
        of the regex starts only there, so the first place it matches is where `regex.search` finds one.
        After a few places where it does not (digits inside words, for numbers), Python scans on."""
        regex, misses = self.regex, 0
        while (at := pre(data, pos)) >= 0:
            m = regex.match(text, at)
            if m is not None:
                return m
            misses += 1
            if misses > 2:
                return regex.search(text, at + 1)
            pos = at + 1
        return None


def _prefilter(pattern: str, flags: int = 0, other: bool = False) -> Callable[[bytes, int], int] | None:
    """Where RE2, on the widened pattern, first matches in data[pos:] (-1: nowhere); None when there is no RE2
    or the pattern cannot be widened."""
    if _re2 is None:
        return None
    wide = widen(pattern, flags, other)
    if wide is None:
        return None
    options = _re2.Options()
    options.never_capture = True
    try:
        compiled = _re2.compile(wide.encode("ascii"), options=options)
    except Exception:  # noqa: BLE001  (RE2 refused it: search with Python alone)
        return None
    raw, unanchored = getattr(compiled, "_regexp", None), getattr(_re2, "_Anchor", None)
    if raw is not None and unanchored is not None and hasattr(raw, "Match"):
        # the binding's own matcher, called directly: its Python wrapper doubles the cost of a call
        anchor = unanchored.UNANCHORED

        def start(data: bytes, pos: int) -> int:
            return int(raw.Match(anchor, data, pos, len(data))[0][0])
    else:  # pragma: no cover - another google-re2 layout
        def start(data: bytes, pos: int) -> int:
            m = compiled.search(data, pos)
            return -1 if m is None else int(m.start())
    return start
