"""What lies on disk in a run directory: the manifest, the capture records, claims.json.

One schema, shared by the runner that writes these files and by everything that reads them back
(the grader's validators, `referee lint`, the auditor's run-directory reader). Every record is a
pydantic model with `extra="forbid"` and a version field; files written before the version field
existed read as version 1.

Capture records are one model per capture kind, a union discriminated on `kind`. A failed capture
is always written one way: a `CaptureFailure` in `<name>.error.json`. Older run directories, whose
sql/ddb records carried a `capture_error` key inside `<name>.json`, still read: such a record reads
as a `CaptureFailure` (see `parse_record`).
"""

from __future__ import annotations

import datetime as _dt
import json
from pathlib import Path, PurePosixPath
from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, RootModel, StrictBool, TypeAdapter, ValidationError, field_validator

from referee.core.fsutil import loads_json, read_regular
from referee.core.safetext import clean
from referee.errors import EvidenceError, UsageError

Phase = Literal["before", "after"]

# what referee reads of a run directory, at most: the agent can write there, so nothing is read unbounded
MAX_MANIFEST_BYTES = 256 << 20
MAX_CLAIMS_BYTES = 64 << 20
MAX_RESULTS_BYTES = 256 << 20
MAX_EVIDENCE_BYTES = 512 << 20   # one evidence file (a file capture copies at most 256 MiB)
MAX_NOTE_CHARS = 10_000
MAX_CLAIM_EVIDENCE = 1000        # paths an agent may cite in one claim
MAX_PATH_CHARS = 4096


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class FileEntry(_Model):
    """One evidence file: who captured it, when, and its SHA-256 at capture time."""

    path: str
    step: str
    phase: Phase
    captured_by: Literal["runner", "agent"]
    capture: str | None = None
    kind: str
    sha256: str
    size: int
    time: str
    primary: bool = True
    error: str | None = None  # the capture failed; this file records why


class StepRecord(_Model):
    status: Literal["started", "done", "not_run"] = "started"
    started: str | None = None
    finished: str | None = None
    actor_exit: int | None = None
    actor_timed_out: bool = False
    actor_error: str | None = None
    actor_started: bool = True  # False: the agent could not be started at all; nobody acted (ERROR)
    actor_killed: int = 0  # agent processes still running when the step ended, killed then (daemons)
    stdout_bytes: int | None = None  # all the agent wrote; agent/<step>/stdout.txt keeps the last 1 MB
    stderr_bytes: int | None = None
    # setuid/setgid bits and file capabilities the runner took off what the agent could write (its folder, home,
    # workspace), one line per file; absent: none found (or a run written before)
    privileges_removed: list[str] | None = None
    not_run: Literal["deselected", "fail_fast"] | None = None  # status not_run: --only/-k left it out, or
    note: str | None = None  # --fail-fast stopped the run before it (`note` says after which step)
    # where the step's time went (absent in runs written before): the agent's own run, and the runner's
    # captures, sealing and hashing around it; `hash_s` and `hashed_bytes`: hashing the agent's files
    agent_s: float | None = None
    runner_s: float | None = None
    hash_s: float | None = None
    hashed_bytes: int | None = None
    # the agent's files the runner did not take as evidence, each with why (sparse, past the hashing budget)
    not_taken: list["NotTaken"] = Field(default_factory=list)
    # --retries: the earlier attempts of this step, each with its files under attempts/<step>/<n>/;
    # this record and the files listed in `Manifest.files` are the last attempt's
    attempts: list["AttemptRecord"] = Field(default_factory=list)


class NotTaken(_Model):
    """A file the agent left that the runner did not hash: a validator citing it is ERROR with `reason`."""

    path: str  # relative to the run directory: agent/<step>/...
    reason: str


class AttemptRecord(_Model):
    """One earlier attempt of a retried step: what the agent did, how it was graded then, and its files.

    Its evidence and agent files were moved to `folder` (`attempts/<step>/<n>/`) when the step was
    performed again; `files` lists them there, with the hashes taken at capture time.
    """

    attempt: int
    folder: str
    record: StepRecord  # the step's record as that attempt left it
    verdict: str  # the grader's verdict of that attempt, over its evidence, when it ended
    reason: str = ""
    claim: dict[str, Any] | None = None
    files: list[FileEntry] = Field(default_factory=list)


