"""Persistence: one SQLite database with named, append-only migrations."""

from nightschool.store._migrations import MIGRATIONS
from nightschool.store._store import BUSY_TIMEOUT_MS, Store

__all__ = ["BUSY_TIMEOUT_MS", "MIGRATIONS", "Store"]
