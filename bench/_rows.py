"""Shared by the resumable benches: rows appended to a JSONL file, one per answer.

A row is written (flushed and fsynced) as soon as its answer is scored, so a
bench killed mid-run loses at most the answer in flight; run the same command
again and it asks only what has no row yet. The file handling is the
product's own (`nightschool.evals.read_lines` / `append_line`: a line torn by a
crash is cut from the file, so the next row starts on a line of its own).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from pathlib import Path
from typing import Any

from nightschool.evals import append_line, read_lines


def read_rows(path: Path, key: Callable[[dict[str, Any]], Hashable]) -> dict[Any, dict[str, Any]]:
    """Rows written so far, by `key(row)` (a line cut by a crash is dropped: asked again).

    Raises:
        UserError: a complete line is not a JSON object.
    """
    return {key(row): row for row in read_lines(path)}


def append_row(path: Path, row: dict[str, Any]) -> None:
    """Append one row and make it durable before returning."""
    append_line(path, row)
