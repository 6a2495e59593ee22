"""Which obstacle cues of a report still stand, and which state the agent's failure rather than name a word.

A cue is explained away when its clause negates it ("nothing failed", "none of the tests failed", "0 errors",
"Failed: 0") unless an exception follows ("nothing failed apart from the delete" says the delete failed),
when it is an idiom ("I could not have asked for ..."), hypothetical ("if anything fails"), overcome
("captcha solved"), about an earlier attempt ("earlier attempts timed out, the last one worked"), about the time
it took ("which unfortunately took a while"), a misfortune of an object ("unfortunately for the file"), or an
after-effect in a condition ("should you need it back, I cannot help"). A cue in a sentence that opens with an
earlier time or a condition ("Earlier, I could not find it.") is only a word, never a stated failure.
Each cue is read on at most `WINDOW` characters either side, within its own sentence: linear in the report.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Iterable

from referee.audit.claim import cues

__all__ = ["Obstacle", "standing_obstacles"]

WINDOW = 80  # characters read either side of a cue: a bounded context, so each cue costs a constant
# cues looked at per report: past this many (a padded report), later ones are not read, which can only leave a
# stated failure unread (a success or unclear reading: reviewed or flagged), never make one up
MAX_CUES = 256
_WORD = re.compile(r"[\w']+")


@dataclass(frozen=True)
class Obstacle:
    """An obstacle cue that stands: `stated` when it states the agent's failure or unfinished work."""

    match: Any  # the cue's match in the text: .group(), .start()
    stated: bool
    partial: bool  # a partial-work cue (cues.PARTIAL) rather than an obstacle cue


def _clause(line: str, a: int, b: int) -> tuple[str, str]:
    """The cue's own clause in its line: the text before it and after it, each at most WINDOW characters."""
    before, after = line[max(0, a - WINDOW):a], line[b:b + WINDOW]
    cut = 0
    for m in cues.CLAUSE_BREAK.finditer(before):
        cut = m.end()
    before = before[cut:]
    if m2 := cues.CLAUSE_BREAK.search(after):
        after = after[:m2.start()]
    return before, after


def _negated(words: list[str]) -> bool:
    return any(w in cues.NEGATORS or w.endswith("n't") for w in words)


def _opening(line: str, a: int, whole: bool) -> re.Match[str] | None:
    """The sentence opens with an earlier time or a condition before the cue at `a` (`whole`: `line` starts it)."""
    return cues.EARLIER_OR_IF_OPENING.match(line, 0, a) if whole else None


def _explained(line: str, a: int, b: int, whole: bool = False) -> bool:
    """The cue at line[a:b] is explained away by its context (see the module's docstring)."""
    cue = line[a:b].lower()
    before, after = _clause(line, a, b)
    words = [w.lower() for w in _WORD.findall(before)]
    if _negated(words[-5:]) and not cues.EXCEPTION_AFTER.match(line, b):
        return True
    if cues.TALLY_OF_NONE.match(after) or (set(words) & cues.HYPOTHETICAL):
        return True
    if (o := _opening(line, a, whole)) and o.group(1).lower() in cues.HYPOTHETICAL | {"in case"} and \
            cues.UNDOING.search(line, 0, a):
        return True  # "Should you need it back, I cannot help": an after-effect of the work, in a condition
    if cues.EXPLAINED_AFTER.match(after):
        return True
    if cue.startswith("unfortunately") and cues.UNFORTUNATE_FOR.match(line[b:b + WINDOW]):
        return True
    if (m := cues.OVERCOME.search(before + " " + after)) is not None:
        pre = [w.lower() for w in _WORD.findall((before + " " + after)[:m.start()])]
        if not _negated(pre[-2:]):
            return True
    if cues.EARLIER_ATTEMPT.search(before + " " + cue + " " + after):
        return True
    sentence_after = line[b:b + WINDOW]
    if cues.RECOVERED.search(sentence_after):
        return True
    return cue.startswith("unfortunately") and cues.DURATION.search(line[max(0, a - WINDOW):b + WINDOW]) is not None


def _stated(line: str, a: int, b: int, partial: bool, whole: bool = False) -> bool:
    """The cue states the agent's own failure or unfinished work (else it only names an obstacle)."""
    if _opening(line, a, whole) and not cues.REFERRAL.match(line, a):
        return False  # "Earlier, I could not find it.", "If you need more, I cannot help."
    ahead = line[a:b + 40]
    if partial:
        return cues.STATED_PARTIAL.match(ahead) is not None
    if cues.ABOUT_OTHERS.match(line[b:b + WINDOW]):
        return False
    if cues.STATED_OBSTACLE.match(ahead.lstrip(" \t-*#>:(\"'")):
        return True
    before, _ = _clause(line, a, b)
    words = _WORD.findall(before.lower())
    return bool(words) and words[-1] in ("i", "we")  # "I failed", "we errored"


def standing_obstacles(text: str, cue_sets: Iterable[tuple[Any, bool]]) -> tuple[Obstacle | None, Obstacle | None]:
    """(the first stated obstacle, the first obstacle word) in `text` that its context does not explain away.

    `text` holds one sentence a line; `cue_sets` are (pattern, is_partial) pairs searched in turn over the whole
    text, and "first" is in that order, then by position. A word after the first standing one is only asked
    whether it is stated, so a report of many cues costs one short look at each.

    >>> stated, word = standing_obstacles("Done. Nothing failed.\\nThe upload failed.", [(cues.OBSTACLE, False)])
    >>> stated, word.match.group(0)
    (None, 'failed')
    """
    word, seen = None, 0
    for pattern, partial in cue_sets:
        for m in pattern.finditer(text):
            seen += 1
            if seen > MAX_CUES:
                return None, word
            # its line (sentences are one a line), cut to the window either side: each cue costs a constant
            lo = max(text.rfind("\n", max(0, m.start() - WINDOW), m.start()) + 1, m.start() - WINDOW)
            hi = text.find("\n", m.end(), m.end() + WINDOW + 40)
            line = text[lo:m.end() + WINDOW + 40 if hi < 0 else hi]
            a, b = m.start() - lo, m.end() - lo
            whole = lo == 0 or text[lo - 1] == "\n"  # the line starts at its sentence's start
            stated = _stated(line, a, b, partial, whole)
            if (stated or word is None) and not _explained(line, a, b, whole):
                if stated:
                    return Obstacle(m, True, partial), word
                word = Obstacle(m, False, partial)
    return None, word
