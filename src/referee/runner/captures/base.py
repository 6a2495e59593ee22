"""The capture contract: a `take` that writes evidence files into one folder.

A capture's parameters are plan data (`referee.plan.captures`); its records are run-directory data
(`referee.rundir.schema`). This package holds only the code that performs captures.
"""

from __future__ import annotations

import base64
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, ClassVar, Literal

from referee.core.fsutil import atomic_write_text
from referee.core.registry import Registry
from referee.plan.captures import BUILTIN_SPECS, CaptureParams, capture_specs
from referee.rundir.schema import CaptureFailure, dump_record, record_file
from referee.runner.envsubst import Secrets, expand, references, shown


def searchable(data: bytes, encoding: str | None = None, *, cut: bool = False) -> tuple[str, str | None]:
    """Output or a body as the text validators search, plus its exact bytes as base64 when they are not text in
    `encoding` (UTF-8 when None): such bytes are read with U+FFFD, never searched as empty. With `cut`, `data`
    is a kept tail that may begin inside a character: those continuation bytes are dropped.

    >>> searchable(b"Saved\\xff ok")
    ('Saved\ufffd ok', 'U2F2ZWT/IG9r')
    >>> searchable("caf\xe9 Saved".encode("latin-1"), "utf-8")
    ('caf\ufffd Saved', 'Y2Fm6SBTYXZlZA==')
    >>> searchable("é ok".encode()[1:], cut=True)
    (' ok', None)
    """
    skip = 0
    while cut and skip < 3 and skip < len(data) and 0x80 <= data[skip] < 0xC0:
        skip += 1
    data = data[skip:]
    try:
        return data.decode(encoding or "utf-8"), None
    except (UnicodeDecodeError, LookupError):
        return data.decode("utf-8", errors="replace"), base64.b64encode(data).decode("ascii")


@dataclass
class CaptureContext:
    """What a capture may use: the app URL, the runner's own browser page, where to write.

    `out_dir` is `evidence/<step>/<phase>/`; a capture writes its files there and returns them,
    primary file first (the one a validator gets when it names the capture).
    """

    step_id: str
    phase: Literal["before", "after"]
    out_dir: Path
    app_url: str | None = None
    cwd: Path | None = None
    env: dict[str, str] = field(default_factory=dict)
    page: Any = None  # the runner's Playwright page, when the actor is a browser (an agent may drive it)
    pages: Any = None  # which page screen captures read (`referee.runner.pages.PageSource`), browser actor only
    public: frozenset[str] = frozenset()  # the plan's `public_env`
    secrets: Secrets = field(default_factory=Secrets)  # shared by the run's captures
    sandbox: Any = None  # the run's isolation (`referee.runner.isolation.Sandbox`), which command captures run in
    # the run's hashing budget (`RunStore.admit_copy`): EvidenceError for a file not to copy (sparse, past it)
    admit: Callable[[os.stat_result], None] | None = None

    def expand(self, value: str) -> str:
        """`value` with `${NAME}` substituted from the runner's environment: what the capture uses.

        Write it nowhere: every non-public value substituted is scrubbed from what the runner writes.

        >>> ctx = CaptureContext("s", "after", Path("."), env={"TOKEN": "s3cr3t-t0k3n"})
        >>> ctx.expand("/x?t=${TOKEN}"), ctx.shown("/x?t=${TOKEN}"), ctx.scrub("bad t=s3cr3t-t0k3n")
        ('/x?t=s3cr3t-t0k3n', '/x?t=${TOKEN}', 'bad t=${TOKEN}')
        """
        for name, _ in references(value):
            if name not in self.public:
                self.secrets.add(self.env.get(name), "${" + name + "}")
        return expand(value, self.env)

    def shown(self, value: str) -> str:
        """`value` as the runner writes it down: public variables substituted, secret ones as `${NAME}`."""
        return shown(value, self.env, self.public)

    def scrub(self, text: str) -> str:
        """Free text (an error, a header, an output) with the run's secret values replaced by `${NAME}`."""
        return self.secrets.scrub(text)

    def join_url(self, url: str) -> str:
        """Join a relative URL to app.url.

        >>> CaptureContext("s", "after", Path("."), app_url="http://127.0.0.1:5/").join_url("/api/x")
        'http://127.0.0.1:5/api/x'
        """
        if "://" in url or not self.app_url:
            return url
        return self.app_url.rstrip("/") + "/" + url.lstrip("/")


class CaptureFailed(Exception):
    """Raised by `take` when the capture cannot be taken; the runner records it as a CaptureFailure.

    `detail` is what the capture knew before it failed (a SQL URL with its password masked, a query).
    """

    def __init__(self, why: str, detail: dict[str, Any] | None = None) -> None:
        super().__init__(why)
        self.why = why
        self.detail = dict(detail or {})


def write_failure(out_dir: Path, params: CaptureParams, why: str, detail: dict[str, Any] | None = None) -> Path:
    """The one way a failed capture is written: a CaptureFailure in `<name>.error.json`."""
    path = Path(out_dir) / record_file(params.name, "capture_failure")
    record = CaptureFailure(capture_kind=params.kind, capture_error=why, detail=dict(detail or {}))
    atomic_write_text(path, dump_record(record))
    return path


class CaptureKind:
    """Base class of a capture kind. `take` may do I/O; it must write only under `ctx.out_dir`.

    A capture that cannot be taken raises `CaptureFailed` (any other exception counts as one too);
    the runner writes the failure record (`write_failure`) and the grader says ERROR with the reason.
    """

    kind: ClassVar[str] = ""
    Params: ClassVar[type[CaptureParams]] = CaptureParams
    summary: ClassVar[str] = ""

    def take(self, params: CaptureParams, ctx: CaptureContext) -> list[Path]:
        raise NotImplementedError


# an entry point names a CaptureKind subclass (or a factory of one); registered kinds are one shared instance
captures: Registry[CaptureKind] = Registry("capture kind", "referee.captures", item=CaptureKind, name_attr="kind")


def register(kind: str):
    """Class decorator: register a CaptureKind subclass under `kind`.

    A built-in kind takes its `Params` and `summary` from its plan spec; any other kind registered
    here becomes a plan spec too, so plans can name it.
    """

    def deco(cls):
        cls.kind = kind
        builtin = BUILTIN_SPECS.get(kind)
        if builtin is not None:
            cls.Params, cls.summary = builtin.Params, builtin.summary
        else:
            capture_specs.add(kind, cls)
        captures.add(kind, cls)
        return cls

    return deco
