"""`referee.run`: run a plan and grade it, as `referee run PLAN` does, less the printing.

The library's three entry points are `referee.run` (here), `referee.grade` (referee.grader.grade) and
`referee.audit_runs` (referee.audit.run.session); docs/api.md shows one example of each. The runner is imported
on the first call, so `import referee` stays cheap.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:
    from referee.plan.loader import LoadedPlan
    from referee.rundir.schema import RunOptions
    from referee.runner.run import RunOutcome

__all__ = ["run"]


def run(plan: str | Path | LoadedPlan, *, out: str | Path = "runs", agent: str | None = None,
        options: RunOptions | None = None,
        on_event: Callable[[str, str, dict], Any] | None = None) -> RunOutcome:
    """Run one plan (a file, or a plan `referee.load_plan` loaded) and grade it, as `referee run PLAN` does.

    `agent`: the command that performs the steps (`--agent`), unless the plan names its own actor.
    `options` (referee.RunOptions): `only`, `keyword`, `fail_fast`, `retries`. `on_event(event, step_id, data)`
    hears of each step as it starts and ends. The outcome holds the run directory and its graded results.

    >>> outcome = run("smoke.yaml", out="runs", agent="python my_agent.py")  # doctest: +SKIP
    >>> outcome.results.summary  # doctest: +SKIP
    {'PASS': 1, 'FAIL': 0, 'SKIPPED': 0, 'ERROR': 0, 'overclaims': 0}
    """
    from referee.plan import load_plan
    from referee.runner.run import run_plan

    loaded = load_plan(plan) if isinstance(plan, (str, Path)) else plan
    if on_event is None:
        return run_plan(loaded, out=Path(out), agent=agent, options=options)
    return run_plan(loaded, out=Path(out), agent=agent, on_event=on_event, options=options)
