"""Untrusted text (what an agent wrote) made safe to store and to show: on a console, in XML, in HTML.

An agent's claim note, a captured body, a file name it chose: any of these may hold rich markup
(`[/]`), ANSI escape sequences, NUL and other control characters, lone surrogates (from a JSON
`"\\ud800"`) or bidirectional overrides. Stored text keeps what the agent wrote, with only lone
surrogates replaced (they cannot be written as UTF-8); shown text turns every such character into a
visible escape (`\\x1b`, `\\x00`, `\\u202e`), so a reader sees what was there and nothing is acted on.
"""

from __future__ import annotations

import html as _html
import os
import re
from typing import Any

REPLACEMENT = "\ufffd"
_SURROGATE = re.compile("[\ud800-\udfff]")
# C0 and C1 controls, DEL, and the bidirectional overrides and isolates (they reorder what is shown)
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069"
                      "\ufeff\ud800-\udfff\ufffe\uffff]")
_CONTROL_NL = re.compile(_CONTROL.pattern[:-1] + "\n\t]")  # the same, and newlines and tabs too


def _visible(m: re.Match[str]) -> str:
    c = ord(m.group())
    return f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}"


def clean(text: Any) -> str:
    """Text that can be written as UTF-8: lone surrogates replaced by U+FFFD, everything else kept.

    >>> clean("lone \\ud800 half"), clean("ok \\x00")
    ('lone \\ufffd half', 'ok \\x00')
    """
    s = "" if text is None else str(text)
    return _SURROGATE.sub(REPLACEMENT, s)


def fs_name(name: Any) -> str:
    """A file name as text that can be stored: bytes that are not UTF-8 as `\\xff` escapes.

    Python hands a name that is not UTF-8 over as lone surrogates (`os.fsdecode`), which cannot be
    written as UTF-8; `clean` would make them U+FFFD, this keeps which bytes they were.

    >>> import os; fs_name(os.fsdecode(b"bad\\xff.txt")), fs_name("ok.txt"), fs_name(b"caf\\xc3\\xa9")
    ('bad\\\\xff.txt', 'ok.txt', 'café')
    """
    raw = name if isinstance(name, bytes) else str(name)
    if isinstance(raw, str):
        try:
            raw = os.fsencode(raw)
        except UnicodeEncodeError:  # a surrogate no file system made (from a JSON "\ud800", say)
            return clean(raw)
    return raw.decode("utf-8", "backslashreplace")


def visible(text: Any, *, keep_newlines: bool = True) -> str:
    """Every control character, bidi override and lone surrogate as a visible escape.

    >>> visible("\\x1b[31mred\\x00")
    '\\\\x1b[31mred\\\\x00'
    >>> visible("a\\nb", keep_newlines=False), visible("\\u202egnp.exe"), visible("\\ud800")
    ('a\\\\x0ab', '\\\\u202egnp.exe', '\\\\ud800')
    """
    s = "" if text is None else str(text)
    return (_CONTROL if keep_newlines else _CONTROL_NL).sub(_visible, s)


def for_console(text: Any, *, keep_newlines: bool = False) -> str:
    """Text for `rich` markup strings: control characters visible, then markup escaped.

    >>> for_console("[/] [bold]x\\x1b[0m")
    '\\\\[/] \\\\[bold]x\\\\x1b[0m'
    """
    from rich.markup import escape

    return escape(visible(text, keep_newlines=keep_newlines))


def for_xml(text: Any) -> str:
    """Text valid in XML 1.0 (tab, newline and carriage return kept; every other invalid character visible).

    ElementTree escapes `<`, `&` and quotes; this removes what no escaping can make valid (NUL, a
    lone surrogate, U+FFFE).

    >>> for_xml("a\\x00b\\tc\\ud800")
    'a\\\\x00b\\tc\\\\ud800'
    """
    return visible(text)


_MD_PUNCT = re.compile(r"([!-/:-@\[-`{-~])")  # every ASCII punctuation character: CommonMark escapes each


def for_markdown(text: Any, *, limit: int | None = None) -> str:
    """Text for one line of GitHub-flavoured Markdown, a table cell included: control characters and newlines
    visible, then every ASCII punctuation character backslash-escaped, so no markup, HTML, link, autolink
    (`http:` loses its colon's meaning), entity or table pipe acts. `limit`: at most that many characters of
    the text, then an ellipsis.

    >>> print(for_markdown("| <b>x</b> **y** [z](http://e) &amp;\\nnext"))
    \\| \\<b\\>x\\<\\/b\\> \\*\\*y\\*\\* \\[z\\]\\(http\\:\\/\\/e\\) \\&amp\\;\\\\x0anext
    """
    s = visible(text, keep_newlines=False)
    if limit is not None and len(s) > limit:
        s = s[:limit] + "\u2026"
    return _MD_PUNCT.sub(r"\\\1", s)


def for_html(text: Any) -> str:
    """Text for HTML text or a quoted attribute: control characters visible, then HTML-escaped.

    >>> for_html('<script>"x"\\x00</script>')
    '&lt;script&gt;&quot;x&quot;\\\\x00&lt;/script&gt;'
    """
    return _html.escape(visible(text), quote=True)
