"""Capture kinds as plan data: each kind's typed parameters and what it captures.

The plan loader types every `capture:` entry (and every capture a validator asks for) with these
specs; the runner's capture code (`referee.runner.captures`) performs them. Nothing here opens a
connection or imports the runner, so the grader and `referee check` load plans without it.

A third-party capture kind (entry point group `referee.captures`, or `referee.runner.captures.register`)
is a class with `Params` (a CaptureParams subclass), `summary` and `take`: this registry holds the
class as its spec, and the runner's holds it as its performer. The plugin's module is imported
whenever a plan is loaded, so it should keep its own heavy imports inside `take`.
"""

from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass
from typing import Any, ClassVar, Literal, Mapping

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator

from referee.core.registry import Item, Registry
from referee.plan.model import RunAs, Seconds, check_name, one_of
from referee.plan.rowshape import ddb_key, goes_with
from referee.rundir.schema import record_file


class CaptureParams(BaseModel):
    """Parameters every capture takes; kinds subclass this."""

    model_config = ConfigDict(extra="forbid")
    # the parameters in which the runner substitutes `${NAME}` from its environment (`referee.plan.envvars`):
    # the loader refuses a plan whose variables there are unset, and the runner shows them redacted
    env_fields: ClassVar[tuple[str, ...]] = ()

    kind: str
    name: str

    @field_validator("name")
    @classmethod
    def _is_a_name(cls, v: str, info: ValidationInfo) -> str:
        return check_name(v, "a capture name", info)

    def needs(self) -> tuple[str, str] | None:
        """(module, extra): an optional dependency this capture imports, which `referee check` looks for before a
        run (a plugin kind may say so here); None when it needs none."""
        return None

    def unmet(self, env: Mapping[str, str]) -> list[tuple[str, str]]:
        """What this machine lacks to take the capture (a program, a display), each as (problem, fix), from the
        runner's environment `env`: `referee check`, and `referee run` before anything starts, report each.

        >>> HttpParams(kind="http", name="h", url="/x").unmet({}), X11ScreenParams(kind="x11_screen").unmet({})[0][0]
        ([], 'x11_screen has no display: DISPLAY is not set and the capture names no `display:`')
        """
        return []

    def files(self) -> list[tuple[str, str]]:
        """The names of the files (or folders) the capture writes in its phase folder, each with what it is
        (a plugin kind that writes others may say so here): the loader refuses a step where one file
        would be written twice, by two captures or by one, since the second write replaces the first.

        >>> CommandParams(kind="command", name="home", command="x", stdout_as="home.png").files()
        [('home.json', 'record'), ('home.error.json', 'failure record'), ('home.png', 'stdout_as')]
        """
        return [(record_file(self.name, self.kind), "record"), (record_file(self.name, "capture_failure"),
                                                                "failure record")]


@dataclass(frozen=True)
class CaptureSpec:
    """One capture kind as a plan sees it: its parameters and a line for `referee kinds`."""

    kind: str
    Params: type[CaptureParams]
    summary: str


def _is_spec(obj: object) -> bool:
    """A CaptureSpec, or anything shaped like one (a plugin's capture class: `Params` and `summary`)."""
    params = getattr(obj, "Params", None)
    summary = getattr(obj, "summary", None)
    return isinstance(params, type) and issubclass(params, CaptureParams) and isinstance(summary, str)


capture_specs: Registry[CaptureSpec] = Registry(
    "capture kind", "referee.captures",
    item=Item(_is_spec, "a capture kind: a class with `Params` (a referee.plan.captures.CaptureParams "
                        "subclass) and `summary`"))

BUILTIN_SPECS: dict[str, CaptureSpec] = {}
"""The built-in kinds, by name; the runner's capture classes take their Params and summary from here."""


def spec(kind: str, summary: str):
    """Class decorator: declare a CaptureParams subclass as the parameters of built-in capture kind `kind`."""

    def deco(cls: type[CaptureParams]) -> type[CaptureParams]:
        BUILTIN_SPECS[kind] = CaptureSpec(kind, cls, summary)
        capture_specs.add(kind, BUILTIN_SPECS[kind])
        return cls

    return deco


