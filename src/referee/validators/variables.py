"""A validator's `${NAME}` values at check time: filled from the grader's environment, never said back.

A plan writes what a validator compares with as a variable (`text: "${EXPECTED_TITLE}"`) when the value
is not the plan's to hold. The grader (and `referee lint`) fills `expected`, `text` and `pattern` from its
own environment just before the check, and shows `${NAME}` again in place of each secret value in what
the check says (its reason and what it matched), so results.json, the report, JUnit and the console hold
the variable, never the value. A variable the grading environment lacks makes the validator ERROR: the
grader could not look. A variable in `public_env` is shown with its value. A secret the runner also sends
(a capture's, the app's, the actor's) is compared as `${NAME}`: the evidence holds that in its place.
"""

from __future__ import annotations

import os
from dataclasses import replace
from typing import Any, Callable, Mapping

from referee.plan.envvars import conceal, fill_fields
from referee.validators.base import Outcome

NEEDLES = ("text", "pattern")  # what a blank value would find in any evidence


def check_with_values(tv: Any, check: Callable[[Any], Outcome], env: Mapping[str, str] | None = None,
                      scrubbed: bool = True) -> Outcome:
    """`check(params)` on `tv`'s parameters with their variables filled from `env` (default: the process's),
    its reason and `matched` shown with `${NAME}` in place of each secret value. `tv`: a TypedValidator.
    `scrubbed`: the evidence is a run's, where a secret the runner sends stands as `${NAME}` (not so for the
    lint's controls). A `text` or `pattern` left blank by an empty value is ERROR: it would match anything.

    >>> from types import SimpleNamespace as NS
    >>> from referee.plan.validators import TextContainsSpec
    >>> tv = NS(params=TextContainsSpec.Params(kind="text_contains", evidence="page", text="${T}"), public=())
    >>> check_with_values(tv, lambda p: Outcome.fail(f"page does not contain {p.text!r}"), {"T": "Milk"}).reason
    "page does not contain '${T}'"
    >>> check_with_values(tv, lambda p: Outcome.hold("x"), {}).reason
    '`text` names ${T}, which is not set where this run is graded: set it and grade again'
    >>> check_with_values(tv, lambda p: Outcome.hold("x"), {"T": " "}).status
    'ERROR'
    """
    fields = getattr(type(tv.params), "env_fields", ())
    if not fields:
        return check(tv.params)
    sent = getattr(tv, "sent", ()) if scrubbed else ()
    filled = fill_fields(tv.params, fields, os.environ if env is None else env, tv.public, sent)
    if not filled.values:
        return check(tv.params)
    if filled.unset:
        where = ", ".join(f"`{f}`" for f in filled.values)
        names = ", ".join("${" + n + "}" for n in filled.unset)
        return Outcome.error(f"{where} names {names}, which {'is' if len(filled.unset) == 1 else 'are'} not set "
                             "where this run is graded: set it and grade again")
    blank = [f for f in NEEDLES if isinstance(filled.values.get(f), str) and not filled.values[f].strip()]
    if blank:
        return Outcome.error(f"`{blank[0]}` ({getattr(tv.params, blank[0])}) is blank once filled from the "
                             "environment, and a blank needle matches any evidence: set the variable to a value")
    out = check(tv.params.model_copy(update=filled.values))
    return replace(out, reason=conceal(out.reason, filled.hidden) or "", matched=conceal(out.matched, filled.hidden))
