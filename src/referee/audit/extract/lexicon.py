"""The rules extractor's vocabulary: verb groups, GUI action words, result patterns, ids, task verbs.

The words (verb groups, read verbs, GUI and commit words) are data in referee/audit/vocabulary.yaml, which the
task-class rule reads too; the patterns of results, ids and sentences are here. Generic words only: what a write,
a read, a commit click, an error, an empty list and an entity id look like in any tool-calling or GUI trace.
"""

from __future__ import annotations

import re
from functools import lru_cache, wraps
from typing import Callable, TypeVar

from referee.audit.vocabulary import load_vocabulary

T = TypeVar("T")

# the words are data (referee/audit/vocabulary.yaml), shared with the task-class rule; these names are the rules' view
_VOCABULARY = load_vocabulary()
GROUPS: dict[str, frozenset[str]] = {name: g.verbs for name, g in _VOCABULARY.groups.items()}
WRITE_VERBS = _VOCABULARY.write_verbs
READ_VERBS = _VOCABULARY.read_verbs
GUI_TYPE = _VOCABULARY.gui_type
GUI_CLICK = _VOCABULARY.gui_click
# the agent's own end-of-run signals (AndroidWorld `status: complete`, `finish`, `terminate`): never evidence
SELF_SIGNAL = _VOCABULARY.self_signals
# the verbs of each group that, in a task's text, say which writes it asks for (no noun-like "new", "log")
_TASK_VERBS: dict[str, frozenset[str]] = {name: g.task_verbs for name, g in _VOCABULARY.groups.items()}
VOCABULARY_SHA256 = _VOCABULARY.sha256

HANDOFF = re.compile(r"(transfer|escalat|handoff|hand_off)\w*[_ ]?(to[_ ])?(a[_ ])?"
                     r"(human|agent|operator|support)", re.I)
COMMIT_LABEL = re.compile(r"\b(" + "|".join(_VOCABULARY.commit_labels) + r")\b", re.I)
FAIL_TEXT = re.compile(r"^\s*(error|failed|failure|exception|traceback|not found|invalid|denied|forbidden|"
                       r"unauthori[sz]ed|cannot|unable)\b", re.I)
EMPTY_TEXT = re.compile(r"^\s*(\[\s*\]|\{\s*\}|none|null|no (results?|items?|entries|records|matches)\b.*|"
                        r"(list|folder|inbox) is empty.*|empty|0 (results?|items?))\s*$", re.I)
# a form's refusal, shown on the screen after a commit click: a validation message the screen before did not show
FORM_REFUSED = re.compile(r"\b(please (select|enter|choose|fill|provide|complete|correct)|(is|are) required|"
                          r"required field|(is|are) (invalid|not valid)|invalid \w+|must (be|contain|include|match)|"
                          r"cannot be (empty|blank)|try again|could not be (saved|sent|submitted|completed|processed)|"
                          r"error|failed|(is|are) (no longer |not |un)available|sold out)\b", re.I)
# Ids: tokens with a letter and a digit (HAT136, mia_li_3668, 4BMN53), all-caps codes, emails.
ID_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_\-.@]*[A-Za-z0-9]")
FILE_RE = re.compile(r"[\w\-]+\.(?=[A-Za-z0-9]*[A-Za-z])[A-Za-z0-9]{1,5}")  # notes.md, photo.jpg
# a quoted string: the quote marks are not apostrophes inside words ("don't ... you're")
QUOTED_STRICT = re.compile(r"(?<![A-Za-z])[\"'“‘]([^\"'”’\n]{1,80})[\"'”’](?![A-Za-z])")
# a sentence that asks (ends with "?", or opens with a question word) or says how to answer; the leading blanks are
# possessive (nothing after them starts with one, and `.*\?` from inside them finds the same `?`): linear
QUESTION = re.compile(r"^\s*+(.*\?\s*$|(what|which|who|whom|when|where|why|how (many|much|long|far|often|old))\b|"
                      r"(answer|respond) (with|in|only|using)\b|express your answer|format your answer)", re.I | re.S)
QUOTED_RE = re.compile(r"[\"'“‘]([^\"'”’]{2,80})[\"'”’]")
_DIGIT, _ALPHA = re.compile(r"[0-9]"), re.compile(r"[A-Za-z]")  # str.isdigit/isalpha on ASCII text


def words(name: str) -> frozenset[str]:
    """Lower-case words of an action name: camelCase, snake_case, kebab and spaces all split.

    >>> sorted(words("updateReservation_flights"))
    ['flights', 'reservation', 'update']
    """
    return _words(name)


_CAMEL = re.compile(r"([a-z0-9])([A-Z])")


def ordered_words(name: str) -> tuple[str, ...]:
    """The words of a name in order (`getOrder` -> ('get', 'order')).

    >>> ordered_words("get_order_details"), ordered_words("placeOrder")
    (('get', 'order', 'details'), ('place', 'order'))
    """
    return _ordered(name)


