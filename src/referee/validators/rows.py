"""Row checkers over runner-captured query results: a SQL row, a DynamoDB item."""

from __future__ import annotations

from referee.plan.validators import DdbRowPresentSpec, SqlRowPresentSpec
from referee.rundir.schema import SQL_KEPT_ROWS, DdbRecord, SqlRecord
from referee.validators.base import Outcome, ValidatorKind, register
from referee.validators.common import capture_record, short


def _rows_outcome(rows: list, what: str, min_rows: int, total: int | None = None, asked: str = "") -> Outcome:
    n = len(rows) if total is None else total
    found = f"{n} {what} found" + ("" if total is None else f" (the first {len(rows)} kept)")
    if n >= min_rows:
        return Outcome.hold(found, matched=short(rows[0]) if rows else None)
    return Outcome.fail(f"{found}, expected at least {min_rows}{asked}")


@register("sql_row_present")
class SqlRowPresent(SqlRowPresentSpec, ValidatorKind):
    def check(self, params: SqlRowPresentSpec.Params, ev, index: int) -> Outcome:
        rec = capture_record(ev, self.evidence_refs(params, index)[0], SqlRecord, "a sql capture")
        kept = len(rec.rows)
        if rec.total_rows is None and rec.total_rows_more_than is not None:
            # the count stopped at its cap: it proves "more than N", so any min_rows up to N + 1 holds
            over = f"more than {rec.total_rows_more_than:,} rows"
            if params.min_rows <= rec.total_rows_more_than + 1:
                return Outcome.hold(f"{over} found (the count stops there; the first {kept} kept)",
                                    matched=short(rec.rows[0]) if rec.rows else None)
            return Outcome.error(f"the query returned {over}, where the capture stops counting; "
                                 f"cannot tell whether there are at least {params.min_rows:,}")
        if rec.total_rows is None and kept >= SQL_KEPT_ROWS and params.min_rows > kept:
            # the rows were cut and not counted (a record from before the count): no true count to judge
            return Outcome.error(f"the capture kept the first {kept} rows and did not count the rest; "
                                 f"cannot tell whether there are at least {params.min_rows}")
        total = rec.total_rows if rec.total_rows is not None and rec.total_rows > kept else None  # rows were cut
        asked = f" (query: {short(rec.query)}{_params(params)})" if rec.query else ""
        return _rows_outcome(rec.rows, "row(s)", params.min_rows, total=total, asked=asked)


def _params(params: SqlRowPresentSpec.Params) -> str:
    """The query's named parameters, as the plan gave them, for a reason."""
    given = getattr(params, "params", None)
    return f" with {short(given, 60)}" if given else ""


@register("ddb_row_present")
class DdbRowPresent(DdbRowPresentSpec, ValidatorKind):
    def check(self, params: DdbRowPresentSpec.Params, ev, index: int) -> Outcome:
        rec = capture_record(ev, self.evidence_refs(params, index)[0], DdbRecord, "a ddb capture")
        return _rows_outcome(rec.items, "item(s)", 1, asked=f" (table {short(rec.table)}, key {short(rec.key)})")
