"""Risk: a number in [0, 1], deterministic, monotone in every risk-raising feature, its file's hash in each record;
the review cap of a policy, and replay recomputing risk from cached evidence."""

from __future__ import annotations

import hashlib
import json

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from referee.audit.decide.policy import ReviewSpec
from referee.audit.decide.policyfile import load_policy
from referee.audit.decide.review import cap_review, review_order
from referee.audit.decide.risk import FEATURES, RAISING, RiskModel, hedges_in, parse_risk, record_features, score
from referee.audit.decide.riskfile import RISK_FILE, load_risk
from referee.audit.present.replay import replay_file
from referee.audit.records import TraceSignals
from referee.audit.run.pipeline import audit_trace
from referee.audit.trace import Trace
from referee.cli.main import cli

SHIPPED = load_risk()
unit = st.floats(min_value=0.0, max_value=1.0, allow_nan=False)
features = st.fixed_dictionaries({n: unit for n in FEATURES})


def _trace(run_id: str = "r", report: str = "Done, order O-7 was cancelled.", error: bool = False) -> Trace:
    obs = {"text": "Error: order not found", "error": True} if error else {"text": "cancelled O-7"}
    return Trace(run_id=run_id, task="Cancel order O-7", report=report,
                 steps=[{"action": {"name": "cancel_order", "args": {"id": "O-7"}}, "observation": obs}])


@given(features)
@settings(max_examples=200, deadline=None)
def test_risk_is_a_number_in_the_unit_interval_and_the_same_every_time(f):
    r = score(f, SHIPPED)
    assert 0.0 <= r <= 1.0 and score(dict(f), SHIPPED) == r


@given(features, st.sampled_from(sorted(RAISING)), unit)
@settings(max_examples=300, deadline=None)
def test_more_of_a_risk_raising_feature_never_lowers_risk(f, name, more):
    higher = dict(f, **{name: max(f[name], more)})
    assert score(higher, SHIPPED) >= score(f, SHIPPED)


def test_a_risk_file_that_lowers_risk_for_a_raising_feature_is_refused():
    with pytest.raises(ValueError, match="may not be negative"):
        parse_risk(b"risk_version: 1\nintercept: 0\nfeatures: [{name: cut_off, meaning: m, weight: -1}]")
    with pytest.raises(ValueError, match="unknown feature"):
        parse_risk(b"risk_version: 1\nintercept: 0\nfeatures: [{name: agent_x_tool, meaning: m, weight: 1}]")


def test_the_shipped_file_weighs_every_feature_and_says_what_it_was_fitted_on():
    import yaml

    doc = yaml.safe_load(RISK_FILE.read_bytes())
    assert [f["name"] for f in doc["features"]] == list(FEATURES) and len(doc["fitted_on"]) >= 2
    assert SHIPPED.sha256 == hashlib.sha256(RISK_FILE.read_bytes()).hexdigest()


def test_every_record_carries_its_risk_and_the_risk_file_hash():
    rec = audit_trace(_trace())
    assert rec.record_version == 6 and rec.risk is not None and rec.risk.sha256 == SHIPPED.sha256
    assert 0.0 <= rec.risk.value <= 1.0 and rec.signals is not None and rec.signals.writes == 1


def test_an_error_after_the_write_raises_risk_over_the_same_run_without_one():
    calm, failed = audit_trace(_trace()), audit_trace(_trace(error=True))
    assert failed.signals.error_after_write and failed.signals.error_last and not calm.signals.error_last
    assert failed.risk.value >= calm.risk.value


def _sh(command: str, out: str = "", error: bool = False) -> dict:
    return {"action": {"name": "bash", "args": {"command": command}}, "observation": {"text": out, "error": error}}


def _call(name: str, out: str = "ok", **args: object) -> dict:
    return {"action": {"name": name, "args": args}, "observation": {"text": out}}


EDIT, TEST, READ = "sed -i 's/<=/</' utils/range.py", "python -m pytest -q tests/", "cat utils/range.py"


