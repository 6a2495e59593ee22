"""A run directory the agent could touch is not trusted until verified: tampering with a finished
run (consistent forgeries, manifest paths out of the run, an edited frozen plan, FIFOs, a forged
results.json) never gets a PASS from `referee grade`, and never hangs `grade`, `report` or `audit`.

One honest run is made per module; every test tampers with its own copy.
"""

from __future__ import annotations

import json
import os
import re
import uuid
from pathlib import Path

import pytest

from tests.security.conftest import Sec
from tests.security.sec_helpers import copy_run, json_verdicts, make_base, png_bytes, remove_tree, sha256

DONE = "REAL-WORK-DONE"


@pytest.fixture(scope="module")
def finished():
    """A finished run: `ok` PASS, `bad` FAIL (agent file and runner capture), `planned` FAIL, `tidy` SKIPPED."""
    sec = Sec(make_base())
    plan = {"name": "finished", "actor": {"kind": "command", "command": sec.agent, "timeout_s": 20}, "steps": [
        {"id": "ok", "do": f"SAVE result.txt {DONE}\nBLANK_PNG shot.png",
         "capture": [{"kind": "command", "name": "probe", "command": "echo ok"}],
         "validators": [{"kind": "text_contains", "evidence": "result.txt", "text": DONE},
                        {"kind": "command_exit_code", "evidence": "probe", "expected": 0}]},
        {"id": "bad", "do": "SAVE result.txt nothing-was-done",
         "capture": [{"kind": "command", "name": "probe", "command": "echo failing; exit 3"}],
         "validators": [{"kind": "text_contains", "evidence": "result.txt", "text": DONE},
                        {"kind": "command_exit_code", "evidence": "probe", "expected": 0}]},
        {"id": "planned", "do": "SAVE result.txt nothing-was-done",
         "validators": [{"kind": "text_contains", "evidence": "result.txt", "text": "PLANNED-TEXT-3"}]},
        {"id": "tidy", "do": "Tidy up the workspace.",
         "capture": [{"kind": "command", "name": "listing", "command": "echo tidy listing"}]},
    ]}
    r = sec.run(plan)
    assert not r.hung, r.hang_message()
    got = {s["id"]: s["verdict"] for s in r.results["steps"]}
    assert got == {"ok": "PASS", "bad": "FAIL", "planned": "FAIL", "tidy": "SKIPPED"}, r.explain()
    sec.finished_dir = r.run_dir
    yield sec
    remove_tree(sec.base)


@pytest.fixture
def copy(finished):
    """A private copy of the finished run, in a folder of the same shape (OUT/<plan>/<ts>)."""
    dst = finished.base / "copies" / uuid.uuid4().hex[:8] / "finished" / finished.finished_dir.name
    dst.parent.mkdir(parents=True)
    return copy_run(finished.finished_dir, dst)


def _grade(finished, run_dir: Path, timeout: float = 30):
    rc, out, err, dt = finished.cli("grade", run_dir, "--json", timeout=timeout)
    assert rc is not None, f"`referee grade` hung: killed after {dt:.0f} s\nstderr: {err[-2000:]}"
    assert "Traceback" not in err and "Traceback" not in out, err
    return rc, json_verdicts(out), out + "\n" + err


def _manifest(run_dir: Path) -> dict:
    return json.loads((run_dir / "manifest.json").read_text())


def _entry(manifest: dict, path: str) -> dict:
    for f in manifest["files"]:
        if f["path"] == path:
            return f
    raise AssertionError(f"{path} is not in the manifest: {[f['path'] for f in manifest['files']]}")


def _forged_probe(run_dir: Path) -> str:
    """The `bad` step's failing command capture, rewritten to say exit code 0."""
    rec = json.loads((run_dir / "evidence/bad/after/probe.json").read_text())
    rec["exit_code"] = 0
    rec["stdout"] = "ok\n"
    return json.dumps(rec)


def test_untouched_copy_grades_the_same(finished, copy):
    rc, steps, text = _grade(finished, copy)
    assert steps is not None, text
    assert {k: v["verdict"] for k, v in steps.items()} == \
        {"ok": "PASS", "bad": "FAIL", "planned": "FAIL", "tidy": "SKIPPED"}, text[-3000:]
    assert rc == 1


