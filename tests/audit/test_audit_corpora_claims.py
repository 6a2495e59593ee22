"""The development corpora end to end: the claim reader against the blind labels (tests/data/claims),
and the done-when figures of the auditor on each corpus. Skipped where shared/ is absent."""

import json
import sys
from pathlib import Path

import pytest
from support.corpora import MINI_SWE, REPO, TAU, shared_dir

from referee.audit.claim.reader import read_claim_rules
from referee.audit.ingest.readers import read_traces
from referee.audit.run.pipeline import audit_trace, claim_text

sys.path.insert(0, str(REPO / "benchmarks" / "adapters"))
import who_and_when  # noqa: E402

CLAIMS = REPO / "tests" / "data" / "claims"
WHO = shared_dir() / "corpora" / "who-and-when"


def blind(stem: str) -> dict[str, str]:
    rows = [json.loads(line) for line in open(CLAIMS / f"{stem}.blind.jsonl")]
    return {row["run_id"]: row["claim"] for row in rows}


def traces(name: str):
    if name == "tau-bench":
        return [it.trace for it in read_traces(TAU, "tau-bench")]
    if name == "mini-swe-agent":
        return [it.trace for p in sorted(Path(MINI_SWE, "trajs").glob("*.traj.json")) for it in read_traces(p)]
    from referee.audit.trace import Trace
    return [Trace.model_validate(t) for t, _ in who_and_when.iter_corpus(WHO)]


def present(name: str) -> bool:
    return {"tau-bench": Path(TAU), "mini-swe-agent": Path(MINI_SWE), "who-and-when": WHO}[name].exists()


@pytest.mark.parametrize("name", ["tau-bench", "mini-swe-agent", "who-and-when"])
def test_claim_accuracy_against_blind_labels_is_at_least_090(name):
    if not present(name):
        pytest.skip("shared corpora not here")
    labels = blind(name)
    ts = traces(name)
    assert {t.run_id for t in ts} == set(labels)
    right = sum(read_claim_rules(claim_text(t)).label == labels[t.run_id] for t in ts)
    assert right / len(ts) >= 0.90, f"{name}: {right}/{len(ts)}"


def test_who_and_when_success_claims_are_blocked():
    if not present("who-and-when"):
        pytest.skip("shared corpora not here")
    recs = [audit_trace(t) for t in traces("who-and-when")]
    success = [r for r in recs if r.claim.label == "success"]
    blocked = [r for r in success if r.disposition != "pass"]
    assert len(success) > 50 and len(blocked) / len(success) >= 0.90


@pytest.mark.parametrize("name", ["tau-bench", "mini-swe-agent"])
def test_inspection_load_is_at_most_060(name):
    if not present(name):
        pytest.skip("shared corpora not here")
    recs = [audit_trace(t) for t in traces(name)]
    load = sum(r.disposition != "pass" for r in recs) / len(recs)
    assert load <= 0.60, f"{name}: load {load:.2f}"
