"""A plan's runs over time: which runs are complete, the previous complete one, and what changed since it.

A plan's runs live in `OUT/<plan>/<UTC stamp>/`; the stamps sort as the runs started. A run is
*complete* when it was graded (results.json), was asked to perform every step (no `--only`/`-k` in
its manifest's options), performed them all (no step `not_run`: none deselected, none left by
`--fail-fast`), and was not stopped early (no `error` in its manifest: interrupted, the app would not
start, the agent could not be found). Only a complete run is compared with: a partial run says
nothing about the steps it left out. `referee run` compares each run with the previous complete one
(`compare`: new failures, fixed); `referee history` reads the last N complete runs (`load_history`) into a
`report.history_model.History` (new failures, fixed, flips across runs, slower steps).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from referee.core.fsutil import loads_json, read_regular
from referee.errors import RefereeError, UsageError
from referee.grader.results import RunResults
from referee.report.history_model import History, RunColumn, Skipped, analyse, new_and_fixed
from referee.rundir.schema import MAX_RESULTS_BYTES, read_manifest

__all__ = ["Comparison", "compare", "column", "incomplete_reason", "load_history", "plan_folders",
           "previous_complete", "read_results", "run_dirs"]

MAX_SKIPPED = 20  # incomplete runs listed beside a history at most (the newest)


@dataclass(frozen=True)
class Comparison:
    """What changed between a plan's previous complete run and this one, step by step.

    `new_failures`: PASS then, not PASS now (FAIL, ERROR, SKIPPED or FLAKY); `fixed`: not PASS then, PASS
    now. Steps this run did not perform (deselected, after --fail-fast) are in neither."""

    previous: str  # the previous run's folder name (its UTC stamp)
    new_failures: tuple[str, ...] = ()
    fixed: tuple[str, ...] = ()


def read_results(run_dir: Path) -> RunResults:
    """A run's results.json; a missing, unreadable or invalid one is RefereeError naming the file."""
    path = Path(run_dir) / "results.json"
    try:
        data = read_regular(path, max_bytes=MAX_RESULTS_BYTES, root=Path(run_dir))
        return RunResults.model_validate(loads_json(data))
    except RefereeError:
        raise
    except FileNotFoundError:
        raise RefereeError("no results.json: the run was never graded", file=str(path),
                           fix=f"run `referee grade {run_dir}`") from None
    except (OSError, ValueError) as exc:
        raise RefereeError(f"results.json does not read: {str(exc).splitlines()[0][:200]}", file=str(path),
                           fix=f"run `referee grade {run_dir}` again") from None


def incomplete_reason(run_dir: Path, results: RunResults | None = None) -> str | None:
    """Why a run is not complete (see the module docstring), or None when it is.

    `results`: its results, when the caller has read them already.
    """
    run_dir = Path(run_dir)
    try:
        manifest = read_manifest(run_dir)
        results = results if results is not None else read_results(run_dir)
    except RefereeError as exc:
        return exc.message
    if manifest.error:
        return "interrupted" if manifest.error == "interrupted" else f"stopped early: {manifest.error}"
    opts = manifest.options
    if opts is not None and (opts.only or opts.keyword):
        asked = f"--only {','.join(opts.only)}" if opts.only else f"-k {opts.keyword}"
        return f"partial: {asked}"
    left = [s.id for s in results.steps if s.not_run is not None]
    if left:
        return f"{len(left)} step(s) not run ({', '.join(sorted({s.not_run or '' for s in results.steps} - {''}))})"
    missing = set(manifest.steps) - {s.id for s in results.steps}
    if missing:
        return f"results.json lacks step(s) {', '.join(sorted(missing))}"
    return None


def run_dirs(plan_dir: Path) -> list[Path]:
    """The run directories of a plan's runs folder, oldest first (by their UTC stamp names); links left out."""
    try:
        children = list(Path(plan_dir).iterdir())
    except OSError:
        return []
    return sorted((c for c in children if not c.is_symlink() and c.is_dir() and (c / "manifest.json").is_file()),
                  key=lambda c: _order(c.name))


