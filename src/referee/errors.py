"""One error hierarchy: every user-facing failure names the file, the place, the rule and the fix."""

from __future__ import annotations


class RefereeError(Exception):
    """Base of every error referee raises on purpose.

    The CLI prints `str(err)` as one line and exits with `exit_code`; no traceback.

    >>> str(RefereeError("bad thing", file="plan.yaml", place="3:5", fix="do X"))
    'plan.yaml:3:5: bad thing; do X'
    """

    exit_code = 2

    def __init__(self, message: str, *, file: str | None = None, place: str | None = None,
                 fix: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.file = file
        self.place = place
        self.fix = fix

    def where(self) -> str:
        """`file:place: ` (or the part of it known) that every line about this error starts with.

        >>> RefereeError("x", file="p.yaml", place="3:5").where(), RefereeError("x", place="3:5").where()
        ('p.yaml:3:5: ', '3:5: ')
        """
        from referee.core.safetext import visible

        # a file name is the user's, and may hold a newline: the error must stay one line
        file = visible(self.file, keep_newlines=False) if self.file else None
        return ":".join(p for p in (file, self.place) if p) + ": " if file or self.place else ""

    def __str__(self) -> str:
        tail = f"; {self.fix}" if self.fix else ""
        return f"{self.where()}{self.message}{tail}"


class UsageError(RefereeError):
    """A bad command line or option value."""


class PlanError(RefereeError):
    """A plan file that cannot be loaded or does not validate."""


class PlanValueError(ValueError):
    """A value a plan model's own rule refuses, with the fix `referee check` shows for it (pydantic keeps the
    exception, and the loader reads `fix` from it)."""

    def __init__(self, message: str, fix: str) -> None:
        super().__init__(message)
        self.fix = fix


class UnknownKindError(RefereeError):
    """A registry lookup for a name nobody registered."""


class PluginError(RefereeError):
    """A registration or entry point that does not give what its registry holds (see referee.core.registry)."""


class PluginFailed(Exception):
    """A plugin backend (not referee's own) raised on one trace: that trace is one skipped record, the audit goes on
    (referee's own code raising is a bug, reported as one)."""


def plugin_failure(backend: object, what: str, exc: Exception) -> PluginFailed | None:
    """The PluginFailed for an exception a plugin backend raised, naming it; None for referee's own backends.

    >>> Mine = type("Mine", (), {"name": "mine", "__module__": "my_plugin"})
    >>> str(plugin_failure(Mine(), "extractor", RuntimeError("no GPU")))
    "extractor 'mine' (my_plugin.Mine) raised RuntimeError: no GPU"
    """
    kind = type(backend)
    if kind.__module__.split(".")[0] == "referee":
        return None
    return PluginFailed(f"{what} {getattr(backend, 'name', '?')!r} ({kind.__module__}.{kind.__qualname__}) raised "
                        f"{exc_brief(exc)}")


class EvidenceError(RefereeError):
    """Evidence that is missing, unreadable, tampered with, or escapes the run directory."""

    exit_code = 1


class HoldsSecret(EvidenceError):
    """A file that holds a byte string it must not (the signing key): `fsutil.hash_regular(refuse=...)`."""


class CaptureError(RefereeError):
    """The runner could not take a capture (recorded as evidence of the failure, not raised to the user)."""

    exit_code = 1


class ActorError(RefereeError):
    """The acting agent could not be started at all."""

    exit_code = 1


class AppError(RefereeError):
    """The app under test would not start or never became ready."""

    exit_code = 1


class TraceError(RefereeError):
    """A trace record that cannot be read; names the file, line and run_id."""


class OwnOutputError(TraceError):
    """A record that is one of referee's own outputs (an audit record, a gold label, a summary), not a trace: a bad
    record when its file is named as input, left out with a note when a folder walk met it."""

    def __init__(self, message: str, *, what: str = "", **where: str | None) -> None:
        super().__init__(message, **where)
        self.what = what


class PolicyError(RefereeError):
    """A policy file that cannot be loaded or does not validate."""


class ToolMapError(RefereeError):
    """A user's tool map (`--tools tools.yaml`) that cannot be loaded or does not validate."""


class BackendError(RefereeError):
    """An evidence extractor or claim reader that got no answer it can stand by (a transport failure, a
    timeout, a malformed response). The auditor records the sample as `unknown`, lists the message in the
    record's `errors`, caches nothing, and audits the run again on resume."""

    exit_code = 1


class BusyError(RefereeError):
    """An output file that another process is writing now (see `referee.core.lockfile`)."""


class GoldError(RefereeError):
    """Gold labels that cannot be read or do not match the audit records."""


class MissingExtraError(RefereeError):
    """An optional dependency is not installed.

    >>> str(MissingExtraError("ocr", "pytesseract"))
    "pytesseract is not installed; install with: pip install 'referee[ocr]'"
    """

    def __init__(self, extra: str, module: str) -> None:
        super().__init__(f"{module} is not installed", fix=f"install with: pip install 'referee[{extra}]'")
        self.extra = extra


def require(module: str, extra: str):
    """Import an optional dependency or raise MissingExtraError naming the extra.

    >>> require("json", "llm").__name__
    'json'
    """
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingExtraError(extra, module.split(".")[0]) from exc


def exc_brief(exc: BaseException) -> str:
    """An exception in a few words: its type and the start of its message (why a record was skipped).

    >>> exc_brief(KeyError("steps"))
    "KeyError: 'steps'"
    """
    return f"{type(exc).__name__}: {str(exc)[:200]}"


def with_article(word: str) -> str:
    """`word` after its indefinite article, for messages: 'an aria', 'a dom'.

    >>> with_article("aria"), with_article("screenshot")
    ('an aria', 'a screenshot')
    """
    return f"{'an' if word[:1].lower() in 'aeiou' else 'a'} {word}"
