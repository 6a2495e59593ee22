"""What deciding needs of a claim-blind view: its hash, its steps, which were observed, where report atoms are
looked for. The extraction side makes them from the view; the deciding side (citations, grounding) needs no more.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

from referee.audit.records import TraceSignals
from referee.audit.view.atoms import Haystack
from referee.audit.view.blind import ClaimBlindView, ViewObservation

# general words of failure and of a run ended by its harness: no tool, site or corpus is named
_ERROR = re.compile(r"\b(error|exception|traceback|failed|failure|invalid|denied|forbidden|not found|no such|"
                    r"cannot|can't|unable to)\b", re.IGNORECASE)
_CUT_OFF = re.compile(r"\b((step|turn|time|token|cost|iteration|call|budget)s? ?(limit|budget)|"
                      r"max(imum)?[ _](steps|turns|iterations|calls)|limits? (reached|exceeded|hit)|"
                      r"timed out|time ?out|exceeded)\b", re.IGNORECASE)
_TAIL = 2000  # only the end of an observation is read for these signals: errors and limits are stated last


def _errs(o: ViewObservation | None) -> bool:
    return o is not None and (o.error or bool(o.text and _ERROR.search(o.text[-_TAIL:])))


def trace_signals(view: ClaimBlindView) -> TraceSignals:
    """The general signals risk reads of a view: errors at the end, a change never checked, a cut-off, a loop.

    A write is an action with arguments whose name is a write verb of the vocabulary, or a shell command that
    changes a file (sed -i, a redirect, a heredoc, open(..., 'w'): extract/acting.py's shell recognition,
    shell_step). A check is any later action that is not a write, except that a shell command is a check only
    when it runs something (tests, a script, a linter, a build): reading a file back is not checking it.

    >>> from referee.audit.trace import Trace
    >>> from referee.audit.view.blind import build_view
    >>> t = Trace(run_id="r", task="t", steps=[{"action": {"name": "update_order", "args": {"id": 1}},
    ...     "observation": {"text": "Error: order not found"}}])
    >>> s = trace_signals(build_view(t)); s.writes, s.error_last, s.error_after_write, s.unchecked_change
    (1, True, True, True)
    >>> sh = lambda c, o="": {"action": {"name": "bash", "args": {"command": c}}, "observation": {"text": o}}
    >>> t = Trace(run_id="r", task="t", steps=[sh("sed -i 's/a/b/' x.py"), sh("cat x.py"), sh("cat x.py")])
    >>> s = trace_signals(build_view(t)); s.writes, s.unchecked_change, s.max_streak
    (1, True, 2)
    """
    from referee.audit.extract.acting import shell_step
    from referee.audit.extract.lexicon import words
    from referee.audit.vocabulary import load_vocabulary

    writes = load_vocabulary().write_verbs
    acts = [s for s in view.steps if s.action]
    is_write, is_check = [], []
    for s in acts:
        shell = shell_step(s.action or "", s.plain_args()) if s.args else None
        # an action with no arguments (a message to the user, whose words are the claim channel) changes nothing
        # that can be checked, and saying the same to the user twice is no loop: both count only with arguments
        w = shell == "write" if shell is not None else bool(s.args) and bool(words(s.action or "") & writes)
        is_write.append(w)
        is_check.append(shell == "check" if shell is not None else not w)
    last_write = max((i for i, w in enumerate(is_write) if w), default=-1)
    observed = [s.observation for s in view.steps if s.observation is not None]
    last_obs = observed[-1] if observed else view.initial_observation
    after = []
    if last_write >= 0:
        at = acts[last_write].index
        after = [s.observation for s in view.steps if s.index >= at and s.observation is not None]
    keys = [(s.action, repr(s.args)) for s in acts if s.args]
    repeats = Counter(keys)
    streak = best = 0
    for i, k in enumerate(keys):  # back to back among the actions with arguments (a message between is no break)
        streak = streak + 1 if i and keys[i - 1] == k else 1
        best = max(best, streak)
    return TraceSignals(
        actions=len(acts), writes=sum(is_write), max_repeat=max(repeats.values(), default=0), max_streak=best,
        error_last=_errs(last_obs), error_after_write=any(_errs(o) for o in after),
        unchecked_change=last_write >= 0 and not any(is_check[last_write + 1:]),
        cut_off=bool(last_obs is not None and last_obs.text and _CUT_OFF.search(last_obs.text[-_TAIL:])))


def observed_text(view: ClaimBlindView) -> str:
    """The task and every observation as one text (where grounding looks for the report's atoms)."""
    observations = [o for o in [view.initial_observation] + [s.observation for s in view.steps] if o is not None]
    return view.task + "\n" + "\n".join(o.as_text() for o in observations)


@dataclass(frozen=True)
class ViewFacts:
    """A view's hash, its number of steps, the steps with an observation, and its haystack (None: nothing observed).

    >>> from referee.audit.trace import Trace
    >>> from referee.audit.view.blind import build_view
    >>> f = ViewFacts.of(build_view(Trace(run_id="r", task="t", steps=[{"action": {"name": "a"}},
    ...                                    {"observation": {"text": "ok"}}])))
    >>> f.n_steps, sorted(f.observed), f.haystack is not None
    (2, [1], True)
    """

    sha256: str
    n_steps: int
    observed: frozenset[int]
    haystack: Haystack | None
    signals: TraceSignals = field(default_factory=TraceSignals)

    @classmethod
    def of(cls, view: ClaimBlindView) -> "ViewFacts":
        """The facts of a view; the haystack's text is made only when an atom is looked for."""
        observed = frozenset(s.index for s in view.steps if s.observation is not None)
        seen = bool(observed) or view.initial_observation is not None
        return cls(view.sha256, len(view.steps), observed, Haystack(lambda: observed_text(view)) if seen else None,
                   trace_signals(view))
