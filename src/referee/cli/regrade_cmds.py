"""`referee grade RUN --plan FIXED.yaml` (a sealed regrade beside the run) and the check of a regrade folder."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

import click

from referee.core.safetext import for_console
from referee.errors import UsageError


def _is_regrade(folder: Path) -> bool:
    return (folder / "regrade.json").is_file() and not (folder / "manifest.json").exists()


def check_regrade_folders(run_dirs) -> int | None:
    """Given only regrade folders, check each against its seal (exit 1 when one does not hold); None otherwise."""
    from referee.grader.regrade import verify_regrade
    from referee.rundir.keys import existing_key

    folders = [Path(d) for d in run_dirs]
    if not folders or not all(_is_regrade(f) for f in folders):
        if any(_is_regrade(f) for f in folders):
            raise UsageError("regrade folders and run directories are mixed", fix="pass them in separate calls")
        return None
    code = 0
    for f in folders:
        chk = verify_regrade(f, existing_key())
        if chk.ok:
            click.echo(f"{for_console(f)}: regrade seal verified")  # one line each, unwrapped: log parsers read it
        else:
            code = 1
            click.echo(f"{for_console(f)}: REGRADE SEAL CHECK FAILED: {for_console(chk.reason)}")
    return code


def grade_with_plan(run_dirs, fixed_plan: str, strict: bool, json_mode: bool, allow_unsigned: bool, console,
                    load_checked) -> int:
    """Grade one run's sealed evidence with a corrected plan into RUN/regrades/<stamp>-<plan sha8>/, sealed."""
    from referee.core.fsutil import read_regular
    from referee.grader.regrade import regrade
    from referee.grader.verify import open_run
    from referee.plan.loader import MAX_PLAN_BYTES
    from referee.report.console import integrity_line, print_verdicts, summary_line
    from referee.report.regrade_outputs import plans_line, write_regrade
    from referee.rundir.folders import resolve_run_dir
    from referee.rundir.keys import load_key

    if len(run_dirs) != 1:
        raise UsageError(f"--plan re-grades one run; {len(run_dirs)} were given", fix="pass one RUN_DIR with --plan")
    # every error of the plan, before anything is read; only the validators' variables must be set: a regrade
    # takes no capture and starts nothing (as `lint`)
    fixed = load_checked([fixed_plan], console, needs="checks")[0]
    plan_bytes = read_regular(Path(fixed_plan), max_bytes=MAX_PLAN_BYTES)
    if plan_bytes.decode("utf-8", errors="replace") != fixed.text:
        raise UsageError("the plan changed while it was read", file=fixed_plan, fix="run the command again")
    run_dir = resolve_run_dir(run_dirs[0])
    run = open_run(run_dir, allow_unsigned=allow_unsigned)
    results = regrade(run, fixed, plan_bytes, str(fixed_plan))
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    folder = write_regrade(Path(run_dir), results, plan_bytes, load_key(), stamp)
    print_verdicts(console, results, title=f"referee grade --plan: {run_dir}")
    console.print(summary_line(results))
    console.print(integrity_line(results), highlight=False)
    console.print(for_console(plans_line(results)), highlight=False, soft_wrap=True)
    info = results.regrade
    if info.not_in_plan:
        console.print(f"[yellow]not in {for_console(fixed_plan)}, not graded here: "
                      f"{for_console(', '.join(info.not_in_plan))}[/]", highlight=False)
    console.print(f"regrade (sealed): {for_console(folder)}; the run's own results are unchanged", highlight=False,
                  soft_wrap=True)
    if json_mode:
        click.echo(json.dumps({"runs": [{"plan": results.plan, "run_dir": str(run_dir), "regrade_dir": str(folder),
                                         "regrade": info.model_dump(mode="json"), "summary": results.summary,
                                         "integrity": results.integrity.model_dump(mode="json"),
                                         "steps": [s.model_dump(mode="json") for s in results.steps]}]}, indent=2))
    return results.exit_code(strict)
