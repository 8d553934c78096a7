"""An append-only registry of what is live: the one type behind strategy champions and prompts.

A registry table holds one row per change of what is live, never updated or
deleted, so its history is complete. Rows have three kinds:

* `promotion`: something the promotion gate promoted; its row id is the id of
  what it made live;
* `rollback`: re-activates an earlier promotion (`restores` = its id);
* `baseline`: back to the built-in behaviour (nothing registered is live).

The live id is the latest row's: a promotion's own, a rollback's `restores`,
None after `baseline`. `previous` on every row is the id live just before it
was written, so repeated rollbacks walk back through the promotions.

A registry may be partitioned (the prompts' `slot` column): then each
partition has its own live id and history. `promote` writes a promotion only if
what the gate compared against is still live, checked in the same transaction
(a promotion never replaces something it did not beat).

Users: `nightschool.strategies.champions` (table `strategy_champions`, not
partitioned) and `nightschool.prompts.registry` (table `prompts`, by `slot`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Generic, Literal, Protocol, TypeVar

if TYPE_CHECKING:
    from nightschool.store import Store

Kind = Literal["promotion", "rollback", "baseline"]
"""A registry row's kind."""

JSON_COLUMNS = frozenset({"lineage", "verdict", "record"})
"""Columns stored as JSON text (None stays NULL)."""


class RegistryRow(Protocol):
    """What every registry entry type has (`ChampionEntry`, `PromptEntry`)."""

    @property
    def id(self) -> int:
        """The row id."""
        ...

    @property
    def kind(self) -> Kind:
        """`promotion`, `rollback` or `baseline`."""
        ...

    @property
    def restores(self) -> int | None:
        """For a rollback, the id it re-activates; else None."""
        ...

    @property
    def previous(self) -> int | None:
        """The id live just before this row was written (None: nothing)."""
        ...


E = TypeVar("E", bound=RegistryRow)


def live_id(entry: RegistryRow) -> int | None:
    """The id `entry` makes live: its own (promotion), `restores` (rollback), or None (baseline)."""
    if entry.kind == "promotion":
        return entry.id
    return entry.restores if entry.kind == "rollback" else None


