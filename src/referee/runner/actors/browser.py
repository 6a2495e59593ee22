"""The browser actor: performs a step's `script:` on the runner's page, or lets an agent drive it over CDP."""

from __future__ import annotations

import json
import time
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

# the script schema is plan data; parse_action/parse_script stay importable from here
from referee.plan.script import TARGET_WAYS, Target, parse_action, parse_script  # noqa: F401
from referee.runner.actors.base import ActorKind, ActorResult, StepRun, actors

if TYPE_CHECKING:
    from referee.runner.browser import BrowserSession

DEFAULT_TIMEOUT_S = 10.0


def locate(target: Target, page):
    """The Playwright locator for a parsed script target."""
    if target.role is not None:
        return page.get_by_role(target.role, name=target.name, exact=target.exact) if target.name is not None \
            else page.get_by_role(target.role)
    if target.text is not None:
        return page.get_by_text(target.text, exact=target.exact)
    if target.label is not None:
        return page.get_by_label(target.label, exact=target.exact)
    if target.placeholder is not None:
        return page.get_by_placeholder(target.placeholder, exact=target.exact)
    return page.locator(target.selector)


def join(app_url: str | None, url: str) -> str:
    """Join a script path to app.url.

    >>> join("http://127.0.0.1:9/", "/shop"), join(None, "http://127.0.0.1:1/")
    ('http://127.0.0.1:9/shop', 'http://127.0.0.1:1/')
    """
    if "://" in url or url.startswith(("about:", "data:")) or not app_url:
        return url
    return app_url.rstrip("/") + "/" + url.lstrip("/")


def perform_action(page, verb: str, arg: Any, app_url: str | None, cap_s: float | None = None) -> None:
    """Do one parsed action on the page; Playwright's errors propagate."""
    # each action's own timeout, never past what is left of the step's (`cap_s`)
    ms = lambda t: min(t if t is not None else DEFAULT_TIMEOUT_S, cap_s if cap_s is not None else 1e9) * 1000  # noqa: E731
    if verb == "goto":
        page.goto(join(app_url, arg.url), wait_until="load", timeout=ms(arg.timeout_s))
    elif verb == "click":
        locate(arg, page).click(timeout=ms(arg.timeout_s))
    elif verb == "check":
        locate(arg, page).check(timeout=ms(arg.timeout_s))
    elif verb == "fill":
        locate(arg, page).fill(arg.value, timeout=ms(arg.timeout_s))
    elif verb == "select":
        locate(arg, page).select_option(arg.option, timeout=ms(arg.timeout_s))
    elif verb == "press":
        has_target = any(getattr(arg, k) is not None for k in TARGET_WAYS)
        if has_target:
            locate(arg, page).press(arg.key, timeout=ms(arg.timeout_s))
        else:
            page.keyboard.press(arg.key)
    elif verb == "wait_for":
        if arg.url is not None:
            page.wait_for_url(join(app_url, arg.url) if arg.url.startswith("/") else arg.url, timeout=ms(arg.timeout_s))
        else:
            locate(arg, page).first.wait_for(state=arg.state, timeout=ms(arg.timeout_s))


def _no_opinion(run: StepRun) -> None:
    """A scripted step has no agent and so no opinion: say so rather than leave "no claim file"."""
    if not run.claim_file.exists():
        from referee.core.fsutil import atomic_write_text

        atomic_write_text(run.claim_file, json.dumps({"pass": None, "note": "scripted by the browser actor; no agent",
                                                      "evidence": []}))


