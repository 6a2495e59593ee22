"""Concrete atoms of a text (numbers with units, ids, dates, times, emails, money, quoted strings) and where they occur.

The claim reader lists a report's atoms; grounding looks for them in the claim-blind view. Pure.
"""

from __future__ import annotations

import re
from collections import Counter
from functools import lru_cache
from typing import Callable

from referee.audit.extract.lexicon import ID_RE, ids_in
from referee.core.caseless import Cue

_MONTH = r"(jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.?"
_PATTERNS = (
    ("email", re.compile(r"(?<![\w.+-])[\w.+-]+@[\w-]+(\.[\w-]+)+")),  # starts at a word edge: linear
    ("date", re.compile(r"\b\d{4}-\d{2}-\d{2}(?:\b|(?=T\d))|\b\d{1,2}/\d{1,2}/\d{2,4}\b|"
                        rf"\b{_MONTH} \d{{1,2}}(st|nd|rd|th)?(,? \d{{4}})?\b|\b\d{{1,2}} {_MONTH}( \d{{4}})?\b", re.I)),
    # a time after an ISO 8601 date's `T` too ("2024-07-15T14:00:00Z": 14:00:00, never the 00:00 inside it)
    ("time", re.compile(r"(?:\b|(?<=\dT))\d{1,2}:\d{2}(:\d{2}(\.\d+)?)?(\s?[ap]\.?m\.?)?(?:\b|(?=Z\b))|"
                        r"\b\d{1,2}\s?[ap]\.?m\.?(?!\w)", re.I)),
    ("money", re.compile(r"[$€£¥]\s?\d[\d,]*+(\.\d+)?|(?<![\d,.])\d[\d,]*+(\.\d+)?\s?(usd|eur|gbp|dollars?|euros?)\b",
                         re.I)),  # possessive, and a number starts only once: linear on long digit lists
    ("number", re.compile(r"(?<![\w.])-?\d[\d,]*(\.\d+)?(\s?(%|percent|kg|g|km|m|cm|mm|mi|miles?|lbs?|hours?|hrs?|"
                          r"minutes?|mins?|seconds?|secs?|days?|weeks?|months?|years?|bags?|items?|passengers?|"
                          r"people|points?|stars?|ml|l|gb|mb|kb)(?![\w]))?(?![\w])", re.I)),
    ("quoted", re.compile(r"(?<![A-Za-z])[\"“]([^\"”\n]{2,80})[\"”](?![A-Za-z])"
                          r"|(?<![A-Za-z])['‘]([^'’\n]{2,80})['’](?![A-Za-z])")),
)
_QUOTE, _DIGIT = re.compile("[\"“'‘]"), re.compile(r"\d")  # dates, times, money and numbers each need a \d
# case-insensitive kinds search a lowered copy (Cue), the others as they are
_FAST: dict[str, Cue | re.Pattern[str]] = {kind: Cue(pat.pattern, pat.flags & ~re.I) if pat.flags & re.I else pat
                                           for kind, pat in _PATTERNS}
_TOKEN = ID_RE  # an id is a token of these characters (lexicon.ids_in finds them)
_NUM = re.compile(r"-?\d[\d,]*(?:\.\d+)?")
_ONE_DIGIT = re.compile(r"-?\d")


def atoms(text: str | None, limit: int = 40) -> list[str]:
    """The concrete atoms of a text, in order of appearance, without repeats (at most `limit`).

    Plain one-digit numbers and list markers are not atoms: they name nothing checkable.

    >>> atoms("Your order ORD-7731 ships on 2024-03-05 for $19.05 (2 bags).")
    ['ORD-7731', '2024-03-05', '$19.05', '2 bags']
    >>> atoms("Done.")
    []
    """
    return [v for _, v in typed_atoms(text, limit)]