@lru_cache(maxsize=65536)  # tokens: a corpus's vocabulary repeats (a word is judged once, not once per trace)
def is_id(tok: str) -> bool:
    """An entity id: has a digit and a letter, an all-caps code of 5+ characters, an email or a file name.

    >>> is_id("HAT136"), is_id("mia_li_3668"), is_id("XEHMQB"), is_id("Seattle"), is_id("2024")
    (True, True, True, False, False)
    """
    if len(tok) < 3:
        return False
    if tok.isascii():  # the tokens ID_RE finds: one regex pass each instead of per-character loops
        has_d, has_a = _DIGIT.search(tok) is not None, _ALPHA.search(tok) is not None
    else:
        has_d, has_a = any(c.isdigit() for c in tok), any(c.isalpha() for c in tok)
    if has_d and has_a:
        return True
    if "@" in tok or FILE_RE.fullmatch(tok):
        return True
    return len(tok) >= 5 and tok.isalnum() and tok.isupper() and has_a


def text_cache(many: int, few: int = 8, short: int = 256) -> Callable[[Callable[[str], T]], Callable[[str], T]]:
    """Memoise a function of one string, bounded in bytes as well as in entries: `many` short strings,
    but only the last `few` long ones (an observation can be megabytes; a corpus must not pile up)."""
    def deco(fn: Callable[[str], T]) -> Callable[[str], T]:
        small, large = lru_cache(maxsize=many)(fn), lru_cache(maxsize=few)(fn)

        @wraps(fn)
        def cached(text: str) -> T:
            return small(text) if len(text) <= short else large(text)

        return cached
    return deco


# every byte but an ASCII letter made a space: split there, a text is re.split(r"[^A-Za-z]+") of it without its
# empty pieces (a character past ASCII is all bytes of 0x80 and above in UTF-8, and no letter to that regex)
_LETTERS_ONLY = bytes(c if chr(c).isascii() and chr(c).isalpha() else 0x20 for c in range(256))


@text_cache(8192)  # action names and argument texts repeat through a corpus: split once each
def _ordered(name: str) -> tuple[str, ...]:
    low = _CAMEL.sub(r"\1 \2", name).lower()
    return tuple(low.encode("utf-8", "surrogatepass").translate(_LETTERS_ONLY).decode("ascii").split())


@text_cache(8192)
def _words(name: str) -> frozenset[str]:
    return frozenset(_ordered(name))


@text_cache(8192)
def _ids_in(text: str) -> frozenset[str]:
    return frozenset(t for t in set(ID_RE.findall(text)) if is_id(t))  # a word repeated is judged once


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
        # the underscores counted (trailing digits, which re.sub(r"\d+$") took off first, hold none: that regex
        # rescanned a run of digits from each of them)
        return "snake:" + str(tok.count("_"))
    kind = "U" if tok.upper() == tok else ("L" if tok.lower() == tok else "M")
    return f"{kind}{len(tok)}"


SENTENCE = re.compile(r"(?<=[.;!?])\s+|\n+")  # where a task's sentences break
# a sentence or clause that makes its action depend on something: "if X, do Y", "otherwise ...", "unless ..."
CONDITIONAL = re.compile(r"\b(" + "|".join(_VOCABULARY.condition_words) + r")\b", re.I)


@lru_cache(maxsize=256)  # both task_groups variants of a task ask: split it once
def _asking(task: str) -> tuple[tuple[str, bool], ...]:
    """The task's sentences that ask for an action (no question, no answer-format line), each with whether
    its action depends on a condition."""
    # the conditional words, found in one scan of the whole task: none spans a sentence break (they are letters
    # and single spaces after a letter), and a break is no letter, as the end of a sentence on its own is not
    ifs = [m.start() for m in CONDITIONAL.finditer(task)]
    out, start, k = [], 0, 0
    for brk in [*SENTENCE.finditer(task), None]:
        end = len(task) if brk is None else brk.start()
        s = task[start:end]
        while k < len(ifs) and ifs[k] < start:
            k += 1
        if s.strip() and not QUESTION.match(s):
            out.append((s, k < len(ifs) and ifs[k] < end))
        if brk is not None:
            start = brk.end()
    return tuple(out)


@lru_cache(maxsize=4096)
def task_groups(task: str, unconditional: bool = False) -> frozenset[str]:
    """Which write groups the task text asks for (empty: a question, or no write verb).

    Questions and answer-format instructions ask for no write, so their verbs do not count;
    with `unconditional`, neither do sentences whose action depends on a condition:

    >>> sorted(task_groups("You want to cancel reservation X and book a new one"))
    ['create_edit', 'delete']
    >>> sorted(task_groups("What is on my schedule for today? Answer with the titles only."))
    []
    >>> task_groups("If the last test is older than a year, order a new one; otherwise do nothing.", True)
    frozenset()
    """
    kept = [s for s, conditional in _asking(task) if not (unconditional and conditional)]
    tw = words(" ".join(kept))
    return frozenset(g for g, vs in _TASK_VERBS.items() if tw & vs)
