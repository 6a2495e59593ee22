"""The rules' checks, each a named unit listed once in CHECKS: what decides each evidence field, in order.

Three stages, run by rules.extract_rules:

- `field`: one per evidence field, always a finding (action, committed, target_id, transition,
  final_supports_goal);
- `guard`: the first that applies overrides the fields it names (a conditional task, clicks on unnamed
  elements, writes of another kind, a code change);
- `detail`: when relevant writes succeeded, the first contradiction between a write and what the task
  states makes `details` (and a `yes` final state) `no`; the last, `stated`, says which stated details the
  writes carry.

`referee kinds --checks` lists them, one line each (the first line of each function's docstring).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cached_property
from typing import Callable, Literal

from referee.audit.extract import acting, details
from referee.audit.extract import finding as _fe
from referee.audit.extract import obs_text as _obs_text
from referee.audit.extract.acts import Act, classify, observed, screen_before, strings
from referee.audit.extract.lexicon import (
    EMPTY_TEXT,
    GROUPS,
    QUOTED_RE,
    QUOTED_STRICT,
    READ_VERBS,
    ids_in,
    is_id,
    shape,
    task_groups,
    words,
)
from referee.audit.extract.targets import numeric_ids, target_finding, task_numbers
from referee.audit.records import Finding
from referee.audit.view.blind import ClaimBlindView
from referee.audit.view.terminal import split_call

Stage = Literal["field", "guard", "detail"]
OUTCOME = ("action", "committed", "transition", "final_supports_goal")  # what a guard overrides


@dataclass(frozen=True)
class Context:
    """What every check reads: the view, the task's write groups, and its actions as the rules classified them."""

    view: ClaimBlindView
    wanted: frozenset[str]       # the write groups the task asks for (empty: a question, or no write verb)
    conditional: bool            # every asking sentence depends on a condition ("if X, do Y")
    acts: tuple[Act, ...]

    @cached_property
    def writes(self) -> list[Act]:
        return [a for a in self.acts if a.kind in ("write", "gui_commit")]

    @cached_property
    def relevant(self) -> list[Act]:
        """Writes of a kind the task asks for (every write when it names none)."""
        return [a for a in self.writes if not self.wanted or a.groups & self.wanted] or \
            ([] if self.wanted else self.writes)

    @cached_property
    def query_like(self) -> bool:
        return not self.wanted and not self.writes

    @cached_property
    def reads(self) -> list[Act]:
        # in an information task every action that brought something back is a lookup (run code, open a page)
        return [a for a in self.acts if a.kind == "read" or
                (self.query_like and a.kind == "other" and a.step.observation)]

    @cached_property
    def ok_writes(self) -> list[Act]:
        return [a for a in self.relevant if a.failed is False]

    @cached_property
    def types(self) -> list[Act]:
        return [a for a in self.acts if a.kind == "gui_type"]

    @cached_property
    def task_ids(self) -> set[str]:
        return ids_in(self.view.task)

    @cached_property
    def other_ok(self) -> list[int]:
        """Writes of another kind than the task's that did not fail (a result, or none recorded)."""
        return [a.step.index for a in self.writes if a.failed is not True] if self.wanted and not self.relevant \
            else []

    # the detail checks' reading: the successful writes as details.Write, and every structured observation
    @cached_property
    def detail_writes(self) -> list[details.Write]:
        return [details.Write(a.step.index, a.step.action or "", a.groups, a.step.plain_args(),
                              observed(a.step.observation), _obs_text(a.step.observation)) for a in self.ok_writes]

    @cached_property
    def seen(self) -> list[object]:
        v = self.view
        return [d for d in [observed(v.initial_observation)] + [observed(s.observation) for s in v.steps]
                if d is not None]

    @cached_property
    def all_ok(self) -> list[Act]:
        return [a for a in self.writes if a.failed is False]

    def shown_before(self, index: int) -> str:
        """Everything the environment showed before step `index`."""
        v = self.view
        return _obs_text(v.initial_observation) + "".join(_obs_text(s.observation) for s in v.steps[:index])


