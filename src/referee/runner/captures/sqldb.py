"""What a SQL capture asks of the database itself: give up after `timeout_s`, read odd values as text,
write nothing, compare the plan's `where` values as the column's type.

A query that does not return (a `pg_sleep`, a view the agent made slow) must not hold the run: the
database cancels it (PostgreSQL `statement_timeout`, SQLite through a progress handler), and the
capture fails with a clear reason. One value the driver cannot turn into Python (a PostgreSQL
`timestamptz 'infinity'`, SQLite text that is not UTF-8) is read as text, so it does not fail the
whole capture.
"""

from __future__ import annotations

import sqlite3
import time
from typing import Any

from referee.runner.captures.base import CaptureFailed

# PostgreSQL types whose text form a driver may fail to load (infinity, years past 9999, BC dates)
_PG_LENIENT_TYPES = ("date", "timestamp", "timestamptz", "interval")


def sqlite_text(data: bytes) -> str:
    """SQLite text as str; bytes that are not UTF-8 become U+FFFD instead of failing the capture.

    >>> sqlite_text(b"caf\\xe9"), sqlite_text("café".encode())
    ('caf\ufffd', 'café')
    """
    return data.decode("utf-8", "replace")


def guard_sqlite(conn: sqlite3.Connection, timeout_s: float) -> None:
    """Make `conn` interrupt any statement running past `timeout_s` from now, read text leniently, and
    refuse to open another database file.

    `mode=ro` keeps the plan's file unwritten, but ATTACH opens (and creates) any file, and VACUUM INTO
    writes a copy: both attach a database, which a limit of 0 refuses (SQL cannot raise it again).
    """
    conn.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, 0)
    deadline = time.monotonic() + timeout_s
    conn.set_progress_handler(lambda: int(time.monotonic() > deadline), 1000)
    conn.text_factory = sqlite_text


def _lenient_loader(base: Any) -> Any:
    """A psycopg 3 loader that loads like `base` and falls back to the value's text (`base` may be C code,
    which cannot be subclassed, so it is wrapped)."""
    from psycopg.adapt import Loader

    class Lenient(Loader):
        def __init__(self, oid: int, context: Any = None) -> None:
            super().__init__(oid, context)
            self._inner = base(oid, context)

        def load(self, data: Any) -> Any:
            try:
                return self._inner.load(data)
            except Exception:  # DataError: 'infinity', year 10000+, ...: keep what the database said
                return bytes(data).decode("utf-8", "replace")

    return Lenient


def _lenient_psycopg(conn: Any) -> None:
    """Register, on a psycopg 3 connection, loaders that fall back to the text form of a value."""
    from psycopg.pq import Format

    for name in _PG_LENIENT_TYPES:
        info = conn.adapters.types.get(name)
        base = None if info is None else conn.adapters.get_loader(info.oid, Format.TEXT)
        if base is not None:
            conn.adapters.register_loader(info.oid, _lenient_loader(base))


def guard_connection(sa_conn: Any, backend: str, timeout_s: float) -> None:
    """Bound every statement on `sa_conn` (a SQLAlchemy Connection) to `timeout_s`, where the database can.

    PostgreSQL: `statement_timeout` for this session, a read-only transaction, one statement per query
    (psycopg 3); SQLite: a progress handler that interrupts (the file is opened read-only by the engine).
    Other databases get no server-side bound (the plan's timeout is not enforced there).
    """
    raw = sa_conn.connection.driver_connection
    if backend == "postgresql":
        psycopg3 = type(raw).__module__.split(".")[0] == "psycopg"
        if psycopg3:
            # every statement prepared, so sent by the extended protocol, where the server refuses several
            # in one query: `commit; drop table t` could otherwise leave the read-only transaction below
            raw.prepare_threshold = 0
            _lenient_psycopg(raw)
        # a capture must not change what it grades; a read-only transaction cannot be made read-write
        # once it has run a query (a read-only role is still the real guard: security-inputs.md)
        sa_conn.exec_driver_sql("SET TRANSACTION READ ONLY")
        sa_conn.exec_driver_sql("SET default_transaction_read_only = on")
        sa_conn.exec_driver_sql(f"SET statement_timeout = {max(1, int(timeout_s * 1000))}")
    elif isinstance(raw, sqlite3.Connection):
        guard_sqlite(raw, timeout_s)


