"""The run directory's schema (referee.rundir.schema): every capture kind's record round-trips through its
model, a failed capture is written one way, claims.json is versioned, and a run directory written
before records had a version still grades exactly as it did."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from referee.audit.ingest.readers import read_traces
from referee.audit.ingest.readers.referee_run import allowing_unsigned
from referee.errors import EvidenceError
from referee.grader import grade
from referee.plan.captures import BUILTIN_SPECS, capture_specs
from referee.report.outputs import grade_to_disk
from referee.rundir.schema import (
    RECORD_MODELS,
    AriaRecord,
    CaptureFailure,
    Claim,
    CommandRecord,
    DdbRecord,
    FileRecord,
    HttpRecord,
    SqlRecord,
    dump_record,
    parse_claims,
    parse_record,
    read_claims,
    sniff_record,
)
from referee.runner.captures import CaptureContext, CaptureFailed, captures, load_builtin, write_failure
from tests.runner.old_run_dir import write_old_run_dir

# the page (or the device's screen) itself is the evidence: no JSON record
PAGE_ARTEFACTS = {"screenshot": ".png", "dom": ".html", "android_screen": ".png", "ios_screen": ".png",
                  "x11_screen": ".png"}


def take(kind: str, params: dict, out: Path, **ctx) -> list[Path]:
    """Perform one capture with the runner's code, typed by the plan's spec, as the runner does."""
    load_builtin()
    typed = capture_specs.get(kind).Params.model_validate({"kind": kind, "name": "cap", **params})
    return captures.get(kind).take(typed, CaptureContext("s", "after", out, **ctx))


def round_trip(path: Path, kind: str, model: type):
    """The file parses as `model`, and dumping the model gives the file's bytes back."""
    raw = path.read_bytes()
    rec = parse_record(raw, kind)
    assert type(rec) is model and rec.record_version == 1
    assert dump_record(rec).encode() == raw
    assert json.loads(raw)["record_version"] == 1 and json.loads(raw)["kind"] == rec.kind
    assert parse_record(rec.model_dump(mode="json", by_alias=True), None) == rec  # the union, on `kind` alone
    return rec


def test_every_builtin_capture_kind_has_a_record_model_or_is_a_page_artefact():
    assert set(BUILTIN_SPECS) == {"http", "command", "sql", "ddb", "file", "screenshot", "aria", "dom",
                                  "android_screen", "ios_screen", "x11_screen"}
    for kind in BUILTIN_SPECS:
        assert kind in RECORD_MODELS or kind in PAGE_ARTEFACTS, kind
    assert set(RECORD_MODELS) - set(BUILTIN_SPECS) == {"capture_failure"}


@pytest.fixture
def web():
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802
            body = b'{"title": "alpha"}' if self.path == "/note" else b"\xff\xfe"
            self.send_response(200 if self.path == "/note" else 404)
            self.send_header("Content-Type", "application/json" if self.path == "/note" else "application/octet-stream")
            self.send_header("Set-Cookie", "session=secret")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_http_records_round_trip(web, tmp_path):
    (path,) = take("http", {"url": "/note"}, tmp_path, app_url=web)
    rec = round_trip(path, "http", HttpRecord)
    assert rec.status == 200 and rec.body == '{"title": "alpha"}' and rec.text() == rec.body
    assert {k.lower(): v for k, v in rec.headers.items()}["set-cookie"] == "[redacted]"
    (path,) = take("http", {"url": "/binary"}, tmp_path, app_url=web)
    rec = round_trip(path, "http", HttpRecord)
    # bytes that are not text: searched as text with U+FFFD, kept exactly in body_base64
    assert rec.status == 404 and rec.body == "\ufffd\ufffd" and rec.body_base64 == "//4="
    (path,) = take("http", {"url": "http://127.0.0.1:9/x", "timeout_s": 2}, tmp_path)
    rec = round_trip(path, "http", HttpRecord)  # the app did not answer: an observation, not a failed capture
    assert rec.status is None and rec.error


