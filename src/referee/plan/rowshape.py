"""The shape of a SQL query or a DynamoDB lookup in a plan, one rule set for the `sql` and `ddb` captures and
the `sql_row_present` and `ddb_row_present` validators that capture for themselves.

Each rule refuses at load time (`referee check`, and `referee run` before it starts) a plan the runner would
run wrong: a `where` beside a `query` (or `params` beside a `table`) that nothing applies, so the validator
held on every row; a `min_rows` of 0 that holds on none.
"""

from __future__ import annotations

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
    return value


__all__ = ["MinRows", "goes_with"]