@spec("http", "an HTTP request the runner makes after the step: status, headers (redacted), body")
class HttpParams(CaptureParams):
    env_fields = ("url", "headers")
    url: str
    method: Literal["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD"] = "GET"
    headers: dict[str, str] = {}
    json_body: object = None
    timeout_s: Seconds = 15.0


@spec("command",
      "a command the runner runs after the step: exit code, stdout, stderr (stdout_as saves stdout as a file)")
class CommandParams(CaptureParams):
    env_fields = ("command",)
    command: str
    timeout_s: Seconds = 60.0
    stdout_as: str | None = None  # e.g. home.png for `adb exec-out screencap -p`
    run_as: RunAs = "agent"

    @field_validator("stdout_as")
    @classmethod
    def _file_name(cls, v: str | None, info: ValidationInfo) -> str | None:
        return None if v is None else check_name(v, "stdout_as (a file name)", info)

    def files(self) -> list[tuple[str, str]]:
        return super().files() + ([(self.stdout_as, "stdout_as")] if self.stdout_as else [])


@spec("sql", "rows of a SQL query (any SQLAlchemy URL; `${VAR}` reads the runner's environment)")
class SqlParams(CaptureParams):
    env_fields = ("url", "where", "params")  # a text value of `where`/`params` may be a `${VAR}` too
    url: str
    query: str | None = None  # before params and where: their check reads it (`rowshape.goes_with`)
    table: str | None = None
    params: dict[str, Any] = {}
    where: dict[str, Any] = {}
    timeout_s: Seconds = 30.0  # the database cancels the query after this (PostgreSQL, SQLite)

    _goes_with = field_validator("params", "where")(goes_with)

    @model_validator(mode="after")
    def _shape(self):
        one_of("query", self.query is not None, "table", self.table is not None,
               "give `query` (with `params`) or `table` (with `where`), not both")
        return self

    def needs(self) -> tuple[str, str] | None:
        """A PostgreSQL URL's driver (`postgresql+psycopg://`; psycopg2 when it names none)."""
        scheme = self.url.split(":", 1)[0]
        if scheme.split("+")[0] != "postgresql":
            return None
        driver = scheme.partition("+")[2] or "psycopg2"
        return driver, "postgres"


@spec("ddb", "a DynamoDB item by `key` (get_item), through boto3 with optional `endpoint_url`")
class DdbParams(CaptureParams):
    env_fields = ("endpoint_url",)
    table: str = Field(min_length=1)
    key: dict[str, Any]
    endpoint_url: str | None = None
    region: str | None = None
    timeout_s: Seconds = 30.0  # connect, each read, and the whole lookup with its retries

    _key = field_validator("key")(ddb_key)

    def needs(self) -> tuple[str, str] | None:
        return "boto3", "aws"


@spec("file", "a copy of a file the app wrote (relative paths are relative to where the run started)")
class FileParams(CaptureParams):
    env_fields = ("path",)
    path: str

    def files(self) -> list[tuple[str, str]]:
        return super().files() + [(f"{self.name}.data", "copy folder")]


PageSource = Literal["runner", "agent_page"]


class PageParams(CaptureParams):
    """What every capture of a browser page takes: which page it reads (docs/security-evidence.md).

    `source: runner` (the default): a page the agent cannot have painted. While an agent drives the browser
    (over CDP it controls every tab of it), the runner loads `url` (default: the URL the agent's page is at, which
    must be on app.url's origin) in a Chromium of its own, with the session's cookies; with no agent, the
    runner's page as its script left it. `source: agent_page`: the agent's page as it is (the report says so).

    >>> DomParams(kind="dom", name="d", source="agent_page", url="/x")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    pydantic_core._pydantic_core.ValidationError: 1 validation error for DomParams
      Value error, `url:` names a page the runner loads itself; `source: agent_page` reads the agent's page ...
    """

    source: PageSource = "runner"
    url: str | None = None  # the page to load (joined to app.url); default: where the browser's page is

    @model_validator(mode="after")
    def _url_is_loaded(self):
        if self.url is not None and self.source == "agent_page":
            raise ValueError("`url:` names a page the runner loads itself; `source: agent_page` reads the agent's "
                             "page as it is: give one of them")
        return self


