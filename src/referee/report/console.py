"""The console view of a run: live step rows and the verdict table on a terminal; plain lines elsewhere.

A terminal gets rich's live table while steps run and the verdict table after. Anything else (a pipe,
a CI log) gets plain lines that are never cut or wrapped, whatever its width: one line as each step
starts, as its agent ends, per OCR'd screenshot, with its verdict as soon as it is graded, each
prefixed `[plan]`; then one line per step's verdict. Steps --only/-k left out are one "N deselected",
never rows. Every string that reaches the console here is a `Text` (never parsed as rich markup) with
its control characters made visible (`safetext.visible`): a claim note `[/]` or `\x1b[31m` is shown,
not acted on.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from referee.core.safetext import visible
from referee.grader.results import RunResults
from referee.report.steplines import agent_cell, done_line, event_line, ocr_line, printable, stderr_rows, time_cell

if TYPE_CHECKING:
    from rich.live import Live

STYLE = {"PASS": "bold green", "FAIL": "bold red", "SKIPPED": "yellow", "ERROR": "bold magenta",
         "FLAKY": "bold yellow"}
# without a terminal, rich would draw at 80 columns (or $COLUMNS): cells cut with '…', lines folded in two
PLAIN_WIDTH = 10_000


def make_console(stderr: bool = False) -> Console:
    """A console for people: rich's own on a terminal; otherwise one whose lines are never cut or wrapped.

    >>> import io, contextlib
    >>> with contextlib.redirect_stdout(io.StringIO()):  # a pipe, not a terminal
    ...     console = make_console()
    >>> console.width, console.soft_wrap
    (10000, True)
    """
    console = Console(stderr=stderr, highlight=False)
    if console.is_terminal:
        return console
    return Console(stderr=stderr, highlight=False, soft_wrap=True, width=PLAIN_WIDTH)


NOTE_CHARS = 60  # of a claim's note in a table cell
LOG_NOTE_CHARS = 300  # on a log's verdict line, which no column squeezes


def claim_text(claim: dict | None, note_chars: int = NOTE_CHARS) -> Text:
    """`pass: NOTE`, `fail: NOTE`, `?` (no pass given) or `no claim`, the note on one line and cut to `note_chars`.

    >>> claim_text({"pass": True, "note": "done\\nall of it"}).plain
    'pass: done all of it'
    """
    if claim is None:
        return Text("no claim", style="dim")
    p = claim.get("pass")
    label = "pass" if p is True else "fail" if p is False else "?"
    note = visible(str(claim.get("note", "")).replace("\n", " ")[:note_chars], keep_newlines=False)
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
    for s in shown_steps(results):
        verdict = Text(s.verdict, style=STYLE[s.verdict])
        t.add_row(_text(s.id), verdict, time_cell(s), agent_cell(s), claim_cell(s), _text(s.reason))
        if (tail := stderr_rows(s)) is not None:  # under the step, in the widest column
            t.add_row("", "", "", Text("stderr:", style="dim"), "", tail)
    return t


def shown_steps(results: RunResults) -> list:
    """The steps a verdict table lists: not those --only/-k left out (the summary counts them)."""
    return [s for s in results.steps if s.not_run != "deselected"]


def claim_cell(s, note_chars: int = NOTE_CHARS) -> Text:
    """What the agent claimed, marked OVERCLAIM (in this attempt or an earlier one), with a claim file's warning."""
    claim = claim_text(s.claim, note_chars) if not s.not_run else Text("")
    if s.overclaim:
        claim = Text.assemble(("OVERCLAIM ", "bold red"), claim)
    if earlier := [str(a.attempt) for a in s.attempts if a.overclaim]:  # a retry never hides a false pass
        claim = Text.assemble(claim, (f" (OVERCLAIM in attempt {', '.join(earlier)})", "bold red"))
    if s.agent is not None and s.agent.claim_warning:  # `{"passed": true}` is no claim of pass: say why
        claim = Text.assemble(claim, (f" (warning: {visible(s.agent.claim_warning, keep_newlines=False)})",
                                      "yellow"))
    return claim


def verdict_lines(results: RunResults, title: str | None = None) -> list[Text]:
    """The verdict table as plain lines for a log: a title, then per step `  id: VERDICT · time · agent · claimed:
    ... · why`, each of the agent's stderr lines (when its run failed) on a line of its own below."""
    lines = [_text(title or f"referee: {results.plan}")]
    for s in shown_steps(results):
        parts = [Text(s.verdict, style=STYLE[s.verdict])]
        parts += [cell for cell in (time_cell(s), agent_cell(s)) if cell.plain]
        if not s.not_run:
            parts.append(Text.assemble("claimed: ", claim_cell(s, LOG_NOTE_CHARS)))
        parts.append(_text(s.reason))
        lines.append(Text.assemble("  ", _text(s.id), ": ", Text(" · ").join(parts)))
        if stderr_rows(s) is not None and s.agent is not None:
            lines += [Text(f"    stderr: {printable(line)}", style="dim") for line in s.agent.stderr_tail]
    return lines