StepRecord.model_rebuild()


class RunOptions(_Model):
    """How the run was asked to go (`referee run --only/-k/--fail-fast/--retries`); absent: every step, once."""

    only: list[str] = Field(default_factory=list)
    keyword: str | None = None  # the -k expression
    fail_fast: bool = False
    retries: int = 0


IsolationMode = Literal["user", "bwrap", "none"]


class IsolationRecord(_Model):
    """How the agent ran: `none` means unisolated, and reports say so (docs/security-isolation.md)."""

    mode: IsolationMode
    requested: Literal["auto", "user", "bwrap", "none"] = "auto"
    note: str = ""  # why this mode (what auto found missing)
    user: str | None = None  # user mode: the agent's account
    tracking: Literal["cgroup", "uid", "pidns", "session"] = "session"  # how every agent process is found
    # the limits on each agent process (plan: actor.limits), as set; None: no limit was set
    limits: dict[str, int] | None = None


class BuildRecord(_Model):
    """`app.build`, run once before the app starts: how it ended, and build.log (its output, secrets replaced) by its
    digest, so the sealed manifest seals the log too."""

    command: str  # secrets replaced
    exit_code: int | None = None  # None: it could not be started, or was killed at its timeout
    timed_out: bool = False
    timeout_s: float | None = None
    seconds: float | None = None
    error: str | None = None  # why it could not be started
    log: str = "build.log"
    log_sha256: str | None = None
    log_size: int | None = None
    log_tail: list[str] = Field(default_factory=list)  # its last lines, control characters escaped

    @property
    def failed(self) -> bool:
        """The build did not end with exit 0."""
        return self.exit_code != 0 or self.timed_out or self.error is not None

    def status(self) -> str:
        """`exit 2`, `timed out after 5s`, `could not start: ...`.

        >>> BuildRecord(command="make", exit_code=2).status()
        'exit 2'
        >>> BuildRecord(command="make", timed_out=True, timeout_s=5).status()
        'timed out after 5s'
        """
        if self.error:
            return f"could not start: {self.error}"
        if self.timed_out:
            return f"timed out after {self.timeout_s:g}s" if self.timeout_s is not None else "timed out"
        return f"exit {self.exit_code}"


class Manifest(_Model):
    manifest_version: Literal[1] = 1
    plan: str
    actor: str | None = None
    isolation: IsolationRecord | None = None  # None: no agent process ran (a scripted browser plan, old runs)
    error: str | None = None  # why the run stopped early (app would not start, agent missing, ...)
    options: RunOptions | None = None
    started: str | None = None
    finished: str | None = None
    steps: dict[str, StepRecord] = Field(default_factory=dict)
    files: list[FileEntry] = Field(default_factory=list)
    build: BuildRecord | None = None  # app.build, when the plan has one


def utcnow() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def read_manifest_bytes(run_dir: Path) -> bytes:
    """manifest.json's bytes; missing: UsageError (not a run directory); unreadable, a link or a FIFO: EvidenceError."""
    path = Path(run_dir) / "manifest.json"
    try:
        return read_regular(path, root=Path(run_dir), max_bytes=MAX_MANIFEST_BYTES)
    except FileNotFoundError:
        raise UsageError("no manifest.json: not a referee run directory", file=str(run_dir),
                         fix="pass the folder `referee run` printed") from None
    except OSError as exc:
        raise EvidenceError(f"manifest.json is unreadable: {exc}", file=str(path)) from None


def parse_manifest(data: bytes, path: str = "manifest.json") -> Manifest:
    """manifest.json's bytes as a Manifest; EvidenceError naming `path` when they are not one.

    >>> parse_manifest(b'{"plan": "p"}').plan
    'p'
    """
    try:
        doc = loads_json(data)
    except ValueError as exc:
        raise EvidenceError(f"manifest.json is unreadable: {exc}", file=path) from None
    try:
        return Manifest.model_validate(doc)
    except Exception as exc:
        raise EvidenceError(f"manifest.json does not validate: {str(exc).splitlines()[0]}", file=path) from None


