"""The `nightschool` command as a user starts it: the installed console script, a subprocess."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

SCRIPT = Path(sys.executable).with_name("nightschool")
needs_bwrap = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap not installed")
WRONG = "```python\nprint('I did not read the task')\n```"


def nightschool(
    *args: str,
    home: Path,
    timeout: float = 600,
    env_extra: dict[str, str] | None = None,
    **kw: object,
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NIGHTSCHOOL_HOME": str(home), "COLUMNS": "160", **(env_extra or {})}
    return subprocess.run(
        [str(SCRIPT), *args], capture_output=True, text=True, env=env, timeout=timeout, **kw
    )  # type: ignore[call-overload]


def db_rows(home: Path, sql: str) -> list[tuple[object, ...]]:
    conn = sqlite3.connect(home / "nightschool.db")
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


def test_help_everywhere(tmp_path: Path) -> None:
    for args in ([], ["dream"], ["status"], ["trajectories"], ["trajectories", "export"]):
        result = nightschool(*args, "--help", home=tmp_path)
        assert result.returncode == 0, result.stderr
        assert "Usage" in result.stdout


def test_import_has_no_side_effects(tmp_path: Path) -> None:
    home = tmp_path / "untouched"
    code = "import nightschool, nightschool.cli, nightschool.store, nightschool.dream"
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={**os.environ, "NIGHTSCHOOL_HOME": str(home)},
    )
    assert result.returncode == 0 and result.stdout == "" and result.stderr == ""
    assert not home.exists()


def test_status_on_empty_home(tmp_path: Path) -> None:
    result = nightschool("status", home=tmp_path / "h")
    assert result.returncode == 0 and "no database yet" in result.stdout


@needs_bwrap
def test_unreachable_server_clear_error_nothing_written(tmp_path: Path) -> None:
    home = tmp_path / "h"
    result = nightschool(
        "dream", "--base-url", "http://127.0.0.1:9/v1", "--model", "x", home=home, timeout=120
    )
    assert result.returncode == 3, result.stderr
    assert "127.0.0.1:9" in result.stderr and "Traceback" not in result.stderr
    assert not (home / "nightschool.db").exists()


def test_corrupt_database_clear_error(tmp_path: Path) -> None:
    home = tmp_path / "h"
    home.mkdir()
    (home / "nightschool.db").write_bytes(b"garbage" * 1000)
    result = nightschool("status", home=home)
    assert result.returncode == 4
    assert "not a usable nightschool database" in result.stderr and "Traceback" not in result.stderr


def test_bad_flags_are_usage_errors(tmp_path: Path) -> None:
    assert nightschool("dream", "--cycles", "0", home=tmp_path).returncode == 2
    for share in ("0", "1.5", "a quarter"):
        assert nightschool("dream", "--verify-share", share, home=tmp_path).returncode == 2
    bad = nightschool("trajectories", "export", "--since", "yesterday-ish", home=tmp_path)
    assert bad.returncode == 2


LESSON = """TRIGGER: a task asks to aggregate rows from a delimited text file
ANTI-PATTERN: splitting each line on commas by hand, which breaks on quoted fields
CORRECT PATTERN: read the file with the csv module and convert numbers explicitly
DOMAINS: data_analysis, python_general
CONFIDENCE: 0.8
"""


@needs_bwrap
def test_dream_lets_candidates_wait_by_default_and_the_next_dream_verifies_them(
    tmp_path: Path,
    openai_stub,  # type: ignore[no-untyped-def]
) -> None:
    home = tmp_path / "h"

    def reply(messages: list[dict[str, str]]) -> str:
        return LESSON if "TRIGGER:" in messages[-1]["content"] else WRONG

    def verifications() -> int:
        sql = "SELECT COUNT(*) FROM trajectories WHERE task_kind = 'verification'"
        return int(db_rows(home, sql)[0][0])

    with openai_stub(reply) as base_url:
        model = ("--base-url", base_url, "--model", "stub")
        first = nightschool(
            "dream", "--cycles", "2", "--seed", "3", "--cluster", "data_analysis", *model,
            home=home,
        )  # fmt: skip
        assert first.returncode == 0, first.stderr
        # the default share is 25%, and a stub's cycle takes seconds: no comparison (about
        # 15 s each) fits a quarter of it, so both candidates wait and are kept
        assert first.stderr.count("lesson candidate waits") == 2, first.stderr
        assert "(0%; share 25%), 0 comparison(s)" in first.stdout
        assert "kept for the next dream: 2 lesson candidate(s) (not shown until verified)" in (
            first.stdout
        )
        assert db_rows(home, "SELECT COUNT(*) FROM pending_lessons") == [(2,)]
        status = nightschool("status", home=home)
        said = "playbook 0 lessons (0 verified), 0 skills (0 verified) · 0 retracted · 2 lesson"
        assert f"{said} candidate(s) waiting for verification" in status.stdout, status.stdout
        assert db_rows(home, "SELECT COUNT(*) FROM lessons") == [(0,)] and verifications() == 0

        later = nightschool(
            "dream", "--cycles", "1", "--seed", "4", "--cluster", "data_analysis",
            "--verify-share", "1", *model, home=home,
        )  # fmt: skip
    assert later.returncode == 0, later.stderr
    assert "3 comparison(s); 2 waiting candidate(s) taken over from earlier dreams" in (
        later.stdout
    ), later.stdout
    assert "still waiting" not in later.stdout and "None" not in later.stderr
    assert db_rows(home, "SELECT COUNT(*) FROM pending_lessons") == [(0,)]
    assert "waiting for verification" not in nightschool("status", home=home).stdout
    # the stub never solves, so no lesson helps: compared, refused, not kept
    assert verifications() > 0 and db_rows(home, "SELECT COUNT(*) FROM lessons") == [(0,)], (
        later.stdout + later.stderr
    )


@needs_bwrap
def test_dream_against_http_server_then_status_and_export(tmp_path: Path, openai_stub) -> None:  # type: ignore[no-untyped-def]
    home = tmp_path / "h"
    with openai_stub(lambda _messages: WRONG) as base_url:
        result = nightschool(
            "dream",
            "--cycles",
            "2",
            "--seed",
            "3",
            "--base-url",
            base_url,
            "--model",
            "stub",
            home=home,
        )
    assert result.returncode == 0, result.stderr
    assert "dream summary" in result.stdout and "failed" in result.stderr
    assert db_rows(home, "SELECT COUNT(*), SUM(outcome = 'failed') FROM trajectories") == [(2, 2)]
    assert db_rows(home, "SELECT COUNT(*) FROM frontier_runs") == [(2,)]
    status = nightschool("status", home=home)
    assert status.returncode == 0 and "frontier" in status.stdout
    out = tmp_path / "export.jsonl"
    export = nightschool("trajectories", "export", "--format", "jsonl", "-o", str(out), home=home)
    assert export.returncode == 0, export.stderr
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(lines) == 2 and all(rec["format_version"] == 1 for rec in lines)
    assert all(len(rec["tool_calls"]) == 3 for rec in lines)
    future = nightschool("trajectories", "export", "--since", "2999-01-01", home=home)
    assert future.returncode == 0 and future.stdout == ""


@needs_bwrap
@pytest.mark.parametrize("lessons", ["--no-lessons", "--lessons"])
def test_ctrl_c_mid_cycle_keeps_store_consistent(
    tmp_path: Path, openai_stub: Callable[..., Any], interrupt: Callable[..., str], lessons: str
) -> None:
    home = tmp_path / "h"
    with openai_stub(lambda _messages: WRONG, delay_s=0.4) as base_url:
        env = {**os.environ, "NIGHTSCHOOL_HOME": str(home), "PYTHONFAULTHANDLER": "1"}
        proc = subprocess.Popen(
            [
                str(SCRIPT),
                "dream",
                "--cycles",
                "50",
                lessons,
                "--base-url",
                base_url,
                "--model",
                "stub",
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            time.sleep(0.3)
            try:  # the database may still be being created and migrated
                if db_rows(home, "SELECT COUNT(*) FROM frontier_runs")[0][0] >= 1:
                    break
            except sqlite3.Error:
                continue
        time.sleep(0.7)  # inside the next cycle
        stderr = interrupt(proc)
    assert proc.returncode == 130, stderr
    assert "interrupted" in stderr and "Traceback" not in stderr
    assert db_rows(home, "PRAGMA integrity_check") == [("ok",)]
    trajectories = db_rows(home, "SELECT id FROM trajectories ORDER BY id")
    runs = db_rows(home, "SELECT trajectory_id FROM frontier_runs ORDER BY trajectory_id")
    assert trajectories == runs and len(trajectories) >= 1  # every cycle complete, none half


@needs_bwrap
@pytest.mark.e2e
def test_dream_on_embedded_model_end_to_end(tmp_path: Path) -> None:
    """The README's main job: a real dream cycle, embedded model, real sandbox, real database."""
    home = tmp_path / "h"
    # 256 tokens per attempt bounds the run (SmolLM2 tends to ramble to the cap).
    result = nightschool(
        "dream",
        "--cycles",
        "1",
        "--seed",
        "11",
        "--verify-k",
        "2",  # 2 fresh renderings per arm: the path, at a third of the solves
        "--verify-share",
        "1",  # verified at once, not left waiting for a later dream
        "--cluster",
        "python_general",
        home=home,
        env_extra={"NIGHTSCHOOL_MAX_TOKENS": "256"},
    )
    assert result.returncode == 0, result.stderr
    assert "dream summary" in result.stdout and "python_general" in result.stdout
    rows = db_rows(home, "SELECT record FROM trajectories WHERE task_kind = 'selfplay'")
    assert len(rows) == 1
    record = json.loads(str(rows[0][0]))
    assert record["model"] == "smollm2-135m"
    checks = db_rows(home, "SELECT COUNT(*) FROM trajectories WHERE task_kind = 'verification'")
    skills = db_rows(home, "SELECT source_trajectory_id, verified, extra FROM lessons")
    if record["outcome"] == "passed":  # a pass becomes a skill, checked with and without it
        [(source, verified, extra)] = skills
        comparison = json.loads(str(extra))["verification"]["comparison"]
        assert source == record["id"] and comparison["k"] == 2
        assert bool(verified) == comparison["promote"]
        assert checks == [(4,)] and "fresh renderings with it" in result.stdout
    else:
        assert checks == [(0,)] or skills == []
    assert record["task_kind"] == "selfplay" and record["cluster"] == "python_general"
    assert record["outcome"] in ("passed", "failed")
    assert 1 <= len(record["tool_calls"]) <= 3 and record["tokens_out"] > 0
    assert record["final_response"]
    assert record["extra"]["sandboxed"] is True
    [(passed, attempts)] = db_rows(home, "SELECT passed, attempts FROM frontier_runs")
    assert attempts == len(record["tool_calls"])
    assert bool(passed) == (record["outcome"] == "passed")
