"""report.html's parts for a step's run: duration and attempts under the verdict, and the agent's exit,
timeout and output (a collapsible block) beside its claim. Every string is escaped here."""

from __future__ import annotations

import html
from typing import Any

from referee.report.agentout import Tail, printable, size_text
from referee.report.steplines import seconds_text

CSS = """
.v-FLAKY{background:#9a6700}.s-FLAKY{color:#9a6700}
.agent{margin-bottom:4px}.agent.bad{color:#b3261e;font-weight:600}
details.out summary,details.tries summary{cursor:pointer;color:#5b6475}
details.out pre{max-height:320px;overflow:auto;background:#f6f8fa;border:1px solid #d5d9e0;padding:6px;
margin:4px 0;white-space:pre-wrap;overflow-wrap:anywhere;font-size:12px}
ul.tries{margin:4px 0;padding-left:16px;font-size:12px;max-width:320px}
details.out{min-width:320px}
"""


def esc(value: Any) -> str:
    """Agent text for HTML: control characters as escapes, then HTML-escaped.

    >>> esc("<b>\\x1b[1m")
    '&lt;b&gt;\\\\x1b[1m'
    """
    return html.escape(printable("" if value is None else str(value)), quote=True)


def verdict_extra(step: dict[str, Any]) -> str:
    """Under the verdict: how long the step took and, for a retried step, each earlier attempt."""
    out = []
    dur = step.get("duration_s")
    if isinstance(dur, (int, float)):
        agent = step.get("agent")
        own, runner = (agent.get("agent_s"), agent.get("runner_s")) if isinstance(agent, dict) else (None, None)
        split = (f" (agent {seconds_text(float(own))}, runner {seconds_text(float(runner))})"
                 if isinstance(own, (int, float)) and isinstance(runner, (int, float)) else "")
        out.append(f'<div class="meta">{esc(seconds_text(float(dur)) + split)}</div>')
    attempts = [a for a in step.get("attempts") or [] if isinstance(a, dict)]
    if attempts:
        items = "".join(
            f'<li>attempt {esc(a.get("attempt"))}: <b class="s-{esc(a.get("verdict"))}">{esc(a.get("verdict"))}</b> '
            f'{esc(a.get("reason"))}{_attempt_claim(a)}'
            + (f' ({esc(seconds_text(a["duration_s"]))})' if isinstance(a.get("duration_s"), (int, float)) else "")
            + f' <span class="meta">attempts/{esc(step.get("id"))}/{esc(a.get("attempt"))}/</span>'
            + f'{_attempt_note(a)}</li>'
            for a in attempts)
        out.append(f'<details class="tries"><summary>{len(attempts) + 1} attempts</summary>'
                   f'<ul class="tries">{items}</ul></details>')
    return "".join(out)


def _attempt_claim(a: dict[str, Any]) -> str:
    """What the agent claimed in an earlier attempt, OVERCLAIM marked: a retry never hides a false pass."""
    claim = a.get("claim")
    if not isinstance(claim, dict):
        return ""
    passed = claim.get("pass")
    said = "pass" if passed is True else "not pass" if passed is False else "?"
    mark = '<b class="s-overclaims">OVERCLAIM</b> ' if a.get("overclaim") else ""
    return f' <span class="meta">{mark}claimed {esc(said)}</span>'


def _attempt_note(a: dict[str, Any]) -> str:
    """The note of an earlier attempt's claim, under its line: what the agent said of a pass it did not make."""
    claim = a.get("claim")
    note = claim.get("note") if isinstance(claim, dict) else None
    # agent text: escaped like the step's own claim note (control characters visible, then HTML-escaped)
    return f'<div class="note">{esc(note)}</div>' if note else ""


def agent_block(step: dict[str, Any], tails: list[Tail]) -> str:
    """Beside the claim: how the agent's run ended, and its stdout/stderr tails in a collapsible block."""
    agent = step.get("agent")
    if not isinstance(agent, dict):
        return ""
    started, code, timed_out = agent.get("started", True), agent.get("exit_code"), agent.get("timed_out")
    if started is False:
        status = "could not start"
    elif timed_out:
        t = agent.get("timeout_s")
        status = f"timed out after {t:g}s" if isinstance(t, (int, float)) else "timed out"
    else:
        status = f"exit {code}" if code is not None else "no exit code"
    failed = started is False or bool(timed_out) or (code is not None and code != 0)
    head = f'<div class="agent{" bad" if failed else ""}">agent: {esc(status)}</div>'
    if not tails:
        return head
    label = ", ".join(f"{t.name.removesuffix('.txt')} {size_text(t.size)}" for t in tails)
    parts = []
    for t in tails:
        if t.problem:
            parts.append(f'<div class="meta">{esc(t.name)}: {esc(t.problem)}</div>')
            continue
        if not t.size:
            parts.append(f'<div class="meta">{esc(t.name)}: empty</div>')
            continue
        part = "" if t.shown >= t.size else f" (the last {size_text(t.shown)} of {size_text(t.size)})"
        parts.append(f'<div class="meta">{esc(t.name)}{esc(part)}</div><pre>{esc(t.text)}</pre>')
    return (f'{head}<details class="out"{" open" if failed else ""}><summary>agent output: {esc(label)}</summary>'
            f'{"".join(parts)}</details>')
