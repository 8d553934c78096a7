"""Append-only JSON lines: a torn last line is dropped and never glued to the next record."""

from __future__ import annotations

from pathlib import Path

import pytest

from nightschool.errors import UserError
from nightschool.evals._jsonl import append_line, read_lines


def test_a_missing_file_is_empty(tmp_path: Path) -> None:
    assert read_lines(tmp_path / "none.jsonl") == []


def test_a_torn_last_line_is_cut_so_the_next_append_starts_clean(tmp_path: Path) -> None:
    path = tmp_path / "rows.jsonl"
    append_line(path, {"n": 1})
    append_line(path, {"n": 2})
    with path.open("a", encoding="utf-8") as handle:
        handle.write('{"n": 3, "half')  # killed mid-write
    assert read_lines(path) == [{"n": 1}, {"n": 2}]
    append_line(path, {"n": 4})
    assert read_lines(path) == [{"n": 1}, {"n": 2}, {"n": 4}]
    assert path.read_text(encoding="utf-8").count("\n") == 3


def test_a_broken_line_inside_the_file_is_an_error_not_a_silent_loss(tmp_path: Path) -> None:
    path = tmp_path / "rows.jsonl"
    path.write_text('{"n": 1}\nnot json\n{"n": 3}\n', encoding="utf-8")
    with pytest.raises(UserError, match="line 2 is unreadable"):
        read_lines(path)
    path.write_text('{"n": 1}\n[1, 2]\n', encoding="utf-8")
    with pytest.raises(UserError, match="line 2 is not a JSON object"):
        read_lines(path)
