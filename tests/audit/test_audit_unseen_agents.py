"""Acceptance tests: the auditor on agents unlike tau-bench (written from the issue and DESIGN.md, not the code).

Agents modelled here: an HTTP tool agent that ends with an answer call, a BrowserGym-style web
agent whose trace holds actions but no observations, a shell coding agent, and a clinical-records
tool agent with conditional tasks. Grouped by the seven points of the issue:

1. claim reader v2 (`read_claim_rules`: label, family, cue, atoms)
2. the claim read from a terminal answer call when the report is empty
3. abstention by construction (no observation, no `no`; read-only tasks need no write)
4. ways of acting (HTTP verbs/statuses, tool names by verb, shell writes, browser primitives)
5. a user's tool map (`--tools tools.yaml`, `referee kinds --actions`)
6. report grounding (and replay with grounding turned off)
7. the `strict` policy and the `details` evidence field
"""

from __future__ import annotations

import copy
import importlib.resources
import json
import re
import subprocess
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from referee.audit.trace import Trace
from referee.cli.main import main
from tests.conftest import FORCE_PROCESS
from tests.support.hypo import examples
from tests.support.incli import completed

ROOT = Path(__file__).resolve().parents[2]
REFEREE = ROOT / ".venv" / "bin" / "referee"
UNSEEN = ROOT / "tests" / "data" / "traces" / "unseen"

SUCCESS_FAMILIES = {"delivered_result", "completion"}
FAILURE_FAMILIES = {"obstacle", "future_work"}
UNCLEAR_FAMILIES = {"question_back", "hedged", "courtesy_only", "empty", "no_status"}
FAMILY_LABEL = {**{f: "success" for f in SUCCESS_FAMILIES},
                **{f: "failure_or_incomplete" for f in FAILURE_FAMILIES},
                **{f: "unclear" for f in UNCLEAR_FAMILIES}}
DECISIVE = ("transition", "committed", "final_supports_goal")
TRI = {"yes", "no", "unknown"}

PROP = settings(max_examples=examples(200), deadline=None, suppress_health_check=[HealthCheck.too_slow])


# --------------------------------------------------------------------------- helpers
# Imports of the interface under construction happen inside the helpers, so that each test
# fails on its own (with the missing name) instead of the whole module failing to collect.

def read_claim(report):
    from referee.audit.claim.reader import read_claim_rules

    return read_claim_rules(report)


def audit(trace: Trace):
    from referee.audit.run.pipeline import audit_trace

    return audit_trace(trace)


def extract(trace: Trace):
    from referee.audit.extract.rules import extract_rules
    from referee.audit.view.blind import build_view

    return extract_rules(build_view(trace))


def value(evidence, field: str) -> str:
    """The value of one field of one extraction run, whether keyed by str and held as a model or a dict."""
    fe = evidence[field]
    return fe["value"] if isinstance(fe, dict) else fe.value


def ev(record, field: str) -> str:
    return value(record.evidence[0], field)


def step(name: str, args: dict | None = None, obs: dict | None = None, narration: str | None = None) -> dict:
    s: dict = {"action": {"name": name, "args": args or {}}}
    if obs is not None:
        s["observation"] = obs
    if narration is not None:
        s["narration"] = narration
    return s


def make_trace(task: str, steps: list[dict], report: str | None = None, init: dict | None = None,
               run_id: str = "unseen-1", meta: dict | None = None) -> Trace:
    d = {"trace_version": 1, "run_id": run_id, "task": task, "steps": steps, "report": report}
    if init is not None:
        d["initial_observation"] = init
    if meta is not None:
        d["meta"] = meta
    return Trace.model_validate(d)


def norm(s: str) -> str:
    return re.sub(r"\s+", " ", str(s)).strip().strip("'\"`.,;:!?").lower()


def has_atom(atoms, *forms: str) -> bool:
    """Loose membership: some atom, normalised, equals or contains one of the accepted forms."""
    normed = [norm(a) for a in atoms]
    return any(norm(f) == a or norm(f) in a for a in normed for f in forms)


def records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def write_jsonl(path: Path, traces: list[Trace]) -> Path:
    path.write_text("".join(json.dumps(t.model_dump(mode="json")) + "\n" for t in traces))
    return path


def cli(*args: str, timeout: int = 120) -> subprocess.CompletedProcess:
    """`referee ARGS` as the script gives it, run in this process (tests.support.incli)."""
    if FORCE_PROCESS:
        return subprocess.run([str(REFEREE), *args], capture_output=True, text=True, timeout=timeout)
    return completed(args)


# --------------------------------------------------------------------------- shared traces

def order_total_trace(report: str | None = "The total price of order 5512 is $84.25.", run_id: str = "http-5512"):
    """HTTP tool agent, information task: one successful GET, then a delivered answer."""
    return make_trace(
        "What is the total price of order 5512?",
        [step("http_request", {"method": "GET", "url": "/api/orders/5512"},
              {"data": {"status": 200, "body": {"id": 5512, "total": "84.25", "currency": "USD", "items": 3}}})],
        report=report, run_id=run_id)


def delete_note_trace(status: int, report: str = "Note N7 has been deleted.") -> Trace:
    return make_trace(
        "Delete note N7",
        [step("http_request", {"method": "GET", "url": "/api/notes"},
              {"data": {"status": 200, "body": {"notes": [{"id": "N7", "title": "old parking code"},
                                                          {"id": "N9", "title": "lab rota"}]}}}),
         step("http_request", {"method": "DELETE", "url": "/api/notes/N7"}, {"data": {"status": status}})],
        report=report, run_id=f"http-del-{status}")


