"""What the library's audit entry takes and gives: options, the events it reports, and its result.

`referee.audit_runs(paths, out=..., options=AuditOptions(...), events=...)` (referee.audit.run.session) takes
every knob `referee audit` has as one frozen `AuditOptions`, and tells what happens as it goes through an
`AuditEvents` sink: a notebook passes none (`NoEvents`), the CLI passes one that prints. Nothing here imports the
pipeline, so building options costs nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Literal, Protocol

from referee.core.timeouts import MAX_RETRIES

if TYPE_CHECKING:
    from referee.audit.present.summary import AuditSummary
    from referee.audit.records import AuditRecord
    from referee.audit.run.pipeline import AuditStats, RecordLine
    from referee.audit.trace import TraceItem
    from referee.errors import TraceError


@dataclass(frozen=True)
class LLMOptions:
    """The model endpoint for the `llm` backends (ignored by `rules`): `referee audit --base-url ... --model ...`.

    `temperature=None` sends none (models that take only their default); `base_url` and the key fall back to
    OPENAI_BASE_URL and OPENAI_API_KEY (or the variable `api_key_env` names).
    """

    base_url: str | None = None
    model: str | None = None
    concurrency: int = 8  # traces in flight on threads
    timeout_s: float = 60.0
    connect_timeout_s: float = 10.0
    max_tokens: int | None = None
    temperature: float | None = 0.0
    api_key_env: str | None = None
    max_retries: int = MAX_RETRIES


@dataclass(frozen=True)
class AuditOptions:
    """Every knob of `referee audit`, one field each (the flag's name with `_` for `-`, unless said).

    >>> AuditOptions(policy="strict", workers=1).backend
    'rules'
    """

    policy: str = "causal"  # a shipped policy's name or a policy file's path
    format: str | None = None  # --format: a reader's name; None: sniffed per file and run folder
    include: tuple[str, ...] = ()
    allow_pickle: bool = False
    allow_unsigned: bool = False
    session_runs: Literal["per-prompt", "whole"] = "per-prompt"
    backend: str = "rules"  # the evidence extractor
    claims: str = "rules"  # the claim reader
    tools: Path | None = None
    samples: int | None = None  # None: the extractor's default (1 for rules, 5 for llm)
    cache: Path | None = None  # None: OUT.cache.sqlite
    on_error: Literal["skip", "stop"] = "skip"
    llm: LLMOptions = field(default_factory=LLMOptions)
    executor: Literal["local", "dask"] = "local"
    workers: int | None = None  # None: every core, started only for work that pays for them
    scheduler: str | None = None
    chunk_size: int = 50
    record_cpu_s: float = 10.0
    record_wall_s: float = 30.0
    record_memory_mib: int = 512
    gold_out: Path | None = None
    gold_scorer: str | None = None
    gold_threshold: float = 1.0
    reaudit_changed: bool = False
    # files the caller writes beside the audit (option name, path), e.g. ("summary_json", Path("s.json")):
    # checked as --out is, so that none is also an input or another output
    other_outputs: tuple[tuple[str, Path], ...] = ()


class AuditEvents(Protocol):
    """What an audit tells as it goes, one method per kind; `NoEvents` does nothing with any of them."""

    def status(self, text: str) -> None:
        """How the audit runs (a pool started, an option not used): a full line, `referee: ...`."""

    def preview(self, line: str) -> None:
        """Before the audit: what a referee run directory given as input holds, one line each."""

    def written(self, record: AuditRecord | RecordLine) -> None:
        """A record appended to the audit file (a worker's comes as the `RecordLine` written)."""

    def skipped(self, error: TraceError) -> None:
        """A bad record skipped (`on_error="skip"`): it is also in the result's `stats.errors`."""

    def duplicate(self, error: TraceError) -> None:
        """A run_id that came before in this input: audited once, this repeat not."""

    def ignored_fields(self, file: str, fields: tuple[str, ...]) -> None:
        """Fields a file's records carry that trace v1 does not define (said once per file and field)."""

    def note(self, text: str) -> None:
        """Something found beside a run that could not be used, or about the audit file (a damaged line)."""

    def gold(self, item: TraceItem) -> None:
        """A gold label a run carries (it never reaches the audit)."""


class NoEvents:
    """An `AuditEvents` sink that does nothing: subclass it and override what you want to hear of.

    >>> class Count(NoEvents):
    ...     n = 0
    ...     def written(self, record): self.n += 1
    >>> Count().note("ignored")
    """

    def status(self, text: str) -> None:
        pass

    def preview(self, line: str) -> None:
        pass

    def written(self, record: AuditRecord | RecordLine) -> None:
        pass

    def skipped(self, error: TraceError) -> None:
        pass

    def duplicate(self, error: TraceError) -> None:
        pass

    def ignored_fields(self, file: str, fields: tuple[str, ...]) -> None:
        pass

    def note(self, text: str) -> None:
        pass

    def gold(self, item: TraceItem) -> None:
        pass


EVENTS = ("status", "preview", "written", "skipped", "duplicate", "ignored_fields", "note", "gold")


class CallbackEvents(NoEvents):
    """An `AuditEvents` sink made of plain functions, one per event named; the others do nothing.

    >>> notes = []
    >>> CallbackEvents(note=notes.append).note("a damaged line"); notes
    ['a damaged line']
    """

    def __init__(self, **handlers: Callable[..., Any]) -> None:
        unknown = sorted(set(handlers) - set(EVENTS))
        if unknown:
            raise TypeError(f"no audit event {', '.join(unknown)} (the events: {', '.join(EVENTS)})")
        for name, fn in handlers.items():
            setattr(self, name, fn)


@dataclass
class AuditResult:
    """What an audit did: its counts (`stats`), the gold the runs carried, and what the walk left out.

    `summarize()` reads the audit file for the summary (every run in it, not only this audit's).
    """

    out: Path
    stats: AuditStats | None = None  # None: nothing to audit (run directories with no SKIPPED step)
    elapsed_s: float = 0.0
    backend_calls: int = 0
    gold: dict[str, bool] = field(default_factory=dict)  # run_id -> completed, for the runs that carry gold
    gold_rows: list[dict] = field(default_factory=list)  # what --gold-out holds (run_id, completed, group, task)
    left_out: list[str] = field(default_factory=list)  # run folders --format left out: "PATH (format)"
    earlier_outputs: list[str] = field(default_factory=list)  # files an earlier audit wrote, met by the walk
    unnamed: list[str] = field(default_factory=list)  # files left out by name that look like an agent's log

    @property
    def nothing_to_audit(self) -> bool:
        return self.stats is None

    def summarize(self, each: Callable[[AuditRecord], Any] | None = None) -> AuditSummary:
        """The summary of the audit file (the newest record of each run_id; a damaged line passed over), with
        gold where the runs carried it; `each` sees every record counted."""
        from referee.audit.present.summary import AuditSummary, summarize
        from referee.audit.run.auditfile import iter_records

        if self.stats is None:
            return AuditSummary()

        def records():
            for _, rec in iter_records(self.out, skip_damaged=True):
                if each is not None:
                    each(rec)
                yield rec

        summary = summarize(records(), self.gold or None)
        s = self.stats
        summary.duplicates, summary.stale, summary.retried, summary.reaudited = (s.duplicates, s.stale, s.retried,
                                                                                  s.reaudited)
        return summary
