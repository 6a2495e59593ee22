"""Derived report values: a number the report computed from the task's and the observations' values. Pure.

A report atom not found as it stands may still follow from what the agent saw: a sum, difference, product or
ratio of two values (not their mean: the mean of two years is a year, 1808 from 1813 and 1803), the sum, mean or
count of a listed array, whole years or days between two dates, a unit or percent conversion, each compared at the
precision the report shows. `derive` says how, or None.

Which values are tried is bounded, so that a long or adversarial trace cannot make it quadratic:

- *anchors* (at most `MAX_ANCHORS`): the numbers of the task, then the report's own atoms that were found in the
  task or an observation (the values the report's sentences are about), in that order;
- *context* (at most `MAX_CONTEXT`): the distinct numbers of the last `CONTEXT_CHARS` characters of the task and
  observations (the latest observations, nearest the report), latest first; the same window gives the listed
  arrays (at most `MAX_LISTS`), the dates (at most `MAX_DATES`) and the numbers written with a unit.

Two-value arithmetic pairs an anchor with an anchor or a context value, never two context values: at most
`MAX_ANCHORS * (MAX_ANCHORS + MAX_CONTEXT)` pairs, each giving five values, whatever the trace holds. Both operands
must show at least 2 significant digits (2, 6, 10, 100 reach too many values), and a sum or difference must be
exact (2023 - 152.3 is not 1871): only a product or ratio is rounded to the precision shown.

Non-triviality (a small number follows from almost anything): only numbers and money are ever derived (never an
id, email, quoted string, date or time); the atom must show at least 2 significant digits, and at least 3 when it is
a context value rounded or an anchor combined with a context value (the most candidates: 16 x 64 pairs); a count of a
listed array may be any integer from 2 up; whole years or days between two dates any integer from 2 up when the
report names the unit, from 10 up when it does not; a percent conversion, a listed array's sum or mean and a unit
conversion need 2 significant digits.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date
from typing import Callable, Iterable, Iterator

from referee.audit.view.atoms import norm_number

MAX_ANCHORS = 16
MAX_CONTEXT = 48
MAX_LISTS = 32
MAX_DATES = 12
CONTEXT_CHARS = 20_000
_MAX_LIST_ITEMS = 500  # a longer array is counted, never summed

_NUMBER = re.compile(r"(?<![\w.])-?\d[\d,]*(?:\.\d+)?(?![\w])")
_ISO_DATE = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")
_UNIT_WORD = r"(km|kilometers?|kilometres?|mi|miles?|kg|kilograms?|lbs?|pounds?|°?\s?[cf]\b|celsius|fahrenheit|" \
             r"seconds?|secs?|minutes?|mins?|hours?|hrs?|days?|weeks?)"
_WITH_UNIT = re.compile(r"(?<![\w.,])(-?\d[\d,]*(?:\.\d+)?)\s?" + _UNIT_WORD + r"(?![a-z])", re.I)
_AMOUNT = re.compile(r"[$€£¥]?\s?-?\d[\d,]*(?:\.\d+)?(?:\s?(?:%|°\s?[cf]|[a-z]{1,12}))?", re.I)
# a number starts only where no digit, comma or point precedes it: a match tried at every "1," of "1,1,1,...!"
# would scan to the end from each, quadratic (tools/redos_check.py)
_PERCENT = re.compile(r"(?<![\w.,])(-?\d[\d,]*(?:\.\d+)?)\s?(%|percent)", re.I)
# a unit's dimension and its size in that dimension's base unit
_UNITS: dict[str, tuple[str, float]] = {
    "km": ("length", 1000.0), "kilometer": ("length", 1000.0), "kilometre": ("length", 1000.0),
    "mi": ("length", 1609.344), "mile": ("length", 1609.344),
    "kg": ("mass", 1.0), "kilogram": ("mass", 1.0), "lb": ("mass", 0.45359237), "pound": ("mass", 0.45359237),
    "second": ("time", 1.0), "sec": ("time", 1.0), "minute": ("time", 60.0), "min": ("time", 60.0),
    "hour": ("time", 3600.0), "hr": ("time", 3600.0), "day": ("time", 86400.0), "week": ("time", 604800.0),
}


@dataclass(frozen=True)
class Context:
    """The bounded values a report atom may be derived from (see the module docstring for the bounds)."""

    anchors: tuple[float, ...]
    values: tuple[float, ...]
    lists: tuple[tuple[float | None, ...], ...]  # each listed array's items (None: an item that is no number)
    dates: tuple[date, ...]
    with_unit: tuple[tuple[float, str], ...]  # a number written with a unit: (value, unit's canonical name)
    percents: tuple[float, ...]


def context_of(text: str, task: str, grounded: Iterable[str]) -> Context:
    """The bounded candidate values of a haystack `text` (task + observations), its `task` and the report's
    grounded atoms.

    >>> c = context_of("Order 5512\\n{\\"prices\\": [39, 67]}", "Order 5512", ["$39"])
    >>> c.anchors, c.lists
    ((5512.0, 39.0), ((39.0, 67.0),))
    """
    anchors: list[float] = []
    for v in [*_numbers(task), *(n for a in grounded if _derivable(a) and (n := _value(a)) is not None)]:
        if v not in anchors and len(anchors) < MAX_ANCHORS:
            anchors.append(v)
    window = text[-CONTEXT_CHARS:]
    values: list[float] = []
    for v in reversed(_numbers(window)):
        if v not in values:
            values.append(v)
            if len(values) >= MAX_CONTEXT:
                break
    dates: list[date] = []
    for m in _ISO_DATE.finditer(task + "\n" + window):
        d = _date(m)
        if d is not None and d not in dates and len(dates) < MAX_DATES:
            dates.append(d)
    with_unit = tuple((f, u) for m in _WITH_UNIT.finditer(window)
                      if (f := _float(m.group(1))) is not None and (u := _unit(m.group(2))) is not None)
    percents = tuple(f for m in _PERCENT.finditer(window) if (f := _float(m.group(1))) is not None)
    return Context(tuple(anchors), tuple(values), tuple(_lists(window)), tuple(dates), with_unit[:MAX_CONTEXT],
                   percents[:MAX_CONTEXT])


def derive(atom: str, ctx: Context) -> str | None:
    """How a number or money atom of the report follows from the context, or None.

    >>> c = context_of('{"a": 39, "b": 67, "born": "1983-05-02", "today": "2024-06-10"}', "", ["39", "67"])
    >>> derive("$106", c), derive("41 years", c)
    ('$106: 39 + 67', '41 years: years from 1983-05-02 to 2024-06-10')
    >>> derive("$107", c), derive("ORD-106", c)
    (None, None)
    """
    if not _derivable(atom):
        return None
    x = _value(atom)
    if x is None:
        return None
    shown = _shown(atom)
    for how in _derivations(x, shown, _significant(shown), _unit_of(atom), atom.rstrip().endswith(("%", "percent")),
                            ctx):
        return f"{atom.strip()}: {how}"
    return None


def _derivations(x: float, shown: str, digits: int, unit: str | None, percent: bool, ctx: Context) -> Iterator[str]:
    """Every way (in a fixed order) the value `x`, shown as `shown`, follows from the context."""
    same = _matcher(x, shown)
    if x == int(x) and x >= 2 and unit not in ("year", "day"):
        for items in ctx.lists:
            if len(items) == int(x):
                yield f"the count of a listed array of {len(items)} items"
                break
    if unit in ("year", "day", None) and ctx.dates and x == int(x) and x >= (2 if unit else 10):
        for d0 in ctx.dates:
            for d1 in ctx.dates:
                if d0 < d1:
                    if unit in ("year", None) and same(_years(d0, d1)):
                        yield f"years from {d0.isoformat()} to {d1.isoformat()}"
                    if unit == "day" and same(float((d1 - d0).days)):
                        yield f"days from {d0.isoformat()} to {d1.isoformat()}"
    if digits < 2:
        return
    if unit is not None and unit in _UNITS:
        dim, size = _UNITS[unit]
        for v, u in ctx.with_unit:
            d, s = _UNITS[u]
            if d == dim and u != unit and same(v * s / size):
                yield f"{_fmt(v)} {u} in {_plural(unit)}"
    if unit in ("c", "f"):
        for v, u in ctx.with_unit:
            if u == ("f" if unit == "c" else "c") and same((v - 32) / 1.8 if unit == "c" else v * 1.8 + 32):
                yield f"{_fmt(v)} °{u.upper()} in °{unit.upper()}"
    pool = ctx.anchors + ctx.values
    for v in pool:
        if v != x and same(v) and (digits >= 3 or v in ctx.anchors):
            yield f"{_fmt(v)} rounded"
        if percent and same(v * 100):
            yield f"{_fmt(v)} as a percent"
    if not percent:
        for p in ctx.percents:
            if same(p / 100):
                yield f"{_fmt(p)}% as a fraction"
    for items in ctx.lists:
        nums = [v for v in items if v is not None]
        if len(nums) == len(items) >= 2 and len(items) <= _MAX_LIST_ITEMS:
            if same(sum(nums)):
                yield f"the sum of a listed array of {len(nums)} numbers"
            if same(sum(nums) / len(nums)):
                yield f"the mean of a listed array of {len(nums)} numbers"
    def exact(y: float) -> bool:  # a sum or difference is not rounded
        return abs(y - x) <= 1e-9 * max(1.0, abs(x))

    for i, a in enumerate(ctx.anchors):
        if _significant(_fmt(a)) < 2:
            continue  # 2, 5, 10, 100 ... reach too many values
        for j, b in enumerate(pool):
            if j < len(ctx.anchors) and j <= i or a == b or _significant(_fmt(b)) < 2:
                continue  # each pair of anchors once
            if digits < 3 and j >= len(ctx.anchors):
                continue  # a 2-digit result of a context value: too easily found
            for k, (how, y) in enumerate(_pair(a, b)):
                ok = exact if k < 2 else same
                if ok(y) or (percent and same(y * 100)):
                    yield how + (" as a percent" if percent and not ok(y) else "")


def _plural(unit: str) -> str:
    return unit if len(unit) <= 2 else unit + "s"


def _pair(a: float, b: float) -> Iterator[tuple[str, float]]:
    fa, fb = _fmt(a), _fmt(b)
    yield f"{fa} + {fb}", a + b
    yield (f"{fa} - {fb}", a - b) if a >= b else (f"{fb} - {fa}", b - a)
    yield f"{fa} × {fb}", a * b
    if b:
        yield f"{fa} / {fb}", a / b
    if a:
        yield f"{fb} / {fa}", b / a


def _matcher(x: float, shown: str) -> Callable[[float], bool]:
    """Whether a computed value, rounded to the precision `shown` has, is `x`."""
    decimals = len(shown.split(".")[1]) if "." in shown else 0

    def same(y: float) -> bool:
        # half a unit of the last shown digit either way (84.25 shows as 84.2 or 84.3), and a float's error
        return abs(y) < 1e15 and abs(y - x) <= 0.5 * 10 ** -decimals + 1e-9 * max(1.0, abs(x))
    return same


def _derivable(atom: str) -> bool:
    """Numbers and money only, a unit word allowed (ids, emails, quoted strings, dates and times are never derived).

    >>> _derivable("$1,234.50"), _derivable("37.0 °C"), _derivable("ORD-106"), _derivable("2024-05-01")
    (True, True, False, False)
    """
    return _AMOUNT.fullmatch(atom.strip().rstrip(",.;:")) is not None


def _value(atom: str) -> float | None:
    n = norm_number(atom)
    return float(n) if n is not None else None


def _shown(atom: str) -> str:
    m = re.search(r"-?\d[\d,]*(?:\.\d+)?", atom)
    return m.group(0).replace(",", "") if m else atom


def _significant(shown: str) -> int:
    """Significant digits a number shows ('0.05': 1, '140': 2, '14.30': 4)."""
    digits = shown.lstrip("-").replace(".", "").lstrip("0")
    return len(digits) if "." in shown else len(digits.rstrip("0"))


def _unit_of(atom: str) -> str | None:
    m = re.search(r"\d\s?([a-z°]+(?:\s?[cf])?)\s*$", atom.strip(), re.I)
    return _unit(m.group(1)) if m else None


def _unit(word: str) -> str | None:
    w = word.lower().replace("°", "").strip()
    if w in ("c", "celsius"):
        return "c"
    if w in ("f", "fahrenheit"):
        return "f"
    if w in ("year", "years", "yr", "yrs"):
        return "year"
    w = {"lbs": "lb", "hrs": "hr", "mins": "min", "secs": "sec"}.get(w, w)
    w = w[:-1] if w.endswith("s") and w[:-1] in _UNITS else w
    return w if w in _UNITS else None


def _numbers(text: str) -> list[float]:
    return [v for m in _NUMBER.finditer(text) if (v := _float(m.group(0))) is not None]


def _float(s: str) -> float | None:
    try:
        return float(s.replace(",", ""))
    except ValueError:
        return None


def _fmt(v: float) -> str:
    return ("%f" % v).rstrip("0").rstrip(".")


def _date(m: re.Match[str]) -> date | None:
    try:
        return date(int(m.group(1)), int(m.group(2)), int(m.group(3)))
    except ValueError:
        return None


def _years(a: date, b: date) -> float:
    """Whole years from a to b (an age)."""
    return float(b.year - a.year - ((b.month, b.day) < (a.month, a.day)))


# a string never closed runs to the end of the text: tried again from each later quote it would be quadratic
_LIST_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*(?:"|\\?\Z)|[\[\]{},]')


def _lists(text: str) -> list[tuple[float | None, ...]]:
    """The JSON-like arrays of a text (innermost first), each as its items' numbers, at most MAX_LISTS."""
    out: list[tuple[float | None, ...]] = []
    stack: list[tuple[str, int, list[str]]] = []  # bracket, start of the current item, the items so far
    for m in _LIST_TOKEN.finditer(text):
        t = m.group(0)
        if t in "[{":
            stack.append((t, m.end(), []))
        elif t == ",":
            if stack:
                kind, start, items = stack[-1]
                items.append(text[start:m.start()])
                stack[-1] = (kind, m.end(), items)
        elif t in "]}":
            if not stack:
                continue
            kind, start, items = stack.pop()
            if kind == "[" and t == "]":
                last = text[start:m.start()]
                if last.strip() or items:
                    items.append(last)
                if len(items) >= 2:
                    out.append(tuple(_float(i.strip()) if _NUMBER.fullmatch(i.strip()) else None for i in items))
                    if len(out) >= MAX_LISTS:
                        break
    return out
