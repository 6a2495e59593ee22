"""Defects an independent review of the auditor found, each pinned by the input that showed it."""

import json
import sqlite3

from referee.audit.extract.acting import ToolCatalog
from referee.audit.extract.rules import extract_rules
from referee.audit.extract.toolmap import load_tool_map
from referee.audit.ingest.readers import read_traces, sniff_format
from referee.audit.run.auditfile import cut_partial_line
from referee.audit.run.cache import EvidenceCache
from referee.audit.run.pipeline import Auditor, audit_files, audit_trace
from referee.audit.trace import Trace
from referee.audit.view.atoms import found_in
from referee.audit.view.blind import build_view


def test_the_cache_keeps_its_version_1_column_names(tmp_path):
    EvidenceCache(tmp_path / "c.sqlite").close()
    cols = [r[1] for r in sqlite3.connect(tmp_path / "c.sqlite").execute("PRAGMA table_info(evidence)")]
    assert "run_index" in cols  # a cache written before today resumes


def test_what_a_terminal_answer_call_says_stays_out_of_the_view():
    def trace(text):
        return Trace(run_id="r", task="Cancel XEHM4B", steps=[
            {"action": {"name": "cancel", "args": {"id": "XEHM4B"}}, "observation": {"text": "ok"}},
            {"action": {"name": "send_msg_to_user", "args": {"content": text}}}])

    yes, no = trace("It is cancelled and refunded."), trace("I could not cancel XEHM4B.")
    assert build_view(yes).sha256 == build_view(no).sha256
    assert build_view(yes).as_json()["steps"][1]["action"] == {"name": "send_msg_to_user", "args": {}}
    assert (audit_trace(yes).claim.label, audit_trace(no).claim.label) == ("success", "failure_or_incomplete")


def test_numbers_are_found_whole():
    assert not found_in("12", '{"id": "T-1203"}') and not found_in("2 bags", "12 bags")
    assert found_in("12", '{"count": 12}') and found_in("$41.60", '{"amount": "41.60"}')


def test_a_tool_map_target_the_task_names_is_the_right_target(tmp_path):
    (tmp_path / "tools.yaml").write_text(
        "tools_version: 1\ntools:\n  - {name: 'ehr_*', kind: edit, target: patient_id}\n")
    catalog, _ = load_tool_map(tmp_path / "tools.yaml")
    t = Trace(run_id="r", task="Add penicillin to the allergy list of patient 48213.", steps=[
        {"action": {"name": "ehr_allergy_add", "args": {"patient_id": 48213}},
         "observation": {"text": '{"ok": true}'}}])
    assert extract_rules(build_view(t), catalog)["target_id"].value == "yes"
    assert extract_rules(build_view(t), ToolCatalog())["target_id"].value == "unknown"  # no map: no target named


def test_a_write_of_another_kind_without_a_result_is_no_evidence_against():
    t = Trace(run_id="r", task="Delete note N42", steps=[{"action": {"name": "send_email", "args": {"to": "a@b.c"}}}])
    assert extract_rules(build_view(t))["action"].value == "unknown"


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
    from referee.audit.claim.reader import RulesClaimReader
    from referee.audit.decide.policyfile import load_policy
    from referee.audit.extract.rules import RulesExtractor

    auditor = Auditor(load_policy("causal"), RulesExtractor(), RulesClaimReader())
    stats = audit_files([src], auditor, tmp_path / "o.jsonl")
    assert stats.written == 1 and len(stats.errors) == 1 and "deep" in stats.errors[0]


def test_a_record_of_an_odd_shape_is_one_error_and_the_file_reads_on(tmp_path):
    src = tmp_path / "chat.jsonl"
    src.write_text(json.dumps({"messages": [{"role": "user", "content": "do x"},
                                            {"role": "assistant", "tool_calls": ["x"]}]}) + "\n" +
                   json.dumps({"messages": [{"role": "user", "content": "do x"},
                                            {"role": "assistant", "content": "Done."}]}) + "\n")
    items = list(read_traces(src, "openai-chat"))
    # the odd record is one error, the next run is read, and (issue 33) the file's note that its only run has no
    # action although the file holds a tool call comes last, as one more bad record
    assert [i.error is None for i in items] == [False, True, False]
    assert "unexpected shape" in str(items[0].error)
    assert "looks misread" in str(items[2].error) and "1 of 2 records refused" in str(items[2].error)


def test_a_broken_first_record_does_not_decide_the_format(tmp_path):
    good = {"task_id": 1, "trial": 0, "reward": 1.0, "traj": [{"role": "user", "content": "hi"}],
            "info": {"task": {"instruction": "Say hi"}}}
    src = tmp_path / "tau.jsonl"
    src.write_text('{"task_id": 0, "traj": [\n' + json.dumps(good) + "\n")
    assert sniff_format(src) == "tau-bench"


def test_cutting_a_half_written_line_reads_the_file_from_its_end(tmp_path):
    p = tmp_path / "a.jsonl"
    p.write_bytes(b'{"a": 1}\n' * 50_000 + b'{"half')
    assert cut_partial_line(p) == len(b'{"half') and p.read_bytes().endswith(b'{"a": 1}\n')
    p.write_bytes(b"x" * 100_000)
    assert cut_partial_line(p) == 100_000 and p.read_bytes() == b""
