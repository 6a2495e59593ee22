"""Reader for referee run directories: each SKIPPED step (no validator) becomes one advisory trace.

A step the grader could decide (PASS, FAIL, ERROR) is not turned into a trace: its verdict stands
and the auditor has nothing to add. A SKIPPED step has no verdict the grader could give, so the
auditor looks at it, *advisorily*: its record says `advisory: true` and never makes it PASS.
The verdicts are graded now, after the run directory's seal is checked (`referee.grader.verify`):
a results.json in it is never trusted, and a run whose seal does not hold is one bad record.

What goes where (the walls of DESIGN.md hold here as everywhere):

- task: the step's `do:`; action(s): the step id, or the items of its browser `script:`;
- observations: the files the **runner** captured for the step (manifest `captured_by: runner`),
  hash-checked, summarised (http status and body, command exit code and output, sql rows, ddb
  items, aria/dom text, a screenshot as a path); before-the-step captures are the initial
  observation. The agent's own files are not observations: the agent wrote them.
- the agent's exit status enters only when it failed (non-zero, timed out): it can count against
  a claim, never for one;
- claim channel (`report`, `narration`): the claim from claims.json, `pass` rendered as a first
  sentence the claim reader can read, then the agent's `note`; files the agent cites go to narration.
"""

from __future__ import annotations

import json
import re
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, Sequence

from referee.audit.ingest.readers import trace_readers
from referee.audit.trace import Action, Observation, Step, Trace, TraceItem, record_error
from referee.core.jsonio.values import loads
from referee.errors import EvidenceError, RefereeError

if TYPE_CHECKING:  # the grader and the run directory's models are imported when a run directory is read:
    # `referee audit` on trace files starts without them
    from referee.grader.evidence import RunEvidence
    from referee.grader.results import Integrity, RunResults
    from referee.grader.verify import OpenedRun
    from referee.rundir.schema import CaptureRecord, Claim, FileEntry, Manifest

MAX_TEXT = 8000     # characters kept of one body, stdout, page text
MAX_ROWS = 200      # rows kept of one sql/ddb capture
CLAIM_PASS = "The step is done."
CLAIM_FAIL = "I could not complete the step."


def is_run_dir(path: Path) -> bool:
    """A referee run directory: a folder holding manifest.json.

    >>> import tempfile, pathlib; d = pathlib.Path(tempfile.mkdtemp())
    >>> is_run_dir(d), (d / "manifest.json").write_text("{}") > 0, is_run_dir(d)
    (False, True, True)
    """
    p = Path(path)
    return p.is_dir() and (p / "manifest.json").is_file()


_ALLOW_UNSIGNED: ContextVar[bool] = ContextVar("referee_run_allow_unsigned", default=False)


@contextmanager
def allowing_unsigned(allow: bool = True) -> Iterator[None]:
    """Within this block, run directories without a seal this machine can check are read, marked unverified
    (`referee audit --allow-unsigned`); outside it they are refused like a seal that does not hold."""
    token = _ALLOW_UNSIGNED.set(allow)
    try:
        yield
    finally:
        _ALLOW_UNSIGNED.reset(token)


@dataclass(frozen=True)
class RunDirInfo:
    """What a run directory holds for the auditor: its verdicts, graded now, and which steps are SKIPPED."""

    run_dir: Path
    plan: str
    verdicts: dict[str, str]          # step id -> verdict, in plan order
    source: str                       # how the verdicts were had: always "graded now" (results.json is not read)
    integrity: Integrity = field(default_factory=lambda: _integrity("unverified", "not checked"))

    @property
    def skipped(self) -> list[str]:
        return [s for s, v in self.verdicts.items() if v == "SKIPPED"]

    @property
    def refused(self) -> bool:
        return self.integrity.status == "failed"

    def line(self) -> str:
        """One line for humans: counts by verdict and what will be audited."""
        if self.refused:
            return f"{self.run_dir}: SEAL CHECK FAILED: {self.integrity.reason}; not audited"
        counts = {v: sum(1 for x in self.verdicts.values() if x == v)
                  for v in ("PASS", "FAIL", "SKIPPED", "ERROR", "FLAKY")}
        counts = {v: n for v, n in counts.items() if n or v != "FLAKY"}
        graded = ", ".join(f"{n} {v}" for v, n in counts.items())
        source = self.source if self.integrity.status == "verified" else f"{self.source}, UNVERIFIED"
        if not self.skipped:
            return (f"{self.run_dir}: plan {self.plan}: {graded} ({source}); no SKIPPED step: every step has a "
                    f"verdict from its validators, nothing to audit")
        return (f"{self.run_dir}: plan {self.plan}: {graded} ({source}); auditing {len(self.skipped)} SKIPPED "
                f"step(s) ({', '.join(self.skipped)}) as advisory records: verdicts are not changed")


