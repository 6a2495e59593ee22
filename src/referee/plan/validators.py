"""Validator kinds as plan data: each kind's typed parameters and the evidence it asks the runner for.

The plan loader types every `validators:` entry with these specs and derives from them the captures
the runner takes for a validator (`url:` on the http kinds, `command:` on command_exit_code, the
runner's own screenshot, aria or DOM capture; `require_change` takes them before the step too) and
the evidence the check will read. The checking code (`referee.validators`) grades them later, from
the persisted evidence. Nothing here reads evidence or imports the validators, so loading and
checking a plan stay below them (DESIGN.md walls).

A third-party validator kind (entry point group `referee.validators`, or `referee.validators.register`)
is a `referee.validators.ValidatorKind` subclass: a ValidatorSpec with a `check`. This registry holds
one instance of it as its spec, the validators' registry another as its checker. The plugin's module
is imported whenever a plan is loaded, so it should keep its own heavy imports inside `check`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Annotated, Any, Callable, ClassVar, TypeVar

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from referee.core.registry import Item, Registry
from referee.errors import PlanValueError
from referee.ocr import DEFAULT_ENGINE, engines
from referee.plan.model import RunAs, Seconds, one_of
from referee.plan.rowshape import MinRows, ddb_key, goes_with, nothing_beside_evidence


class ValidatorParams(BaseModel):
    """Parameters every validator takes; kinds subclass this and add their own."""

    model_config = ConfigDict(extra="forbid")
    # the values in which the grader substitutes `${NAME}` from its environment before the check (`expected`,
    # `text`, `pattern`): the loader refuses a plan whose variables there are unset, and what the validator says
    # shows `${NAME}`, never the value (`referee.plan.envvars.fill_fields`)
    env_fields: ClassVar[tuple[str, ...]] = ()

    kind: str
    name: str | None = None
    require_change: bool = False


@dataclass(frozen=True)
class CaptureRequest:
    """A capture the runner must take for a validator (the seed's `url:` shorthand and friends).

    `name` is what the check later asks the EvidenceView for; `params` are the capture kind's
    parameters (`referee.plan.captures`) besides `kind` and `name`.
    """

    kind: str
    name: str
    params: dict[str, Any] = field(default_factory=dict)


def implicit_name(kind: str, index: int) -> str:
    """The capture name the runner uses for a validator's own capture.

    >>> implicit_name("http_status_eq", 0)
    '_v0_http_status_eq'
    """
    return f"_v{index}_{kind}"


_IMPLICIT = re.compile(r"_v\d+_")


def reserved_name(name: str) -> bool:
    """Whether `name` is one the runner gives validators' own captures (`_v<N>_<kind>`, `_screen`, `_aria`,
    `_dom`): a plan's capture of that name would take the place of the validator's, so the loader refuses it.

    >>> reserved_name("_v0_command_exit_code"), reserved_name("_screen"), reserved_name("v0_reply")
    (True, True, False)
    """
    return name in (SCREEN, ARIA, DOM) or _IMPLICIT.match(name) is not None


class ValidatorSpec:
    """One validator kind as a plan sees it: its parameters, a line for `referee kinds`, the captures
    the runner takes for it and the evidence its check reads. Subclasses set `Params` and `summary`
    and override `captures` when the runner must capture something for the validator.
    """

    kind: ClassVar[str] = ""
    Params: ClassVar[type[ValidatorParams]] = ValidatorParams
    summary: ClassVar[str] = ""
    negative: ClassVar[bool] = False  # holds by absence: the lint does not call it loose for holding on a control
    # the built-in capture kind whose record the check reads when `evidence` names a capture: naming a capture of
    # another built-in kind is a certain ERROR, which `referee check` reports (None: any evidence, or a file)
    evidence_kind: ClassVar[str | None] = None
    # (module, extra): an optional dependency the check imports, which `referee check` looks for before a run
    # (what the validator's own captures need, they say themselves)
    needs: ClassVar[tuple[str, str] | None] = None
    is_checker: ClassVar[bool] = False  # True in referee.validators.ValidatorKind: a plugin must be one, with a check

    def captures(self, params: Any, index: int) -> list[CaptureRequest]:
        """Captures the runner takes for this validator; `index` makes implicit names unique."""
        return []

    def evidence_refs(self, params: Any, index: int) -> list[str]:
        """The evidence names/paths the check will read (for `require_change`, lint and reports)."""
        ev = getattr(params, "evidence", None)
        if ev is None:
            return [c.name for c in self.captures(params, index)]
        return list(ev) if isinstance(ev, list) else [ev]


POINTS_AT = "a ValidatorKind subclass (referee.validators.ValidatorKind: Params, summary and check)"
"""What a `referee.validators` entry point must name, in every error about one that does not."""


def _is_checker(obj: object) -> bool:
    # ValidatorKind lives in referee.validators, above this layer: it says it is one with `is_checker`
    return isinstance(obj, ValidatorSpec) and obj.is_checker


# an entry point names a ValidatorKind subclass (or a factory of one); each kind is one shared instance. A plugin
# must be a ValidatorKind here too, not only a spec: else it passed `check` and failed only once the agent had run
validator_specs: Registry[ValidatorSpec] = Registry(
    "validator kind", "referee.validators", item=ValidatorSpec, name_attr="kind",
    plugin_item=Item(_is_checker, "a referee.validators.ValidatorKind"), points_at=POINTS_AT)

BUILTIN_SPECS: dict[str, type[ValidatorSpec]] = {}
"""The built-in kinds, by name; the checkers in `referee.validators` subclass these."""

S = TypeVar("S", bound=type[ValidatorSpec])


def spec(kind: str) -> Callable[[S], S]:
    """Class decorator: declare a ValidatorSpec subclass as built-in validator kind `kind`."""

    def deco(cls: S) -> S:
        cls.kind = kind
        BUILTIN_SPECS[kind] = cls
        validator_specs.add(kind, cls)
        return cls

    return deco


# ------------------------------------------------------------------ http: a response the runner captures


class SourceParams(ValidatorParams):
    """`url` (the runner captures it) or `evidence` (a capture name or an agent-saved path)."""

    url: str | None = None
    evidence: str | list[str] | None = None

    @model_validator(mode="after")
    def _one_source(self) -> SourceParams:
        one_of("url", self.url is not None, "evidence", self.evidence is not None,
               "give `url` (the runner captures it) or `evidence` (a capture name), not both")
        return self


def http_capture(params: SourceParams, index: int) -> list[CaptureRequest]:
    if params.url is None:
        return []
    return [CaptureRequest("http", implicit_name(params.kind, index), {"url": params.url})]


_TOKEN = re.compile(r"\.([A-Za-z_][\w-]*)|\[(-?\d+)\]|\[\s*'([^']*)'\s*\]|\[\s*\"([^\"]*)\"\s*\]|\[\*\]|\.\*")


def parse_json_path(path: str) -> list[Any]:
    """Parse `$.a.b[0]`, `$['a b'][-1]`, `$.items[*].id` into steps (str key, int index, or '*').

    >>> parse_json_path("$.a.b[0]")
    ['a', 'b', 0]
    """
    if not path.startswith("$"):
        raise ValueError(f"a JSON path starts with '$' (got {path!r})")
    out: list[Any] = []
    pos = 1
    while pos < len(path):
        m = _TOKEN.match(path, pos)
        if not m:
            raise ValueError(f"cannot parse JSON path {path!r} at character {pos + 1}")
        key, idx, sq, dq = m.groups()
        if key is not None:
            out.append(key)
        elif idx is not None:
            out.append(int(idx))
        elif sq is not None or dq is not None:
            out.append(sq if sq is not None else dq)
        else:
            out.append("*")
        pos = m.end()
    return out


class HttpSourceSpec(ValidatorSpec):
    """A validator over one response: `url` (the runner captures it) or `evidence`."""

    def captures(self, params: SourceParams, index: int) -> list[CaptureRequest]:
        return http_capture(params, index)


@spec("http_status_eq")
class HttpStatusEqSpec(HttpSourceSpec):
    summary = "the HTTP status of a runner-captured response equals `expected`"
    evidence_kind = "http"

    class Params(SourceParams):
        expected: Annotated[int, Field(strict=True, ge=100, le=599)]  # strict: YAML's `true` is no status


@spec("http_body_contains")
class HttpBodyContainsSpec(HttpSourceSpec):
    summary = "the body of a runner-captured response contains `text`"

    class Params(SourceParams):
        env_fields = ("text",)
        text: str
        ignore_case: bool = False


@spec("json_path_eq")
class JsonPathEqSpec(HttpSourceSpec):
    summary = "the value at a JSON path (`$.a.b[0]`) of a response or JSON file equals `expected`"

    class Params(SourceParams):
        env_fields = ("expected",)
        path: str
        expected: Any

        @field_validator("path")
        @classmethod
        def _parses(cls, v: str) -> str:
            parse_json_path(v)
            return v


# ------------------------------------------------------------------ text: any evidence file


class TextParams(ValidatorParams):
    evidence: str | list[str]
    ignore_case: bool = False

    def refs(self) -> list[str]:
        return [self.evidence] if isinstance(self.evidence, str) else list(self.evidence)


@spec("text_contains")
class TextContainsSpec(ValidatorSpec):
    summary = "every evidence file (capture name or agent path) contains `text`"

    class Params(TextParams):
        env_fields = ("text",)
        text: str


@spec("regex_match")
class RegexMatchSpec(ValidatorSpec):
    summary = "every evidence file matches the regular expression `pattern` (re.search)"

    class Params(TextParams):
        env_fields = ("pattern",)  # substituted as written: the value is part of the expression (a `.` matches all)
        pattern: str

        @field_validator("pattern")
        @classmethod
        def _compiles(cls, v: str) -> str:
            try:
                re.compile(v)
            except re.error as exc:
                raise ValueError(f"not a valid regular expression: {exc}") from None
            return v


# ------------------------------------------------------------------ files and commands the runner takes


@spec("file_exists")
class FileExistsSpec(ValidatorSpec):
    summary = "a file exists after the step (the runner copies it into the evidence)"

    class Params(ValidatorParams):
        path: str
        min_size: Annotated[int, Field(strict=True, ge=0)] = 0  # strict: YAML's `true` is no size

    def captures(self, params: Params, index: int) -> list[CaptureRequest]:
        return [CaptureRequest("file", implicit_name(params.kind, index), {"path": params.path})]

    def evidence_refs(self, params: Params, index: int) -> list[str]:
        return [implicit_name(params.kind, index)]


@spec("command_exit_code")
class CommandExitCodeSpec(ValidatorSpec):
    summary = "a command (run by the runner after the step) exits with `expected` (default 0)"
    evidence_kind = "command"

    class Params(ValidatorParams):
        command: str | None = None
        evidence: str | None = None
        expected: Annotated[int, Field(strict=True)] = 0  # strict: YAML's `true` is no exit code (it was read as 1)
        timeout_s: Seconds = 60.0
        run_as: RunAs = "agent"

        @model_validator(mode="after")
        def _one_source(self) -> CommandExitCodeSpec.Params:
            one_of("command", self.command is not None, "evidence", self.evidence is not None,
                   "give `command` (the runner runs it) or `evidence` (a command capture name), not both")
            return self

    def captures(self, params: Params, index: int) -> list[CaptureRequest]:
        if params.command is None:
            return []
        return [CaptureRequest("command", implicit_name(params.kind, index),
                               {"command": params.command, "timeout_s": params.timeout_s, "run_as": params.run_as})]


# ------------------------------------------------------------------ rows: a query the runner runs


@spec("sql_row_present")
class SqlRowPresentSpec(ValidatorSpec):
    summary = "a SQL query (any SQLAlchemy URL) returns at least one row after the step"
    evidence_kind = "sql"

    class Params(ValidatorParams):
        url: str | None = None
        query: str | None = None  # before params and where: their check reads it (`rowshape.goes_with`)
        table: str | None = None
        params: dict[str, Any] = {}
        where: dict[str, Any] = {}
        evidence: str | None = None
        min_rows: MinRows = 1
        timeout_s: Seconds = 30.0

        _goes_with = field_validator("params", "where")(goes_with)

        @model_validator(mode="after")
        def _shape(self) -> SqlRowPresentSpec.Params:
            fix = "give `url` (a SQLAlchemy URL) with `query` or `table`, or `evidence` (a sql capture name)"
            if self.evidence is not None:
                nothing_beside_evidence(self, ("url", "query", "table", "params", "where"), "sql")
                return self
            if not self.url:
                raise PlanValueError("neither `url` nor `evidence` is given", fix)
            one_of("query", self.query is not None, "table", self.table is not None,
                   "give `query` (with `params`) or `table` (with `where`), not both")
            return self

    def captures(self, params: Params, index: int) -> list[CaptureRequest]:
        if params.evidence is not None:
            return []
        spec = {"url": params.url, "query": params.query, "params": params.params, "table": params.table,
                "where": params.where, "timeout_s": params.timeout_s}
        return [CaptureRequest("sql", implicit_name(params.kind, index), {k: v for k, v in spec.items() if v})]


@spec("ddb_row_present")
class DdbRowPresentSpec(ValidatorSpec):
    summary = "a DynamoDB item with `key` exists in `table` after the step"
    evidence_kind = "ddb"

    class Params(ValidatorParams):
        table: str | None = None
        key: dict[str, Any] = {}
        endpoint_url: str | None = None
        region: str | None = None
        timeout_s: Seconds = 30.0
        evidence: str | None = None

        _key = field_validator("key")(ddb_key)

        @model_validator(mode="after")
        def _shape(self) -> DdbRowPresentSpec.Params:
            if self.evidence is not None:
                nothing_beside_evidence(self, ("table", "key", "endpoint_url", "region"), "ddb")
            elif not (self.table and self.key):
                raise PlanValueError("`table` and `key` are not both given",
                                     "give `table` and `key`, or `evidence` (a ddb capture name)")
            return self

    def captures(self, params: Params, index: int) -> list[CaptureRequest]:
        if params.evidence is not None:
            return []
        spec = {"table": params.table, "key": params.key, "endpoint_url": params.endpoint_url,
                "region": params.region, "timeout_s": params.timeout_s}
        return [CaptureRequest("ddb", implicit_name(params.kind, index), {k: v for k, v in spec.items() if v})]


# ------------------------------------------------------------------ screens: OCR, accessibility snapshot, DOM

SCREEN = "_screen"  # the runner's own after-step screenshot, shared by every screen validator without `evidence`
ARIA, DOM = "_aria", "_dom"  # the runner's own aria and DOM captures, likewise


class OcrParams(ValidatorParams):
    """`evidence`: one or more PNGs (capture names or agent-saved paths); none = the runner's own screenshot."""

    env_fields = ("text",)
    evidence: str | list[str] | None = None
    text: str
    engine: str = DEFAULT_ENGINE
    min_confidence: Annotated[float, Field(strict=True, ge=0.0, le=1.0)] | None = None  # strict: `true` is no 1.0
    ignore_case: bool = True
    ignore_spaces: bool | None = None  # None: the engine decides (RapidOCR runs words together)

    @field_validator("text")
    @classmethod
    def _some_text(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("`text` must not be blank: a blank needle matches every screen")
        return v

    @field_validator("engine")
    @classmethod
    def _known_engine(cls, v: str) -> str:
        if v not in engines:
            raise ValueError(str(engines.unknown(v)))
        return v

    @field_validator("evidence")
    @classmethod
    def _some_evidence(cls, v: str | list[str] | None) -> str | list[str] | None:
        if isinstance(v, list) and not v:
            raise ValueError("`evidence` lists no file; leave it out to OCR the runner's own screenshot")
        return v

    def refs(self) -> list[str]:
        if self.evidence is None:
            return [SCREEN]
        return [self.evidence] if isinstance(self.evidence, str) else list(self.evidence)


class OcrSpec(ValidatorSpec):
    """An OCR validator: the runner's own screenshot unless `evidence` names the images."""

    Params = OcrParams
    needs = ("PIL", "ocr")

    def captures(self, params: OcrParams, index: int) -> list[CaptureRequest]:
        return [CaptureRequest("screenshot", SCREEN)] if params.evidence is None else []

    def evidence_refs(self, params: OcrParams, index: int) -> list[str]:
        return params.refs()


@spec("ocr_contains")
class OcrContainsSpec(OcrSpec):
    summary = "every screenshot (capture name or agent PNG; default: the runner's own) shows `text`, read by OCR"


@spec("ocr_not_contains")
class OcrNotContainsSpec(OcrSpec):
    summary = "no screenshot (capture name or agent PNG; default: the runner's own) shows `text`, read by OCR"
    negative = True


class ScreenParams(ValidatorParams):
    env_fields = ("text",)
    evidence: str | list[str] | None = None
    text: str
    ignore_case: bool = False

    @field_validator("text")
    @classmethod
    def _some_text(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("`text` must not be blank: a blank needle matches every screen")
        return v

    def refs(self, default: str) -> list[str]:
        if self.evidence is None:
            return [default]
        return [self.evidence] if isinstance(self.evidence, str) else list(self.evidence)


@spec("aria_contains")
class AriaContainsSpec(ValidatorSpec):
    summary = "the accessibility snapshot (default: the runner's own) has `text`; with `role`, in a node of that role"
    evidence_kind = "aria"  # a dom capture is HTML source: its hidden text and <title> are no accessible name

    class Params(ScreenParams):
        role: str | None = None
        exact: bool = False  # with `role`: the node's name equals `text` (after whitespace folding)

    def captures(self, params: Params, index: int) -> list[CaptureRequest]:
        return [CaptureRequest("aria", ARIA)] if params.evidence is None else []

    def evidence_refs(self, params: Params, index: int) -> list[str]:
        return params.refs(ARIA)


@spec("dom_contains")
class DomContainsSpec(ValidatorSpec):
    summary = ("the page's DOM (default: the runner's own capture) shows `text` as visible text "
               "(`raw: true`: in the HTML source)")
    evidence_kind = "dom"  # an aria snapshot's role words ("textbox") are no visible text

    class Params(ScreenParams):
        raw: bool = False

    def captures(self, params: Params, index: int) -> list[CaptureRequest]:
        return [CaptureRequest("dom", DOM)] if params.evidence is None else []

    def evidence_refs(self, params: Params, index: int) -> list[str]:
        return params.refs(DOM)


__all__ = ["ValidatorParams", "CaptureRequest", "ValidatorSpec", "validator_specs", "BUILTIN_SPECS", "spec",
           "implicit_name", "reserved_name", "SourceParams", "http_capture", "parse_json_path", "HttpSourceSpec",
           "HttpStatusEqSpec",
           "HttpBodyContainsSpec", "JsonPathEqSpec", "TextParams", "TextContainsSpec", "RegexMatchSpec",
           "FileExistsSpec", "CommandExitCodeSpec", "SqlRowPresentSpec", "DdbRowPresentSpec", "SCREEN", "ARIA", "DOM",
           "OcrParams", "OcrSpec", "OcrContainsSpec", "OcrNotContainsSpec", "ScreenParams", "AriaContainsSpec",
           "DomContainsSpec"]
