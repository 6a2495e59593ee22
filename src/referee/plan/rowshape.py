"""The shape of a SQL query or a DynamoDB lookup in a plan, one rule set for the `sql` and `ddb` captures and
the `sql_row_present` and `ddb_row_present` validators that capture for themselves.

Each rule refuses at load time (`referee check`, and `referee run` before it starts) a plan the runner would
run wrong: a `where` beside a `query` (or `params` beside a `table`) that nothing applies, so the validator
held on every row; a `min_rows` of 0 that holds on none; a value no database takes, which was an ERROR only
once the step had run.
"""

from __future__ import annotations

import math
from typing import Annotated, Any

from pydantic import Field, ValidationInfo

from referee.errors import PlanValueError

MinRows = Annotated[int, Field(strict=True, ge=1)]
"""`min_rows`: a whole number of 1 or more (strict: YAML's `true` is no count; 0 or less would hold on no row)."""


def goes_with(value: dict[str, Any], info: ValidationInfo) -> dict[str, Any]:
    """`params` or `where` (field validator): each belongs to one form, and the other form ignores it.

    The model declares `query` and `table` before both, so `info.data` holds them.
    """
    if not value:
        return value
    data = info.data
    if info.field_name == "where" and data.get("query") is not None and data.get("table") is None:
        raise PlanValueError("`where` goes with `table`, and a `query` ignores it: every row would count",
                             "write the condition in the query (`... WHERE v = :v`) and its values in `params`")
    if info.field_name == "params" and data.get("table") is not None and data.get("query") is None:
        raise PlanValueError("`params` bind the `:name`s of a `query`, and a `table` ignores them: every row "
                             "would count", "give the column values in `where`")
    if info.field_name == "where":
        for col, v in value.items():
            if v is not None and not isinstance(v, (str, int, float)):
                raise PlanValueError(
                    f"column '{col}' is compared with a {'list' if isinstance(v, list) else 'mapping'}; `where` "
                    "compares each column with one value (text, number, true/false or null)",
                    "for a choice of values write a `query` (`... WHERE v IN (:a, :b)`) with `params`")
    return value


def nothing_beside_evidence(params: Any, fields: tuple[str, ...], kind: str) -> None:
    """A row validator that reads a capture (`evidence`) runs no lookup of its own: any of `fields` given
    beside it would be ignored, so the plan is refused (the lookup belongs to the `kind` capture named).

    >>> from types import SimpleNamespace as N
    >>> nothing_beside_evidence(N(table="t", key={}), ("table", "key"), "ddb")
    Traceback (most recent call last):
    ...
    referee.errors.PlanValueError: `evidence` reads a capture, and `table` would be ignored
    """
    ignored = [f"`{f}`" for f in fields if getattr(params, f)]
    if ignored:
        raise PlanValueError(f"`evidence` reads a capture, and {', '.join(ignored)} would be ignored",
                             f"give the {'query' if kind == 'sql' else 'lookup'} to the {kind} capture that "
                             "`evidence` names")


def ddb_key(value: dict[str, Any]) -> dict[str, Any]:
    """A DynamoDB key (field validator): one attribute at least, each a text or a finite number, as DynamoDB
    keys are (S or N); anything else fails `get_item` at run time.

    >>> ddb_key({"pk": "a", "sk": 2})
    {'pk': 'a', 'sk': 2}
    >>> ddb_key({"pk": float("nan")})
    Traceback (most recent call last):
    ...
    referee.errors.PlanValueError: key attribute 'pk' is nan: a DynamoDB key is a text or a finite number
    """
    fix = "give each key attribute as a text or a finite number, e.g. {pk: order-1, sk: 2}"
    if not value:
        raise PlanValueError("the key names no attribute", fix)
    for name, v in value.items():
        if isinstance(v, bool) or not isinstance(v, (str, int, float)):
            shown = {bool: "true/false", list: "list", dict: "mapping"}.get(type(v), "null")
            raise PlanValueError(f"key attribute '{name}' is a {shown}: a DynamoDB key is a text or a finite number",
                                 fix)
        if isinstance(v, float) and not math.isfinite(v):
            raise PlanValueError(f"key attribute '{name}' is {v}: a DynamoDB key is a text or a finite number", fix)
        if v == "":
            raise PlanValueError(f"key attribute '{name}' is empty: DynamoDB refuses an empty key text", fix)
    return value


__all__ = ["MinRows", "goes_with", "ddb_key"]
