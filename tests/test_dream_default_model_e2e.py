"""The README's main job on the default model: `nightschool dream` with no model flag.

Qwen2.5-Coder-1.5B (assembled from its 22 packages), the bubblewrap sandbox and
the real database: one starter-tier cycle, a distinct-attempt episode with
rising temperature, kept as a skill with provenance when it passes. (One cycle,
not two: the second repeated the first's path and cost CI about 3.5 minutes.)
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(sys.executable).with_name("nightschool")

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap not installed"),
]


def test_dream_on_the_default_model(tmp_path: Path) -> None:
    home = tmp_path / "home"
    env = {**os.environ, "NIGHTSCHOOL_HOME": str(home), "COLUMNS": "200"}
    env.pop("NIGHTSCHOOL_MODEL", None)  # the default, as a new user runs it
    env["NIGHTSCHOOL_MAX_TOKENS"] = "320"
    result = subprocess.run(
        [str(SCRIPT), "dream", "--cycles", "1", "--cluster", "python_general", "--seed", "5",
         "--verify-k", "0"],
        capture_output=True, text=True, env=env, timeout=1500,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "assembling qwen2.5-coder-1.5b" in result.stderr
    assert "dream summary" in result.stdout
    conn = sqlite3.connect(home / "nightschool.db")
    try:
        records = [json.loads(r[0]) for r in conn.execute("SELECT record FROM trajectories")]
        skills = conn.execute(
            "SELECT source_trajectory_id, template, tier FROM lessons WHERE kind = 'skill'"
        ).fetchall()
    finally:
        conn.close()
    assert len(records) == 1
    for record in records:
        assert record["model"] == "qwen2.5-coder-1.5b" and record["task_kind"] == "selfplay"
        assert record["tier"] == "starter" and record["extra"]["sandboxed"] is True
        assert record["outcome"] in ("passed", "failed")
        extra = record["extra"]
        runs = [c for c in record["tool_calls"] if c.get("result") in ("passed", "failed")]
        codes = [c["arguments"]["code"] for c in runs]
        assert len(set(codes)) == len(codes) == extra["attempt_codes_distinct"]  # no reruns
        temperatures = extra["temperatures"]
        assert temperatures == sorted(temperatures) and len(temperatures) == extra["model_calls"]
    passed = {r["id"]: r for r in records if r["outcome"] == "passed"}
    # every pass became a skill (a repeated solution reinforces the first), nothing else did
    assert {s[0] for s in skills} <= set(passed) and bool(skills) == bool(passed)
    for _, template, tier in skills:
        assert template.startswith("python_general.") and tier == "starter"