def test_command_records_round_trip(tmp_path):
    (path,) = take("command", {"command": "echo out; echo err >&2; exit 3"}, tmp_path)
    rec = round_trip(path, "command", CommandRecord)
    assert (rec.exit_code, rec.stdout, rec.stderr, rec.timed_out) == (3, "out\n", "err\n", False)
    assert rec.text() == "out\n\nerr\n"
    (path,) = take("command", {"command": r"printf '\377\376'"}, tmp_path)
    rec = round_trip(path, "command", CommandRecord)
    assert (rec.stdout, rec.stdout_base64, rec.stdout_bytes) == ("\ufffd\ufffd", "//4=", 2)
    raw, path = take("command", {"command": "printf 'a screen'", "stdout_as": "home.png"}, tmp_path)
    assert raw.name == "home.png" and raw.read_bytes() == b"a screen"
    assert round_trip(path, "command", CommandRecord).stdout_file == "home.png"
    (path,) = take("command", {"command": "sleep 5", "timeout_s": 0.3}, tmp_path)
    assert round_trip(path, "command", CommandRecord).timed_out


def test_sql_records_round_trip_and_a_refused_database_is_a_capture_failure(tmp_path):
    import sqlite3

    db = tmp_path / "app.db"
    with sqlite3.connect(db) as conn:
        conn.execute("create table notes (id integer, title text, price numeric)")
        conn.execute("insert into notes values (1, 'alpha', 1.5)")
    (path,) = take("sql", {"url": f"sqlite:///{db}", "table": "notes", "where": {"title": "alpha"}}, tmp_path)
    rec = round_trip(path, "sql", SqlRecord)
    assert rec.columns == ["id", "title", "price"] and rec.rows == [{"id": 1, "title": "alpha", "price": 1.5}]
    assert "WHERE notes.title = 'alpha'" in rec.query and rec.document()["rows"] == rec.rows
    with pytest.raises(CaptureFailed) as exc:
        take("sql", {"url": "postgresql://user:pw@127.0.0.1:1/db", "query": "select 1"}, tmp_path)
    assert exc.value.detail == {"url": "postgresql://user:***@127.0.0.1:1/db", "query": "select 1"}


def test_ddb_records_round_trip(moto_endpoint, tmp_path):
    import boto3

    client = boto3.client("dynamodb", endpoint_url=moto_endpoint, region_name="us-east-1",
                          aws_access_key_id="testing", aws_secret_access_key="testing")
    client.create_table(TableName="rec_items", KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
                        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
                        BillingMode="PAY_PER_REQUEST")
    client.put_item(TableName="rec_items", Item={"pk": {"S": "k1"}, "n": {"N": "2.5"}, "tags": {"SS": ["b", "a"]}})
    params = {"table": "rec_items", "key": {"pk": "k1"}, "endpoint_url": moto_endpoint, "region": "us-east-1"}
    (path,) = take("ddb", params, tmp_path)
    rec = round_trip(path, "ddb", DdbRecord)
    assert rec.items == [{"pk": "k1", "n": 2.5, "tags": ["a", "b"]}]
    (path,) = take("ddb", {**params, "key": {"pk": "nope"}}, tmp_path)
    assert round_trip(path, "ddb", DdbRecord).items == []


def test_file_records_round_trip(tmp_path):
    (tmp_path / "report.md").write_text("# Report\n")
    out = tmp_path / "out"
    out.mkdir()
    path, copy = take("file", {"path": "report.md"}, out, cwd=tmp_path)
    rec = round_trip(path, "file", FileRecord)
    assert (rec.exists, rec.size, rec.copy_) == (True, 9, "cap.data/report.md")
    assert (path.parent / rec.copy_).read_bytes() == copy.read_bytes() == b"# Report\n"
    assert json.loads(path.read_text())["copy"] == "cap.data/report.md"  # the file keeps the field's name
    (path,) = take("file", {"path": "missing.md"}, out, cwd=tmp_path)
    assert round_trip(path, "file", FileRecord).exists is False


