"""Synthetic audit records and gold labels, seeded, for benchmarks and tests (consistent under the causal policy)."""

from __future__ import annotations

import json
import random
from pathlib import Path

from referee.audit.records import FINDING_FIELDS

TASKS = {
    "create_edit": "Create a note titled {i}",
    "delete": "Delete the file report-{i}.txt",
    "configure": "Turn on wifi on device {i}",
    "send": "Send a message to contact {i}",
    "query": "What is the balance of account {i}?",
    "other": "Look around screen {i}",
}


def synthetic(n: int, seed: int = 0, *, groups: int = 4, votes: int = 1) -> tuple[list[dict], list[dict]]:
    """`n` audit records (as dicts) and their gold labels; the recorded disposition follows the causal policy.

    >>> recs, gold = synthetic(20, seed=1)
    >>> len(recs), len(gold), recs[0]["run_id"] == gold[0]["run_id"]
    (20, 20, True)
    """
    from referee.audit.decide.decision import decide
    from referee.audit.decide.policyfile import load_policy
    from referee.audit.records import Finding

    loaded = load_policy("causal")
    rng = random.Random(seed)
    classes = list(TASKS)
    records, gold = [], []
    for i in range(n):
        task = TASKS[classes[i % len(classes)]].format(i=i)
        completed = rng.random() < 0.55
        claim = rng.choices(["success", "failure_or_incomplete", "unclear"], [0.75, 0.2, 0.05])[0]
        evidence = []
        for _ in range(votes):
            ev = {}
            for f in FINDING_FIELDS:
                good = 0.85 if completed else 0.45
                v = rng.choices(["yes", "no", "unknown"], [good, (1 - good) * 0.7, (1 - good) * 0.3])[0]
                ev[f] = {"value": v, "support": [rng.randrange(10)] if v != "unknown" else []}
            evidence.append(ev)
        findings = [{k: Finding.model_validate(v) for k, v in ev.items()} for ev in evidence]
        d = decide(task, claim, findings, None, loaded.policy)  # as the auditor decides, with no report to ground
        rid = f"syn-{i:06d}"
        group = f"g{i % groups}"
        split = "dev" if (i // len(classes)) % 4 else "test"
        records.append({"record_version": 1, "run_id": rid, "task": task, "task_class": d.task_class,
                        "claim": {"label": claim, "votes": [claim], "backend": "rules"}, "evidence": evidence,
                        "run_states": list(d.run_states), "trace_state": d.trace_state, "disposition": d.disposition,
                        "policy": {"name": "causal", "sha256": loaded.sha256},
                        "backend": {"name": "synthetic", "runs": votes}, "view_sha256": f"{i:064x}",
                        "group": group, "split": split, "source": "synthetic"})
        gold.append({"run_id": rid, "completed": completed, "group": group, "split": split})
    return records, gold


def write_synthetic(directory: Path, n: int, seed: int = 0, **kw) -> tuple[Path, Path]:
    """Write `audit.jsonl` and `gold.jsonl` under `directory`; returns both paths."""
    from referee.core.fsutil import atomic_write_text

    recs, gold = synthetic(n, seed, **kw)
    directory = Path(directory)
    audit, labels = directory / "audit.jsonl", directory / "gold.jsonl"
    atomic_write_text(audit, "".join(json.dumps(r) + "\n" for r in recs))
    atomic_write_text(labels, "".join(json.dumps(g) + "\n" for g in gold))
    return audit, labels
