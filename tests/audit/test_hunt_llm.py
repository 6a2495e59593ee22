"""Black-box bug hunt on the `llm` backend and claim reader, plugins and `referee eval`'s subcommands.

Written from README.md, docs/auditor.md, docs/plugins.md, docs/scale.md, docs/evaluation.md and the
commands' `--help` only, never from src/. Each test runs the real CLI in a subprocess against real
files in tmp_path and, where a model is asked, an OpenAI-compatible server on 127.0.0.1 that the test
starts (`tests/support/llm_stub.py`). Each checks one promise the docs make (or that a user would take
for granted) that the code broke when the test was written:

- a model's citation given as a string of digits ("10") is not read digit by digit into valid steps;
- a model answer nested too deep for `json` is an unusable answer, not a "bad record" of the trace;
- a `--base-url` that is no http(s) URL is a one-line usage error, not an internal error or minutes
  of retries that end in a file of failed records;
- the llm claim reader asks one distinct report once, whatever `--concurrency` is;
- an extractor plugin that raises on one trace costs that trace, not the rest of the audit;
- a backend factory that raises is a one-line error naming the plugin, not an internal error;
- a server that mislabels its body (`Content-Encoding: gzip` on plain JSON) is an unusable answer;
- `referee eval intervention --resamples 0` prints no intervals;
- `referee eval intervention` says when its judge never answered, rather than scoring the failures;
- `referee eval --plot report.pdf` does not write PNG bytes into a `.pdf` file.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.support.incli import completed  # noqa: E402
from tests.support.llm_stub import LLMStub, Status  # noqa: E402

EXAMPLES = ROOT / "docs" / "examples" / "traces.jsonl"
FIELDS = ("action", "target_id", "transition", "committed", "final_supports_goal")
YES = {f: {"value": "yes", "support": [0]} for f in FIELDS}


def cli(*args: str, cwd: Path, timeout: float = 60, extra_path: str | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (extra_path, str(ROOT / "src")) if p),
           "OPENAI_API_KEY": "test-key"}
    env.pop("REFEREE_DEBUG", None)
    return completed(args, cwd=cwd, env=env)  # in a child where extra_path must be importable


def trace(run_id: str, task: str = "Delete the note named groceries.md in Markor",
          report: str = "Done - groceries.md was deleted.") -> dict:
    return {"trace_version": 1, "run_id": run_id, "task": task,
            "steps": [{"action": {"name": "list_notes", "args": {}}, "observation": {"text": "groceries.md, todo.md"}},
                      {"action": {"name": "delete_note", "args": {"name": "groceries.md"}},
                       "observation": {"text": "deleted groceries.md"}}],
            "report": report}


def write_jsonl(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []


def llm_audit(tmp_path: Path, url: str, traces: Path, *extra: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return cli("audit", str(traces), "--backend", "llm", "--base-url", url, "--model", "m",
               "--out", str(tmp_path / "a.jsonl"), "--samples", "1", "--no-progress", *extra,
               cwd=tmp_path, timeout=timeout)


# ============================================================ the llm backend against odd answers and servers


def test_a_support_given_as_a_string_of_digits_is_not_read_digit_by_digit(tmp_path):
    # The model cites step "10" of a two-step trace: no such step, so no `yes` may stand on it
    # (docs/auditor.md: "a `yes` without a valid citation counts as `unknown`"). It was read as the
    # characters '1' and '0', i.e. steps [1, 0], both valid: a `yes` on citations the model never made.
    traces = write_jsonl(tmp_path / "t.jsonl", [trace("r1")])
    with LLMStub(default={f: {"value": "yes", "support": "10"} for f in FIELDS}) as stub:
        run = llm_audit(tmp_path, stub.url, traces, "--max-retries", "0")
    assert run.returncode == 0, run.stderr
    [rec] = records(tmp_path / "a.jsonl")
    cited = {f: (rec["evidence"][0][f]["value"], rec["evidence"][0][f]["support"]) for f in FIELDS}
    assert all(value != "yes" for value, _ in cited.values()), cited
    assert rec["trace_state"] != "completed", cited


def test_a_model_answer_nested_too_deep_is_an_unusable_answer_not_a_bad_record(tmp_path):
    # A model in a degenerate loop answers "[[[[...]]]]". docs/auditor.md: a malformed answer or one
    # without a JSON object is all `unknown`, listed in the record's `errors`, never cached. Instead
    # `json` hit its recursion limit and the *trace* was skipped as a bad record ("fix the record"),
    # exit 1, with no record written.
    traces = write_jsonl(tmp_path / "t.jsonl", [trace("r1")])
    with LLMStub(default="[" * 1200 + "]" * 1200) as stub:
        run = llm_audit(tmp_path, stub.url, traces, "--max-retries", "0")
    assert "RecursionError" not in run.stderr and "fix the record" not in run.stderr, run.stderr
    assert run.returncode == 0, run.stderr
    [rec] = records(tmp_path / "a.jsonl")
    assert rec["trace_state"] == "unknown" and rec["errors"], rec


@pytest.mark.parametrize("url", ["http://[::1", "127.0.0.1:{port}/v1"])
def test_a_base_url_that_is_no_http_url_is_a_one_line_usage_error(tmp_path, url):
    # A typo in --base-url is a user mistake: one line, exit 2, nothing written (HELPERS/DESIGN: no
    # traceback, the CLI names the fix). "http://[::1" was "referee: internal error: InvalidURL",
    # exit 3; a URL without its scheme was retried with backoff on every call (about 40 s for five
    # traces) and ended in exit 0 with every record "unknown".
    from tests.conftest import free_port

    traces = write_jsonl(tmp_path / "t.jsonl", [trace(f"r{i}") for i in range(3)])
    run = cli("audit", str(traces), "--backend", "llm", "--base-url", url.format(port=free_port()),
              "--model", "m", "--out", str(tmp_path / "a.jsonl"), "--max-retries", "0", "--no-progress",
              cwd=tmp_path, timeout=60)
    assert run.returncode == 2, (run.returncode, run.stderr, run.stdout[-300:])
    assert "internal error" not in run.stderr and "base-url" in run.stderr, run.stderr
    assert len(run.stderr.strip().splitlines()) == 1, run.stderr
    assert not records(tmp_path / "a.jsonl")


def test_the_llm_claim_reader_asks_one_distinct_report_once_whatever_the_concurrency(tmp_path):
    # docs/auditor.md: "`llm`: one call per distinct report". Forty traces carry the same report; with
    # --concurrency 20 the reader asked it 20 times (up to --concurrency times: tokens paid for nothing).
    traces = write_jsonl(tmp_path / "t.jsonl", [trace(f"r{i}", task=f"Delete the note n{i}.md") for i in range(40)])
    with LLMStub(default={"label": "success", "cue": "done"}, latency_s=0.2) as stub:
        run = cli("audit", str(traces), "--claims", "llm", "--base-url", stub.url, "--model", "m",
                  "--out", str(tmp_path / "a.jsonl"), "--concurrency", "20", "--workers", "1", "--no-progress",
                  cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert len(records(tmp_path / "a.jsonl")) == 40
    assert stub.calls == 1, f"one report asked {stub.calls} times"


def test_a_server_that_mislabels_its_body_as_gzip_is_an_unusable_answer_not_an_internal_error(tmp_path):
    # A proxy that adds `Content-Encoding: gzip` to a plain body: a malformed response, so the sample
    # is `unknown` and listed in `errors` (docs/auditor.md). It was "referee: internal error:
    # DecodingError", exit 3, and the audit stopped with no record.
    envelope = json.dumps({"choices": [{"message": {"role": "assistant", "content": json.dumps(YES)}}]})
    traces = write_jsonl(tmp_path / "t.jsonl", [trace("r1"), trace("r2", task="Delete the note b.md")])
    with LLMStub(default=Status(200, envelope, headers=(("Content-Encoding", "gzip"),))) as stub:
        run = llm_audit(tmp_path, stub.url, traces, "--max-retries", "0")
    assert "internal error" not in run.stderr, run.stderr
    assert run.returncode == 0, run.stderr
    recs = records(tmp_path / "a.jsonl")
    assert [r["run_id"] for r in recs] == ["r1", "r2"]
    assert all(r["trace_state"] == "unknown" and r["errors"] for r in recs)


# ============================================================ plugins


PLUGIN = '''
from dataclasses import dataclass

from referee.audit.records import FINDING_FIELDS, Finding


@dataclass(frozen=True)
class Brittle:
    """Fails on one trace, as a plugin does when its own library gives up (a RuntimeError); a KeyError or a
    ValueError there was already one bad record, a RuntimeError ended the audit."""

    name: str = "brittle"
    model: str | None = None
    prompt_version: str = "1"

    def extract(self, view, sample=0):
        if "n1.md" in str(view.task):
            raise RuntimeError("tokenizer failed on this input")
        return {f: Finding(value="yes", support=[1]) for f in FINDING_FIELDS}


class NeedsAGpu:
    name = "needs-gpu"
    model = None
    prompt_version = "1"

    def __init__(self):
        raise RuntimeError("cannot start: no GPU found")

    def extract(self, view, sample=0):
        return {}
'''


def plugin_site(tmp_path: Path) -> str:
    site = tmp_path / "site"
    dist = site / "referee_hunt_plugin-0.1.dist-info"
    dist.mkdir(parents=True)
    (site / "referee_hunt_plugin.py").write_text(textwrap.dedent(PLUGIN))
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: referee-hunt-plugin\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[referee.extractors]\nbrittle = referee_hunt_plugin:Brittle\n"
                                           "needs-gpu = referee_hunt_plugin:NeedsAGpu\n")
    return str(site)


def test_an_extractor_plugin_that_raises_on_one_trace_costs_that_trace_not_the_audit(tmp_path):
    # A claim-reader plugin that raises makes that run one bad record, and the rest is audited. An
    # extractor plugin that raised on the second of three traces ended the whole audit with
    # "referee: internal error: RuntimeError ... please report it", exit 3, even with --on-error skip:
    # the third trace was never audited, and no resume can get past the second.
    traces = write_jsonl(tmp_path / "t.jsonl",
                         [trace(f"r{i}", task=f"Delete the note n{i}.md") for i in range(3)])
    run = cli("audit", str(traces), "--backend", "brittle", "--workers", "1", "--on-error", "skip",
              "--out", str(tmp_path / "a.jsonl"), "--no-progress", cwd=tmp_path, extra_path=plugin_site(tmp_path))
    assert "internal error" not in run.stderr, run.stderr
    assert run.returncode == 0, run.stderr
    assert [r["run_id"] for r in records(tmp_path / "a.jsonl")] == ["r0", "r2"]
    assert "r1" in run.stderr + run.stdout


def test_a_backend_factory_that_raises_is_one_line_naming_the_plugin(tmp_path):
    # docs/plugins.md: what an entry point gives that is not a backend "stops the command with one line
    # naming the entry point, its distribution ... (exit 2)". A factory that raises as it is built was
    # "referee: internal error: RuntimeError: cannot start: no GPU found ... please report it", exit 3:
    # it blames referee and names no plugin.
    traces = write_jsonl(tmp_path / "t.jsonl", [trace("r0")])
    run = cli("audit", str(traces), "--backend", "needs-gpu", "--workers", "1", "--out", str(tmp_path / "a.jsonl"),
              "--no-progress", cwd=tmp_path, extra_path=plugin_site(tmp_path))
    assert run.returncode == 2, run.stderr
    assert "internal error" not in run.stderr and "needs-gpu" in run.stderr and "no GPU" in run.stderr, run.stderr
    assert len(run.stderr.strip().splitlines()) == 1, run.stderr


# ============================================================ referee eval


def _audit_examples(tmp_path: Path) -> tuple[Path, Path]:
    audit, gold = tmp_path / "audit.jsonl", tmp_path / "gold.jsonl"
    run = cli("audit", str(EXAMPLES), "--out", str(audit), "--gold-out", str(gold), "--workers", "1",
              "--no-progress", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    return audit, gold


def _judge(body: dict) -> dict:
    # the judge finds the failure only in the calendar trace, whatever it is shown
    return {"trace_state": "not_completed" if "calendar" in json.dumps(body.get("messages")) else "completed"}


def test_eval_intervention_with_resamples_zero_prints_no_intervals(tmp_path):
    # `--resamples 0` is documented as "(0: no intervals)" and `referee eval report` honours it
    # ("intervals: none"); `eval intervention` still bootstrapped: "0.33 [0.00, 1.00]".
    audit, gold = _audit_examples(tmp_path)
    with LLMStub(handler=_judge) as stub:
        run = cli("eval", "intervention", str(EXAMPLES), "--gold", str(gold), "--audit", str(audit), "--model", "m",
                  "--base-url", stub.url, "--votes", "1", "--cache-dir", str(tmp_path / "c"), "--resamples", "0",
                  "--json", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    rep = json.loads(run.stdout)
    aware = rep["trace_only_recall_aware"]
    assert aware["value"] == pytest.approx(1 / 3)
    assert aware["lo"] is None and aware["hi"] is None, aware


def test_eval_intervention_says_when_the_judge_never_answered(tmp_path):
    # Every judge call fails (HTTP 500). The report printed trace-only recall 0.00, a shift of +0.0 pp
    # and 0 flips, exit 0, with not a word that no judge call was answered: failures scored as findings.
    audit, gold = _audit_examples(tmp_path)
    with LLMStub(default=Status(500)) as stub:
        run = cli("eval", "intervention", str(EXAMPLES), "--gold", str(gold), "--audit", str(audit), "--model", "m",
                  "--base-url", stub.url, "--votes", "1", "--cache-dir", str(tmp_path / "c"), "--resamples", "0",
                  "--max-retries", "1", cwd=tmp_path, timeout=120)
    assert stub.calls > 0
    said = run.stdout + run.stderr
    assert run.returncode != 0 or re.search(r"\b(failed|no answer|unanswered|unusable|errors?)\b", said, re.I), said
    made = re.search(r"no judge call was answered \((\d+) made\)", said)
    if made:  # --max-retries 1: every call was asked twice, no more
        assert stub.calls == 2 * int(made.group(1)), (stub.calls, said)


def test_eval_plot_named_pdf_is_not_a_png_in_disguise(tmp_path):
    # `--plot FILE` with a .pdf name wrote PNG bytes into report.pdf (a viewer then refuses it). Either
    # the file is what its name says, or the command says it only writes PNG.
    pytest.importorskip("matplotlib")
    audit, gold = _audit_examples(tmp_path)
    plot = tmp_path / "tradeoff.pdf"
    run = cli("eval", str(audit), "--gold", str(gold), "--resamples", "0", "--no-policies", "--plot", str(plot),
              cwd=tmp_path)
    if run.returncode == 2:
        assert "png" in run.stderr.lower() and not plot.exists(), run.stderr
    else:
        assert run.returncode == 0, run.stderr
        assert plot.read_bytes()[:5] == b"%PDF-", plot.read_bytes()[:8]


def test_eval_split_by_task_with_no_task_text_does_not_claim_a_task_check(tmp_path):
    (tmp_path / "sp.csv").write_text("run_id,split\na,dev\nb,test\n")
    run = cli("eval", "split", "sp.csv", "--by-task", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert "no run_id or task in two splits" not in run.stdout and "tasks not checked" in run.stdout, run.stdout


def test_a_predictions_file_with_a_run_twice_or_none_is_one_line(tmp_path):
    audit, gold = _audit_examples(tmp_path)
    (tmp_path / "p.jsonl").write_text('{"run_id": "del-ok", "disposition": "pass"}\n'
                                      '{"run_id": "del-ok", "disposition": "flag"}\n')
    (tmp_path / "e.jsonl").write_text("")
    for name, words in (("p.jsonl", "has a second prediction"), ("e.jsonl", "no prediction in the file")):
        run = cli("eval", str(audit), "--gold", str(gold), "--no-plot", "--resamples", "0",
                  "--predictions", f"other={tmp_path / name}", cwd=tmp_path)
        assert run.returncode == 2 and words in run.stderr, run.stderr


def test_a_json_answer_with_no_evidence_field_is_unusable_and_never_cached(tmp_path):
    # docs/auditor.md: a call with no usable answer is all `unknown`, listed in the record's `errors`, and never
    # cached. A JSON object that answers none of the fields ({"foo": "bar", "transition": 42}) was cached as a real
    # answer: the run after the server recovered kept its all-`unknown` evidence and asked nothing (a black-box
    # tester's case).
    traces = write_jsonl(tmp_path / "t.jsonl", [trace("r1")])
    with LLMStub(default={"foo": "bar", "transition": 42}) as stub:
        run = llm_audit(tmp_path, stub.url, traces, "--max-retries", "0")
    assert run.returncode == 0, run.stderr
    [rec] = records(tmp_path / "a.jsonl")
    assert any("no evidence field answered" in e for e in rec["errors"]), rec["errors"]
    (tmp_path / "a.jsonl").unlink()  # the cache beside it stays: a second audit finds there only what was parsed
    with LLMStub(default={f: {"value": "yes", "support": [0]} for f in FIELDS}) as stub:
        run = llm_audit(tmp_path, stub.url, traces, "--max-retries", "0")
        asked = stub.calls
    assert run.returncode == 0, run.stderr
    [rec] = records(tmp_path / "a.jsonl")
    assert asked >= 1 and not rec["errors"], (asked, rec["errors"])
    assert all(rec["evidence"][0][f]["value"] == "yes" for f in FIELDS), rec["evidence"][0]
