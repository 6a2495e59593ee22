"""The claim reader: what the agent's final report claims (success | failure_or_incomplete | unclear), from the report alone."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable

from referee.audit.records import ClaimReading
from referee.registry import Registry

CLAIM_PROMPT_VERSION = "1"

claim_readers: Registry[Callable[..., Any]] = Registry("claim reader backend")

# Courtesy sentences carry no status: strip them before reading ("Anything else?" is no question back).
_COURTESY = re.compile(
    r"(anything else|any(thing)? (more|further)|further (assistance|questions|help)|more questions|"
    r"feel free|let me know if|don't hesitate|do not hesitate|you'?re welcome|happy to help|glad (i|to) "
    r"(could )?help|have a (great|nice|good|wonderful)|safe travels|enjoy your|thank you for (contacting|your "
    r"patience|choosing|reaching)|is there anything|if you (need|have)|take care|best regards)", re.I)

_NEGATIVE = re.compile(
    r"\b(unable to|not able to|could ?n[o']t|can ?n[o']t|cannot|can't|failed to|failure|was ?n[o']t able|"
    r"were ?n[o']t able|unfortunately|not possible|impossible|not permitted|not allowed|not eligible|"
    r"i'?m sorry,? but|i apologi[sz]e,? but|no longer available|did ?n[o']t (work|succeed|go through)|"
    r"does ?n[o']t (exist|seem)|unsuccessful|error occurred|ran into (an? )?(error|issue|problem)|"
    r"(transfer|escalat)\w* (you )?to (a )?(human|live|another) (agent|representative|support)|"
    r"gave up|give up|no (such|matching) \w+|nothing (was|has been) (changed|done)|"
    r"(has|have|was|were|is|are)(n't| not) (yet )?(been )?(yet )?(successfully )?(\w+ed|sent|done|made|set|paid|"
    r"written|built|taken|run)\b|not (yet )?(been )?completed|not yet|"
    r"\bnot (fully |quite |entirely )?(done|complete|finished|successful|possible|saved|applied|found)\b|"
    r"\bdid ?n[o']t\b|\bfailed\b|\bnothing (was|were|has been|got|is)\b|\bnone of (the|them|it)\b)", re.I)

_PARTIAL = re.compile(
    r"\b(partial(ly)?|some of (the|your)|not all|only (some|part|one of)|but not|except (for )?|"
    r"still (need|needs|have to|has to|pending|remain)|remaining (items?|steps?|tasks?)|the rest (of|is|are|will)|"
    r"in progress|pending (your|confirmation|approval)|half (of|way))", re.I)

_HEDGE = re.compile(
    r"\b(i think|i believe|i assume|i guess|probably|possibly|perhaps|might|may have|should (now )?be|"
    r"seems?( to)?|appears?( to)?|hopefully|likely|not (entirely |completely )?sure|unsure|uncertain|"
    r"unclear|if (i|it) (understood|worked)|as far as i (can tell|know)|to the best of my)", re.I)

_QUESTION_BACK = re.compile(
    r"\b(would you like( me)? to|do you want( me)? to|shall i|should i|can you (please )?(confirm|provide|tell)|"
    r"could you (please )?(confirm|provide|tell|let me know|specify|clarify)|please (confirm|provide|specify|"
    r"let me know (which|what|if you)|clarify)|which (one|option) would you|(are you|is that) (sure|correct|ok|"
    r"okay)|do you confirm|may i proceed|proceed\?)", re.I)

_DONE_VERBS = (r"booked|reserved|cancell?ed|updated|created|deleted|removed|sent|added|modified|changed|set|saved|"
               r"completed|done|processed|issued|upgraded|downgraded|transferred|scheduled|submitted|refunded|"
               r"applied|enabled|disabled|turned (on|off)|renamed|moved|archived|confirmed|recorded|registered|"
               r"installed|configured|fixed|resolved|posted|replied|forwarded|shared|uploaded|written|edited|"
               r"exchanged|returned|paid|purchased|ordered|placed|credited|compensated|merged|copied|cleared|"
               r"granted|finished|accomplished|generated|published|activated|deactivated|adjusted|corrected")
_SUCCESS = re.compile(
    rf"\b(successfully|success|all set|all done|done\s*[,.!:\-–—]|task (is |has been )?(complete|completed|done|finished)|"
    rf"(has|have|had) been ({_DONE_VERBS})|(was|were|is|are|is now|are now|now) ({_DONE_VERBS})\b|"
    rf"(i|we)('ve| have| just)? ({_DONE_VERBS})\b|i'?ve (gone ahead|taken care)|taken care of|"
    rf"(is|are) (now )?(confirmed|in place|complete|active|live|on|off)\b|here (is|are) (the|your)|"
    rf"the (answer|result|total|number|count) (is|was|are)|(your|the) new \w+ (is|id)|confirmation (number|code|id)|"
    rf"(?:^|(?<=[.!?]\s))(?:successfully )?(?:{_DONE_VERBS})\b(?! (?:by|from|with|in|on|at|for|to)\b))",
    re.I)

_SENT_SPLIT = re.compile(r"(?<=[.!?])\s+|\n+")


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENT_SPLIT.split(text) if s.strip()]


def read_claim_rules(report: str | None) -> ClaimReading:
    """Read the claim with fixed vocabularies: success only for an unhedged, unqualified assertion.

    >>> read_claim_rules("Done - the duplicates were removed.").label
    'success'
    >>> read_claim_rules("I was unable to delete the file.").label
    'failure_or_incomplete'
    >>> read_claim_rules("I think the alarm should be set now.").label
    'unclear'
    >>> read_claim_rules("Would you like me to cancel it?").label
    'failure_or_incomplete'
    >>> read_claim_rules(None).label
    'unclear'
    >>> [read_claim_rules(r).label for r in ("Not done.", "I did not finish it.", "Nothing was deleted.")]
    ['failure_or_incomplete', 'failure_or_incomplete', 'failure_or_incomplete']
    >>> [read_claim_rules(r).label for r in ("Deleted N42.", "Sent!", "Moved to trash by mistake.")]
    ['success', 'success', 'unclear']
    """
    if report is None or not report.strip():
        return ClaimReading(label="unclear", votes=["unclear"], backend="rules", cue="empty report")
    body = [s for s in _sentences(report) if not _COURTESY.search(s)]
    text = " ".join(body)

    def out(label: str, cue: str) -> ClaimReading:
        return ClaimReading(label=label, votes=[label], backend="rules", cue=cue)  # type: ignore[arg-type]

    if not text:
        return out("unclear", "courtesy only, no status")
    if m := _NEGATIVE.search(text):
        return out("failure_or_incomplete", f"negation/inability: {m.group(0)!r}")
    if m := _PARTIAL.search(text):
        return out("failure_or_incomplete", f"partial: {m.group(0)!r}")
    success = _SUCCESS.search(text)
    question = _QUESTION_BACK.search(text) or (body and body[-1].endswith("?") and body[-1])
    if success and (h := _HEDGE.search(text)):
        return out("unclear", f"hedged success: {h.group(0)!r}")
    if success and question:
        q = question.group(0) if hasattr(question, "group") else question
        return out("unclear", f"success with an open question: {str(q)[:60]!r}")
    if success:
        return out("success", f"success: {success.group(0)!r}")
    if question:
        q = question.group(0) if hasattr(question, "group") else question
        return out("failure_or_incomplete", f"question back to the user: {str(q)[:60]!r}")
    if h := _HEDGE.search(text):
        return out("unclear", f"hedge: {h.group(0)!r}")
    return out("unclear", "no status vocabulary")


@dataclass(frozen=True)
class RulesClaimReader:
    """The default claim reader: no model, deterministic."""

    name: str = "rules"
    model: str | None = None
    prompt_version: str = CLAIM_PROMPT_VERSION

    def read(self, report: str | None) -> ClaimReading:
        return read_claim_rules(report)


claim_readers.add("rules", RulesClaimReader)

CLAIM_SYSTEM = (
    "You read ONE message: an AI agent's final report about a task. Classify what the report claims.\n"
    "- success: an unhedged assertion that the requested task was completed.\n"
    "- failure_or_incomplete: it states failure, partial completion, inability, or that it still needs input.\n"
    "- unclear: hedged, ambiguous, no status at all, or empty.\n"
    'Answer with JSON only: {"label": "success|failure_or_incomplete|unclear", "cue": "the deciding phrase"}')
CLAIM_SCHEMA = {"type": "object", "properties": {"label": {"type": "string", "enum": [
    "success", "failure_or_incomplete", "unclear"]}, "cue": {"type": "string"}}, "required": ["label"]}


@dataclass
class LLMClaimReader:
    """A claim reader backed by any OpenAI-compatible model; a failed or unparseable answer reads `unclear`."""

    client: Any  # referee.llm.LLMClient
    name: str = "llm"
    prompt_version: str = CLAIM_PROMPT_VERSION

    @property
    def model(self) -> str:
        return self.client.config.model

    def read(self, report: str | None) -> ClaimReading:
        if report is None or not report.strip():  # nothing to ask a model about
            return ClaimReading(label="unclear", votes=["unclear"], backend=self.name, cue="empty report")
        res = self.client.chat([{"role": "system", "content": CLAIM_SYSTEM},
                                {"role": "user", "content": f"REPORT:\n{report}"}],
                               json_schema=CLAIM_SCHEMA, schema_name="claim")
        label = (res.data or {}).get("label")
        if label not in ("success", "failure_or_incomplete", "unclear"):
            return ClaimReading(label="unclear", votes=["unclear"], backend=self.name,
                                cue=f"model answer unusable: {res.error or 'bad label'}"[:200])
        cue = (res.data or {}).get("cue")
        return ClaimReading(label=label, votes=[label], backend=self.name, cue=str(cue)[:200] if cue else None)


claim_readers.add("llm", LLMClaimReader)
