"""Shared by the resumable benches: rows appended to a JSONL file, one per answer.

A row is written (flushed and fsynced) as soon as its answer is scored, so a
bench killed mid-run loses at most the answer in flight; run the same command
again and it asks only what has no row yet.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Hashable
from pathlib import Path
from typing import Any


def read_rows(path: Path, key: Callable[[dict[str, Any]], Hashable]) -> dict[Any, dict[str, Any]]:
    """Rows written so far, by `key(row)` (a line cut by a crash is dropped: asked again)."""
    rows: dict[Any, dict[str, Any]] = {}
    if path.exists():
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                row = json.loads(line)
            except ValueError:
                continue
            rows[key(row)] = row
    return rows


def append_row(path: Path, row: dict[str, Any]) -> None:
    """Append one row and make it durable before returning."""
    with path.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(row, sort_keys=True) + "\n")
        handle.flush()
        os.fsync(handle.fileno())
