"""Shared fixtures: an isolated NIGHTSCHOOL_HOME and a fresh database per test."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from nightschool.store import Store


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Never touch the user's real data dir or model server from a test."""
    home = tmp_path / "home"
    monkeypatch.setenv("NIGHTSCHOOL_HOME", str(home))
    for name in ("NIGHTSCHOOL_BASE_URL", "NIGHTSCHOOL_MODEL", "NIGHTSCHOOL_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    return home


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    with Store.open(tmp_path / "test.db") as opened:
        yield opened
