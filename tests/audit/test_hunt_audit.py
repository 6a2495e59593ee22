"""Black-box bug hunt on the auditor (`referee audit`, `replay`, `eval`, `eval gold`, `readers`).

Written from README.md, docs/auditor.md, docs/scale.md and docs/evaluation.md and the commands'
`--help` only, never from src/. Each test runs the real CLI in a subprocess on real files in
tmp_path and checks one promise the docs make (or that a user would take for granted) that the
code broke when the test was written:

- a folder walk that meets a symlink loop: one bad item, never an internal error;
- `--gold-out` / `--summary-json` naming the `--out` file must not wipe the audit records;
- `--gold-out` writes one label per run_id, so `referee eval --gold` accepts what it wrote;
- `referee eval gold` on a bad record suggests an option it does not have;
- a SWE-bench `<id>.report.json` that cannot be read is said, not silently dropped with its gold;
- `referee eval gold` takes a folder, as `referee audit` does;
- an out-of-range `--timeout` / `--temperature` is a usage error, not a "bad record" per run;
- one writer per output file holds through a symlink to it;
- `referee readers` says which formats are sniffed as they are;
- a gold CSV saved with a UTF-8 byte-order mark (Excel's "CSV UTF-8") reads;
- a truncated `.eval` log is one bad item about the log, not dozens of "invalid JSON" lines.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.support.llm_stub import LLMStub  # noqa: E402

EXAMPLES = ROOT / "docs" / "examples" / "traces.jsonl"


def cli(*args: str, cwd: Path, timeout: float = 60) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    env.pop("REFEREE_DEBUG", None)
    return subprocess.run([sys.executable, "-m", "referee", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout)


def trace(run_id: str, task: str = "Delete the note groceries.md", report: str = "Deleted groceries.md.",
          **extra) -> dict:
    return {"trace_version": 1, "run_id": run_id, "task": task,
            "steps": [{"action": {"name": "delete_note", "args": {"name": "groceries.md"}},
                       "observation": {"text": "deleted groceries.md"}}],
            "report": report, **extra}


def write_jsonl(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def no_crash(proc: subprocess.CompletedProcess) -> None:
    out = proc.stdout + proc.stderr
    assert "Traceback" not in out and "internal error" not in out, out[-2000:]
    assert proc.returncode != 3, out[-2000:]


# ---- 1. a symlink loop in a walked folder -------------------------------------------------------

def test_a_symlink_loop_in_a_walked_folder_is_a_bad_item_not_an_internal_error(tmp_path):
    """docs/auditor.md "Folders and globs": bad items (an unreadable file, ...) are counted and listed;
    the rest of the folder audits. A link that points at itself (`self -> self`) made the whole audit
    stop with `internal error: RuntimeError: Symlink loop`, exit 3, and nothing written."""
    folder = tmp_path / "nightly"
    folder.mkdir()
    write_jsonl(folder / "t.jsonl", [trace("r1"), trace("r2")])
    (folder / "self").symlink_to("self")
    proc = cli("audit", "nightly", "--out", "audit.jsonl", cwd=tmp_path)
    no_crash(proc)
    lines = (tmp_path / "audit.jsonl").read_text(encoding="utf-8").splitlines()
    assert [json.loads(line)["run_id"] for line in lines] == ["r1", "r2"]


def test_a_link_up_the_tree_is_walked_once_and_a_dangling_trace_link_is_one_bad_item(tmp_path):
    """`a/up -> ..` led the walk down the same folders to the depth limit, reading every file again (each run
    a duplicate of itself); a link named like a trace file whose target is gone was skipped unsaid."""
    folder = tmp_path / "nightly"
    folder.mkdir()
    write_jsonl(folder / "t.jsonl", [trace("r1"), trace("r2")])
    (folder / "up").symlink_to("..")
    (folder / "gone.jsonl").symlink_to("missing.jsonl")
    proc = cli("audit", "nightly", "--out", "audit.jsonl", "--on-error", "skip", cwd=tmp_path)
    no_crash(proc)
    assert proc.returncode == 0 and "duplicate" not in proc.stderr, proc.stderr
    lines = (tmp_path / "audit.jsonl").read_text(encoding="utf-8").splitlines()
    assert [json.loads(line)["run_id"] for line in lines] == ["r1", "r2"]
    assert "gone.jsonl: a link that leads to no file" in proc.stdout + proc.stderr


# ---- 2. --gold-out / --summary-json onto --out ---------------------------------------------------

@pytest.mark.parametrize("option", ["--gold-out", "--summary-json"])
def test_a_side_output_naming_the_out_file_does_not_wipe_the_audit(tmp_path, option):
    """`--out` is append-only and "nothing already done is lost". Giving `--gold-out` (or
    `--summary-json`) the same path as `--out` (a slip when editing a command line) replaced every
    audit record in it with gold labels (or the summary), even records of earlier runs, then failed
    reading its own file: the audit is gone. Expected: a usage error before anything is written, or
    at least the audit file left as it was."""
    write_jsonl(tmp_path / "t.jsonl", [trace("r1"), trace("r2", gold={"completed": False})])
    first = cli("audit", "t.jsonl", "--out", "audit.jsonl", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    before = (tmp_path / "audit.jsonl").read_bytes()
    proc = cli("audit", "t.jsonl", "--out", "audit.jsonl", option, "audit.jsonl", cwd=tmp_path)
    no_crash(proc)
    assert (tmp_path / "audit.jsonl").read_bytes() == before


def test_an_audit_of_its_own_folder_run_again_does_not_read_its_output_and_an_input_is_no_output(tmp_path):
    """`referee audit . --out audit.jsonl`, run a second time (a nightly job), read its own audit.jsonl as traces:
    five bad records and exit 1. And `--out` naming an input file read the traces as earlier audit records."""
    write_jsonl(tmp_path / "t.jsonl", [trace("r1"), trace("r2")])
    for _ in range(2):
        proc = cli("audit", ".", "--out", "audit.jsonl", "--gold-out", "gold.jsonl", "--summary-json", "s.json",
                   cwd=tmp_path)
        no_crash(proc)
        assert proc.returncode == 0 and "bad record" not in proc.stderr, proc.stdout + proc.stderr
    assert "wrote 0 records" in proc.stdout and "2 already there" in proc.stdout
    before = (tmp_path / "t.jsonl").read_bytes()
    proc = cli("audit", "t.jsonl", "--out", "./t.jsonl", "--reaudit-changed", cwd=tmp_path)
    assert proc.returncode == 2 and "given as an input and as --out" in proc.stderr, proc.stderr
    assert (tmp_path / "t.jsonl").read_bytes() == before


# ---- 3. --gold-out and a duplicate run_id ----------------------------------------------------------

def test_gold_out_writes_one_label_per_run_id_so_eval_accepts_it(tmp_path):
    """A run_id that comes again is "audited once, the first time" (docs/auditor.md, Duplicate run_ids),
    but `--gold-out` wrote its gold label twice, and `referee eval --gold` then refuses the file it was
    given by the quick start (`run_id 'r1' is labelled twice`, exit 2)."""
    write_jsonl(tmp_path / "t.jsonl", [trace("r1", gold={"completed": False}),
                                       trace("r2", gold={"completed": True}),
                                       trace("r1", gold={"completed": False})])
    audit = cli("audit", "t.jsonl", "--out", "audit.jsonl", "--gold-out", "gold.jsonl", "--no-progress",
                cwd=tmp_path)
    assert audit.returncode == 0, audit.stderr
    gold_ids = [json.loads(line)["run_id"] for line in (tmp_path / "gold.jsonl").read_text().splitlines()]
    assert sorted(gold_ids) == ["r1", "r2"]
    ev = cli("eval", "audit.jsonl", "--gold", "gold.jsonl", "--no-plot", "--resamples", "0", cwd=tmp_path)
    assert ev.returncode == 0, ev.stderr


# ---- 4. eval gold suggests an option it lacks ----------------------------------------------------

def test_eval_gold_on_a_bad_record_does_not_suggest_an_option_it_lacks(tmp_path):
    """`referee eval gold` stops at a broken line with `...; fix the record or pass --on-error skip`,
    and `referee eval gold ... --on-error skip` is `No such option '--on-error'`: the advice given
    cannot be followed."""
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps(trace("r1", gold={"completed": True})) + "\n" + '{"run_id": "r2", "task": \n'
                    + json.dumps(trace("r3", gold={"completed": False})) + "\n", encoding="utf-8")
    proc = cli("eval", "gold", "t.jsonl", "-o", "gold.jsonl", cwd=tmp_path)
    no_crash(proc)
    if "--on-error" in proc.stderr:
        again = cli("eval", "gold", "t.jsonl", "-o", "gold.jsonl", "--on-error", "skip", cwd=tmp_path)
        assert "No such option" not in again.stderr, again.stderr


# ---- 5. an unreadable SWE-bench report -----------------------------------------------------------

MINI_SWE_MESSAGES = [
    {"role": "system", "content": "You are a helpful assistant."},
    {"role": "user", "content": "<pr_description>\nFix total() in price.py so that the tests pass\n"
                                "</pr_description>\nPlease fix it."},
    {"role": "assistant", "content": "THOUGHT: edit it\n\n```bash\nsed -i 's/- 1//' price.py\n```"},
    {"role": "user", "content": "<returncode>0</returncode>\n<output>\n</output>"},
    {"role": "assistant", "content": "THOUGHT: run the tests\n\n```bash\npython -m pytest -q\n```"},
    {"role": "user", "content": "<returncode>0</returncode>\n<output>\n1 passed\n</output>"},
    {"role": "assistant", "content": "THOUGHT: Done, submitting.\n\n```bash\necho COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"
                                     " && git add -A && git diff --cached\n```"},
]


def test_a_swe_bench_report_that_cannot_be_read_is_named_not_silently_dropped(tmp_path):
    """Gold for mini-swe-agent runs is `resolved` from `<instance_id>.report.json` in `../reports/`.
    A report cut short (a copy interrupted) was silently ignored: no warning, no bad item, exit 0, and
    the run simply has no gold, so `referee eval` scores fewer runs without saying why. The user should
    be told which report file could not be read."""
    (tmp_path / "corpus" / "trajs").mkdir(parents=True)
    (tmp_path / "corpus" / "reports").mkdir()
    for iid in ("acme__widgets-1", "acme__widgets-2"):
        (tmp_path / "corpus" / "trajs" / f"{iid}.traj.json").write_text(json.dumps(
            {"instance_id": iid, "info": {"exit_status": "Submitted", "submission": "diff"},
             "messages": MINI_SWE_MESSAGES}), encoding="utf-8")
    (tmp_path / "corpus" / "reports" / "acme__widgets-1.report.json").write_text(
        json.dumps({"acme__widgets-1": {"resolved": False}}), encoding="utf-8")
    (tmp_path / "corpus" / "reports" / "acme__widgets-2.report.json").write_text(
        '{"acme__widgets-2": {"resolved": tr', encoding="utf-8")
    proc = cli("audit", "corpus", "--out", "audit.jsonl", "--gold-out", "gold.jsonl", cwd=tmp_path)
    no_crash(proc)
    gold = (tmp_path / "gold.jsonl").read_text(encoding="utf-8")
    assert '"acme__widgets-1"' in gold  # the readable report gave its gold
    assert "acme__widgets-2.report.json" in proc.stderr, proc.stderr[-2000:]


# ---- 6. eval gold on a folder ---------------------------------------------------------------------

def test_eval_gold_takes_a_folder_as_audit_does(tmp_path):
    """`referee eval gold TRACES` writes "the gold labels a trace reader finds beside the traces", but
    refused a folder (`File 'corpus' is a directory`) that `referee audit corpus --gold-out` reads: a
    folder of trajectories, and BrowserGym experiment folders or OpenHands sessions, whose gold exists
    only in folders, cannot be given to it at all."""
    (tmp_path / "corpus").mkdir()
    write_jsonl(tmp_path / "corpus" / "a.jsonl", [trace("r1", gold={"completed": True})])
    write_jsonl(tmp_path / "corpus" / "b.jsonl", [trace("r2", gold={"completed": False})])
    audit = cli("audit", "corpus", "--out", "audit.jsonl", "--gold-out", "audit_gold.jsonl", cwd=tmp_path)
    assert audit.returncode == 0, audit.stderr
    proc = cli("eval", "gold", "corpus", "-o", "gold.jsonl", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    got = {json.loads(line)["run_id"]: json.loads(line)["completed"]
           for line in (tmp_path / "gold.jsonl").read_text().splitlines()}
    assert got == {"r1": True, "r2": False}


# ---- 7. out-of-range llm options -----------------------------------------------------------------

@pytest.mark.parametrize("option", [("--timeout", "-1"), ("--temperature", "nan")])
def test_an_out_of_range_llm_option_is_a_usage_error_not_a_bad_record_per_run(tmp_path, option):
    """`--timeout -1` (or `--temperature nan`) with `--backend llm` was accepted; then every run became
    a "bad record" (`run_id r1: could not be audited: ValueError: Timeout value out of range; fix the
    record, or report it if it looks valid`), exit 1: the records are fine, the option is not.
    Expected: one line naming the option, exit 2, before any run is audited."""
    write_jsonl(tmp_path / "t.jsonl", [trace("r1"), trace("r2")])
    with LLMStub(default={"action": {"value": "yes", "support": [0]}}) as stub:
        proc = cli("audit", "t.jsonl", "--backend", "llm", "--base-url", stub.url, "--model", "m",
                   "--samples", "1", "--max-retries", "0", "--out", "audit.jsonl", *option, cwd=tmp_path)
    no_crash(proc)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert option[0] in proc.stderr and "fix the record" not in proc.stderr, proc.stderr[-2000:]


# ---- 8. the lock through a symlink -----------------------------------------------------------------

def test_one_writer_holds_through_a_symlink_to_the_out_file(tmp_path):
    """docs/auditor.md "One writer": a second `referee audit` on the same file stops at once, exit 2.
    Given the same file through a symlink (`latest.jsonl -> nightly.jsonl`), the second audit took its
    lock on `latest.jsonl.lock`, so both wrote into nightly.jsonl: every run was written twice."""
    write_jsonl(tmp_path / "t.jsonl", [trace(f"r{i}", task=f"Delete the note n{i}.md") for i in range(6)])
    (tmp_path / "latest.jsonl").symlink_to("nightly.jsonl")
    answer = {f: {"value": "yes", "support": [0]} for f in
              ("action", "target_id", "transition", "committed", "final_supports_goal")}
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    with LLMStub(default=answer, latency_s=0.4) as stub:
        args = ["audit", "t.jsonl", "--backend", "llm", "--base-url", stub.url, "--model", "m",
                "--samples", "1", "--concurrency", "1"]
        first = subprocess.Popen([sys.executable, "-m", "referee", *args, "--out", "nightly.jsonl"],
                                 cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            deadline = time.monotonic() + 30
            while stub.calls == 0 and time.monotonic() < deadline:  # the first holds its lock by now
                time.sleep(0.05)
            second = cli(*args, "--out", "latest.jsonl", cwd=tmp_path, timeout=60)
        finally:
            first.communicate(timeout=60)
    assert second.returncode == 2, second.stderr[-2000:]
    assert "is being written by another process" in second.stderr
    ids = [json.loads(line)["run_id"] for line in (tmp_path / "nightly.jsonl").read_text().splitlines()]
    assert sorted(ids) == [f"r{i}" for i in range(6)]


# ---- 9. referee readers and sniffing ------------------------------------------------------------

ANTHROPIC = {"run_id": "a1", "system": "You manage files.",
             "tools": [{"name": "delete_file", "input_schema": {}}],
             "messages": [{"role": "user", "content": "Delete the file report-7.txt"},
                          {"role": "assistant", "content": [
                              {"type": "text", "text": "Deleting it now."},
                              {"type": "tool_use", "id": "tu1", "name": "delete_file",
                               "input": {"path": "report-7.txt"}}]},
                          {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "tu1",
                                                        "is_error": True, "content": "permission denied"}]},
                          {"role": "assistant", "content": [{"type": "text", "text": "Deleted report-7.txt."}]}]}


def test_referee_readers_does_not_say_never_sniffed_for_a_format_it_sniffs(tmp_path):
    """README: `referee readers` lists "every log format it reads, and how it tells". It says
    `sniffed: never: only with --format anthropic-messages` (and the same for inspect-ai), yet a file of
    Anthropic Messages records audited without --format is read by that reader (the record is the one
    `--format anthropic-messages` gives, not openai-chat's), as docs/auditor.md's table says."""
    (tmp_path / "a.json").write_text(json.dumps(ANTHROPIC), encoding="utf-8")
    views = {}
    for name, extra in (("sniffed", []), ("anthropic", ["--format", "anthropic-messages"])):
        proc = cli("audit", "a.json", "--out", f"{name}.jsonl", *extra, cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr
        views[name] = json.loads((tmp_path / f"{name}.jsonl").read_text().splitlines()[0])["view_sha256"]
    assert views["sniffed"] == views["anthropic"]
    listing = json.loads(cli("readers", "--json", cwd=tmp_path).stdout)
    sniffs = {r["name"]: r["sniffs"] for r in listing}
    assert not sniffs["anthropic-messages"].startswith("never"), sniffs["anthropic-messages"]


# ---- 10. a gold CSV with a byte-order mark ---------------------------------------------------------

def test_a_gold_csv_saved_with_a_byte_order_mark_reads(tmp_path):
    """Excel's "CSV UTF-8" starts the file with a BOM. Such a gold file was refused with
    `the header row has no run_id column` although its header is `run_id,completed`, which sends the
    user looking for a column that is there. (A BOM trace file audits fine.)"""
    write_jsonl(tmp_path / "t.jsonl", [trace("r1"), trace("r2", report="I could not delete it.")])
    assert cli("audit", "t.jsonl", "--out", "audit.jsonl", cwd=tmp_path).returncode == 0
    (tmp_path / "gold.csv").write_bytes(b"\xef\xbb\xbfrun_id,completed\r\nr1,false\r\nr2,false\r\n")
    proc = cli("eval", "audit.jsonl", "--gold", "gold.csv", "--no-plot", "--resamples", "0", "--json",
               cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["coverage"]["evaluated"] == 2
    # a JSONL gold file saved with a BOM reads the same
    (tmp_path / "gold.jsonl").write_bytes(b"\xef\xbb\xbf" + b"".join(
        json.dumps({"run_id": r, "completed": False}).encode() + b"\n" for r in ("r1", "r2")))
    proc = cli("eval", "audit.jsonl", "--gold", "gold.jsonl", "--no-plot", "--resamples", "0", "--json",
               cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["coverage"]["evaluated"] == 2


# ---- 11. a truncated .eval log ---------------------------------------------------------------------

def test_a_truncated_eval_log_is_one_bad_item_about_the_log(tmp_path):
    """An Inspect AI `.eval` is a zip. One cut short (a copy interrupted, a log still being written) was
    read as JSON text: dozens of `invalid JSON: Expecting value at line N` bad records for the binary
    lines (`... and 22 more`), none saying the log is a damaged zip. Expected: one bad item naming the
    file as an .eval log that cannot be read (or its whole samples read), never JSON errors per line."""
    log = tmp_path / "run.eval"
    with zipfile.ZipFile(log, "w", compression=zipfile.ZIP_DEFLATED) as z:
        z.writestr("_journal/start.json", json.dumps({"version": 2, "eval": {"task": "files"}}))
        for i in range(6):
            z.writestr(f"samples/s{i}_epoch_1.json", json.dumps(
                {"id": f"s{i}", "epoch": 1, "input": "Delete the file x.txt", "messages": [],
                 "output": {"completion": "Deleted."}, "pad": os.urandom(3000).hex()}))
    data = log.read_bytes()
    log.write_bytes(data[: len(data) // 2])
    proc = cli("audit", "run.eval", "--out", "audit.jsonl", "--summary-json", "s.json", cwd=tmp_path)
    no_crash(proc)
    assert "invalid JSON" not in proc.stderr, proc.stderr[-1500:]
    assert len(json.loads((tmp_path / "s.json").read_text())["errors"]) == 1


# ---- 12. a newline in a run_id on the console --------------------------------------------------------

def test_a_newline_in_a_run_id_never_makes_a_line_of_its_own_on_the_console(tmp_path):
    """docs/security.md: the agent's text "is escaped wherever it is shown (control characters on the
    console)"; security-files.md: "a newline in a file name cannot make a second line". A trace whose
    run_id holds a newline printed it raw, in the list of runs to look at (stdout) and in the
    skipped-record warning (stderr), so a hostile trace can forge a line of the summary such as
    `other-run  [pass] ...`."""
    forged = "FORGED-LINE  [pass] delete  claim: success"
    write_jsonl(tmp_path / "t.jsonl", [trace("r1\n" + forged, task="Delete note N1", report="Done."),
                                       {"run_id": "r2\n" + forged, "task": 5, "steps": [], "report": "Done."}])
    proc = cli("audit", "t.jsonl", "--out", "audit.jsonl", "--show", "all", cwd=tmp_path)
    no_crash(proc)
    assert (tmp_path / "audit.jsonl").read_text().count("\n") == 1  # r1 audited, r2 a bad record
    for stream in (proc.stdout, proc.stderr):
        assert not any(line.startswith("FORGED-LINE") for line in stream.splitlines()), stream


# ---- minor: folders given as output files ------------------------------------------------------------

@pytest.mark.parametrize("option", ["--out", "--gold-out", "--summary-json", "--cache"])
def test_an_output_that_is_a_folder_is_one_line_and_leaves_nothing_behind(tmp_path, option):
    """`--gold-out DIR` named a temp file in its error; `audit --out DIR` made DIR.cache.sqlite and DIR.lock
    before failing."""
    write_jsonl(tmp_path / "t.jsonl", [trace("r1")])
    (tmp_path / "dd").mkdir()
    args = ["audit", "t.jsonl", "--out", "audit.jsonl", option, "dd"] if option != "--out" else \
        ["audit", "t.jsonl", "--out", "dd"]
    before = sorted(p.name for p in tmp_path.iterdir())
    proc = cli(*args, cwd=tmp_path)
    no_crash(proc)
    assert proc.returncode == 2 and f"dd: {option} is a folder; give {option} a file name" in proc.stderr, \
        proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == before and not any((tmp_path / "dd").iterdir())


def test_replay_to_a_folder_or_of_a_bad_file_leaves_no_half_file(tmp_path):
    """`replay --out DIR` left DIR.tmp behind; so did a replay that stopped at a bad record."""
    write_jsonl(tmp_path / "t.jsonl", [trace("r1"), trace("r2")])
    assert cli("audit", "t.jsonl", "--out", "audit.jsonl", cwd=tmp_path).returncode == 0
    (tmp_path / "dd").mkdir()
    proc = cli("replay", "audit.jsonl", "--out", "dd", cwd=tmp_path)
    assert proc.returncode == 2 and "--out is a folder" in proc.stderr, proc.stderr
    assert not (tmp_path / "dd.tmp").exists()
    bad = tmp_path / "bad.jsonl"
    bad.write_text((tmp_path / "audit.jsonl").read_text().splitlines()[0] + "\n{not a record\n")
    (tmp_path / "out.jsonl").write_text("kept\n")
    proc = cli("replay", "bad.jsonl", "--out", "out.jsonl", cwd=tmp_path)
    no_crash(proc)
    assert proc.returncode == 2, proc.stderr
    assert (tmp_path / "out.jsonl").read_text() == "kept\n" and not (tmp_path / "out.jsonl.tmp").exists()


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le", "utf-32"])
def test_a_utf16_or_utf32_trace_file_is_one_line_that_says_so(tmp_path, encoding):
    """A trace file saved as UTF-16 (Windows tools) gave `invalid JSON: Expecting value` with no word of the
    encoding; one bad item that names it and how to convert is what a user can act on."""
    text = "".join(json.dumps(trace(f"r{i}")) + "\n" for i in range(120))
    (tmp_path / "t.jsonl").write_bytes(text.encode(encoding))
    for workers in ("1", "2"):
        proc = cli("audit", "t.jsonl", "--out", f"a{workers}.jsonl", "--workers", workers, "--chunk-size", "50",
                   "--summary-json", f"s{workers}.json", cwd=tmp_path)
        no_crash(proc)
        errors = json.loads((tmp_path / f"s{workers}.json").read_text())["errors"]
        assert len(errors) == 1 and f"{encoding[:6].upper()} text, not UTF-8" in errors[0], errors


def test_eval_names_the_empty_audit_file_and_an_unknown_breakdown_method(tmp_path):
    """`eval` of an empty audit file blamed the gold file; `--breakdown-for nosuch` was accepted silently."""
    write_jsonl(tmp_path / "t.jsonl", [trace("r1", gold={"completed": True})])
    assert cli("audit", "t.jsonl", "--out", "audit.jsonl", "--gold-out", "gold.jsonl", cwd=tmp_path).returncode == 0
    (tmp_path / "empty.jsonl").write_text("")
    proc = cli("eval", "empty.jsonl", "--gold", "gold.jsonl", "--no-plot", cwd=tmp_path)
    assert proc.returncode == 2 and "empty.jsonl: the audit file holds no audit record" in proc.stderr, proc.stderr
    proc = cli("eval", "audit.jsonl", "--gold", "gold.jsonl", "--no-plot", "--breakdown-for", "auditr",
               "--resamples", "0", cwd=tmp_path)
    assert proc.returncode == 2 and "did you mean 'auditor'?" in proc.stderr, proc.stderr


def test_an_include_that_matches_nothing_says_so(tmp_path):
    """`--include` matching nothing wrote 0 records and exited 0: a typo in a nightly job passed unnoticed."""
    (tmp_path / "runs").mkdir()
    write_jsonl(tmp_path / "runs" / "t.jsonl", [trace("r1")])
    proc = cli("audit", "runs", "--include", "nomatch*", "--out", "audit.jsonl", cwd=tmp_path)
    assert proc.returncode == 2 and "--include nomatch* matches no file or run folder in runs" in proc.stderr
    assert not (tmp_path / "audit.jsonl").exists()
    proc = cli("audit", "runs", "--include", "t.*", "--out", "audit.jsonl", cwd=tmp_path)
    assert proc.returncode == 0 and len((tmp_path / "audit.jsonl").read_text().splitlines()) == 1


def test_a_damaged_line_in_out_is_said_on_resume_not_silently_reaudited(tmp_path):
    write_jsonl(tmp_path / "t.jsonl", [trace("r1"), trace("r2"), trace("r3")])
    assert cli("audit", "t.jsonl", "--out", "audit.jsonl", cwd=tmp_path).returncode == 0
    lines = (tmp_path / "audit.jsonl").read_text().splitlines()
    lines[1] = lines[1][:40] + "#" + lines[1][41:]  # a byte flipped in the middle of the file
    (tmp_path / "audit.jsonl").write_text("\n".join(lines) + "\n")
    proc = cli("audit", "t.jsonl", "--out", "audit.jsonl", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "audit.jsonl: line 2: no audit record (damaged?)" in proc.stderr and "wrote 1 records" in proc.stdout


def test_a_glob_that_matches_a_dangling_link_or_a_loop_is_one_bad_item_each(tmp_path):
    """A quoted glob that matched a dangling link stopped the whole audit (`check the path and that you may
    write there`); one that matched a link loop blamed a run directory."""
    (tmp_path / "gl").mkdir()
    write_jsonl(tmp_path / "gl" / "a.jsonl", [trace("r1")])
    (tmp_path / "gl" / "b.jsonl").symlink_to("nothere.jsonl")
    (tmp_path / "gl" / "c.jsonl").symlink_to("c.jsonl")
    proc = cli("audit", "gl/*.jsonl", "--out", "audit.jsonl", "--summary-json", "s.json", cwd=tmp_path)
    no_crash(proc)
    assert proc.returncode == 1 and len((tmp_path / "audit.jsonl").read_text().splitlines()) == 1
    errors = json.loads((tmp_path / "s.json").read_text())["errors"]
    assert [e.split(":")[0] for e in errors] == ["gl/b.jsonl", "gl/c.jsonl"]
    assert all("a link that leads to no file" in e for e in errors)
