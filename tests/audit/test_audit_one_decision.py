"""One place decides: audit, replay and eval's policy replay agree; one vote rule; one set of metric
formulas; one bounded ordered map."""

import random
import threading
import time

import pytest

from referee.audit.decide.decision import decide
from referee.audit.decide.policyfile import load_policy
from referee.audit.decide.votes import vote
from referee.audit.present.replay import replay_record
from referee.audit.records import FINDING_FIELDS, AuditRecord, BackendRef, ClaimReading, Finding, Grounding, PolicyRef
from referee.core.concurrency import ordered_map
from referee.evaluation.compare import replay_disposition
from referee.evaluation.metrics import Confusion, rates

TASKS = ["Delete note N42", "Send the report to ana@example.org", "What is the total of order 5512?",
         "Create a ticket for the broken badge reader", "Turn on dark mode", "Tell me a joke"]


def random_record(rng: random.Random) -> AuditRecord:
    runs = []
    for _ in range(rng.choice([1, 3, 4, 5])):
        runs.append({f: Finding(value=rng.choice(["yes", "no", "unknown"]),
                                      support=rng.choice([[], [0], [1, 2]])) for f in FINDING_FIELDS + ("details",)})
    atoms = rng.choice([[], ["$9"], ["$9", "X-12"]])
    g = Grounding(value=rng.choice(["yes", "no", "unknown"]), atoms=atoms,
                  ungrounded=atoms[: rng.randint(0, len(atoms))], observed=rng.random() < 0.7)
    claim = rng.choice(["success", "failure_or_incomplete", "unclear"])
    return AuditRecord(run_id=str(rng.random()), task=rng.choice(TASKS), task_class="other",
                       claim=ClaimReading(label=claim), evidence=runs, run_states=["unknown"] * len(runs),
                       trace_state="unknown", disposition="review", policy=PolicyRef(name="x", sha256="0"),
                       backend=BackendRef(name="rules"), view_sha256="v", grounding=g)


@pytest.mark.parametrize("policy", ["causal", "final-state", "low-load", "unanimous", "strict"])
def test_audit_replay_and_eval_decide_alike(policy):
    rng = random.Random(7)
    lp = load_policy(policy)
    for _ in range(300):
        rec = random_record(rng)
        d = decide(rec.task, rec.claim.label, rec.evidence, rec.grounding, lp.policy)
        assert replay_record(rec, lp).disposition == d.disposition == replay_disposition(rec, lp)


def test_one_vote_rule_a_tie_is_unknown_everywhere():
    from referee.evaluation import judges

    assert vote(["completed", "completed", "not_completed", "not_completed"], 2) == "unknown"
    assert judges.vote is vote  # the judges use the auditor's rule, not one of their own


def test_bootstrap_replicates_use_the_same_formulas_as_point_estimates():
    np = pytest.importorskip("numpy")
    from referee.evaluation.bootstrap import _rates_numpy

    rng = random.Random(3)
    cells = np.array([[rng.randint(0, 6) for _ in range(6)] for _ in range(400)])
    arrays = _rates_numpy(cells)
    for i, row in enumerate(cells):
        point = rates(Confusion.from_cells(row))
        for name, value in point.items():
            got = float(arrays[name][i])
            assert (value is None and got != got) or (value is not None and abs(value - got) < 1e-12), name


def test_ordered_map_keeps_order_and_bounds_what_is_in_flight():
    lock, live, peak = threading.Lock(), [0], [0]

    def work(x):
        with lock:
            live[0] += 1
            peak[0] = max(peak[0], live[0])
        time.sleep(0.002 * (x % 3))
        with lock:
            live[0] -= 1
        return x * x

    assert list(ordered_map(work, range(60), concurrency=4)) == [x * x for x in range(60)]
    assert 1 < peak[0] <= 4


def test_ordered_map_raises_the_workers_error_in_order():
    def boom(x):
        if x == 3:
            raise ValueError("three")
        return x

    got = []
    with pytest.raises(ValueError, match="three"):
        for y in ordered_map(boom, range(10), concurrency=3):
            got.append(y)
    assert got == [0, 1, 2]