def read_actions(view: ClaimBlindView, catalog: acting.ToolCatalog = acting.NO_TOOLS) -> Context:
    """The context the checks share: every step classified on the screen it was taken on."""
    if view.tools:  # the trace's own tool descriptions: a tool named by no verb takes its description's
        catalog = acting.ToolCatalog(catalog.rules, {**dict(view.tools), **dict(catalog.definitions or {})})
    wanted = task_groups(view.task)
    acts: list[Act] = []
    screen = view.initial_observation  # the last observation so far: the screen each action was taken on
    for s in view.steps:
        if (act := classify(s, screen, catalog)) is not None:
            acts.append(act)
        if s.observation is not None:
            screen = s.observation
    return Context(view, wanted, bool(wanted) and not task_groups(view.task, unconditional=True), tuple(acts))


@dataclass(frozen=True)
class Check:
    """One named check: the evidence fields it decides, at which stage, and the function that decides them."""

    name: str
    fields: tuple[str, ...]
    stage: Stage
    fn: Callable[[Context], Finding | None]

    @property
    def summary(self) -> str:
        """The first line of the function's docstring."""
        return (self.fn.__doc__ or "").strip().splitlines()[0]


# ---- field checks: one finding each -----------------------------------------------------------------------------

def action(cx: Context) -> Finding:
    """The agent attempted a task-relevant write (for a question, or a condition, a lookup that returned something).

    `no` only when the trace shows it (every attempt answered with an error), never because nothing was recognised:
    actions the rules could not classify, or none at all, are `unknown`, and the note names them."""
    if cx.relevant:
        return _fe("yes", [a.step.index for a in (cx.ok_writes or cx.relevant)])
    if cx.conditional and (good := [a.step.index for a in cx.reads if a.failed is False]):
        # "if X, do Y": the lookup that answers X is the task's action, whether or not Y was then due
        return _fe("yes", good, note="a lookup that answers the task's condition")
    if cx.query_like and cx.reads:
        good = [a.step.index for a in cx.reads if a.failed is False]
        bad = [a.step.index for a in cx.reads if a.failed]
        if good:
            return _fe("yes", good)
        if bad and len(bad) == len(cx.reads) and any(a.kind == "read" for a in cx.reads):
            return _fe("no", bad, note="every lookup failed")
        return _fe("unknown", bad, note=_unrecognised(cx, "lookups without a result"))
    if cx.writes and all(a.failed for a in cx.writes) and not _unclassified(cx):
        return _fe("no", [a.step.index for a in cx.writes],
                   note="every write failed, and none of the kind the task asks")
    return _fe("unknown", note=_unrecognised(cx, "no task-relevant action recognised"))


# the kinds of action that say nothing about the task's write: an action the rules could not classify, or a GUI
# step that is no recognisable commit (a click on a label that commits nothing, typing, scrolling, navigation)
_UNCLASSIFIED = frozenset({"other", "gui_other", "gui_unlabelled", "gui_type"})


def _unclassified(cx: Context) -> list[Act]:
    return [a for a in cx.acts if a.kind in _UNCLASSIFIED]


def _unrecognised(cx: Context, what: str) -> str:
    """Why `action` is `unknown`: the actions the rules could not classify, or that the trace has none at all.

    Absence is never a `no` (docs/auditor.md, "Flag only on what the trace shows")."""
    if not cx.acts:
        return f"{what}: no actions at all"
    names: dict[str, int] = {}
    for a in _unclassified(cx):
        name = split_call(a.step.action or "", a.step.plain_args())[0][:40] or "?"
        names[name] = names.get(name, 0) + 1
    if not names:  # every action was classified: reads (or lookups with no result), writes of another kind
        return what
    shown = ", ".join(f"{n} x{k}" if k > 1 else n for n, k in sorted(names.items(), key=lambda x: -x[1])[:5])
    more = f" and {len(names) - 5} more" if len(names) > 5 else ""
    return f"{what}; actions not classified: {shown}{more} (a tool map, --tools, can name them)"


