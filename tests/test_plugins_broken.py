"""Broken plugins (docs/plugins.md): each is one line naming its entry point, distribution and fix, exit 2, said
when its name is used or its registry listed, before anything runs; the working plugins beside it keep working,
and a name two plugins register is an error naming both, never a choice by load order."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from tests.conftest import run_cli
from tests.test_plugins_entry_points import LINETRACE, PKG, env_with, make_site

EXTRA_MODULES = {
    "specs.py": '''
        from referee.plan.validators import ValidatorSpec


        class SpecOnly(ValidatorSpec):  # a plan spec without a check: not a validator plugin
            summary = "spec only, no check"


        class Plain:
            pass
        ''',
    "dupes.py": '''
        from referee.validators import Outcome, ValidatorKind


        class Holds(ValidatorKind):
            summary = "A: always holds"

            def check(self, params, ev, index):
                return Outcome.hold("A says yes")


        class Fails(ValidatorKind):
            summary = "B: always fails"

            def check(self, params, ev, index):
                return Outcome.fail("B says no")
        ''',
}

AGENT = "import pathlib; pathlib.Path('acted.txt').write_text('the agent ran')\n"


def _site(tmp_path: Path, *dists: tuple[str, str]) -> Path:
    """A site with the demo plugin package and one dist-info per (name, entry_points.txt text)."""
    site = make_site(tmp_path, dists[0][1], name=dists[0][0])
    for mod, src in EXTRA_MODULES.items():
        (site / PKG / mod).write_text(textwrap.dedent(src))
    for name, eps in dists[1:]:
        dist = site / f"{name}-0.1.dist-info"
        dist.mkdir()
        (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name.replace('_', '-')}\nVersion: 0.1\n")
        (dist / "entry_points.txt").write_text(eps)
    return site


def _plan(tmp_path: Path, *kinds: str, name: str = "plan.yaml") -> str:
    vals = "".join(f"      - {{kind: {k}, evidence: out.txt}}\n" for k in kinds)
    (tmp_path / "agent.py").write_text(AGENT)
    (tmp_path / name).write_text(f"actor: {{kind: command, command: 'python3 agent.py'}}\nsteps:\n  - id: s\n"
                                 f"    do: x\n    validators:\n{vals}")
    return name


def _one_line(err: str) -> str:
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    return err


def test_a_validator_plugin_that_is_only_a_spec_stops_kinds_check_and_run_before_the_agent(tmp_path):
    site = _site(tmp_path, ("referee_spec_demo", f"[referee.validators]\nspec_only = {PKG}.specs:SpecOnly\n"))
    env = env_with(site)
    rc, out, err = run_cli(["kinds"], cwd=tmp_path, env=env)
    assert rc == 2 and "spec_only" not in out, out
    err = _one_line(err)
    assert "entry point referee.validators:spec_only" in err and "referee-spec-demo" in err, err
    assert "should point at a ValidatorKind subclass" in err, err

    plan = _plan(tmp_path, "spec_only")
    rc, out, err = run_cli(["check", plan], cwd=tmp_path, env=env)
    assert rc == 2 and "should point at a ValidatorKind subclass" in err, err
    rc, out, err = run_cli(["run", plan, "--out", "runs"], cwd=tmp_path, env=env)
    assert rc == 2 and "should point at a ValidatorKind subclass" in err, err
    assert not (tmp_path / "acted.txt").exists() and not (tmp_path / "runs").exists()


def test_a_plain_class_is_told_to_be_a_validator_kind_not_a_spec(tmp_path):
    site = _site(tmp_path, ("referee_plain_demo", f"[referee.validators]\nplain = {PKG}.specs:Plain\n"))
    rc, out, err = run_cli(["kinds"], cwd=tmp_path, env=env_with(site))
    assert rc == 2 and "should point at a ValidatorKind subclass" in _one_line(err), err
    assert "ValidatorSpec" not in err, err


BROKEN = f"""
[referee.validators]
number_is_even = {PKG}.validators:NumberIsEven
missing_mod = referee_no_such_module:Thing

