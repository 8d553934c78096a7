"""PostgreSQL behind the `sqlite3` connection interface the rest of nightschool uses.

Every component writes SQL once, in the SQLite dialect, through
`Store.connection.execute(sql, params)`. On Postgres (psycopg 3) the store hands
them a `PgConnection` that speaks the same DB-API subset and translates:

- `?` placeholders become `%s` (a literal `%` is doubled), Python `bool`
  parameters become 0/1 (SQLite has no boolean type; the schema stores 0/1);
- `INSERT OR IGNORE INTO ...` becomes `INSERT INTO ... ON CONFLICT DO NOTHING`;
- `BEGIN IMMEDIATE` (SQLite: one writer at a time) becomes `BEGIN` plus a
  transaction-scoped advisory lock (`WRITER_LOCK`), so writers on every
  connection, process and machine sharing the database are serialised exactly
  as SQLite serialises them, and read-then-write blocks stay correct;
- `CAST(x / n AS INTEGER)` truncates as SQLite does (Postgres rounds), and
  `AS REAL` means `DOUBLE PRECISION` (Postgres `real` is 4 bytes);
- `cursor.lastrowid` is filled by appending `RETURNING rowid` to an INSERT
  (every table of the Postgres schema has a `rowid` column, an alias of its
  integer id or an identity column, see `_pg_migrations`);
- psycopg errors are re-raised as their `sqlite3` DB-API (PEP 249) classes
  (integrity, operational, programming, database), so existing `except
  sqlite3.IntegrityError` handlers keep their meaning;
- a failed statement inside a transaction does not abort the transaction (each
  write in an explicit transaction runs under a savepoint), as in SQLite;
- a connection the server dropped between statements (a restart) is opened
  again once, outside a transaction; inside one, the error reaches the caller
  and the transaction is rolled back, nothing half-written.

Functions SQLite has and Postgres lacks (`json_extract`, `json_valid`,
`json_array_length`, `total`) are created by the first Postgres migration.
"""

from __future__ import annotations

import functools
import re
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import psycopg
from psycopg import errors as pg_errors

WRITER_LOCK = 0x6E73_7772  # "nswr"
"""Advisory lock key taken by every write transaction (`pg_advisory_xact_lock`)."""

CONNECT_TIMEOUT_S = 10
"""Seconds to wait for the Postgres server when connecting."""

_INSERT_OR_IGNORE = re.compile(r"^\s*INSERT\s+OR\s+IGNORE\s+INTO\b", re.IGNORECASE)
_INSERT = re.compile(r"^\s*INSERT\b", re.IGNORECASE)
_RETURNING = re.compile(r"\bRETURNING\b", re.IGNORECASE)
_WRITE = re.compile(r"^\s*(INSERT|UPDATE|DELETE)\b", re.IGNORECASE)
_CAST_DIV_INT = re.compile(r"CAST\(([\w.]+)\s*/\s*(\d+)\s+AS\s+INTEGER\)", re.IGNORECASE)
_AS_REAL = re.compile(r"\bAS\s+REAL\)", re.IGNORECASE)


def _placeholders(sql: str) -> str:
    """`?` -> `%s` outside quotes; every `%` doubled (psycopg formats the whole text)."""
    out: list[str] = []
    quote = ""
    for char in sql:
        if quote:
            if char == quote:
                quote = ""
        elif char in "'\"":
            quote = char
        elif char == "?":
            out.append("%s")
            continue
        out.append("%%" if char == "%" else char)
    return "".join(out)


@functools.lru_cache(maxsize=4096)
def translate(sql: str) -> tuple[str, bool]:
    """Translate one SQLite statement to Postgres.

    Returns:
        (postgres_sql, returns_rowid): the second is True when `RETURNING rowid`
        was appended to fill `lastrowid` (the caller did not ask for rows).
    """
    text = sql.strip().rstrip(";")
    ignore = bool(_INSERT_OR_IGNORE.match(text))
    if ignore:
        text = _INSERT_OR_IGNORE.sub("INSERT INTO", text, count=1)
    text = _CAST_DIV_INT.sub(r"CAST(trunc(\1 / \2) AS BIGINT)", text)
    text = _AS_REAL.sub("AS DOUBLE PRECISION)", text)
    returning = bool(_RETURNING.search(text))
    if ignore:
        if returning:
            head, tail = _RETURNING.split(text, maxsplit=1)
            text = f"{head} ON CONFLICT DO NOTHING RETURNING{tail}"
        else:
            text += " ON CONFLICT DO NOTHING"
    add_rowid = bool(_INSERT.match(text)) and not returning
    if add_rowid:
        text += " RETURNING rowid"
    return _placeholders(text), add_rowid


def _params(params: Sequence[Any] | None) -> list[Any]:
    if not params:
        return []
    return [int(p) if isinstance(p, bool) else p for p in params]


