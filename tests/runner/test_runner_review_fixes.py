"""Defects a review of the run-directory schema found, each pinned: a capture named with a folder, a run
graded after its capture plugin is gone, a broken plugin that is not used, names that escape the run
directory, file records from before `resolved`, and plugins that report failure the old way."""

import json
from pathlib import Path

import pytest

from referee.core.registry import Registry
from referee.errors import PlanError
from referee.plan.loader import load_plan_text
from referee.rundir.schema import FileEntry, is_record, parse_record
from referee.runner.run import _reported_failure

PLAN = """
steps:
  - id: s
    do: look
    capture:
      - {kind: %s, name: "%s", command: "echo hi"}
"""


def entry(path: str, capture: str, kind: str) -> FileEntry:
    return FileEntry(path=path, step="s", phase="after", captured_by="runner", capture=capture, kind=kind,
                     sha256="0" * 64, size=1, time="2026-01-01T00:00:00Z")


def test_a_capture_named_with_a_folder_is_still_a_runner_record():
    assert is_record(entry("evidence/s/after/api/order.json", "api/order", "http"))
    assert is_record(entry("evidence/s/after/api/order.error.json", "api/order", "http"))
    assert not is_record(entry("evidence/s/after/order.json", "api/order", "http"))
    assert not is_record(entry("evidence/s/before/api/order.json", "api/order", "http"))


@pytest.mark.parametrize("name", ["../../escaped", "/etc/passwd", "a/../../b", "c:\\\\x", "api/order"])
def test_capture_names_that_leave_the_run_directory_are_plan_errors(name):
    # a capture name is a name (issue 9): not even a folder inside the run directory
    with pytest.raises(PlanError, match="a name, not a path"):
        load_plan_text(PLAN % ("command", name), "p.yaml")
    if name == "api/order":  # a run directory from before that rule still grades
        assert load_plan_text(PLAN % ("command", name), "plan.yaml", frozen=True).captures["s"][0].params.name == name
    else:
        with pytest.raises(PlanError, match="inside the run directory"):
            load_plan_text(PLAN % ("command", name), "plan.yaml", frozen=True)


def test_a_frozen_plan_keeps_a_capture_kind_that_is_not_installed():
    text = PLAN % ("android_screen", "home")
    with pytest.raises(PlanError, match="unknown capture kind 'android_screen'"):
        load_plan_text(text, "p.yaml")
    lp = load_plan_text(text, "runs/x/plan.yaml", frozen=True)
    [cap] = lp.captures["s"]
    assert cap.params.name == "home" and cap.params.kind == "android_screen"


def test_a_broken_plugin_does_not_stop_a_built_in_lookup(monkeypatch):
    class Broken:
        name = "broken"

        def load(self):
            raise ModuleNotFoundError("No module named 'nothing_here'")

    import importlib.metadata

    monkeypatch.setattr(importlib.metadata, "entry_points", lambda group=None: [Broken()])
    reg: Registry[str] = Registry("thing", "referee.test_things")
    reg.add("builtin", "B")
    assert reg.get("builtin") == "B" and "builtin" in reg
    with pytest.raises(Exception):
        reg.get("broken")  # the plugin itself still fails loudly when it is asked for


def test_a_file_record_written_before_resolved_existed_still_reads():
    rec = parse_record({"path": "out.csv", "exists": True, "size": 3, "copy": "out.data/out.csv"}, "file")
    assert rec.kind == "file" and rec.resolved == "" and rec.exists


def test_a_plugin_that_writes_capture_error_reports_a_failure(tmp_path):
    bad = tmp_path / "state.json"
    bad.write_text(json.dumps({"capture_error": "device offline"}))
    good = tmp_path / "ok.json"
    good.write_text(json.dumps({"value": 3}))
    assert _reported_failure([bad]) == "device offline"
    assert _reported_failure([good]) is None and _reported_failure([Path(tmp_path / "x.png")]) is None
