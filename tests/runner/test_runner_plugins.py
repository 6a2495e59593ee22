"""A third-party validator registered through the `referee.validators` entry point group."""

from __future__ import annotations

import json
import os
import sys
import textwrap

from tests.conftest import run_cli

PLUGIN = '''
from referee.validators import Outcome, ValidatorKind, ValidatorParams


class NumberIsEven(ValidatorKind):
    summary = "the number in an evidence file is even"

    class Params(ValidatorParams):
        evidence: str

    def check(self, params, ev, index):
        n = int(ev.read_text(params.evidence).strip())
        return Outcome.hold(f"{n} is even") if n % 2 == 0 else Outcome.fail(f"{n} is odd")
'''


def make_site(tmp_path):
    site = tmp_path / "site"
    (site / "referee_plugin_demo-0.1.dist-info").mkdir(parents=True)
    (site / "referee_plugin_demo.py").write_text(PLUGIN)
    (site / "referee_plugin_demo-0.1.dist-info" / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: referee-plugin-demo\nVersion: 0.1\n")
    (site / "referee_plugin_demo-0.1.dist-info" / "entry_points.txt").write_text(
        "[referee.validators]\nnumber_is_even = referee_plugin_demo:NumberIsEven\n")
    return site


def test_an_entry_point_validator_is_listed_and_grades(tmp_path):
    site = make_site(tmp_path)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]))
    rc, out, err = run_cli(["kinds", "--json"], cwd=tmp_path, env=env)
    assert rc == 0, err
    assert json.loads(out)["validators"]["number_is_even"]["params"] == ["name=None", "require_change=False",
                                                                         "evidence"]
    agent = tmp_path / "agent.py"
    agent.write_text(textwrap.dedent("""
        import os
        n = {"four": "4", "three": "3"}[os.environ["REFEREE_STEP_ID"]]
        open(os.path.join(os.environ["REFEREE_AGENT_DIR"], "n.txt"), "w").write(n)
    """))
    (tmp_path / "plan.yaml").write_text(
        "steps:\n"
        "  - id: four\n    do: x\n    validators: [{kind: number_is_even, evidence: n.txt}]\n"
        "  - id: three\n    do: x\n    validators: [{kind: number_is_even, evidence: n.txt}]\n")
    rc, out, err = run_cli(["run", "plan.yaml", "--agent", f"{sys.executable} agent.py", "--out", "runs", "--json"],
                           cwd=tmp_path, env=env)
    verdicts = {s["id"]: (s["verdict"], s["reason"]) for s in json.loads(out)["runs"][0]["steps"]}
    assert verdicts["four"][0] == "PASS"
    assert verdicts["three"] == ("FAIL", "number_is_even#0: 3 is odd")
    assert rc == 1


def test_without_the_plugin_the_kind_is_unknown_with_a_hint(tmp_path):
    (tmp_path / "plan.yaml").write_text(
        "steps:\n  - id: a\n    do: x\n    validators: [{kind: number_is_even, evidence: n.txt}]\n")
    rc, out, err = run_cli(["check", "plan.yaml"], cwd=tmp_path)
    assert rc == 2 and "unknown validator kind 'number_is_even'" in err and "known validator kinds:" in err


# ---- a broken plugin, and a capture plugin that reports failure the old way ---------------------------------------

def test_a_broken_plugin_does_not_stop_a_built_in_lookup(monkeypatch):
    import importlib.metadata

    import pytest

    from referee.core.registry import Registry

    class Broken:
        name = "broken"
        value = "nothing_here:thing"

        def load(self):
            raise ModuleNotFoundError("No module named 'nothing_here'")

    monkeypatch.setattr(importlib.metadata, "entry_points", lambda group=None: [Broken()])
    reg: Registry[str] = Registry("thing", "referee.test_things")
    reg.add("builtin", "B")
    assert reg.get("builtin") == "B" and "builtin" in reg
    from referee.errors import PluginError

    with pytest.raises(PluginError, match="nothing_here"):
        reg.get("broken")  # the plugin itself still fails loudly when it is asked for


def test_a_plugin_that_writes_capture_error_reports_a_failure(tmp_path):
    from pathlib import Path

    from referee.runner.run import _reported_failure

    bad = tmp_path / "state.json"
    bad.write_text(json.dumps({"capture_error": "device offline"}))
    good = tmp_path / "ok.json"
    good.write_text(json.dumps({"value": 3}))
    assert _reported_failure([bad]) == "device offline"
    assert _reported_failure([good]) is None and _reported_failure([Path(tmp_path / "x.png")]) is None
