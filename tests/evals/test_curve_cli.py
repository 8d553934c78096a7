"""`nightschool eval learning-curve` as a user runs it: Ctrl-C, then `--resume`.

The console script in a subprocess, the real sandbox and SQLite, a loopback
OpenAI-compatible stub as the model (it answers every task with a program that
prints the wrong thing, so nothing is learned and the run is quick).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from tests.evals._cli import SCRIPT, start_until

needs_bwrap = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap not installed")
ARGS = [
    "eval", "learning-curve", "--tiers", "starter", "--per-cell", "1", "--checkpoints", "1",
    "--cycles", "2", "--ablation", "none", "--verify-k", "0",
]  # fmt: skip
ITEMS = 16  # 8 clusters x 1 tier x 1 per cell, in each of sets (a) and (b)


def _wrong(messages: list[dict[str, Any]]) -> str:
    return "```python\nprint('no idea')\n```"


def _run(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NIGHTSCHOOL_HOME": str(home), "COLUMNS": "200"}
    return subprocess.run(
        [str(SCRIPT), *args], capture_output=True, text=True, env=env, timeout=900
    )


def _events(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (out / "journal.jsonl").read_text().splitlines()]


@needs_bwrap
def test_ctrl_c_keeps_the_journal_and_resume_finishes_the_curve(
    tmp_path: Path, openai_stub: Callable[..., Any], interrupt: Callable[..., str]
) -> None:
    home, out = tmp_path / "home", tmp_path / "curve"
    args = [*ARGS, "--out", str(out)]
    with openai_stub(_wrong, delay_s=0.2) as url:
        proc = start_until([*args, "--base-url", url], home, out / "journal.jsonl", 3, 300)
        try:
            stderr = interrupt(proc)
        finally:
            if proc.poll() is None:
                proc.kill()
        assert proc.returncode == 130, stderr
        assert "--resume" in stderr and "journal.jsonl" in stderr
        kept = _events(out)
        assert 3 <= len(kept) < ITEMS  # still measuring the start when interrupted

        again = _run(home, *args, "--base-url", url)
        assert again.returncode == 2 and "already holds a learning-curve run" in again.stderr
        changed = [*ARGS]
        changed[ARGS.index("--per-cell") + 1] = "2"
        other = _run(home, *changed, "--out", str(out), "--base-url", url, "--resume")
        assert other.returncode == 2 and "other settings (per_cell)" in other.stderr

        resumed = _run(home, *args, "--base-url", url, "--resume")
    assert resumed.returncode == 0, resumed.stderr
    assert f"{len(kept)} item(s) measured earlier" in resumed.stderr
    events = _events(out)
    assert events[: len(kept)] == kept  # what was kept is never rewritten
    items = [(e["checkpoint"], e["arm"], e["result"]["task_id"]) for e in events
             if e["event"] == "item"]  # fmt: skip
    assert len(items) == len(set(items)) == 2 * ITEMS  # the start, then the `both` arm
    assert [e["event"] for e in events].count("cycle") == 2
    assert (out / "curve.csv").exists() and (out / "verdicts.json").exists()
    meta = json.loads((out / "meta.json").read_text())
    assert meta["per_cell"] == 1 and meta["base_url"] == url


def test_resume_with_nothing_to_resume_is_a_usage_error(tmp_path: Path) -> None:
    done = _run(tmp_path / "home", *ARGS, "--out", str(tmp_path / "none"), "--resume")
    assert done.returncode == 2 and "nothing to resume" in done.stderr