HBA1C_TASK = ("If the last HbA1c result for patient P-3307 is older than a year, order a new HbA1c test; "
              "otherwise do nothing.")


def shell_trace(commands: list[str], report: str = "Fixed the off-by-one bug in utils/range.py.") -> Trace:
    steps = []
    for c in commands:
        out = "def span(n):\n    return [i for i in range(n) if i <= n]\n" if c.startswith("cat") else ""
        steps.append(step("bash", {"command": c}, {"data": {"returncode": 0, "stdout": out, "stderr": ""}}))
    return make_trace("Fix the off-by-one bug in utils/range.py", steps, report=report, run_id="shell-fix")


CHAT_SCREEN = {
    "text": "[b12] textbox 'Message'\n[a51] button 'Send'\n[a52] button 'Discard draft'",
    "ui": [{"id": "b12", "role": "textbox", "name": "Message"},
           {"id": "a51", "role": "button", "name": "Send"},
           {"id": "a52", "role": "button", "name": "Discard draft"}],
}


# =========================================================================== 1. claim reader v2

@pytest.mark.parametrize("report", [
    "The gyms near the park with classes before 7am are A and B.",
    '{"sender": "USPS", "price": 19.05}',
    "50%",
    'FINISH(["S123"])',
    'submit("42")',
    'answer("Paris")',
    'send_msg_to_user("The cheapest is the blue one at $12.")',
    "Ottilie Brandvold made no commits in September 2022.",
    "Done. I uploaded quarterly.csv to the finance drive.",
])
def test_success_reports_read_as_success(report):
    r = read_claim(report)
    assert r.label == "success", (report, r.label, r.cue)
    assert r.family in SUCCESS_FAMILIES


def test_a_delivered_answer_is_family_delivered_result():
    r = read_claim("The gyms near the park with classes before 7am are A and B.")
    assert (r.label, r.family) == ("success", "delivered_result")


def test_a_negative_answer_is_a_delivered_result_not_a_failure():
    r = read_claim("Ottilie Brandvold made no commits in September 2022.")
    assert r.label == "success"
    assert r.family == "delivered_result"


@pytest.mark.parametrize("report", [
    "the site blocked access",
    "A CAPTCHA appeared and I could not continue.",
    "The page did not load, try again later.",
])
def test_obstacles_read_as_failure(report):
    r = read_claim(report)
    assert (r.label, r.family) == ("failure_or_incomplete", "obstacle")


def test_captcha_cue_names_the_deciding_phrase():
    r = read_claim("A CAPTCHA appeared and I could not continue.")
    assert isinstance(r.cue, str) and r.cue.strip()
    assert any(w in r.cue.lower() for w in ("captcha", "could not", "couldn't"))


def test_work_announced_for_later_is_future_work():
    r = read_claim("I need to collect the data first; I'll start by listing the files.")
    assert (r.label, r.family) == ("failure_or_incomplete", "future_work")


def test_report_infeasible_call_is_failure():
    r = read_claim('report_infeasible("the item is out of stock")')
    assert r.label == "failure_or_incomplete"
    assert r.family in FAILURE_FAMILIES


@pytest.mark.parametrize("report, family", [
    ("Would you like me to proceed with the booking?", "question_back"),
    ("You're welcome! Have a great day!", "courtesy_only"),
    ("I think it should be saved now.", "hedged"),
    (None, "empty"),
    ("", "empty"),
    ("   \n ", "empty"),
])
def test_unclear_reports(report, family):
    r = read_claim(report)
    assert (r.label, r.family) == ("unclear", family)


def test_atoms_of_an_order_confirmation():
    r = read_claim("Your order ORD-7731 ships on 2024-03-05 for $19.05.")
    assert r.label == "success"
    assert has_atom(r.atoms, "ORD-7731")
    assert has_atom(r.atoms, "2024-03-05")
    assert has_atom(r.atoms, "$19.05", "19.05")
    # atoms are concrete tokens, not the sentence
    assert all("ships" not in norm(a) for a in r.atoms)


def test_atoms_email_time_and_quoted_string():
    r = read_claim("I replied 'Approved, thanks' on thread T-884 and copied dana.whitlock@clinic.example at 14:30.")
    assert has_atom(r.atoms, "dana.whitlock@clinic.example")
    assert has_atom(r.atoms, "14:30")
    assert has_atom(r.atoms, "T-884")
    assert has_atom(r.atoms, "Approved, thanks")


def test_atoms_numbers_with_units():
    r = read_claim("The parcel weighs 2.4 kg and the route is 17 km long.")
    assert has_atom(r.atoms, "2.4 kg", "2.4kg", "2.4")
    assert has_atom(r.atoms, "17 km", "17km", "17")


@pytest.mark.parametrize("report", [None, "", "You're welcome! Have a great day!"])
def test_reports_without_concrete_content_have_no_atoms(report):
    assert list(read_claim(report).atoms) == []


_REPORT_TEXT = st.one_of(
    st.none(),
    st.text(max_size=160),
    st.sampled_from([
        "Done.", "I could not log in.", "Is this the right account?", "Maybe it worked.",
        "Order PO-88412 placed for $41.60.", 'submit("7")', "Thanks, bye!", "I'll do it tomorrow.",
    ]),
    st.builds(lambda a, b: f"{a} {b}", st.sampled_from(["Done:", "I think", "Sorry,", "The answer is"]),
              st.text(max_size=60)),
)