def committed(cx: Context) -> Finding:
    """A relevant write came back without an error, and no GUI input was left unsaved after the last commit."""
    last_commit = max((a.step.index for a in cx.writes if a.kind == "gui_commit"), default=-1)
    if cx.types and cx.types[-1].step.index > last_commit and (cx.wanted & {"create_edit", "send", "configure"}):
        return _fe("no", [cx.types[-1].step.index], note="typed input after the last save/send")
    if cx.ok_writes:
        return _fe("yes", [a.step.index for a in cx.ok_writes])
    if cx.relevant and all(a.failed for a in cx.relevant):
        return _fe("no", [a.step.index for a in cx.relevant], note="every relevant write returned an error")
    if cx.relevant:
        return _fe("unknown", note="relevant writes without a result")
    if cx.query_like:
        return _fe("unknown", note="no write asked for")
    return _fe("no", note="nothing committed")


def target_id(cx: Context) -> Finding:
    """The committed write names an entity from the task, or one the environment showed before it (targets.py)."""
    targets = cx.ok_writes if cx.ok_writes else (cx.reads if cx.query_like else [])
    if targets and cx.types:  # GUI: what was typed before the commit names the target too
        targets = targets + [a for a in cx.types if a.step.index < targets[-1].step.index]
    task_quoted = {q.strip().lower() for q in QUOTED_RE.findall(cx.view.task)}
    return target_finding(cx.view, targets, cx.task_ids, task_quoted, _obs_text(cx.view.initial_observation))


def transition(cx: Context) -> Finding:
    """The state changed because of the agent: not already true, no empty target list, a screen that changed."""
    if cx.query_like:
        return _fe("unknown", note="no change asked for")
    view = cx.view
    first = cx.ok_writes[0].step.index if cx.ok_writes else len(view.steps)
    if "delete" in cx.wanted:
        # an empty target list seen before the first delete means there was nothing to delete
        for s in view.steps[:first]:
            if s.observation is not None and EMPTY_TEXT.match(s.observation.text or "") and \
                    s.action and words(s.action) & READ_VERBS:
                return _fe("no", [s.index], note="the target list was empty before the delete")
    if not cx.relevant:
        return _fe("no", note="no relevant write, so no change the agent made")
    if not cx.ok_writes:
        return _fe("no", [a.step.index for a in cx.relevant], note="relevant writes all failed")
    changed = []
    for a in cx.ok_writes:
        before = screen_before(view, a.step.index)
        after = a.step.observation
        if after is None:
            continue
        if a.kind == "gui_commit" and before is not None and _obs_text(before) == _obs_text(after):
            continue  # the screen did not change: the click did nothing visible
        changed.append(a.step.index)
    if changed:
        return _fe("yes", changed, note="a relevant write returned a changed state")
    return _fe("no", [a.step.index for a in cx.ok_writes], note="the screen did not change after the commit")


