"""Detail checks for the rules extractor: does the committed write carry what the task stated?

Generic notions only (no benchmark's tool or field names):

- *slot contradiction*: an argument key of a committed write takes one of a small set of word
  values (the options, learned from the trace itself: every value the same key takes in any
  write argument or observation, and the sibling keys of a mapping that has the value as a key);
  the task names exactly one option, and the write carries a different one.
- *entity by attribute*: the task refers to an entity through one of its attributes (a 4-digit
  number such as a card's last digits); an observation lists sibling records of one kind, exactly
  one of which holds that attribute; the write uses an id of a sibling that does not, and never
  the one that does.
- *duplicate create*: the same create-like write succeeded twice with (nearly) the same
  arguments, each making a new id, and neither was undone.
- *clause coverage*: ids the task puts after a verb (in the same clause, before another verb of
  a different group) must each be the argument of a successful write of that verb's group.
- *stated quantity*: "N <noun>" in the task, a write argument whose key shares the noun's stem,
  and no such argument carries N.

Each check returns the step indices it rests on and a short note, or nothing when it does not
apply; the caller turns a finding into `final_supports_goal: no`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Callable, Collection, Iterable, Iterator

from referee.audit.extract.lexicon import SENTENCE, text_cache
from referee.audit.records import Finding

WORD_VALUE = re.compile(r"^[A-Za-z][A-Za-z _\-]{2,30}$")
STOP_VALUES = frozenset("yes no true false none null all any one two other unknown default new ok the and or "
                        "not your you my".split())
NUMBER_WORDS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
                "nine": 9, "ten": 10}
ATTR_NUM = re.compile(r"(?<![\w$.,:/\-])(\d{4})(?![\w,:/\-]|\.\d|\s*(?:am|pm|dollars?|usd|%)\b)", re.I)
YEAR = re.compile(r"^(19|20)\d\d$")
IsId = Callable[[str], bool]  # lexicon.is_id, passed in: this module reads no vocabulary
NEGATION = re.compile(r"\b(not|n't|never|no longer|without|unless|if)\b", re.I)


def leaves(v: Any, key: str = "") -> list[tuple[str, Any]]:
    """(nearest key, scalar) pairs of a JSON value, depth first; list items take the list's key.

    >>> leaves({"a": [{"b": 1}, "x"], "c": "y"})
    [('b', 1), ('a', 'x'), ('c', 'y')]
    """
    out: list[tuple[str, Any]] = []
    _walk_into(v, key, out, None)
    return out


def dicts(v: Any) -> list[dict[str, Any]]:
    """Every mapping in a JSON value, outermost first, depth first."""
    maps: list[dict[str, Any]] = []
    _walk_into(v, "", None, maps)
    return maps


_LEAF_TYPES = frozenset({str, int, float, bool})  # JSON's scalars: a leaf, without a call of its own


def _walk_into(v: Any, key: str, out: list[tuple[str, Any]] | None,
               maps: list[dict[str, Any]] | None) -> None:
    """`leaves` into `out` and `dicts` into `maps` (either may be None), in one walk. It appends instead of
    nesting generators, and a scalar inside a mapping or list is taken where it is met: a leaf costs no call."""
    t = type(v)
    if t is dict or (t is not list and t is not tuple and isinstance(v, dict)):
        if maps is not None:
            maps.append(v)
        for k, x in v.items():
            k = k if type(k) is str else str(k)
            if type(x) in _LEAF_TYPES:
                if out is not None:
                    out.append((k, x))
            elif x is not None:
                _walk_into(x, k, out, maps)
    elif t is list or t is tuple or isinstance(v, (list, tuple)):
        for x in v:
            if type(x) in _LEAF_TYPES:
                if out is not None:
                    out.append((key, x))
            elif x is not None:
                _walk_into(x, key, out, maps)
    elif v is not None and out is not None:
        out.append((key, v))


_SEP = str.maketrans("_-", "  ")


@text_cache(1 << 16)
def _norm(s: str) -> str:
    """Lower case, each run of spaces, `_` and `-` one space (`re.sub(r"[\\s_\\-]+", " ", ...)`, in C: str.split's
    whitespace is re's \\s).

    >>> _norm("  Basic_ECONOMY --class "), _norm("-x-"), _norm("__")
    ('basic economy class', ' x ', ' ')
    """
    t = s.strip().lower().translate(_SEP)
    core = " ".join(t.split())
    if not core:
        return " " if t else ""
    return (" " if t[0].isspace() else "") + core + (" " if t[-1].isspace() else "")


@lru_cache(maxsize=1 << 16)  # only short strings reach it (_is_word_value): no need for text_cache's split
def _is_word_str(v: str) -> bool:
    n = _norm(v)
    return bool(WORD_VALUE.match(v)) and n not in STOP_VALUES and len(n.split()) <= 3


def _is_word_value(v: Any) -> bool:
    # WORD_VALUE takes 3 to 31 characters (32 with the newline `$` allows): longer text is no word value,
    # and never reaches a cache made for short strings
    return isinstance(v, str) and 3 <= len(v) <= 32 and _is_word_str(v)


@dataclass(frozen=True)
class Write:
    """What the detail checks need of one successful write: index, name, groups, arguments, result."""

    index: int
    name: str
    groups: frozenset[str]
    args: Any
    result: Any          # parsed observation data (or None)
    result_text: str


def slot_options(data: Iterable[Any], keys: Collection[str] | None = None) -> dict[str, set[str]]:
    """Every word value each key takes across the given JSON values, plus the sibling keys of any
    mapping whose keys include such a value (prices by cabin name make the cabins options); with
    `keys`, for those keys only (each key's options depend on its own values and the mappings alone).

    >>> sorted(slot_options([{"cabin": "economy"}, {"prices": {"economy": 1, "business": 2}}])["cabin"])
    ['business', 'economy']
    """
    opts: dict[str, set[str]] = {}
    maps: list[dict[str, Any]] = []
    for d in data:
        found: list[tuple[str, Any]] = []
        _walk_into(d, "", found, maps)  # leaves(d) and dicts(d), in one walk
        for k, v in found:
            if (keys is None or k in keys) and _is_word_value(v):
                opts.setdefault(k, set()).add(_norm(v))
    if not opts:
        return opts
    keysets: list[set[str]] = []
    by_keys: dict[tuple[str, ...], set[str]] = {}  # mappings with the same keys (records of one kind) share their set
    for m in maps:
        sig = tuple(m)
        ks = by_keys.get(sig)
        if ks is None:
            ks = by_keys[sig] = {_norm(k) for k in m if _is_word_value(k)}
        if len(ks) >= 2:
            keysets.append(ks)
    for vals in opts.values():
        for ks in keysets:
            if vals & ks and len(ks) <= 12:
                vals |= ks
    return opts


def mentioned(task: str, options: set[str]) -> set[str]:
    """The options the task names as words, dropping one only ever seen inside a longer one.

    >>> sorted(mentioned("upgrade from basic economy", {"basic economy", "economy", "business"}))
    ['basic economy']
    """
    spans: dict[str, list[tuple[int, int]]] = {}
    low = task.lower() if task.isascii() else None  # on ASCII, re.I is lower-case equality: a word not in it
    for o in options:                               # cannot match
        if low is not None and o.isascii() and not all(w.lower() in low for w in o.split()):
            continue
        pat = r"(?<![A-Za-z])" + r"[\s_\-]+".join(map(re.escape, o.split())) + r"(?![A-Za-z])"
        found = [m.span() for m in re.finditer(pat, task, re.I)]
        if found:
            spans[o] = found
    out = set()
    for o, sp in spans.items():
        inside = all(any(a2 <= a and b <= b2 and (a2, b2) != (a, b) for o2, sp2 in spans.items() if o2 != o
                         for a2, b2 in sp2) for a, b in sp)
        if not inside:
            out.add(o)
    return out


def slot_contradictions(task: str, writes: list[Write], seen: list[Any]) -> list[tuple[int, str, str, str]]:
    """(step, key, option the task names, value the write carries) for each contradicted slot,
    checked on the last successful write of each action name."""
    last: dict[str, Write] = {}
    for w in writes:
        last[w.name] = w
    wanted = {k for w in last.values() for k, v in leaves(w.args) if _is_word_value(v)}
    if not wanted:
        return []  # no write carries a word value: nothing to contradict
    opts = slot_options(list(seen) + [w.args for w in writes], wanted)
    out = []
    for w in last.values():
        # a key whose value is a list of words ("labels": ["export", "urgent"]) carries each of them
        carried = {k: {_norm(x) for x in v if _is_word_value(x)} for m in dicts(w.args) for k, v in m.items()
                   if isinstance(v, list)}
        for k, v in leaves(w.args):
            if not _is_word_value(v) or len(opts.get(k, ())) < 2:
                continue
            m = mentioned(task, opts[k])
            if len(m) == 1 and _norm(v) not in m and not m & carried.get(k, set()):
                out.append((w.index, k, next(iter(m)), str(v)))
    return out


def _records(data: Any) -> Iterator[list[tuple[str | None, str]]]:
    """Groups of sibling records in one JSON value: each record as (its own key or None, its text)."""
    for m in dicts(data):
        vals = list(m.values()) if isinstance(m, dict) else []
        recs = [(k if isinstance(k, str) else None, v) for k, v in m.items() if isinstance(v, dict)]
        if len(recs) >= 2:
            yield [(k, " ".join(str(x) for _, x in leaves(v))) for k, v in recs]
        for v in vals:
            if isinstance(v, list) and sum(isinstance(x, dict) for x in v) >= 2:
                yield [(None, " ".join(str(x) for _, x in leaves(r))) for r in v if isinstance(r, dict)]


def _record_ids(group: list[tuple[str | None, str]], is_id: IsId) -> list[tuple[str, str]] | None:
    """Each record of a group as (its id, its text): its key when that is an id, else the first id in
    its text; None when a record has no id (the group's records cannot be told apart)."""
    ids = []
    for key, text in group:
        rid = key if key and is_id(key) else next((t for t in text.split() if is_id(t)), None)
        if rid is None:
            return None
        ids.append((rid, text))
    return ids


def attribute_mismatch(task: str, writes: list[Write], seen: list[Any],
                       is_id: IsId) -> list[tuple[int, str, str, str]]:
    """(step, attribute, id the attribute points to, id the write used instead) for each write that
    uses a sibling of the record the task refers to and never that record itself."""
    attrs = {a for a in ATTR_NUM.findall(task) if not YEAR.match(a)}
    if not attrs or not writes:
        return []
    out = []
    for data in seen:
        for group in _records(data):
            ids = _record_ids(group, is_id)
            if ids is None:
                continue
            for a in attrs:
                holders = [r for r, text in ids if re.search(rf"(?<!\d){a}(?!\d)", text)]
                if len(holders) != 1:
                    continue
                want = holders[0]
                others = {r for r, _ in ids if r != want}
                for w in writes:
                    used = {str(v) for _, v in leaves(w.args)}
                    if want in used:
                        break
                    wrong = sorted(used & others)
                    if wrong:
                        out.append((w.index, a, want, wrong[0]))
                        break
    return out


def duplicate_creates(writes: list[Write], new_ids: Callable[[Write], set[str]],
                      deleted: set[str]) -> list[tuple[int, int]]:
    """Pairs of steps where the same create-like write succeeded twice with (nearly) the same
    arguments, each making a new id (`new_ids(write)`), and neither new id was later deleted."""
    out = []
    made = [(w, new_ids(w)) for w in writes if "create_edit" in w.groups]
    made = [(w, ids) for w, ids in made if ids and not ids & deleted]
    for i, (a, _) in enumerate(made):
        for b, _ in made[i + 1:]:
            if a.name != b.name:
                continue
            la = {(k, str(v)) for k, v in leaves(a.args)}
            lb = {(k, str(v)) for k, v in leaves(b.args)}
            if la and lb and len(la & lb) / len(la | lb) >= 0.8:
                out.append((a.index, b.index))
    return out


def _verb(low: str, vocab: Iterable[str]) -> str | None:
    """The vocabulary verb an inflected word is: cancelling -> cancel, deletes -> delete, removed -> remove.

    >>> _verb("deleting", {"delete"}), _verb("cancelled", {"cancel"}), _verb("sent", {"send"})
    ('delete', 'cancel', None)
    """
    if low in vocab:
        return low
    for suf, rep in _INFLECTIONS:  # in this order: the first stem the vocabulary has
        if low.endswith(suf) and len(low) - len(suf) >= 3 and (c := low[: -len(suf)] + rep) in vocab:
            return c
    return None


_INFLECTIONS = (("lling", "l"), ("lled", "l"), ("ing", ""), ("ing", "e"), ("ed", ""), ("ed", "e"), ("es", ""),
                ("s", ""))


_CLAUSE_TOKEN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_\-.@']*[A-Za-z0-9]|[,()]")


class _Judged(dict[str, tuple[bool, str | None, bool]]):
    """What clause_targets makes of each word, for one vocabulary of write groups: (negates, the group of its
    verb, whether it is an edit verb). Words repeat from task to task: each is judged once (bounded)."""

    def __init__(self, groups: dict[str, frozenset[str]]) -> None:
        super().__init__()
        self.groups = groups
        self.verbs = {v: g for g, vs in groups.items() if g != "create_edit" for v in vs}
        self.edit = groups.get("create_edit", frozenset())

    def judge(self, low: str) -> tuple[bool, str | None, bool]:
        if len(self) > 1 << 16:
            self.clear()
        verb = _verb(low, self.verbs)
        got = self[low] = (bool(NEGATION.fullmatch(low)) or low.endswith("n't"),
                           self.verbs[verb] if verb else None, not verb and _verb(low, self.edit) is not None)
        return got


_JUDGED: list[_Judged] = []


def _judged(groups: dict[str, frozenset[str]]) -> _Judged:
    """The judgments for this vocabulary (the rules' GROUPS, almost always: kept while it is the one asked)."""
    if not _JUDGED or _JUDGED[0].groups is not groups:
        _JUDGED[:] = [_Judged(groups)]
    return _JUDGED[0]


_DETERMINERS = frozenset("the a an my your his her its our their this that these those".split())


def clause_targets(task: str, groups: dict[str, frozenset[str]], is_id: IsId,
                   words: Callable[[str], frozenset[str]]) -> dict[str, str]:
    """Ids the task puts right after a verb of a write group (same clause, before the next verb of
    another group), mapped to that group; negated or conditional clauses are skipped.

    >>> from referee.audit.extract.rules import GROUPS, is_id, words
    >>> clause_targets("Cancel X1Y2Z3 and A9B8C7, then update Q1W2E3.", GROUPS, is_id, words)
    {'X1Y2Z3': 'delete', 'A9B8C7': 'delete'}
    >>> clause_targets("Change the email for C-7731 to j.k@new.pl.", GROUPS, is_id, words)  # a noun: asks no send
    {}
    >>> clause_targets("Email R-12 to j.k@new.pl.", GROUPS, is_id, words)
    {'R-12': 'send', 'j.k@new.pl': 'send'}
    """
    out: dict[str, str] = {}
    seen = _judged(groups)  # a word is judged once: (negates, group, edit)
    for sent in SENTENCE.split(task):
        current: str | None = None
        neg = False
        before = ""
        for tok in _CLAUSE_TOKEN.findall(sent):
            low = tok.lower()
            got = seen.get(low)
            if got is None:
                got = seen.judge(low)
            negates, group, edits = got
            if before in _DETERMINERS:  # "change the email ... to X": after an article a verb's word is a noun
                group, edits = None, False
            before = low
            if negates:
                neg = True
            if group is not None and not is_id(tok):
                current = None if neg else group
            elif edits and not is_id(tok):
                current = None  # a different kind of write starts here
            elif current and is_id(tok):
                out.setdefault(tok, current)
    return out


QTY = re.compile(r"\b(\d{1,2}|one|two|three|four|five|six|seven|eight|nine|ten|no|zero|"
                 r"(?:do not|don't|doesn't|does not) (?:have|need|want|bring|carry) any)\s+(?:[a-z]+\s+)?([a-z]{3,})",
                 re.I)
ADDITIVE = re.compile(r"\b(add|adding|extra|more|another|additional|plus)\s+$", re.I)
# "set the stock of SKU RED-101 to 40", "change the quantity to 3": the noun whose value the task states
SET_TO = re.compile(r"\b(?:set|change|update|adjust|increase|decrease|reduce|raise|lower)\s+(?:the\s+|its\s+|their\s+|"
                    r"my\s+|our\s+)?([a-z]{3,})\s+(?:(?:of|in|for|on)\s+(?:[\w-]+\s+){1,3}?){0,2}to\s+(\d{1,6})\b(?![.,]\d)",
                    re.I)


def quantity_mismatch(task: str, writes: list[Write]) -> list[tuple[int, str, int]]:
    """(step, noun, stated number) where the task says "N <noun>" (or "no <noun>", "don't have any
    <noun>": 0), a successful write has integer arguments whose key shares the noun's stem, and
    none of them is N. "add N <noun>" is skipped (the total depends on what was there).

    >>> w = Write(3, "book", frozenset(), {"total_bags": 2, "free_bags": 0}, None, "")
    >>> quantity_mismatch("You don't have any bags.", [w]), quantity_mismatch("You have 3 bags.", [w])
    ([(3, 'bag', 0)], [(3, 'bag', 3)])
    >>> quantity_mismatch("Set the stock of SKU RED-101 to 40.", [Write(1, "set_stock", frozenset(), {"stock": 4},
    ...                                                                     None, "")])
    [(1, 'stoc', 40)]
    """
    stated: dict[str, set[int]] = {}
    for m in QTY.finditer(task):
        if ADDITIVE.search(task[max(0, m.start() - 12):m.start()]):
            continue  # "add 2 bags": the total depends on what was there before
        n = m.group(1).lower()
        num = int(n) if n.isdigit() else NUMBER_WORDS.get(n, 0)
        noun = m.group(2).lower()
        stem = noun[:4] if len(noun) > 4 else noun[:3]
        stated.setdefault(stem, set()).add(num)
    for m in SET_TO.finditer(task):
        noun = m.group(1).lower()
        stated.setdefault(noun[:4] if len(noun) > 4 else noun[:3], set()).add(int(m.group(2)))
    out = []
    for stem, nums in stated.items():
        for w in writes:
            vals = [v for k, v in leaves(w.args) if stem in k.lower() and isinstance(v, int)
                    and not isinstance(v, bool)]
            if vals and (any(vals) if nums == {0} else not set(vals) & nums):
                out.append((w.index, stem, sorted(nums)[0]))
    return out


def quoted_missing(quoted: Iterable[str], action_texts: Iterable[str], shown_before: str) -> list[str]:
    """Strings the task quotes as new content (never shown by the environment before the first
    write) that no action argument carries, compared case- and space-insensitively.

    >>> quoted_missing(["Buy milk"], ["type buy  milk", "click Save"], "")
    []
    >>> quoted_missing(["Buy milk", "Groceries"], ["type eggs"], "folder Groceries")
    ['Buy milk']
    """
    acts = " \n ".join(_norm(t) for t in action_texts)
    shown = _norm(shown_before)
    return [q for q in quoted if _norm(q) and _norm(q) not in acts and _norm(q) not in shown]


def still_shown(targets: Iterable[str], before: str, final: str) -> list[str]:
    """Targets a delete should have removed that the final screen still shows as it did before."""
    if re.search(r"\b(deleted|removed|moved to (the )?(trash|bin)|undo)\b", final, re.I):
        return []
    return [t for t in targets if t and t in before and t in final]


_STATED = ("id", "date", "time", "money", "email", "quoted")
_PERSONAL_DATE = re.compile(r"birth|dob|born|created|updated|modified|timestamp", re.I)


def _without_personal_dates(v: Any) -> Any:
    """Arguments without the dates that describe a person or a record (a birthday, a timestamp):
    they are never the date a task asks for, so they may neither verify nor contradict one."""
    if isinstance(v, dict):
        return {k: _without_personal_dates(x) for k, x in v.items() if not _PERSONAL_DATE.search(str(k))}
    if isinstance(v, list):
        return [_without_personal_dates(x) for x in v]
    return v


def stated_details(task: str, writes: list[tuple[int, Any]]) -> Finding:
    """Were the concrete details the task states (ids, dates, times, money, emails, quoted text)
    carried by the successful writes? yes: all of them; no: a write carries another value of the
    same kind (another date) where the task's is missing; unknown: nothing to check, or not shown.

    >>> stated_details("Schedule a visit for P-2231 on 2024-07-02", [(1, {"p": "P-2231", "date": "2024-07-09"})]).value
    'no'
    >>> stated_details("Schedule a visit for P-2231 on July 2", [(1, {"p": "P-2231", "date": "2024-07-02"})]).value
    'yes'
    """
    from referee.audit.view.atoms import date_key, found_in, typed_atoms

    stated = [(k, v) for k, v in typed_atoms(task) if k in _STATED]
    if not stated:
        return Finding(value="unknown", note="the task states no checkable detail")
    texts = [(i, json.dumps(_without_personal_dates(a), ensure_ascii=False, default=str)) for i, a in writes]
    carried: dict[str, list[tuple[int, str]]] = {}

    def atoms_of(kind: str) -> list[tuple[int, str]]:
        """The writes' atoms of a kind the task states: found once per write, and only when a check needs them."""
        if not carried:
            found = [(i, typed_atoms(t, 200)) for i, t in texts]
            carried.update({k: [(i, v) for i, got in found for k2, v in got if k2 == k] for k, _ in stated})
        return carried.get(kind, [])

    def has(kind: str, value: str) -> bool:
        if any(found_in(value, t) for _, t in texts):
            return True
        key = date_key(value) if kind == "date" else False  # another form of the same date counts
        return kind == "date" and any(date_key(v) == key for _, v in atoms_of(kind))

    missing = [(k, v) for k, v in stated if not has(k, v)]
    if not missing:
        return Finding(value="yes", support=sorted({i for i, _ in writes}),
                             note="the writes carry every detail the task states")
    for kind, value in missing:
        said = {date_key(v) if kind == "date" else v for k, v in stated if k == kind}
        other = [(i, v) for i, v in atoms_of(kind) if kind in ("date", "time", "money", "email")
                 and (date_key(v) if kind == "date" else v) not in said]
        if other:
            return Finding(value="no", support=[other[0][0]],
                                 note=f"the task says {value!r}, the write carries {other[0][1]!r}")
    return Finding(value="unknown", note=f"no write shows the task's {missing[0][1]!r}")
