"""An RE2 prefilter for a Python regex: where on ASCII text a match may start, found in linear time.

Python's regex engine tries a big alternation (`\\b(unable to|failed|...)`) at every position of a
text; RE2 scans it once with an automaton, some ten times faster. RE2 lacks lookarounds and
back-references and reads `\\s` and `$` another way, so it never decides a match here: it runs a
*wider* pattern (every lookaround dropped, every class spelled out for ASCII) whose matches include
every match of the Python one. Its leftmost match start is then where Python's regex resumes its
search: no match of the Python pattern can start before it, so the result is exactly Python's.

RE2 is optional (`pip install 'referee[fast]'`); without it, or for a pattern this module cannot
widen, `prefilter` gives None and the caller searches with Python alone. ASCII text only: RE2's
word and space classes are ASCII ones. Pure.
"""

from __future__ import annotations

import re
from typing import Any, Iterator

try:  # the optional accelerator: the results are the same without it
    import re2 as _re2
except ImportError:  # pragma: no cover - depends on the install
    _re2 = None

from re import _constants as C, _parser as P  # type: ignore[attr-defined]  # the regex parser Python's own `re` compiles with (3.11+)

_MAXREPEAT = C.MAXREPEAT
# Python's classes on ASCII text (str.isspace's whitespace is \s: it includes \x0b and \x1c-\x1f)
_CLASS = {C.CATEGORY_DIGIT: "0-9", C.CATEGORY_WORD: "0-9A-Za-z_",
          C.CATEGORY_SPACE: "\\t\\n\\x0b\\x0c\\r\\x1c-\\x1f "}
_NOT = {C.CATEGORY_NOT_DIGIT: C.CATEGORY_DIGIT, C.CATEGORY_NOT_WORD: C.CATEGORY_WORD,
        C.CATEGORY_NOT_SPACE: C.CATEGORY_SPACE}
_ANY_CHAR = "(?s:.)"


class _Unsupported(Exception):
    pass


def _char(c: int) -> str:
    return "\\x{%x}" % c


def _in(items: list[tuple[Any, Any]]) -> str:
    """A character class, or any character where it cannot be spelled exactly (a wider class is still right)."""
    negate = bool(items) and items[0][0] is C.NEGATE
    parts = []
    for op, av in items[1:] if negate else items:
        if op is C.LITERAL:
            parts.append(_char(av))
        elif op is C.RANGE:
            parts.append(f"{_char(av[0])}-{_char(av[1])}")
        elif op is C.CATEGORY and av in _CLASS:
            parts.append(_CLASS[av])
        elif op is C.CATEGORY and av in _NOT and not negate and len(items) == 1:
            return f"[^{_CLASS[_NOT[av]]}]"
        else:  # a negated category among other items, a locale class: any character is wider
            return _ANY_CHAR
    if not parts:
        return _ANY_CHAR
    return f"[{'^' if negate else ''}{''.join(parts)}]"


def _seq(items: Any, flags: int) -> str:
    return "".join(_op(op, av, flags) for op, av in items)


def _op(op: Any, av: Any, flags: int) -> str:
    if op is C.LITERAL:
        return _char(av)
    if op is C.NOT_LITERAL:
        return f"[^{_char(av)}]"
    if op is C.ANY:
        return _ANY_CHAR if flags & re.S else "[^\\n]"
    if op is C.IN:
        return _in(av)
    if op is C.CATEGORY:
        return _in([(op, av)])
    if op is C.AT:
        if av is C.AT_BEGINNING:
            return "(?m:^)" if flags & re.M else "\\A"
        if av is C.AT_BEGINNING_STRING:
            return "\\A"
        if av is C.AT_END:
            return "(?m:$)" if flags & re.M else ""  # Python's `$` also matches before a final newline: wider
        if av is C.AT_END_STRING:
            return "\\z"
        if av is C.AT_BOUNDARY:
            return "\\b"
        if av is C.AT_NON_BOUNDARY:
            return "\\B"
        raise _Unsupported(str(av))
    if op is C.BRANCH:
        return "(?:" + "|".join(_seq(b, flags) for b in av[1]) + ")"
    if op is C.SUBPATTERN:
        _, add, remove, sub = av
        if add or remove:
            raise _Unsupported("inline flags")
        return "(?:" + _seq(sub, flags) + ")"
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