def _mapped(exc: psycopg.Error) -> sqlite3.Error:
    """The `sqlite3` exception class a psycopg error corresponds to."""
    message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    if isinstance(exc, pg_errors.IntegrityError | pg_errors.RaiseException):
        return sqlite3.IntegrityError(message)
    if isinstance(exc, pg_errors.DataError):
        return sqlite3.DataError(message)
    if isinstance(exc, pg_errors.ProgrammingError):
        return sqlite3.OperationalError(message)  # SQLite reports bad SQL as operational
    if isinstance(exc, pg_errors.OperationalError | psycopg.OperationalError):
        return sqlite3.OperationalError(message)
    return sqlite3.DatabaseError(message)


class PgCursor:
    """The result of one statement: rows already fetched, `lastrowid`, `rowcount`."""

    def __init__(self, rows: list[tuple[Any, ...]], lastrowid: int | None, rowcount: int) -> None:
        self._rows = rows
        self._next = 0
        self.lastrowid = lastrowid
        self.rowcount = rowcount

    def fetchone(self) -> tuple[Any, ...] | None:
        if self._next >= len(self._rows):
            return None
        row = self._rows[self._next]
        self._next += 1
        return row

    def fetchall(self) -> list[tuple[Any, ...]]:
        rows = self._rows[self._next :]
        self._next = len(self._rows)
        return rows

    def __iter__(self) -> Iterator[tuple[Any, ...]]:
        while (row := self.fetchone()) is not None:
            yield row


class PgConnection:
    """A psycopg connection with the `sqlite3.Connection` subset nightschool uses.

    Autocommit outside explicit transactions (as `sqlite3` with
    `isolation_level=None`). Not thread-safe by itself: the `Store` guards it
    with its lock, as it does the SQLite connection.

    Raises:
        sqlite3.OperationalError: the server cannot be reached (at connect).
    """

    def __init__(self, url: str) -> None:
        try:
            self._conn = psycopg.connect(
                url, autocommit=True, connect_timeout=CONNECT_TIMEOUT_S, prepare_threshold=None
            )
        except psycopg.Error as exc:
            raise _mapped(exc) from exc
        self.url = url
        self._in_transaction = False
        self._savepoints = 0

    # -- sqlite3.Connection subset ----------------------------------------------

    def execute(self, sql: str, params: Sequence[Any] | None = None) -> PgCursor:
        """Run one statement (SQLite dialect, `?` placeholders); return its cursor."""
        head = sql.strip().upper()
        if head.startswith("BEGIN"):
            return self._begin()
        if head in ("COMMIT", "END", "ROLLBACK"):
            self._in_transaction = False
            return self._run(head, [], False)
        text, add_rowid = translate(sql)
        guarded = self._in_transaction and bool(_WRITE.match(text))
        if not guarded:
            return self._run(text, _params(params), add_rowid)
        self._savepoints += 1
        name = f"ns_{self._savepoints}"
        self._run(f"SAVEPOINT {name}", [], False)
        try:
            cursor = self._run(text, _params(params), add_rowid)
        except sqlite3.Error:
            self._run(f"ROLLBACK TO SAVEPOINT {name}", [], False)
            raise
        self._run(f"RELEASE SAVEPOINT {name}", [], False)
        return cursor

    def executemany(self, sql: str, seq_of_params: Iterable[Sequence[Any]]) -> PgCursor:
        """Run one statement once per parameter row (psycopg pipelines the batch)."""
        text, _ = translate(sql)
        if text.endswith(" RETURNING rowid"):
            text = text[: -len(" RETURNING rowid")]
        rows = [_params(p) for p in seq_of_params]
        try:
            with self._conn.cursor() as cur:
                cur.executemany(text, rows)
                count = cur.rowcount
        except psycopg.Error as exc:
            raise _mapped(exc) from exc
        return PgCursor([], None, count)

    def close(self) -> None:
        """Close the server connection."""
        self._conn.close()

    @property
    def in_transaction(self) -> bool:
        return self._in_transaction

    # -- internals --------------------------------------------------------------

    def _fetch(self, text: str, params: list[Any]) -> tuple[list[tuple[Any, ...]], int]:
        with self._conn.cursor() as cur:
            cur.execute(text, params)
            rows = cur.fetchall() if cur.description is not None else []
            return rows, cur.rowcount

    def _begin(self) -> PgCursor:
        self._run("BEGIN", [], False)
        self._in_transaction = True
        self._run("SELECT pg_advisory_xact_lock(%s)", [WRITER_LOCK], False)
        return PgCursor([], None, -1)

    def _run(self, text: str, params: list[Any], add_rowid: bool) -> PgCursor:
        try:
            rows, count = self._fetch(text, params)
        except psycopg.OperationalError as exc:
            if not self._conn.broken or self._in_transaction:
                raise _mapped(exc) from exc
            # The server restarted or dropped us between statements: reconnect once.
            try:
                self._conn = psycopg.connect(
                    self.url,
                    autocommit=True,
                    connect_timeout=CONNECT_TIMEOUT_S,
                    prepare_threshold=None,
                )
                rows, count = self._fetch(text, params)
            except psycopg.Error as again:
                raise _mapped(again) from again
        except psycopg.Error as exc:
            raise _mapped(exc) from exc
        if add_rowid:
            lastrowid = int(rows[-1][0]) if rows else None
            return PgCursor([], lastrowid, count)
        return PgCursor(list(rows), None, count)
