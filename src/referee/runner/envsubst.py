"""`${VAR}` at run time: the runner substitutes the real value and writes down only what may be shown.

The substitution rules live with the plan (`referee.plan.envvars`); this module holds what the
runner does with them: `Secrets`, the values it substituted that are not public, which it scrubs
from every text it writes (evidence records, failure reasons, the manifest), and `redact_url`,
which hides a database URL's password.
"""

from __future__ import annotations

import re
import shutil
from typing import Any, BinaryIO, Iterable, Mapping
from urllib.parse import quote, quote_plus, unquote

from referee.plan.envvars import MIN_SCRUB, expand, references, shown, url_part  # noqa: F401 (re-exported for captures and plugins)


def redact_url(url: str) -> str:
    """Hide the password of a URL before it is stored as evidence (SQLAlchemy's own rendering).

    >>> redact_url("postgresql+psycopg://bob:pw@127.0.0.1:5/${DB}")
    'postgresql+psycopg://bob:***@127.0.0.1:5/${DB}'
    >>> redact_url("sqlite:///${DB_DIR}/app.db")
    'sqlite:///${DB_DIR}/app.db'
    """
    try:
        from sqlalchemy.engine import make_url

        u = make_url(url)
        if u.password is None:
            return url  # nothing to hide: keep it exactly as written
        shown = u.render_as_string(hide_password=True)
    except Exception:  # not a URL SQLAlchemy reads (or no SQLAlchemy): mask what looks like user:password@
        return re.sub(r"(://[^:/@]+:)[^@]*@", r"\1***@", url)
    # the rendering percent-encodes a `${VAR}` left in the URL: show it as the plan wrote it
    return re.sub(r"%24%7B(.*?)%7D", lambda m: "${" + unquote(m.group(1)) + "}", shown)