def widen(pattern: str, flags: int = 0) -> str | None:
    """The RE2 pattern that matches wherever `pattern` does on ASCII text (and maybe elsewhere); None when
    `pattern` has a construct RE2 cannot stand in for (back-references, inline flags, re.I).

    >>> widen(r"\\bno(?!t)\\s")
    '\\\\b\\\\x{6e}\\\\x{6f}[\\\\t\\\\n\\\\x0b\\\\x0c\\\\r\\\\x1c-\\\\x1f ]'
    >>> widen(r"(a)\\1") is None, widen("x", re.I) is None
    (True, True)
    """
    if flags & re.I:
        return None
    try:
        return _seq(P.parse(pattern, flags), flags)
    except (_Unsupported, re.error, RecursionError):
        return None


class FastRegex:
    """A compiled Python regex searched with an RE2 prefilter when one is to be had: the same matches as the
    regex alone (every match is the regex's own), found by skipping to where one may start.

    Below `short` characters the regex alone is faster than a call to RE2, and is used; so it is on
    text that is not ASCII.

    >>> r = FastRegex(re.compile(r"\\b(unable to|failed)"))
    >>> [m.group(0) for m in r.finditer("it failed; unable to go")], r.search("all fine")
    (['failed', 'unable to'], None)
    """

    __slots__ = ("regex", "_pre", "_short", "_iter")

    def __init__(self, regex: re.Pattern[str], short: int = 48, use: bool = True) -> None:
        self.regex, self._short = regex, short
        # `use=False`: a pattern that matches nearly everywhere (numbers) gains nothing from skipping ahead
        self._pre = _prefilter(regex.pattern, regex.flags) if use else None
        # after an empty match finditer may still match at the same place: such a pattern is iterated by Python
        self._iter = self._pre is not None and P.parse(regex.pattern, regex.flags).getwidth()[0] > 0

    def search(self, text: str, data: bytes | None = None) -> re.Match[str] | None:
        """`regex.search(text)`; `data` is the text as ASCII bytes, when the caller has it already."""
        pre = self._pre
        if pre is None or len(text) < self._short or not text.isascii():
            return self.regex.search(text)
        m = pre.search(text.encode("ascii") if data is None else data)
        return None if m is None else self.regex.search(text, m.start())

    def match(self, text: str, data: bytes | None = None) -> re.Match[str] | None:
        """`regex.match(text)`."""
        pre = self._pre
        if pre is None or len(text) < self._short or not text.isascii():
            return self.regex.match(text)
        m = pre.search(text.encode("ascii") if data is None else data)
        return None if m is None or m.start() else self.regex.match(text)

    def finditer(self, text: str, data: bytes | None = None) -> Iterator[re.Match[str]]:
        """`regex.finditer(text)`, one prefiltered search at a time."""
        pre = self._pre
        if pre is None or not self._iter or len(text) < self._short or not text.isascii():
            yield from self.regex.finditer(text)
            return
        data = text.encode("ascii") if data is None else data
        regex, pos = self.regex, 0
        while (w := pre.search(data, pos)) is not None and (m := regex.search(text, w.start())) is not None:
            yield m
            pos = m.end()  # never an empty match (_iter): the next one starts at or after its end


def _prefilter(pattern: str, flags: int = 0) -> Any:
    """RE2 compiled on the widened pattern, or None (no RE2 installed, or a pattern it cannot widen)."""
    if _re2 is None:
        return None
    wide = widen(pattern, flags)
    if wide is None:
        return None
    options = _re2.Options()
    options.never_capture = True
    try:
        return _re2.compile(wide.encode("ascii"), options=options)
    except Exception:  # noqa: BLE001  (RE2 refused it: search with Python alone)
        return None
