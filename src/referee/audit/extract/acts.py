"""How the rules read each action: its kind, write groups, result (failed or not) and the ids its arguments name.

Layered recognition is acting.py's; this turns one step of the claim-blind view into an `Act` the checks
(checks.py) reason about: a click resolved to its on-screen label, a draft that is no send, a GUI commit's
refusal, a GraphQL error. Generic notions only, no benchmark's tool names.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from referee.audit.extract import acting, details
from referee.audit.extract import obs_text as _obs_text
from referee.audit.extract.lexicon import COMMIT_LABEL, FAIL_TEXT, GROUPS, ids_in, words
from referee.audit.view.blind import ClaimBlindView, ViewObservation, ViewStep
from referee.core.jsonio.values import loads


def did_fail(o: ViewObservation | None, rec: acting.Recognised | None = None,
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
    g = observed(o)
    return isinstance(g, dict) and bool(g.get("errors")) and "data" in g and not g["data"]


def strings(v: Any) -> list[str]:
    """The strings of a JSON value, depth first, a number as its text (a boolean is none).

    >>> strings({"a": ["x", 2, True, {"b": 1.5}], "c": None})
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
class Act:
    """One action as the rules read it: its kind, write groups, whether its result was an error."""

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
        found = frozenset(t for s in strings(self.id_args) for t in ids_in(_without_hosts(s)))
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
    for d in details.dicts(ui):
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


def classify(step: ViewStep, prev: ViewObservation | None = None,
             catalog: acting.ToolCatalog = acting.NO_TOOLS) -> Act | None:
    """One step as the checks see it (None: no action, or the agent's own last word), `prev` the screen it was
    taken on.

    >>> from referee.audit.view.blind import build_view
    >>> from referee.audit.trace import Trace
    >>> v = build_view(Trace(run_id="r", task="t", steps=[{"action": {"name": "delete_note", "args": {"id": "N42"}},
    ...                                                   "observation": {"text": "error: no such note"}}]))
    >>> a = classify(v.steps[0]); a.kind, sorted(a.groups), a.failed, sorted(a.arg_ids)
    ('write', ['delete'], True, ['N42'])
    """
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
    arg_text = " ".join(strings(id_args))
    if kind == "gui_other":
        if not re.search(r"[A-Za-z]", arg_text):
            arg_text = (arg_text + " " + _ui_label(args, prev)).strip()
        w = words(rec.name)
        if COMMIT_LABEL.search(arg_text) or (w & {"press"} and re.search(r"enter|return", arg_text, re.I)):
            kind = "gui_commit"
            groups = frozenset(g for g, vs in GROUPS.items() if words(arg_text) & vs) or frozenset(GROUPS)
        elif not re.search(r"[A-Za-z]", arg_text):
            kind = "gui_unlabelled"  # clicked by number or position: could be a commit
    failed = did_fail(step.observation, rec, catalog)
    if "send" in groups and _drafted(step.observation):
        groups = frozenset({"create_edit"})  # a draft was saved: nothing was sent
    if kind == "gui_commit" and failed is None:
        failed = False  # a click that was made is done; a GUI shows no result code
    elif kind == "gui_commit" and failed is False and step.observation is not None:
        failed = acting.form_refused(_obs_text(prev), _obs_text(step.observation)) or False
    return Act(step, kind, groups, failed, id_args, rec.target, arg_text, rec.via)


_DRAFT_TEXT = re.compile(r"\b(saved (as|to|in) (the )?drafts?|draft (saved|created))\b", re.I)


def _drafted(o: ViewObservation | None) -> bool:
    """Whether a send's result says it made a draft (`{"status": "draft"}`, "Draft saved."), not a sent message."""
    d = observed(o)
    if isinstance(d, dict) and str(d.get("status", "")).lower() in ("draft", "drafted"):
        return True
    return o is not None and bool(_DRAFT_TEXT.search(o.text or ""))


def screen_before(view: ClaimBlindView, index: int) -> ViewObservation | None:
    """The screen an action was taken on: the last observation before it (or the initial one)."""
    for s in reversed(view.steps[:index]):
        if s.observation is not None:
            return s.observation
    return view.initial_observation


def observed(o: ViewObservation | None) -> Any:
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
