"""Row captures: the result of a SQL query (any SQLAlchemy URL) or a DynamoDB lookup, taken by the runner."""

from __future__ import annotations

import base64
import math
import os
import stat
import threading
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

from referee.core.fsutil import atomic_write_text
from referee.errors import require
from referee.rundir.schema import SQL_KEPT_ROWS, DdbRecord, SqlRecord, dump_record, record_file
from referee.runner.captures.base import CaptureFailed, CaptureKind, register
from referee.runner.captures.sources import refuse_links, source_path
from referee.runner.captures.sqldb import (
    guard_connection,
    guard_sqlite,
    is_timeout,
    missing_table,
    shown_sql,
    tables_note,
    where_clauses,
    write_refused,
)
from referee.runner.envsubst import redact_url

MAX_COUNTED = 1_000_000  # rows counted past the kept ones (for `min_rows`) before the count gives up


def _plain(value: Any) -> Any:
    """Make a DB value JSON-safe (Decimal, bytes, datetimes, sets).

    JSON has no Infinity or NaN (pydantic would write null, the same as SQL NULL): they are kept as text.

    >>> _plain([float("inf"), -float("inf"), float("nan"), Decimal("NaN"), Decimal("-Infinity"), Decimal("2"), 1.5])
    ['Infinity', '-Infinity', 'NaN', 'NaN', '-Infinity', 2, 1.5]
    """
    if isinstance(value, (float, Decimal)) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, (bytes, bytearray)):
        return value.hex()
    if isinstance(value, (set, frozenset)):
        return sorted(_plain(v) for v in value)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return str(value)


def _filled(values: dict[str, Any], fill: Any) -> dict[str, Any]:
    """`where` or `params` with `fill` (the capture's `expand` or `shown`) applied to each text value."""
    return {k: fill(v) if isinstance(v, str) else v for k, v in values.items()}


@register("sql")
class SqlCapture(CaptureKind):
    def take(self, params, ctx):
        url = ctx.expand(params.url)
        record = SqlRecord(url=redact_url(ctx.shown(params.url)), query=params.query)
        engine = None
        try:
            import sqlalchemy as sa

            password = sa.engine.make_url(url).password
            ctx.secrets.add(str(password) if password else None, "***")  # a driver's error may quote the URL
            engine = _engine(sa, url, ctx, params.timeout_s)
            try:
                with engine.connect() as conn:
                    guard_connection(conn, engine.dialect.name, params.timeout_s)
                    if params.table is not None:
                        table = sa.Table(params.table, sa.MetaData(), autoload_with=conn)

                        def select(where: dict[str, Any]) -> Any:
                            return sa.select(table).where(*where_clauses(sa, table, where, engine.dialect.name))

                        stmt = select(_filled(params.where, ctx.expand))
                        # the record shows the plan's `${VAR}` where a secret value was filled in
                        record.query = ctx.scrub(shown_sql(select(_filled(params.where, ctx.shown)), engine.dialect))
                        result = conn.execute(stmt)
                    else:
                        result = conn.execute(sa.text(params.query), _filled(params.params, ctx.expand))
                    if result.returns_rows:
                        # a row may hold what the agent wrote, a secret value it learned included: scrubbed
                        record.columns = [ctx.scrub(str(c)) for c in result.keys()]
                        record.rows = ctx.secrets.scrub_all([_plain(dict(r._mapping))
                                                             for r in result.fetchmany(SQL_KEPT_ROWS)])
                        record.total_rows = _count_rest(result, len(record.rows))
                        if record.total_rows is None:  # the count stopped at its cap: say what it proved
                            record.total_rows_more_than = MAX_COUNTED
            finally:
                engine.dispose()
        except ModuleNotFoundError as exc:
            raise CaptureFailed(f"{exc.name} is not installed (for postgres: pip install 'referee[postgres]')",
                                _what(record)) from None
        except CaptureFailed as exc:
            exc.detail = _what(record)
            raise
        except Exception as exc:  # a DB that refuses us is recorded, so the grader can say why
            why = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
            if is_timeout(exc):
                why = f"the query did not return within {params.timeout_s:g} s (timeout_s); the database " \
                      f"cancelled it ({why})"
            elif write_refused(exc):
                why = f"{write_refused(exc)} ({why})"
            elif missing_table(exc) and engine is not None:  # a misspelt table shows beside the right one
                why += tables_note(sa, engine)
            raise CaptureFailed(ctx.scrub(why), _what(record)) from None
        path = ctx.out_dir / record_file(params.name, "sql")
        atomic_write_text(path, dump_record(record))
        return [path]


