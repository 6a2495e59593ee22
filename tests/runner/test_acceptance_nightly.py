"""Blind acceptance tests of the nightly runner (issue 34), written from the issue and the docs only.

The app under test (acceptance_nightly/app.py: a JSON API over sqlite and one HTML page on
127.0.0.1) and a scripted agent (acceptance_nightly/agent.py: honest on some steps; lying,
crashing, timing out or flooding stderr on others, as a JSON script file says) are our own.
A product gap is kept as a strict xfail whose reason starts with "FINDING n".
"""

from __future__ import annotations

import hashlib
import html
import json
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from xml.sax.saxutils import unescape as xml_unescape

import pytest
from click.testing import CliRunner

from referee.cli.main import main
from tests.support.signals import default_stop_signals

HERE = Path(__file__).parent / "acceptance_nightly"
APP = HERE / "app.py"
AGENT = HERE / "agent.py"
STAMP = re.compile(r"\d{8}T\d{6}Z(?:-\d+)?")  # two runs in one second: the second is <stamp>-1

# Nights of the "Done when" plan: flaky_add passes on odd nights, fixed_step only on night 4,
# and stable takes 3 s longer on night 4 (a duration trend).
HONEST = {"claim": {"pass": True, "note": "did it"}}
LIE = {"claim": {"pass": True, "note": "did it (not really)"}}
WEAK = "      - {kind: http_status_eq, url: /health, expected: 200}\n"  # holds whatever the agent did


def honest_add(title: str) -> dict[str, Any]:
    return {"add": title, **HONEST}


def night_script(night: int) -> dict[str, Any]:
    return {
        "stable": {**honest_add("stable"), "sleep": 3.0 if night == 4 else 0.0},
        "flaky_add": honest_add("flaky") if night % 2 else LIE,
        "fixed_step": honest_add("fixed") if night == 4 else LIE,
    }


@dataclass(frozen=True)
class Kit:
    """A folder with plans, agent scripts and runs; the helpers write and run them."""

    root: Path

    def write(self, name: str, text: str) -> Path:
        path = self.root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        path.chmod(0o644)
        return path

    def agent(self, name: str, script: dict[str, Any]) -> str:
        path = self.write(f"{name}.script.json", json.dumps(script))
        return f'"{sys.executable}" "{AGENT}" "{path}"'

    def app(self, db: str = "", extra: str = "") -> str:
        db = db or str(self.root / "app.db")
        return f'"{sys.executable}" "{APP}" --port {{port}} --db {db} {extra}'.rstrip()

    def plan(self, name: str, steps: str, app: str = "", top: str = "", file: str = "") -> Path:
        start = app or self.app(str(self.root / f"{name}.db"))
        text = (
            f"name: {name}\n{top}"
            f"app:\n  start: '{start}'\n  url: 'http://127.0.0.1:{{port}}'\n  ready: /health\n"
            f"steps:\n{steps}"
        )
        return self.write(file or f"{name}.yaml", text)


@dataclass(frozen=True)
class Ran:
    exit_code: int
    output: str
    exception: BaseException | None


def invoke(*args: object) -> Ran:
    """`referee ARGS` in-process, through `main()` (the console script), which turns every failure
    into one line and an exit code; click's CliRunner gives it a non-TTY stdout."""
    with CliRunner().isolation() as streams:
        try:
            code = main([str(a) for a in args])
            error = None
        except SystemExit as stop:  # click's own usage errors
            code, error = int(stop.code or 0), None
    return Ran(code, streams[-1].getvalue().decode("utf-8", "replace"), error)


def said(result: Ran) -> str:
    """The output and, for an unexpected crash, the exception: for assertion messages."""
    return result.output + (f"\n{result.exception!r}" if result.exception else "")


def only_runs(plan_dir: Path) -> list[Path]:
    return sorted(p for p in plan_dir.iterdir() if STAMP.fullmatch(p.name) and not p.is_symlink())


def strings(obj: Any) -> Iterator[str]:
    if isinstance(obj, str):
        yield obj
    elif isinstance(obj, dict):
        for value in obj.values():
            yield from strings(value)
    elif isinstance(obj, list):
        for value in obj:
            yield from strings(value)


def find_key(obj: Any, key: str) -> list[Any]:
    """Every value stored under `key`, anywhere in a JSON document."""
    found: list[Any] = []
    if isinstance(obj, dict):
        for k, value in obj.items():
            if k == key:
                found.append(value)
            found.extend(find_key(value, key))
    elif isinstance(obj, list):
        for value in obj:
            found.extend(find_key(value, key))
    return found


def step_of(results: dict[str, Any], step_id: str) -> dict[str, Any]:
    for step in find_key(results, "steps")[0]:
        if step.get("id", step.get("step_id", step.get("step"))) == step_id:
            return step
    raise AssertionError(f"no step {step_id} in results.json")


def verdict_of(results: dict[str, Any], step_id: str) -> str:
    return str(step_of(results, step_id)["verdict"])


def page_text(path: Path) -> str:
    """An HTML page's text: tags dropped, entities decoded, whitespace folded."""
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", path.read_text())))


def reason_with(run_dir: Path, marker: str) -> str:
    """The one reason of results.json that contains `marker`."""
    results = json.loads((run_dir / "results.json").read_text())
    hits = sorted({s for s in strings(results) if marker in s}, key=len)
    assert hits, f"no reason with {marker!r} in results.json"
    return hits[0]


@pytest.fixture(scope="module")
def kit(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kit]:
    root = tmp_path_factory.mktemp("nightly")
    # The agent runs as another user or in a sandbox; the runner picks the isolation it can give.
    root.chmod(0o755)
    keys = tmp_path_factory.mktemp("keys")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("REFEREE_KEY_FILE", str(keys / "key"))
        mp.delenv("APP_DB", raising=False)
        yield Kit(root)


