"""The rules extractor: deterministic, offline evidence from structured actions and observations.

It reasons about generic notions, not any one benchmark: write-like action names, tool results
that are errors, entity ids named in the task reappearing in the committed action or its result,
ids that the agent used without the environment ever showing them, an empty list before a
delete, typed-but-unsaved GUI input, clicks resolved to their on-screen labels, and (details.py)
committed writes whose details contradict what the task states. Each action is read in acts.py,
each field decided by a named check in checks.py (CHECKS lists them in order); the words are in
lexicon.py, read from referee/audit/vocabulary.yaml.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from referee.audit.extract import abstain, acting, extractors
from referee.audit.extract import finding as _fe
from referee.audit.extract.checks import checks, read_actions
from referee.audit.extract.lexicon import (  # noqa: F401  (re-exported: the rules' vocabulary)
    COMMIT_LABEL,
    EMPTY_TEXT,
    FAIL_TEXT,
    FILE_RE,
    GROUPS,
    GUI_CLICK,
    GUI_TYPE,
    HANDOFF,
    ID_RE,
    QUESTION,
    QUOTED_RE,
    QUOTED_STRICT,
    READ_VERBS,
    SELF_SIGNAL,
    VOCABULARY_SHA256,
    WRITE_VERBS,
    ids_in,
    is_id,
    shape,
    task_groups,
    words,
)
from referee.audit.records import Finding
from referee.audit.view.blind import ClaimBlindView

LOGIC_VERSION = "8"  # 3: ways of acting in layers, abstention, task kinds, details; 4: their fixes after review;
# 5: file-editor edits (an edit/write action on a file `path`) are judged by the last check after them, as shell edits;
# 6: unseen agents' signals (GraphQL errors, REST path ids, refused GUI commits, URL hosts, SWE-agent commands)
# 7: coding agents' file tools (file_path, absolute_path, apply_patch) are file edits, and the files they make are
#    no ungrounded ids
# 8: the trace signals risk reads count a shell command that changes a file as a write and one that runs something
#    as its check, and `repeated` is a loop (max_streak): records of 7 carry signals of the old meaning
# the rules are their code and their words: a new vocabulary.yaml is a new rules version, so cached evidence made
# with other words is never reused ("8+vocabulary:<sha256[:12]>"; with a tool map "+tools:<sha256[:12]>" follows)
RULES_VERSION = f"{LOGIC_VERSION}+vocabulary:{VOCABULARY_SHA256[:12]}"

def extract_rules(view: ClaimBlindView, catalog: acting.ToolCatalog = acting.NO_TOOLS) -> dict[str, Finding]:
    """Evidence fields from the claim-blind view, each with the step indices that support it: every field
    check, then the first guard that applies, else (when relevant writes succeeded) the first detail check
    that finds something (checks.CHECKS).

    >>> from referee.audit.trace import Trace
    >>> from referee.audit.view.blind import build_view
    >>> t = Trace(run_id="r", task="Delete note N42", steps=[{"action": {"name": "delete_note", "args":
    ...     {"id": "N42"}}, "observation": {"text": "deleted"}}])
    >>> ev = extract_rules(build_view(t)); ev["action"].value, ev["target_id"].value, ev["committed"].support
    ('yes', 'yes', [0])
    """
    cx = read_actions(view, catalog)
    out: dict[str, Finding] = {c.fields[0]: c.fn(cx) or _fe("unknown") for c in checks("field")}
    out["details"] = _fe("unknown", note="no write whose details could be checked")
    for guard in checks("guard"):
        if (found := guard.fn(cx)) is not None:
            for f in guard.fields:  # each field its own copy, as a finding is a mutable model
                out[f] = found.model_copy(deep=True)
            break
    else:
        if cx.ok_writes:
            for check in checks("detail"):
                if (found := check.fn(cx)) is None:
                    continue
                if "final_supports_goal" in check.fields and out["final_supports_goal"].value == "yes":
                    out["final_supports_goal"] = found
                out["details"] = found
                break
    return abstain(out, {s.index for s in view.steps if s.observation is not None})


@dataclass(frozen=True)
class RulesExtractor:
    """The default backend: no model, no network, deterministic (so one run is enough)."""

    name: str = "rules"
    model: str | None = None
    prompt_version: str = RULES_VERSION  # with a tool map: "7+vocabulary:<sha>+tools:<sha>"
    catalog: acting.ToolCatalog = acting.NO_TOOLS

    def extract(self, view: ClaimBlindView, sample: int = 0) -> dict[str, Finding]:
        return extract_rules(view, self.catalog)


def rules_extractor(*, tools: Path | None = None) -> RulesExtractor:
    """The `rules` backend's factory: with a tool map (`--tools tools.yaml`) it knows the user's tools,
    and its prompt version names the map's digest, so cached evidence is keyed by it.

    >>> rules_extractor().prompt_version == RULES_VERSION
    True
    """
    if tools is None:
        return RulesExtractor()
    from referee.audit.extract.toolmap import load_tool_map

    catalog, digest = load_tool_map(tools)
    return RulesExtractor(catalog=catalog, prompt_version=f"{RULES_VERSION}+tools:{digest[:12]}")


# a function attribute, read by referee.audit.run.backends.takes_tools; mypy has no notion of those
rules_extractor.takes_tools = True  # type: ignore[attr-defined]
extractors.add("rules", rules_extractor)