def where_clauses(sa: Any, table: Any, where: dict[str, Any], backend: str) -> list[Any]:
    """`column = value` for each of the plan's `where`, `IS NULL` for a null value.

    YAML gives text for a date, a uuid or a quoted number, which PostgreSQL will not compare with a date,
    uuid or int column (`operator does not exist: date = character varying`): there the value is cast to
    the column's reflected type, as `'2024-01-02'::date` would be. Not on SQLite, where a CAST to a
    declared type such as DATE turns '2024-01-02' into 2024, and its comparisons already follow the
    column's affinity.
    """
    clauses = []
    for name, value in where.items():
        if name not in table.c:
            raise CaptureFailed(f"no column {name!r} in table {table.name} (columns: {', '.join(table.c.keys())}); "
                                f"fix the plan's `where`")
        col = table.c[name]
        if value is None:
            clauses.append(col.is_(None))
        elif backend == "postgresql" and isinstance(value, (str, int, float, bool)) \
                and not isinstance(col.type, sa.types.NullType):
            clauses.append(col == sa.cast(sa.literal(value), col.type))
        else:
            clauses.append(col == value)
    return clauses


def shown_sql(stmt: Any, dialect: Any) -> str:
    """The statement as the record shows it: its values inline, or as parameters where a type cannot
    render one inline (a uuid column on some dialects) rather than failing the capture."""
    try:
        return str(stmt.compile(dialect=dialect, compile_kwargs={"literal_binds": True}))
    except Exception:  # CompileError: "No literal value renderer is available for ..."
        compiled = stmt.compile(dialect=dialect)
        return f"{compiled} -- {compiled.params}"


def write_refused(exc: Exception) -> str | None:
    """Why the database refused `exc`'s query as a write, in the plan's words; None for another error.

    >>> write_refused(sqlite3.OperationalError("too many attached databases - max 0"))[:24]
    'the query opens another '
    """
    text = str(exc)
    if "too many attached databases - max 0" in text:
        return ("the query opens another database file (ATTACH, VACUUM): a sql capture is read-only and "
                "creates no file; query the database in `url` with SELECT")
    if "attempt to write a readonly database" in text:
        return "the query writes: a sql capture opens SQLite read-only; query the database with SELECT"
    if "in a read-only transaction" in text:
        return "the query writes: a sql capture runs in a read-only transaction; query the database with SELECT"
    if "cannot insert multiple commands into a prepared statement" in text:
        return ("the query holds several statements: a sql capture runs one, read-only; "
                "give one statement per capture")
    return None


def missing_table(exc: Exception) -> bool:
    """Whether `exc` says the table the plan names is not there (reflection, SQLite, PostgreSQL).

    >>> missing_table(sqlite3.OperationalError("no such table: order")), missing_table(ValueError("x"))
    (True, False)
    """
    text = str(exc).lower()
    return type(exc).__name__ in ("NoSuchTableError", "UndefinedTable") or "no such table" in text \
        or ("relation" in text and "does not exist" in text)


def tables_note(sa: Any, engine: Any, limit: int = 20) -> str:
    """`; the tables there: a, b` for a reason whose table is missing (a plan's typo shows beside the right
    name); "" when the database cannot be asked."""
    try:
        with engine.connect() as conn:
            names = sorted(sa.inspect(conn).get_table_names())
    except Exception:  # the note is a help, never a second failure
        return ""
    if not names:
        return "; the database has no table"
    more = f", … ({len(names)} in all)" if len(names) > limit else ""
    return f"; the tables there: {', '.join(names[:limit])}{more}"


def is_timeout(exc: Exception) -> bool:
    """Whether `exc` is the database cancelling a statement for running too long (or SQLite's interrupt).

    >>> is_timeout(sqlite3.OperationalError("interrupted")), is_timeout(ValueError("x"))
    (True, False)
    """
    text = str(exc).lower()
    return "statement timeout" in text or "querycanceled" in type(exc).__name__.lower() \
        or (isinstance(getattr(exc, "orig", exc), sqlite3.OperationalError) and "interrupted" in text)
