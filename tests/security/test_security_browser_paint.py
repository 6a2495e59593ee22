"""Captures the agent cannot paint (issue 29): an agent holding CDP to the runner's Chromium controls every tab and
context of it, so the runner's screenshot, aria and DOM captures read a page it loads itself, in a Chromium of its
own, with the session's cookies; the agent's own page only when the plan asks for it, and then the report says so.

The app (`agents/paint_app.py`) shows a session's todos only to a signed-in browser; the agent (`agents/painter.py`)
signs in through the app's form in every step, then paints, or adds the todo as a user would.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import yaml

from tests.security.sec_helpers import cli, cli_env, make_base, remove_tree, run_dirs

pytestmark = pytest.mark.timeout(300)


def _plan(base: Path, steps: list[dict], name: str) -> dict:
    return {"name": name,
            "app": {"start": f"{sys.executable} {base / 'agents' / 'paint_app.py'} --port {{port}}",
                    "url": "http://127.0.0.1:{port}", "ready": "/health"},
            "actor": {"kind": "browser", "command": f"{sys.executable} {base / 'agents' / 'painter.py'}",
                      "timeout_s": 60},
            "steps": steps}


def _checks(text: str, ocr: bool = True) -> list[dict]:
    checks = [{"kind": "dom_contains", "text": text},
              {"kind": "aria_contains", "role": "listitem", "text": text}]
    return checks + ([{"kind": "ocr_contains", "text": text}] if ocr else [])


STEPS = [  # (step id, the todo it wants seen, OCR too)
    ("dom_rewrite", "Walk the dog", True),
    ("init_script_everywhere", "Call mom", True),
    ("data_url", "Pay rent", False),
    ("honest_form", "Buy milk", True),
]


class Run:
    def __init__(self, base: Path, plan: dict) -> None:
        path = base / f"{plan['name']}.yaml"
        path.write_text(yaml.safe_dump(plan, sort_keys=False, width=1000))
        path.chmod(0o644)
        out = base / "out"
        self.rc, self.stdout, self.stderr, _ = cli(["run", path, "--out", out], cwd=base, env=cli_env(), timeout=280)
        dirs = run_dirs(out)
        assert dirs, f"no run directory (rc={self.rc})\nstdout: {self.stdout[-3000:]}\nstderr: {self.stderr[-3000:]}"
        self.run_dir = dirs[-1]
        self.results = json.loads((self.run_dir / "results.json").read_text())

    def step(self, sid: str) -> dict:
        return next(s for s in self.results["steps"] if s["id"] == sid)

    def explain(self, sid: str) -> str:
        return json.dumps(self.step(sid), indent=1)[:3000] + f"\nstderr: {self.stderr[-2000:]}"


# a step whose plan asks for the agent's own page: the agent paints it (a `dom_` step), and the capture reads it
AGENT_PAGE_STEP = {"id": "dom_on_agent_page", "do": "Add a todo to your list. Show: Feed the cat",
                   "capture": [{"kind": "dom", "name": "painted", "source": "agent_page"}],
                   "validators": [{"kind": "dom_contains", "evidence": "painted", "text": "Feed the cat"}]}


@pytest.fixture(scope="module")
def painted():
    """One run of the four steps, and the step that asks for the agent's page, last (one Chromium for them all)."""
    base = make_base("referee-paint-")
    try:
        steps = [{"id": sid, "do": f"Add a todo to your list. Show: {text}", "validators": _checks(text, ocr)}
                 for sid, text, ocr in STEPS]
        yield Run(base, _plan(base, [*steps, AGENT_PAGE_STEP], "paint"))
    finally:
        remove_tree(base)


@pytest.mark.parametrize("sid", ["dom_rewrite", "init_script_everywhere"])
def test_a_page_the_agent_painted_over_cdp_does_not_pass(painted, sid):
    step = painted.step(sid)
    assert step["verdict"] == "FAIL", painted.explain(sid)
    assert step["overclaim"] is True
    # every check read the page the app serves to this session: signed in, without the painted todo
    assert all(v["status"] == "FAIL" for v in step["validators"]), painted.explain(sid)


def test_the_painting_agent_did_paint_every_tab_of_the_runners_browser(painted):
    """The control: the init-script agent's own reload and a fresh tab of that browser both showed the todo."""
    seen = json.loads((painted.run_dir / "agent" / "init_script_everywhere" / "seen.json").read_text())
    assert seen == {"fresh_tab_painted": True, "page_painted": True}


def test_a_page_the_agent_left_on_a_data_url_is_not_loaded_again(painted):
    step = painted.step("data_url")
    assert step["verdict"] != "PASS", painted.explain("data_url")
    assert "data:" in step["reason"] and "app.url" in step["reason"], painted.explain("data_url")


def test_an_agent_that_adds_the_todo_through_the_app_passes(painted):
    """The session's cookies (HttpOnly) go with the page: the runner's load is signed in and sees the todo."""
    assert painted.step("honest_form")["verdict"] == "PASS", painted.explain("honest_form")


def test_the_runners_dom_capture_says_which_page_it_read(painted):
    dom = (painted.run_dir / "evidence" / "honest_form" / "after" / "_dom.html").read_text()
    first = dom.splitlines()[0]
    assert "page: loaded by the runner" in first and "session's cookies" in first, first


def test_a_plan_that_asks_for_the_agents_page_gets_it_and_the_report_says_so(painted):
    step = painted.step("dom_on_agent_page")
    assert step["verdict"] == "PASS", painted.explain("dom_on_agent_page")  # what the agent painted, as asked
    said = "the agent's own page (source: agent_page)"
    assert said in step["reason"] and said in step["validators"][0]["reason"], painted.explain("dom_on_agent_page")
    report = (painted.run_dir / "report.html").read_text()
    assert "the agent&#x27;s own page (source: agent_page)" in report
    assert "agent_page" in painted.stdout, painted.stdout[-3000:]
