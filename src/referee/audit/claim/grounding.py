"""Report grounding: which concrete atoms of the report appear neither in the task nor in any observation. Pure.

An atom not found as it stands is still grounded when it is derived from found values (`derived.derive`: a sum,
a count, an age, a converted unit ...); `Grounding.derived` says how. It runs after extraction and compares the
claim reader's atoms with the claim-blind view; nothing here feeds the extractor, so the view, its hash and the
evidence never depend on the report.
"""

from __future__ import annotations

from referee.audit.claim.derived import context_of, derive
from referee.audit.records import ClaimReading, Grounding
from referee.audit.view.atoms import Haystack, found_in
from referee.audit.view.blind import ClaimBlindView
from referee.audit.view.facts import ViewFacts


def ground(claim: ClaimReading, view: ClaimBlindView) -> Grounding:
    """Ground the report's atoms in the task and the observations (never in the agent's own actions).

    >>> from referee.audit.trace import Trace
    >>> from referee.audit.view.blind import build_view
    >>> v = build_view(Trace(run_id="r", task="Total of order 5512?", steps=[{"action": {"name": "get"},
    ...     "observation": {"data": {"total": 84.25}}}]))
    >>> ground(ClaimReading(label="success", atoms=["5512", "$84.25"]), v).value
    'yes'
    >>> g = ground(ClaimReading(label="success", atoms=["$97.40"]), v); g.value, g.ungrounded
    ('no', ['$97.40'])
    >>> ground(ClaimReading(label="success", atoms=["$84.25", "84.3 USD"]), v).derived
    {'84.3 USD': '84.3 USD: 84.25 rounded'}
    """
    return ground_in(claim, ViewFacts.of(view).haystack, view.task)


def ground_in(claim: ClaimReading, haystack: Haystack | None, task: str = "") -> Grounding:
    """`ground`, given the view's haystack (None: the view has no observation) and the task."""
    atoms = list(claim.atoms)
    if haystack is None:
        return Grounding(value="unknown", atoms=atoms, note="no observation to compare the report with")
    if not atoms:
        return Grounding(value="unknown", atoms=[], observed=True, note="the report names no concrete atom")
    missing = [a for a in atoms if not found_in(a, haystack)]
    derived: dict[str, str] = {}
    if missing:
        ctx = context_of(haystack.text, task, [a for a in atoms if a not in missing])
        derived = {a: how for a in missing if (how := derive(a, ctx)) is not None}
    ungrounded = [a for a in missing if a not in derived]
    also = f"; {len(derived)} derived from them" if derived else ""
    return Grounding(value="no" if ungrounded else "yes", atoms=atoms, ungrounded=ungrounded, observed=True,
                     derived=derived,
                     note=f"{len(ungrounded)} of {len(atoms)} atoms found in neither the task nor an observation"
                     + (f" ({len(derived)} more derived from them)" if derived else "")
                     if ungrounded else "every atom is in the task or an observation" + also)