def typed_atoms(text: str | None, limit: int = 40) -> list[tuple[str, str]]:
    """Atoms with their kind (email, date, time, money, id, number, quoted).

    >>> typed_atoms("Visit V-9 on 2024-07-02")
    [('id', 'V-9'), ('date', '2024-07-02')]
    >>> typed_atoms("starts 2024-07-15T14:00:00, ends 2024-07-15T15:30:00.000Z")  # ISO 8601: not "00:00"
    [('date', '2024-07-15'), ('time', '14:00:00'), ('time', '15:30:00.000')]
    """
    if not text:
        return []
    found: list[tuple[int, int, str, str]] = []
    taken = bytearray(len(text))  # which characters an earlier, more specific atom already covers

    def free(a: int, b: int) -> bool:
        return taken.find(1, a, b) < 0

    def take(a: int, b: int) -> None:
        taken[a:b] = b"\x01" * (b - a)

    # what a text must hold for a kind to occur in it: a cheap test that skips the kind's whole scan
    digit = _DIGIT.search(text) is not None
    needs = {"email": "@" in text, "quoted": _QUOTE.search(text) is not None}
    for kind, _ in _PATTERNS:
        if kind == "number":  # ids before bare numbers: ORD-7731 is one atom, not 7731
            # which tokens are ids is decided once per distinct token; most texts hold none, and skip the walk
            ids = {t for t in ids_in(text) if not _NUM.fullmatch(t)}  # ids_in: the ids among _TOKEN's tokens
            for t in ids:
                for a, b in token_spans(text, t):
                    if free(a, b):
                        found.append((a, b, "id", t))
                        take(a, b)
        if not needs.get(kind, digit):
            continue
        for f in _FAST[kind].finditer(text):
            a, b = (f.span(1) if f.group(1) is not None else f.span(2)) if kind == "quoted" else f.span()
            val = text[a:b].strip()
            if kind == "number" and (_ONE_DIGIT.fullmatch(val) or _list_marker(text, a)):
                continue
            if val and free(a, b):
                found.append((a, b, kind, val))
                take(a, b)
    out: list[tuple[str, str]] = []
    seen: set[str] = set()
    for _, _, kind, v in sorted(found):
        if v not in seen:
            seen.add(v)
            out.append((kind, v))
    return out[:limit]


_TOKEN_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-.@")  # _TOKEN's class
_EDGE_CHARS = frozenset("_-.@")  # of those, what a token can neither start nor end with


def token_spans(text: str, token: str) -> list[tuple[int, int]]:
    """Where `token` (a token of _TOKEN) is one of `_TOKEN.finditer(text)`'s tokens, found by `str.find`
    rather than by tokenising the whole text. _TOKEN takes, of each run of its characters, the part from its
    first letter or digit to its last: an occurrence is a token when nothing but `_ - . @` lies between it
    and its run's ends.

    >>> token_spans("ORD-1 and ORD-12, x-ORD-1, ORD-1.", "ORD-1")
    [(0, 5), (27, 32)]
    """
    spans, n, i = [], len(token), text.find(token)
    while i >= 0:
        a, b = i, i + n
        while a > 0 and text[a - 1] in _TOKEN_CHARS:
            a -= 1
            if text[a] not in _EDGE_CHARS:
                break
        else:
            while b < len(text) and text[b] in _TOKEN_CHARS:
                if text[b] not in _EDGE_CHARS:
                    break
                b += 1
            else:
                spans.append((i, i + n))
        i = text.find(token, i + 1)
    return spans


_MONTHS = {m: i for i, m in enumerate("jan feb mar apr may jun jul aug sep oct nov dec".split(), 1)}