def _integrity(status: str, reason: str) -> Integrity:
    from referee.grader.results import Integrity

    return Integrity(status=status, reason=reason)  # type: ignore[arg-type]


def _open(run_dir: Path) -> tuple[OpenedRun, RunResults]:
    """The run directory checked against its seal, and graded now: a results.json in it is never trusted
    (whoever could write the run directory could have written it). Nothing is written into it."""
    from referee.grader.grade import grade_opened
    from referee.grader.verify import open_run

    run = open_run(run_dir, allow_unsigned=_ALLOW_UNSIGNED.get())
    return run, grade_opened(run, save_caches=False)


def load_verdicts(run_dir: Path) -> tuple[dict[str, str], str]:
    """Step verdicts of a run directory, graded now by `referee.grader` (its seal checked first)."""
    _, res = _open(Path(run_dir))
    # a step the run left out (--only/-k, --fail-fast) has no evidence to audit
    return {s.id: s.verdict for s in res.steps if not s.not_run}, "graded now"


def describe_run_dir(run_dir: Path, manifest: Manifest | None = None) -> RunDirInfo:
    """Verdicts and SKIPPED steps of one run directory (raises RefereeError for a broken one)."""
    run_dir = Path(run_dir)
    _, res = _open(run_dir)
    # a step the run left out (--only/-k, --fail-fast) has no evidence to audit
    return RunDirInfo(run_dir=run_dir, plan=res.plan, verdicts={s.id: s.verdict for s in res.steps if not s.not_run},
                      source="graded now", integrity=res.integrity)


# -- observations from the runner's captures -------------------------------------------------------

def _clip(text: str) -> str:
    return text if len(text) <= MAX_TEXT else text[:MAX_TEXT] + f"... [{len(text) - MAX_TEXT} more characters]"


def _page_text(html: str) -> str:
    html = re.sub(r"(?is)<(script|style)\b.*?</\1>", " ", html)
    return re.sub(r"\s+", " ", _strip_tags(_strip_comments(html))).strip()


# What re.sub(r"(?s)<!--.*?-->", " ") and re.sub(r"<[^>]+>", " ") did, by str.find: the regexes rescanned the page
# from each unclosed `<!--` or `<` (quadratic); when the first has no closing, no later one has, so the scan stops.
def _strip_comments(html: str) -> str:
    out, pos = [], 0
    while (i := html.find("<!--", pos)) >= 0 and (j := html.find("-->", i + 4)) >= 0:
        out += [html[pos:i], " "]
        pos = j + 3
    return "".join(out) + html[pos:]


def _strip_tags(html: str) -> str:
    out, pos, i = [], 0, html.find("<")
    while i >= 0 and (j := html.find(">", i + 1)) >= 0:
        if j > i + 1:  # `<>` is no tag: go on from the next `<`
            out += [html[pos:i], " "]
            pos = j + 1
        i = html.find("<", max(pos, i + 1))
    return "".join(out) + html[pos:]


def _summarise(ev: RunEvidence, entry: FileEntry) -> tuple[dict[str, Any], str, str | None, bool]:
    """(data, one text line, screenshot path, error) for one runner evidence file, hash-checked by the grader's
    RunEvidence; a record is read through its `referee.rundir.schema` model."""
    name = entry.capture or Path(entry.path).name
    head = f"[{name}] {entry.kind}"
    if entry.error:
        return _failed(entry, head, entry.error)
    try:
        record = ev.record(entry)
        from referee.rundir.schema import CaptureFailure

        if isinstance(record, CaptureFailure):
            return _failed(entry, head, record.capture_error)
        data = ev.verified_bytes(entry) if record is None else b""  # hash-checked, no link followed, no FIFO waited on
    except EvidenceError as exc:
        return {"kind": entry.kind, "error": exc.message}, f"{head}: {exc.message}", None, True
    if record is not None:
        return _from_record(entry, record, head)
    suffix = Path(entry.path).name.lower()
    if suffix.endswith((".png", ".jpg", ".jpeg", ".webp")):
        return {"kind": entry.kind, "screenshot": entry.path}, f"{head}: screenshot {entry.path}", entry.path, False
    raw = data[: MAX_TEXT * 4].decode("utf-8", errors="replace")
    if suffix.endswith(".html"):
        text = _clip(_page_text(raw))
        return {"kind": entry.kind, "text": text}, f"{head}: page text: {text}", None, False
    if suffix.endswith((".yaml", ".yml", ".txt")):
        text = _clip(raw)
        return {"kind": entry.kind, "text": text}, f"{head}: {text}", None, False
    try:
        doc = loads(data)
    except ValueError:
        return {"kind": entry.kind, "file": entry.path}, f"{head}: file {entry.path}", None, False
    return _from_document(entry.kind, doc, head)