def read_manifest(run_dir: Path) -> Manifest:
    """Load manifest.json, unchecked (the grader checks it against the seal: `referee.grader.verify`);
    a missing or corrupt one is an error naming the file."""
    return parse_manifest(read_manifest_bytes(run_dir), str(Path(run_dir) / "manifest.json"))


# -- capture records: one model per capture kind ----------------------------------------------------


class _Record(_Model):
    record_version: Literal[1] = 1

    def text(self) -> str | None:
        """The text a text validator reads from this record; None: the file's own text."""
        return None

    def document(self) -> dict[str, Any]:
        """The record as the JSON document it was before records had a version: what JSON paths address."""
        return self.model_dump(mode="json", by_alias=True, exclude={"record_version", "kind"})


class HttpRecord(_Record):
    """`<name>.json` of an http capture. `status` None and `error` set: the app did not answer (an
    observation, its validators FAIL), not a failed capture."""

    kind: Literal["http"] = "http"
    url: str
    method: str = "GET"
    status: int | None = None
    headers: dict[str, str] = Field(default_factory=dict)  # Authorization, Cookie, Set-Cookie redacted
    body: str = ""
    body_base64: str | None = None  # the exact bytes of a body that is not text (`body` has U+FFFD)
    body_truncated: bool = False  # the body was cut at the runner's limit (32 MiB decoded)
    error: str | None = None

    def text(self) -> str:
        return self.body


class CommandRecord(_Record):
    """`<name>.json` of a command capture; with `stdout_as` stdout is the file `stdout_file` beside it."""

    kind: Literal["command"] = "command"
    command: str
    exit_code: int | None = None
    stdout: str = ""
    stderr: str = ""
    timed_out: bool = False
    stdout_file: str | None = None
    stdout_base64: str | None = None  # the exact bytes of a kept stdout that is not UTF-8 (`stdout` has U+FFFD)
    stdout_bytes: int | None = None  # the whole size of stdout; more than what is kept: it was cut
    # who ran it: "runner" (the runner's own user), or the run's isolation ("user referee-agent", "bwrap"): a
    # command runs what the agent wrote (its tests, a repository's hooks) with no more rights than the agent had
    ran_as: str | None = None

    def text(self) -> str:
        return self.stdout + ("\n" + self.stderr if self.stderr else "")


SQL_KEPT_ROWS = 1000  # the rows a sql capture keeps in its record


class SqlRecord(_Record):
    """`<name>.json` of a sql capture: the query (passwords masked in `url`) and up to 1000 rows.

    `total_rows` is how many rows the query returned in all (more than `rows` holds when they were cut);
    None when not counted (past a million rows, or a record written before it was kept).
    `total_rows_more_than` is set where the count stopped at its cap: the query returned more rows than it
    says (a million), so a `min_rows` up to one more than it still holds. None in older records.
    """

    kind: Literal["sql"] = "sql"
    url: str
    query: str | None = None
    columns: list[str] = Field(default_factory=list)
    rows: list[dict[str, Any]] = Field(default_factory=list)
    total_rows: int | None = None
    total_rows_more_than: int | None = None

    def text(self) -> str:
        return json.dumps(self.rows, ensure_ascii=False, default=str)


class DdbRecord(_Record):
    """`<name>.json` of a ddb capture: the item found by `key`, as a list of none or one.

    A Binary (`B`, `BS`) value is written as its base64 text; numbers as int or float.
    """

    kind: Literal["ddb"] = "ddb"
    table: str
    key: dict[str, Any]
    items: list[dict[str, Any]] = Field(default_factory=list)

    def text(self) -> str:
        return json.dumps(self.items, ensure_ascii=False, default=str)


