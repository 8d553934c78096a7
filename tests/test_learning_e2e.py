"""Learning from failure end to end, as a user runs it, on the real parts.

A real failure (embedded SmolLM2 in the bubblewrap sandbox) → `nightschool
reflect` (the embedded model reflects; its reply is grammar-constrained) → a
lesson in the playbook → a similar, unseen challenge retrieves it and shows it
in the solver's prompt → `nightschool lessons retract --trajectory` removes it.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from nightschool.challenges import templates

SCRIPT = Path(sys.executable).with_name("nightschool")
CLUSTER = "data_analysis"

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap not installed"),
]


def run(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "NIGHTSCHOOL_HOME": str(home),
        "COLUMNS": "200",
        "NIGHTSCHOOL_MAX_TOKENS": "200",
    }
    result = subprocess.run(
        [str(SCRIPT), *args], capture_output=True, text=True, env=env, timeout=900
    )
    assert result.returncode == 0, (args, result.stdout, result.stderr)
    return result


def rows(home: Path, sql: str) -> list[tuple[object, ...]]:
    conn = sqlite3.connect(home / "nightschool.db")
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


def two_seeds_same_template() -> tuple[int, int]:
    """Dream seeds that render the same template of CLUSTER with different data."""
    names = [t.name for t in templates(CLUSTER)]
    first = random.Random(1).choice(names)
    for seed in range(2, 200):
        if random.Random(seed).choice(names) == first:
            return 1, seed
    raise AssertionError("no second seed found")


def test_failure_becomes_lesson_that_is_shown_then_retracted(tmp_path: Path) -> None:
    home = tmp_path / "home"
    seed_a, seed_b = two_seeds_same_template()
    run(
        home,
        "dream",
        "--cycles",
        "1",
        "--cluster",
        CLUSTER,
        "--tier",
        "expert",
        "--seed",
        str(seed_a),
        "--no-lessons",
    )
    [(source_id, outcome, record)] = rows(home, "SELECT id, outcome, record FROM trajectories")
    assert outcome == "failed", "SmolLM2-135M was expected to fail an expert-tier challenge"
    template = json.loads(str(record))["extra"]["template"]

    reflected = run(home, "reflect", "--limit", "5")
    assert "reflected 1" in reflected.stdout, reflected.stdout + reflected.stderr
    [(_kind, reflected_from)] = rows(
        home,
        "SELECT task_kind, json_extract(record, '$.extra.reflected_from') FROM trajectories "
        "WHERE task_kind = 'reflection'",
    )
    assert reflected_from == source_id
    [(lesson_id, lesson_source)] = rows(home, "SELECT id, source_trajectory_id FROM lessons")
    assert lesson_source == source_id
    listing = run(home, "lessons", "list")
    assert str(lesson_id) in listing.stdout

    run(
        home,
        "dream",
        "--cycles",
        "1",
        "--cluster",
        CLUSTER,
        "--tier",
        "expert",
        "--seed",
        str(seed_b),
        # the lesson only has to be shown here: no extraction and verification of a new one
        "--verify-k",
        "0",
    )
    newest = rows(
        home,
        "SELECT record FROM trajectories WHERE task_kind = 'selfplay' "
        "ORDER BY timestamp DESC LIMIT 1",
    )
    second = json.loads(str(newest[0][0]))
    assert second["extra"]["template"] == template
    assert second["extra"]["challenge_hash"] != json.loads(str(record))["extra"]["challenge_hash"]
    assert lesson_id in second["extra"]["lessons_shown"]
    assert (
        "### SKILL PLAYBOOK" in second["system_prompt"]
        and str(lesson_id) in second["system_prompt"]
    )
    [(shown,)] = rows(home, f"SELECT times_shown FROM lessons WHERE id = '{lesson_id}'")
    assert shown == 1

    retracted = run(home, "lessons", "retract", "--trajectory", str(source_id))
    assert "retracted 1 lesson" in retracted.stdout
    assert rows(home, f"SELECT COUNT(*) FROM lessons WHERE id = '{lesson_id}'") == [(0,)]
    assert rows(home, f"SELECT COUNT(*) FROM lessons_archive WHERE id = '{lesson_id}'") == [(1,)]
    probe = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from pathlib import Path\n"
            "from nightschool.store import Store\nfrom nightschool.playbook import SkillMemory\n"
            "s = Store.open(Path(sys.argv[1]))\n"
            "print([r.lesson.id for r in SkillMemory(s).retrieve(sys.argv[2], k=5)])",
            str(home / "nightschool.db"),
            second["user_request"],
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert probe.returncode == 0, probe.stderr
    assert probe.stdout.strip() == "[]"
