"""The rule-case table (tests/data/rule_cases.yaml): each case a task and trace, the value a field must take, and why.

One parametrized test runs every case through the whole offline auditor: the rules extractor (with the case's tool
map, if any), the rules claim reader and the causal policy.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from referee.audit.claim.reader import RulesClaimReader
from referee.audit.decide.policyfile import load_policy
from referee.audit.extract.rules import RulesExtractor, rules_extractor
from referee.audit.records import AuditRecord
from referee.audit.run.pipeline import Auditor
from referee.audit.trace import Trace

TABLE = Path(__file__).resolve().parents[1] / "data" / "rule_cases.yaml"
CASES: list[dict[str, Any]] = yaml.safe_load(TABLE.read_text(encoding="utf-8"))
KEYS = {"case", "why", "task", "steps", "report", "initial_observation", "tools", "expect", "expect_not", "note_has",
        "note_lacks", "support"}


def _field(rec: AuditRecord, field: str) -> Any:
    if field in rec.evidence[0]:
        return rec.evidence[0][field].value
    return {"task_class": lambda: rec.task_class, "disposition": lambda: rec.disposition,
            "grounding": lambda: rec.grounding.value if rec.grounding else None,
            "claim": lambda: rec.claim.label, "claim_atoms": lambda: rec.claim.atoms}[field]()


def _audit(case: dict[str, Any], tmp_path: Path) -> AuditRecord:
    extractor = RulesExtractor()
    if "tools" in case:
        (tmp_path / "tools.yaml").write_text(case["tools"], encoding="utf-8")
        extractor = rules_extractor(tools=tmp_path / "tools.yaml")
    trace = Trace(run_id="r", task=case["task"], steps=case.get("steps", []), report=case.get("report", "Done."),
                  initial_observation=case.get("initial_observation"))
    return Auditor(load_policy("causal"), extractor, RulesClaimReader()).audit(trace)


def test_every_case_says_what_it_pins_and_why_and_expects_something():
    names = [c["case"] for c in CASES]
    assert len(names) == len(set(names))
    for c in CASES:
        assert set(c) <= KEYS and c.get("why") and c.get("task"), c
        assert any(c.get(k) for k in ("expect", "expect_not", "note_has", "note_lacks", "support")), c


@pytest.mark.parametrize("case", CASES, ids=[c["case"] for c in CASES])
def test_a_rule_case_gives_the_value_the_table_expects(case, tmp_path):
    rec = _audit(case, tmp_path)
    got = {f: _field(rec, f) for f in [*case.get("expect", {}), *case.get("expect_not", {})]}
    why = f"{case['why']}; evidence: { {k: (v.value, v.note) for k, v in rec.evidence[0].items()} }"
    for field, want in case.get("expect", {}).items():
        assert got[field] == want, (field, got[field], why)
    for field, unwanted in case.get("expect_not", {}).items():
        assert got[field] != unwanted, (field, got[field], why)
    for field, text in case.get("note_has", {}).items():
        assert text in (rec.evidence[0][field].note or ""), (field, rec.evidence[0][field], why)
    for field, text in case.get("note_lacks", {}).items():
        assert text not in (rec.evidence[0][field].note or ""), (field, rec.evidence[0][field], why)
    for field, support in case.get("support", {}).items():
        assert rec.evidence[0][field].support == support, (field, rec.evidence[0][field], why)