def test_evidence_rewritten_with_a_matching_manifest_is_error(finished, copy):
    """A forger who rewrites evidence and puts its new SHA-256 and size in manifest.json."""
    (copy / "agent/bad/result.txt").write_text(DONE)
    (copy / "evidence/bad/after/probe.json").write_text(_forged_probe(copy))
    m = _manifest(copy)
    for rel in ("agent/bad/result.txt", "evidence/bad/after/probe.json"):
        e = _entry(m, rel)
        e["sha256"], e["size"] = sha256(copy / rel), (copy / rel).stat().st_size
    (copy / "manifest.json").write_text(json.dumps(m, indent=2))
    rc, steps, text = _grade(finished, copy)
    assert rc != 0, text[-3000:]
    assert steps is None or steps["bad"]["verdict"] == "ERROR", \
        "a consistently forged manifest was believed:\n" + text[-3000:]
    named = [f for f in ("manifest", "result.txt", "probe.json") if f in text.lower()]
    assert named, "the ERROR does not say which file failed to verify:\n" + text[-3000:]


def test_manifest_path_out_of_the_run_directory_is_never_read(finished, copy):
    """The manifest points the evidence at files next to the run directory, hashes and all."""
    (copy.parent / "outside.json").write_text(_forged_probe(copy))
    (copy.parent / "outside.txt").write_text(DONE)
    m = _manifest(copy)
    pairs = (("evidence/bad/after/probe.json", "../outside.json"), ("agent/bad/result.txt", "../outside.txt"))
    for rel, outside in pairs:
        e = _entry(m, rel)
        target = copy / outside
        e["path"], e["sha256"], e["size"] = outside, sha256(target), target.stat().st_size
    (copy / "manifest.json").write_text(json.dumps(m, indent=2))
    rc, steps, text = _grade(finished, copy)
    assert rc != 0, text[-3000:]
    assert steps is None or steps["bad"]["verdict"] == "ERROR", \
        "evidence was read from outside the run directory:\n" + text[-3000:]


def test_edited_frozen_plan_does_not_change_the_verdict(finished, copy):
    plan = copy / "plan.yaml"
    text0 = plan.read_text()
    assert "PLANNED-TEXT-3" in text0
    plan.write_text(text0.replace("PLANNED-TEXT-3", "nothing-was-done"))
    rc, steps, text = _grade(finished, copy)
    assert rc != 0, text[-3000:]
    assert steps is None or steps["planned"]["verdict"] != "PASS", \
        "`referee grade` graded with a plan.yaml edited after the run:\n" + text[-3000:]


def _point_outside(run_dir: Path, rel: str, name: str, data: bytes) -> None:
    """Write `data` next to the run directory and point the manifest entry `rel` at it (hash and all)."""
    (run_dir.parent / name).write_bytes(data)
    m = _manifest(run_dir)
    e = _entry(m, rel)
    e["path"], e["sha256"], e["size"] = f"../{name}", sha256(run_dir.parent / name), len(data)
    (run_dir / "manifest.json").write_text(json.dumps(m, indent=2))


def test_audit_never_reads_a_manifest_path_out_of_the_run_directory(finished, tmp_path):
    """Two copies whose manifests point the SKIPPED step's capture at different files outside:
    if the audit read them, the claim-blind views (and their hashes) would differ."""
    views = []
    for content in ("listing OUTSIDE-AAA-111", "listing OUTSIDE-BBB-222"):
        d = finished.base / "copies" / uuid.uuid4().hex[:8] / "finished" / finished.finished_dir.name
        d.parent.mkdir(parents=True)
        copy_run(finished.finished_dir, d)
        rec = json.loads((d / "evidence/tidy/after/listing.json").read_text())
        rec["stdout"] = content + "\n"
        _point_outside(d, "evidence/tidy/after/listing.json", "outside.json", json.dumps(rec).encode())
        out_file = d.parent / "audit.jsonl"
        rc, out, err, dt = finished.cli("audit", d, "--out", out_file, timeout=30)
        assert rc is not None, f"`referee audit` hung ({dt:.0f} s)"
        assert "Traceback" not in err, err
        assert "OUTSIDE-" not in out + err, "the audit printed a file from outside the run directory:\n" + out + err
        records = [json.loads(x) for x in out_file.read_text().splitlines()] if out_file.exists() else []
        views += [r["view_sha256"] for r in records if str(r.get("run_id", "")).endswith("/tidy")]
    assert len(set(views)) <= 1, "the audit's evidence came from files outside the run directory (views differ)"


