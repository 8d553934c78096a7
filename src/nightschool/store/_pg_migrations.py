"""The same named migrations for PostgreSQL, derived from the SQLite ones.

`MIGRATIONS` (SQLite) is the single source of the schema: each Postgres
migration has the same name and is its SQLite statements rewritten
(`to_postgres`), so a new migration reaches both backends and the two schemas
cannot drift apart unnoticed (`tests/store/test_store_backends.py` compares
their tables and columns). The rewriting:

- types: `INTEGER` -> `BIGINT`, `REAL` -> `DOUBLE PRECISION`, `BLOB` -> `BYTEA`;
- `id INTEGER PRIMARY KEY [AUTOINCREMENT]` -> a `BIGINT` identity key plus a
  stored `rowid` column equal to it; every other table gets a `rowid` identity
  column. SQLite gives every table an implicit `rowid`, and nightschool's SQL
  orders and keys by it; on Postgres it is a real column (`SELECT *` lists it);
- append-only triggers (`RAISE(ABORT, ...)`) -> a PL/pgSQL trigger raising
  `<table> is append-only`;
- the FTS5 index `lessons_fts` and its sync triggers -> a stored, weighted
  `tsvector` column `lessons.fts` (English stemming; weights A-D in the order of
  `memory._lexical.BM25_WEIGHTS`: trigger, correct_pattern, anti_pattern,
  domains) under a GIN index. Postgres ranks with `ts_rank`, not BM25;
- the lesson-vector generation triggers -> a statement trigger drawing a random
  `BIGINT`;
- `json_valid(x)` checks use the SQL function of the same name created first.
"""

from __future__ import annotations

import re

from nightschool.store._migrations import MIGRATIONS

COMPATIBILITY: tuple[str, ...] = (
    # SQLite built-ins nightschool's SQL uses, with SQLite's meaning.
    """CREATE OR REPLACE FUNCTION json_valid(doc text) RETURNS boolean
        LANGUAGE plpgsql IMMUTABLE AS $$
        BEGIN
            PERFORM doc::json;
            RETURN true;
        EXCEPTION WHEN others THEN
            RETURN false;
        END $$""",
    """CREATE OR REPLACE FUNCTION json_extract(doc text, path text) RETURNS text
        LANGUAGE sql IMMUTABLE AS $$
        SELECT jsonb_path_query_first(doc::jsonb, path::jsonpath) #>> '{}' $$""",
    """CREATE OR REPLACE FUNCTION json_array_length(doc text, path text) RETURNS bigint
        LANGUAGE sql IMMUTABLE AS $$
        SELECT CASE jsonb_typeof(jsonb_path_query_first(doc::jsonb, path::jsonpath))
            WHEN 'array' THEN jsonb_array_length(jsonb_path_query_first(doc::jsonb,
                                                                      path::jsonpath))
            ELSE 0 END $$""",
    """CREATE OR REPLACE FUNCTION json_array_length(doc text) RETURNS bigint
        LANGUAGE sql IMMUTABLE AS $$
        SELECT CASE json_typeof(doc::json) WHEN 'array' THEN json_array_length(doc::json)
            ELSE 0 END $$""",
    """DO $$ BEGIN
        CREATE AGGREGATE total(double precision) (
            SFUNC = float8pl, STYPE = double precision, INITCOND = '0');
    EXCEPTION WHEN duplicate_function THEN NULL;
    END $$""",
    # SUM and TOTAL of a comparison count its true rows, as SQLite's 0/1 booleans do.
    """CREATE OR REPLACE FUNCTION nightschool_add_true(acc bigint, flag boolean) RETURNS bigint
        LANGUAGE sql IMMUTABLE AS $$
        SELECT CASE WHEN flag IS NULL THEN acc
                    ELSE COALESCE(acc, 0) + CASE WHEN flag THEN 1 ELSE 0 END END $$""",
    """DO $$ BEGIN
        CREATE AGGREGATE sum(boolean) (SFUNC = nightschool_add_true, STYPE = bigint);
    EXCEPTION WHEN duplicate_function THEN NULL;
    END $$""",
    """DO $$ BEGIN
        CREATE AGGREGATE total(boolean) (
            SFUNC = nightschool_add_true, STYPE = bigint, INITCOND = '0');
    EXCEPTION WHEN duplicate_function THEN NULL;
    END $$""",
    """CREATE OR REPLACE FUNCTION nightschool_append_only() RETURNS trigger
        LANGUAGE plpgsql AS $$
        BEGIN
            RAISE EXCEPTION '% is append-only', TG_TABLE_NAME;
        END $$""",
    """CREATE OR REPLACE FUNCTION nightschool_lesson_generation() RETURNS trigger
        LANGUAGE plpgsql AS $$
        BEGIN
            UPDATE lesson_index_state
               SET generation = floor(random() * 9.2e18 - 4.6e18)::bigint WHERE id = 1;
            RETURN NULL;
        END $$""",
)
"""Functions created (or replaced) before the first migration."""

