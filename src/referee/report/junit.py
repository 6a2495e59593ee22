"""junit.xml for CI systems: FAIL -> failure, ERROR -> error, SKIPPED -> skipped.

Every string passes through `safetext.for_xml` first: ElementTree escapes markup but writes a NUL or
a lone surrogate as it is, which no XML parser accepts.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from xml.etree import ElementTree as ET

from referee.fsutil import atomic_write_bytes
from referee.grader.results import RunResults
from referee.safetext import for_xml as x


def junit_xml(results: RunResults, isolation: Any = None) -> bytes:
    """Render results as a JUnit testsuite, one testcase per step.

    >>> from referee.grader.results import StepResult
    >>> r = RunResults(plan="p", steps=[StepResult(id="a", verdict="SKIPPED", reason="no validator")],
    ...                summary={"PASS": 0, "FAIL": 0, "SKIPPED": 1, "ERROR": 0})
    >>> b"<skipped" in junit_xml(r)
    True
    """
    s = results.summary
    suite = ET.Element("testsuite", name=x(f"referee.{results.plan}"), tests=str(len(results.steps)),
                       failures=str(s.get("FAIL", 0)), errors=str(s.get("ERROR", 0)), skipped=str(s.get("SKIPPED", 0)))
    # whether the evidence was the runner's (sealed and verified), unverified, or refused: CI shows it
    props = ET.SubElement(suite, "properties")
    ET.SubElement(props, "property", name="referee.integrity", value=results.integrity.status)
    if results.integrity.reason:
        ET.SubElement(props, "property", name="referee.integrity.reason", value=x(results.integrity.reason))
    if isolation is not None:  # the manifest's: `none` means the agent ran unisolated
        ET.SubElement(props, "property", name="referee.isolation",
                      value="unisolated" if isolation.mode == "none" else isolation.mode)
        if isolation.note:
            ET.SubElement(props, "property", name="referee.isolation.note", value=x(isolation.note))
    for step in results.steps:
        case = ET.SubElement(suite, "testcase", classname=x(f"referee.{results.plan}"), name=x(step.id))
        reason = x(step.reason)
        if step.verdict == "FAIL":
            ET.SubElement(case, "failure", message=reason[:500]).text = reason
        elif step.verdict == "ERROR":
            ET.SubElement(case, "error", message=reason[:500]).text = reason
        elif step.verdict == "SKIPPED":
            ET.SubElement(case, "skipped", message=reason)
        if step.claim is not None:
            claim = step.claim
            note = f"agent claimed pass={claim.get('pass')}: {claim.get('note', '')}"
            if step.overclaim:
                note = "OVERCLAIM " + note
            ET.SubElement(case, "system-out").text = x(note)
    suites = ET.Element("testsuites")
    suites.append(suite)
    return ET.tostring(suites, encoding="utf-8", xml_declaration=True)


def write_junit(results: RunResults, path: Path, isolation: Any = None) -> None:
    atomic_write_bytes(path, junit_xml(results, isolation))
