"""How a step's agent run, duration and attempts read in the console: the verdict table's cells and
the lines printed as steps end. Agent text is shown with control characters escaped, never as markup.
"""

from __future__ import annotations

from typing import Any

from rich.text import Text

from referee.grader.outcome import printable as escaped
from referee.grader.results import AgentOutcome, StepResult


def printable(text: Any) -> str:
    """One line of agent text for the console: control characters escaped, no newlines.

    >>> printable("a\\x1b[2Jb\\nc")
    'a\\\\x1b[2Jb c'
    """
    return escaped(str(text).replace("\r\n", " ").replace("\n", " ")).replace("\t", " ")


def seconds_text(s: float | None) -> str:
    """`0.42s`, `12.3s`, `2m05s`; empty for None.

    >>> seconds_text(0.421), seconds_text(12.34), seconds_text(125), seconds_text(None)
    ('0.42s', '12.3s', '2m05s', '')
    """
    if s is None:
        return ""
    if s < 10:
        return f"{s:.2f}s"
    if s < 60:
        return f"{s:.1f}s"
    return f"{int(s // 60)}m{int(s % 60):02d}s"


def agent_status(agent: AgentOutcome | None) -> Text:
    """`exit 0` (dim), `exit 3`, `timed out after 2s`, `could not start` (red)."""
    if agent is None:
        return Text("")
    return Text(agent.status(), style="bold red" if agent.failed else "dim")


def agent_cell(step: StepResult) -> Text:
    """The agent column: how its run ended."""
    return agent_status(step.agent)


def stderr_rows(step: StepResult) -> Text | None:
    """The last lines of the agent's stderr when its run failed (not started: the reason says why already)."""
    agent = step.agent
    if agent is None or not agent.failed or not agent.started or not agent.stderr_tail:
        return None
    # folded, never cut with an ellipsis: the end of a traceback line is what matters
    return Text("\n".join(printable(line) for line in agent.stderr_tail), style="dim", overflow="fold")


def time_cell(step: StepResult) -> Text:
    """The step's time, and the agent's own share of it when the runner's captures and hashing took a second or more."""
    text = seconds_text(step.duration_s)
    agent = step.agent
    if agent is not None and agent.agent_s is not None and (agent.runner_s or 0) >= 1.0:
        text += f" (agent {seconds_text(agent.agent_s)})"
    if step.attempts:
        text += f" ({len(step.attempts) + 1} attempts)"
    return Text(text, style="dim")


def done_line(step_id: str, data: dict[str, Any], claim: str) -> str:
    """The line printed when a step ends (consoles that are not terminals: CI logs).

    >>> done_line("s", {"exit_code": 3, "seconds": 0.2}, "no claim (no claim file)")
    's: agent exited 3 after 0.20s; claimed: no claim (no claim file)'
    >>> done_line("s", {"exit_code": 0, "seconds": 25.2, "agent_seconds": 0.5, "runner_seconds": 24.7}, "pass")
    's: agent exited 0 after 0.50s (runner: captures and hashing 24.7s); claimed: pass'
    >>> done_line("s", {"started": False, "error": "the agent could not be started: sh: x: not found"}, "")
    's: the agent could not be started: sh: x: not found'
    """
    # the agent's own time when the runner kept it apart: its captures and hashing are not the agent's
    own = data.get("agent_seconds", data.get("seconds"))
    took = f" after {seconds_text(own)}" if own is not None else ""
    if data.get("agent_seconds") is not None and (data.get("runner_seconds") or 0) >= 1.0:
        took += f" (runner: captures and hashing {seconds_text(data['runner_seconds'])})"
    if data.get("started") is False:
        return printable(f"{step_id}: {data.get('error') or 'the agent could not be started'}")
    if data.get("timed_out"):
        what = f"agent {data.get('error') or 'timed out'}"
    elif data.get("exit_code") is None:
        what = f"done{took}"
    else:
        what = f"agent exited {data['exit_code']}{took}"
    return printable(f"{step_id}: {what}; claimed: {claim}")


def ocr_line(step_id: str, data: dict[str, Any]) -> str:
    """The line as OCR of an evidence file starts (`seconds` None) and as it ends: what a slow grading waits on.

    >>> ocr_line("s", {"file": "agent/s/shot.png", "engine": "tesseract", "seconds": None})
    's: OCR of agent/s/shot.png (tesseract)'
    >>> ocr_line("s", {"file": "agent/s/shot.png", "engine": "tesseract", "seconds": 1.25})
    's: OCR of agent/s/shot.png read in 1.25s'
    """
    what = f"{step_id}: OCR of {data.get('file')}"
    if data.get("seconds") is None:
        return printable(f"{what} ({data.get('engine')})")
    return printable(f"{what} read in {seconds_text(data['seconds'])}")


def event_line(kind: str, step_id: str, data: dict[str, Any]) -> str | None:
    """The line for a graded step (with the reason when it did not pass), a retry, or a step not run; None for
    other events.

    >>> event_line("retry", "s", {"attempt": 2, "of": 3, "verdict": "FAIL", "reason": "x"})
    's: FAIL; performing it again (attempt 2 of 3)'
    >>> event_line("graded", "s", {"verdict": "FAIL", "reason": "v#0: exit code 1, expected 0"})
    's: FAIL: v#0: exit code 1, expected 0'
    """
    if kind == "graded":
        verdict, reason = data.get("verdict"), data.get("reason")
        return printable(f"{step_id}: {verdict}" + (f": {reason}" if reason and verdict != "PASS" else ""))
    if kind == "retry":
        return printable(f"{step_id}: {data.get('verdict')}; performing it again (attempt {data.get('attempt')} "
                         f"of {data.get('of')})")
    if kind == "not_run":
        return printable(f"{step_id}: not run ({data.get('note')})")
    return None
