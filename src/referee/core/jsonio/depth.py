"""JSON that nests at most so deep: the depth limit every reader of a user's file applies, on text or on a parsed value.

A value nested deeper than the limit is refused with a ValueError before anything walks it, so no
reader, view or check downstream meets a RecursionError. Two ways to measure, both exact:
`nested_deeper` counts a parsed value's containers level by level; `too_deep` measures a text not
parsed yet by its brackets, its strings cut out first.
"""

from __future__ import annotations

import json
import re
import sys
from typing import Any, Callable, Iterator, TextIO

from pydantic_core import from_json

from referee.core.safetext import clean

MAX_DEPTH = 200  # nesting levels a record may have (objects and arrays)
# characters one line of a small JSON lines file may hold (gold labels, splits, predictions): a label is a few
# hundred; a longer line is refused before it is parsed (or held whole: the line is read up to this many)
MAX_LINE_CHARS = 4 << 20


_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
_ONE_KIND = bytes.maketrans(b"{}", b"[]")  # well formed: one kind of bracket nests the same


def too_deep(text: str, start: int = 0, end: int | None = None, limit: int = MAX_DEPTH) -> bool:
    """Whether the JSON value in text[start:end] (well formed) nests objects and arrays more than `limit` deep.

    Fewer than `limit` brackets cannot be that deep (counted in C). Otherwise its strings are cut out
    (escapes first, then every other piece between quotes), all but the brackets dropped, braces
    made brackets, and each pass that removes the innermost `[]` pairs is one level: all in C, no parse.

    >>> too_deep('[[["]]]]]"]]]', limit=3), too_deep("[[[]]]", limit=2), too_deep('{"a": ["{{", {}]}', limit=3)
    (False, True, False)
    """
    end = len(text) if end is None else end
    if end - start <= 2 * limit or text.count("[", start, end) + text.count("{", start, end) <= limit:
        return False
    # as UTF-8 bytes, where every step runs at memchr speed (no ASCII byte is part of another character)
    t = text[start:end].encode("utf-8", "surrogatepass")
    if b"\\" in t:
        t = t.replace(b"\\\\", b"").replace(b'\\"', b"")  # left to right, as JSON pairs its escapes
    rest = b"".join(t.split(b'"')[::2]).translate(_ONE_KIND, _NOT_BRACKETS)
    for _ in range(limit):
        if not rest:
            return False
        rest = rest.replace(b"[]", b"")
    return bool(rest)


def nested_deeper(value: Any, limit: int = MAX_DEPTH) -> bool:
    """Whether a parsed JSON value nests objects and arrays more than `limit` deep: `too_deep` of its text,
    found by walking its containers level by level (no text pass: the parse already made the tree).

    >>> nested_deeper([[[]]], limit=3), nested_deeper({"a": [{"b": []}]}, limit=3), nested_deeper({}, limit=0)
    (False, True, True)
    """
    level = [value] if type(value) is dict or type(value) is list else []
    depth = 0
    while level:
        depth += 1
        if depth > limit:
            return True
        below: list[Any] = []
        for v in level:
            below.extend([x for x in (v.values() if type(v) is dict else v) if type(x) is dict or type(x) is list])
        level = below
    return False


def parsed_deeper(value: Any, text: str, start: int = 0, end: int | None = None, limit: int = MAX_DEPTH) -> bool:
    """`nested_deeper(value, limit)` for a value parsed from text[start:end]: a text with at most `limit`
    brackets cannot nest deeper, and its value is not walked.

    >>> parsed_deeper([[1]], "[[1]]", limit=1), parsed_deeper([[1]], "[[1]]", limit=2)
    (True, False)
    """
    end = len(text) if end is None else end
    return text.count("[", start, end) + text.count("{", start, end) > limit and nested_deeper(value, limit)


# a surrogate's escape in JSON text: `json` keeps a lone one as a lone code point, which cannot be written as UTF-8
# (pydantic-core refuses the text instead, so only values `json` parsed can hold one)
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def without_lone_surrogates(value: Any, text: str, start: int = 0, end: int | None = None) -> Any:
    """A value `json` parsed from text[start:end], with each lone surrogate in its strings and keys replaced by
    U+FFFD (`safetext.clean`) when the text holds a surrogate's escape at all: a truncated emoji (`"\\ud83d"`)
    in an agent's output is kept as a readable mark, and the record can be hashed and written; a well-formed
    pair was decoded to its character by the parse and is never touched.

    >>> without_lone_surrogates({"a\\ud800": ["x\\udfff", 1, "\\U0001f600"]}, '{"a\\\\ud800": ["x\\\\udfff", 1]}')
    {'a\\ufffd': ['x\\ufffd', 1, '\\U0001f600']}
    """
    return _cleaned(value) if _SURROGATE_ESCAPE.search(text, start, len(text) if end is None else end) else value