NIGHTLY_STEPS = """\
  - id: stable
    do: Add a note titled stable.
    validators:
      - {kind: http_status_eq, url: /api/notes/stable, expected: 200}
  - id: flaky_add
    do: Add a note titled flaky.
    validators:
      - {kind: http_status_eq, url: /api/notes/flaky, expected: 200}
  - id: fixed_step
    do: Add a note titled fixed.
    validators:
      - {kind: http_status_eq, url: /api/notes/fixed, expected: 200}
"""


@dataclass(frozen=True)
class Nights:
    out: Path
    plan_dir: Path
    runs: list[Path]  # the four complete nights, in order
    partial: Path  # an --only run between nights 2 and 3
    results: list[Ran]  # nights 1..4
    partial_result: Ran
    json_night3: dict[str, Any]


@pytest.fixture(scope="module")
def nights(kit: Kit) -> Nights:
    """One plan run on four nights (and a partial --only run between nights 2 and 3)."""
    plan = kit.plan("nightly", NIGHTLY_STEPS)
    out = kit.root / "runs"
    results: list[Ran] = []
    partial_result = None
    json_night3: dict[str, Any] = {}
    for night in (1, 2, 3, 4):
        agent = kit.agent(f"night{night}", night_script(night))
        if night == 3:
            partial_result = invoke("run", plan, "--agent", agent, "--out", out, "--only", "stable")
            assert partial_result.exit_code == 0, said(partial_result)
            result = invoke("run", plan, "--agent", agent, "--out", out, "--json")
            # the JSON document starts on a line of its own: a FAIL reason on stderr above it may quote a body's "{"
            start = re.search(r"^\{$", result.output, re.M)
            assert start, said(result)
            json_night3 = json.loads(result.output[start.start() :])
        else:
            result = invoke("run", plan, "--agent", agent, "--out", out)
        assert result.exit_code in (0, 1), said(result)
        results.append(result)
    plan_dir = out / "nightly"
    every = only_runs(plan_dir)
    assert len(every) == 5, every
    partial = every[2]
    runs = [every[0], every[1], every[3], every[4]]
    assert partial_result is not None
    return Nights(out, plan_dir, runs, partial, results, partial_result, json_night3)


# --- Done when, and item 1 / History ------------------------------------------------------


def test_night_four_ends_with_one_line_naming_the_new_failure_and_the_fix(nights: Nights) -> None:
    night3 = nights.runs[2].name
    last = nights.results[3].output
    line = next((ln for ln in last.splitlines() if ln.startswith(f"vs {night3}")), None)
    assert line is not None, last
    assert "1 new failure: flaky_add" in line
    assert "1 fixed: fixed_step" in line


def test_history_names_the_new_failure_the_fix_and_the_flaky_step(nights: Nights) -> None:
    result = invoke("history", nights.plan_dir)
    assert result.exit_code == 0, said(result)
    lines = result.output.splitlines()
    assert any(ln.startswith("new failures") and "flaky_add" in ln for ln in lines), result.output
    assert any(ln.startswith("fixed:") and "fixed_step" in ln for ln in lines), result.output
    flips = next(ln for ln in lines if ln.startswith("flips across runs"))
    assert "flaky_add" in flips and "fixed_step" not in flips and "stable" not in flips
    assert "PASS FAIL PASS FAIL" in flips
    row = next(ln for ln in lines if ln.split()[:1] == ["flaky_add"])
    assert row.split()[1:5] == ["PASS", "FAIL", "PASS", "FAIL"]
    assert "4 complete runs" in result.output