def final_supports_goal(cx: Context) -> Finding:
    """The end of the trace is consistent with the goal: every named target acted on, nothing failed or undid it."""
    if cx.query_like:
        good = [a for a in cx.reads if a.failed is False]
        if good:
            return _fe("yes", [good[-1].step.index], note="the last lookup returned data")
        return _fe("no" if cx.reads else "unknown", note="no successful lookup")
    ok_writes = cx.ok_writes
    if not ok_writes:
        return _fe("no", [a.step.index for a in cx.relevant], note="no relevant write succeeded")
    if all(a.via == "shell" or _file_edit(a) for a in ok_writes):
        return _checked(cx)
    # every id the task names, of a kind the writes target, must have been acted on successfully
    target_shapes = {shape(t) for a in cx.relevant for t in a.arg_ids}
    named = {t for t in cx.task_ids if shape(t) in target_shapes}
    left = named - {t for a in ok_writes for t in a.arg_ids}
    if left:  # a named target no write's arguments hold may still be one a write's result shows
        left -= {t for a in ok_writes for t in ids_in(_obs_text(a.step.observation))}
    # the same for entity numbers, when the writes give some under id-like keys ("orders 1001, 1002 and 1003")
    written = {n for a in ok_writes for n in numeric_ids(a.id_args)}
    if written:
        left |= {n for n in task_numbers(cx.view.task) if len(n) >= 4 and any(len(w) == len(n) for w in written)} - \
            written - {n for a in ok_writes for n in re.findall(r"\d+", _obs_text(a.step.observation))}
    last_ok = ok_writes[-1].step.index
    later_fail = [a.step.index for a in cx.relevant if a.step.index > last_ok and a.failed]
    if later_fail:
        return _fe("no", later_fail, note="the last relevant write failed")
    if missing := sorted(left):  # no write on it is absence, not a contradiction: a person looks
        return _fe("unknown", [a.step.index for a in ok_writes],
                   note=f"task target {missing[0]!r}: no write acted on it that the rules recognise")
    handoff = [a.step.index for a in cx.acts if a.kind == "handoff" and a.step.index > last_ok]
    if handoff:
        return _fe("unknown", handoff, note="handed off to a human after the last write")
    return _fe("yes", [last_ok, cx.view.steps[-1].index], note="the last relevant write succeeded and nothing undid it")


# path characters with a `/` or `.` among them; the lookahead finds that one once, so a long path is linear
_FILE_PATH = re.compile(r"^(?=[^/.]*+[/.])[\w./~-]*+$")


def _file_edit(a: Act) -> bool:
    """A write by a file-editor tool (OpenHands `edit`/`write`, `str_replace_editor`, Claude Code's Edit/Write,
    Gemini CLI's replace/write_file, Codex's apply_patch): it names a file, so, like a shell edit, only a check
    run after it tells whether the code now works."""
    path = acting.file_tool_path(a.step.action or "", a.step.plain_args())
    return "create_edit" in a.groups and isinstance(path, str) and bool(_FILE_PATH.match(path))


def _checked(cx: Context) -> Finding:
    """Code changed by shell commands or a file editor: a bug report names many things that are not targets, so the
    final state is what the last check (tests, a script) after the last edit said, and whether a
    later edit failed."""
    # removing files is cleanup (scratch scripts); the last edit is the last write that changed content
    edits = [a for a in cx.ok_writes if "create_edit" in a.groups] or cx.ok_writes
    last_ok = edits[-1].step.index
    later_fail = [a.step.index for a in cx.relevant
                  if a.step.index > last_ok and a.failed and "create_edit" in a.groups]
    if later_fail:
        return _fe("no", later_fail, note="the last relevant write failed")
    checks = [a for a in cx.acts if a.step.index > last_ok and a.via == "shell" and a.failed is not None
              and acting.VERIFY.search(cmd := acting.command_text(a.step.action or "", a.step.plain_args()))
              and not (a.failed and acting.could_not_run(cmd, _obs_text(a.step.observation)))]
    if not checks:
        return _fe("unknown", [last_ok], note="no test or check ran after the last edit")
    last = checks[-1]
    if last.failed:
        return _fe("no", [last.step.index], note="the last check after the last edit failed")
    return _fe("yes", [last_ok, last.step.index], note="the last check after the last edit passed")


# ---- guards: the first that applies overrides its fields --------------------------------------------------------

def conditional_task(cx: Context) -> Finding | None:
    """An "if X, do Y" task without a relevant write: whether X held, and so whether Y was due, is unknown.

    Not acting is right when X does not hold, and rules cannot decide X; the `action` check takes the lookup that
    answers X as the task's action, so this guard leaves `action` alone. The condition words are in
    vocabulary.yaml (`condition_words`)."""
    if not (cx.conditional and not cx.relevant):
        return None
    return _fe("unknown", [a.step.index for a in cx.reads if a.failed is False],
               note="conditional task: whether its condition held is not decided by the trace")