def _failed(entry: FileEntry, head: str, why: str) -> tuple[dict[str, Any], str, None, bool]:
    return {"kind": entry.kind, "error": why}, f"{head}: capture failed: {why}", None, True


def _from_record(entry: FileEntry, rec: CaptureRecord, head: str) -> tuple[dict[str, Any], str, str | None, bool]:
    from referee.rundir.schema import AriaRecord, CommandRecord, DdbRecord, HttpRecord, SqlRecord

    k = entry.kind
    if isinstance(rec, HttpRecord):
        body: Any = rec.body
        try:
            body = loads(body)
        except ValueError:
            body = _clip(body)
        d = {"kind": k, "method": rec.method, "url": rec.url, "status": rec.status, "body": body}
        shown = body if isinstance(body, str) else json.dumps(body, ensure_ascii=False)
        return d, f"{head} {rec.method} {rec.url} -> {rec.status}: {_clip(shown)}", None, False
    if isinstance(rec, CommandRecord):
        d = {"kind": k, "command": rec.command, "exit_code": rec.exit_code, "timed_out": rec.timed_out,
             "stdout": _clip(rec.stdout), "stderr": _clip(rec.stderr)}
        if rec.stdout_file:
            d["stdout_file"] = rec.stdout_file
        line = f"{head} `{rec.command}` -> exit {rec.exit_code}: {d['stdout']}"
        return d, line, None, False
    if isinstance(rec, SqlRecord):
        rows = rec.rows
        d = {"kind": k, "columns": rec.columns, "rows": rows[:MAX_ROWS], "row_count": len(rows)}
        return d, f"{head}: {len(rows)} row(s): {_clip(json.dumps(rows[:MAX_ROWS], default=str))}", None, False
    if isinstance(rec, DdbRecord):
        items = rec.items
        d = {"kind": k, "items": items[:MAX_ROWS], "item_count": len(items)}
        return d, f"{head}: {len(items)} item(s): {_clip(json.dumps(items[:MAX_ROWS], default=str))}", None, False
    if isinstance(rec, AriaRecord):
        text = _clip(rec.yaml)
        return {"kind": k, "url": rec.url, "text": text}, f"{head}: {text}", None, False
    return _from_document(k, rec.document(), head)  # a file capture's record: shown as it is


def _from_document(kind: str, doc: Any, head: str) -> tuple[dict[str, Any], str, str | None, bool]:
    """A JSON file that is no capture record (a capture kind from a plugin): shown as it is, headers left out."""
    if not isinstance(doc, dict):
        return {"kind": kind, "value": doc}, f"{head}: {_clip(json.dumps(doc))}", None, False
    d = {"kind": kind, **{key: v for key, v in doc.items() if key != "headers"}}
    return d, f"{head}: {_clip(json.dumps(d, ensure_ascii=False, default=str))}", None, False


def observe(ev: RunEvidence, entries: list[FileEntry], extra: Sequence[str] = (),
            failed: bool = False) -> Observation | None:
    """One observation from a step's runner files of one phase; None when the runner saw nothing."""
    data: dict[str, Any] = {}
    lines = list(extra)
    shot: str | None = None
    error = failed
    for e in entries:
        d, line, s, err = _summarise(ev, e)
        key = e.capture or e.path
        if key in data:  # a capture's second file (e.g. command stdout_as: the screen and its record)
            key = e.path
        data[key] = d
        lines.append(line)
        shot = shot or s
        error = error or err
    if not lines:
        return None
    return Observation(text="\n".join(lines), data=data or None, screenshot=shot, error=error)


def _actor_problem(manifest: Manifest, step_id: str) -> tuple[list[str], bool]:
    """Runner-observed facts about the agent's process that count against it; nothing that counts for it."""
    rec = manifest.steps.get(step_id)
    if rec is None:
        return ["runner: the step was never run"], True
    if rec.status != "done":
        return ["runner: the step did not finish (the run was interrupted)"], True
    if not rec.actor_started:
        return ["runner: the agent could not be started"], True
    if rec.actor_timed_out:
        return ["runner: the agent timed out"], True
    if rec.actor_exit not in (None, 0):
        return [f"runner: the agent exited with code {rec.actor_exit}"], True
    return [], False