def test_history_names_a_step_slower_exactly_when_its_durations_say_so(nights: Nights) -> None:
    # The docs' rule, applied to the durations history itself reports: the newest more than twice
    # the median of the earlier ones, and at least 0.5 s more. stable sleeps 3 s on night 4.
    doc = json.loads(invoke("history", nights.plan_dir, "--json").output)
    result = invoke("history", nights.plan_dir)
    slower = " ".join(ln for ln in result.output.splitlines() if ln.startswith("slower:"))
    named = set(re.findall(r"[\w.-]+", slower))
    for step in doc["steps"]:
        *earlier, newest = step["durations_s"]
        median = sorted(earlier)[len(earlier) // 2]
        grew = newest > 2 * median and newest >= median + 0.5
        assert (step.get("id", step.get("step")) in named) == grew, (step, result.output)


def test_history_lists_the_partial_only_run_as_skipped_with_why(nights: Nights) -> None:
    result = invoke("history", nights.plan_dir)
    skipped = [ln for ln in result.output.splitlines() if ln.startswith("skipped")]
    assert any(nights.partial.name in ln and "--only" in ln for ln in skipped), result.output


def test_history_last_n_compares_only_the_newest_n_complete_nights(nights: Nights) -> None:
    result = invoke("history", nights.plan_dir, "--last", "2")
    assert result.exit_code == 0, said(result)
    doc = json.loads(invoke("history", nights.plan_dir, "--last", "2", "--json").output)
    grid = {s.get("id", s.get("step")): s for s in doc["steps"]}
    assert grid["fixed_step"]["verdicts"] == ["FAIL", "PASS"]
    assert nights.runs[1].name not in result.output.split("skipped")[0]
    assert "2 complete runs" in result.output


def test_history_json_gives_each_steps_verdicts_night_by_night(nights: Nights) -> None:
    result = invoke("history", nights.plan_dir, "--json")
    assert result.exit_code == 0, said(result)
    doc = json.loads(result.output)
    grid = {s.get("id", s.get("step")): s for s in doc["steps"]}
    assert grid["flaky_add"]["verdicts"] == ["PASS", "FAIL", "PASS", "FAIL"]
    assert grid["fixed_step"]["verdicts"] == ["FAIL", "FAIL", "FAIL", "PASS"]
    assert len(grid["stable"]["durations_s"]) == 4
    text = json.dumps(doc)
    assert "new_failures" in text and "fixed" in text


def test_run_json_carries_the_comparison_with_the_previous_night(nights: Nights) -> None:
    versus = find_key(nights.json_night3, "versus")[0]
    assert versus["previous"] == nights.runs[1].name
    assert versus["fixed"] == ["flaky_add"]
    assert versus["new_failures"] == []
    assert versus["complete"] is True


def test_latest_and_previous_name_the_last_two_complete_nights(nights: Nights) -> None:
    latest, previous = nights.plan_dir / "latest", nights.plan_dir / "previous"
    assert latest.resolve() == nights.runs[3].resolve()
    assert previous.resolve() == nights.runs[2].resolve()


def test_a_partial_only_run_moves_neither_link_and_says_so(nights: Nights) -> None:
    out = nights.partial_result.output
    assert "not complete" in out and "--only" in out, out
    # Night 3 compared itself with night 2, never with the partial run.
    assert find_key(nights.json_night3, "versus")[0]["previous"] != nights.partial.name


def test_the_plan_index_page_links_every_night_and_shows_the_trend(nights: Nights) -> None:
    page = (nights.plan_dir / "index.html").read_text()
    for run in nights.runs:
        assert f"{run.name}/report.html" in page
    assert "flaky_add" in page and "FAIL" in page
    assert nights.partial.name in page  # listed as skipped, with why


def test_prune_keeps_the_newest_complete_nights_and_what_the_links_name(nights: Nights, tmp_path: Path) -> None:
    copy = tmp_path / "runs"
    shutil.copytree(nights.out, copy, symlinks=True)
    plan_dir = copy / "nightly"
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("not a run of this plan")
    (plan_dir / "20200101T000000Z").symlink_to(outside)  # a link named like an old run
    dry = invoke("prune", plan_dir, "--keep", "2", "--dry-run")
    assert dry.exit_code == 0, said(dry)
    assert len(only_runs(plan_dir)) == 5
    result = invoke("prune", plan_dir, "--keep", "2")
    assert result.exit_code == 0, said(result)
    kept = [p.name for p in only_runs(plan_dir)]
    assert kept == [nights.runs[2].name, nights.runs[3].name]
    assert (plan_dir / "latest").is_symlink() and (plan_dir / "previous").is_symlink()
    assert nights.runs[0].name not in (plan_dir / "index.html").read_text()
    assert (plan_dir / "20200101T000000Z").is_symlink() and (outside / "keep.txt").exists()


def test_history_of_the_folder_above_the_plans_names_the_folders_to_pass(nights: Nights) -> None:
    result = invoke("history", nights.out)
    assert result.exit_code == 2, said(result)
    assert "nightly" in result.output


# --- Item 2: reasons quote the data --------------------------------------------------------

REASON_STEPS = """\
  - id: lie_b
    do: Add a note titled beta.
    validators:
      - {kind: json_path_eq, url: /api/notes/beta, path: $.done, expected: false}
      - {kind: sql_row_present, url: 'sqlite:///DB', table: notes, where: {title: zebra}}
      - {kind: json_path_eq, url: /api/notes, path: $.length, expected: 1}
      - {kind: json_path_eq, url: /api/notes, path: '$.tags[0]', expected: x}
      - {kind: http_body_contains, url: /api/long, text: needle}
  - id: mistakes
    do: Add a note titled gamma.
    validators:
      - {kind: sql_row_present, url: 'sqlite:///DB', table: note, where: {title: gamma}}
      - {kind: sql_row_present, url: 'sqlite:///MISSING', table: notes, where: {title: gamma}}
      - {kind: sql_row_present, url: 'sqlite:///DB', table: notes, where: {titel: gamma}}
      - {kind: http_status_eq, url: /api/notes/gamma, expected: 200}
"""


@pytest.fixture(scope="module")
def reasons_run(kit: Kit) -> tuple[Ran, Path]:
    db = kit.root / "reasons.db"
    steps = REASON_STEPS.replace("MISSING", str(kit.root / "no-such.db")).replace("DB", str(db))
    plan = kit.plan("reasons", steps, app=kit.app(str(db)))
    agent = kit.agent("reasons", {"lie_b": LIE, "mistakes": LIE})
    result = invoke("run", plan, "--agent", agent, "--out", kit.root / "runs")
    assert result.exit_code == 1, said(result)
    return result, only_runs(kit.root / "runs" / "reasons")[-1]


def test_a_json_path_on_a_404_quotes_the_status_and_body(reasons_run: tuple[Ran, Path]) -> None:
    reason = reason_with(reasons_run[1], "$.done is absent")
    assert 'the response was 404 {"error": "not found"}' in reason


def test_an_empty_sql_result_quotes_the_query_it_ran(reasons_run: tuple[Ran, Path]) -> None:
    reason = reason_with(reasons_run[1], "0 row(s) found")
    assert "query:" in reason and "notes" in reason and "zebra" in reason


def test_an_absent_json_path_quotes_the_value_at_the_nearest_existing_part(
    reasons_run: tuple[Ran, Path],
) -> None:
    assert "$.tags is []" in reason_with(reasons_run[1], "$.tags[0] is absent")
    reason = reason_with(reasons_run[1], "$.length is absent")
    assert '{"notes": [], "tags": []}' in reason  # the value at $, the nearest existing part


def test_a_missing_table_lists_the_tables_and_a_missing_column_the_columns(
    reasons_run: tuple[Ran, Path],
) -> None:
    missing = reason_with(reasons_run[1], "the tables there: notes")
    assert "note;" in missing or "table: note " in missing or "'note'" in missing
    reason = reason_with(reasons_run[1], "titel")
    assert "title" in reason.replace("titel", "")


def test_a_wrong_status_quotes_the_start_of_the_body_too(reasons_run: tuple[Ran, Path]) -> None:
    reason = reason_with(reasons_run[1], "status 404, expected 200")
    assert '{"error": "not found"}' in reason


def test_a_quoted_body_is_one_short_line_with_control_characters_escaped(
    reasons_run: tuple[Ran, Path],
) -> None:
    reason = reason_with(reasons_run[1], "needle")
    excerpt = reason.split("the response was 404 ", 1)[1].removesuffix(")")
    assert excerpt.startswith("Not Found") and "\n" not in reason and "\t" not in reason
    assert len(excerpt) <= 121, excerpt  # 120 characters and an ellipsis


def test_reasons_read_the_same_in_results_report_and_junit(reasons_run: tuple[Ran, Path]) -> None:
    run = reasons_run[1]
    reason = reason_with(run, "$.done is absent")
    assert reason in html.unescape((run / "report.html").read_text())
    assert reason in xml_unescape((run / "junit.xml").read_text(), {"&quot;": '"', "&apos;": "'"})


# --- Item 4: a FAIL does not hide ERRORs ---------------------------------------------------


def test_plan_mistakes_inside_a_fail_are_counted_as_plan_errors(reasons_run: tuple[Ran, Path]) -> None:
    result, run = reasons_run
    results = json.loads((run / "results.json").read_text())
    assert verdict_of(results, "mistakes") == "FAIL"
    assert find_key(results, "plan_errors")[0] == 3
    assert "3 plan errors" in result.output
    assert 'referee.plan_errors" value="3"' in (run / "junit.xml").read_text()
    assert re.search(r"plan.errors\W+3\b", page_text(run / "report.html"))
    assert "2 overclaims" in result.output


# --- Item 3: plan variables everywhere ------------------------------------------------------

VAR_STEPS = """\
  - id: add_title
    do: Add a note with the title you were given.
    validators:
      - {kind: http_body_contains, url: /, text: "${EXPECTED_TITLE}"}
      - {kind: sql_row_present, url: 'sqlite:///${APP_DB}', table: notes, where: {title: "${EXPECTED_TITLE}"}}
      - {kind: command_exit_code, command: 'test -s "${APP_DB}"', expected: 0}
"""


def var_plan(kit: Kit) -> Path:
    script = kit.write("vars.script.json", json.dumps({"add_title": {"add_env": "NOTE_TITLE", **HONEST}}))
    actor = (
        f'actor:\n  kind: command\n  command: \'"{sys.executable}" "{AGENT}" "{script}"\'\n'
        "  env: {NOTE_TITLE: '${EXPECTED_TITLE}'}\n"
    )
    app = kit.app("${APP_DB}", '--title "${EXPECTED_TITLE}"')
    return kit.plan("vars", VAR_STEPS, app=app, top=actor)


def run_vars(kit: Kit, mp: pytest.MonkeyPatch, name: str, top: str = "") -> tuple[Ran, Path]:
    mp.setenv("EXPECTED_TITLE", "Zebra-Ledger-7731")
    mp.setenv("APP_DB", str(kit.root / f"{name}.db"))
    plan = kit.write(f"{name}.yaml", var_plan(kit).read_text().replace("name: vars\n", f"name: {name}\n{top}"))
    result = invoke("run", plan, "--out", kit.root / "runs")
    return result, only_runs(kit.root / "runs" / name)[-1]


@pytest.fixture(scope="module")
def vars_run(kit: Kit) -> tuple[Ran, Path]:
    """One run of the variables plan, read by the tests that only look at it."""
    with pytest.MonkeyPatch.context() as mp:
        return run_vars(kit, mp, "vars")


def test_a_validator_text_from_a_variable_is_compared_with_its_value(vars_run: tuple[Ran, Path]) -> None:
    result, run = vars_run
    assert result.exit_code == 0, said(result)
    assert "OVERCLAIM" not in result.output


def test_a_public_variable_reaches_every_validator_value(kit: Kit, monkeypatch: pytest.MonkeyPatch) -> None:
    result, run = run_vars(kit, monkeypatch, "vars_public", top="public_env: [EXPECTED_TITLE]\n")
    assert result.exit_code == 0, said(result)
    assert verdict_of(json.loads((run / "results.json").read_text()), "add_title") == "PASS"


def test_app_start_and_actor_env_get_the_values_that_outputs_never_show(kit: Kit, vars_run: tuple[Ran, Path]) -> None:
    result, run = vars_run
    # The app was started on --db ${APP_DB} and the agent added the title from actor.env.
    with sqlite3.connect(kit.root / "vars.db") as db:
        assert db.execute("select title from notes").fetchall() == [("Zebra-Ledger-7731",)]
    for name in ("results.json", "junit.xml", "report.html", "claims.json", "manifest.json"):
        assert "Zebra-Ledger-7731" not in (run / name).read_text(), name
    assert "Zebra-Ledger-7731" not in result.output


def test_an_unset_variable_in_app_start_is_a_plan_error_before_anything_starts(
    kit: Kit, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The user's case: APP_DB is used in app.start alone, and is not set.
    monkeypatch.delenv("APP_DB", raising=False)
    marker = kit.root / "unset-app-started.mark"
    steps = "  - id: look\n    do: Look at the health page.\n    validators:\n" + WEAK
    plan = kit.plan("unset_start", steps, app=f"touch {marker} && " + kit.app("${APP_DB}"))
    checked = invoke("check", plan)
    assert checked.exit_code == 2, said(checked)
    assert "APP_DB" in checked.output and "unset_start.yaml:" in checked.output
    out = kit.root / "unset-runs"
    result = invoke("run", plan, "--agent", kit.agent("unset", {}), "--out", out)
    assert result.exit_code == 2 and "APP_DB" in result.output, said(result)
    assert not marker.exists()
    assert not out.exists() or not any(out.rglob("results.json"))


@pytest.mark.parametrize(
    ("where", "steps", "top"),
    [
        (
            "a validator's text",
            "  - id: look\n    do: Look at the page.\n    validators:\n"
            '      - {kind: http_body_contains, url: /, text: "${UNSET_TITLE_9731}"}\n',
            "",
        ),
        (
            "actor.env",
            "  - id: look\n    do: Look at the health page.\n    validators:\n" + WEAK,
            "actor:\n  kind: command\n  env: {NOTE_TITLE: '${UNSET_TITLE_9731}'}\n",
        ),
    ],
)
def test_check_names_an_unset_variable_wherever_the_plan_uses_it(
    kit: Kit, monkeypatch: pytest.MonkeyPatch, where: str, steps: str, top: str
) -> None:
    monkeypatch.delenv("UNSET_TITLE_9731", raising=False)
    plan = kit.plan("unset_elsewhere", steps, top=top)
    checked = invoke("check", plan)
    assert checked.exit_code == 2, f"{where}: {said(checked)}"
    assert "UNSET_TITLE_9731" in checked.output


# --- Item 5: a retry does not hide an overclaim --------------------------------------------


@pytest.fixture(scope="module")
def agents_run(kit: Kit) -> tuple[Ran, Path]:
    """Attempt 1 claims pass and fails, attempt 2 passes; and a claim file with `passed`."""
    steps = (
        "  - id: retry_me\n    do: Add a note titled retry.\n    validators:\n"
        "      - {kind: http_status_eq, url: /api/notes/retry, expected: 200}\n"
        "  - id: passed_key\n    do: Look at the health page.\n    validators:\n" + WEAK
    )
    plan = kit.plan("agents", steps)
    agent = kit.agent(
        "agents",
        {
            "retry_me": [{"claim": {"pass": True, "note": "attempt one says done"}}, honest_add("retry")],
            "passed_key": {"raw_claim": json.dumps({"passed": True})},
        },
    )
    result = invoke("run", plan, "--agent", agent, "--out", kit.root / "runs", "--retries", "1")
    assert result.exit_code == 0, said(result)
    return result, only_runs(kit.root / "runs" / "agents")[-1]


def test_an_earlier_attempts_overclaim_is_kept_and_counted(agents_run: tuple[Ran, Path]) -> None:
    result, run = agents_run
    results = json.loads((run / "results.json").read_text())
    step = step_of(results, "retry_me")
    assert step["verdict"] == "FLAKY"
    first = step["attempts"][0]
    assert first["claim"]["pass"] is True and first["claim"]["note"] == "attempt one says done"
    assert first.get("overclaim") is True
    assert find_key(results, "overclaims")[0] == 1
    assert "1 overclaim" in result.output
    page = re.sub(r"<[^>]+>", " ", html.unescape((run / "report.html").read_text()))
    first_row = page[page.index("attempt 1:") :][:400]
    assert "OVERCLAIM" in first_row and "claimed pass" in first_row


def test_the_report_shows_an_earlier_attempts_claim_note(agents_run: tuple[Ran, Path]) -> None:
    page = html.unescape((agents_run[1] / "report.html").read_text())
    assert "attempt one says done" in page


# --- Item 7: silent mistakes ----------------------------------------------------------------


def test_an_unknown_claim_key_is_a_warning_naming_the_known_one(agents_run: tuple[Ran, Path]) -> None:
    result, run = agents_run
    warning = step_of(json.loads((run / "results.json").read_text()), "passed_key")["agent"]["claim_warning"]
    assert "unknown key 'passed'" in warning and "did you mean 'pass'" in warning
    assert "unknown key 'passed'" in result.output
    assert "unknown key" in html.unescape((run / "report.html").read_text())
    assert "unknown key" in xml_unescape((run / "junit.xml").read_text(), {"&apos;": "'"})


def test_a_step_without_do_is_a_plan_error(kit: Kit) -> None:
    plan = kit.plan("no_do", "  - id: bare\n    validators:\n" + WEAK)
    result = invoke("check", plan)
    assert result.exit_code == 2, said(result)
    assert "bare" in result.output and "do" in result.output


def test_an_interrupted_run_moves_no_link_and_history_skips_it(kit: Kit) -> None:
    out = kit.root / "interrupt-runs"
    plan = kit.plan("interrupted", "  - id: wait\n    do: Wait.\n    validators:\n" + WEAK)
    done = invoke("run", plan, "--agent", kit.agent("quick", {"wait": HONEST}), "--out", out)
    assert done.exit_code == 0, said(done)
    first = only_runs(out / "interrupted")[0]
    hang = kit.agent("hang", {"wait": {"mark": "started.mark", "sleep": 60, **HONEST}})
    proc = subprocess.Popen(
        [sys.executable, "-m", "referee", "run", str(plan), "--agent", hang, "--out", str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        preexec_fn=default_stop_signals,  # a test run started in the background inherits SIGINT ignored
    )
    try:
        deadline = time.monotonic() + 60
        marks: list[Path] = []
        while not marks and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.1)
            marks = list((out / "interrupted").glob("*/agent/wait/started.mark"))
        assert marks, "the agent never started"
        proc.send_signal(signal.SIGINT)
        output, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, output
    assert "not complete" in output, output
    assert (out / "interrupted" / "latest").resolve() == first.resolve()
    history = invoke("history", out / "interrupted")
    second = only_runs(out / "interrupted")[-1].name
    assert any(ln.startswith(f"skipped {second}") for ln in history.output.splitlines()), history.output


# --- Item 6: agent failures count -----------------------------------------------------------


def test_a_crashed_and_a_timed_out_agent_count_and_fail_a_strict_run(kit: Kit) -> None:
    steps = (
        "  - id: crash\n    do: Look at the health page.\n    validators:\n"
        + WEAK
        + "  - id: slow\n    do: Look at the health page.\n    timeout_s: 1\n    validators:\n"
        + WEAK
        + "  - id: chatty\n    do: Look at the health page.\n    validators:\n"
        + WEAK
    )
    plan = kit.plan("agent_failures", steps)
    agent = kit.agent(
        "agent_failures",
        {
            "crash": {"exit": 1, "stderr": "Traceback (most recent call last):\nKeyError: 'api_key'"},
            "slow": {"sleep": 30, **HONEST},
            "chatty": {"stderr_lines": 500, **HONEST},
        },
    )
    result = invoke("run", plan, "--agent", agent, "--out", kit.root / "runs", "--strict")
    assert result.exit_code == 1, said(result)
    run = only_runs(kit.root / "runs" / "agent_failures")[-1]
    results = json.loads((run / "results.json").read_text())
    assert [verdict_of(results, s) for s in ("crash", "slow", "chatty")] == ["PASS"] * 3
    assert find_key(results, "agent_failures")[0] == 2
    assert "2 agent failures" in result.output
    assert 'referee.agent_failures" value="2"' in (run / "junit.xml").read_text()
    assert re.search(r"agent.failures\W+2\b", page_text(run / "report.html"))
    assert "KeyError: 'api_key'" in result.output
    assert any(ln.strip().endswith("Traceback (most recent call last):") for ln in result.output.splitlines())
    assert step_of(results, "slow")["agent"]["timed_out"] is True


def test_a_missing_agent_program_stops_the_run_before_the_app_starts(kit: Kit) -> None:
    marker = kit.root / "app-started.mark"
    app = f"touch {marker} && " + kit.app()
    plan = kit.plan("no_agent", "  - id: a\n    do: Look.\n    validators:\n" + WEAK, app=app)
    out = kit.root / "no-agent-runs"
    result = invoke("run", plan, "--agent", "no-such-agent-program-9731 --go", "--out", out)
    assert result.exit_code == 2, said(result)
    assert len(result.output.strip().splitlines()) == 1 and "no-such-agent-program-9731" in result.output
    assert not marker.exists()
    assert not (out / "no_agent").exists()


# --- Item 8: re-grade with a corrected plan -------------------------------------------------

SHOP = """\
  - id: add
    do: Add a note titled kiwi.
    validators:
      - {kind: http_status_eq, url: /api/notes/kiwi, expected: EXPECTED}
  - id: look
    do: Look at the health page.
    validators:
      - {kind: http_status_eq, url: URL, expected: 200}
"""


@pytest.fixture(scope="module")
def shop_run(kit: Kit) -> Path:
    plan = kit.plan("shop", SHOP.replace("EXPECTED", "201").replace("URL", "/health"))
    result = invoke("run", plan, "--agent", kit.agent("shop", {"add": honest_add("kiwi")}), "--out", kit.root / "runs")
    assert result.exit_code == 1, said(result)
    return only_runs(kit.root / "runs" / "shop")[-1]


def test_grade_with_a_corrected_plan_regrades_without_the_agent_into_a_sealed_folder(kit: Kit, shop_run: Path) -> None:
    fixed_steps = SHOP.replace("EXPECTED", "200").replace("URL", "/api/notes")
    fixed = kit.plan("shop", fixed_steps, file="shop-fixed.yaml")
    before = {p.name: p.read_bytes() for p in shop_run.iterdir() if p.is_file()}
    result = invoke("grade", shop_run, "--plan", fixed)
    assert result.exit_code == 1, said(result)  # `look` now reads a capture the run never took
    assert {p.name: p.read_bytes() for p in shop_run.iterdir() if p.is_file()} == before
    assert len(only_runs(kit.root / "runs" / "shop")) == 1  # nobody ran the agent again
    fixed_sha = hashlib.sha256(fixed.read_bytes()).hexdigest()
    run_sha = hashlib.sha256((shop_run / "plan.yaml").read_bytes()).hexdigest()
    (regrade,) = list((shop_run / "regrades").iterdir())
    assert regrade.name.endswith(fixed_sha[:8])
    results = json.loads((regrade / "results.json").read_text())
    assert verdict_of(results, "add") == "PASS"
    assert verdict_of(results, "look") == "ERROR"
    assert "not captured in this run" in step_of(results, "look")["reason"]
    for text in (json.dumps(results), (regrade / "junit.xml").read_text(), (regrade / "report.html").read_text()):
        assert fixed_sha in text and run_sha in text
    assert fixed_sha[:8] in result.output and run_sha[:8] in result.output
    checked = invoke("grade", regrade)
    assert checked.exit_code in (0, 1) and "regrade seal verified" in checked.output, said(checked)


def test_editing_the_frozen_plan_is_a_seal_failure_that_points_to_grade_plan(shop_run: Path, tmp_path: Path) -> None:
    copy = tmp_path / "shop" / shop_run.name
    shutil.copytree(shop_run, copy, symlinks=True)
    plan = copy / "plan.yaml"
    plan.write_text(plan.read_text().replace("expected: 201", "expected: 200"))
    result = invoke("grade", copy)
    assert result.exit_code == 1, said(result)
    assert "plan.yaml" in result.output and "--plan" in result.output


# --- Item 9: progress and CI output ---------------------------------------------------------


def test_each_step_says_when_it_starts_and_its_verdict_when_graded(reasons_run: tuple[Ran, Path]) -> None:
    lines = reasons_run[0].output.splitlines()
    about = [i for i, ln in enumerate(lines) if "lie_b" in ln]
    verdicts = [i for i in about if "FAIL" in lines[i]]
    agent_done = [i for i in about if "agent exited" in lines[i]]
    assert about and agent_done and about[0] < agent_done[0], reasons_run[0].output
    assert verdicts and verdicts[0] > agent_done[0]


def test_without_a_tty_reasons_and_names_are_whole_lines(reasons_run: tuple[Ran, Path]) -> None:
    result, run = reasons_run
    results = json.loads((run / "results.json").read_text())
    for step in ("lie_b", "mistakes"):
        for validator in step_of(results, step)["validators"]:
            assert f"{validator['name']}:" in result.output  # never `sql_row_prese…`
    reason = reason_with(run, "0 row(s) found")
    assert any(reason in ln for ln in result.output.splitlines()), result.output


def test_without_a_tty_a_plan_warning_stays_on_one_line(kit: Kit) -> None:
    steps = (
        "  - id: warned_step_with_a_rather_long_name_for_a_narrow_table\n    do: Save result.\n"
        "    validators:\n      - {kind: text_contains, evidence: result, text: ok}\n"
    )
    plan = kit.plan("warned", steps)
    report = json.loads(invoke("check", plan, "--json").output)
    (warning,) = next(iter(report.values()))["warnings"]
    result = invoke("run", plan, "--agent", kit.agent("warned", {}), "--out", kit.root / "runs")
    head = f":{warning['line']}:{warning['column']}: warning: "
    lines = [ln for ln in result.output.splitlines() if head in ln]
    assert lines and warning["message"] in lines[0], result.output


def test_only_summarises_the_left_out_steps_as_deselected(nights: Nights) -> None:
    out = nights.partial_result.output
    assert "2 deselected" in out, out
    assert "2 SKIPPED" not in out
    assert not any("fixed_step" in ln and "SKIPPED" in ln for ln in out.splitlines())


# --- Item 10 and the build: defaults, lint, app.build ---------------------------------------


def test_a_defaults_file_gives_out_agent_and_retries(kit: Kit, monkeypatch: pytest.MonkeyPatch) -> None:
    project = kit.root / "project"
    plan = kit.plan(
        "defaults",
        "  - id: a\n    do: Add a note titled d.\n    validators:\n"
        "      - {kind: http_status_eq, url: /api/notes/d, expected: 200}\n",
    )
    agent = kit.agent("defaults", {"a": [LIE, honest_add("d")]})
    kit.write("project/referee.toml", f"out = \"nightly-out\"\nagent = '{agent}'\nretries = 1\n")
    monkeypatch.chdir(project)
    result = invoke("run", plan)
    assert result.exit_code == 0, said(result)
    (run,) = only_runs(project / "nightly-out" / "defaults")
    assert verdict_of(json.loads((run / "results.json").read_text()), "a") == "FLAKY"
    kit.write("project/referee.toml", "retires = 1\n")
    bad = invoke("run", plan)
    assert bad.exit_code == 2 and "did you mean 'retries'" in bad.output, said(bad)
    assert len(bad.output.strip().splitlines()) == 1


def test_tool_referee_in_pyproject_gives_defaults_past_a_pyproject_without_it(
    kit: Kit, monkeypatch: pytest.MonkeyPatch
) -> None:
    steps = "  - id: a\n    do: Look at the health page.\n    validators:\n" + WEAK
    plan = kit.plan("py_defaults", steps)
    agent = kit.agent("py_defaults", {"a": HONEST})
    kit.write("pyproj/pyproject.toml", f"[project]\nname = 'x'\n\n[tool.referee]\nout = 'py-out'\nagent = '{agent}'\n")
    kit.write("pyproj/sub/pyproject.toml", "[project]\nname = 'sub'\n")
    monkeypatch.chdir(kit.root / "pyproj" / "sub")
    result = invoke("run", plan)
    assert result.exit_code == 0, said(result)
    assert len(only_runs(kit.root / "pyproj" / "py-out" / "py_defaults")) == 1


def test_lint_needs_only_the_variables_it_uses(kit: Kit, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("APP_DB", raising=False)
    page = kit.write("page.html", "<html><body><h1>Notes</h1><p>Welcome</p></body></html>")
    control = kit.write("home.html", "<html><body><h1>Notes</h1><p>Home</p></body></html>")
    steps = (
        "  - id: open\n    do: Open the page.\n    validators:\n"
        f"      - {{kind: dom_contains, evidence: {page.name}, text: Notes}}\n"
    )
    plan = kit.plan("lint_vars", steps, app=kit.app("${APP_DB}"))
    result = invoke("lint", plan, "--control", control)
    assert result.exit_code == 1, said(result)  # 'Notes' is on the home page too: too loose
    assert "APP_DB" not in result.output and "TOO LOOSE" in result.output


def test_a_failed_build_makes_every_step_error_and_history_shows_a_build_failure(kit: Kit) -> None:
    marker = kit.root / "built-app-started.mark"
    top = "app:\n  build: 'echo compiling; echo \"x.c:1:2: error: boom\" >&2; exit 2'\n"
    plan_text = kit.plan(
        "build",
        "  - id: a\n    do: Look.\n    validators:\n" + WEAK + "  - id: b\n    do: Look.\n    validators:\n" + WEAK,
        app=f"touch {marker} && " + kit.app(),
    ).read_text()
    plan = kit.write("build.yaml", plan_text.replace("app:\n", top, 1))
    out = kit.root / "build-runs"
    result = invoke("run", plan, "--agent", kit.agent("build", {}), "--out", out)
    assert result.exit_code == 1, said(result)
    (run,) = only_runs(out / "build")
    results = json.loads((run / "results.json").read_text())
    for step in ("a", "b"):
        assert verdict_of(results, step) == "ERROR"
        reason = step_of(results, step)["reason"]
        assert "the build failed (exit 2)" in reason and "x.c:1:2: error: boom" in reason
    assert "x.c:1:2: error: boom" in (run / "build.log").read_text()
    assert not marker.exists() and not (out / "build" / "latest").exists()
    history = invoke("history", out / "build", "--json")
    assert run.name in json.dumps(json.loads(history.output).get("build_failures")), history.output
    text = invoke("history", out / "build").output
    assert any(ln.startswith(f"skipped {run.name}") and "build failed" in ln for ln in text.splitlines()), text


def test_a_build_past_its_own_timeout_is_stopped_and_every_step_is_error(kit: Kit) -> None:
    top = "app:\n  build: 'echo slow build; sleep 60'\n  build_timeout_s: 1\n"
    steps = "  - id: a\n    do: Look.\n    validators:\n" + WEAK
    plan_text = kit.plan("build_slow", steps).read_text()
    plan = kit.write("build_slow.yaml", plan_text.replace("app:\n", top, 1))
    out = kit.root / "build-slow-runs"
    result = invoke("run", plan, "--agent", kit.agent("build_slow", {}), "--out", out)
    assert result.exit_code == 1, said(result)
    (run,) = only_runs(out / "build_slow")
    assert verdict_of(json.loads((run / "results.json").read_text()), "a") == "ERROR"
    build = find_key(json.loads((run / "manifest.json").read_text()), "build")
    assert build and '"timed_out": true' in json.dumps(build), build
    assert "slow build" in (run / "build.log").read_text()


def test_a_build_runs_before_the_app_and_its_log_is_kept(kit: Kit) -> None:
    built = kit.root / "built.bin"
    top = f"app:\n  build: 'echo building; touch {built}'\n"
    plan_text = kit.plan(
        "build_ok", "  - id: a\n    do: Look.\n    validators:\n" + WEAK, app=kit.app(extra=f"--need {built}")
    ).read_text()
    plan = kit.write("build_ok.yaml", plan_text.replace("app:\n", top, 1))
    result = invoke("run", plan, "--agent", kit.agent("build_ok", {}), "--out", kit.root / "runs")
    assert result.exit_code == 0, said(result)
    run = only_runs(kit.root / "runs" / "build_ok")[-1]
    assert "building" in (run / "build.log").read_text()


# --- -j: lines prefixed by the plan, and one index page over the plans ----------------------


def test_parallel_plans_stream_prefixed_lines_and_write_one_index_over_the_plans(kit: Kit) -> None:
    # jplan_one's agent adds its note only once the test has read "jplan_one_step ... started" on
    # the parent's output and dropped a file in the agent's folder: a PASS proves the line came
    # while the plan ran, not when it ended.
    one = kit.plan(
        "jplan_one",
        "  - id: jplan_one_step\n    do: Add a note titled released.\n    validators:\n"
        "      - {kind: http_status_eq, url: /api/notes/released, expected: 200}\n",
    )
    two = kit.plan("jplan_two", "  - id: jplan_two_step\n    do: Look.\n    validators:\n" + WEAK)
    agent = kit.agent("j", {"jplan_one_step": {"wait_for": "release", "then_add": "released", **HONEST}})
    out = kit.root / "j-runs"
    argv = [sys.executable, "-m", "referee", "run", str(one), str(two), "-j", "2", "--agent", agent, "--out", str(out)]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines: list[str] = []
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line.rstrip("\n"))
            if "jplan_one_step" in line and "start" in line:
                for _ in range(200):
                    folders = list(out.glob("jplan_one/*/agent/jplan_one_step"))
                    if folders:
                        (folders[0] / "release").write_text("go")
                        break
                    time.sleep(0.1)
        proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, "\n".join(lines)
    for name in ("jplan_one", "jplan_two"):
        assert any(re.match(rf"^\W*{name}\W", ln) and f"{name}_step" in ln for ln in lines), lines
    index = (out / "index.html").read_text()
    assert "jplan_one/index.html" in index and "jplan_two/index.html" in index


# --- Device screens: a fake adb on PATH, OCR over the runner's capture, lint with a control --


def png_with(path: Path, text: str) -> None:
    from PIL import Image, ImageDraw, ImageFont

    image = Image.new("RGB", (900, 200), "white")
    font = ImageFont.load_default(size=48)
    ImageDraw.Draw(image).text((30, 60), text, fill="black", font=font)
    image.save(path)


def test_device_screens_from_adb_and_simctl_are_runner_captures_that_ocr_reads(
    kit: Kit, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("PIL")
    if not shutil.which("tesseract"):
        pytest.skip("tesseract is not installed")
    bin_dir = kit.root / "fakebin"
    screen = kit.root / "device-screen.png"
    png_with(screen, "Inbox 3 messages")
    png_with(kit.root / "home-screen.png", "Home Inbox Settings")
    png_with(kit.root / "ios-screen.png", "Settings General")
    kit.write("fakebin/adb", f'#!/bin/sh\n[ "$*" = "exec-out screencap -p" ] || exit 9\nexec cat {screen}\n').chmod(
        0o755
    )
    ios = kit.root / "ios-screen.png"
    fake_xcrun = f'#!/bin/sh\n[ "$*" = "simctl io booted screenshot -" ] || exit 9\nexec cat {ios}\n'
    kit.write("fakebin/xcrun", fake_xcrun).chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    steps = (
        "  - id: open_inbox\n    do: Open the inbox on the phone.\n"
        "    capture:\n      - {kind: command, name: home, command: 'adb exec-out screencap -p', stdout_as: home.png}\n"
        "      - {kind: command, name: ios, command: 'xcrun simctl io booted screenshot -', stdout_as: ios.png}\n"
        "    validators:\n      - {kind: ocr_contains, evidence: [home.png], text: '3 messages'}\n"
        "      - {kind: ocr_contains, evidence: [home.png], text: Inbox}\n"
        "      - {kind: ocr_contains, evidence: [ios.png], text: General}\n"
    )
    plan = kit.plan("device", steps)
    result = invoke("run", plan, "--agent", kit.agent("device", {}), "--out", kit.root / "runs")
    assert result.exit_code == 0, said(result)
    # OCR grading says what it reads.
    assert any("OCR" in ln and "home.png" in ln for ln in result.output.splitlines()), result.output
    lint = invoke("lint", plan, "--control", kit.root / "home-screen.png")
    assert lint.exit_code == 1, said(lint)
    assert "TOO LOOSE" in lint.output and "Inbox" in lint.output
