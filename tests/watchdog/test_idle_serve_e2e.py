"""`nightschool serve` on real parts goes idle, dreams, gives way to a user turn, and keeps
its phase anchors across a restart (issue 10, part 5).

Real parts: the `nightschool` CLI in a subprocess, the embedded model (the suite's
smollm2-135m), bubblewrap, SQLite, httpx over a real socket. The clock is scaled
with NIGHTSCHOOL_IDLE_SCALE=0.02: the journal drain waits 2.4 s of idleness, the
dream 12 s, and the dream's 30-minute cooldown is 36 s.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

pytestmark = pytest.mark.e2e

NIGHTSCHOOL = Path(sys.executable).parent / "nightschool"
SCALE = 0.02


def _env() -> dict[str, str]:
    return {"NIGHTSCHOOL_IDLE_SCALE": str(SCALE), "NIGHTSCHOOL_MAX_TOKENS": "300"}


def _rows(db: Path) -> list[tuple[float, str, str, str]]:
    if not db.exists():
        return []
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=10)
    try:
        return conn.execute(
            "SELECT timestamp, phase, run_id, status FROM phase_runs ORDER BY id"
        ).fetchall()
    except sqlite3.OperationalError:  # not migrated yet
        return []
    finally:
        conn.close()


def test_serve_dreams_when_idle_and_a_user_turn_preempts_it(
    tmp_path: Path, serve_process: Callable[..., Any]
) -> None:
    home = tmp_path / "home"
    db = home / "nightschool.db"
    serve = serve_process(home, _env())
    try:
        base_url = serve.base_url()
        db = next(home.rglob("*.db"), db)

        def dream_running() -> tuple[float, str] | None:
            rows = _rows(db)
            started = [r for r in rows if r[1] == "dream" and r[3] == "started"]
            if not started:
                return None
            run_id = started[-1][2]
            closed = [r for r in rows if r[2] == run_id and r[3] != "started"]
            return None if closed else (started[-1][0], run_id)

        _, run_id = serve.wait_for(dream_running, 150, "the dream phase to start")
        order = list(dict.fromkeys(r[1] for r in _rows(db)))
        assert order == ["journal", "dream"], order
        time.sleep(2.0)  # the dream is deep in a model call now
        sent = time.time()
        response = httpx.post(
            f"{base_url}/chat/completions",
            json={"model": "nightschool", "messages": [{"role": "user", "content": "Say hi."}]},
            timeout=300,
        )
        assert response.status_code == 200, response.text

        def dream_closed() -> tuple[float, str] | None:
            closed = [r for r in _rows(db) if r[2] == run_id and r[3] != "started"]
            return (closed[0][0], closed[0][3]) if closed else None

        closed_at, status = serve.wait_for(dream_closed, 30, "the dream phase to close")
        assert status == "interrupted"
        assert closed_at - sent < 1.0, f"the dream gave way {closed_at - sent:.2f} s after the turn"
    finally:
        assert serve.stop(timeout_s=120) == 0
    interrupted_at = closed_at

    # restart: the dream's anchor (36 s cooldown, scaled) is read back from the database
    serve = serve_process(home, _env())
    try:
        serve.base_url()
        restarted = time.time()

        def dream_again() -> float | None:
            later = [r for r in _rows(db) if r[1] == "dream" and r[0] > interrupted_at]
            return later[0][0] if later else None

        again = serve.wait_for(dream_again, 150, "the dream phase to fire again")
        cooldown = 1800 * SCALE
        assert again - interrupted_at >= cooldown - 0.5, (again - interrupted_at, restarted)
        journal_after = [r for r in _rows(db) if r[1] == "journal" and r[0] > restarted]
        assert journal_after, "the journal drain did not run after the restart"
    finally:
        assert serve.stop(timeout_s=120) == 0
    status = subprocess.run(
        [str(NIGHTSCHOOL), "status"],
        env={
            **os.environ,
            "NIGHTSCHOOL_HOME": str(home),
            "NIGHTSCHOOL_IDLE_SCALE": str(SCALE),
            "COLUMNS": "250",
        },
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert status.returncode == 0, status.stderr
    assert "idle phases" in status.stdout
    dream_row = next(line for line in status.stdout.splitlines() if "│ dream" in line)
    assert "ago" in dream_row, dream_row  # its last run is shown
    diary = subprocess.run(
        [str(NIGHTSCHOOL), "diary", "--json"],
        env={**os.environ, "NIGHTSCHOOL_HOME": str(home)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert diary.returncode == 0, diary.stderr
    rows = [json.loads(line) for line in diary.stdout.splitlines() if line.strip()]
    entries = [r for r in rows if r.get("kind") == "entry"]
    assert any(r.get("phase") == "dream" for r in entries), rows
    first_person = re.compile(r"\b(I|my|me)\b", re.IGNORECASE)
    texts = [r["text"] for r in entries]
    assert all(first_person.search(t) for t in texts), texts
