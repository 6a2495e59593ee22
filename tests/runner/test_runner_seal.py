"""Sealed run directories: evidence the grader can trust.

An agent can write its run directory during its step, and a process it leaves behind can write it
afterwards. Whatever either rewrites (the frozen plan, the manifest with fresh hashes, the claims,
an OCR cache, the seal, results.json) must never make `referee grade`, `report` or `audit RUN_DIR`
believe it: the seal that the runner signs with a key kept outside the run directory does not hold,
and every step is ERROR with a reason naming the file and why. The hostile agents are real programs
(tests/support/agents/usurper.py) run by `referee run`.

This module imports nothing new at the top, so it also runs against code from before the seal
(where the first tests below fail: the attacks succeed there).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import ROOT, base_cli_env, run_cli
from tests.runner.runner_helpers import (
    agent_cmd,
    assert_one_line_error,
    do_run,
    kill_quietly,
    marked_pids,
    write_plan,
)

USURPER = str(ROOT / "tests" / "support" / "agents" / "usurper.py")


def usurper(*args: str) -> str:
    return agent_cmd("usurper", *args)


def grade_cli(run_dir: Path, *args: str, env: dict | None = None) -> tuple[int, dict, str, str]:
    """`referee grade RUN_DIR --json`: (rc, the run's JSON, stdout, stderr)."""
    rc, out, err = run_cli(["grade", str(run_dir), "--json", *args], env=env or base_cli_env(), timeout=120)
    assert "Traceback" not in err, err
    payload = json.loads(out) if out.strip().startswith("{") else {"runs": [{}]}
    return rc, payload["runs"][0], out, err


def verdicts(run: dict) -> dict[str, str]:
    return {s["id"]: s["verdict"] for s in run.get("steps", [])}


def assert_refused(rc: int, run: dict, *words: str) -> None:
    """Every step ERROR, each reason naming the file and why, exit 1: the grader did not look."""
    assert rc == 1, run
    assert run["steps"] and {s["verdict"] for s in run["steps"]} == {"ERROR"}, run
    for s in run["steps"]:
        for w in words:
            assert w in s["reason"], (w, s["reason"])
    assert run["integrity"]["status"] == "failed" and all(w in run["integrity"]["reason"] for w in words)


# ------------------------------------------------------------ a clean, sealed run

PLAN = {
    "name": "sealed",
    "steps": [
        {"id": "s1", "do": "Say the secret word (this agent will not).",
         "capture": [{"kind": "command", "name": "listing", "command": "echo nothing"}],
         "validators": [{"kind": "text_contains", "evidence": "listing", "text": "secret-word"}]},
        {"id": "s2", "do": "SAVE proof.txt done",
         "validators": [{"kind": "text_contains", "evidence": "proof.txt", "text": "done"}]},
        {"id": "tidy", "do": "Make it tidy."},
    ],
}
CLEAN = {"s1": "FAIL", "s2": "PASS", "tidy": "SKIPPED"}


@pytest.fixture(scope="module")
def sealed(tmp_path_factory):
    W = tmp_path_factory.mktemp("sealed")
    path = write_plan(W / "sealed.yaml", PLAN)
    run = do_run(path, out=W / "out", cwd=W, env=base_cli_env(), agent=agent_cmd("honest"))
    assert run.verdicts() == CLEAN, run.explain()
    run.plan_bytes = path.read_bytes()
    return run


@pytest.fixture
def copy(sealed, tmp_path) -> Path:
    dst = tmp_path / "runs" / "sealed" / sealed.run_dir.name
    shutil.copytree(sealed.run_dir, dst, symlinks=True)
    (dst / "results.json").unlink()
    return dst


def test_a_finished_run_is_sealed_and_verifies(sealed, signing_key):
    seal = json.loads((sealed.run_dir / "seal.json").read_text())
    digest = {n: hashlib.sha256((sealed.run_dir / n).read_bytes()).hexdigest() for n in ("manifest.json",
                                                                                        "claims.json")}
    assert seal["algorithm"] == "hmac-sha256" and seal["final"] is True and len(seal["mac"]) == 64
    assert [d["sha256"] for d in seal["manifest"]] == [digest["manifest.json"]]
    assert [d["sha256"] for d in seal["claims"]] == [digest["claims.json"]]
    assert seal["plan"]["sha256"] == hashlib.sha256(sealed.plan_bytes).hexdigest()
    # the key lives outside the run directory, private, and is not in the seal
    assert stat.S_IMODE(signing_key.stat().st_mode) == 0o600
    assert stat.S_IMODE(signing_key.parent.stat().st_mode) == 0o700
    secret = signing_key.read_text().strip()
    assert not [p for p in sealed.run_dir.rglob("*") if p.is_file() and secret.encode() in p.read_bytes()]
    assert sealed.results["integrity"]["status"] == "verified"
    assert "seal verified" in sealed.stdout
    rc, run, _, _ = grade_cli(sealed.run_dir)
    assert verdicts(run) == CLEAN and rc == 1 and run["integrity"]["status"] == "verified"
    assert run["integrity"]["key_id"] == seal["key_id"] and run["integrity"]["run_id"] == seal["run_id"]


# ------------------------------------------------------------ hostile agents


# unisolated on purpose: the seal must catch an agent that can write the run directory (isolated, it
# cannot: test_runner_isolation.py)
UNISOLATED = {"kind": "command", "isolation": "none"}


def test_an_agent_that_rewrites_the_frozen_plan_gets_error_not_pass(run_plan):
    plan = {"name": "plan-swap", "actor": UNISOLATED, "steps": [
        {"id": "s1", "do": "Make `false` succeed.",
         "validators": [{"kind": "command_exit_code", "command": "false"}]}]}
    run = run_plan(plan, agent=usurper("rewrite-plan"))
    assert "ok.txt" in (run.run_dir / "plan.yaml").read_text(), "the agent did not get to rewrite plan.yaml"
    assert run.verdicts() == {"s1": "ERROR"}, run.explain()
    assert "plan.yaml differs from the plan the runner loaded" in run.step("s1")["reason"]
    assert run.rc == 1
    rc, graded, _, _ = grade_cli(run.run_dir)  # and later, with the app and the runner gone
    assert_refused(rc, graded, "plan.yaml differs from the plan the runner loaded")


@pytest.mark.parametrize("how", ["plain", "forged-mac"])
def test_an_ocr_cache_the_agent_wrote_decides_nothing(run_plan, tmp_path, how):
    if shutil.which("tesseract") is None:
        pytest.skip("!!! tesseract is not installed (apt-get install tesseract-ocr tesseract-ocr-eng) !!!")
    plan = {"name": "ocr-poison", "actor": UNISOLATED, "steps": [
        {"id": "look", "do": "Show hello on the screen.",
         "validators": [{"kind": "ocr_contains", "evidence": ["shot.png"], "text": "hello"}]}]}
    trace = tmp_path / "ocr-calls.jsonl"
    env = {**base_cli_env(), "REFEREE_OCR_TRACE": str(trace)}
    run = run_plan(plan, agent=usurper("poison-ocr", *(["forged-mac"] if how == "forged-mac" else [])), env=env)
    shot = run.run_dir / "agent" / "look" / "shot.png"
    assert shot.is_file(), run.explain()
    assert run.verdicts() == {"look": "FAIL"}, run.explain()  # a blank image shows no text
    calls = [json.loads(line) for line in trace.read_text().splitlines()]
    assert [(c["engine"], c["sha256"]) for c in calls] == [("tesseract", hashlib.sha256(shot.read_bytes()).hexdigest())]
    # the grader's own entry is signed: grading again reuses it and OCRs nothing
    trace.unlink()
    rc, graded, _, _ = grade_cli(run.run_dir, env=env)
    assert verdicts(graded) == {"look": "FAIL"} and not trace.exists()
    # an entry whose value was changed afterwards (its MAC kept) is recomputed, not believed
    cache_file = run.run_dir / "cache" / "ocr.json"
    cache = json.loads(cache_file.read_text())
    (entry,) = cache.values()
    entry["value"]["lines"] = [{"text": "hello", "confidence": 0.99, "box": [0, 0, 1, 1]}]
    cache_file.write_text(json.dumps(cache))
    rc, graded, _, _ = grade_cli(run.run_dir, env=env)
    assert verdicts(graded) == {"look": "FAIL"} and len(trace.read_text().splitlines()) == 1


def test_a_process_left_behind_that_rewrites_evidence_and_manifest_is_caught(run_plan, tmp_path):
    marker = tmp_path / "tampered.marker"
    plan = {"name": "leftover", "steps": [
        {"id": "s1", "do": "Say the secret word.",
         "capture": [{"kind": "command", "name": "listing", "command": "echo nothing"}],
         "validators": [{"kind": "text_contains", "evidence": "listing", "text": "secret-word"}]}]}
    run = run_plan(plan, agent=usurper("linger", str(marker)))
    assert run.verdicts() == {"s1": "FAIL"}, run.explain()
    # the process left behind tampers 0.5 s after results.json appears; the runner usually ends it first: wait
    # while it lives (its command line names the marker), not a fixed time
    deadline = time.monotonic() + 10
    while not marker.exists() and marked_pids(marker, ("cmdline",)) and time.monotonic() < deadline:
        time.sleep(0.05)
    if not marker.exists():
        # the runner ended the process it left behind: do what that process would have done
        subprocess.run([sys.executable, USURPER, "tamper", str(run.run_dir), "s1"], check=True)
    assert "secret-word" in (run.run_dir / "evidence/s1/after/listing.json").read_text()
    rc, graded, out, _ = grade_cli(run.run_dir)
    assert_refused(rc, graded, "manifest.json: sha256 differs from the signed manifest")


# ------------------------------------------------------------ tampering after the run, file by file


def _edit_json(path: Path, fn) -> None:
    doc = json.loads(path.read_text())
    fn(doc)
    path.write_text(json.dumps(doc, indent=2) + "\n")


def _forge_seal_with_another_key(d: Path) -> None:
    """A seal an attacker computes over the edited manifest with a key of its own, naming ours."""
    from referee.rundir.keys import SigningKey
    from referee.rundir.seal import FileDigest, Seal, sign

    old = Seal.model_validate_json((d / "seal.json").read_bytes())
    _edit_json(d / "manifest.json", lambda m: m.update(error=None, actor="someone else"))
    theirs = SigningKey(os.urandom(32), Path("/elsewhere"))
    forged = sign(old.model_copy(update={"manifest": [FileDigest.of((d / "manifest.json").read_bytes())]}), theirs)
    (d / "seal.json").write_text(forged.model_dump_json())


TAMPER = {
    "plan": (lambda d: (d / "plan.yaml").write_text((d / "plan.yaml").read_text() + "# edited\n"),
             "plan.yaml differs from the plan the runner loaded"),
    "plan-deleted": (lambda d: (d / "plan.yaml").unlink(), "plan.yaml is missing"),
    "plan-folder": (lambda d: ((d / "plan.yaml").unlink(), (d / "plan.yaml").mkdir()), "plan.yaml is unreadable"),
    "manifest": (lambda d: _edit_json(d / "manifest.json", lambda m: m["steps"]["s1"].update(actor_exit=7)),
                 "manifest.json: sha256 differs from the signed manifest"),
    "claims": (lambda d: _edit_json(d / "claims.json", lambda c: c.update(s1={"pass": False, "note": "",
                                                                              "evidence": []})),
               "claims.json: sha256 differs from the signed claims"),
    "claims-deleted": (lambda d: (d / "claims.json").unlink(), "claims.json is missing"),
    "seal-mac": (lambda d: _edit_json(d / "seal.json", lambda s: s.update(mac="0" * 64)),
                 "seal.json: signature does not match"),
    "seal-forged": (_forge_seal_with_another_key, "seal.json: signature does not match"),
    "seal-garbage": (lambda d: (d / "seal.json").write_text("{not a seal"), "seal.json is not a valid seal"),
}


@pytest.mark.parametrize("what", sorted(TAMPER))
def test_tampering_after_the_run_is_error_naming_the_file(copy, what):
    edit, words = TAMPER[what]
    edit(copy)
    rc, run, out, err = grade_cli(copy)
    assert_refused(rc, run, words)
    assert json.loads((copy / "results.json").read_text())["integrity"]["status"] == "failed"
    assert "SEAL CHECK FAILED" in err  # --json: the human line goes to stderr


def test_evidence_modified_after_the_run_is_error_for_its_step_only(copy):
    (copy / "agent/s2/proof.txt").write_text("done, and more")
    rc, run, _, _ = grade_cli(copy)
    assert verdicts(run) == {**CLEAN, "s2": "ERROR"} and run["integrity"]["status"] == "verified"
    (reason,) = [v["reason"] for v in run["steps"][1]["validators"]]
    assert "agent/s2/proof.txt was modified after capture" in reason and "the signed manifest" in reason


# ------------------------------------------------------------ manifest paths


def _move_entry(d: Path, new_path: str) -> None:
    """Point s2's proof.txt entry at `new_path` (the bytes copied there), then re-sign: a runner bug or a key
    holder, not an agent, could write such a manifest; the grader still refuses it."""
    from tests.support.sealing import reseal

    target = (d / new_path) if not new_path.startswith("/") else Path(new_path)
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(d / "agent/s2/proof.txt", target)
    _edit_json(d / "manifest.json", lambda m: [f.update(path=new_path) for f in m["files"]
                                               if f["path"] == "agent/s2/proof.txt"])
    reseal(d)


@pytest.mark.parametrize("bad, why", [
    ("../outside.json", "'..' leads out of the run directory"),
    ("agent/s2/../../../outside.json", "'..' leads out of the run directory"),
    ("results.json", "it lies outside evidence/ and agent/"),
    ("ABSOLUTE", "it is absolute"),
])
def test_a_manifest_path_outside_the_run_directory_is_refused(copy, bad, why):
    bad = str(copy.parent / "elsewhere.json") if bad == "ABSOLUTE" else bad
    _move_entry(copy, bad)
    rc, run, _, _ = grade_cli(copy)
    assert_refused(rc, run, f"path '{bad}' is refused: {why}", "(step 's2')")
    rc, run, _, _ = grade_cli(copy, "--allow-unsigned")  # the opt-out is about seals, never about paths
    assert_refused(rc, run, f"path '{bad}' is refused")


def test_a_manifest_path_through_a_symlink_is_refused_even_inside(copy):
    real = copy / "agent" / "s2-real"
    (copy / "agent" / "s2").rename(real)
    (copy / "agent" / "s2").symlink_to("s2-real")
    rc, run, _, _ = grade_cli(copy)
    # the first listed file of agent/s2 is named (stdout.txt, since the runner keeps the agent's output)
    assert_refused(rc, run, "path 'agent/s2/", "is refused: agent/s2 is a symlink")


# ------------------------------------------------------------ unsigned, foreign, and the key file


def test_an_unsigned_run_is_refused_unless_allowed_and_then_marked_unverified_everywhere(copy, tmp_path):
    (copy / "seal.json").unlink()
    rc, run, _, _ = grade_cli(copy)
    assert_refused(rc, run, "unsigned run directory: no seal.json", "--allow-unsigned")
    rc, run, out, err = grade_cli(copy, "--allow-unsigned")
    assert verdicts(run) == CLEAN and rc == 1
    assert run["integrity"]["status"] == "unverified" and "unsigned run directory" in run["integrity"]["reason"]
    assert "UNVERIFIED" in err
    assert json.loads((copy / "results.json").read_text())["integrity"]["status"] == "unverified"
    assert "UNVERIFIED" in (copy / "report.html").read_text()
    assert '<property name="referee.integrity" value="unverified"' in (copy / "junit.xml").read_text()
    # report: refused (exit 1) by default, unverified with the opt-out
    rc, out, err = run_cli(["report", str(copy)], env=base_cli_env())
    assert rc == 1 and "SEAL CHECK FAILED" in (copy / "report.html").read_text() and "unsigned" in err
    rc, out, err = run_cli(["report", str(copy), "--allow-unsigned"], env=base_cli_env())
    assert rc == 0 and "UNVERIFIED" in (copy / "report.html").read_text()
    # audit RUN_DIR: refused by default (no record), read and marked with the opt-out
    out_file = tmp_path / "audit.jsonl"
    rc, out, err = run_cli(["audit", str(copy), "--out", str(out_file), "--no-progress"], env=base_cli_env())
    assert "SEAL CHECK FAILED" in out and "unsigned run directory" in err, (out, err)
    assert not out_file.exists() or out_file.read_text() == ""
    rc, out, err = run_cli(["audit", str(copy), "--out", str(out_file), "--no-progress", "--allow-unsigned"],
                           env=base_cli_env())
    assert rc == 0 and "UNVERIFIED" in out, (out, err)
    (rec,) = [json.loads(line) for line in out_file.read_text().splitlines()]
    assert rec["run_id"].endswith("/tidy") and rec["advisory"] is True


def test_a_run_sealed_with_another_key_cannot_be_checked_here(copy, tmp_path):
    env = {**base_cli_env(), "REFEREE_KEY_FILE": str(tmp_path / "other" / "key")}
    rc, run, _, _ = grade_cli(copy, env=env)  # no key there at all: grading never makes one
    assert_refused(rc, run, "seal.json: cannot be checked here: no signing key at", "REFEREE_KEY_FILE")
    assert not (tmp_path / "other" / "key").exists()
    from referee.rundir.keys import load_key

    load_key(path=tmp_path / "other" / "key")
    rc, run, _, _ = grade_cli(copy, env=env)
    assert_refused(rc, run, "seal.json: signed with another key")
    rc, run, _, _ = grade_cli(copy, "--allow-unsigned", env=env)
    assert verdicts(run) == CLEAN and run["integrity"]["status"] == "unverified"


@pytest.mark.parametrize("how, words", [
    ("group-readable", "readable or writable by others (mode 0o640); run: chmod 600"),
    ("symlink", "the signing key is a symlink; refused"),
    ("directory", "the signing key is not a regular file"),
])
def test_an_exposed_key_file_is_refused_in_one_line(copy, tmp_path, how, words):
    from referee.rundir.keys import load_key

    key = tmp_path / "keys" / "key"
    if how == "directory":
        key.mkdir(parents=True)
    else:
        load_key(path=tmp_path / "keys" / "real")
        if how == "symlink":
            key.symlink_to(tmp_path / "keys" / "real")
        else:
            shutil.copy(tmp_path / "keys" / "real", key)
            key.chmod(0o640)
    env = {**base_cli_env(), "REFEREE_KEY_FILE": str(key)}
    rc, out, err = run_cli(["grade", str(copy)], env=env)
    line = assert_one_line_error(rc, out, err)
    assert str(key) in line and words in line
    # and the runner refuses to start a run it could not seal: no run directory is made
    plan = write_plan(tmp_path / "p.yaml", {"steps": [{"id": "a", "do": "nothing"}]})
    rc, out, err = run_cli(["run", str(plan), "--agent", agent_cmd("honest"), "--out", str(tmp_path / "new-runs")],
                           env=env, cwd=tmp_path)
    assert words in assert_one_line_error(rc, out, err)
    assert not (tmp_path / "new-runs").exists() or not list((tmp_path / "new-runs").rglob("manifest.json"))


def test_the_agent_is_not_told_where_the_key_is(run_plan, signing_key):
    run = run_plan({"name": "env", "steps": [{"id": "a", "do": "nothing"}]}, agent=agent_cmd("envdump"))
    env = json.loads((run.run_dir / "agent" / "a" / "env.json").read_text())
    assert "REFEREE_KEY_FILE" not in env and str(signing_key) not in json.dumps(env)


def test_runners_starting_at_once_make_one_key(tmp_path):
    key = tmp_path / "fresh" / "key"
    code = "from referee.rundir.keys import load_key; print(load_key().key_id)"
    env = {**base_cli_env(), "REFEREE_KEY_FILE": str(key)}
    procs = [subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, text=True)
             for _ in range(6)]
    ids = {p.communicate(timeout=60)[0].strip() for p in procs}
    assert len(ids) == 1 and len(ids.pop()) == 16
    assert sorted(p.name for p in key.parent.iterdir()) == ["key"]  # no temp file left behind
    assert stat.S_IMODE(key.stat().st_mode) == 0o600


