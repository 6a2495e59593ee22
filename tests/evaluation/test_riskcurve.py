"""Blocked recall against load for the risk ordering and the gate (known answers on small sets), `referee eval`'s
risk line and plot, and tools/fit_risk.py: it fits, and its leave-one-corpus-out weights never saw the corpus
they score."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from referee.audit.decide.risk import FEATURES
from referee.cli.main import cli
from referee.evaluation.bootstrap import BootstrapSpec
from referee.evaluation.equal_load import difference
from referee.evaluation.riskcurve import RiskItem, area_between, compare_at, curves, joint_at_load

REPO = Path(__file__).resolve().parents[2]


def _fit_risk():
    spec = importlib.util.spec_from_file_location("fit_risk", REPO / "tools" / "fit_risk.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules["fit_risk"] = mod  # its dataclasses look their module up while being made
    spec.loader.exec_module(mod)
    return mod


P, N = RiskItem(True, True, 0.9, "pass"), RiskItem(False, True, 0.1, "pass")


@pytest.mark.parametrize("items, risk, gate, area", [
    # a perfect ordering: the one positive first; the gate finds it half the time at one inspection of two claims
    ([P, N], [0.0, 1.0, 1.0], [0.0, 0.5, 1.0], 0.25),
    # the worst ordering: the positive last
    ([RiskItem(True, True, 0.1, "pass"), RiskItem(False, True, 0.9, "pass")], [0.0, 0.0, 1.0], [0.0, 0.5, 1.0],
     -0.25),
    # a flag is inspected first whatever its risk
    ([RiskItem(False, True, 0.9, "pass"), RiskItem(True, True, 0.0, "flag")], [0.0, 1.0, 1.0], [0.0, 0.5, 1.0],
     0.25),
])
def test_curves_and_area_have_the_known_answers(items, risk, gate, area):
    loads, r, g = curves(items)
    assert loads == [0.0, 0.5, 1.0] and r == risk and g == gate
    assert area_between(items) == pytest.approx(area)


def test_no_positives_means_no_curve():
    assert curves([N, N]) == ([], [], []) and area_between([N]) is None


def test_the_difference_at_a_load_is_the_capped_ordering_against_the_gate():
    items = [P, N, RiskItem(False, False, 0.5, "review"), RiskItem(False, False, 0.2, "pass")]
    joint = joint_at_load(items, 0.25)   # one inspection: the positive
    assert difference(joint) == pytest.approx(1.0 - 0.5)
    c = compare_at(items, 0.25, None)
    assert c.difference == pytest.approx(0.5) and c.area_ci.lo is None


def test_intervals_are_seeded_and_cover_the_point():
    items = [RiskItem(i % 5 == 0, i % 2 == 0 or i % 5 == 0, 0.9 if i % 5 == 0 else 0.3, "pass") for i in range(60)]
    a, b = compare_at(items, 0.2, BootstrapSpec(resamples=200, seed=3)), compare_at(items, 0.2,
                                                                                  BootstrapSpec(resamples=200, seed=3))
    assert a == b and a.area_ci.lo <= a.area <= a.area_ci.hi and a.difference_ci.lo <= a.difference


def _audit_and_gold(tmp_path: Path, name: str, n: int, seed: int) -> None:
    """A tiny corpus: audit records from the real pipeline, gold where errors mark the runs not done."""
    from referee.audit.run.pipeline import audit_trace
    from referee.audit.trace import Trace

    rng = np.random.default_rng(seed)
    with open(tmp_path / f"{name}.audit.jsonl", "w") as a, open(tmp_path / f"{name}.gold+claims.jsonl", "w") as g:
        for i in range(n):
            bad = bool(rng.random() < 0.4)
            obs = {"text": "Error: refused", "error": True} if bad else {"text": "order O-1 cancelled"}
            t = Trace(run_id=f"{name}-{i}", task="Cancel order O-1", report="Done, O-1 cancelled.",
                      steps=[{"action": {"name": "cancel_order", "args": {"id": "O-1"}}, "observation": obs}])
            a.write(json.dumps(audit_trace(t).model_dump(mode="json")) + "\n")
            g.write(json.dumps({"run_id": t.run_id, "completed": not bad, "claim": "success"}) + "\n")


def test_the_fit_script_learns_a_raising_weight_on_a_tiny_synthetic_set(tmp_path):
    fr = _fit_risk()
    x = np.array([[0.0] * len(FEATURES)] * 40)
    err = list(FEATURES).index("error_last")
    x[:20, err] = 1.0
    y = np.array([1.0] * 16 + [0.0] * 4 + [1.0] * 4 + [0.0] * 16)
    b, w = fr.fit(x, y, l2=0.001)
    assert w[err] > 1.0 and all(v >= 0 for n, v in zip(FEATURES, w) if n in fr.RAISING)


def test_leave_one_corpus_out_never_scores_a_corpus_with_weights_fitted_on_it(tmp_path, monkeypatch):
    fr = _fit_risk()
    for k, name in enumerate(("alpha", "beta", "gamma")):
        _audit_and_gold(tmp_path, name, 12, k)
    corpora = [fr.load_corpus(tmp_path, n) for n in ("alpha", "beta", "gamma")]
    seen: list[int] = []
    real_fit = fr.fit

    def spy(x, y, l2=0.01, **kw):
        seen.append(len(y))
        return real_fit(x, y, l2, **kw)

    monkeypatch.setattr(fr, "fit", spy)
    rows = fr.loco(corpora, 0.01, None)
    assert [r["corpus"] for r in rows] == ["alpha", "beta", "gamma"]
    for r, n_fit in zip(rows, seen):
        assert r["corpus"] not in r["fitted_on"] and len(r["fitted_on"]) == 2
        assert n_fit == sum(c.y.size for c in corpora if c.name != r["corpus"])
    out = tmp_path / "risk.yaml"
    assert fr.main([str(tmp_path), "--resamples", "0", "--write", str(out)]) == 0
    from referee.audit.decide.risk import parse_risk

    assert parse_risk(out.read_bytes()).weights.keys() == FEATURES.keys()


def test_eval_reports_the_risk_ordering_against_the_gate_and_draws_both_curves(tmp_path):
    pytest.importorskip("matplotlib")
    _audit_and_gold(tmp_path, "c", 16, 7)
    res = CliRunner().invoke(cli, ["eval", str(tmp_path / "c.audit.jsonl"), "--gold",
                                   str(tmp_path / "c.gold+claims.jsonl"), "--json", "--resamples", "50",
                                   "--plot", str(tmp_path / "t.png")])
    assert res.exit_code == 0, res.output
    body = json.loads(res.stdout[res.stdout.index("{"):])
    rc = body["risk_curve"]
    assert rc["loads"][0] == 0.0 and rc["loads"][-1] == 1.0 and len(rc["risk_blocked_recall"]) == 17
    assert rc["area"] is not None and rc["difference_lo"] is not None
    assert (tmp_path / "t.risk.png").stat().st_size > 0
