"""Row checkers over runner-captured query results: a SQL row, a DynamoDB item."""

from __future__ import annotations

from referee.plan.validators import DdbRowPresentSpec, SqlRowPresentSpec
from referee.rundir import DdbRecord, SqlRecord
from referee.validators.base import Outcome, ValidatorKind, register
from referee.validators.common import capture_record, short


def _rows_outcome(rows: list, what: str, min_rows: int) -> Outcome:
    if len(rows) >= min_rows:
        return Outcome.hold(f"{len(rows)} {what} found", matched=short(rows[0]) if rows else None)
    return Outcome.fail(f"{len(rows)} {what} found, expected at least {min_rows}")


@register("sql_row_present")
class SqlRowPresent(SqlRowPresentSpec, ValidatorKind):
    def check(self, params: SqlRowPresentSpec.Params, ev, index: int) -> Outcome:
        rec = capture_record(ev, self.evidence_refs(params, index)[0], SqlRecord, "a sql capture")
        return _rows_outcome(rec.rows, "row(s)", params.min_rows)


@register("ddb_row_present")
class DdbRowPresent(DdbRowPresentSpec, ValidatorKind):
    def check(self, params: DdbRowPresentSpec.Params, ev, index: int) -> Outcome:
        rec = capture_record(ev, self.evidence_refs(params, index)[0], DdbRecord, "a ddb capture")
        return _rows_outcome(rec.items, "item(s)", 1)