@dataclass(frozen=True)
class AppendOnlyRegistry(Generic[E]):
    """One registry table: read its rows as entries, find what is live, append rows.

    Attributes:
        table: the table (columns `id`, `timestamp`, then `columns`).
        columns: the other columns, in the order `entry` reads them after id and timestamp.
        entry: (id, timestamp, *columns values, JSON decoded) -> an entry.
        missing: the error for an unknown row id (a `UserError` subclass).
        partition: the column that splits the registry (`slot`), or None.
    """

    table: str
    columns: tuple[str, ...]
    entry: Callable[..., E]
    missing: Callable[[int], Exception]
    partition: str | None = None

    def _select(self) -> str:
        return f"SELECT id, timestamp, {', '.join(self.columns)} FROM {self.table}"

    def _entry(self, row: Sequence[Any]) -> E:
        values = {
            name: (json.loads(value) if name in JSON_COLUMNS and value is not None else value)
            for name, value in zip(self.columns, row[2:], strict=True)
        }
        stamp = datetime.fromtimestamp(float(row[1]), UTC)
        return self.entry(id=int(row[0]), timestamp=stamp, **values)

    def _where(self, key: str | None) -> tuple[str, tuple[Any, ...]]:
        if self.partition is None or key is None:
            return "", ()
        return f"WHERE {self.partition} = ?", (key,)

    def get(self, store: Store, entry_id: int) -> E:
        """The row `entry_id`.

        Raises:
            the `missing` error: there is no such row.
        """
        rows = store.query(f"{self._select()} WHERE id = ?", (entry_id,))
        if not rows:
            raise self.missing(entry_id)
        return self._entry(rows[0])

    def where(self, store: Store, condition: str, params: Sequence[Any] = ()) -> list[E]:
        """The rows matching an SQL `condition` on the table's columns, oldest first."""
        rows = store.query(f"{self._select()} WHERE {condition} ORDER BY id", tuple(params))
        return [self._entry(r) for r in rows]

    def history(self, store: Store, key: str | None = None, *, limit: int | None = None) -> list[E]:
        """Every row (of partition `key`, or all), oldest first; the last `limit` when given."""
        where, params = self._where(key)
        if limit is None:
            rows = store.query(f"{self._select()} {where} ORDER BY id", params)
        else:
            rows = store.query(
                f"{self._select()} {where} ORDER BY id DESC LIMIT ?", (*params, limit)
            )[::-1]
        return [self._entry(r) for r in rows]

    def current(self, store: Store, key: str | None = None) -> E | None:
        """The live `promotion` row (of partition `key`), or None: nothing registered is live."""
        where, params = self._where(key)
        rows = store.query(f"{self._select()} {where} ORDER BY id DESC LIMIT 1", params)
        latest = self._entry(rows[0]) if rows else None
        if latest is None:
            return None
        live = live_id(latest)
        if live is None:
            return None
        return latest if latest.kind == "promotion" else self.get(store, live)

    def append(self, store: Store, **values: Any) -> E:
        """Append one row (`kind`, `previous` and any other columns; the rest take their defaults).

        JSON columns are encoded here (lists, dicts; `default=str` for the odd value).
        """
        names = list(values)
        encoded = [
            json.dumps(values[n], default=str)
            if n in JSON_COLUMNS and values[n] is not None
            else values[n]
            for n in names
        ]
        marks = ", ".join("?" for _ in range(len(names) + 1))
        with store.transaction() as conn:
            cursor = conn.execute(
                f"INSERT INTO {self.table}(timestamp, {', '.join(names)}) VALUES ({marks})",
                (datetime.now(UTC).timestamp(), *encoded),
            )
            entry_id = int(cursor.lastrowid or 0)
        return self.get(store, entry_id)

    def promote(
        self,
        store: Store,
        key: str | None,
        *,
        proven_against: int | None,
        stale: Callable[[int | None, int | None], Exception],
        **values: Any,
    ) -> E:
        """Append a `promotion` row if `proven_against` is still live, in one transaction.

        Args:
            store: the open database.
            key: the partition (None when the registry is not partitioned).
            proven_against: the live id the gate compared against (None: the built-in one).
            stale: (expected, actual) -> the error raised when something else is live now.
            values: the row's other columns.

        Raises:
            the `stale` error: `proven_against` is no longer live.
        """
        with store.transaction():
            now = self.current(store, key)
            now_id = None if now is None else now.id
            if proven_against != now_id:
                raise stale(proven_against, now_id)
            return self.append(store, kind="promotion", previous=now_id, **self._key(key), **values)

    def restore(self, store: Store, key: str | None, target: int | None, **values: Any) -> E:
        """Make `target` (a live id, None: nothing) live again: a `rollback` or `baseline` row.

        Args:
            store: the open database.
            key: the partition (None when not partitioned).
            target: the id to re-activate (checked by the caller), or None for a baseline.
            values: extra columns for the row (`note`; the restored row's copied fields).
        """
        with store.transaction():
            now = self.current(store, key)
            now_id = None if now is None else now.id
            kind: Kind = "baseline" if target is None else "rollback"
            return self.append(
                store, kind=kind, previous=now_id, restores=target, **self._key(key), **values
            )

    def _key(self, key: str | None) -> dict[str, Any]:
        return {} if self.partition is None or key is None else {self.partition: key}


def _encoded(column: str, value: Any) -> Any:
    """A column's value as stored: JSON text for `JSON_COLUMNS` (None stays NULL)."""
    if column in JSON_COLUMNS and value is not None:
        return json.dumps(value, default=str)
    return value