# ------------------------------------------------------------ report and audit re-grade


def test_report_and_audit_never_trust_a_results_json_in_the_run_directory(copy, tmp_path):
    forged = {"results_version": 1, "plan": "sealed", "summary": {"PASS": 3, "FAIL": 0, "SKIPPED": 0, "ERROR": 0,
                                                                  "overclaims": 0},
              "steps": [{"id": s, "verdict": "PASS", "reason": "trust me", "validators": [], "claim": None,
                         "overclaim": False} for s in CLEAN]}
    (copy / "results.json").write_text(json.dumps(forged))
    out_file = tmp_path / "audit.jsonl"
    rc, out, err = run_cli(["audit", str(copy), "--out", str(out_file), "--no-progress"], env=base_cli_env())
    assert rc == 0 and "1 PASS, 1 FAIL, 1 SKIPPED, 0 ERROR" in out, (out, err)
    assert [json.loads(line)["run_id"].rsplit("/", 1)[1] for line in out_file.read_text().splitlines()] == ["tidy"]
    rc, out, err = run_cli(["report", str(copy)], env=base_cli_env())
    assert rc == 0, err
    assert verdicts(json.loads((copy / "results.json").read_text())) == CLEAN
    html = (copy / "report.html").read_text()
    assert "trust me" not in html and 'v-FAIL">FAIL' in html and "verified" in html


