"""A graded run directory's outputs, written together by the library: results.json, junit.xml, report.html."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from referee.core.fsutil import atomic_write_json
from referee.errors import RefereeError
from referee.grader import RunResults, grade
from referee.report.agentout import Tail, step_tails
from referee.report.html import write_report
from referee.report.junit import write_junit
from referee.rundir.schema import read_manifest


def write_outputs(run_dir: str | Path, results: RunResults) -> None:
    """Write results.json, junit.xml and report.html into the run directory (OSError if it is read-only).

    >>> write_outputs("runs/demo/20260101T000000Z", grade("runs/demo/20260101T000000Z"))  # doctest: +SKIP
    """
    run_dir = Path(run_dir)
    atomic_write_json(run_dir / "results.json", results.model_dump(mode="json"))
    try:  # how the agent ran, from the manifest; not from one whose seal does not hold
        isolation = read_manifest(run_dir).isolation if results.integrity.status != "failed" else None
    except RefereeError:
        isolation = None
    write_junit(results, run_dir / "junit.xml", isolation, agent_outputs(run_dir, results))
    write_report(run_dir, results)  # from these results, not from a results.json someone could rewrite


def agent_outputs(run_dir: Path, results: RunResults) -> dict[str, list[Tail]]:
    """Each step's stdout/stderr tails, for junit.xml (none: an unreadable manifest, or a seal that does not hold)."""
    import json

    if results.integrity.status == "failed":
        return {}
    try:
        manifest = json.loads((run_dir / "manifest.json").read_bytes())
    except (OSError, ValueError):
        return {}
    return {s.id: step_tails(run_dir, manifest, s.id) for s in results.steps if s.agent is not None}


def grade_to_disk(run_dir: str | Path, *, allow_unsigned: bool = False,
                  scrub: Callable[[Any], Any] | None = None) -> RunResults:
    """Grade a run directory (its seal checked) and write its outputs; the verdicts come from the grader alone.
    `scrub`: the runner's, for what grading computes and caches (`referee.grader.grade`)."""
    results = grade(run_dir, allow_unsigned=allow_unsigned, scrub=scrub)
    write_outputs(run_dir, results)
    return results
