"""junit.xml for CI systems: FAIL -> failure, ERROR -> error, SKIPPED -> skipped, FLAKY -> a pass with
`flakyFailure`/`flakyError` (Maven Surefire's reruns); `time` per step; the agent's output in
`system-out`/`system-err`. A step --only/-k left out is no testcase (as pytest writes deselected tests):
the property `referee.deselected` counts them.

Every string passes through `safetext.for_xml` first: ElementTree escapes markup but writes a NUL or
a lone surrogate as it is, which no XML parser accepts.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping
from xml.etree import ElementTree as ET

from referee.core.fsutil import atomic_write_bytes
from referee.core.safetext import for_xml as x
from referee.grader.results import RunResults, StepResult
from referee.report.agentout import Tail


def _time(seconds: float | None) -> str:
    return f"{seconds or 0:.3f}"


def _agent_err(step: StepResult, tails: list[Tail]) -> str | None:
    """system-err: how the agent's run ended, then the tail of its stderr."""
    if step.agent is None:
        return None
    lines = [f"agent: {step.agent.status()}" + (f" ({step.agent.error})" if step.agent.error else "")]
    lines += [t.text if not t.problem else f"({t.name}: {t.problem})" for t in tails if t.name == "stderr.txt"]
    return x("\n".join(line for line in lines if line))


def junit_xml(results: RunResults, isolation: Any = None,
              outputs: Mapping[str, list[Tail]] | None = None) -> bytes:
    """Render results as a JUnit testsuite, one testcase per step.

    >>> from referee.grader.results import StepResult
    >>> r = RunResults(plan="p", steps=[StepResult(id="a", verdict="SKIPPED", reason="no validator")],
    ...                summary={"PASS": 0, "FAIL": 0, "SKIPPED": 1, "ERROR": 0})
    >>> b"<skipped" in junit_xml(r)
    True
    """
    s = results.summary
    steps = [st for st in results.steps if st.not_run != "deselected"]
    skipped = sum(1 for st in steps if st.verdict == "SKIPPED")
    suite = ET.Element("testsuite", name=x(f"referee.{results.plan}"), tests=str(len(steps)),
                       failures=str(s.get("FAIL", 0)), errors=str(s.get("ERROR", 0)), skipped=str(skipped))
    suite.set("time", _time(sum(st.duration_s or 0 for st in steps)))
    # whether the evidence was the runner's (sealed and verified), unverified, or refused: CI shows it
    props = ET.SubElement(suite, "properties")
    ET.SubElement(props, "property", name="referee.integrity", value=results.integrity.status)
    if results.integrity.reason:
        ET.SubElement(props, "property", name="referee.integrity.reason", value=x(results.integrity.reason))
    for key in ("overclaims", "plan_errors", "agent_failures"):  # what a job watching totals reads
        ET.SubElement(props, "property", name=f"referee.{key}", value=str(s.get(key, 0)))
    if deselected := len(results.steps) - len(steps):
        ET.SubElement(props, "property", name="referee.deselected", value=str(deselected))
    if isolation is not None:  # the manifest's: `none` means the agent ran unisolated
        ET.SubElement(props, "property", name="referee.isolation",
                      value="unisolated" if isolation.mode == "none" else isolation.mode)
        if isolation.note:
            ET.SubElement(props, "property", name="referee.isolation.note", value=x(isolation.note))
    for step in steps:
        case = ET.SubElement(suite, "testcase", classname=x(f"referee.{results.plan}"), name=x(step.id),
                             time=_time(step.duration_s))
        reason = x(step.reason)
        if step.verdict == "FAIL":
            ET.SubElement(case, "failure", message=reason[:500]).text = reason
        elif step.verdict == "ERROR":
            ET.SubElement(case, "error", message=reason[:500]).text = reason
        elif step.verdict == "SKIPPED":
            ET.SubElement(case, "skipped", message=reason)
        # earlier attempts as Maven Surefire writes reruns: flaky* in a passing case, rerun* in a failing one
        for a in step.attempts:
            tag = ("flaky" if step.verdict == "FLAKY" else "rerun") + ("Failure" if a.verdict == "FAIL" else "Error")
            said = "" if a.claim is None else f" (agent claimed pass={a.claim.get('pass')}" + \
                (", OVERCLAIM)" if a.overclaim else ")")
            why = x(f"attempt {a.attempt}: {a.verdict}: {a.reason}{said}")
            ET.SubElement(case, tag, message=why[:500], type=a.verdict).text = why
        tails = (outputs or {}).get(step.id, [])
        out = []
        if step.claim is not None:
            claim = step.claim
            note = f"agent claimed pass={claim.get('pass')}: {claim.get('note', '')}"
            if step.overclaim:
                note = "OVERCLAIM " + note
            out.append(note)
        if step.agent is not None and step.agent.claim_warning:
            out.append(f"warning: {step.agent.claim_warning}")
        out += [t.text for t in tails if t.name == "stdout.txt" and t.text]
        if out:
            ET.SubElement(case, "system-out").text = x("\n".join(out))
        if (err := _agent_err(step, tails)) is not None:
            ET.SubElement(case, "system-err").text = err
    suites = ET.Element("testsuites")
    suites.append(suite)
    return ET.tostring(suites, encoding="utf-8", xml_declaration=True)


def write_junit(results: RunResults, path: Path, isolation: Any = None,
                outputs: Mapping[str, list[Tail]] | None = None) -> None:
    atomic_write_bytes(path, junit_xml(results, isolation, outputs))