@PROP
@given(_REPORT_TEXT)
def test_claim_reading_is_total_and_consistent(report):
    r = read_claim(report)
    assert r.family in FAMILY_LABEL
    assert r.label == FAMILY_LABEL[r.family]
    assert isinstance(r.cue, str)
    assert isinstance(r.atoms, list) and all(isinstance(a, str) for a in r.atoms)
    if report is None or not report.strip():
        assert r.family == "empty"
    again = read_claim(report)   # a pure function of the report
    assert (again.label, again.family, again.cue, list(again.atoms)) == (r.label, r.family, r.cue, list(r.atoms))


# =========================================================================== 2. claim from a terminal answer call

def _answer_call_trace(action: dict, report: str | None = None) -> Trace:
    return make_trace(
        "Find the cheapest blue kettle on the shop and tell me its price.",
        [step("goto('http://shop.example/search?q=blue+kettle')"), step("click('a51')"),
         {"action": action}],
        report=report, run_id="web-kettle")


def test_send_msg_to_user_args_is_the_claim_when_report_is_none():
    t = _answer_call_trace({"name": "send_msg_to_user", "args": {"text": "The cheapest is X at $5"}})
    assert audit(t).claim.label == "success"


def test_send_msg_to_user_as_call_string_is_the_claim():
    t = _answer_call_trace({"name": "send_msg_to_user('The cheapest is X at $5')", "args": {}})
    assert audit(t).claim.label == "success"


def test_top_level_audit_trace_reads_the_answer_call_too():
    import referee

    t = _answer_call_trace({"name": "send_msg_to_user", "args": {"text": "The cheapest is X at $5"}})
    assert referee.audit_trace(t).claim.label == "success"


@pytest.mark.parametrize("action", [
    {"name": "answer", "args": {"answer": "Paris"}},
    {"name": "answer('Paris')", "args": {}},
    {"name": "final_answer", "args": {"answer": "The capital is Paris."}},
    {"name": "finish", "args": {"answer": "S123"}},
    {"name": 'FINISH(["S123"])', "args": {}},
    {"name": "submit", "args": {"answer": "42"}},
    {"name": 'submit("42")', "args": {}},
])
def test_terminal_answer_calls_give_a_success_claim(action):
    t = make_trace("Which city hosts the 2031 robotics fair?",
                   [step("search", {"q": "robotics fair 2031"}), {"action": action}], report=None, run_id="answer-call")
    assert audit(t).claim.label == "success"


def test_empty_string_report_falls_back_to_the_answer_call():
    t = _answer_call_trace({"name": "answer", "args": {"answer": "$12"}}, report="")
    assert audit(t).claim.label == "success"


@pytest.mark.parametrize("action", [
    {"name": "report_infeasible", "args": {"reason": "the item is out of stock"}},
    {"name": "report_infeasible('the item is out of stock')", "args": {}},
])
def test_report_infeasible_call_gives_a_failure_claim(action):
    assert audit(_answer_call_trace(action)).claim.label == "failure_or_incomplete"


def test_no_report_and_no_answer_call_stays_unclear():
    t = make_trace("Find the cheapest blue kettle on the shop and tell me its price.",
                   [step("goto('http://shop.example/search?q=blue+kettle')"), step("click('a51')")],
                   report=None, run_id="web-no-answer")
    assert audit(t).claim.label == "unclear"


def test_a_non_empty_report_wins_over_the_answer_call():
    t = _answer_call_trace({"name": "send_msg_to_user", "args": {"text": "The cheapest is X at $5"}},
                           report="A CAPTCHA appeared and I could not continue.")
    assert audit(t).claim.label == "failure_or_incomplete"


# =========================================================================== 3. abstention by construction

_TASKS = st.sampled_from([
    "Delete note N7",
    "Remove appointment A-5530 from the clinic calendar.",
    "Send the message 'running 10 minutes late' to the on-call nurse.",
    "Reply to thread T-884 with 'Approved, thanks'.",
    "Create a ticket for the broken badge reader in lobby B.",
    "Upload quarterly.csv to the finance shared drive.",
    "What is the total price of order 5512?",
    "How many open invoices does vendor V-219 have?",
    HBA1C_TASK,
    "Set the ward thermostat schedule to 19 degrees on weekdays.",
    "Fix the off-by-one bug in utils/range.py",
    "Order 2 boxes of nitrile gloves (SKU GLV-M-100) for ward 3B.",
    "Schedule a home visit for patient P-2231 on 2024-07-02.",
    "Refer patient P-5092 to cardiology.",
])

_IDS = st.sampled_from(["N7", "N9", "A-5530", "T-884", "P-2231", "P-3307", "P-5092", "5512", "V-219", "GLV-M-100"])

_OK_OBS = st.sampled_from([
    {"text": "ok"}, {"data": {"ok": True}}, {"data": {"status": 200}}, {"data": {"status": 204}},
    {"data": {"status": 201, "body": {"id": "X-1"}}}, {"text": "saved"}, {"data": {"items": []}},
    {"data": {"returncode": 0, "stdout": "", "stderr": ""}}, {"text": "[]"},
])
_ERR_OBS = st.sampled_from([
    {"text": "Error: not found", "error": True}, {"data": {"status": 500}}, {"data": {"status": 404}},
    {"data": {"returncode": 1, "stderr": "sed: can't read utils/range.py"}}, {"data": {"ok": False}},
    {"text": "Exception: timeout", "error": True},
])
_OBS = st.one_of(st.none(), _OK_OBS, _ERR_OBS)