def test_report_never_embeds_a_file_out_of_the_run_directory(finished, copy):
    import base64

    outside = png_bytes(40, 24, (200, 10, 30))
    _point_outside(copy, "agent/ok/shot.png", "outside.png", outside)
    rc, out, err, dt = finished.cli("report", copy, timeout=30)
    assert rc is not None, f"`referee report` hung ({dt:.0f} s)"
    assert "Traceback" not in err, err
    html = (copy / "report.html").read_text() if (copy / "report.html").exists() else ""
    assert base64.b64encode(outside).decode() not in html, "report.html embeds an image from outside the run directory"


# ------------------------------------------------------------------ FIFOs: nothing hangs


FIFO_CASES = [
    ("grade", "agent/ok/result.txt"),
    ("grade", "evidence/ok/after/probe.json"),
    ("grade", "manifest.json"),
    ("grade", "claims.json"),
    ("audit", "evidence/tidy/after/listing.json"),
    ("audit", "claims.json"),
    ("audit", "results.json"),
    ("report", "results.json"),
]


@pytest.mark.parametrize(("command", "rel"), FIFO_CASES, ids=[f"{c}-{r.replace('/', '_')}" for c, r in FIFO_CASES])
def test_a_fifo_in_a_finished_run_hangs_nothing(finished, copy, command, rel):
    target = copy / rel
    target.unlink()
    os.mkfifo(target)
    args = {"grade": ["grade", copy, "--json"], "report": ["report", copy],
            "audit": ["audit", copy, "--out", copy.parent / "audit.jsonl"]}[command]
    rc, out, err, dt = finished.cli(*args, timeout=20)
    assert rc is not None, f"`referee {command}` hung on a FIFO at {rel}: killed after {dt:.0f} s\n{err[-2000:]}"
    assert "Traceback" not in err and "Traceback" not in out, err
    assert rc in (0, 1, 2), f"rc={rc}\n{err[-2000:]}"
    steps = json_verdicts(out) if command == "grade" else None
    if steps is not None and rel.startswith(("agent/", "evidence/")):
        assert steps["ok"]["verdict"] == "ERROR", steps["ok"]  # a FIFO is not evidence


# ------------------------------------------------------------------ report and audit verify results.json


def _forge_results(run_dir: Path, sid: str, reason: str) -> None:
    res = json.loads((run_dir / "results.json").read_text())
    for s in res["steps"]:
        if s["id"] == sid:
            s["verdict"] = "PASS"
            s["reason"] = reason
            s["overclaim"] = False
            for v in s["validators"]:
                v["status"], v["reason"] = "PASS", reason
    (run_dir / "results.json").write_text(json.dumps(res, indent=2))


def test_report_does_not_show_a_forged_results_json(finished, copy):
    marker = "FORGED-RESULT-7f3a"
    _forge_results(copy, "bad", marker)
    rc, out, err, dt = finished.cli("report", copy, timeout=30)
    assert rc is not None, f"`referee report` hung ({dt:.0f} s)"
    assert "Traceback" not in err, err
    if rc == 0:
        html = (copy / "report.html").read_text()
        row = re.search(r'<tr id="step-bad">(.*?)</tr>', html, re.S)
        assert marker not in html, "report.html shows the forged results.json as it was given"
        assert row is None or ">PASS<" not in row.group(1), row.group(1)[:2000]
    else:
        assert "results.json" in err, f"rc={rc} but the error does not name results.json: {err}"


def test_audit_of_a_run_dir_does_not_trust_a_forged_results_json(finished, copy):
    """results.json says the SKIPPED step passed, so a trusting audit would skip it."""
    _forge_results(copy, "tidy", "FORGED-RESULT-9c1e")
    out_file = copy.parent / "audit.jsonl"
    rc, out, err, dt = finished.cli("audit", copy, "--out", out_file, timeout=30)
    assert rc is not None, f"`referee audit` hung ({dt:.0f} s)"
    assert "Traceback" not in err, err
    records = [json.loads(line) for line in out_file.read_text().splitlines()] if out_file.exists() else []
    audited = [rec["run_id"] for rec in records if str(rec.get("run_id", "")).endswith("/tidy")]
    if rc == 0:
        assert audited, ("the SKIPPED step was not audited: the audit believed a results.json that said it "
                         f"passed\nstdout: {out[-2000:]}\nstderr: {err[-2000:]}")
    else:
        assert "results.json" in err, f"rc={rc} but the error does not name results.json: {err}"
