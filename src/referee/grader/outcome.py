"""What a step's record says beside its verdict: the agent's exit, timeout and stderr tail, the step's
duration, its earlier attempts, and whether it ran at all. Pure: the manifest and hash-checked files only.
"""

from __future__ import annotations

import datetime as _dt
import difflib
import json

from referee.core.safetext import visible
from referee.errors import EvidenceError
from referee.grader.evidence import RunEvidence
from referee.grader.results import AgentOutcome, Attempt, StepResult
from referee.plan.loader import LoadedPlan
from referee.rundir.schema import StepRecord

TAIL_LINES = 5  # lines of the agent's stderr shown beside the verdict
LINE_CHARS = 200


def _when(stamp: str | None) -> _dt.datetime | None:
    if not stamp:
        return None
    try:
        return _dt.datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return None


def seconds(started: str | None, finished: str | None) -> float | None:
    """Seconds between two manifest timestamps, to the millisecond; None when one is missing.

    >>> seconds("2026-01-01T00:00:00.000Z", "2026-01-01T00:00:01.250Z")
    1.25
    """
    a, b = _when(started), _when(finished)
    return round((b - a).total_seconds(), 3) if a and b else None


def duration(rec: StepRecord) -> float | None:
    """From the step's first start to its last finish (every attempt counts)."""
    first = rec.attempts[0].record.started if rec.attempts else rec.started
    return seconds(first, rec.finished)


def printable(text: str) -> str:
    """Text from the agent, fit for a terminal, an HTML page or XML 1.0: control characters, bidi
    overrides and lone surrogates as escapes; tabs and newlines kept (`referee.core.safetext.visible`).

    >>> printable("red \\x1b[31mX\\x00 tab\\tok")
    'red \\\\x1b[31mX\\\\x00 tab\\tok'
    """
    return visible(text)


def tail_lines(data: bytes, n: int = TAIL_LINES, width: int = LINE_CHARS) -> list[str]:
    """The last `n` non-empty lines of some output, each cut to `width` characters, control characters escaped.

    >>> tail_lines(b"a\\n\\nb\\nc\\n", n=2)
    ['b', 'c']
    """
    lines = [ln.rstrip() for ln in data[-64 * 1024:].decode("utf-8", errors="replace").splitlines()]
    lines = [ln for ln in lines if ln.strip()][-n:]
    return [printable(ln if len(ln) <= width else ln[:width - 1] + "…") for ln in lines]


def stderr_tail(ev: RunEvidence, step_id: str) -> list[str]:
    """The last lines of `agent/<step>/stderr.txt` when the manifest lists it (hash-checked); [] otherwise."""
    path = f"agent/{step_id}/stderr.txt"
    entry = next((f for f in ev.manifest.files if f.path == path and f.step == step_id), None)
    if entry is None:
        return []
    try:
        data = ev.verified_bytes(entry)  # the bytes checked against the manifest as they are read
    except (EvidenceError, OSError) as exc:
        return [f"(stderr.txt not shown: {getattr(exc, 'message', exc)})"]
    return tail_lines(data)


def agent_outcome(plan: LoadedPlan, step_id: str, rec: StepRecord, ev: RunEvidence) -> AgentOutcome:
    """How the agent's run of the step ended, from its record; the stderr tail from its stderr.txt."""
    step = next((s for s in plan.plan.steps if s.id == step_id), None)
    actor_timeout = plan.plan.actor.timeout_s if plan.plan.actor else 120.0
    timeout = (step.timeout_s if step is not None and step.timeout_s else None) or actor_timeout
    return AgentOutcome(started=rec.actor_started, exit_code=rec.actor_exit, timed_out=rec.actor_timed_out,
                        timeout_s=timeout, error=rec.actor_error, stdout_bytes=rec.stdout_bytes,
                        stderr_bytes=rec.stderr_bytes, stderr_tail=stderr_tail(ev, step_id),
                        agent_s=rec.agent_s, runner_s=rec.runner_s, claim_warning=claim_key_warning(ev, step_id))


def not_run(step_id: str, rec: StepRecord) -> StepResult:
    """A step the run left out: SKIPPED, never PASS, saying why."""
    if rec.not_run == "fail_fast":
        why = f"not run: {rec.note or '--fail-fast stopped the run before it'}"
    else:
        why = f"not run: {rec.note or 'deselected by --only/-k'}"
    return StepResult(id=step_id, verdict="SKIPPED", reason=why, not_run=rec.not_run or "deselected")


def with_attempts(res: StepResult, rec: StepRecord) -> StepResult:
    """The last attempt's verdict, told with the earlier ones: a pass after a failure is FLAKY, never PASS."""
    if not rec.attempts:
        return res
    res.attempts = [Attempt(attempt=a.attempt, verdict=a.verdict, reason=a.reason, duration_s=seconds(
        a.record.started, a.record.finished), claim=a.claim,
        overclaim=bool(a.claim and a.claim.get("pass") is True and a.verdict != "PASS")) for a in rec.attempts]
    n = len(rec.attempts) + 1
    first = rec.attempts[0]
    if res.verdict == "PASS":
        res.verdict = "FLAKY"
        res.reason = f"passed on attempt {n}; attempt {first.attempt} was {first.verdict}: {first.reason}"
    elif res.verdict in ("FAIL", "ERROR"):
        res.reason = f"{res.reason} (attempt {n} of {n}; earlier: {', '.join(a.verdict for a in rec.attempts)})"
    return res


CLAIM_KEYS = ("pass", "note", "evidence")  # the command-actor protocol's claim file


def claim_key_warning(ev: RunEvidence, step_id: str) -> str | None:
    """A word on keys of the agent's claim file the protocol does not know (`{"passed": true}` is no claim of pass),
    with the nearest known key; None when every key is known or the file is not there. Read from the sealed file.

    >>> from types import SimpleNamespace as NS
    >>> fake = NS(manifest=NS(files=[NS(path="agent/s/claim.json", step="s")]),
    ...           verified_bytes=lambda e: b'{"passed": true, "note": "ok"}')
    >>> claim_key_warning(fake, "s")
    "unknown key 'passed' in the claim file (did you mean 'pass'?); the claim file has pass, note, evidence"
    """
    path = f"agent/{step_id}/claim.json"
    entry = next((f for f in ev.manifest.files if f.path == path and f.step == step_id), None)
    if entry is None:
        return None
    try:
        data = json.loads(ev.verified_bytes(entry)[:1 << 20])
    except (EvidenceError, OSError, ValueError, RecursionError):
        return None  # a malformed claim is "no claim" already, said elsewhere
    if not isinstance(data, dict):
        return None
    unknown = [str(k) for k in data if k not in CLAIM_KEYS and k != "claim_version"][:3]
    if not unknown:
        return None
    words = []
    for key in unknown:
        near = difflib.get_close_matches(key.lower(), CLAIM_KEYS, n=1, cutoff=0.5)
        words.append(f"unknown key {printable(key[:40])!r} in the claim file"
                     + (f" (did you mean {near[0]!r}?)" if near else ""))
    return "; ".join(words) + f"; the claim file has {', '.join(CLAIM_KEYS)}"