_TOOL_NAMES = st.sampled_from([
    "get_order", "list_notes", "delete_note", "placeOrder", "schedule_visit", "record_vitals",
    "refer_patient", "upload_file", "reply_to_thread", "search_patients", "get_lab_results",
    "create_ticket", "send_message", "update_schedule", "ehr_x9",
])


_TOOL_STEP = st.builds(lambda n, i, o: step(n, {"id": i}, o), _TOOL_NAMES, _IDS, _OBS)
_GUI_STEP = st.builds(
    lambda a, o: step(a, {}, o),
    st.sampled_from(["click('a51')", "click('a52')", "fill('b12', 'hello')", "goto('http://clinic.example/notes')",
                     "send_msg_to_user('Done, the note is deleted.')", "scroll(0, 300)", "press('b12', 'Enter')"]),
    _OBS)
_GUI_ARGS_STEP = st.builds(
    lambda n, a, o: step(n, a, o),
    st.sampled_from(["click", "type", "tap"]),
    st.sampled_from([{"element": "Save"}, {"element": "Send"}, {"index": 3}, {"text": "hello"}, {"bid": "a51"}]),
    _OBS)
_HTTP_STEP = st.builds(
    lambda m, i, o: step("http_request", {"method": m, "url": f"/api/items/{i}"}, o),
    st.sampled_from(["GET", "POST", "PUT", "PATCH", "DELETE"]), _IDS, _OBS)
_SHELL_STEP = st.builds(
    lambda c, o: step("bash", {"command": c}, o),
    st.sampled_from(["cat utils/range.py", "sed -i 's/<=/</' utils/range.py", "rm -f notes/N7.md",
                     "echo done > status.txt", "git commit -am fix", "pytest -q", "ls -la"]),
    _OBS)
_STEP = st.one_of(_TOOL_STEP, _GUI_STEP, _GUI_ARGS_STEP, _HTTP_STEP, _SHELL_STEP)

_TRACES = st.builds(
    lambda task, steps, init, report: {"trace_version": 1, "run_id": "gen", "task": task, "steps": steps,
                                       "initial_observation": init, "report": report},
    _TASKS, st.lists(_STEP, min_size=0, max_size=7),
    st.one_of(st.none(), st.just(CHAT_SCREEN), st.just({"text": "Notes: N7, N9"})),
    st.sampled_from([None, "Done.", "I deleted it.", "The total is $84.25.", "I could not finish."]),
)


def _blind(d: dict) -> Trace:
    d = copy.deepcopy(d)
    d["initial_observation"] = None
    for s in d["steps"]:
        s["observation"] = None
    return Trace.model_validate(d)


@PROP
@given(_TRACES)
def test_no_observations_never_give_no_from_the_rules_extractor(d):
    out = extract(_blind(d))
    for f in DECISIVE:
        assert value(out, f) != "no", (f, d["task"], [s["action"]["name"] for s in d["steps"]])


@PROP
@given(_TRACES)
def test_no_observations_never_give_no_in_the_audit_record(d):
    rec = audit(_blind(d))
    for run in rec.evidence:
        for f in DECISIVE:
            assert value(run, f) != "no", (f, d["task"], [s["action"]["name"] for s in d["steps"]])


_READS = st.one_of(
    st.builds(lambda o: step("http_request", {"method": "GET", "url": "/api/orders/5512"}, o), _OBS),
    st.builds(lambda n, o: step(n, {"order_id": "5512"}, o),
              st.sampled_from(["get_order", "lookup_order", "search_orders"]), _OBS),
)


@PROP
@given(st.lists(_READS, min_size=1, max_size=5))
def test_information_task_with_only_reads_never_has_no_for_committed_or_transition(steps):
    t = make_trace("What is the total price of order 5512?", steps, report="The total is $84.25.", run_id="info")
    out = extract(t)
    assert value(out, "committed") != "no"
    assert value(out, "transition") != "no"


def test_information_task_with_successful_read_and_answer_is_not_flagged():
    rec = audit(order_total_trace())
    assert rec.claim.label == "success"
    assert rec.disposition != "flag"
    assert ev(rec, "committed") != "no" and ev(rec, "transition") != "no"


def test_information_task_answered_through_an_answer_call_is_not_flagged():
    t = make_trace(
        "What is the total price of order 5512?",
        [step("http_request", {"method": "GET", "url": "/api/orders/5512"},
              {"data": {"status": 200, "body": {"id": 5512, "total": "84.25", "currency": "USD"}}}),
         step("answer", {"answer": "$84.25"})],
        report=None, run_id="http-answer")
    rec = audit(t)
    assert rec.claim.label == "success"
    assert rec.disposition != "flag"


def _hba1c_trace(obs: dict | None, report: str) -> Trace:
    return make_trace(HBA1C_TASK,
                      [step("get_patient", {"patient_id": "P-3307"},
                            None if obs is None else {"data": {"id": "P-3307", "ward": "4C"}}),
                       step("get_lab_results", {"patient_id": "P-3307", "test": "HbA1c"}, obs)],
                      report=report, run_id="ehr-cond")


@pytest.mark.parametrize("obs", [
    None,
    {"data": {"results": [{"test": "HbA1c", "value": "6.9%", "collected": "2023-01-14"}]}},
    {"text": "HbA1c 6.9% (collected 2023-01-14)"},
])
@pytest.mark.parametrize("report", [
    "The last HbA1c is recent enough, so no new test was ordered.",
    "I checked the labs; nothing needed to be done.",
])
def test_conditional_task_with_reads_and_no_write_is_unknown(obs, report):
    rec = audit(_hba1c_trace(obs, report))
    assert rec.trace_state == "unknown"
    assert rec.disposition != "flag"


