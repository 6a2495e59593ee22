"""The `referee/audit` Inspect AI scorer, with the real `inspect_ai` and its scripted mockllm model (no network):
an overclaim is flagged in the log, and `inspect score` re-scores a saved log with it."""

from __future__ import annotations

import math
import os
import shutil
import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path

import pytest

pytest.importorskip("inspect_ai")
pytest.importorskip("zstandard")

from inspect_ai.log import read_eval_log  # noqa: E402

from referee.audit.ingest.readers import read_traces  # noqa: E402
from referee.audit.run.pipeline import audit_trace  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def _env(tmp: Path) -> dict[str, str]:
    # Inspect writes its logs and state under these: all in the test's own folder
    return dict(os.environ, INSPECT_LOG_DIR=str(tmp / "logs"), INSPECT_DISPLAY="none", XDG_DATA_HOME=str(tmp / "xdg"),
                XDG_CACHE_HOME=str(tmp / "xdg-cache"))


@pytest.fixture(scope="module")
def logs(tmp_path_factory) -> dict[str, Path]:
    """`scored`: an eval whose scorers are state_check and referee/audit; `plain`: state_check only."""
    out = tmp_path_factory.mktemp("inspect-audit")
    # its own process and folder: inspect_ai sets up logging and reads a .env from the working directory
    run = subprocess.run([sys.executable, str(ROOT / "tests" / "support" / "inspect_audit_evals.py"), str(out)],
                         capture_output=True, text=True, timeout=240, cwd=out, env=_env(out))
    assert run.returncode == 0, run.stderr[-3000:]
    return {sub: next((out / sub).glob("*.eval")) for sub in ("scored", "plain")}


def _by_id(log) -> dict:
    return {s.id: s for s in log.samples}


def test_an_eval_with_the_scorer_flags_the_overclaim_in_its_log(logs):
    log = read_eval_log(str(logs["scored"]))
    samples = _by_id(log)
    over = samples["overclaim"].scores["audit"]
    assert over.value == "flag" and over.answer == "success"
    # the explanation: the claim cue, the deciding findings with the steps they cite
    assert "was deleted" in over.explanation and "deciding:" in over.explanation and "steps 0" in over.explanation
    record = over.metadata["audit_record"]
    assert record["disposition"] == "flag" and record["task_class"] == "delete"
    assert record["trace_state"] == "not_completed" and record["view_sha256"]
    assert over.metadata["gold_completed"] is False and over.metadata["flag"] == 1.0
    honest = samples["honest"].scores["audit"]
    assert honest.value == "pass" and honest.metadata["gold_completed"] is True and honest.metadata["flag"] == 0.0
    metrics = {s.name: {k: m.value for k, m in s.metrics.items()} for s in log.results.scores}["audit"]
    assert metrics == {"flag_rate": 0.5, "review_load": 0.5, "overclaims_caught": 1.0}


def test_the_scorer_audits_the_sample_as_referee_audit_reads_it_from_the_saved_log(logs):
    """The same reader and pipeline: the record in the score has the view hash and disposition of `referee audit`
    on the saved log (the report never reaches the extractor: the view is claim-blind in both)."""
    scored = {s.id: s.scores["audit"].metadata["audit_record"] for s in read_eval_log(str(logs["scored"])).samples}
    items = [i for i in read_traces(logs["scored"]) if i.trace is not None]
    assert len(items) == 2
    for item in items:
        sid = item.trace.meta["sample_id"]
        offline = audit_trace(item.trace)
        assert (scored[sid]["view_sha256"], scored[sid]["disposition"]) == (offline.view_sha256, offline.disposition)


def test_referee_registers_the_scorer_through_inspects_entry_point():
    eps = {ep.name: ep.value for ep in entry_points(group="inspect_ai")}
    assert eps.get("referee") == "referee.integrations.inspect_scorer"


def test_inspect_score_adds_the_audit_to_a_saved_log(logs, tmp_path):
    log = tmp_path / logs["plain"].name
    shutil.copy(logs["plain"], log)
    assert "audit" not in read_eval_log(str(log)).samples[0].scores
    inspect = Path(sys.executable).with_name("inspect")
    run = subprocess.run([str(inspect), "score", str(log), "--scorer", "referee/audit", "-S", "gold_scorer=state_check",
                          "--action", "append", "--overwrite", "--display", "none"],
                         capture_output=True, text=True, timeout=240, cwd=tmp_path, env=_env(tmp_path))
    assert run.returncode == 0, run.stderr[-3000:]
    rescored = read_eval_log(str(log))
    samples = _by_id(rescored)
    assert samples["overclaim"].scores["audit"].value == "flag"
    assert samples["honest"].scores["audit"].value == "pass"
    assert samples["overclaim"].scores["state_check"].value == "I"  # appended: the log's own scores stay
    metrics = {s.name: {k: m.value for k, m in s.metrics.items()} for s in rescored.results.scores}
    assert metrics["audit"]["overclaims_caught"] == 1.0 and metrics["audit"]["flag_rate"] == 0.5


def test_without_a_gold_scorer_overclaims_caught_is_not_a_number(logs, tmp_path):
    from inspect_ai.scorer import SampleScore

    from referee.integrations.inspect_scorer import overclaims_caught, review_load

    scores = [SampleScore(score=s.scores["audit"].model_copy(update={"metadata": {
        **s.scores["audit"].metadata, "gold_completed": None}})) for s in read_eval_log(str(logs["scored"])).samples]
    assert math.isnan(overclaims_caught()(scores))
    assert review_load()(scores) == 0.5
