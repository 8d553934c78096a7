"""The kill -9 soak of concurrent writers (issue 29), small: real forked writers, real SIGKILLs.

The soak itself lives in `bench/bench_kill_soak.py` (the full run: 8 writers,
1,000 kills); these run it in-process with 4 writers and 40 kills on SQLite and
on the test Postgres server, and check that its checker does catch a loss.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from bench.bench_kill_soak import SoakResult, soak, trajectory_id


def _assert_clean(result: SoakResult) -> None:
    assert result.kills == 40
    assert not result.interrupted
    assert result.rows > 0
    assert result.lost == []
    assert result.doubled == []
    assert result.gaps == []
    assert result.writer_errors == []
    assert result.ok


@pytest.mark.e2e
def test_kill_soak_sqlite(tmp_path: Path) -> None:
    result = soak(writers=4, kills=40, workdir=tmp_path)
    _assert_clean(result)
    assert result.integrity == "ok"
    assert result.advisory_locks is None


@pytest.mark.e2e
def test_kill_soak_postgres(tmp_path: Path, postgres_url: str) -> None:
    result = soak(writers=4, kills=40, workdir=tmp_path, url=postgres_url)
    _assert_clean(result)
    assert result.advisory_locks == 0
    assert result.leftover_backends == 0
    assert result.integrity is None


@pytest.mark.e2e
def test_kill_soak_reports_a_journaled_id_missing_from_the_store(tmp_path: Path) -> None:
    # Writer 0's journal claims n = 0, 1, 2 committed, but nothing was stored:
    # it resumes at 3, so those three are lost and its stored n's start past a gap.
    (tmp_path / "writer-0.journal").write_text("0\n1\n2\n")
    result = soak(writers=2, kills=3, workdir=tmp_path)
    assert sorted(result.lost) == sorted(trajectory_id(0, n) for n in range(3))
    assert any("writer 0" in gap for gap in result.gaps)
    assert not result.ok