def _cleaned(value: Any) -> Any:
    t = type(value)
    if t is str:
        return clean(value)
    if t is dict:
        return {_cleaned(k): _cleaned(v) for k, v in value.items()}
    if t is list:
        return [_cleaned(v) for v in value]
    return value


def too_many_digits(exc: BaseException) -> bool:
    """Whether `json` refused a number for its length: an integer of more digits than Python converts to an int
    (`sys.get_int_max_str_digits()`, 4300 by default; a guard against quadratic time), not a syntax error.

    >>> try:
    ...     json.loads("9" * 5000)
    ... except ValueError as exc:
    ...     too_many_digits(exc), too_many_digits(ValueError("Expecting value"))
    (True, False)
    """
    return isinstance(exc, ValueError) and not isinstance(exc, json.JSONDecodeError) and \
        "integer string conversion" in str(exc)


def digits_message() -> str:
    """What is wrong with a record `too_many_digits` refused, said without Python's advice to raise the limit."""
    return f"an integer of more than {sys.get_int_max_str_digits()} digits"


def loads(text: str | bytes) -> Any:
    """`json.loads` for one record of a file a user gives: ValueError for a value nested deeper than MAX_DEPTH
    (bytes are read as UTF-8; a bad byte, or an integer too long to convert, is a ValueError too).

    >>> loads('{"a": [1]}')
    {'a': [1]}
    >>> loads("[" * 300 + "]" * 300)
    Traceback (most recent call last):
    ValueError: nested deeper than 200 levels
    """
    if isinstance(text, (bytes, bytearray)):
        text = bytes(text).decode("utf-8-sig")
    return loads_text(text, max_depth=MAX_DEPTH, message=f"nested deeper than {MAX_DEPTH} levels")


def parse_shallow(text: str) -> Any:
    """pydantic-core's parse of a JSON text that nests at most MAX_DEPTH levels; ValueError for anything else
    (a deeper value, bad JSON, more than one value, what pydantic-core refuses and `json` may accept).

    >>> parse_shallow('{"a": [1]}'), parse_shallow(" 1 ")
    ({'a': [1]}, 1)
    >>> parse_shallow("[" * 201 + "]" * 201)
    Traceback (most recent call last):
    ValueError: nested deeper than 200 levels
    """
    try:
        value = from_json(text)
    except ValueError as exc:
        if "recursion limit" in str(exc):  # pydantic-core's own limit is about MAX_DEPTH: deeper still
            raise ValueError(f"nested deeper than {MAX_DEPTH} levels") from None
        raise
    if parsed_deeper(value, text):  # counted in C; walked only when the text holds more brackets than the limit
        raise ValueError(f"nested deeper than {MAX_DEPTH} levels")
    return value


def loads_text(text: str, *, max_depth: int, message: str) -> Any:
    """`json.loads` with the depth limit: ValueError(`message`) for a value nested deeper than `max_depth`.

    pydantic-core parses first (about twice as fast): where it accepts a text, `json` gives the same value; what
    it refuses (`json`'s errors, and a lone surrogate escape or nesting past 200 levels) goes to `json`.
    """
    try:
        value = from_json(text)
    except ValueError:
        pass
    else:
        if parsed_deeper(value, text, limit=max_depth):  # bracket count in C; a walk only past `max_depth` of them
            raise ValueError(message)
        return value
    try:
        value = json.loads(text)
    except RecursionError:
        raise ValueError(message) from None
    except ValueError as exc:
        if too_many_digits(exc):
            raise ValueError(digits_message()) from None
        raise
    if nested_deeper(value, max_depth):
        raise ValueError(message)
    return without_lone_surrogates(value, text)


def json_lines(fh: TextIO, fail: Callable[[str, int], Exception], *,
               max_chars: int = MAX_LINE_CHARS) -> Iterator[tuple[int, Any]]:
    """(line number, value) of each non-blank line of an open JSON lines text, through `loads` (depth-capped),
    each line read up to `max_chars` characters; a line that does not parse, nests deeper than MAX_DEPTH or is
    longer is `raise fail(why, line number)` (the caller's one-line error naming its file).

    >>> import io
    >>> list(json_lines(io.StringIO('{"a": 1}\\n\\n[2]\\n'), lambda why, n: ValueError(f"line {n}: {why}")))
    [(1, {'a': 1}), (3, [2])]
    >>> list(json_lines(io.StringIO("[" * 5000), lambda why, n: ValueError(f"line {n}: {why}")))
    Traceback (most recent call last):
    ValueError: line 1: nested deeper than 200 levels
    """
    lineno = 0
    while line := fh.readline(max_chars + 1):
        lineno += 1
        if len(line.rstrip("\r\n")) > max_chars:
            raise fail(f"a line longer than {max_chars} characters", lineno)
        if not line.strip():
            continue
        try:
            value = loads(line)
        except ValueError as exc:  # a JSONDecodeError (its .msg, without the position), too deep, too many digits
            raise fail(exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc), lineno) from None
        yield lineno, value
