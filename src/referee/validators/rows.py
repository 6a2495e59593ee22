"""Row validators over runner-captured query results: a SQL row, a DynamoDB item."""

from __future__ import annotations

from typing import Any

from pydantic import model_validator

from referee.rundir import DdbRecord, SqlRecord
from referee.validators.base import CaptureRequest, Outcome, ValidatorKind, ValidatorParams, register
from referee.validators.common import capture_record, implicit_name, short


def _rows_outcome(rows: list, what: str, min_rows: int) -> Outcome:
    if len(rows) >= min_rows:
        return Outcome.hold(f"{len(rows)} {what} found", matched=short(rows[0]) if rows else None)
    return Outcome.fail(f"{len(rows)} {what} found, expected at least {min_rows}")


@register("sql_row_present")
class SqlRowPresent(ValidatorKind):
    summary = "a SQL query (any SQLAlchemy URL) returns at least one row after the step"

    class Params(ValidatorParams):
        url: str | None = None
        query: str | None = None
        params: dict[str, Any] = {}
        table: str | None = None
        where: dict[str, Any] = {}
        evidence: str | None = None
        min_rows: int = 1

        @model_validator(mode="after")
        def _shape(self):
            if self.evidence is None:
                if not self.url:
                    raise ValueError("give `url` (a SQLAlchemy URL) or `evidence` (a sql capture name)")
                if (self.query is None) == (self.table is None):
                    raise ValueError("give exactly one of `query` (with `params`) or `table` (with `where`)")
            return self

    def captures(self, params, index):
        if params.evidence is not None:
            return []
        spec = {"url": params.url, "query": params.query, "params": params.params, "table": params.table,
                "where": params.where}
        return [CaptureRequest("sql", implicit_name(params.kind, index), {k: v for k, v in spec.items() if v})]

    def check(self, params, ev, index):
        rec = capture_record(ev, self.evidence_refs(params, index)[0], SqlRecord, "a sql capture")
        return _rows_outcome(rec.rows, "row(s)", params.min_rows)


@register("ddb_row_present")
class DdbRowPresent(ValidatorKind):
    summary = "a DynamoDB item with `key` exists in `table` after the step"

    class Params(ValidatorParams):
        table: str | None = None
        key: dict[str, Any] = {}
        endpoint_url: str | None = None
        region: str | None = None
        evidence: str | None = None

        @model_validator(mode="after")
        def _shape(self):
            if self.evidence is None and not (self.table and self.key):
                raise ValueError("give `table` and `key`, or `evidence` (a ddb capture name)")
            return self

    def captures(self, params, index):
        if params.evidence is not None:
            return []
        spec = {"table": params.table, "key": params.key, "endpoint_url": params.endpoint_url,
                "region": params.region}
        return [CaptureRequest("ddb", implicit_name(params.kind, index), {k: v for k, v in spec.items() if v})]

    def check(self, params, ev, index):
        rec = capture_record(ev, self.evidence_refs(params, index)[0], DdbRecord, "a ddb capture")
        return _rows_outcome(rec.items, "item(s)", 1)
