"""An audit for CI: a Markdown job summary (`referee audit --summary-md`, $GITHUB_STEP_SUMMARY) and JUnit
(`--junit`: one testcase per run; flag = failure, review = skipped with the reason, pass = passed).

Both are written from the audit file's newest record of each run, as the console summary is. What
a trace holds (a run_id, a claim cue, a task) is untrusted: Markdown goes through
`safetext.for_markdown`, XML through `safetext.for_xml`, as the runner's junit.xml does.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence
from xml.etree import ElementTree as ET

from referee.audit.present.show import flag_line, no_fields, why
from referee.audit.present.summary import DISPOSITIONS, AuditSummary
from referee.audit.records import AuditRecord
from referee.core.fsutil import atomic_write_bytes
from referee.core.safetext import for_markdown as md
from referee.core.safetext import for_xml as x
from referee.report.markdown import ROWS, link, table

__all__ = ["AuditCase", "audit_junit", "audit_markdown", "case_of", "write_audit_junit"]

CUE = 120  # characters of a claim cue shown


@dataclass(frozen=True)
class AuditCase:
    """One run as CI shows it: its id, task class, disposition, and why in one line (the console's line)."""

    run_id: str
    task_class: str
    disposition: str
    why: str
    detail: str


def case_of(rec: AuditRecord) -> AuditCase:
    """What JUnit and the job summary need of a record, kept small (an audit may hold many runs).

    >>> from referee.audit.present.show import _example
    >>> case_of(_example(disposition="review", trace_state="unknown")).why
    'the report claims success; the trace cannot show whether the task was completed'
    """
    return AuditCase(rec.run_id, rec.task_class, rec.disposition, why(rec), flag_line(rec))


def _deciding(rec: AuditRecord) -> str:
    nos = no_fields(rec)
    return "; ".join(f"{f} no" + (f" @ steps {','.join(map(str, s))}" if s else "") for f, s, _ in nos)


def audit_markdown(summary: AuditSummary, looked_at: Sequence[AuditRecord], out: Path, base: Path,
                   summary_json: Path | None = None) -> str:
    """An audit as Markdown: dispositions (by task class), each flag and review with its claim cue and why, and
    links to the audit file. `looked_at`: the records to list (flags and reviews), at most `ROWS` of each."""
    d = summary.as_dict()
    tot = d["dispositions"]
    head = f"❌ {tot['flag']} flagged" if tot["flag"] else "✅ no flags"
    lines = [f"### referee audit: {head}", "",
             f"{d['records']} runs · " + " · ".join(f"{tot[k]} {k}" for k in DISPOSITIONS)]
    if d["by_class"]:
        rows = [[md(c), *(str(r[k]) for k in DISPOSITIONS)] for c, r in d["by_class"].items()]
        lines += ["", *table(["task class", *DISPOSITIONS], rows)]
    if summary.gold_seen:
        m = d["success_claim_not_completed"]
        lines += ["", f"Gold: {summary.gold_seen} runs; success claimed but not completed: {sum(m.values())} "
                      f"(flag {m['flag']}, review {m['review']}, pass {m['pass']})"]
    for disp, title in (("flag", "Flagged: the report claims success, the trace shows otherwise"),
                        ("review", "Sent to review")):
        recs = sorted((r for r in looked_at if r.disposition == disp), key=lambda r: r.run_id)
        if not recs:
            continue
        rows = [[md(r.run_id, limit=CUE), md(r.task_class),
                 md(r.claim.label) + (f": {md(r.claim.cue, limit=CUE)}" if r.claim.cue else ""),
                 md(_deciding(r) or why(r), limit=300)] for r in recs[:ROWS]]
        lines += ["", f"**{title}** ({tot[disp]})", "",
                  *table(["run", "task class", "claim (cue)", "why"], rows, tot[disp] - min(len(recs), ROWS))]
    links = [link(Path(out).name, Path(out), base)]
    if summary_json is not None:
        links.append(link(Path(summary_json).name, Path(summary_json), base))
    lines += ["", f"Audit records: {' · '.join(links)} (`referee show AUDIT RUN_ID` for one in full)", ""]
    return "\n".join(lines)


def audit_junit(cases: Iterable[AuditCase], name: str = "referee.audit") -> bytes:
    """A JUnit testsuite, one testcase per run: flag = failure, review = skipped with the reason, pass = passed.

    >>> b = audit_junit([AuditCase("r1", "delete", "flag", "claims success; not completed", "r1 [flag] ...")])
    >>> b"<failure" in b and b'tests="1"' in b
    True
    """
    suite = ET.Element("testsuite", name=x(name))
    n = {"flag": 0, "review": 0, "pass": 0}
    for c in cases:
        n[c.disposition] = n.get(c.disposition, 0) + 1
        case = ET.SubElement(suite, "testcase", classname=x(f"{name}.{c.task_class}"), name=x(c.run_id), time="0")
        if c.disposition == "flag":
            ET.SubElement(case, "failure", message=x(c.why)[:500], type="flag").text = x(c.detail)
        elif c.disposition == "review":
            ET.SubElement(case, "skipped", message=x(f"review: {c.why}")[:500])
    suite.set("tests", str(sum(n.values())))
    suite.set("failures", str(n["flag"]))
    suite.set("errors", "0")
    suite.set("skipped", str(n["review"]))
    suite.set("time", "0")
    suites = ET.Element("testsuites")
    suites.append(suite)
    return ET.tostring(suites, encoding="utf-8", xml_declaration=True)


def write_audit_junit(cases: Iterable[AuditCase], path: Path) -> None:
    """`audit_junit` written atomically to `path`."""
    atomic_write_bytes(path, audit_junit(cases))