def unnamed_clicks(cx: Context) -> Finding | None:
    """No recognisable commit, but clicks on elements the trace does not name: one may have been it."""
    blind = [a.step.index for a in cx.acts if a.kind == "gui_unlabelled"] if cx.wanted and not cx.relevant else []
    if not blind or cx.other_ok:
        return None
    return _fe("unknown", blind, note="clicks on unnamed elements; no recognisable commit")


def other_kind(cx: Context) -> Finding | None:
    """A write of another kind than the task's verbs succeeded: the words may simply differ, so no `no`.

    ("compensate" done by "issue_voucher")"""
    if not cx.other_ok:
        return None
    return _fe("unknown", cx.other_ok, note="successful writes of another kind than the task's verbs")


def code_change(cx: Context) -> Finding | None:
    """Every successful relevant write is a shell command: the task text states no checkable detail of it."""
    if not (cx.ok_writes and all(a.via == "shell" for a in cx.ok_writes)):
        return None
    return _fe("unknown", note="a code change: the task text states no checkable detail of it")


# ---- detail checks (details.py): the first contradiction makes `details` no --------------------------------------

def slot(cx: Context) -> Finding | None:
    """A write's argument takes another of a key's word values than the one the task names."""
    for i, key, said, got in details.slot_contradictions(cx.view.task, cx.detail_writes, cx.seen):
        return _fe("no", [i], note=f"the task says {said!r} for {key!r}, the write carries {got!r}")
    return None


def attribute(cx: Context) -> Finding | None:
    """The task names an entity by an attribute (a card's last digits); the write used a sibling's id."""
    for i, attr, want, got in details.attribute_mismatch(cx.view.task, cx.detail_writes, cx.seen, is_id):
        return _fe("no", [i], note=f"the task's {attr!r} points to {want!r}, the write used {got!r}")
    return None


def quantity(cx: Context) -> Finding | None:
    """The task states "N <noun>"; the write's argument of that noun carries another number."""
    for i, noun, n in details.quantity_mismatch(cx.view.task, cx.detail_writes):
        return _fe("no", [i], note=f"the task states {n} {noun}..., the write carries another number")
    return None


def duplicate(cx: Context) -> Finding | None:
    """The same create succeeded twice, each making a new id, and neither was undone."""
    deleted = {t for a in cx.all_ok + cx.ok_writes if "delete" in a.groups for t in a.arg_ids}

    def new_ids(w: details.Write) -> set[str]:
        before = cx.shown_before(w.index)
        return {t for t in ids_in(w.result_text) if t not in before and t not in json.dumps(w.args)}

    for a, b in details.duplicate_creates(cx.detail_writes, new_ids, deleted):
        return _fe("no", [a, b], note="the same create succeeded twice and neither was undone")
    return None


def quoted(cx: Context) -> Finding | None:
    """A text the task quotes for a create or send is in no action's arguments."""
    if not (cx.wanted & {"create_edit", "send"} and not cx.wanted & {"delete"}):
        return None
    view = cx.view
    said = [q for q in QUOTED_STRICT.findall(view.task) if len(q.split()) <= 12 and "{" not in q]
    if not said:  # no quoted text in the task: nothing to look for in what was typed or shown
        return None
    missing = details.quoted_missing(
        said, [" ".join(strings(s.plain_args())) for s in view.steps if s.action and s.action != "reply"],
        cx.shown_before(cx.ok_writes[0].step.index))
    if missing:
        return _fe("no", [a.step.index for a in cx.ok_writes],
                   note=f"the task's text {missing[0]!r} is in no action's arguments")
    return None


def _is_gui(view: ClaimBlindView) -> bool:
    """A GUI trace: some observation carries a UI tree or a screenshot."""
    return any(s.observation is not None and (s.observation.has_ui() or s.observation.screenshot)
               for s in view.steps)


