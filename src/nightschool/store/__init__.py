"""Persistence: one database (a SQLite file or a shared PostgreSQL) with named migrations."""

from nightschool.store._migrations import MIGRATIONS
from nightschool.store._store import BUSY_TIMEOUT_MS, Dialect, Store, redact_url

__all__ = ["BUSY_TIMEOUT_MS", "MIGRATIONS", "Dialect", "Store", "redact_url"]