def test_aria_and_failure_records_round_trip(tmp_path):
    # the aria capture with a real page is in tests/screens; its JSON form is this record
    path = tmp_path / "tree.aria.json"
    path.write_text(dump_record(AriaRecord(url="http://x/", tree=[{"heading": "Shop"}], yaml='- heading "Shop"')))
    assert round_trip(path, "aria", AriaRecord).yaml == '- heading "Shop"'
    params = capture_specs.get("screenshot").Params(kind="screenshot", name="shot")
    path = write_failure(tmp_path, params, "no browser page", {"why": "test"})
    assert path.name == "shot.error.json"
    rec = round_trip(path, "screenshot", CaptureFailure)
    assert (rec.capture_kind, rec.capture_error, rec.detail) == ("screenshot", "no browser page", {"why": "test"})


@pytest.mark.parametrize("doc, kind", [
    ({"capture_error": "boom"}, "screenshot"),                                        # an old *.error.json
    ({"url": "u", "query": "q", "columns": [], "rows": [], "capture_error": "boom"}, "sql"),  # old sql failure
])
def test_old_failures_read_as_capture_failures(doc, kind):
    rec = parse_record(json.dumps(doc).encode(), kind)
    assert isinstance(rec, CaptureFailure) and rec.capture_kind == kind and rec.capture_error == "boom"
    assert rec.detail == {k: v for k, v in doc.items() if k != "capture_error"}


def test_records_are_strict():
    with pytest.raises(EvidenceError, match="not a valid http record"):
        parse_record(b'{"url": "u", "status": "two hundred"}', "http")
    with pytest.raises(EvidenceError, match="not a valid command record"):
        parse_record(b'{"command": "x", "exit_code": 0, "surprise": 1}', "command")
    with pytest.raises(EvidenceError, match="not valid JSON"):
        parse_record(b"{", "http")
    with pytest.raises(EvidenceError, match="record_version"):
        parse_record(b'{"record_version": 2, "kind": "http", "url": "u"}', "http")
    assert sniff_record({"url": "u", "status": 200, "surprise": 1}) is None  # no guessing from a few keys


def test_claims_are_versioned_and_read_tolerantly(tmp_path):
    claim = Claim.model_validate({"pass": True, "note": "done", "evidence": ["a.txt"]})
    assert claim.model_dump(mode="json", by_alias=True) == {"claim_version": 1, "pass": True, "note": "done",
                                                            "evidence": ["a.txt"]}
    assert claim.as_given() == {"pass": True, "note": "done", "evidence": ["a.txt"]}
    (tmp_path / "claims.json").write_text(json.dumps({"old": {"pass": False, "note": "n", "evidence": []},
                                                      "none": None, "odd": {"pass": "yes"}, "list": [1]}))
    claims = read_claims(tmp_path)
    assert claims.get("old").passed is False and claims.get("old").claim_version == 1
    assert claims.get("none") is None and claims.get("odd") is None and claims.get("list") is None
    assert claims.get("missing") is None
    assert parse_claims(json.loads(claims.to_json())).get("old") == claims.get("old")
    assert read_claims(tmp_path / "nowhere").root == {}


# -- a run directory written before the schema ---------------------------------------------------------

# what the code before the schema gave for tests/runner/old_run_dir.py (checked against it)
OLD_VERDICTS = {
    "web": ("PASS", "every validator holds", False),
    "down": ("FAIL", "http_status_eq#0: no response from http://127.0.0.1:9/x: ConnectError: [Errno 111] Connection "
                     "refused", True),
    "cmd": ("PASS", "every validator holds", False),
    "rows": ("PASS", "every validator holds", False),
    "broken": ("ERROR", "sql_row_present#0: capture 'refused' failed: OperationalError: connection refused; "
                        "ocr_contains#1: capture 'shot' failed: no browser page: screen captures need "
                        "`actor: {kind: browser}`", True),
    "files": ("PASS", "every validator holds", False),
    "tidy": ("SKIPPED", "no validator: this step cannot be verified", True),
}


@pytest.fixture
def old_run(tmp_path) -> Path:
    return write_old_run_dir(tmp_path / "runs" / "legacy" / "20260101T000000Z")


