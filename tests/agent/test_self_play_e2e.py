"""Background self-play on real parts: `nightschool serve` practises on request, the user's
next message stops it, and `nightschool chat --server` shows what it did (issue 10, part 4).

Real parts: the `nightschool` CLI in subprocesses, the embedded model (the suite's
smollm2-135m), bubblewrap, SQLite, httpx over a real socket. The idle watchdog is
off (`--no-idle`), so every self-play row comes from the loop under test.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from nightschool.agent.self_play import SESSION_ID

pytestmark = pytest.mark.e2e

NIGHTSCHOOL = Path(sys.executable).parent / "nightschool"
ENV = {
    "NIGHTSCHOOL_IDLE_SCALE": "0.02",
    "NIGHTSCHOOL_MAX_TOKENS": "200",
    # the loop's verification (12 solves per new item) is not what this test is about
    "NIGHTSCHOOL_SELF_PLAY_VERIFY_K": "0",
}


def _self_play_cycles(db: Path) -> list[str]:
    """Ids of the stored self-play cycle trajectories, oldest first (reflections left out)."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=10)
    try:
        query = (
            "SELECT id FROM trajectories WHERE session_id = ? AND task_kind = 'selfplay' "
            "ORDER BY timestamp, rowid"
        )
        return [str(row[0]) for row in conn.execute(query, (SESSION_ID,))]
    finally:
        conn.close()


def _count(db: Path, task_kind: str) -> int:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=10)
    try:
        query = "SELECT COUNT(*) FROM trajectories WHERE task_kind = ?"
        return int(conn.execute(query, (task_kind,)).fetchone()[0])
    finally:
        conn.close()


def test_background_self_play_runs_until_the_next_message(
    tmp_path: Path, serve_process: Callable[..., Any]
) -> None:
    home = tmp_path / "home"
    serve = serve_process(home, ENV, ("--no-idle",))
    try:
        root = serve.base_url().removesuffix("/v1")
        with httpx.Client(base_url=root, timeout=300) as client:
            started = client.post("/admin/self-play", json={"max_cycles": 50})
            assert started.status_code == 200, started.text

            assert client.get("/admin/self-play").json()["verify_k"] == 0  # from the setting

            def runs() -> list[dict[str, Any]]:
                return list(client.get("/admin/self-play").json()["runs"])

            serve.wait_for(lambda: runs()[0]["cycles"] >= 1, 300, "a background cycle")
            sent = time.time()
            reply = client.post(
                "/v1/chat/completions",
                json={"model": "nightschool", "messages": [{"role": "user", "content": "Hi."}]},
            )
            assert reply.status_code == 200, reply.text
            (run,) = runs()
        assert run["state"] == "stopped", run
        assert "next message" in run["stop_reason"], run
        assert run["stopped_at"] - sent < 5.0, run  # it gave way during the user's turn
        db = next(home.rglob("*.db"))
        # The rule (`LoopRun.cycles`): a run counts exactly the cycles whose trajectory was
        # stored. A turn during a cycle's solve leaves nothing; one during its lesson or skill
        # follow-up (the failed attempt already stored) leaves the cycle counted, as it was.
        assert _self_play_cycles(db) == run["trajectory_ids"], run
        assert len(run["trajectory_ids"]) == run["cycles"]
        assert _count(db, "verification") == 0

        chat = subprocess.run(
            [str(NIGHTSCHOOL), "chat", "--server", f"{root}/v1"],
            input="/exit\n",
            env={**os.environ, "NIGHTSCHOOL_HOME": str(home), "COLUMNS": "200"},
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert chat.returncode == 0, chat.stderr
        assert "background self-play run 1 stopped" in chat.stdout, chat.stdout
        assert f"{run['cycles']} cycle(s)" in chat.stdout
    finally:
        assert serve.stop(timeout_s=120) == 0
