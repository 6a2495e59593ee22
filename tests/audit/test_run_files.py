"""The audit run's files (referee/audit/run/): the evidence cache's schema, the output file, one bad trace."""

import json
import sqlite3

from referee.audit.claim.reader import RulesClaimReader
from referee.audit.decide.policyfile import load_policy
from referee.audit.extract.rules import RulesExtractor
from referee.audit.run.auditfile import cut_partial_line
from referee.audit.run.cache import EvidenceCache
from referee.audit.run.pipeline import Auditor, audit_files


def test_the_cache_keeps_its_version_1_column_names(tmp_path):
    EvidenceCache(tmp_path / "c.sqlite").close()
    cols = [r[1] for r in sqlite3.connect(tmp_path / "c.sqlite").execute("PRAGMA table_info(evidence)")]
    assert "run_index" in cols  # a cache written before today resumes


def test_one_trace_the_auditor_cannot_take_is_one_skipped_record(tmp_path):
    deep: dict = {}
    cur = deep
    for _ in range(700):
        cur["a"] = {}
        cur = cur["a"]
    src = tmp_path / "t.jsonl"
    src.write_text(json.dumps({"run_id": "deep", "task": "Delete N-77", "steps": [
        {"action": {"name": "x"}, "observation": {"data": deep}}], "report": "Done."}) + "\n" +
        json.dumps({"run_id": "ok", "task": "Delete N-77", "steps": [], "report": "Done."}) + "\n")
    auditor = Auditor(load_policy("causal"), RulesExtractor(), RulesClaimReader())
    stats = audit_files([src], auditor, tmp_path / "o.jsonl")
    assert stats.written == 1 and len(stats.errors) == 1 and "deep" in stats.errors[0]


def test_cutting_a_half_written_line_reads_the_file_from_its_end(tmp_path):
    p = tmp_path / "a.jsonl"
    p.write_bytes(b'{"a": 1}\n' * 50_000 + b'{"half')
    assert cut_partial_line(p) == len(b'{"half') and p.read_bytes().endswith(b'{"a": 1}\n')
    p.write_bytes(b"x" * 100_000)
    assert cut_partial_line(p) == 100_000 and p.read_bytes() == b""