class FileRecord(_Record):
    """`<name>.json` of a file capture; the copy (`copy`, relative to the record) sits in `<name>.data/`."""

    kind: Literal["file"] = "file"
    path: str
    resolved: str = ""  # absent in records written before it existed: the checker falls back to `path`
    exists: bool
    size: int = 0
    copy_: str | None = Field(default=None, alias="copy")
    # what stands at the path when it is no regular file ("a FIFO", "a folder", ...): `exists` is False then
    not_regular: str | None = None

    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class AriaRecord(_Record):
    """`<name>.aria.json` of an aria capture with `format: json` (the YAML form is the snapshot itself)."""

    kind: Literal["aria"] = "aria"
    url: str
    tree: Any = None
    yaml: str


class CaptureFailure(_Record):
    """`<name>.error.json`: the capture could not be taken (no page, a database that refused, a crash).

    The grader turns evidence that names it into ERROR with `capture_error` as the reason.
    """

    kind: Literal["capture_failure"] = "capture_failure"
    capture_kind: str
    capture_error: str
    detail: dict[str, Any] = Field(default_factory=dict)  # what the capture knew before it failed


CaptureRecord = Annotated[Union[HttpRecord, CommandRecord, SqlRecord, DdbRecord, FileRecord, AriaRecord,
                                CaptureFailure], Field(discriminator="kind")]
RECORD_MODELS: dict[str, type[_Record]] = {m.model_fields["kind"].default: m for m in
                                            (HttpRecord, CommandRecord, SqlRecord, DdbRecord, FileRecord,
                                             AriaRecord, CaptureFailure)}
_ADAPTER: TypeAdapter = TypeAdapter(CaptureRecord)
FAILURE_SUFFIX = ".error.json"


def record_file(capture: str, kind: str) -> str:
    """The file name of a capture's record.

    >>> record_file("reply", "http"), record_file("tree", "aria"), record_file("shot", "capture_failure")
    ('reply.json', 'tree.aria.json', 'shot.error.json')
    """
    if kind == "capture_failure":
        return capture + FAILURE_SUFFIX
    return f"{capture}.aria.json" if kind == "aria" else f"{capture}.json"


def is_record(entry: FileEntry) -> bool:
    """Whether a manifest entry is a runner record (rather than a screenshot, a DOM, a copied file, an
    agent's file): `<capture>.json`, `<capture>.aria.json` or `<capture>.error.json` in its phase folder."""
    if entry.captured_by != "runner" or entry.capture is None:
        return False
    path = PurePosixPath(entry.path)
    phase_dir = PurePosixPath("evidence", entry.step, entry.phase)
    # the whole path, not just its last part: a capture may be named `api/order`
    if path == phase_dir / (entry.capture + FAILURE_SUFFIX):
        return True
    return entry.kind in RECORD_MODELS and path == phase_dir / record_file(entry.capture, entry.kind)


def _upgrade(doc: dict[str, Any], kind: str | None) -> dict[str, Any]:
    """A record as written before `record_version`: the kind from the manifest, a `capture_error` as a failure."""
    if "record_version" in doc and "kind" in doc:
        return doc
    if "capture_error" in doc:
        detail = {k: v for k, v in doc.items() if k not in ("capture_error", "record_version", "kind")}
        return {"kind": "capture_failure", "capture_kind": doc.get("kind") or kind or "unknown",
                "capture_error": str(doc["capture_error"]), "detail": detail}
    return {"kind": kind, **doc} if "kind" not in doc and kind is not None else doc