def _count_rest(result, kept: int) -> int | None:
    """How many rows `result` gave in all (`kept` already read), or None past MAX_COUNTED."""
    total = kept
    while total <= MAX_COUNTED:
        chunk = result.fetchmany(10_000)
        if not chunk:
            return total
        total += len(chunk)
    result.close()
    return None


def _engine(sa, url: str, ctx, timeout_s: float):
    """An engine for `url`; a SQLite file is opened read-only, and a missing one is never created."""
    u = sa.engine.make_url(url)
    if u.get_backend_name() != "sqlite" or (u.database or ":memory:") == ":memory:":
        args = {}
        if u.get_backend_name() == "postgresql" and u.get_driver_name() in ("psycopg", "psycopg2"):
            args["connect_timeout"] = max(2, int(timeout_s))  # a server that never answers the connect
        return sa.create_engine(u, poolclass=sa.pool.NullPool, connect_args=args)
    if str(u.query.get("uri", "")).lower() in ("true", "1"):  # a `file:` URI the plan wrote itself: add mode=ro
        return sa.create_engine(u.update_query_dict({"mode": "ro"}), poolclass=sa.pool.NullPool)
    db = source_path(u.database, ctx.cwd)
    # the database may lie in the agent's workspace: a link there could lead to one the agent may not read
    refuse_links(db, ctx.cwd, ctx.scrub(u.database))
    if not db.is_file():
        raise CaptureFailed(f"no SQLite database at {ctx.scrub(str(db))}")
    if u.get_driver_name() != "pysqlite":  # another SQLite driver: the file exists, so it makes none
        return sa.create_engine(u, poolclass=sa.pool.NullPool)
    import sqlite3

    uri = db.absolute().as_uri() + "?mode=ro" + _journal_check(db, ctx)

    def connect() -> sqlite3.Connection:
        conn = sqlite3.connect(uri, uri=True, check_same_thread=False, timeout=timeout_s)
        guard_sqlite(conn, timeout_s)
        return conn

    return sa.create_engine("sqlite://", poolclass=sa.pool.NullPool, creator=connect)


def _journal_check(db: Path, ctx) -> str:
    """More of the read-only URI for `db`, after checking the files SQLite reads beside it.

    SQLite reads committed rows from `<db>-wal` too, so a WAL file the agent planted beside a database it may
    not write (in a workspace it may write) forges rows: one the database's owner did not make is refused.
    A database in WAL mode with no WAL file has no writer (a connection keeps it while open) and holds
    everything in its file: `immutable=1` reads it without making the `-shm` file a read-only open would
    otherwise create, the runner's, beside it. A rollback-journal database is read with its usual locks.
    """
    owner = db.stat().st_uid
    present = False
    for suffix in ("-wal", "-shm", "-journal"):
        side = db.with_name(db.name + suffix)
        try:
            st = side.lstat()
        except FileNotFoundError:
            continue
        if stat.S_ISLNK(st.st_mode) or st.st_uid != owner:
            raise CaptureFailed(f"{ctx.scrub(str(side))} beside the database was not made by its owner (uid "
                                f"{owner}): rows in it could have been planted; not read")
        present = present or suffix == "-wal"
    with open(db, "rb") as fh:
        wal_mode = fh.read(20)[18:19] == b"\x02"  # the header's file format write version: 2 is WAL
    return "&immutable=1" if wal_mode and not present else ""


