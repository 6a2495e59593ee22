"""The rules extractor: deterministic, offline evidence from structured actions and observations.

It reasons about generic notions, not any one benchmark: write-like action names, tool results
that are errors, entity ids named in the task reappearing in the committed action or its result,
ids that the agent used without the environment ever showing them, an empty list before a
delete, a goal state already present in the initial observation, typed-but-unsaved GUI input.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Iterable

from referee.audit.extract import details, extractors
from referee.audit.records import FieldEvidence
from referee.audit.view import ClaimBlindView, ViewObservation, ViewStep, canonical_json, thaw

RULES_VERSION = "2"  # 2: detail checks (slots, attributes, duplicates, clause coverage)

GROUPS: dict[str, frozenset[str]] = {
    "delete": frozenset("delete remove cancel erase clear drop destroy uninstall discard trash unsubscribe revoke "
                        "unlink purge".split()),
    "send": frozenset("send reply forward share post publish email mail message sms notify tweet submit "
                      "resend invite".split()),
    "configure": frozenset("set enable disable toggle turn switch configure adjust activate deactivate mute "
                           "unmute".split()),
    "create_edit": frozenset("create add insert new book reserve make write save update edit modify change set rename "
                             "move copy upgrade downgrade put patch upload order purchase buy pay exchange assign "
                             "apply record register schedule issue compensate refund credit fill merge log "
                             "attach mark commit".split()),
}
WRITE_VERBS = frozenset().union(*GROUPS.values())
READ_VERBS = frozenset("get list search find read view show query fetch lookup look check open describe calculate "
                       "count browse inspect retrieve load select status info details".split())
GUI_TYPE = frozenset("type input text enter_text set_text fill keyboard".split())
GUI_CLICK = frozenset("click tap press long_press touch select".split())
HANDOFF = re.compile(r"(transfer|escalat|handoff|hand_off)\w*[_ ]?(to[_ ])?(a[_ ])?(human|agent|operator|support)", re.I)
COMMIT_LABEL = re.compile(r"\b(save|send|done|ok|okay|confirm|submit|apply|create|add|delete|remove|post|yes|"
                          r"finish|update|set|publish|reply|enter|check ?mark|✓)\b", re.I)
FAIL_TEXT = re.compile(r"^\s*(error|failed|failure|exception|traceback|not found|invalid|denied|forbidden|"
                       r"unauthori[sz]ed|cannot|unable)\b", re.I)
EMPTY_TEXT = re.compile(r"^\s*(\[\s*\]|\{\s*\}|none|null|no (results?|items?|entries|records|matches)\b.*|"
                        r"(list|folder|inbox) is empty.*|empty|0 (results?|items?))\s*$", re.I)
# Ids: tokens with a letter and a digit (HAT136, mia_li_3668, 4BMN53), all-caps codes, emails.
ID_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_\-.@]*[A-Za-z0-9]")
FILE_RE = re.compile(r"[\w\-]+\.(?=[A-Za-z0-9]*[A-Za-z])[A-Za-z0-9]{1,5}")  # notes.md, photo.jpg
QUOTED_RE = re.compile(r"[\"'“‘]([^\"'”’]{2,80})[\"'”’]")


def words(name: str) -> set[str]:
    """Lower-case words of an action name: camelCase, snake_case, kebab and spaces all split.

    >>> sorted(words("updateReservation_flights"))
    ['flights', 'reservation', 'update']
    """
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", name)
    return {w for w in re.split(r"[^A-Za-z]+", spaced.lower()) if w}


def is_id(tok: str) -> bool:
    """An entity id: has a digit and a letter, an all-caps code of 5+ characters, an email or a file name.

    >>> is_id("HAT136"), is_id("mia_li_3668"), is_id("XEHMQB"), is_id("Seattle"), is_id("2024")
    (True, True, True, False, False)
    """
    if len(tok) < 3:
        return False
    if "@" in tok or FILE_RE.fullmatch(tok):
        return True
    has_d = any(c.isdigit() for c in tok)
    has_a = any(c.isalpha() for c in tok)
    if has_d and has_a:
        return True
    return len(tok) >= 5 and tok.isalnum() and tok.isupper() and has_a


@lru_cache(maxsize=8192)
def _ids_in(text: str) -> frozenset[str]:
    return frozenset(t for t in ID_RE.findall(text) if is_id(t))


def ids_in(text: str) -> set[str]:
    """Entity ids in a text (see is_id)."""
    return set(_ids_in(text or ""))


def shape(tok: str) -> str:
    """A coarse id shape, to tell a reservation code from a user id.

    >>> shape("XEHM4B") == shape("59XX6W"), shape("XEHM4B") == shape("mia_li_3668")
    (True, False)
    """
    if "@" in tok:
        return "email"
    if "_" in tok:
        return "snake:" + re.sub(r"\d+$", "", tok).count("_").__str__()
    kind = "U" if tok.upper() == tok else ("L" if tok.lower() == tok else "M")
    return f"{kind}{len(tok)}"


_TEXT_CACHE: dict[int, tuple[ViewObservation, str]] = {}


def _obs_text(o: ViewObservation | None) -> str:
    if o is None:
        return ""
    hit = _TEXT_CACHE.get(id(o))
    if hit is not None and hit[0] is o:  # the view is immutable, so its text never changes
        return hit[1]
    if len(_TEXT_CACHE) > 4096:
        _TEXT_CACHE.clear()
    text = _obs_text_uncached(o)
    _TEXT_CACHE[id(o)] = (o, text)
    return text


def _obs_text_uncached(o: ViewObservation | None) -> str:
    if o is None:
        return ""
    parts = [o.text or ""]
    if o.data is not None:
        parts.append(canonical_json(thaw(o.data)))
    if o.ui is not None:
        parts.append(canonical_json(thaw(o.ui)))
    return "\n".join(parts)


def _failed(o: ViewObservation | None) -> bool | None:
    """True for an error result, False for a result, None when nothing came back."""
    if o is None:
        return None
    if o.error:
        return True
    if FAIL_TEXT.match(o.text or ""):
        return True
    d = thaw(o.data)
    if isinstance(d, dict):
        if d.get("error") or str(d.get("status", "")).lower() in ("error", "failed", "failure"):
            return True
        code = d.get("status_code") or d.get("code")
        if isinstance(code, int) and code >= 400:
            return True
    return False


def _strings(v: Any) -> Iterable[str]:
    if isinstance(v, str):
        yield v
    elif isinstance(v, dict):
        for x in v.values():
            yield from _strings(x)
    elif isinstance(v, (list, tuple)):
        for x in v:
            yield from _strings(x)
    elif isinstance(v, (int, float)) and not isinstance(v, bool):
        yield str(v)


@dataclass(frozen=True)
class _Act:
    step: ViewStep
    kind: str            # write | read | gui_type | gui_commit | gui_other | handoff | other
    groups: frozenset[str]
    failed: bool | None
    arg_ids: frozenset[str]
    arg_text: str


def _classify(step: ViewStep) -> _Act | None:
    if step.action is None or step.action == "reply":
        return None
    w = words(step.action)
    args = thaw(step.args)
    arg_text = " ".join(_strings(args))
    arg_ids = frozenset(t for s in _strings(args) for t in ids_in(s))
    failed = _failed(step.observation)
    if HANDOFF.search(step.action):
        kind, groups = "handoff", frozenset()
    elif w & GUI_TYPE and not (w & WRITE_VERBS - {"set"}):
        kind, groups = "gui_type", frozenset()
    elif w & GUI_CLICK and not (w & WRITE_VERBS):
        label = arg_text
        if COMMIT_LABEL.search(label) or (w & {"press"} and re.search(r"enter|return", label, re.I)):
            kind = "gui_commit"
            groups = frozenset(g for g, vs in GROUPS.items() if words(label) & vs) or frozenset(GROUPS)
        else:
            kind, groups = "gui_other", frozenset()
    elif w & WRITE_VERBS:
        kind, groups = "write", frozenset(g for g, vs in GROUPS.items() if w & vs)
    elif w & READ_VERBS:
        kind, groups = "read", frozenset()
    else:
        kind, groups = "other", frozenset()
    return _Act(step, kind, groups, failed, arg_ids, arg_text)


def task_groups(task: str) -> frozenset[str]:
    """Which write groups the task text asks for (empty: a question, or no write verb).

    >>> sorted(task_groups("You want to cancel reservation X and book a new one"))
    ['create_edit', 'delete']
    """
    tw = words(task)
    extra = {"fly": "create_edit", "flight": "create_edit"} if tw & {"fly"} else {}
    found = {g for g, vs in GROUPS.items() if tw & (vs - {"new", "set", "log", "mark", "record", "check"})}
    found.update(extra.values())
    return frozenset(found)


def _fe(value: str, support: Iterable[int] = (), note: str | None = None) -> FieldEvidence:
    return FieldEvidence(value=value, support=sorted(set(support)), note=note)  # type: ignore[arg-type]


def extract_rules(view: ClaimBlindView) -> dict[str, FieldEvidence]:
    """Evidence fields from the claim-blind view, each with the step indices that support it.

    >>> from referee.audit.trace import Trace
    >>> from referee.audit.view import build_view
    >>> t = Trace(run_id="r", task="Delete note N42", steps=[{"action": {"name": "delete_note", "args":
    ...     {"id": "N42"}}, "observation": {"text": "deleted"}}])
    >>> ev = extract_rules(build_view(t)); ev["action"].value, ev["target_id"].value, ev["committed"].support
    ('yes', 'yes', [0])
    """
    task = view.task
    wanted = task_groups(task)
    acts = [a for a in (_classify(s) for s in view.steps) if a is not None]
    writes = [a for a in acts if a.kind in ("write", "gui_commit")]
    relevant = [a for a in writes if not wanted or a.groups & wanted] or ([] if wanted else writes)
    reads = [a for a in acts if a.kind == "read"]
    ok_writes = [a for a in relevant if a.failed is False]
    task_ids = ids_in(task)
    task_quoted = {q.strip().lower() for q in QUOTED_RE.findall(task)}
    initial_text = _obs_text(view.initial_observation)
    out: dict[str, FieldEvidence] = {}
    query_like = not wanted and not writes

    # action: the agent attempted a task-relevant action (for a question: it looked something up)
    if relevant:
        out["action"] = _fe("yes", [a.step.index for a in (ok_writes or relevant)])
    elif query_like and reads:
        good = [a.step.index for a in reads if a.failed is False]
        out["action"] = _fe("yes", good) if good else _fe("no", note="every lookup failed")
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
    out["target_id"] = _target(view, targets, task_ids, task_quoted, initial_text)

    # transition: the state changed because of the agent (not already true, not an empty target list)
    out["transition"] = _transition(view, ok_writes, relevant, wanted, task_ids, initial_text)

    # final_supports_goal: the end of the trace is consistent with the goal, every named target acted on
    out["final_supports_goal"] = _final(view, acts, relevant, ok_writes, reads, task_ids, wanted, query_like)
    other_ok = [a.step.index for a in writes if a.failed is False] if wanted and not relevant else []
    if other_ok:
        # a write succeeded, but its name is not of the kind the task's verbs ask for ("compensate"
        # done by "issue_voucher"): the vocabulary may simply differ, so this is no well-founded `no`
        for f in ("action", "committed", "transition", "final_supports_goal"):
            out[f] = _fe("unknown", other_ok, note="successful writes of another kind than the task's verbs")
    elif out["final_supports_goal"].value == "yes":
        wrong = _details(view, ok_writes, relevant)
        if wrong is not None:
            out["final_supports_goal"] = wrong
    return out


DETAIL_CHECKS = frozenset({"slot", "attribute", "duplicate", "clause", "quantity"})


def _data(o: ViewObservation | None) -> Any:
    """An observation's structured content: its data, else its text parsed as JSON, else None."""
    if o is None:
        return None
    d = thaw(o.data)
    if isinstance(d, (dict, list)) and not (isinstance(d, dict) and set(d) <= {"role", "system"}):
        return d
    t = (o.text or "").strip()
    if t[:1] in "[{":
        try:
            return json.loads(t)
        except ValueError:
            return None
    return None


