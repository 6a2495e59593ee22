"""`referee audit`'s inputs: folders with links, globs, --include, encodings, logs and reports it cannot read.

Each test runs the CLI on real files in tmp_path and checks one promise the docs make (README.md, docs/auditor.md,
docs/scale.md, docs/evaluation.md), or that a user would take for granted, that the code once broke (found by a
black-box hunt written from the docs and `--help` only).
"""

from __future__ import annotations

import json
import os
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.support.cli_files import cli, no_crash, trace, write_jsonl  # noqa: E402

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


def test_an_include_that_matches_nothing_says_so(tmp_path):
    """`--include` matching nothing wrote 0 records and exited 0: a typo in a nightly job passed unnoticed."""
    (tmp_path / "runs").mkdir()
    write_jsonl(tmp_path / "runs" / "t.jsonl", [trace("r1")])
    proc = cli("audit", "runs", "--include", "nomatch*", "--out", "audit.jsonl", cwd=tmp_path)
    assert proc.returncode == 2 and "--include nomatch* matches no file or run folder in runs" in proc.stderr
    assert not (tmp_path / "audit.jsonl").exists()
    proc = cli("audit", "runs", "--include", "t.*", "--out", "audit.jsonl", cwd=tmp_path)
    assert proc.returncode == 0 and len((tmp_path / "audit.jsonl").read_text().splitlines()) == 1


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