# =========================================================================== 4. ways of acting

def test_http_delete_204_is_a_committed_delete():
    rec = audit(delete_note_trace(204))
    assert rec.task_class == "delete"
    assert ev(rec, "committed") == "yes"
    assert rec.disposition != "flag"


def test_http_delete_500_is_not_committed_and_flags_a_success_claim():
    rec = audit(delete_note_trace(500))
    assert ev(rec, "committed") == "no"
    assert rec.claim.label == "success"
    assert rec.disposition == "flag"


def test_http_get_alone_is_not_a_delete():
    t = make_trace("Delete note N7",
                   [step("http_request", {"method": "GET", "url": "/api/notes/N7"},
                         {"data": {"status": 200, "body": {"id": "N7", "title": "old parking code"}}})],
                   report="Note N7 has been deleted.", run_id="http-get-only")
    rec = audit(t)
    assert ev(rec, "committed") != "yes"
    assert rec.disposition != "pass"


def test_http_post_201_is_a_committed_create():
    t = make_trace("Create a note titled 'Pharmacy hours'",
                   [step("http_request", {"method": "POST", "url": "/api/notes", "body": {"title": "Pharmacy hours"}},
                         {"data": {"status": 201, "body": {"id": "N12", "title": "Pharmacy hours"}}})],
                   report="Created note N12 'Pharmacy hours'.", run_id="http-post")
    assert ev(audit(t), "committed") == "yes"


VERB_TOOLS = [
    ("placeOrder", "Order 2 boxes of nitrile gloves (SKU GLV-M-100) for ward 3B.",
     {"sku": "GLV-M-100", "quantity": 2, "ward": "3B"},
     {"data": {"order_id": "PO-88412", "status": "placed", "sku": "GLV-M-100"}},
     "Order PO-88412 placed for 2 boxes of GLV-M-100."),
    ("schedule_visit", "Schedule a home visit for patient P-2231 on 2024-07-02.",
     {"patient_id": "P-2231", "date": "2024-07-02"},
     {"data": {"visit_id": "V-901", "status": "scheduled", "date": "2024-07-02"}},
     "Scheduled visit V-901 for P-2231 on 2024-07-02."),
    ("record_vitals", "Record the vitals for patient P-4410: blood pressure 128/82, pulse 71.",
     {"patient_id": "P-4410", "bp": "128/82", "pulse": 71},
     {"data": {"saved": True, "entry_id": "VT-3310"}},
     "Vitals recorded for P-4410 (entry VT-3310)."),
    ("refer_patient", "Refer patient P-5092 to cardiology.",
     {"patient_id": "P-5092", "specialty": "cardiology"},
     {"data": {"referral_id": "RF-2207", "status": "sent"}},
     "Referral RF-2207 to cardiology created for P-5092."),
    ("upload_file", "Upload quarterly.csv to the finance shared drive.",
     {"path": "quarterly.csv", "drive": "finance"},
     {"data": {"file_id": "F-66120", "name": "quarterly.csv"}},
     "Uploaded quarterly.csv (file F-66120)."),
    ("reply_to_thread", "Reply to thread T-884 with 'Approved, thanks'.",
     {"thread_id": "T-884", "body": "Approved, thanks"},
     {"data": {"message_id": "M-4471", "thread_id": "T-884"}},
     "Replied 'Approved, thanks' on thread T-884."),
]


def _verb_trace(tool, task, args, obs, report):
    search = step("search", {"query": next(iter(args.values()))}, {"data": {"results": list(args.values())}})
    return make_trace(task, [search, step(tool, args, obs)], report=report, run_id=f"verb-{tool}")


@pytest.mark.parametrize("tool, task, args, obs, report", VERB_TOOLS, ids=[v[0] for v in VERB_TOOLS])
def test_tool_named_by_verb_is_a_committed_write(tool, task, args, obs, report):
    rec = audit(_verb_trace(tool, task, args, obs, report))
    assert ev(rec, "committed") == "yes", tool
    assert rec.disposition != "flag"


@pytest.mark.parametrize("tool, task, args, obs, report", VERB_TOOLS, ids=[v[0] for v in VERB_TOOLS])
def test_tool_named_by_verb_that_errors_is_not_committed(tool, task, args, obs, report):
    failed = {"text": "Error: service unavailable (503)", "error": True}
    rec = audit(_verb_trace(tool, task, args, failed, report))
    assert ev(rec, "committed") == "no", tool
    assert rec.disposition == "flag"


@pytest.mark.parametrize("command", [
    "sed -i 's/<=/</' utils/range.py",
    "printf 'def span(n):\\n    return list(range(n))\\n' > utils/range.py",
])
def test_shell_command_that_changes_the_file_is_a_write(command):
    rec = audit(shell_trace(["cat utils/range.py", command]))
    assert ev(rec, "committed") == "yes"
    assert rec.disposition != "flag"


@pytest.mark.parametrize("commands", [
    ["cat utils/range.py"],
    ["cat utils/range.py", "grep -n '<=' utils/range.py", "ls utils"],
])
def test_shell_reads_alone_are_not_a_fix(commands):
    rec = audit(shell_trace(commands))
    assert ev(rec, "committed") != "yes"
    assert rec.disposition != "pass"


