"""The browser `script:` of a step as plan data: one action per item, each a typed model.

The browser actor performs a parsed script (`referee.runner.actors.browser`); `referee lint` and
anything else that checks a plan parse it here, without the actor or Playwright.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from referee.plan.model import Seconds

TARGET_WAYS = ("role", "text", "label", "placeholder", "selector")


class Target(BaseModel):
    """What an action acts on: exactly one of role (+name), text, label, placeholder, selector."""

    model_config = ConfigDict(extra="forbid")

    role: str | None = None
    name: str | None = None
    exact: bool = False
    text: str | None = None
    label: str | None = None
    placeholder: str | None = None
    selector: str | None = None
    timeout_s: Seconds | None = None

    @model_validator(mode="after")
    def _one_way(self) -> "Target":
        ways = [k for k in ("role", "text", "label", "placeholder", "selector") if getattr(self, k) is not None]
        if len(ways) != 1:
            raise ValueError("name exactly one of role, text, label, placeholder, selector"
                             + (f" (got {', '.join(ways)})" if ways else ""))
        if self.name is not None and self.role is None:
            raise ValueError("`name` goes with `role`")
        return self

    def describe(self) -> str:
        d = self.model_dump(exclude_none=True, exclude_defaults=True)
        return ", ".join(f"{k}={v!r}" for k, v in d.items())


class Fill(Target):
    value: str


class Press(Target):
    key: str

    @model_validator(mode="after")
    def _one_way(self) -> "Press":  # a press may go to the focused element: no target needed
        ways = [k for k in ("role", "text", "label", "placeholder", "selector") if getattr(self, k) is not None]
        if len(ways) > 1:
            raise ValueError("name at most one of role, text, label, placeholder, selector")
        return self


class Select(Target):
    option: str


class WaitFor(Target):
    """Wait for an element (any Target way) to reach `state`, or for the URL to match `url`."""

    url: str | None = None
    state: Literal["visible", "hidden", "attached", "detached"] = "visible"

    @model_validator(mode="after")
    def _one_way(self) -> "WaitFor":  # replaces Target's check: `url` is one more way
        ways = [k for k in ("role", "text", "label", "placeholder", "selector", "url") if getattr(self, k) is not None]
        if len(ways) != 1:
            raise ValueError("name exactly one of role, text, label, placeholder, selector, url")
        if self.name is not None and self.role is None:
            raise ValueError("`name` goes with `role`")
        return self


class Goto(BaseModel):
    """Open `url`: a URL, or a path joined to app.url; waits up to `timeout_s` for the page to load."""

    model_config = ConfigDict(extra="forbid")

    url: str = Field(min_length=1)
    timeout_s: Seconds | None = None

    def describe(self) -> str:
        return self.url if self.timeout_s is None else f"{self.url} (timeout_s={self.timeout_s:g})"


ACTIONS: dict[str, type[BaseModel]] = {"goto": Goto, "click": Target, "check": Target, "fill": Fill, "press": Press,
                                       "select": Select, "wait_for": WaitFor}
# `click: Send` == `click: {text: Send}`, `goto: /` == `goto: {url: /}`
SHORTHAND = {"goto": "url", "click": "text", "check": "label", "wait_for": "text"}
SUMMARY = {"goto": "open a URL, or a path of the app", "click": "click an element", "check": "tick a checkbox or radio",
           "fill": "type `value` into a field", "press": "press `key` (e.g. Enter) on an element",
           "select": "choose `option` in a select", "wait_for": "wait for an element's `state`, or for the URL"}


def parse_action(item: Any, index: int) -> tuple[str, Any]:
    """Validate one `script:` item; ValueError names the item and the rule.

    >>> parse_action({"click": {"role": "button", "name": "Send"}}, 0)[1].describe()
    "role='button', name='Send'"
    >>> parse_action({"goto": "/x"}, 0)
    ('goto', Goto(url='/x', timeout_s=None))
    >>> parse_action({"click": {"role": "button", "text": "x"}}, 2)
    Traceback (most recent call last):
    ...
    ValueError: script item #3 (click): name exactly one of role, text, label, placeholder, selector (got role, text)
    """
    if not isinstance(item, dict) or len(item) != 1:
        raise ValueError(f"script item #{index + 1}: one action per item, e.g. `- click: {{role: button, name: Send}}`")
    (verb, arg), = item.items()
    if verb == "goto" and not (isinstance(arg, str) and arg or isinstance(arg, dict)):
        raise ValueError(f"script item #{index + 1} (goto): give a URL or path, e.g. `- goto: /`")
    model = ACTIONS.get(verb)
    if model is None:
        known = ", ".join(ACTIONS)
        raise ValueError(f"script item #{index + 1}: unknown action '{verb}'; known actions: {known}")
    if isinstance(arg, str) and verb in SHORTHAND:
        arg = {SHORTHAND[verb]: arg}
    try:
        return verb, model.model_validate(arg if isinstance(arg, dict) else {})
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"])
        msg = err["msg"].removeprefix("Value error, ")
        raise ValueError(f"script item #{index + 1} ({verb}): {msg}" + (f" at '{where}'" if where else "")) from None


def parse_script(items: list[Any]) -> list[tuple[str, Any]]:
    """Validate a whole `script:` list (the lint calls this too, so mistakes show before a run)."""
    return [parse_action(item, i) for i, item in enumerate(items)]


__all__ = ["Goto", "Target", "Fill", "Press", "Select", "WaitFor", "ACTIONS", "SHORTHAND", "SUMMARY", "TARGET_WAYS",
           "parse_action", "parse_script"]
