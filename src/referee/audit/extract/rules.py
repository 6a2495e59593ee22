"""The rules extractor: deterministic, offline evidence from structured actions and observations.

It reasons about generic notions, not any one benchmark: write-like action names, tool results
that are errors, entity ids named in the task reappearing in the committed action or its result,
ids that the agent used without the environment ever showing them, an empty list before a
delete, typed-but-unsaved GUI input, clicks resolved to their on-screen labels, and (details.py)
committed writes whose details contradict what the task states. The vocabulary is in lexicon.py
(its words: referee/audit/vocabulary.yaml).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any, Sequence

from referee.audit.extract import abstain, acting, details, extractors
from referee.audit.extract import finding as _fe
from referee.audit.extract import obs_text as _obs_text
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
from referee.audit.extract.targets import numeric_ids, target_finding, task_numbers
from referee.audit.records import Finding
from referee.audit.view.blind import ClaimBlindView, ViewObservation, ViewStep
from referee.core.jsonio.values import loads

LOGIC_VERSION = "7"  # 3: ways of acting in layers, abstention, task kinds, details; 4: their fixes after review;
# 5: file-editor edits (an edit/write action on a file `path`) are judged by the last check after them, as shell edits;
# 6: unseen agents' signals (GraphQL errors, REST path ids, refused GUI commits, URL hosts, SWE-agent commands)
# 7: coding agents' file tools (file_path, absolute_path, apply_patch) are file edits, and the files they make are
#    no ungrounded ids
# the rules are their code and their words: a new vocabulary.yaml is a new rules version, so cached evidence made
# with other words is never reused ("7+vocabulary:<sha256[:12]>"; with a tool map "+tools:<sha256[:12]>" follows)
RULES_VERSION = f"{LOGIC_VERSION}+vocabulary:{VOCABULARY_SHA256[:12]}"

def _failed(o: ViewObservation | None, rec: acting.Recognised | None = None,
            catalog: acting.ToolCatalog = acting.NO_TOOLS) -> bool | None:
    """True for an error result, False for a result, None when nothing came back."""
    if o is None:
        return None
    d = o.plain_data()
    if rec is not None and rec.via == "tool-map":
        rule = catalog.rule_for(rec.name)
        if rule is not None and rule.failure is not None:
            return bool(o.error or rule.failure.search(_obs_text(o)))
    by_layer = acting.failed(rec, d, o.text or "", o.error)
    if by_layer is not None:
        return by_layer
    if FAIL_TEXT.match(o.text or ""):
        return True
    if isinstance(d, dict):
        if d.get("error") or str(d.get("status", "")).lower() in ("error", "failed", "failure") or d.get("ok") is False:
            return True
        code = d.get("status_code") or d.get("code") or d.get("status")
        if isinstance(code, int) and not isinstance(code, bool) and code >= 400:
            return True
    # a GraphQL response (in data or as JSON text): `errors` and no `data` is a request that did nothing; the text
    # is parsed only when it names `errors` (most observations never are)
    if not (isinstance(d, dict) and "errors" in d) and '"errors"' not in (o.text or ""):
        return False
    g = _data(o)
    return isinstance(g, dict) and bool(g.get("errors")) and "data" in g and not g["data"]


def _strings(v: Any) -> list[str]:
    """The strings of a JSON value, depth first, a number as its text (a boolean is none).

    >>> _strings({"a": ["x", 2, True, {"b": 1.5}], "c": None})
    ['x', '2', '1.5']
    """
    out: list[str] = []
    _strings_into(v, out)
    return out


def _strings_into(v: Any, out: list[str]) -> None:
    # appended, not yielded: a generator per level cost more than the rest of classifying an action
    if isinstance(v, str):
        out.append(v)
    elif isinstance(v, dict):
        for x in v.values():
            if type(x) is str:
                out.append(x)
            else:
                _strings_into(x, out)
    elif isinstance(v, (list, tuple)):
        for x in v:
            if type(x) is str:
                out.append(x)
            else:
                _strings_into(x, out)
    elif isinstance(v, (int, float)) and not isinstance(v, bool):
        out.append(str(v))


@dataclass(frozen=True)
class _Act:
    step: ViewStep
    kind: str            # write | read | gui_type | gui_commit | gui_other | gui_unlabelled | handoff | other
    groups: frozenset[str]
    failed: bool | None
    id_args: Any         # the arguments that may name entities (no element ids, no HTTP method)
    target: str | None   # the argument a user's tool map names as the target
    arg_text: str
    via: str = "verb"    # which layer recognised it (acting.recognise)

    @cached_property
    def arg_ids(self) -> frozenset[str]:
        """The entity ids the arguments name: found when a check asks (most reads' never are)."""
        found = frozenset(t for s in _strings(self.id_args) for t in ids_in(_without_hosts(s)))
        if self.via == "sql":
            found -= acting.SQL_WORDS
        return found | {self.target} if self.target else found


# a URL's scheme and host: the site an action goes to (`goto('https://shop.test/...')`) names no entity, and it is
# seldom shown before it is used; its path and query may name one (`/orders/ORD-1`)
# `\b[A-Za-z][A-Za-z0-9+.-]*://[^/\s?#'\"]*`, linear: tried once per run of scheme characters (a later start in
# the run meets the same end), its group 1 the run's part before the first letter at a word's edge (kept)
_URL_HOST = re.compile(r"(?<![A-Za-z0-9+.-])((?:[0-9+.-]|(?<=\w)[A-Za-z])*+)[A-Za-z][A-Za-z0-9+.-]*+://[^/\s?#'\"]*")


def _without_hosts(text: str) -> str:
    """`text` with the scheme and host of each URL in it blanked.

    >>> _without_hosts("goto('https://hotels.test:8080/lisbon?id=H-12')")
    "goto(' /lisbon?id=H-12')"
    """
    return _URL_HOST.sub(lambda m: m.group(1) + " ", text) if "://" in text else text


_BID = re.compile(r"^[A-Za-z]{0,3}\d+$")


def _ui_label(args: Any, prev: ViewObservation | None) -> str:
    """The text of the UI element a click names only by number or element id (`{"index": 5}`,
    `click('a51')`), looked up in the screen before the click: an element whose index/id field is that
    value, a `[a51] button 'Send'` line of an accessibility tree, else the n-th item of a list."""
    if prev is None:
        return ""
    if isinstance(args, list):
        num: Any = args[0] if args and isinstance(args[0], (str, int)) else None
    elif isinstance(args, dict):
        num = next((v for k, v in args.items() if isinstance(v, (int, str)) and not isinstance(v, bool)
                    and re.search(r"index|idx|element|id$|node|bid", k, re.I)
                    and (isinstance(v, int) or _BID.match(v))), None)
    else:
        num = None
    if num is None:
        return ""
    if isinstance(num, str) and prev.text and (m := re.search(rf"\[{re.escape(num)}\]\s*([^\n]*)", prev.text)):
        return m.group(1)
    if not prev.has_ui():
        return ""
    ui = prev.plain_ui()
    found = None
    for d in details._dicts(ui):
        if any(d.get(k) == num for k in ("index", "idx", "id", "element_id", "node_id", "bid")):
            found = d
            break
    if found is None and isinstance(num, int):
        items = ui if isinstance(ui, list) else next((v for v in ui.values() if isinstance(v, list)), None) \
            if isinstance(ui, dict) else None
        if isinstance(items, list) and 0 <= num < len(items) and isinstance(items[num], dict):
            found = items[num]
    if found is None:
        return ""
    return " ".join(str(v) for k, v in found.items() if isinstance(v, str) and re.search(
        r"text|label|desc|name|title|hint|content|role", k, re.I))


def _without_element_ids(args: Any) -> Any:
    if isinstance(args, list):
        return args[1:] if args and isinstance(args[0], str) and _BID.match(args[0]) else args
    if isinstance(args, dict):
        return {k: v for k, v in args.items() if not (re.search(r"bid|element|index|idx|node", k, re.I)
                                                      and isinstance(v, (str, int)) and _BID.match(str(v)))}
    return args


def _classify(step: ViewStep, prev: ViewObservation | None = None,
              catalog: acting.ToolCatalog = acting.NO_TOOLS) -> _Act | None:
    if step.action is None:
        return None
    rec = acting.recognise(step.action, step.plain_args(), catalog)
    if rec is None:
        return None
    args = rec.args
    kind, groups = rec.kind, rec.groups
    # a browser element id (click('a51'), {"bid": "b12"}) names a widget, not an entity or a label;
    # an HTTP method (DELETE) is no entity either
    id_args = _without_element_ids(args) if rec.via == "browser" else (
        {k: v for k, v in args.items() if k not in ("method", "http_method", "verb")}
        if rec.via == "http" and isinstance(args, dict) else args)
    if rec.via == "http" and isinstance(id_args, dict) and len(parts := step.action.split(maxsplit=1)) == 2:
        id_args = {**id_args, " path": parts[1]}  # `POST /api/orders/ORD-1/refund`: the path names the entity
    arg_text = " ".join(_strings(id_args))
    if kind == "gui_other":
        if not re.search(r"[A-Za-z]", arg_text):
            arg_text = (arg_text + " " + _ui_label(args, prev)).strip()
        w = words(rec.name)
        if COMMIT_LABEL.search(arg_text) or (w & {"press"} and re.search(r"enter|return", arg_text, re.I)):
            kind = "gui_commit"
            groups = frozenset(g for g, vs in GROUPS.items() if words(arg_text) & vs) or frozenset(GROUPS)
        elif not re.search(r"[A-Za-z]", arg_text):
            kind = "gui_unlabelled"  # clicked by number or position: could be a commit
    failed = _failed(step.observation, rec, catalog)
    if "send" in groups and _drafted(step.observation):
        groups = frozenset({"create_edit"})  # a draft was saved: nothing was sent
    if kind == "gui_commit" and failed is None:
        failed = False  # a click that was made is done; a GUI shows no result code
    elif kind == "gui_commit" and failed is False and step.observation is not None:
        failed = acting.form_refused(_obs_text(prev), _obs_text(step.observation)) or False
    return _Act(step, kind, groups, failed, id_args, rec.target, arg_text, rec.via)


_SETTING = frozenset({"configure", "create_edit"})
_DRAFT_TEXT = re.compile(r"\b(saved (as|to|in) (the )?drafts?|draft (saved|created))\b", re.I)


def _drafted(o: ViewObservation | None) -> bool:
    """Whether a send's result says it made a draft (`{"status": "draft"}`, "Draft saved."), not a sent message."""
    d = _data(o)
    if isinstance(d, dict) and str(d.get("status", "")).lower() in ("draft", "drafted"):
        return True
    return o is not None and bool(_DRAFT_TEXT.search(o.text or ""))


def _before(view: ClaimBlindView, index: int) -> ViewObservation | None:
    """The screen an action was taken on: the last observation before it (or the initial one)."""
    for s in reversed(view.steps[:index]):
        if s.observation is not None:
            return s.observation
    return view.initial_observation


def extract_rules(view: ClaimBlindView, catalog: acting.ToolCatalog = acting.NO_TOOLS) -> dict[str, Finding]:
    """Evidence fields from the claim-blind view, each with the step indices that support it.

    >>> from referee.audit.trace import Trace
    >>> from referee.audit.view.blind import build_view
    >>> t = Trace(run_id="r", task="Delete note N42", steps=[{"action": {"name": "delete_note", "args":
    ...     {"id": "N42"}}, "observation": {"text": "deleted"}}])
    >>> ev = extract_rules(build_view(t)); ev["action"].value, ev["target_id"].value, ev["committed"].support
    ('yes', 'yes', [0])
    """
    task = view.task
    if view.tools:  # the trace's own tool descriptions: a tool named by no verb takes its description's
        catalog = acting.ToolCatalog(catalog.rules, {**dict(view.tools), **dict(catalog.definitions or {})})
    wanted = task_groups(task)
    conditional = bool(wanted) and not task_groups(task, unconditional=True)
    acts: list[_Act] = []
    screen = view.initial_observation  # the last observation so far: the screen each action was taken on
    for s in view.steps:
        if (act := _classify(s, screen, catalog)) is not None:
            acts.append(act)
        if s.observation is not None:
            screen = s.observation
    writes = [a for a in acts if a.kind in ("write", "gui_commit")]
    relevant = [a for a in writes if not wanted or a.groups & wanted] or ([] if wanted else writes)
    query_like = not wanted and not writes
    # in an information task every action that brought something back is a lookup (run code, open a page)
    reads = [a for a in acts if a.kind == "read" or (query_like and a.kind == "other" and a.step.observation)]
    ok_writes = [a for a in relevant if a.failed is False]
    task_ids = ids_in(task)
    task_quoted = {q.strip().lower() for q in QUOTED_RE.findall(task)}
    initial_text = _obs_text(view.initial_observation)
    out: dict[str, Finding] = {}

    # action: the agent attempted a task-relevant action (for a question: it looked something up)
    if relevant:
        out["action"] = _fe("yes", [a.step.index for a in (ok_writes or relevant)])
    elif query_like and reads:
        good = [a.step.index for a in reads if a.failed is False]
        bad = [a.step.index for a in reads if a.failed]
        out["action"] = _fe("yes", good) if good else (
            _fe("no", bad, note="every lookup failed") if bad else _fe("unknown", note="lookups without a result"))
    elif writes:
        out["action"] = _fe("no", [a.step.index for a in writes], note="writes, but none of the kind the task asks")
    else:
        out["action"] = _fe("no", note="no task-relevant action in the trace")

    # committed: a relevant write came back without an error, and GUI input was not left unsaved
    types = [a for a in acts if a.kind == "gui_type"]
    last_commit = max((a.step.index for a in writes if a.kind == "gui_commit"), default=-1)
    if types and types[-1].step.index > last_commit and (wanted & {"create_edit", "send", "configure"}):
        out["committed"] = _fe("no", [types[-1].step.index], note="typed input after the last save/send")
    elif ok_writes:
        out["committed"] = _fe("yes", [a.step.index for a in ok_writes])
    elif relevant and all(a.failed for a in relevant):
        out["committed"] = _fe("no", [a.step.index for a in relevant], note="every relevant write returned an error")
    elif relevant:
        out["committed"] = _fe("unknown", note="relevant writes without a result")
    elif query_like:
        out["committed"] = _fe("unknown", note="no write asked for")
    else:
        out["committed"] = _fe("no", note="nothing committed")

    # target_id: the committed action names an entity from the task, or one the environment showed before
    targets = ok_writes if ok_writes else (reads if query_like else [])
    if targets and types:  # GUI: what was typed before the commit names the target too
        targets = targets + [a for a in types if a.step.index < targets[-1].step.index]
    out["target_id"] = target_finding(view, targets, task_ids, task_quoted, initial_text)

    # transition: the state changed because of the agent (not already true, not an empty target list)
    out["transition"] = _fe("unknown", note="no change asked for") if query_like else \
        _transition(view, ok_writes, relevant, wanted, task_ids, initial_text)

    # final_supports_goal: the end of the trace is consistent with the goal, every named target acted on
    out["final_supports_goal"] = _final(view, acts, relevant, ok_writes, reads, task_ids, wanted, query_like)
    # writes of another kind that did not fail (a result, or none recorded): the vocabulary may differ
    other_ok = [a.step.index for a in writes if a.failed is not True] if wanted and not relevant else []
    blind = [a.step.index for a in acts if a.kind == "gui_unlabelled"] if wanted and not relevant else []
    out["details"] = _fe("unknown", note="no write whose details could be checked")
    if conditional and not relevant:
        # "if X, do Y": not acting is right when X does not hold, and rules cannot decide X
        for f in ("action", "committed", "transition", "final_supports_goal"):
            out[f] = _fe("unknown", [a.step.index for a in reads if a.failed is False],
                         note="conditional task: whether its condition held is not decided by the trace")
    elif blind and not other_ok:
        # no recognisable commit, but clicks on elements the trace does not name: one may have been it
        for f in ("action", "committed", "transition", "final_supports_goal"):
            out[f] = _fe("unknown", blind, note="clicks on unnamed elements; no recognisable commit")
    elif other_ok:
        # a write succeeded, but its name is not of the kind the task's verbs ask for ("compensate"
        # done by "issue_voucher"): the vocabulary may simply differ, so this is no well-founded `no`
        for f in ("action", "committed", "transition", "final_supports_goal"):
            out[f] = _fe("unknown", other_ok, note="successful writes of another kind than the task's verbs")
    elif ok_writes and all(a.via == "shell" for a in ok_writes):
        out["details"] = _fe("unknown", note="a code change: the task text states no checkable detail of it")
    elif ok_writes:
        wrong = _details(view, ok_writes, relevant, [a for a in writes if a.failed is False])
        if wrong is not None and out["final_supports_goal"].value == "yes":
            out["final_supports_goal"] = wrong
        out["details"] = wrong if wrong is not None else details.stated_details(task, [
            (a.step.index, a.step.plain_args()) for a in ok_writes])
    return abstain(out, {s.index for s in view.steps if s.observation is not None})


DETAIL_CHECKS = frozenset({"slot", "attribute", "duplicate", "clause", "quantity", "quoted", "shown"})


def _is_gui(view: ClaimBlindView) -> bool:
    """A GUI trace: some observation carries a UI tree or a screenshot."""
    return any(s.observation is not None and (s.observation.has_ui() or s.observation.screenshot)
               for s in view.steps)


def _data(o: ViewObservation | None) -> Any:
    """An observation's structured content: its data, else its text parsed as JSON, else None.

    Made once per observation and shared by every check, which only reads it.
    """
    if o is None:
        return None
    got = o.__dict__.get("_rules_data", _UNSET)
    if got is _UNSET:
        got = o.__dict__["_rules_data"] = _parse_data(o)
    return got


_UNSET = object()


def _parse_data(o: ViewObservation) -> Any:
    d = o.plain_data()
    if isinstance(d, (dict, list)) and not (isinstance(d, dict) and set(d) <= {"role", "system"}):
        return d
    t = (o.text or "").strip()
    if t[:1] in "[{":
        try:
            return loads(t)
        except ValueError:
            return None
    return None


def _details(view: ClaimBlindView, ok_writes: list[_Act], relevant: list[_Act],
             all_ok: Sequence[_Act] = ()) -> Finding | None:
    """A `no` when a committed write's details contradict what the task states (see details.py)."""
    task = view.task
    if not ok_writes:
        return None
    writes = [details.Write(a.step.index, a.step.action or "", a.groups, a.step.plain_args(),
                            _data(a.step.observation), _obs_text(a.step.observation)) for a in ok_writes]
    seen = [d for d in [_data(view.initial_observation)] + [_data(s.observation) for s in view.steps] if d is not None]
    if "slot" in DETAIL_CHECKS:
        for i, key, said, got in details.slot_contradictions(task, writes, seen):
            return _fe("no", [i], note=f"the task says {said!r} for {key!r}, the write carries {got!r}")
    if "attribute" in DETAIL_CHECKS:
        for i, attr, want, got in details.attribute_mismatch(task, writes, seen, is_id):
            return _fe("no", [i], note=f"the task's {attr!r} points to {want!r}, the write used {got!r}")
    if "quantity" in DETAIL_CHECKS:
        for i, noun, n in details.quantity_mismatch(task, writes):
            return _fe("no", [i], note=f"the task states {n} {noun}..., the write carries another number")
    if "duplicate" in DETAIL_CHECKS:
        deleted = {t for a in list(all_ok) + ok_writes if "delete" in a.groups for t in a.arg_ids}

        def new_ids(w: details.Write) -> set[str]:
            before = _obs_text(view.initial_observation) + "".join(_obs_text(s.observation)
                                                                   for s in view.steps[:w.index])
            return {t for t in ids_in(w.result_text) if t not in before and t not in json.dumps(w.args)}

        for a, b in details.duplicate_creates(writes, new_ids, deleted):
            return _fe("no", [a, b], note="the same create succeeded twice and neither was undone")
    wanted = task_groups(task)
    if "quoted" in DETAIL_CHECKS and wanted & {"create_edit", "send"} and not wanted & {"delete"}:
        quoted = [q for q in QUOTED_STRICT.findall(task) if len(q.split()) <= 12 and "{" not in q]
        first = ok_writes[0].step.index
        missing = details.quoted_missing(
            quoted, [" ".join(_strings(s.plain_args())) for s in view.steps if s.action and s.action != "reply"],
            _obs_text(view.initial_observation) + "".join(_obs_text(s.observation) for s in view.steps[:first])
        ) if quoted else []  # no quoted text in the task: nothing to look for in what was typed or shown
        if missing:
            return _fe("no", [a.step.index for a in ok_writes],
                       note=f"the task's text {missing[0]!r} is in no action's arguments")
    if "shown" in DETAIL_CHECKS and "delete" in wanted and _is_gui(view):
        targets = set(QUOTED_STRICT.findall(task)) | ids_in(task)
        first = ok_writes[0].step.index
        before = _obs_text(view.steps[first - 1].observation if first else view.initial_observation)
        last_obs = next((s for s in reversed(view.steps) if s.observation is not None), None)
        if last_obs is not None and last_obs.index > first:
            left = details.still_shown(targets, before, _obs_text(last_obs.observation))
            if left:
                return _fe("no", [first, last_obs.index], note=f"{left[0]!r} is still on the final screen")
    if "clause" in DETAIL_CHECKS:
        need = details.clause_targets(task, GROUPS, is_id, words)
        for tok, group in need.items():
            # setting a value is editing it: "Set the stock of RED-101" done by inventory_update(sku=RED-101)
            kinds = _SETTING if group in _SETTING else {group}
            of_kind = [a for a in ok_writes if a.groups & kinds]
            if of_kind and not any(a.arg_ids for a in of_kind):
                continue  # these writes name no target (a GUI commit): the target was chosen on screen
            if any(tok in a.arg_ids for a in of_kind):
                continue
            # or on what an earlier write naming it made: compose(file) gave draft d_52, then send_draft(d_52)
            made = {t for w in all_ok if tok in w.arg_ids for t in ids_in(_obs_text(w.step.observation))}
            if not any(a.arg_ids & made for a in of_kind):
                near = [a.step.index for a in relevant] or [a.step.index for a in ok_writes]
                return _fe("no", near,
                           note=f"the task asks to {group} {tok!r}; no successful write of that kind names it")
    return None


def _transition(view, ok_writes, relevant, wanted, task_ids, initial_text) -> Finding:
    first = ok_writes[0].step.index if ok_writes else len(view.steps)
    if "delete" in wanted:
        # an empty target list seen before the first delete means there was nothing to delete
        for s in view.steps[:first]:
            if s.observation is not None and EMPTY_TEXT.match(s.observation.text or "") and \
                    s.action and words(s.action) & READ_VERBS:
                return _fe("no", [s.index], note="the target list was empty before the delete")
    if not relevant:
        return _fe("no", note="no relevant write, so no change the agent made")
    if not ok_writes:
        return _fe("no", [a.step.index for a in relevant], note="relevant writes all failed")
    changed = []
    for a in ok_writes:
        before = _before(view, a.step.index)
        after = a.step.observation
        if after is None:
            continue
        if a.kind == "gui_commit" and before is not None and _obs_text(before) == _obs_text(after):
            continue  # the screen did not change: the click did nothing visible
        changed.append(a.step.index)
    if changed:
        return _fe("yes", changed, note="a relevant write returned a changed state")
    return _fe("no", [a.step.index for a in ok_writes], note="the screen did not change after the commit")


def _final(view, acts, relevant, ok_writes, reads, task_ids, wanted, query_like) -> Finding:
    if query_like:
        good = [a for a in reads if a.failed is False]
        if good:
            return _fe("yes", [good[-1].step.index], note="the last lookup returned data")
        return _fe("no" if reads else "unknown", note="no successful lookup")
    if not ok_writes:
        return _fe("no", [a.step.index for a in relevant], note="no relevant write succeeded")
    if all(a.via == "shell" or _file_edit(a) for a in ok_writes):
        return _checked(view, acts, relevant, ok_writes)
    # every id the task names, of a kind the writes target, must have been acted on successfully
    target_shapes = {shape(t) for a in relevant for t in a.arg_ids}
    named = {t for t in task_ids if shape(t) in target_shapes}
    left = named - {t for a in ok_writes for t in a.arg_ids}
    if left:  # a named target no write's arguments hold may still be one a write's result shows
        left -= {t for a in ok_writes for t in ids_in(_obs_text(a.step.observation))}
    # the same for entity numbers, when the writes give some under id-like keys ("orders 1001, 1002 and 1003")
    written = {n for a in ok_writes for n in numeric_ids(a.id_args)}
    if written:
        left |= {n for n in task_numbers(view.task) if len(n) >= 4 and any(len(w) == len(n) for w in written)} - \
            written - {n for a in ok_writes for n in re.findall(r"\d+", _obs_text(a.step.observation))}
    missing = sorted(left)
    if missing:
        return _fe("no", [a.step.index for a in ok_writes], note=f"task target {missing[0]!r} was never acted on")
    last_ok = ok_writes[-1].step.index
    later_fail = [a.step.index for a in relevant if a.step.index > last_ok and a.failed]
    if later_fail:
        return _fe("no", later_fail, note="the last relevant write failed")
    handoff = [a.step.index for a in acts if a.kind == "handoff" and a.step.index > last_ok]
    if handoff:
        return _fe("unknown", handoff, note="handed off to a human after the last write")
    final = view.steps[-1].index
    return _fe("yes", [last_ok, final], note="the last relevant write succeeded and nothing undid it")


# path characters with a `/` or `.` among them; the lookahead finds that one once, so a long path is linear
_FILE_PATH = re.compile(r"^(?=[^/.]*+[/.])[\w./~-]*+$")


def _file_edit(a: _Act) -> bool:
    """A write by a file-editor tool (OpenHands `edit`/`write`, `str_replace_editor`, Claude Code's Edit/Write,
    Gemini CLI's replace/write_file, Codex's apply_patch): it names a file, so, like a shell edit, only a check
    run after it tells whether the code now works."""
    path = acting.file_tool_path(a.step.action or "", a.step.plain_args())
    return "create_edit" in a.groups and isinstance(path, str) and bool(_FILE_PATH.match(path))


def _checked(view, acts, relevant, ok_writes) -> Finding:
    """Code changed by shell commands or a file editor: a bug report names many things that are not targets, so the
    final state is what the last check (tests, a script) after the last edit said, and whether a
    later edit failed."""
    # removing files is cleanup (scratch scripts); the last edit is the last write that changed content
    edits = [a for a in ok_writes if "create_edit" in a.groups] or ok_writes
    last_ok = edits[-1].step.index
    later_fail = [a.step.index for a in relevant if a.step.index > last_ok and a.failed and "create_edit" in a.groups]
    if later_fail:
        return _fe("no", later_fail, note="the last relevant write failed")
    checks = [a for a in acts if a.step.index > last_ok and a.via == "shell" and a.failed is not None
              and acting.VERIFY.search(acting.command_text(a.step.action or "", a.step.plain_args()))]
    if not checks:
        return _fe("unknown", [last_ok], note="no test or check ran after the last edit")
    last = checks[-1]
    if last.failed:
        return _fe("no", [last.step.index], note="the last check after the last edit failed")
    return _fe("yes", [last_ok, last.step.index], note="the last check after the last edit passed")


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