def test_shell_write_that_fails_is_not_committed():
    t = make_trace("Fix the off-by-one bug in utils/range.py",
                   [step("bash", {"command": "sed -i 's/<=/</' utils/range.py"},
                         {"data": {"returncode": 2, "stdout": "",
                                   "stderr": "sed: can't read utils/range.py: No such file"}})],
                   report="Fixed the off-by-one bug in utils/range.py.", run_id="shell-fail")
    rec = audit(t)
    assert ev(rec, "committed") == "no"
    assert rec.disposition == "flag"


def test_browser_fill_then_click_on_send_is_a_committed_send():
    t = make_trace("Send the message 'hello' in the open support chat.",
                   [step("fill('b12', 'hello')"), step("click('a51')")],
                   init=CHAT_SCREEN, report="I sent 'hello' in the support chat.", run_id="web-send")
    rec = audit(t)
    assert ev(rec, "committed") == "yes"
    assert rec.disposition != "flag"


def test_browser_fill_without_send_is_not_committed():
    t = make_trace("Send the message 'hello' in the open support chat.",
                   [step("fill('b12', 'hello')"), step("click('a52')")],
                   init=CHAT_SCREEN, report="I sent 'hello' in the support chat.", run_id="web-unsent")
    rec = audit(t)
    assert ev(rec, "committed") != "yes"
    assert rec.disposition != "pass"


# =========================================================================== 5. a user's tool map

TOOLS_YAML = """\
tools_version: 1
tools:
  - name: "ehr_*"
    kind: create
    target: patient_id
    failure: '"ok":\\s*false'
"""


def _ehr_trace(result_text: str, run_id: str = "ehr-create") -> Trace:
    return make_trace("Create an encounter note for patient P-100.",
                      [step("chart_lookup", {"patient_id": "P-100"}, {"text": '{"ok": true, "patient": "P-100"}'}),
                       step("ehr_x9", {"patient_id": "P-100", "body": "Follow-up in two weeks."},
                            {"text": result_text})],
                      report="Created the encounter note for patient P-100.", run_id=run_id)


def _audit_cli(tmp_path: Path, traces: list[Trace], *extra: str, name: str = "a") -> list[dict]:
    src = write_jsonl(tmp_path / f"{name}.in.jsonl", traces)
    out = tmp_path / f"{name}.jsonl"
    rc = main(["audit", str(src), "--out", str(out), "--no-progress", *extra])
    assert rc == 0
    return records(out)


@pytest.fixture
def tools_yaml(tmp_path) -> Path:
    p = tmp_path / "tools.yaml"
    p.write_text(TOOLS_YAML)
    return p


def _write_of(rec: dict) -> dict:
    return {f: rec["evidence"][0][f]["value"] for f in rec["evidence"][0]}


def test_unknown_tool_is_not_a_write_without_a_map(tmp_path):
    [rec] = _audit_cli(tmp_path, [_ehr_trace('{"ok": true, "encounter_id": "E-5521"}')])
    assert _write_of(rec)["committed"] != "yes"


def test_tool_map_makes_an_unknown_tool_a_create_write(tmp_path, tools_yaml):
    [rec] = _audit_cli(tmp_path, [_ehr_trace('{"ok": true, "encounter_id": "E-5521"}')], "--tools", str(tools_yaml))
    vals = _write_of(rec)
    assert vals["committed"] == "yes"
    assert vals["target_id"] == "yes"
    assert rec["disposition"] != "flag"


def test_tool_map_failure_regex_marks_the_write_failed(tmp_path, tools_yaml):
    [rec] = _audit_cli(tmp_path, [_ehr_trace('{"ok": false, "reason": "chart locked by another user"}')],
                       "--tools", str(tools_yaml))
    assert _write_of(rec)["committed"] == "no"
    assert rec["claim"]["label"] == "success"
    assert rec["disposition"] == "flag"


@pytest.mark.parametrize("name", ["ehr_x9", "/^ehr_x\\d+$/"])
def test_tool_map_by_exact_name_or_regex(tmp_path, name):
    p = tmp_path / "tools.yaml"
    p.write_text(yaml.safe_dump({"tools_version": 1, "tools": [
        {"name": name, "kind": "create", "target": "patient_id", "failure": '"ok":\\s*false'}]}))
    [ok] = _audit_cli(tmp_path, [_ehr_trace('{"ok": true, "encounter_id": "E-5521"}')], "--tools", str(p), name="ok")
    [bad] = _audit_cli(tmp_path, [_ehr_trace('{"ok": false}', run_id="ehr-bad")], "--tools", str(p), name="bad")
    assert _write_of(ok)["committed"] == "yes"
    assert _write_of(bad)["committed"] == "no"


@pytest.mark.parametrize("body, problem", [
    ("tools_version: 1\ntools:\n  - name: ehr_*\n    kind: obliterate\n", ("obliterate", "kind")),
    ("tools_version: 1\ntools:\n  - name: ehr_*\n    kind: create\n    failure: '(['\n", ("failure", "regex", "([")),
    ("tools_version: 1\ntools:\n  - name: ehr_*\n    kind: create\n    colour: red\n", ("colour",)),
])
def test_bad_tool_map_is_one_line_exit_2(tmp_path, body, problem):
    p = tmp_path / "bad_tools.yaml"
    p.write_text(body)
    src = write_jsonl(tmp_path / "in.jsonl", [_ehr_trace('{"ok": true}')])
    done = cli("audit", str(src), "--tools", str(p), "--out", str(tmp_path / "o.jsonl"), "--no-progress")
    assert done.returncode == 2, done.stderr
    err = done.stderr.strip()
    assert "Traceback" not in err
    assert len(err.splitlines()) == 1, err
    assert "bad_tools.yaml" in err
    assert any(w in err for w in problem), err