AGENT_PAGE_NOTE = "the agent's own page (source: agent_page), which the agent could have painted"


def agent_page_captures(caps) -> frozenset[str]:
    """The names of the captures (TypedCaptures or CaptureParams) that read the agent's own page.

    >>> agent_page_captures([DomParams(kind="dom", name="a", source="agent_page"), DomParams(kind="dom", name="b")])
    frozenset({'a'})
    """
    return frozenset(p.name for p in (getattr(c, "params", c) for c in caps)
                     if getattr(p, "source", None) == "agent_page")


@spec("screenshot", "a PNG screenshot of a browser page the runner loads (viewport, full page, or one element)")
class ScreenshotParams(PageParams):
    full_page: bool = False
    selector: str | None = None
    timeout_s: Seconds = 30.0  # a page still loading past this is a failed capture

    def files(self) -> list[tuple[str, str]]:
        return [(f"{self.name}.png", "screenshot"), (record_file(self.name, "capture_failure"), "failure record")]


@spec("aria", "the page's accessibility snapshot (roles, names, states) as YAML or JSON")
class AriaParams(PageParams):
    selector: str = "body"
    format: Literal["yaml", "json"] = "yaml"
    timeout_s: Seconds = 30.0  # a page still loading past this is a failed capture

    def files(self) -> list[tuple[str, str]]:
        return super().files() + [(f"{self.name}.aria.yaml", "snapshot")]


@spec("dom", "the page's HTML as the browser has it now (after scripts ran), or one element's outer HTML")
class DomParams(PageParams):
    selector: str | None = None
    timeout_s: Seconds = 30.0  # a page still loading past this is a failed capture

    def files(self) -> list[tuple[str, str]]:
        return [(f"{self.name}.html", "page"), (record_file(self.name, "capture_failure"), "failure record")]


class DeviceScreenParams(CaptureParams):
    """A PNG of a screen the runner takes from a device with a program of that device's tools (docs/screens.md,
    "Device screens"); the file is named like a browser screenshot's, so screen validators read it the same way.

    `program` is what the runner runs and `install` how to get it: `unmet` finds a missing one (`referee check`,
    and `referee run` before anything starts), as the capture does when it runs.
    """

    program: ClassVar[str] = ""
    install: ClassVar[str] = ""
    timeout_s: Seconds = 30.0  # the device's program is killed (its whole process group) past this

    def files(self) -> list[tuple[str, str]]:
        return [(f"{self.name}.png", "screenshot"), (record_file(self.name, "capture_failure"), "failure record")]

    def program_dirs(self, env: Mapping[str, str]) -> list[str]:
        """Where the program is looked for: the absolute folders of PATH, in order. A relative entry (an empty
        one is the working directory, where the agent writes) is never searched."""
        return [d for d in env.get("PATH", "").split(os.pathsep) if os.path.isabs(d)]

    def find_program(self, env: Mapping[str, str]) -> str | None:
        """The program's absolute path, or None when it is not installed here.

        >>> AndroidScreenParams(kind="android_screen").find_program({"PATH": "relative/bin"}) is None
        True
        """
        return shutil.which(self.program, path=os.pathsep.join(self.program_dirs(env))) if self.program else None

    def missing(self) -> str:
        """The one line that says the program is not there (the fix is `install`)."""
        return f"{self.kind} runs `{self.program}`, which is not installed here (not on PATH)"

    def unmet(self, env: Mapping[str, str]) -> list[tuple[str, str]]:
        """What this machine lacks to take the capture, each (problem, fix); none when it can be taken."""
        return [] if self.find_program(env) else [(self.missing(), self.install)]


def _no_option(v: str | None, what: str) -> str | None:
    """A value the runner passes as one argument of a device's program: never one it would read as an option.

    >>> _no_option("-d", "serial")
    Traceback (most recent call last):
    ...
    ValueError: serial '-d' starts with '-': the program would read it as an option
    """
    if v is None:
        return v
    if not v.strip() or any(c.isspace() or ord(c) < 32 for c in v):
        raise ValueError(f"{what} {v!r} is empty or holds spaces or control characters")
    if v.startswith("-"):
        raise ValueError(f"{what} {v!r} starts with '-': the program would read it as an option")
    return v