def date_key(s: str) -> tuple[int, int] | None:
    """(month, day) of a date atom in any of the usual forms, to compare '2024-05-17' with 'May 17'.

    >>> date_key("2024-05-17"), date_key("May 17th, 2024"), date_key("05/17/2024"), date_key("17 May")
    ((5, 17), (5, 17), (5, 17), (5, 17))
    """
    t = s.lower().strip()
    if m := re.fullmatch(r"\d{4}-(\d{2})-(\d{2})", t):
        return int(m.group(1)), int(m.group(2))
    if m := re.fullmatch(r"(\d{1,2})/(\d{1,2})/\d{2,4}", t):
        return int(m.group(1)), int(m.group(2))
    if m := re.match(r"([a-z]{3})[a-z]*\.? (\d{1,2})", t):
        return (_MONTHS[m.group(1)], int(m.group(2))) if m.group(1) in _MONTHS else None
    if m := re.match(r"(\d{1,2}) ([a-z]{3})", t):
        return (_MONTHS[m.group(2)], int(m.group(1))) if m.group(2) in _MONTHS else None
    return None


def _list_marker(text: str, at: int) -> bool:
    line_start = text.rfind("\n", 0, at) + 1
    return not text[line_start:at].strip() and text[at:at + 3].rstrip()[-1:] in (".", ")")


def norm_number(s: str) -> str | None:
    """A number's canonical text ('1,234.50' -> '1234.5'), or None when there is none.

    >>> norm_number("$1,234.50"), norm_number("19.05 USD"), norm_number("abc")
    ('1234.5', '19.05', None)
    """
    m = _NUM.search(s)
    if not m:
        return None
    try:
        v = float(m.group(0).replace(",", ""))
    except ValueError:
        return None
    return ("%f" % v).rstrip("0").rstrip(".")


# _NUM in two scans that each start at a character the regex engine can skip to (a digit, a '-'), which
# a leading `-?` hides from it: the runs of digits, and the runs right after a '-'
_RUN, _SIGNED = re.compile(r"\d[\d,]*(?:\.\d+)?"), re.compile(r"-\d[\d,]*(?:\.\d+)?")
# _NUM on bytes, and the bytes it can match: a number never holds any other, so a text cut at every other byte
# is in pieces that each hold whole numbers (`-?` is cheap on a piece: every piece starts where a number may)
_NUM_BYTES = re.compile(rb"-?\d[\d,]*(?:\.\d+)?")
_NOT_NUMBER = bytes(c if chr(c) in "0123456789,.-" else 0x20 for c in range(256))
_ASCII = bytes(range(128))


def _haystack_numbers(hay: str) -> frozenset[str]:
    """The numbers of a text, as `_NUM.findall` finds them (a run after a '-' is signed), normalised.

    In C as far as it goes: every byte no number holds is made a space (a non-ASCII character too, unless the
    text holds a digit past ASCII, which re's `\\d` takes), and the text split there; each distinct piece
    is read once, a piece of digits alone being its own number.

    >>> sorted(_haystack_numbers("a1,000.50b -7 x-7 7 007 2024-05-17"))
    ['-17', '-5', '-7', '1000.5', '2024', '7']
    """
    data = hay.encode("utf-8", "surrogatepass")
    if not hay.isascii() and _DIGIT.search(data.translate(None, _ASCII).decode("utf-8", "surrogatepass")):
        return _numbers_of(hay)
    found: set[bytes] = set()
    for piece in set(data.translate(_NOT_NUMBER).split()):
        if piece.isdigit():
            found.add(piece)
        else:
            found.update(_NUM_BYTES.findall(piece))
    return frozenset(n for t in found if (n := _canonical(t.decode("ascii"))) is not None)


def _numbers_of(hay: str) -> frozenset[str]:
    """`_haystack_numbers` by regex on the text itself (one that holds digits past ASCII)."""
    runs, signed = Counter(_RUN.findall(hay)), Counter(s[1:] for s in _SIGNED.findall(hay))
    # a '-' never belongs to a run, so each signed match is one run that _NUM reads with its sign
    found = {r for r, n in runs.items() if n > signed[r]} | {"-" + r for r in signed}
    return frozenset(n for t in found if (n := norm_number(t)) is not None)