@pytest.mark.parametrize("steps, writes, unchecked, error_after, streak", [
    # a shell edit is a write (extract/acting.py's recognition), and only a command that runs something checks it
    ([_sh(EDIT)], 1, True, False, 1),
    ([_sh(EDIT), _sh(READ)], 1, True, False, 1),
    ([_sh(EDIT), _sh(TEST, "1 passed")], 1, False, False, 1),
    ([_sh(EDIT), _sh(TEST, "1 failed", error=True)], 1, False, True, 1),
    ([_sh("cat <<'EOF' > fix.py\nx = 1\nEOF"), _sh("echo done && git diff")], 1, True, False, 1),
    ([_sh(READ), _sh(TEST)], 0, False, False, 1),
    # the end-of-run signal neither writes nor checks
    ([_sh(EDIT), _sh("submit")], 1, True, False, 1),
    # named tools: a write by its verb, checked by any later action that is not a write
    ([_call("cancel_order", id="O-7")], 1, True, False, 1),
    ([_call("cancel_order", id="O-7"), _call("get_details", id="O-7")], 1, False, False, 1),
    # a loop is one identical action back to back (a message without arguments between is no break); the same
    # test command run again after edits in between is none
    ([_sh(TEST), _sh(TEST), _sh(TEST)], 0, False, False, 3),
    ([_call("get_details", id="O-7"), {"action": {"name": "think", "args": {}}}, _call("get_details", id="O-7")],
     0, False, False, 2),
    ([_sh(TEST), _sh(EDIT), _sh(TEST), _sh(EDIT), _sh(TEST)], 2, False, False, 1),
])
def test_trace_signals_see_shell_edits_checks_and_loops(steps, writes, unchecked, error_after, streak):
    from referee.audit.view.blind import build_view
    from referee.audit.view.facts import trace_signals

    s = trace_signals(build_view(Trace(run_id="r", task="t", steps=steps)))
    assert (s.writes, s.unchecked_change, s.error_after_write, s.max_streak) == (writes, unchecked, error_after, streak)


@pytest.mark.parametrize("signals, many_writes, repeated", [
    (TraceSignals(actions=3, writes=0, max_repeat=3, max_streak=1), 0.0, 0.0),  # a rerun test is no loop
    (TraceSignals(actions=9, writes=5, max_streak=3), 0.5, 0.5),
    (TraceSignals(actions=40, writes=25, max_streak=9), 1.0, 1.0),
])
def test_many_writes_and_repeated_are_in_the_unit_interval(signals, many_writes, repeated):
    from referee.audit.decide.risk import features_of
    from referee.audit.records import ClaimReading

    f = features_of(ClaimReading(label="success"), [], "completed", None, signals, [])
    assert (f["many_writes"], f["repeated"]) == (many_writes, repeated)


@pytest.mark.parametrize("report, hedged", [
    ("Cancelled O-7; it should work now, please verify.", True),
    ("I believe the order is cancelled.", True),
    ("Cancelled O-7.", False),
])
def test_hedging_reports_are_read_in_the_deciding_stage(report, hedged):
    rec = audit_trace(_trace(report=report))
    assert bool(rec.risk.hedges) == hedged == bool(hedges_in(report))
    assert record_features(rec)["hedged"] == (1.0 if hedged or rec.claim.family == "hedged" else 0.0)


def test_replay_recomputes_risk_from_the_cached_evidence_and_keeps_older_records_readable(tmp_path):
    rec = audit_trace(_trace(report="Should work now: O-7 cancelled."))
    old = rec.model_dump(mode="json")
    old.update(record_version=4, risk=None, signals=None)  # as written before risk
    path = tmp_path / "a.jsonl"
    path.write_text(json.dumps(rec.model_dump(mode="json")) + "\n" + json.dumps(dict(old, run_id="old")) + "\n")
    got = {r.run_id: r for r in replay_file(path, load_policy("causal"))}
    assert got["r"].risk == rec.risk
    assert got["old"].risk is not None and got["old"].risk.sha256 == SHIPPED.sha256  # old record: no signals, 0s


RUNS = [("a", 0.9, "pass"), ("b", 0.2, "review"), ("c", 0.7, "flag"), ("d", 0.6, "pass"), ("e", None, "review")]