def test_a_run_dir_written_before_the_schema_is_refused_unless_allowed_unsigned(old_run):
    """It predates sealed run directories: by default every step is ERROR naming why; the opt-out grades it."""
    refused = grade(old_run)
    assert refused.integrity.status == "failed" and refused.exit_code() == 1
    assert {s.verdict for s in refused.steps} == {"ERROR"} and len(refused.steps) == len(OLD_VERDICTS)
    assert "unsigned run directory: no seal.json" in refused.steps[0].reason
    assert "--allow-unsigned" in refused.steps[0].reason
    allowed = grade(old_run, allow_unsigned=True)
    assert allowed.integrity.status == "unverified" and "unsigned run directory" in allowed.integrity.reason


def test_a_run_dir_written_before_the_schema_grades_the_same(old_run):
    results = grade(old_run, allow_unsigned=True)
    got = {s.id: (s.verdict, s.reason, s.overclaim) for s in results.steps}
    assert got == OLD_VERDICTS
    assert results.summary == {"PASS": 4, "FAIL": 1, "SKIPPED": 1, "ERROR": 1, "FLAKY": 0, "overclaims": 3,
                               "plan_errors": 0, "agent_failures": 0}
    claims = {s.id: s.claim for s in results.steps}
    assert claims["web"] == {"pass": True, "note": "Created it.", "evidence": []} and claims["cmd"] is None
    matched = {(s.id, v.name): v.matched for s in results.steps for v in s.validators}
    assert matched[("rows", "sql_row_present#0")] == '{"title": "alpha"}'
    assert matched[("web", "json_path_eq#1")] == "alpha"
    # grading writes results.json; grading again gives the same bytes and touches no evidence
    before = {p: p.read_bytes() for p in old_run.rglob("*") if p.is_file()}
    grade_to_disk(old_run, allow_unsigned=True)
    first = (old_run / "results.json").read_bytes()
    assert json.loads(first)["integrity"]["status"] == "unverified"
    grade_to_disk(old_run, allow_unsigned=True)
    assert (old_run / "results.json").read_bytes() == first
    assert {p: p.read_bytes() for p in before} == before


def test_a_run_dir_written_before_the_schema_is_audited_the_same(old_run):
    (refused,) = list(read_traces(old_run))  # not without the opt-out
    assert refused.error is not None and "unsigned run directory" in str(refused.error)
    with allowing_unsigned():
        (item,) = list(read_traces(old_run))
    assert item.trace.meta["unverified"].startswith("unsigned run directory")
    assert item.run_id == "legacy/20260101T000000Z/tidy"
    obs = item.trace.steps[-1].observation
    assert obs.text == "[listing] command `ls` -> exit 0: a.txt\nb.txt\n"
    assert obs.data == {"listing": {"kind": "command", "command": "ls", "exit_code": 0, "timed_out": False,
                                    "stdout": "a.txt\nb.txt\n", "stderr": ""}}
    assert item.trace.report == "The step is done. The list looks tidy."


def test_an_old_error_json_the_manifest_does_not_flag_is_still_a_failed_capture(old_run):
    manifest = json.loads((old_run / "manifest.json").read_text())
    for f in manifest["files"]:
        f["error"] = None
    (old_run / "manifest.json").write_text(json.dumps(manifest))
    got = {s.id: (s.verdict, s.reason) for s in grade(old_run, allow_unsigned=True).steps}
    assert got["broken"] == OLD_VERDICTS["broken"][:2]
    # and the auditor's reader says so too
    from referee.audit.ingest.readers.referee_run import observe
    from referee.grader.evidence import RunEvidence
    from referee.rundir.schema import read_manifest

    ev = RunEvidence(old_run, read_manifest(old_run))
    obs = observe(ev, [f for f in ev.manifest.files if f.step == "broken"])
    assert obs.error and obs.text.splitlines() == [
        "[refused] sql: capture failed: OperationalError: connection refused",
        "[shot] screenshot: capture failed: no browser page: screen captures need `actor: {kind: browser}`"]


def test_a_record_edited_after_capture_is_refused_by_the_grader_and_the_auditor(old_run):
    rec = old_run / "evidence" / "tidy" / "after" / "listing.json"
    rec.write_text(rec.read_text().replace("a.txt", "forged.txt"))
    # graded again, the step whose listed file changed is ERROR (every listed file is checked, read by a validator or
    # not), so the auditor, which reads SKIPPED steps only, makes no advisory trace of the forged record
    from referee.grader.grade import grade

    with allowing_unsigned():
        assert list(read_traces(old_run)) == []
    results = grade(old_run, allow_unsigned=True)
    (step,) = [s for s in results.steps if s.id == "tidy"]
    assert step.verdict == "ERROR"
    assert "was modified after capture: 113 bytes, not the 108 of the manifest" in step.reason, step.reason
    assert "forged" not in step.reason