@register("ddb")
class DdbCapture(CaptureKind):
    def take(self, params, ctx):
        record = DdbRecord(table=params.table, key=params.key)
        try:
            boto3 = require("boto3", "aws")
            region = params.region or ctx.env.get("AWS_DEFAULT_REGION") or ctx.env.get("AWS_REGION") or "us-east-1"
            kwargs: dict[str, Any] = {"region_name": region}
            if params.endpoint_url:
                kwargs["endpoint_url"] = ctx.expand(params.endpoint_url)
                if not (ctx.env.get("AWS_ACCESS_KEY_ID") or os.environ.get("AWS_ACCESS_KEY_ID")):
                    # a local endpoint (moto, DynamoDB Local) accepts any credentials
                    kwargs.update(aws_access_key_id="local", aws_secret_access_key="local")
            # botocore waits 60 s per read and retries: an endpoint that never answers held the run 10 minutes
            kwargs["config"] = require("botocore.config", "aws").Config(
                connect_timeout=params.timeout_s, read_timeout=params.timeout_s,
                retries={"mode": "standard", "total_max_attempts": 3})
            table = boto3.resource("dynamodb", **kwargs).Table(params.table)
            key = _ddb_key(params.key)
            answer = _within(lambda: table.get_item(Key=key, ConsistentRead=True), params.timeout_s)
            if answer is None:
                where = ctx.shown(params.endpoint_url) if params.endpoint_url else region
                raise CaptureFailed(f"DynamoDB ({where}) did not answer within {params.timeout_s:g} s (timeout_s); "
                                    f"check the endpoint, or raise `timeout_s`")
            item = answer.get("Item")
            record.items = [ctx.secrets.scrub_all(_plain(_ddb_binary(item)))] if item else []
        except CaptureFailed as exc:
            exc.detail = _what(record)
            raise
        except Exception as exc:
            raise CaptureFailed(ctx.scrub(f"{type(exc).__name__}: {exc}"), _what(record)) from None
        path = ctx.out_dir / record_file(params.name, "ddb")
        atomic_write_text(path, dump_record(record))
        return [path]


def _within(call: Callable[[], Any], timeout_s: float) -> Any:
    """`call()`'s result, or None when it has not returned after `timeout_s`; its exception is raised here.

    botocore's timeouts bound each connect and read, not a lookup with its retries (nor a server that
    answers a byte at a time): the call runs in a daemon thread, left to end on its own socket timeouts.
    """
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = call()
        except BaseException as exc:  # handed to the caller's thread, which reports it
            box["error"] = exc

    worker = threading.Thread(target=run, name="referee-ddb", daemon=True)
    worker.start()
    worker.join(timeout_s)
    if "error" in box:
        raise box["error"]
    return box.get("value")


def _ddb_key(value: Any) -> Any:
    """A plan's key as boto3 takes it: numbers that are not whole as Decimal (boto3 refuses floats).

    >>> _ddb_key({"pk": "a", "sk": 1.5, "n": 2})
    {'pk': 'a', 'sk': Decimal('1.5'), 'n': 2}
    """
    if isinstance(value, float):
        return Decimal(str(value))
    if isinstance(value, dict):
        return {k: _ddb_key(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_ddb_key(v) for v in value]
    return value


def _ddb_binary(value: Any) -> Any:
    """An item with each Binary (`B`) value as its base64 text (boto3's Binary is not JSON, nor a str).

    >>> from boto3.dynamodb.types import Binary
    >>> _ddb_binary({"blob": Binary(b"\\xff\\x00hi"), "n": [Binary(b"a")]})
    {'blob': '/wBoaQ==', 'n': ['YQ==']}
    """
    from boto3.dynamodb.types import Binary

    if isinstance(value, Binary):
        return base64.b64encode(value.value).decode("ascii")
    if isinstance(value, dict):
        return {k: _ddb_binary(v) for k, v in value.items()}
    if isinstance(value, (set, frozenset)):  # a Binary Set (`BS`)
        return {_ddb_binary(v) for v in value}
    if isinstance(value, list):
        return [_ddb_binary(v) for v in value]
    return value


def _what(record) -> dict[str, Any]:
    """What a failed row capture knew: its record so far, without the (empty) results."""
    return record.model_dump(mode="json", exclude={"record_version", "kind", "columns", "rows", "total_rows",
                                                       "total_rows_more_than", "items"})