FTS_WEIGHTS = {"trigger": "A", "correct_pattern": "B", "anti_pattern": "C", "domains": "D"}
"""`tsvector` weight of each lesson text column (A highest)."""

_FTS_COLUMN = (
    "ALTER TABLE lessons ADD COLUMN fts tsvector GENERATED ALWAYS AS ("
    + " || ".join(
        f"setweight(to_tsvector('english', {column}), '{weight}')"
        for column, weight in FTS_WEIGHTS.items()
    )
    + ") STORED"
)

_TYPE_WORDS = (
    (re.compile(r"\bINTEGER\b"), "BIGINT"),
    (re.compile(r"\bREAL\b"), "DOUBLE PRECISION"),
    (re.compile(r"\bBLOB\b"), "BYTEA"),
)
_APPEND_ONLY = re.compile(
    r"CREATE TRIGGER (\w+)_no_(update|delete) BEFORE (UPDATE|DELETE) ON (\w+)"
)
_GENERATION = re.compile(r"CREATE TRIGGER lessons_generation_(\w+) AFTER (INSERT|DELETE|UPDATE)")
_CREATE_TABLE = re.compile(r"^\s*CREATE TABLE (\w+) \(", re.DOTALL)
_INTEGER_KEY = re.compile(r"\bid INTEGER PRIMARY KEY( AUTOINCREMENT)?")


def _types(statement: str) -> str:
    for pattern, word in _TYPE_WORDS:
        statement = pattern.sub(word, statement)
    return statement


def _create_table(statement: str) -> str:
    key = _INTEGER_KEY.search(statement)
    if key:
        statement = _INTEGER_KEY.sub(
            "id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY"
            if key.group(1)
            else "id BIGINT PRIMARY KEY",
            statement,
            count=1,
        )
        rowid = "rowid BIGINT GENERATED ALWAYS AS (id) STORED"
    else:
        rowid = "rowid BIGINT GENERATED BY DEFAULT AS IDENTITY UNIQUE"
    opening = _CREATE_TABLE.match(statement)
    assert opening is not None
    head, body = statement[: opening.end()], statement[opening.end() :]
    return _types(f"{head}\n        {rowid},{body}")


def to_postgres(statement: str) -> tuple[str, ...]:
    """Rewrite one SQLite migration statement as zero or more Postgres statements."""
    text = statement.strip()
    if match := _APPEND_ONLY.match(text):
        table, event = match.group(4), match.group(3)
        return (
            f"CREATE TRIGGER {table}_no_{event.lower()} BEFORE {event} ON {table} "
            "FOR EACH ROW EXECUTE FUNCTION nightschool_append_only()",
        )
    if match := _GENERATION.match(text):
        name, event = match.group(1), match.group(2)
        of = " OF embedding, embedding_model" if event == "UPDATE" else ""
        return (
            f"CREATE TRIGGER lessons_generation_{name} AFTER {event}{of} ON lessons "
            "FOR EACH STATEMENT EXECUTE FUNCTION nightschool_lesson_generation()",
        )
    if text.startswith("CREATE VIRTUAL TABLE lessons_fts"):
        return (
            _FTS_COLUMN,
            # fastupdate off: lessons are written rarely and read on every turn, so no
            # search should scan a pending list of fresh inserts (10.4 ms vs 3.0 ms at 10k).
            "CREATE INDEX lessons_fts ON lessons USING gin (fts) WITH (fastupdate = off)",
        )
    if text.startswith("CREATE TRIGGER lessons_fts_"):
        return ()  # the generated column keeps itself in sync
    if text.startswith("CREATE TRIGGER"):
        raise ValueError(f"no Postgres rewrite for trigger: {text[:80]}")
    if text.startswith("CREATE VIEW effective_corrections"):
        # Postgres 15 needs an alias on a subquery in FROM.
        return (
            text.replace(") WHERE rank_in_trajectory = 1", ") ranked WHERE rank_in_trajectory = 1"),
        )
    if _CREATE_TABLE.match(text):
        return (_create_table(text),)
    if text.startswith("ALTER TABLE"):
        return (_types(text),)
    return (text,)


PG_MIGRATIONS: tuple[tuple[str, tuple[str, ...]], ...] = tuple(
    (name, tuple(pg for statement in statements for pg in to_postgres(statement)))
    for name, statements in MIGRATIONS
)
"""The Postgres form of every migration, same names, same order."""