@spec("android_screen", "a PNG of an Android device's or emulator's screen (`adb [-s SERIAL] exec-out screencap -p`)")
class AndroidScreenParams(DeviceScreenParams):
    program: ClassVar[str] = "adb"
    install: ClassVar[str] = ("install Android's platform-tools (Debian: apt-get install adb) or set ANDROID_HOME to "
                              "an Android SDK that has them")
    env_fields = ("serial",)
    name: str = "android_screen"
    serial: str | None = None  # which device (`adb devices`); default: adb's own choice (ANDROID_SERIAL, the one)
    display_id: int | None = Field(default=None, ge=0)  # `screencap -d`: one display of a device that has several

    @field_validator("serial")
    @classmethod
    def _serial(cls, v: str | None) -> str | None:
        return _no_option(v, "serial")

    def program_dirs(self, env: Mapping[str, str]) -> list[str]:
        """PATH, then the platform-tools of the SDK that ANDROID_HOME (or ANDROID_SDK_ROOT) names."""
        sdks = [env[k] for k in ("ANDROID_HOME", "ANDROID_SDK_ROOT") if os.path.isabs(env.get(k, ""))]
        return super().program_dirs(env) + [os.path.join(d, "platform-tools") for d in sdks]


@spec("ios_screen", "a PNG of a booted iOS simulator's screen (`xcrun simctl io DEVICE screenshot`), macOS only")
class IosScreenParams(DeviceScreenParams):
    program: ClassVar[str] = "xcrun"
    install: ClassVar[str] = "the iOS simulator needs macOS with Xcode and its simulators (xcrun simctl is Xcode's)"
    env_fields = ("device",)
    name: str = "ios_screen"
    device: str = "booted"  # a simulator's UDID (`xcrun simctl list devices`), or `booted`: the booted one

    @field_validator("device")
    @classmethod
    def _device(cls, v: str) -> str | None:
        return _no_option(v, "device")


# a local X display: `:N` or `:N.S`, optionally with a host (`host:N`); `${VAR}` is checked once substituted
X_DISPLAY = re.compile(r"[A-Za-z0-9._-]{0,253}:[0-9]{1,5}(\.[0-9]{1,3})?")


@spec("x11_screen", "a PNG of an X11 display's whole screen (the root window; `display:` or $DISPLAY)")
class X11ScreenParams(DeviceScreenParams):
    env_fields = ("display",)
    name: str = "x11_screen"
    display: str | None = None  # `:0`, `:99.0`; default: the runner's $DISPLAY

    @field_validator("display")
    @classmethod
    def _display(cls, v: str | None) -> str | None:
        if v is not None and "${" not in v and not X_DISPLAY.fullmatch(v):
            raise ValueError(f"display {v!r} is not an X display name such as ':0' or ':99.0'")
        return v

    def needs(self) -> tuple[str, str] | None:
        """The root window is read with Pillow's X11 grab (no program to install beyond the `ocr` extra)."""
        return "PIL", "ocr"

    def unmet(self, env: Mapping[str, str]) -> list[tuple[str, str]]:
        if self.display is None and not env.get("DISPLAY"):
            return [("x11_screen has no display: DISPLAY is not set and the capture names no `display:`",
                     "set DISPLAY (e.g. DISPLAY=:99 for an Xvfb on :99) or give `display: ':99'`")]
        return []


__all__ = ["CaptureParams", "CaptureSpec", "capture_specs", "BUILTIN_SPECS", "spec", "HttpParams", "CommandParams",
           "SqlParams", "DdbParams", "FileParams", "PageParams", "PageSource", "AGENT_PAGE_NOTE", "agent_page_captures",
           "ScreenshotParams", "AriaParams", "DomParams", "DeviceScreenParams", "AndroidScreenParams",
           "IosScreenParams", "X11ScreenParams", "X_DISPLAY"]
