"""Append-only JSON-lines files that a crash or kill -9 cannot corrupt.

A long measurement (a stream, a learning curve) writes one line per finished
answer and fsyncs it, so an interruption loses at most the line being written.
A line cut by a crash has no newline; `read_lines` drops that torn tail from
the file itself, so the next `append_line` starts on a fresh line (appending
after the fragment would glue two records into one unreadable line in the
middle of the file).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from nightschool.errors import UserError

__all__ = ["append_line", "read_lines"]


def read_lines(path: Path) -> list[dict[str, Any]]:
    """The records of `path`, one JSON object per line; [] when it does not exist.

    A last line without its newline (a write cut by a crash) is dropped and
    cut from the file. Blank lines are skipped.

    Raises:
        UserError: a complete line is not a JSON object (the file was edited
            or is not one of ours), naming the file and line.
    """
    if not path.exists():
        return []
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise UserError(f"{path} is unreadable ({exc})") from exc
    if data and not data.endswith(b"\n"):
        keep = data.rfind(b"\n") + 1
        with path.open("r+b") as handle:
            handle.truncate(keep)
            handle.flush()
            os.fsync(handle.fileno())
        data = data[:keep]
    records: list[dict[str, Any]] = []
    for number, line in enumerate(data.decode("utf-8", errors="replace").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError as exc:
            raise UserError(f"{path} line {number} is unreadable ({exc})") from exc
        if not isinstance(record, dict):
            raise UserError(f"{path} line {number} is not a JSON object")
        records.append(record)
    return records


def append_line(path: Path, record: dict[str, Any]) -> None:
    """Append `record` as one JSON line and fsync it (sorted keys)."""
    with path.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(record, sort_keys=True) + "\n")
        handle.flush()
        os.fsync(handle.fileno())