@pytest.mark.parametrize("name", ["referee.rundir.schema", "referee.plan.script",
                         "referee.audit.ingest.readers.referee_run",
                                  "referee.runner.captures.base"])
def test_doctests(name):
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0 and result.attempted > 0


CAPTURE_PLUGIN = '''
from referee.plan.captures import CaptureParams
from referee.runner.captures.base import CaptureKind


class Echo(CaptureKind):
    summary = "writes its `text` into <name>.txt"

    class Params(CaptureParams):
        text: str

    def take(self, params, ctx):
        path = ctx.out_dir / f"{params.name}.txt"
        path.write_text(params.text)
        return [path]
'''


def test_a_capture_kind_from_an_entry_point_is_plan_data_too(tmp_path):
    """The plan loader resolves capture kinds from plan data; a plugin's capture class is its spec and its
    performer both."""
    import os
    import sys

    from tests.conftest import run_cli

    site = tmp_path / "site"
    (site / "referee_capture_demo-0.1.dist-info").mkdir(parents=True)
    (site / "referee_capture_demo.py").write_text(CAPTURE_PLUGIN)
    (site / "referee_capture_demo-0.1.dist-info" / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: referee-capture-demo\nVersion: 0.1\n")
    (site / "referee_capture_demo-0.1.dist-info" / "entry_points.txt").write_text(
        "[referee.captures]\necho = referee_capture_demo:Echo\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]))
    rc, out, err = run_cli(["kinds", "--json"], cwd=tmp_path, env=env)
    assert rc == 0, err
    assert json.loads(out)["captures"]["echo"] == {"summary": "writes its `text` into <name>.txt",
                                                   "params": ["name", "text"]}
    (tmp_path / "plan.yaml").write_text(
        "steps:\n  - id: a\n    do: x\n    capture: [{kind: echo, name: said, text: hello there}]\n"
        "    validators: [{kind: text_contains, evidence: said, text: hello}]\n")
    rc, out, err = run_cli(["check", "plan.yaml"], cwd=tmp_path, env=env)
    assert rc == 0, err
    (tmp_path / "agent.py").write_text("pass\n")
    rc, out, err = run_cli(["run", "plan.yaml", "--agent", f"{sys.executable} agent.py", "--out", "runs", "--json"],
                           cwd=tmp_path, env=env)
    assert rc == 0, (out, err)
    assert json.loads(out)["runs"][0]["steps"][0]["verdict"] == "PASS"
    rc, out, err = run_cli(["check", "plan.yaml"], cwd=tmp_path)  # without the plugin: unknown, with a hint
    assert rc == 2 and "unknown capture kind 'echo'" in err


# ---- records of captures named with a folder, and file records from before `resolved` -------------------------

def _file_entry(path: str, capture: str, kind: str):
    from referee.rundir.schema import FileEntry

    return FileEntry(path=path, step="s", phase="after", captured_by="runner", capture=capture, kind=kind,
                     sha256="0" * 64, size=1, time="2026-01-01T00:00:00Z")


def test_a_capture_named_with_a_folder_is_still_a_runner_record():
    from referee.rundir.schema import is_record

    assert is_record(_file_entry("evidence/s/after/api/order.json", "api/order", "http"))
    assert is_record(_file_entry("evidence/s/after/api/order.error.json", "api/order", "http"))
    assert not is_record(_file_entry("evidence/s/after/order.json", "api/order", "http"))
    assert not is_record(_file_entry("evidence/s/before/api/order.json", "api/order", "http"))


def test_a_file_record_written_before_resolved_existed_still_reads():
    from referee.rundir.schema import parse_record

    rec = parse_record({"path": "out.csv", "exists": True, "size": 3, "copy": "out.data/out.csv"}, "file")
    assert rec.kind == "file" and rec.resolved == "" and rec.exists
