"""The console view of a run: a live step table while running and the verdict table with overclaims after.

Every string that reaches the console here is a `Text` (never parsed as rich markup) with its control
characters made visible (`safetext.visible`): a claim note `[/]` or `\x1b[31m` is shown, not acted on.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from referee.core.safetext import visible
from referee.grader.results import RunResults
from referee.report.steplines import agent_cell, done_line, event_line, stderr_rows, time_cell

if TYPE_CHECKING:
    from rich.live import Live

STYLE = {"PASS": "bold green", "FAIL": "bold red", "SKIPPED": "yellow", "ERROR": "bold magenta",
         "FLAKY": "bold yellow"}


def claim_text(claim: dict | None) -> Text:
    if claim is None:
        return Text("no claim", style="dim")
    p = claim.get("pass")
    label = "pass" if p is True else "fail" if p is False else "?"
    note = visible(str(claim.get("note", "")).replace("\n", " ")[:60], keep_newlines=False)
    return Text(f"{label}: {note}" if note else label)


def _text(value: object) -> Text:
    """Untrusted text as a console cell: no markup, control characters visible."""
    return Text(visible(value, keep_newlines=False))


def verdict_table(results: RunResults, title: str | None = None) -> Table:
    """The verdict table: the runner's verdict beside the agent's claim, overclaims marked."""
    t = Table(title=_text(title or f"referee: {results.plan}"), title_justify="left", expand=False)
    t.add_column("step", no_wrap=True)
    t.add_column("verdict", no_wrap=True)
    t.add_column("time", no_wrap=True)
    t.add_column("agent")
    t.add_column("agent claimed")
    t.add_column("why")
    for s in results.steps:
        verdict = Text(s.verdict, style=STYLE[s.verdict])
        claim = claim_text(s.claim) if not s.not_run else Text("")
        if s.overclaim:
            claim = Text.assemble(("OVERCLAIM ", "bold red"), claim)
        if earlier := [str(a.attempt) for a in s.attempts if a.overclaim]:  # a retry never hides a false pass
            claim = Text.assemble(claim, (f" (OVERCLAIM in attempt {', '.join(earlier)})", "bold red"))
        if s.agent is not None and s.agent.claim_warning:  # `{"passed": true}` is no claim of pass: say why
            claim = Text.assemble(claim, (f" (warning: {visible(s.agent.claim_warning, keep_newlines=False)})",
                                          "yellow"))
        t.add_row(_text(s.id), verdict, time_cell(s), agent_cell(s), claim, _text(s.reason))
        if (tail := stderr_rows(s)) is not None:  # under the step, in the widest column
            t.add_row("", "", "", Text("stderr:", style="dim"), "", tail)
    return t


def summary_line(results: RunResults) -> Text:
    s = results.summary
    shown = [v for v in STYLE if v != "FLAKY" or s.get(v, 0)]  # FLAKY only when a retry passed
    parts = [Text(f"{s.get(v, 0)} {v}", style=STYLE[v] if s.get(v, 0) else "dim") for v in shown]
    not_run = sum(1 for st in results.steps if st.not_run)
    if not_run:
        parts.append(Text(f"{not_run} not run", style="yellow"))
    over = s.get("overclaims", 0)
    parts.append(Text(f"{over} overclaim{'s' if over != 1 else ''}", style="bold red" if over else "dim"))
    # shown when there are any: an ERROR inside a FAIL step is a plan mistake, a crashed agent a broken job
    for key, word in (("plan_errors", "plan error"), ("agent_failures", "agent failure")):
        if n := s.get(key, 0):
            parts.append(Text(f"{n} {word}{'s' if n != 1 else ''}", style="bold yellow"))
    return Text(" · ").join(parts)


def isolation_line(iso: Any) -> Text | None:
    """How the agent ran (a manifest's `isolation`), loud when it was unisolated; None when no agent ran.

    >>> isolation_line({"mode": "none", "note": "actor.isolation: none in the plan"}).plain[:11]
    'UNISOLATED:'
    """
    if iso is None:
        return None
    if not isinstance(iso, dict):
        iso = iso.model_dump()
    if iso.get("mode") == "none":
        return Text(f"UNISOLATED: the agent ran with the runner's own rights ({iso.get('note') or 'no reason given'}); "
                    "it could have rewritten the run directory or read the runner's environment",
                    style="bold red")
    who = f" as {iso['user']}" if iso.get("user") else ""
    note = f"; {iso['note']}" if iso.get("note") else ""
    return Text(f"agent isolation: {iso.get('mode')}{who}, processes tracked by {iso.get('tracking')}{note}",
                style="dim")


def integrity_line(results: RunResults) -> Text:
    """One line on the seal: verified (key and run id), UNVERIFIED (graded with --allow-unsigned) or FAILED.

    >>> from referee.grader.results import Integrity
    >>> r = RunResults(plan="p", steps=[], summary={}, integrity=Integrity(status="failed", reason="plan.yaml differs"))
    >>> integrity_line(r).plain
    'SEAL CHECK FAILED: plan.yaml differs; every step is ERROR'
    """
    i = results.integrity
    if i.status == "verified":
        return Text(f"evidence: sealed by the runner, seal verified (key {i.key_id}, run {i.run_id})", style="dim")
    if i.status == "unverified":
        return Text(f"UNVERIFIED: {i.reason}; these verdicts are only as good as the files", style="bold yellow")
    return Text(f"SEAL CHECK FAILED: {i.reason}; every step is ERROR", style="bold red")


class LiveSteps:
    """Rows for steps as they run: shows what the agent is doing and what it claimed, not verdicts."""

    def __init__(self, console: Console, plan_name: str, step_ids: list[str]) -> None:
        self.console, self.plan_name = console, plan_name
        self.state: dict[str, list[str]] = {sid: ["waiting", ""] for sid in step_ids}
        self.live: Live | None = None

    def __rich__(self) -> Table:
        t = Table(title=_text(f"running {self.plan_name}"), title_justify="left")
        t.add_column("step")
        t.add_column("state")
        t.add_column("agent claimed")
        for sid, (state, claim) in self.state.items():
            t.add_row(_text(sid), state, _text(claim))
        return t

    def __enter__(self) -> "LiveSteps":
        if self.console.is_terminal:
            from rich.live import Live

            self.live = live = Live(self, console=self.console, refresh_per_second=8, transient=True)
            live.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        if self.live is not None:
            self.live.__exit__(*exc)

    def event(self, kind: str, step_id: str, data: dict[str, Any]) -> None:
        if kind == "isolation":
            if data.get("mode") == "none":  # say it before the agent acts, not only in the summary
                self.console.print(isolation_line(data), highlight=False)
            return
        row = self.state.setdefault(step_id, ["", ""])
        if kind == "start":
            row[0] = "acting…"
        elif kind == "acted":
            row[0] = "capturing…"
            row[1] = claim_text(data.get("claim")).plain if data.get("claim") else f"no claim ({data.get('no_claim')})"
            if data.get("timed_out"):
                row[0] = "timed out; capturing…"
        elif kind == "done":
            row[0] = "done"
        elif kind in ("graded", "retry", "not_run"):
            row[0] = (event_line(kind, step_id, data) or "").split(": ", 1)[-1]
        if self.live is not None:
            self.live.refresh()
        elif kind == "done":
            self.console.print(Text("  " + done_line(step_id, data, row[1])), highlight=False)
        elif (line := event_line(kind, step_id, data)) is not None:
            self.console.print(Text("  " + line), highlight=False)
