"""What deciding needs of a claim-blind view: its hash, its steps, which were observed, where report atoms are
looked for. The extraction side makes them from the view; the deciding side (citations, grounding) needs no more.
"""

from __future__ import annotations

from dataclasses import dataclass

from referee.audit.view.atoms import Haystack
from referee.audit.view.blind import ClaimBlindView


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

    @classmethod
    def of(cls, view: ClaimBlindView) -> "ViewFacts":
        """The facts of a view; the haystack's text is made only when an atom is looked for."""
        observed = frozenset(s.index for s in view.steps if s.observation is not None)
        seen = bool(observed) or view.initial_observation is not None
        return cls(view.sha256, len(view.steps), observed, Haystack(lambda: observed_text(view)) if seen else None)