def print_verdicts(console: Console, results: RunResults, title: str | None = None) -> None:
    """The verdicts: rich's table on a terminal, plain lines (never cut, never wrapped) anywhere else."""
    if console.is_terminal:
        console.print(verdict_table(results, title))
        return
    for line in verdict_lines(results, title):
        console.print(line, highlight=False)


def summary_line(results: RunResults) -> Text:
    s = dict(results.summary)
    deselected = sum(1 for st in results.steps if st.not_run == "deselected")
    if "deselected" not in s:  # an older summary counted them as SKIPPED
        s["SKIPPED"] = s.get("SKIPPED", 0) - deselected
    shown = [v for v in STYLE if v != "FLAKY" or s.get(v, 0)]  # FLAKY only when a retry passed
    parts = [Text(f"{s.get(v, 0)} {v}", style=STYLE[v] if s.get(v, 0) else "dim") for v in shown]
    if stopped := sum(1 for st in results.steps if st.not_run == "fail_fast"):  # among the SKIPPED, said once
        parts[shown.index("SKIPPED")].append(f" ({stopped} not run: --fail-fast)")
    if deselected:
        parts.append(Text(f"{deselected} deselected", style="dim"))
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
    """Steps as they run: on a terminal, live rows of what the agent is doing, what it claimed and the verdict;
    elsewhere a line per event, `[plan] step: ...`, printed as it happens.

    `step_ids`: the steps the run performs; `deselected`: how many --only/-k left out (one line says so)."""

    def __init__(self, console: Console, plan_name: str, step_ids: list[str], deselected: int = 0) -> None:
        self.console, self.plan_name, self.deselected = console, plan_name, deselected
        self.prefix = f"[{visible(plan_name, keep_newlines=False)}] "
        self.state: dict[str, list[str]] = {sid: ["waiting", ""] for sid in step_ids}
        self.attempt: dict[str, str] = {}  # a retried step's next start says which attempt it is
        self.live: Live | None = None

    def __rich__(self) -> Table:
        t = Table(title=_text(f"running {self.plan_name}"), title_justify="left")
        t.add_column("step")
        t.add_column("state")
        t.add_column("agent claimed")
        for sid, (state, claim) in self.state.items():
            t.add_row(_text(sid), state, _text(claim))
        if self.deselected:
            t.caption = f"{self.deselected} deselected by --only/-k"
        return t

    def __enter__(self) -> "LiveSteps":
        if self.console.is_terminal:
            from rich.live import Live

            self.live = live = Live(self, console=self.console, refresh_per_second=8, transient=True)
            live.__enter__()
        elif self.deselected:
            self.say(f"{self.deselected} deselected by --only/-k; performing {len(self.state)}")
        return self

    def __exit__(self, *exc) -> None:
        if self.live is not None:
            self.live.__exit__(*exc)

    def say(self, line: str) -> None:
        """One line of the plan's progress, prefixed with its name (plans run with -j share a log)."""
        self.console.print(Text(self.prefix + line), highlight=False)

    def event(self, kind: str, step_id: str, data: dict[str, Any]) -> None:
        if kind == "isolation":
            if data.get("mode") == "none":  # say it before the agent acts, not only in the summary
                self.console.print(isolation_line(data), highlight=False)
            return
        if kind == "not_run" and data.get("why") == "deselected":
            return  # counted once, never a row
        row = self.state.setdefault(step_id, ["", ""])
        line: str | None = None
        if kind == "start":
            row[0] = "acting…"
            line = printable(f"{step_id}: started{self.attempt.get(step_id, '')}")
        elif kind == "acted":
            row[0] = "capturing…"
            row[1] = claim_text(data.get("claim")).plain if data.get("claim") else f"no claim ({data.get('no_claim')})"
            if data.get("timed_out"):
                row[0] = "timed out; capturing…"
        elif kind == "done":
            row[0] = "grading…"
            line = done_line(step_id, data, row[1])
        elif kind == "ocr":
            line = ocr_line(step_id, data)
            row[0] = line.split(": ", 1)[-1] + ("…" if data.get("seconds") is None else "")
        elif kind in ("graded", "retry", "not_run"):
            if kind == "retry":
                self.attempt[step_id] = f" (attempt {data.get('attempt')} of {data.get('of')})"
            line = event_line(kind, step_id, data)
            row[0] = str(data.get("verdict") or "") if kind == "graded" else (line or "").split(": ", 1)[-1]
        if self.live is not None:
            self.live.refresh()
        elif line is not None:
            self.say(line)
