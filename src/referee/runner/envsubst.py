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
from urllib.parse import unquote

from referee.plan.envvars import expand, references, shown, url_part  # noqa: F401 (re-exported for captures and plugins)


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


MIN_SCRUB = 8  # shorter values (a port, an id) occur by chance in output: shown as `${NAME}`, not searched for


class Secrets:
    """The secret values of one run, each with what is written in its place (`${NAME}`, or `***`).

    Values of at least MIN_SCRUB characters are searched for in free text, as given and URL-encoded.

    >>> s = Secrets.of_plan({"API_TOKEN", "HOST"}, {"API_TOKEN": "t0k3n-abc", "HOST": "h"}, public={"HOST"})
    >>> s.scrub("GET http://h/x?token=t0k3n-abc failed")
    'GET http://h/x?token=${API_TOKEN} failed'
    """

    def __init__(self) -> None:
        self._shown: dict[str, str] = {}
        self._pattern: re.Pattern[str] | None = None

    @classmethod
    def of_plan(cls, names: Iterable[str], env: Mapping[str, str], public: Iterable[str] = ()) -> Secrets:
        """The secrets of a plan: the set, non-public variables among `names` (what its captures substitute)."""
        s = cls()
        for name in sorted(set(names) - set(public)):
            s.add(env.get(name, ""), "${" + name + "}")
        return s

    def add(self, value: str | None, placeholder: str) -> None:
        """Scrub `value` from now on (a value shorter than MIN_SCRUB is not searched for)."""
        from urllib.parse import quote

        if not value or len(value) < MIN_SCRUB:
            return
        # as given, as a URL's user part carries it (`url_part`: a driver's error may quote the URL), as a path
        for form in (value, url_part(value), url_part(value, keep_colon=True), quote(value)):
            if form not in self._shown:
                self._shown[form] = placeholder
                self._pattern = None

    def scrub(self, text: str) -> str:
        """`text` with every secret value replaced by its placeholder (longest first)."""
        if not self._shown or not text:
            return text
        if self._pattern is None:
            self._pattern = re.compile("|".join(re.escape(v) for v in sorted(self._shown, key=len, reverse=True)))
        return self._pattern.sub(lambda m: self._shown[m.group(0)], text)

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
        if not self._shown:
            shutil.copyfileobj(src, dst, chunk)
            return
        forms = {form.encode("utf-8", "surrogatepass"): name.encode() for form, name in self._shown.items()}
        pattern = re.compile(b"|".join(re.escape(f) for f in sorted(forms, key=len, reverse=True)))
        keep = max(len(f) for f in forms) - 1
        buf = b""
        while True:
            data = src.read(chunk)
            buf += data
            if not data:
                dst.write(pattern.sub(lambda m: forms[m.group(0)], buf))
                return
            # a value that starts before `safe` lies wholly in `buf`; what starts later waits for more bytes
            safe, pos, out = len(buf) - keep, 0, []
            for m in pattern.finditer(buf):
                if m.start() >= safe:
                    break
                out += [buf[pos:m.start()], forms[m.group(0)]]
                pos = m.end()
            cut = max(pos, safe)
            out.append(buf[pos:cut])
            dst.write(b"".join(out))
            buf = buf[cut:]

    def __bool__(self) -> bool:
        return bool(self._shown)