# -- claims (the claim channel) ---------------------------------------------------------------------

def claim_report(claim: Claim | None) -> str | None:
    """The agent's claim as a report: `pass` as a first sentence, then its note. No claim -> None.

    >>> from referee.rundir.schema import Claim
    >>> claim_report(Claim(passed=True, note="The list looks tidy."))
    'The step is done. The list looks tidy.'
    >>> claim_report(Claim(passed=False)), claim_report(None)
    ('I could not complete the step.', None)
    """
    if claim is None:
        return None
    note = claim.note.strip()
    lead = CLAIM_PASS if claim.passed is True else CLAIM_FAIL if claim.passed is False else ""
    return " ".join(p for p in (lead, note) if p) or None


def _step_line(plan_text: str, step_id: str) -> int | None:
    m = re.search(rf"(?m)^[ \t-]*id:[ \t]*['\"]?{re.escape(step_id)}['\"]?[ \t]*(#.*)?$", plan_text)
    return plan_text.count("\n", 0, m.start()) + 1 if m else None


def step_trace(ev: RunEvidence, step, claim: Claim | None, run_id: str) -> Trace:
    """The trace of one SKIPPED step: plan action(s), runner observations, the claim as report."""
    run_dir, manifest = ev.run_dir, ev.manifest
    mine = [f for f in manifest.files if f.step == step.id and f.captured_by == "runner"]
    before = observe(ev, [f for f in mine if f.phase == "before"])
    extra, failed = _actor_problem(manifest, step.id)
    after = observe(ev, [f for f in mine if f.phase == "after"], extra, failed)
    script = [item for item in (step.script or []) if isinstance(item, dict) and len(item) == 1]
    if script:
        steps = []
        for i, item in enumerate(script):
            (verb, arg), = item.items()
            args = arg if isinstance(arg, dict) else {"value": arg}
            steps.append(Step(action=Action(name=str(verb), args=args),
                              observation=after if i == len(script) - 1 else None))
    else:
        steps = [Step(action=Action(name=step.id), observation=after)]
    cited = claim.evidence if claim is not None else None
    if cited:
        steps[-1].narration = "the agent cites its own files: " + ", ".join(map(str, cited))
    return Trace(run_id=run_id, task=step.do.strip() or step.id, initial_observation=before, steps=steps,
                 report=claim_report(claim),
                 meta={"source": "referee-run", "group": manifest.plan, "run_dir": str(run_dir), "step": step.id,
                       "verdict": "SKIPPED", "advisory": True})


@trace_readers.register("referee-run")
def read_referee_run(path: Path) -> Iterator[TraceItem]:
    """Yield one advisory trace per SKIPPED step of a run directory, run_id `<plan>/<run dir>/<step>`.

    The run directory is checked against its seal and graded now; a broken one, or one whose seal does
    not hold, is one item with `error`; PASS/FAIL/ERROR steps yield nothing.
    """
    run_dir = Path(path)
    plan_file = run_dir / "plan.yaml"
    try:
        run, res = _open(run_dir)
    except (RefereeError, OSError) as exc:
        yield TraceItem(file=str(run_dir), line=None, run_id=None,
                        error=record_error(f"not an auditable run directory: {exc}", file=str(run_dir), line=None))
        return
    if run.integrity.status == "failed" or run.manifest is None or run.plan is None:
        yield TraceItem(file=str(run_dir), line=None, run_id=None,
                        error=record_error(f"not an auditable run directory: seal check failed: "
                                           f"{run.integrity.reason}", file=str(run_dir), line=None))
        return
    manifest, plan, claims = run.manifest, run.plan, run.claims
    text = plan.text
    from referee.grader.evidence import RunEvidence

    ev = RunEvidence(run_dir, manifest, signed=run.integrity.status == "verified")
    skipped = {s.id for s in res.steps if s.verdict == "SKIPPED" and not s.not_run}
    for step in plan.plan.steps:
        if step.id not in skipped:
            continue
        run_id = f"{manifest.plan}/{run_dir.name}/{step.id}"
        line = _step_line(text, step.id)
        try:
            trace = step_trace(ev, step, claims.get(step.id), run_id)
        except (ValueError, RefereeError, OSError) as exc:
            yield TraceItem(file=str(plan_file), line=line, run_id=run_id,
                            error=record_error(f"step {step.id}: {exc}", file=str(plan_file), line=line,
                                               run_id=run_id))
            continue
        if run.integrity.status != "verified":
            trace.meta["unverified"] = run.integrity.reason
        yield TraceItem(file=str(plan_file), line=line, run_id=run_id, trace=trace)