def shown(cx: Context) -> Finding | None:
    """In a GUI, what the task asks to delete is still on the final screen."""
    view = cx.view
    if "delete" not in cx.wanted or not _is_gui(view):
        return None
    targets = set(QUOTED_STRICT.findall(view.task)) | ids_in(view.task)
    first = cx.ok_writes[0].step.index
    before = _obs_text(view.steps[first - 1].observation if first else view.initial_observation)
    last_obs = next((s for s in reversed(view.steps) if s.observation is not None), None)
    if last_obs is not None and last_obs.index > first:
        left = details.still_shown(targets, before, _obs_text(last_obs.observation))
        if left:
            return _fe("no", [first, last_obs.index], note=f"{left[0]!r} is still on the final screen")
    return None


_SETTING = frozenset({"configure", "create_edit"})


def clause(cx: Context) -> Finding | None:
    """An id the task puts after a verb is the argument of no successful write of that verb's kind."""
    need = details.clause_targets(cx.view.task, GROUPS, is_id, words)
    for tok, group in need.items():
        # setting a value is editing it: "Set the stock of RED-101" done by inventory_update(sku=RED-101)
        kinds = _SETTING if group in _SETTING else {group}
        of_kind = [a for a in cx.ok_writes if a.groups & kinds]
        if of_kind and not any(a.arg_ids for a in of_kind):
            continue  # these writes name no target (a GUI commit): the target was chosen on screen
        if any(tok in a.arg_ids for a in of_kind):
            continue
        # or on what an earlier write naming it made: compose(file) gave draft d_52, then send_draft(d_52)
        made = {t for w in cx.all_ok if tok in w.arg_ids for t in ids_in(_obs_text(w.step.observation))}
        if not any(a.arg_ids & made for a in of_kind):
            near = [a.step.index for a in cx.relevant] or [a.step.index for a in cx.ok_writes]
            if not of_kind:  # no successful write of that kind: a refused one shows it, none at all is absence
                refused = [a.step.index for a in cx.writes if a.failed and a.groups & kinds and tok in a.arg_ids]
                if refused:
                    return _fe("no", refused, note=f"the task asks to {group} {tok!r}; the write on it failed")
                return _fe("unknown", near, note=f"the task asks to {group} {tok!r}; no write of that kind recognised")
            return _fe("no", near, note=f"the task asks to {group} {tok!r}; the writes of that kind name others")
    return None


def stated(cx: Context) -> Finding:
    """Which details the task states (times, dates, amounts, names) the successful writes carry (details.py)."""
    return details.stated_details(cx.view.task, [(a.step.index, a.step.plain_args()) for a in cx.ok_writes])


def _detail(name: str, fn: Callable[[Context], Finding | None],
            fields: tuple[str, ...] = ("details", "final_supports_goal")) -> Check:
    return Check(name, fields, "detail", fn)


# The checks, in the order they run: the one place that lists them.
CHECKS: tuple[Check, ...] = (
    Check("action", ("action",), "field", action),
    Check("committed", ("committed",), "field", committed),
    Check("target_id", ("target_id",), "field", target_id),
    Check("transition", ("transition",), "field", transition),
    Check("final_supports_goal", ("final_supports_goal",), "field", final_supports_goal),
    Check("conditional_task", OUTCOME[1:], "guard", conditional_task),
    Check("unnamed_clicks", OUTCOME, "guard", unnamed_clicks),
    Check("other_kind", OUTCOME, "guard", other_kind),
    Check("code_change", ("details",), "guard", code_change),
    _detail("slot", slot),
    _detail("attribute", attribute),
    _detail("quantity", quantity),
    _detail("duplicate", duplicate),
    _detail("quoted", quoted),
    _detail("shown", shown),
    _detail("clause", clause),
    _detail("stated", stated, ("details",)),
)


def checks(stage: Stage | None = None) -> tuple[Check, ...]:
    """The checks of one stage (all when None), in the order they run.

    >>> [c.name for c in checks("guard")]
    ['conditional_task', 'unnamed_clicks', 'other_kind', 'code_change']
    """
    return tuple(c for c in CHECKS if stage is None or c.stage == stage)