def parse_record(data: bytes | str | dict[str, Any], kind: str | None, *, where: str = "record") -> CaptureRecord:
    """Read one capture record; `kind` is the capture kind the manifest lists (for records without one).

    EvidenceError when it is not JSON or not a record of that kind.

    >>> parse_record(b'{"url": "/x", "method": "GET", "status": 200, "headers": {}, "body": "hi"}', "http").status
    200
    >>> parse_record({"capture_error": "no page"}, "screenshot")  # doctest: +ELLIPSIS
    CaptureFailure(record_version=1, kind='capture_failure', capture_kind='screenshot', capture_error='no page', ...)
    """
    if not isinstance(data, dict):
        try:
            data = loads_json(data, max_depth=256)
        except ValueError as exc:
            raise EvidenceError(f"{where} is not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise EvidenceError(f"{where} is not a capture record (a JSON object)")
    doc = _upgrade(data, kind)
    try:
        return _ADAPTER.validate_python(doc)
    except ValidationError as exc:
        err = exc.errors()[0]
        at = ".".join(str(p) for p in err["loc"][1:]) or "record"
        raise EvidenceError(f"{where} is not a valid {doc.get('kind') or kind} record: {at}: {err['msg']}") from None


def sniff_record(doc: Any) -> CaptureRecord | None:
    """The capture record a JSON document is, if any, whatever file it came from (lint's controls).

    A document with `kind` is read as that record; an older one (no `kind`) as the first record
    model it validates against, strictly (`extra="forbid"`). Anything else is None.

    >>> sniff_record({"command": "true", "exit_code": 0, "stdout": "", "stderr": "", "timed_out": False}).kind
    'command'
    >>> sniff_record({"a": 1}) is None
    True
    """
    if not isinstance(doc, dict):
        return None
    if "record_version" in doc or "capture_error" in doc:
        try:
            return parse_record(doc, doc.get("kind") if isinstance(doc.get("kind"), str) else None)
        except EvidenceError:
            return None
    for kind in RECORD_MODELS:
        if kind == "capture_failure":
            continue
        try:
            return parse_record(doc, kind)
        except EvidenceError:
            continue
    return None


def dump_record(record: _Record) -> str:
    """A record as its file holds it (the runner writes it with the atomic writers)."""
    return record.model_dump_json(indent=2, by_alias=True) + "\n"


# -- claims.json: the agent's claims, as given ---------------------------------------------------------


class Claim(_Model):
    """One step's claim: `{"pass", "note", "evidence"}` from the agent's claim file."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    claim_version: Literal[1] = 1
    passed: StrictBool | None = Field(default=None, alias="pass")
    note: str = ""
    evidence: list[str] = Field(default_factory=list)

    # the agent wrote these: kept as given, except what cannot be stored (lone surrogates) or is unbounded
    @field_validator("note")
    @classmethod
    def _note(cls, v: str) -> str:
        return clean(v[:MAX_NOTE_CHARS])

    @field_validator("evidence")
    @classmethod
    def _evidence(cls, v: list[str]) -> list[str]:
        return [clean(p[:MAX_PATH_CHARS]) for p in v[:MAX_CLAIM_EVIDENCE]]

    def as_given(self) -> dict[str, Any]:
        """The claim as the agent gave it (results.json shows this beside the verdict)."""
        return {"pass": self.passed, "note": self.note, "evidence": list(self.evidence)}


class Claims(RootModel[dict[str, Union[Claim, None]]]):
    """claims.json: step id -> claim, None for a step without one ("no claim")."""

    root: dict[str, Union[Claim, None]] = Field(default_factory=dict)

    def get(self, step_id: str) -> Claim | None:
        return self.root.get(step_id)

    def to_json(self) -> bytes:
        """claims.json's bytes: a flat, compact mapping (it is rewritten after every step)."""
        return self.model_dump_json(by_alias=True).encode()


def parse_claims(data: Any) -> Claims:
    """claims.json's content, read tolerantly: a claim that does not validate is no claim.

    >>> c = parse_claims({"a": {"pass": True, "note": "done"}, "b": None, "c": {"pass": "yes"}})
    >>> c.get("a").passed, c.get("b"), c.get("c")
    (True, None, None)
    """
    out: dict[str, Claim | None] = {}
    for step, raw in (data.items() if isinstance(data, dict) else ()):
        try:
            out[str(step)] = Claim.model_validate(raw) if isinstance(raw, dict) else None
        except ValidationError:
            out[str(step)] = None
    return Claims(out)


def read_claims(run_dir: Path) -> Claims:
    """Load claims.json; missing, corrupt, a link or a FIFO -> no claims (a claim never decides a verdict anyway)."""
    try:
        data = loads_json(read_regular(Path(run_dir) / "claims.json", root=Path(run_dir), max_bytes=MAX_CLAIMS_BYTES))
    except (OSError, ValueError, EvidenceError):
        data = {}
    return parse_claims(data)