class BrowserActor(ActorKind):
    """Opens the runner's Chromium for the plan; each step runs its `script:`, then the agent command if any.

    The agent gets `REFEREE_CDP_URL` and drives the same page; the runner's captures then read a page it loads
    itself (`pages`, `referee.runner.pages`). With no agent, the browser has no CDP endpoint at all.
    """

    kind = "browser"

    def __init__(self) -> None:
        self.session: BrowserSession | None = None
        self.command: str | None = None
        self.run_dir: Path | None = None
        self.app_url: str | None = None
        self.opened: set[tuple] = set()  # origins the plan's script went to: pages the runner may load for captures

    @classmethod
    def preflight(cls, spec) -> None:
        from referee.errors import require

        require("playwright.sync_api", "browser")
        from referee.runner.browser import chromium_path

        chromium_path()  # no Chromium, or a REFEREE_CHROMIUM that is not one: said before any run directory exists
        if spec.command:
            from referee.runner.actors.command import check_isolation

            check_isolation(spec)

    def setup(self, spec, *, app_url, run_dir):
        from referee.runner.browser import BrowserSession

        self.command = spec.command
        self.app_url = app_url
        self.run_dir = Path(run_dir)
        self.session = BrowserSession.start(headless=spec.headless, cdp=bool(self.command))
        if self.command:
            from referee.runner.actors.command import sandbox_for

            self.sandbox = sandbox_for(spec, run_dir=self.run_dir, cwd=Path.cwd(), command=self.command)

    @property
    def page(self) -> Any:
        return self.session.page if self.session else None

    @property
    def pages(self) -> Any:
        """What screen captures read (`referee.runner.pages.PageSource`)."""
        if self.session is None:
            return None
        from referee.runner.pages import PageSource

        return PageSource(self.session, self.app_url, agent_driven=bool(self.command), opened=self.opened)

    @property
    def cdp_url(self) -> str | None:
        return self.session.cdp_url if self.session else None

    def perform(self, run: StepRun) -> ActorResult:
        session = self.session
        if session is None:
            return ActorResult(exit_code=None, error="the browser actor performed a step before its setup")
        # the page the before-captures loaded shows the app before the step: the after-captures load theirs again
        session.forget_pages()
        try:
            return self._perform(session, run)
        finally:
            session.forget_pages()

    def _perform(self, session: BrowserSession, run: StepRun) -> ActorResult:
        try:
            actions = parse_script(run.step.script)
        except ValueError as exc:
            return ActorResult(exit_code=None, error=f"step '{run.step.id}': {exc}")
        done = 0
        deadline = time.monotonic() + run.timeout_s  # the whole script shares the step's timeout
        script_error: str | None = None
        try:
            for verb, arg in actions:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"the step's timeout_s ({run.timeout_s:g}s) ran out")
                if verb == "goto":
                    from referee.runner.pages import origin

                    if (where := origin(join(run.app_url, arg.url))) is not None:
                        self.opened.add(where)
                perform_action(self.page, verb, arg, run.app_url, cap_s=left)
                done += 1
        except Exception as exc:
            verb, arg = actions[done]
            first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            script_error = f"script item #{done + 1} ({verb} {arg.describe()}) failed: {first}"
            session.settle(2.0)
        if not self.command:
            _no_opinion(run)
            if script_error is None:
                session.settle()
            return ActorResult(exit_code=1 if script_error else 0, error=script_error)
        # a failed action decides nothing (docs/screens.md): the agent still gets the step, on the page as it is
        from referee.runner.actors.command import run_agent_command

        run.cdp_url = run.cdp_url or self.cdp_url
        result = run_agent_command(self.command, run, sandbox=self.sandbox, cwd=Path.cwd())
        session.settle()
        if script_error is not None:
            result = replace(result, error="; ".join(e for e in (script_error, result.error) if e))
        return result

    def teardown(self) -> None:
        if self.sandbox is not None:
            self.sandbox.close()
        if self.session is not None:
            if self.run_dir is not None:
                try:
                    # the agent's console messages and URLs: scrubbed, as everything it writes
                    self.session.write_log(self.run_dir / "browser.log", self.scrub)
                except OSError:
                    pass
            self.session.close()
            self.session = None


actors.add("browser", BrowserActor)