def test_report_of_a_tampered_run_says_so_and_shows_no_evidence(copy):
    _edit_json(copy / "manifest.json", lambda m: m.update(actor="someone else"))
    rc, out, err = run_cli(["report", str(copy)], env=base_cli_env())
    assert rc == 1 and "SEAL CHECK FAILED" in err
    html = (copy / "report.html").read_text()
    assert "SEAL CHECK FAILED" in html and "manifest.json: sha256 differs from the signed manifest" in html
    assert "Say the secret word" not in html  # not even the plan's words are shown as if they were the run's


# ------------------------------------------------------------ a killed run stays gradeable


def test_a_killed_run_stays_gradeable_and_verifies(tmp_path):
    plan = write_plan(tmp_path / "killed.yaml", {"name": "killed", "steps": [
        {"id": "s1", "do": "SAVE proof.txt done",
         "validators": [{"kind": "text_contains", "evidence": "proof.txt", "text": "done"}]},
        {"id": "s2", "do": "SLEEP 60", "validators": [{"kind": "command_exit_code", "command": "true"}]},
        {"id": "s3", "do": "Never reached.", "validators": [{"kind": "command_exit_code", "command": "true"}]}]})
    out = tmp_path / "runs"
    proc = subprocess.Popen([sys.executable, "-m", "referee.cli.main", "run", str(plan), "--agent",
                             agent_cmd("honest"), "--out", str(out)], cwd=tmp_path, env=base_cli_env(),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        run_dir = None
        while time.monotonic() < deadline:
            found = list(out.glob("killed/*/manifest.json"))
            if found:
                run_dir = found[0].parent
                try:
                    if "s2" in json.loads(found[0].read_text())["steps"]:
                        break
                except ValueError:
                    pass
            time.sleep(0.05)
        else:
            pytest.fail("the run never reached step s2")
        os.kill(proc.pid, signal.SIGKILL)  # the runner dies at once: no finish(), no final seal
        proc.wait(10)
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # and the agent it was running
        except ProcessLookupError:
            pass
        kill_quietly(proc.pid)
    assert run_dir is not None and not (run_dir / "results.json").exists()
    assert json.loads((run_dir / "seal.json").read_text())["final"] is False
    rc, run, _, _ = grade_cli(run_dir)
    assert run["integrity"]["status"] == "verified", run
    assert verdicts(run) == {"s1": "PASS", "s2": "ERROR", "s3": "ERROR"}
    assert "did not finish" in run["steps"][1]["reason"] and "never run" in run["steps"][2]["reason"]


def test_the_seal_holds_at_every_moment_of_every_write(tmp_path, monkeypatch):
    """Kill the writer before each file replacement of a run's writes: what is on disk always verifies."""
    import referee.rundir.seal as seal_mod
    from referee.rundir.keys import load_key

    key = load_key()
    writes = [dict(manifest=b'{"m": 0}', claims=b"{}"), dict(claims=b'{"a": 1}'), dict(manifest=b'{"m": 1}'),
              dict(claims=b'{"a": 2}'), dict(manifest=b'{"m": 2}', durable=True, final=True)]
    real_write = seal_mod.atomic_write_bytes
    total = 0
    for kill_at in range(100):
        d = tmp_path / f"k{kill_at}"
        d.mkdir()
        done = {"n": 0}

        class Killed(Exception):
            pass

        def write(path, data, durable=True, _d=done, _k=kill_at):
            if _d["n"] == _k:
                raise Killed()
            _d["n"] += 1
            real_write(path, data, durable=durable)

        monkeypatch.setattr(seal_mod, "atomic_write_bytes", write)
        sealer = seal_mod.Sealer(d, key, "run")
        sealer.set_plan(b"steps: []\n")
        try:
            for w in writes:
                sealer.write(**w)
            finished = True
        except Killed:
            finished = False
        if (d / "manifest.json").exists():
            chk = seal_mod.check_seal(d, key, manifest=(d / "manifest.json").read_bytes(), plan=b"steps: []\n",
                                      claims=(d / "claims.json").read_bytes())
            assert chk.status == "verified", (kill_at, chk)
            total += 1
        if finished:
            assert json.loads((d / "seal.json").read_text())["final"] is True
            break
    assert total >= 10, total


@pytest.mark.parametrize("name", ["referee.rundir.keys", "referee.rundir.seal", "referee.grader.verify",
                         "referee.core.fsutil",
                                  "referee.report.console", "referee.grader.results"])
def test_doctests(name):
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0 and result.attempted > 0
