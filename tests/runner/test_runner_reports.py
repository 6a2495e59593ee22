"""results.json, junit.xml, `--json`, claims.json, the run directory layout, and claims that never
change a verdict."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest
import yaml

from tests.conftest import base_cli_env
from tests.runner.runner_helpers import VERDICTS, agent_cmd, do_run, write_plan


def _plan(W) -> dict:
    return {
        "name": "report-me",
        "steps": [
            {"id": "good", "do": "SAVE a.txt hello world",
             "validators": [{"kind": "text_contains", "evidence": "a.txt", "text": "hello"}]},
            {"id": "bad", "do": "Make b.txt (this agent will not).",
             "validators": [{"kind": "file_exists", "path": "b-never.txt"}]},
            {"id": "skip", "do": "Nothing to check."},
            {"id": "err", "do": "nothing",
             "validators": [{"kind": "regex_match", "evidence": "never.txt", "pattern": "x"}]},
        ],
    }


EXPECTED = {"good": "PASS", "bad": "FAIL", "skip": "SKIPPED", "err": "ERROR"}


@pytest.fixture(scope="module")
def rrun(tmp_path_factory):
    W = tmp_path_factory.mktemp("reports")
    path = write_plan(W / "some-file-stem.yaml", _plan(W))
    run = do_run(path, out=W / "out", cwd=W, env=base_cli_env(), agent=agent_cmd("honest", "--claim", "pass"),
                 extra=["--json"])
    run.W = W
    run.plan_path = path
    return run


def test_run_directory_layout(rrun):
    assert rrun.run_dir is not None, rrun.explain()
    assert rrun.run_dir.parent.name == "report-me", "OUT/<plan name>/<UTC timestamp>/"
    assert rrun.run_dir.parent.parent == rrun.out
    for name in ("plan.yaml", "manifest.json", "claims.json", "results.json", "junit.xml"):
        assert (rrun.run_dir / name).is_file(), name
    assert yaml.safe_load((rrun.run_dir / "plan.yaml").read_text()) == yaml.safe_load(rrun.plan_path.read_text())


def test_results_json_schema_and_verdicts(rrun):
    r = rrun.results
    assert r["results_version"] == 2 and r["plan"] == "report-me"
    assert [s["id"] for s in r["steps"]] == list(EXPECTED), "steps in plan order"
    for s in r["steps"]:
        assert {"id", "verdict", "validators", "claim", "overclaim"} <= set(s), s
        assert s["verdict"] in VERDICTS
        for v in s["validators"]:
            assert {"name", "kind", "status", "reason"} <= set(v), v
            assert v["status"] in ("PASS", "FAIL", "ERROR"), v
    assert rrun.verdicts() == EXPECTED, rrun.explain()


def test_summary_and_overclaims(rrun):
    r = rrun.results
    got = {k: r["summary"].get(k) for k in ("PASS", "FAIL", "SKIPPED", "ERROR", "overclaims")}
    assert got == {"PASS": 1, "FAIL": 1, "SKIPPED": 1, "ERROR": 1, "overclaims": 3}, r["summary"]
    for s in r["steps"]:
        assert s["claim"]["pass"] is True, s
        assert s["overclaim"] is (s["verdict"] != "PASS"), s


def test_exit_code_and_json_stdout(rrun):
    assert rrun.rc == 1
    doc = json.loads(rrun.stdout)
    assert list(doc) == ["runs"] or "runs" in doc
    (run,) = doc["runs"]
    assert run["plan"] == "report-me"
    from pathlib import Path

    assert Path(run["run_dir"]).resolve() == rrun.run_dir.resolve()
    assert run["steps"] == rrun.results["steps"]
    assert run["summary"] == rrun.results["summary"]


def test_junit_xml(rrun):
    root = ET.parse(rrun.run_dir / "junit.xml").getroot()
    cases = {c.get("name"): c for c in root.iter("testcase")}
    assert len(cases) == 4, list(cases)

    def case(sid):
        (c,) = [c for n, c in cases.items() if n == sid or n.endswith(sid) or sid in n.split(".")]
        return c

    tags = {sid: {child.tag for child in case(sid)} & {"failure", "error", "skipped"} for sid in EXPECTED}
    assert tags == {"good": set(), "bad": {"failure"}, "skip": {"skipped"}, "err": {"error"}}, tags
    suites = [root] if root.tag == "testsuite" else list(root.iter("testsuite"))
    assert suites
    s = suites[0]
    for attr, want in (("tests", 4), ("failures", 1), ("errors", 1), ("skipped", 1)):
        if s.get(attr) is not None:
            assert int(s.get(attr)) == want, (attr, s.attrib)


def test_claims_json_records_the_claims_as_given(rrun):
    claims = json.loads((rrun.run_dir / "claims.json").read_text())
    text = json.dumps(claims)
    assert "forced pass" in text, "the agent's note is not recorded"
    for sid in EXPECTED:
        assert sid in text


def test_default_plan_name_is_the_file_stem(tmp_path, cli_env):
    plan = [{"id": "only", "do": "SAVE a.txt x", "validators": [{"kind": "text_contains", "evidence": "a.txt",
                                                                  "text": "x"}]}]
    path = write_plan(tmp_path / "my-stem.yaml", plan)  # bare list: no name
    run = do_run(path, out=tmp_path / "out", cwd=tmp_path, env=cli_env, agent=agent_cmd("honest"))
    assert run.rc == 0, run.explain()
    assert run.run_dir.parent.name == "my-stem"
    assert run.results["plan"] == "my-stem"


# ------------------------------------------------------------ the claim has no influence


@pytest.mark.parametrize("mode", ["fail", "none", "garbage"])
def test_the_claim_never_changes_a_verdict(rrun, tmp_path, cli_env, mode):
    path = write_plan(tmp_path / "some-file-stem.yaml", _plan(tmp_path))
    run = do_run(path, out=tmp_path / "out", cwd=tmp_path, env=cli_env, agent=agent_cmd("honest", "--claim", mode))
    assert run.rc == rrun.rc, run.explain()
    def strip(steps):  # what the grader decided (reasons may name this run's own paths)
        return [(s["id"], s["verdict"], [(v["kind"], v["status"]) for v in s["validators"]]) for s in steps]

    assert strip(run.results["steps"]) == strip(rrun.results["steps"])
    assert run.results["summary"]["overclaims"] == 0
    for s in run.results["steps"]:
        assert s["overclaim"] is False, s
        if mode == "fail":
            assert s["claim"]["pass"] is False, s
        else:  # no claim file, or a malformed one: recorded as "no claim", not a crash
            assert s["claim"] is None or s["claim"].get("pass") is None, s


def test_an_earlier_attempts_claim_note_is_in_the_report_escaped():
    from referee.report.html_steps import verdict_extra

    step = {"id": "add", "attempts": [{"attempt": 1, "verdict": "FAIL", "reason": "no row", "overclaim": True,
                                       "claim": {"pass": True, "note": "done <script>x()</script>\x1b[31m"}}]}
    page = verdict_extra(step)
    assert "OVERCLAIM" in page and "claimed pass" in page
    assert "done &lt;script&gt;x()&lt;/script&gt;\\x1b[31m" in page
    assert "<script>" not in page and "\x1b" not in page