class Secrets:
    """The secret values of one run, each with what is written in its place (`${NAME}`, or `***`).

    Values of at least MIN_SCRUB characters are searched for in free text, as given and URL-encoded.

    >>> s = Secrets.of_plan({"API_TOKEN", "HOST"}, {"API_TOKEN": "t0k3n-abc", "HOST": "h"}, public={"HOST"})
    >>> s.scrub("GET http://h/x?token=t0k3n-abc failed")
    'GET http://h/x?token=${API_TOKEN} failed'
    """

    def __init__(self) -> None:
        self._values: dict[str, str] = {}  # each value, with what is written in its place
        self._shown: dict[str, str] = {}  # each literal form of each value (`forms`)
        self._pattern: re.Pattern[str] | None = None
        self._bytes_pattern: re.Pattern[bytes] | None = None

    @classmethod
    def of_plan(cls, names: Iterable[str], env: Mapping[str, str], public: Iterable[str] = ()) -> Secrets:
        """The secrets of a plan: the set, non-public variables among `names` (what its captures substitute)."""
        s = cls()
        for name in sorted(set(names) - set(public)):
            s.add(env.get(name, ""), "${" + name + "}")
        return s

    def add(self, value: str | None, placeholder: str) -> None:
        """Scrub `value` from now on (a value shorter than MIN_SCRUB is not searched for)."""
        if not value or len(value) < MIN_SCRUB:
            return
        if value not in self._values:
            self._values[value] = placeholder
            self._pattern = self._bytes_pattern = None
        # the forms a file is checked for (`forms`): as given, as a URL's user part carries it (`url_part`: a
        # driver's error may quote the URL), as a path, a query (`+` for a space) and an HTTP client's query, and
        # lower- and upper-cased (a browser lowercases a URL's host; free text is scrubbed in any case)
        for form in (value, url_part(value), url_part(value, keep_colon=True), quote(value), quote_plus(value),
                     quote(value, safe=_QUERY_SAFE), value.lower(), value.upper()):
            self._shown.setdefault(form, placeholder)

    def scrub(self, text: str) -> str:
        """`text` with every secret value replaced by its placeholder (longest first), percent-encoded forms too,
        in any letter case (a browser logs a URL's host lowercased).

        >>> s = Secrets.of_plan(["T"], {"T": "p@ss w\u00f6rd-long"})
        >>> s.scrub("GET /?t=p@ss%20w%C3%B6rd-long /?t=p%40ss+w%c3%b6rd-long http://P@SS W\u00d6RD-LONG.invalid/")
        'GET /?t=${T} /?t=${T} http://${T}.invalid/'
        """
        if not self._values or not text:
            return text
        if self._pattern is None:
            self._pattern = re.compile("|".join(f"({_encoded(v)})" for v in self._longest()), re.IGNORECASE)
        names = [self._values[v] for v in self._longest()]
        return self._pattern.sub(lambda m: names[(m.lastindex or 1) - 1], text)

    def _longest(self) -> list[str]:
        return sorted(self._values, key=len, reverse=True)

    def scrub_all(self, value: Any) -> Any:
        """`scrub` on every string inside a JSON-like value (mapping keys too).

        >>> Secrets.of_plan(["PW"], {"PW": "hunter2-hunter2"}).scrub_all({"e": ["x hunter2-hunter2"]})
        {'e': ['x ${PW}']}
        """
        if isinstance(value, str):
            return self.scrub(value)
        if isinstance(value, dict):
            return {self.scrub_all(k): self.scrub_all(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [self.scrub_all(v) for v in value]
        return value

    def forms(self) -> tuple[tuple[bytes, str], ...]:
        """Each form of each secret value as UTF-8 bytes, with its placeholder (what a file must not hold)."""
        return tuple((form.encode("utf-8", "surrogatepass"), name) for form, name in self._shown.items())

    def scrub_stream(self, src: BinaryIO, dst: BinaryIO, chunk: int = 1 << 20) -> None:
        """Copy `src` to `dst` with every secret value replaced by its placeholder, in chunks (a log of any
        size; bytes that are not UTF-8 kept as they are). A value split across two chunks is still found.

        >>> import io; out = io.BytesIO(); s = Secrets.of_plan(["T"], {"T": "abcdefgh12"})
        >>> s.scrub_stream(io.BytesIO(b"x abcdefgh12 \\xff y abcdefgh12"), out, chunk=5); out.getvalue()
        b'x ${T} \\xff y ${T}'
        """
        if not self._values:
            shutil.copyfileobj(src, dst, chunk)
            return
        if self._bytes_pattern is None:
            self._bytes_pattern = re.compile(b"|".join(b"(" + _encoded(v).encode("utf-8", "surrogatepass") + b")"
                                                       for v in self._longest()), re.IGNORECASE)
        pattern, names = self._bytes_pattern, [self._values[v].encode() for v in self._longest()]
        keep = max(_longest_form(v) for v in self._values) - 1
        buf = b""
        while True:
            data = src.read(chunk)
            buf += data
            if not data:
                dst.write(pattern.sub(lambda m: names[(m.lastindex or 1) - 1], buf))
                return
            # a value that starts before `safe` lies wholly in `buf`; what starts later waits for more bytes
            safe, pos, out = len(buf) - keep, 0, []
            for m in pattern.finditer(buf):
                if m.start() >= safe:
                    break
                out += [buf[pos:m.start()], names[(m.lastindex or 1) - 1]]
                pos = m.end()
            cut = max(pos, safe)
            out.append(buf[pos:cut])
            dst.write(b"".join(out))
            buf = buf[cut:]

    def __bool__(self) -> bool:
        return bool(self._values)


_QUERY_SAFE = "/@:|{}[]!$&'()*+,;=?^`"  # what an HTTP client (httpx) leaves as it is in a URL's query


def _encoded(value: str) -> str:
    """A regex for `value` as given or with any of its characters (but letters and digits) percent-encoded as
    UTF-8, either hex case, a space also as `+`: what an HTTP client sent and an app logged.

    >>> bool(re.fullmatch(_encoded("a b\u00e9"), "a+b%c3%A9")), bool(re.fullmatch(_encoded("a b"), "a%2Bb"))
    (True, False)
    """
    out = []
    for c in value:
        if c.isascii() and c.isalnum():
            out.append(c)
            continue
        enc = "".join("%" + "".join(f"[{h}{h.lower()}]" if h.isalpha() else h for h in f"{b:02X}")
                      for b in c.encode("utf-8", "surrogatepass"))
        out.append("(?:" + "|".join([re.escape(c), enc] + ([r"\+"] if c == " " else [])) + ")")
    return "".join(out)


def _longest_form(value: str) -> int:
    """The most bytes `value` can take in any form `_encoded` matches (each UTF-8 byte as `%XX`)."""
    return sum(len(c.encode("utf-8", "surrogatepass")) * 3 if not (c.isascii() and c.isalnum()) else 1
               for c in value)