def _details(view: ClaimBlindView, ok_writes: list[_Act], relevant: list[_Act]) -> FieldEvidence | None:
    """A `no` when a committed write's details contradict what the task states (see details.py)."""
    task = view.task
    writes = [details.Write(a.step.index, a.step.action or "", a.groups, thaw(a.step.args),
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
        deleted = {t for a in ok_writes if "delete" in a.groups for t in a.arg_ids}

        def new_ids(w: details.Write) -> set[str]:
            before = _obs_text(view.initial_observation) + "".join(_obs_text(s.observation)
                                                                   for s in view.steps[:w.index])
            return {t for t in ids_in(w.result_text) if t not in before and t not in json.dumps(w.args)}

        for a, b in details.duplicate_creates(writes, new_ids, deleted):
            return _fe("no", [a, b], note="the same create succeeded twice and neither was undone")
    if "clause" in DETAIL_CHECKS:
        need = details.clause_targets(task, GROUPS, is_id, words)
        for tok, group in need.items():
            if not any(tok in a.arg_ids and group in a.groups for a in ok_writes):
                near = [a.step.index for a in relevant] or [a.step.index for a in ok_writes]
                return _fe("no", near, note=f"the task asks to {group} {tok!r}; no successful write of that kind names it")
    return None


def _grounded_before(view: ClaimBlindView, tok: str, before: int, initial_text: str) -> int | None:
    if tok in initial_text:
        return -1
    for s in view.steps[:before]:
        if s.observation is not None and tok in _obs_text(s.observation):
            return s.index
    return None


def _target(view, acts: list[_Act], task_ids: set[str], task_quoted: set[str], initial_text: str) -> FieldEvidence:
    if not acts:
        return _fe("unknown", note="no successful relevant action to check")
    hit = [a.step.index for a in acts if (a.arg_ids & task_ids) or
           any(q in a.arg_text.lower() for q in task_quoted)]
    if hit:
        return _fe("yes", hit, note="an entity named in the task is the target")
    support: list[int] = []
    for a in acts:
        if not a.arg_ids:
            continue
        ungrounded = [t for t in a.arg_ids if _grounded_before(view, t, a.step.index, initial_text) is None]
        same_shape = {shape(t) for t in task_ids} & {shape(t) for t in a.arg_ids}
        if same_shape and not (a.arg_ids & task_ids):
            # the task names an id of this kind and the action used a different one
            return _fe("no", [a.step.index], note="acted on an id the task does not name")
        if ungrounded:
            return _fe("no", [a.step.index], note=f"id {sorted(ungrounded)[0]!r} never appeared before it was used")
        support.append(a.step.index)
        support.extend(j for t in a.arg_ids if (j := _grounded_before(view, t, a.step.index, initial_text)) not in
                       (None, -1))
    if support:
        return _fe("yes", support, note="target ids were shown by the environment before use")
    return _fe("unknown", note="the action names no entity")


def _transition(view, ok_writes, relevant, wanted, task_ids, initial_text) -> FieldEvidence:
    if not relevant:
        return _fe("no", note="no relevant write, so no change the agent made")
    if not ok_writes:
        return _fe("no", [a.step.index for a in relevant], note="relevant writes all failed")
    first = ok_writes[0].step.index
    if "delete" in wanted:
        # an empty target list seen before the first delete means there was nothing to delete
        for s in view.steps[:first]:
            if s.observation is not None and EMPTY_TEXT.match(s.observation.text or "") and \
                    s.action and words(s.action) & READ_VERBS:
                return _fe("no", [s.index], note="the target list was empty before the delete")
    changed = []
    for a in ok_writes:
        before = view.steps[a.step.index - 1].observation if a.step.index > 0 else view.initial_observation
        after = a.step.observation
        if after is None:
            continue
        if a.kind == "gui_commit" and before is not None and _obs_text(before) == _obs_text(after):
            continue  # the screen did not change: the click did nothing visible
        changed.append(a.step.index)
    if changed:
        return _fe("yes", changed, note="a relevant write returned a changed state")
    return _fe("no", [a.step.index for a in ok_writes], note="the screen did not change after the commit")


def _final(view, acts, relevant, ok_writes, reads, task_ids, wanted, query_like) -> FieldEvidence:
    if query_like:
        good = [a for a in reads if a.failed is False]
        if good:
            return _fe("yes", [good[-1].step.index], note="the last lookup returned data")
        return _fe("no" if reads else "unknown", note="no successful lookup")
    if not ok_writes:
        return _fe("no", [a.step.index for a in relevant], note="no relevant write succeeded")
    # every id the task names, of a kind the writes target, must have been acted on successfully
    target_shapes = {shape(t) for a in relevant for t in a.arg_ids}
    named = {t for t in task_ids if shape(t) in target_shapes}
    done = {t for a in ok_writes for t in a.arg_ids | ids_in(_obs_text(a.step.observation))}
    missing = sorted(named - done)
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


@dataclass(frozen=True)
class RulesExtractor:
    """The default backend: no model, no network, deterministic (so one run is enough)."""

    name: str = "rules"
    model: str | None = None
    prompt_version: str = RULES_VERSION

    def extract(self, view: ClaimBlindView, run_index: int = 0) -> dict[str, FieldEvidence]:
        return extract_rules(view)


extractors.add("rules", RulesExtractor)


def describe(ev: dict[str, FieldEvidence]) -> str:
    """A compact one-line summary (for debugging and docs)."""
    return json.dumps({k: [v.value, v.support, v.note] for k, v in ev.items()}, ensure_ascii=False)