def _canonical(token: str) -> str | None:
    """`norm_number` of an ASCII token of _NUM, at once where the token is its own canonical text: digits
    without a leading zero, few enough to be exact as a float."""
    if len(token) <= 15 and token.isdigit() and (token[0] != "0" or len(token) == 1):
        return token
    return norm_number(token)


_DATE_RE, _TIME_RE = _FAST["date"], _FAST["time"]


def _haystack_dates(hay: str) -> frozenset[tuple[int, int]]:
    return frozenset(k for m in _DATE_RE.finditer(hay) if (k := date_key(hay[m.start():m.end()])) is not None)


def _haystack_times(hay: str) -> frozenset[tuple[int, int]]:
    return frozenset(k for m in _TIME_RE.finditer(hay) if (k := time_key(hay[m.start():m.end()])) is not None)


class Haystack:
    """A text atoms are looked for in (a trace's task and observations), folded once, its numbers, dates and
    times found once and only when an atom needs them.

    The text may be given as a function, called when first needed: a trace whose report names no atom
    never makes it.

    >>> h = Haystack(lambda: "Order 5512 total $84.25 on May 3")
    >>> found_in("$84.25", h), found_in("2024-05-03", h), found_in("$9", h)
    (True, True, False)
    """

    __slots__ = ("_text", "_folded", "_squeezed", "_numbers", "_dates", "_times")

    def __init__(self, text: str | Callable[[], str]) -> None:
        self._text = text
        self._folded: str | None = None
        self._squeezed: str | None = None
        self._numbers: frozenset[str] | None = None
        self._dates: frozenset[tuple[int, int]] | None = None
        self._times: frozenset[tuple[int, int]] | None = None

    @property
    def text(self) -> str:
        if callable(self._text):
            self._text = self._text()
        return self._text

    @property
    def folded(self) -> str:
        if self._folded is None:
            self._folded = " ".join(self.squeezed.split())  # _fold(self.text), from what `squeezed` already did
        return self._folded

    @property
    def squeezed(self) -> str:
        """The text lower-cased without `*`: what `folded` is before its whitespace is made single spaces, about
        ten times cheaper to make. An atom without a space is in one exactly where it is in the other, with
        the same characters beside it, or whitespace (which is no letter or digit) where `folded` has a space."""
        if self._squeezed is None:
            self._squeezed = _squeeze(self.text)
        return self._squeezed

    @property
    def numbers(self) -> frozenset[str]:
        if self._numbers is None:
            self._numbers = _haystack_numbers(self.text)
        return self._numbers

    @property
    def dates(self) -> frozenset[tuple[int, int]]:
        if self._dates is None:
            self._dates = _haystack_dates(self.text)
        return self._dates

    @property
    def times(self) -> frozenset[tuple[int, int]]:
        if self._times is None:
            self._times = _haystack_times(self.text)
        return self._times


@lru_cache(maxsize=4)  # haystacks are a trace's observations: megabytes, so only the last few
def _shared(text: str) -> Haystack:
    return Haystack(text)


def time_key(s: str) -> tuple[int, int] | None:
    """(hour, minute) on a 24-hour clock, to compare '07:00 PM' with '19:00:00'.

    >>> time_key("07:00 PM"), time_key("19:00:00"), time_key("12:30 am"), time_key("5pm"), time_key("x")
    ((19, 0), (19, 0), (0, 30), (17, 0), None)
    >>> time_key("14:05:00.250")
    (14, 5)
    """
    m = re.fullmatch(r"(\d{1,2})(?::(\d{2}))?(?::\d{2}(?:\.\d+)?)?\s?([ap])?\.?m?\.?", s.strip().lower())
    if not m or (m.group(2) is None and m.group(3) is None):
        return None
    h, mi = int(m.group(1)), int(m.group(2) or 0)
    if m.group(3) == "p" and h < 12:
        h += 12
    elif m.group(3) == "a" and h == 12:
        h = 0
    return (h, mi) if h < 24 and mi < 60 else None