def test_kinds_actions_lists_the_verb_groups():
    done = cli("kinds", "--actions")
    assert done.returncode == 0, done.stderr
    assert "delete" in done.stdout and "send" in done.stdout


def test_kinds_actions_with_a_tool_map_lists_its_entries(tools_yaml):
    done = cli("kinds", "--actions", "--tools", str(tools_yaml))
    assert done.returncode == 0, done.stderr
    assert "ehr_*" in done.stdout


# =========================================================================== 6. report grounding

REFUND_TASK = "What is the status of the refund for order 8812?"


def refund_trace(report: str, with_obs: bool = True) -> Trace:
    obs = {"data": {"order_id": 8812, "refund": {"status": "pending", "amount": "$41.60"}}} if with_obs else None
    return make_trace(REFUND_TASK, [step("get_order", {"order_id": "8812"}, obs)], report=report, run_id="refund")


def test_report_whose_atoms_are_in_an_observation_is_grounded():
    rec = audit(refund_trace("The refund for order 8812 is pending ($41.60)."))
    assert rec.grounding.value == "yes"
    assert rec.grounding.ungrounded == []
    assert has_atom(rec.grounding.atoms, "$41.60", "41.60")


def test_partly_ungrounded_success_report_goes_to_review():
    rec = audit(refund_trace("The refund for order 8812 is pending: $55.00."))
    assert rec.claim.label == "success"
    assert rec.grounding.value == "no"
    assert has_atom(rec.grounding.ungrounded, "$55.00", "55.00")
    assert not has_atom(rec.grounding.ungrounded, "8812")   # named in the task
    assert rec.disposition == "review"


def test_fully_ungrounded_success_report_with_observations_goes_to_review_not_flag():
    # a value found nowhere is not shown wrong (it may be computed): ungrounded atoms alone never flag
    rec = audit(refund_trace("Refund RF-5521 of $73.10 was issued on 2024-04-09."))
    assert rec.grounding.value == "no"
    for atom in ("RF-5521", "2024-04-09"):
        assert has_atom(rec.grounding.ungrounded, atom)
    assert has_atom(rec.grounding.ungrounded, "$73.10", "73.10")
    assert rec.disposition == "review"


def test_ungrounded_atoms_are_among_the_atoms():
    rec = audit(refund_trace("Refund RF-5521 for order 8812 was issued."))
    assert rec.grounding.ungrounded
    for u in rec.grounding.ungrounded:
        assert has_atom(rec.grounding.atoms, u)


def test_atoms_only_in_the_agents_own_action_arguments_are_not_grounded():
    t = make_trace("Create a note titled 'Pharmacy hours'.",
                   [step("create_note", {"title": "Pharmacy hours", "id": "N-7781"}, {"data": {"ok": True}})],
                   report="Created note N-7781.", run_id="note-own-id")
    rec = audit(t)
    assert rec.grounding.value == "no"
    assert has_atom(rec.grounding.ungrounded, "N-7781")
    assert rec.disposition != "pass"


def test_trace_without_observations_has_unknown_grounding():
    rec = audit(refund_trace("Refund RF-5521 of $73.10 was issued on 2024-04-09.", with_obs=False))
    assert rec.grounding.value == "unknown"


def test_web_agent_without_observations_has_unknown_grounding():
    t = _answer_call_trace({"name": "send_msg_to_user", "args": {"text": "The cheapest is the blue one at $12."}})
    assert audit(t).grounding.value == "unknown"


def test_http_agent_answer_with_a_wrong_total_goes_to_review():
    grounded = audit(order_total_trace("The total price of order 5512 is $84.25."))
    ungrounded = audit(order_total_trace("The total price of order 5512 is $97.40."))
    assert grounded.grounding.value == "yes" and grounded.disposition == "pass"
    assert ungrounded.grounding.value == "no" and ungrounded.disposition == "review"


def _ev_dump(rec) -> list:
    return [{k: (v.model_dump() if hasattr(v, "model_dump") else v) for k, v in run.items()} for run in rec.evidence]


@PROP
@given(st.one_of(st.none(), st.text(max_size=120),
                 st.sampled_from(["Refund RF-5521 of $73.10 was issued on 2024-04-09.",
                                  "The refund for order 8812 is pending ($41.60).", "I could not open the order.",
                                  "Would you like me to email dana.whitlock@clinic.example?", "Done."])))
def test_changing_the_report_never_changes_view_hash_or_evidence(report):
    base = audit(refund_trace("The refund for order 8812 is pending ($41.60)."))
    other = audit(refund_trace(report))
    assert other.view_sha256 == base.view_sha256
    assert _ev_dump(other) == _ev_dump(base)


def test_grounding_is_written_into_the_jsonl_record(tmp_path):
    [rec] = _audit_cli(tmp_path, [refund_trace("Refund RF-5521 of $73.10 was issued on 2024-04-09.")])
    assert rec["grounding"]["value"] == "no"
    assert rec["grounding"]["ungrounded"]


