"""Which steps of a plan a run performs: `--only ID[,ID]` and `-k EXPR`, as pytest's `-k` reads it.

`-k` holds words joined by `and`, `or`, `not` and parentheses; a word matches a step whose id
contains it, ignoring case. Steps keep their order in the plan; the steps left out are recorded
as not run (SKIPPED, "deselected by --only/-k"), never performed and never PASS.
"""

from __future__ import annotations

import difflib
import re
from typing import Callable, Iterable, Sequence

from referee.errors import UsageError

Match = Callable[[str], bool]
_TOKEN = re.compile(r"\(|\)|[^\s()]++")  # findall steps over blanks (a leading `\s*` rescanned trailing ones)
_KEYWORDS = ("and", "or", "not")


def split_ids(values: Iterable[str]) -> list[str]:
    """`--only a,b --only c` as ['a', 'b', 'c'] (empty items dropped, order kept, no repeats).

    >>> split_ids(["a,b", " c ,a"])
    ['a', 'b', 'c']
    """
    out: list[str] = []
    for v in values:
        for part in v.split(","):
            part = part.strip()
            if part and part not in out:
                out.append(part)
    return out


def parse_keyword(expr: str) -> Match:
    """Compile a `-k` expression into a test on step ids (UsageError for a malformed one).

    >>> m = parse_keyword("login and not (admin or Slow)")
    >>> [m(s) for s in ("login_user", "login_admin", "login_slow", "logout")]
    [True, False, False, False]
    """
    tokens = [t for t in _TOKEN.findall(expr)]
    if not tokens:
        raise _bad(expr, "it is empty")
    pos = 0

    def peek() -> str | None:
        return tokens[pos] if pos < len(tokens) else None

    def take() -> str:
        nonlocal pos
        pos += 1
        return tokens[pos - 1]

    def or_expr() -> Match:
        parts = [and_expr()]
        while peek() == "or":
            take()
            parts.append(and_expr())
        if len(parts) == 1:
            return parts[0]
        return lambda s: any(p(s) for p in parts)

    def and_expr() -> Match:
        parts = [not_expr()]
        while peek() == "and":
            take()
            parts.append(not_expr())
        if len(parts) == 1:
            return parts[0]
        return lambda s: all(p(s) for p in parts)

    def not_expr() -> Match:
        if peek() == "not":
            take()
            inner = not_expr()
            return lambda s: not inner(s)
        return atom()

    def atom() -> Match:
        tok = peek()
        if tok is None:
            raise _bad(expr, "it ends where a word or '(' was expected")
        take()
        if tok == "(":
            inner = or_expr()
            if peek() != ")":
                raise _bad(expr, "a '(' is not closed")
            take()
            return inner
        if tok == ")" or tok in _KEYWORDS:
            raise _bad(expr, f"unexpected '{tok}'")
        word = tok.lower()
        return lambda s: word in s.lower()

    match = or_expr()
    if pos != len(tokens):
        raise _bad(expr, f"unexpected '{tokens[pos]}'")
    return match


def _bad(expr: str, why: str) -> UsageError:
    return UsageError(f"-k {expr!r}: {why}", fix="words joined by and/or/not, with parentheses: "
                                                 "-k 'login and not admin'")


def selected(step_ids: Sequence[str], only: Sequence[str] = (), keyword: str | None = None) -> list[str]:
    """The ids a run performs, in plan order: in `only` (when given) and matching `keyword` (when given).

    >>> selected(["a", "b_x", "c_x"], only=["a", "c_x"], keyword="x")
    ['c_x']
    """
    match = parse_keyword(keyword) if keyword else None
    keep = set(only)
    return [s for s in step_ids if (not only or s in keep) and (match is None or match(s))]


def check_selection(step_ids: Sequence[str], only: Sequence[str] = (), keyword: str | None = None) -> None:
    """UsageError for an `--only` id no plan has (with the nearest id), or a selection of no step at all.

    `step_ids`: every step id of every plan of the run.

    >>> check_selection(["login", "logout"], only=["lgin"])
    Traceback (most recent call last):
    referee.errors.UsageError: --only: no step 'lgin'; did you mean 'login'? steps: login, logout
    """
    known = list(dict.fromkeys(step_ids))
    for sid in only:
        if sid not in known:
            near = difflib.get_close_matches(sid, known, n=1, cutoff=0.6)
            listing = ", ".join(known[:20]) + (", ..." if len(known) > 20 else "")
            raise UsageError(f"--only: no step '{sid}'",
                             fix=(f"did you mean '{near[0]}'? " if near else "") + f"steps: {listing}")
    if (only or keyword) and not selected(known, only, keyword):
        what = " and ".join(x for x in ((f"--only {','.join(only)}" if only else ""),
                                          (f"-k {keyword!r}" if keyword else "")) if x)
        raise UsageError(f"{what} selects no step", fix=f"steps: {', '.join(known[:20])}")