def _squeeze(s: str) -> str:
    """Lower case, without `*` (markdown emphasis): how atoms and haystacks compare, spaces aside."""
    return s.lower().replace("*", "")


@lru_cache(maxsize=4)  # an atom is looked for in several texts in a row (a stated detail in each write)
def _fold(s: str) -> str:
    return " ".join(_squeeze(s).split())  # str.split's whitespace is re's \s: the same text, in C


_ALNUM = frozenset("0123456789abcdefghijklmnopqrstuvwxyz")  # the haystack is folded: lower case


def _whole(needle: str, hay: str, left: bool, right: bool) -> bool:
    """Whether `needle` occurs in `hay` with no [0-9a-z] just before it (when `left`) or just after it (when
    `right`): a regex with those lookarounds, without compiling one per atom."""
    n, i = len(needle), hay.find(needle)
    while i >= 0:
        if not (left and i > 0 and hay[i - 1] in _ALNUM) and not (right and hay[i + n:i + n + 1] in _ALNUM):
            return True
        i = hay.find(needle, i + 1)
    return False


def found_in(atom: str, haystack: str | Haystack) -> bool:
    """Whether an atom occurs in a text: numbers compare as numbers, the rest case- and space-folded.

    >>> found_in("$1,234.50", '{"amount": 1234.5}'), found_in("ORD-7731", "order ord-7731 shipped")
    (True, True)
    >>> found_in("2 bags", "3 bags"), found_in("12", '{"id": "T-1203"}'), found_in("2 bags", "12 bags")
    (False, False, False)
    """
    h = haystack if isinstance(haystack, Haystack) else _shared(haystack)
    folded = _fold(atom).rstrip(".,;:!?")
    hay = h.folded if " " in folded else h.squeezed
    if folded and (folded[0].isdigit() or folded[-1].isdigit()):
        # a number or an id ending in one is found whole: 12 is not in T-1203, ORD-77 not in ORD-771
        if _whole(folded, hay, folded[0].isalnum(), folded[-1].isalnum()):
            return True
    elif folded in hay:
        return True
    if (key := date_key(atom)) is not None:
        return key in h.dates
    if (t := time_key(atom)) is not None:
        return t in h.times
    if re.search(r"[A-Za-z]{3,}", re.sub(r"(usd|eur|gbp|dollars?|euros?|percent|bags?|items?|"
                                         r"passengers?|people|points?|stars?)", "", atom, flags=re.I)) \
            and not re.fullmatch(r"[\d\s.,$€£¥%-]*\w{0,8}", atom):
        return False
    n = norm_number(atom)
    if n is None or re.search(r"\d{4}-\d{2}|\d/\d|:\d", atom):
        return False
    if h._numbers is None and _number_token(n, h.text):
        return True  # what h.numbers would say, without finding every number of a long text first
    return n in h.numbers


def _number_token(n: str, text: str) -> bool:
    """Whether the canonical number `n` (not negative) is, as it stands, one of the numbers `_NUM` finds in
    `text`: an occurrence with no digit, `,`, `.` or `-` just before it, and neither a digit, a `,` nor a `.` and
    a digit just after it, is a whole token, and a canonical number is its own canonical text. False says
    nothing (ask `_haystack_numbers`).

    >>> _number_token("84.25", '{"price": 84.25}'), _number_token("84.25", "184.25 84.250"), _number_token("7", "x-7")
    (True, False, False)
    """
    if n[:1] == "-":
        return False
    i, k, size = text.find(n), len(n), len(text)
    while i >= 0:
        j = i + k
        if (i == 0 or not (text[i - 1].isdigit() or text[i - 1] in ",.-")) and (
                j == size or not (text[j].isdigit() or text[j] == "," or
                                  (text[j] == "." and j + 1 < size and text[j + 1].isdigit()))):
            return True
        i = text.find(n, i + 1)
    return False
