"""A graded run directory's outputs, written together by the library: results.json, junit.xml, report.html."""

from __future__ import annotations

from pathlib import Path

from referee.errors import RefereeError
from referee.fsutil import atomic_write_json
from referee.grader import RunResults, grade
from referee.report.html import write_report
from referee.report.junit import write_junit
from referee.rundir import read_manifest


def write_outputs(run_dir: str | Path, results: RunResults) -> None:
    """Write results.json, junit.xml and report.html into the run directory (OSError if it is read-only).

    >>> write_outputs("runs/demo/20260101T000000Z", grade("runs/demo/20260101T000000Z"))  # doctest: +SKIP
    """
    run_dir = Path(run_dir)
    atomic_write_json(run_dir / "results.json", results.model_dump(mode="json"))
    try:
        isolation = read_manifest(run_dir).isolation
    except RefereeError:
        isolation = None
    write_junit(results, run_dir / "junit.xml", isolation)
    write_report(run_dir)  # reads the results.json just written


def grade_to_disk(run_dir: str | Path) -> RunResults:
    """Grade a run directory and write its outputs; the verdicts come from the grader alone."""
    results = grade(run_dir)
    write_outputs(run_dir, results)
    return results
