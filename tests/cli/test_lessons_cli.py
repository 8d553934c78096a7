"""`nightschool lessons list | show` as a user runs them: helpful and harmful counts."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from nightschool.playbook import HashingEmbedder, SkillMemory
from nightschool.store import Store

SCRIPT = Path(sys.executable).with_name("nightschool")


def nightschool(*args: str, home: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NIGHTSCHOOL_HOME": str(home), "COLUMNS": "200"}
    return subprocess.run(
        [str(SCRIPT), *args], capture_output=True, text=True, env=env, timeout=120
    )


def test_list_and_show_the_paired_counts(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    with Store.open(home / "nightschool.db") as store:
        memory = SkillMemory(store, HashingEmbedder())
        kept = memory.learn(
            trigger="when a CSV has a header row",
            anti_pattern="",
            correct_pattern="skip it with next(reader)",
            domains=["data_analysis"],
            source="reflection",
        ).lesson_id
        hurt = memory.learn(
            trigger="when a shell loop reads file names",
            anti_pattern="",
            correct_pattern="split on spaces",
            domains=["bash"],
            source="reflection",
        ).lesson_id
        assert kept and hurt
        memory.record_paired(kept, 2, 1)
        memory.record_paired(hurt, 0, 1)
        memory.close()
    listed = nightschool("lessons", "list", home=home)
    assert listed.returncode == 0, listed.stderr
    assert "help/harm" in listed.stdout and "2/1" in listed.stdout and "0/1" in listed.stdout
    shown = nightschool("lessons", "show", hurt, home=home)
    assert shown.returncode == 0, shown.stderr
    assert "helpful 0, harmful 1 (shown to no one)" in shown.stdout
    fine = nightschool("lessons", "show", kept, home=home)
    assert "helpful 2, harmful 1," in fine.stdout and "shown to no one" not in fine.stdout