@pytest.mark.parametrize("spec, expected", [
    (None, {"a": "pass", "b": "review", "c": "flag", "d": "pass", "e": "review"}),
    (ReviewSpec(), {"a": "pass", "b": "review", "c": "flag", "d": "pass", "e": "review"}),
    # 5 runs * 0.6 = 3 inspections: the flag and the record without risk take 2, the riskiest other the last
    (ReviewSpec(max_load=0.6), {"a": "review", "b": "pass", "c": "flag", "d": "pass", "e": "review"}),
    (ReviewSpec(max_load=0.2), {"a": "pass", "b": "pass", "c": "flag", "d": "pass", "e": "review"}),
    (ReviewSpec(min_risk=0.5), {"a": "review", "b": "pass", "c": "flag", "d": "review", "e": "review"}),
    (ReviewSpec(max_load=1.0, min_risk=0.0), {"a": "review", "b": "review", "c": "flag", "d": "review",
                                              "e": "review"}),
    (ReviewSpec(max_load=0.8, min_risk=0.65), {"a": "review", "b": "pass", "c": "flag", "d": "pass",
                                               "e": "review"}),
])
def test_a_review_cap_reviews_the_riskiest_undecided_runs_first_and_never_unflags(spec, expected):
    assert cap_review(RUNS, spec) == expected


def test_the_review_order_is_flags_then_risk_highest_first():
    assert review_order(RUNS) == ["c", "a", "d", "b", "e"]


@pytest.mark.parametrize("review, ok", [
    ({"max_load": 0.3}, True), ({"min_risk": 0.6}, True), ({"max_load": 0.0}, False), ({"max_load": 1.5}, False),
    ({"min_risk": -0.1}, False), ({"max_loads": 0.3}, False),
])
def test_a_policy_review_block_is_validated(tmp_path, review, ok):
    import yaml

    from referee.errors import PolicyError

    base = yaml.safe_load((load_policy("causal").path and open(load_policy("causal").path).read()))
    p = tmp_path / "p.yaml"
    p.write_text(yaml.safe_dump(dict(base, name="capped", review=review)))
    if ok:
        assert load_policy(str(p)).policy.review is not None
    else:
        with pytest.raises(PolicyError):
            load_policy(str(p))


def test_replay_under_a_capped_policy_keeps_the_load_within_the_cap(tmp_path):
    import yaml

    recs = [audit_trace(_trace(run_id=f"r{i}", error=i % 2 == 0, report="Done." if i % 3 else "Should work."))
            for i in range(10)]
    path = tmp_path / "a.jsonl"
    path.write_text("".join(json.dumps(r.model_dump(mode="json")) + "\n" for r in recs))
    base = yaml.safe_load(open(load_policy("causal").path).read())
    p = tmp_path / "capped.yaml"
    p.write_text(yaml.safe_dump(dict(base, name="capped", review={"max_load": 0.3})))
    out = list(replay_file(path, load_policy(str(p))))
    flags = sum(r.disposition == "flag" for r in out)
    assert sum(r.disposition != "pass" for r in out) <= max(3, flags)


def test_show_review_lists_the_riskiest_first(tmp_path):
    recs = [audit_trace(_trace(run_id="calm", report="Cancelled O-7.")),
            audit_trace(_trace(run_id="shaky", report="I believe it should work, please verify.", error=True))]
    path = tmp_path / "a.jsonl"
    path.write_text("".join(json.dumps(r.model_dump(mode="json")) + "\n" for r in recs))
    from referee.audit.present.show import flag_lines

    lines = list(flag_lines(recs, {"pass", "review", "flag"}))
    flagged = [ln for ln in lines if "[flag]" in ln]
    rest = [ln for ln in lines if "[flag]" not in ln]
    assert lines == flagged + rest and all(" risk " in ln for ln in lines)
    res = CliRunner().invoke(cli, ["show", str(path), "shaky"])
    assert res.exit_code == 0 and "risk:" in res.output


def test_a_risk_model_with_no_weights_scores_its_intercept():
    assert score({n: 1.0 for n in FEATURES}, RiskModel(1, 0.0, {}, "0")) == 0.5