def _order(name: str) -> tuple[str, int]:
    """A run folder's place in time: its stamp, then the `-N` a second run in the same second got.

    >>> sorted(["20260101T000000Z-10", "20260101T000000Z-2", "20260101T000000Z"], key=_order)
    ['20260101T000000Z', '20260101T000000Z-2', '20260101T000000Z-10']
    """
    stamp, dash, n = name.partition("-")
    return (stamp, int(n)) if dash and n.isdigit() else (name, 0)


def previous_complete(run_dir: Path) -> Path | None:
    """The newest complete run of the same plan that started before `run_dir` (its stamp sorts before), or None."""
    run_dir = Path(run_dir)
    earlier = [d for d in run_dirs(run_dir.parent) if _order(d.name) < _order(run_dir.name)]
    for d in reversed(earlier):
        if incomplete_reason(d) is None:
            return d
    return None


def compare(before: RunResults, now: RunResults, previous: str = "") -> Comparison:
    """New failures and fixes of `now` against `before`, in `now`'s step order. Pure.

    >>> from referee.grader.results import StepResult
    >>> def run(**v): return RunResults(plan="p", steps=[StepResult(id=k, verdict=x) for k, x in v.items()], summary={})
    >>> compare(run(a="PASS", b="FAIL", c="PASS"), run(a="FAIL", b="PASS", c="PASS", d="FAIL"), "20261202T030000Z")
    Comparison(previous='20261202T030000Z', new_failures=('a',), fixed=('b',))
    """
    then = {s.id: s.verdict for s in before.steps}
    performed = {s.id: s.verdict for s in now.steps if s.not_run is None}
    new, fixed = new_and_fixed(then, performed)
    return Comparison(previous, new, fixed)


def column(run_dir: Path, results: RunResults) -> RunColumn:
    """A run as a column of its plan's history: the steps it performed, their verdicts and durations."""
    done = [s for s in results.steps if s.not_run is None]
    return RunColumn(Path(run_dir).name, {s.id: s.verdict for s in done},
                     {s.id: s.duration_s for s in done if s.duration_s is not None})


def load_history(plan_dir: Path, last: int = 10) -> History:
    """The last `last` complete runs of a plan's runs folder, and the incomplete runs among them (and after)
    with why they are left out. A folder without runs is a UsageError saying what to pass instead."""
    plan_dir = Path(plan_dir)
    dirs = run_dirs(plan_dir)
    if not dirs:
        raise UsageError(_no_runs(plan_dir), file=str(plan_dir),
                         fix=_which(plan_dir) or "pass OUT/<plan>, the folder `referee run --out OUT` made")
    runs: list[RunColumn] = []
    skipped: list[Skipped] = []
    for d in reversed(dirs):  # newest first, until `last` complete runs are found
        if len(runs) >= last:
            break
        try:
            res: RunResults | None = read_results(d)
        except RefereeError:
            res = None
        why = incomplete_reason(d, res)
        if why is None and res is not None:
            runs.append(column(d, res))
        elif len(skipped) < MAX_SKIPPED:
            skipped.append(Skipped(d.name, why or "unreadable"))
    plan = _plan_name(dirs[-1]) or plan_dir.name
    return analyse(plan, runs[::-1], skipped[::-1])


def _plan_name(run_dir: Path) -> str | None:
    try:
        return read_manifest(run_dir).plan
    except RefereeError:
        return None


def plan_folders(out: Path) -> list[Path]:
    """The plans' runs folders of an `--out` folder (those holding a run directory), by name; links left out."""
    try:
        children = sorted(Path(out).iterdir())
    except OSError:
        return []
    return [c for c in children if not c.is_symlink() and c.is_dir() and run_dirs(c)]


def _no_runs(folder: Path) -> str:
    if (folder / "manifest.json").is_file():
        return "a run directory, not a plan's runs folder"
    return "a folder of several plans' runs" if plan_folders(folder) else "no run directory here"


def _which(folder: Path) -> str | None:
    if (folder / "manifest.json").is_file():
        return f"pass its plan's runs folder, {folder.parent}"
    plans = plan_folders(folder)
    if not plans:
        return None
    listing = ", ".join(str(p) for p in plans[:10]) + (", ..." if len(plans) > 10 else "")
    return f"pass one plan's runs folder: {listing}"