[referee.readers]
linetrace = {PKG}.readers:read_lines
badreader = {PKG}.specs:SpecOnly.summary
"""


def test_a_broken_plugin_leaves_the_working_ones_of_its_group_working(tmp_path):
    env = env_with(_site(tmp_path, ("referee_broken_demo", BROKEN)))
    rc, out, err = run_cli(["check", _plan(tmp_path, "number_is_even", "number_is_even")], cwd=tmp_path, env=env)
    assert rc == 0 and "ok (1 steps, 2 validators)" in out, err
    (tmp_path / "t.lines").write_text(LINETRACE)
    rc, _, err = run_cli(["audit", "t.lines", "--format", "linetrace", "--out", "a.jsonl", "--no-progress"],
                         cwd=tmp_path, env=env)
    assert rc == 0 and len((tmp_path / "a.jsonl").read_text().splitlines()) == 2, err


def test_a_broken_plugin_used_by_a_plan_is_said_once_as_itself(tmp_path):
    env = env_with(_site(tmp_path, ("referee_broken_demo", BROKEN)))
    plan = _plan(tmp_path, "number_is_even", "missing_mod", "missing_mod")
    rc, out, err = run_cli(["check", plan], cwd=tmp_path, env=env)
    assert rc == 2, err
    err = _one_line(err)
    assert err.startswith("referee: error: entry point referee.validators:missing_mod = referee_no_such_module:Thing"
                          " (from referee-broken-demo 0.1): cannot load: ModuleNotFoundError"), err
    assert err.rstrip().endswith("; fix or uninstall that plugin"), err
    assert "in step" not in err and "unknown" not in err and "plan.yaml:" not in err, err
    rc, out, err = run_cli(["check", "--json", plan], cwd=tmp_path, env=env)
    errors = json.loads(out)[plan]["errors"]
    assert len(errors) == 1 and "missing_mod" in errors[0]["message"], errors


def test_listing_a_group_with_a_broken_plugin_names_it(tmp_path):
    env = env_with(_site(tmp_path, ("referee_broken_demo", BROKEN)))
    (tmp_path / "t.lines").write_text(LINETRACE)
    rc, out, err = run_cli(["kinds"], cwd=tmp_path, env=env)
    assert rc == 2 and "entry point referee.validators:missing_mod" in _one_line(err), err
    rc, out, err = run_cli(["readers"], cwd=tmp_path, env=env)
    assert rc == 2 and "entry point referee.readers:badreader" in _one_line(err), err
    rc, _, err = run_cli(["audit", "t.lines", "--format", "badreader", "--out", "b.jsonl"], cwd=tmp_path, env=env)
    assert rc == 2 and "entry point referee.readers:badreader" in _one_line(err), err
    rc, _, err = run_cli(["audit", "t.lines", "--format", "linetrac", "--out", "b.jsonl"], cwd=tmp_path, env=env)
    assert rc == 2 and "did you mean 'linetrace'?" in err and "broken plugins left out: badreader" in err, err


DUPE_A = f"[referee.validators]\ndupe_kind = {PKG}.dupes:Holds\nnumber_is_even = {PKG}.validators:NumberIsEven\n"
DUPE_B = f"[referee.validators]\ndupe_kind = {PKG}.dupes:Fails\n"


def test_two_plugins_of_one_name_are_an_error_naming_both(tmp_path):
    env = env_with(_site(tmp_path, ("referee_dupe_a", DUPE_A), ("referee_dupe_b", DUPE_B)))
    for args in (["kinds"], ["check", _plan(tmp_path, "dupe_kind")],
                 ["run", _plan(tmp_path, "dupe_kind"), "--out", "runs"]):
        rc, out, err = run_cli(args, cwd=tmp_path, env=env)
        assert rc == 2, (args, out, err)
        err = _one_line(err)
        assert "validator kind 'dupe_kind' is registered by 2 plugins" in err, err
        assert f"dupe_kind = {PKG}.dupes:Holds (from referee-dupe-a 0.1)" in err, err
        assert f"dupe_kind = {PKG}.dupes:Fails (from referee-dupe-b 0.1)" in err, err
        assert "uninstall all but one" in err, err
    assert not (tmp_path / "acted.txt").exists()
    rc, out, err = run_cli(["check", _plan(tmp_path, "number_is_even", name="other.yaml")], cwd=tmp_path, env=env)
    assert rc == 0, err  # the other plugins of those distributions still work


def test_the_duplicate_rule_is_documented():
    doc = (Path(__file__).parents[1] / "docs" / "plugins.md").read_text()
    assert "registered by 2 plugins" in doc