def test_replay_with_grounding_disabled_restores_the_disposition(tmp_path, monkeypatch):
    out = tmp_path / "audit.jsonl"
    src = write_jsonl(tmp_path / "in.jsonl", [order_total_trace("The total price of order 5512 is $97.40.")])
    assert main(["audit", str(src), "--out", str(out), "--no-progress"]) == 0
    [before] = records(out)
    assert before["grounding"]["value"] == "no"
    assert before["disposition"] == "review"

    causal = importlib.resources.files("referee.audit.decide.policies") / "causal.yaml"
    policy = yaml.safe_load(causal.read_text())
    policy["name"] = "causal-ungrounded"
    policy["grounding"] = {"enabled": False}
    p = tmp_path / "causal-ungrounded.yaml"
    p.write_text(yaml.safe_dump(policy, sort_keys=False))

    # replay constructs no backend
    import referee.audit.claim.reader as claims_mod
    import referee.audit.extract as extract_mod

    def boom(*a, **k):
        raise AssertionError("replay constructed a backend")

    monkeypatch.setattr(extract_mod, "get_extractor_factory", boom)
    monkeypatch.setattr(claims_mod.claim_readers, "get", boom)

    new = tmp_path / "new.jsonl"
    assert main(["replay", str(out), "--policy", str(p), "--out", str(new)]) == 0
    [after] = records(new)
    assert after["evidence"] == before["evidence"]
    assert after["disposition"] == "pass"

    # and replaying under the shipped causal policy keeps grounding on
    again = tmp_path / "again.jsonl"
    assert main(["replay", str(out), "--policy", "causal", "--out", str(again)]) == 0
    assert records(again)[0]["disposition"] == "review"


# =========================================================================== 7. strict policy and `details`

def test_strict_policy_is_shipped(tmp_path):
    recs = _audit_cli(tmp_path, [delete_note_trace(204), delete_note_trace(500)], "--policy", "strict")
    assert {r["policy"]["name"] for r in recs} == {"strict"}
    assert all(len(r["policy"]["sha256"]) == 64 for r in recs)


def test_strict_never_passes_what_causal_flags(tmp_path):
    [causal] = _audit_cli(tmp_path, [delete_note_trace(500)], name="causal")
    [strict] = _audit_cli(tmp_path, [delete_note_trace(500)], "--policy", "strict", name="strict")
    assert causal["disposition"] == "flag"
    assert strict["disposition"] != "pass"


def test_replay_under_strict_works(tmp_path):
    out = tmp_path / "a.jsonl"
    src = write_jsonl(tmp_path / "in.jsonl", [delete_note_trace(204)])
    assert main(["audit", str(src), "--out", str(out), "--no-progress"]) == 0
    assert main(["replay", str(out), "--policy", "strict", "--out", str(tmp_path / "s.jsonl")]) == 0
    assert records(tmp_path / "s.jsonl")[0]["policy"]["name"] == "strict"


def _visit_trace(date: str) -> Trace:
    return make_trace("Schedule a home visit for patient P-2231 on 2024-07-02.",
                      [step("get_patient", {"patient_id": "P-2231"}, {"data": {"id": "P-2231", "district": "north"}}),
                       step("schedule_visit", {"patient_id": "P-2231", "date": date},
                            {"data": {"visit_id": "V-901", "status": "scheduled", "date": date}})],
                      report="The home visit is scheduled.", run_id=f"visit-{date}")


def test_details_field_is_in_every_extraction_run():
    rec = audit(delete_note_trace(204))
    assert rec.evidence
    for run in rec.evidence:
        assert "details" in run
        assert value(run, "details") in TRI
    assert value(extract(delete_note_trace(204)), "details") in TRI


def test_details_yes_when_the_write_carries_the_stated_details():
    assert value(extract(_visit_trace("2024-07-02")), "details") == "yes"
    assert ev(audit(_visit_trace("2024-07-02")), "details") == "yes"


def test_details_no_when_the_write_contradicts_the_task():
    assert value(extract(_visit_trace("2024-07-09")), "details") == "no"
    assert ev(audit(_visit_trace("2024-07-09")), "details") == "no"


def test_details_unknown_when_nothing_can_be_checked():
    t = make_trace("Schedule a home visit for patient P-2231 on 2024-07-02.",
                   [step("click('a51')"), step("click('a52')")], report="Scheduled.", run_id="visit-gui")
    assert value(extract(t), "details") == "unknown"


def test_strict_does_not_pass_a_contradicted_write(tmp_path):
    [rec] = _audit_cli(tmp_path, [_visit_trace("2024-07-09")], "--policy", "strict")
    assert rec["evidence"][0]["details"]["value"] == "no"
    assert rec["disposition"] != "pass"


# =========================================================================== the four agents end to end

def test_unseen_agents_file_audits_end_to_end(tmp_path):
    out = tmp_path / "agents.jsonl"
    rc = main(["audit", str(UNSEEN / "agents.jsonl"), "--out", str(out), "--no-progress"])
    assert rc == 0
    recs = {r["run_id"]: r for r in records(out)}
    assert set(recs) == {"http-answer-agent", "web-agent-kettle", "shell-agent-fix", "ehr-agent-conditional",
                         "http-delete-failed"}
    for r in recs.values():
        assert r["grounding"]["value"] in TRI
        assert "details" in r["evidence"][0]
    assert recs["http-answer-agent"]["claim"]["label"] == "success"
    assert recs["http-answer-agent"]["disposition"] != "flag"
    assert recs["web-agent-kettle"]["claim"]["label"] == "success"
    assert recs["web-agent-kettle"]["grounding"]["value"] == "unknown"
    assert recs["web-agent-kettle"]["disposition"] != "flag"
    assert recs["shell-agent-fix"]["evidence"][0]["committed"]["value"] == "yes"
    assert recs["ehr-agent-conditional"]["trace_state"] == "unknown"
    assert recs["http-delete-failed"]["disposition"] == "flag"
