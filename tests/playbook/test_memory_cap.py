"""The playbook's size cap has a default and a user setting (issue 30, "Also from the audit")."""

from __future__ import annotations

import pytest
import typer
from typer.testing import CliRunner

from nightschool.config import Settings
from nightschool.errors import UserError
from nightschool.playbook import DEFAULT_MAX_ENTRIES, HashingEmbedder, MemoryConfig, SkillMemory
from nightschool.store import Store

ENV = "NIGHTSCHOOL_PLAYBOOK_MAX_ENTRIES"


def _lesson(memory: SkillMemory, noun: str) -> str:
    result = memory.learn(
        trigger=f"When painting {noun}",
        anti_pattern="",
        correct_pattern=f"paint {noun} slowly",
        domains=["algo"],
        source="manual",
    )
    assert result.status == "written", result
    return result.lesson_id or ""


def test_default_cap_is_enforced(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV, raising=False)
    assert MemoryConfig().max_lessons == DEFAULT_MAX_ENTRIES == 5_000
    memory = SkillMemory(store, HashingEmbedder())  # no config: the defaults and the settings
    assert memory.config.max_lessons == DEFAULT_MAX_ENTRIES
    filler = [
        {
            "id": f"L-{i:012x}",
            "trigger": f"When sorting record batch {i}",
            "correct_pattern": "sort them",
            "domains": ["algo"],
            "source": "manual",
            "confidence": 0.5,
        }
        for i in range(DEFAULT_MAX_ENTRIES)
    ]
    assert memory.restore(filler, batch_size=1_000) == DEFAULT_MAX_ENTRIES  # no cap on restore
    memory.set_verified(filler[0]["id"], True, {})  # the least recently touched is now verified
    assert memory.archived() == []  # at the cap: nothing removed
    new = _lesson(memory, "lighthouses")
    assert memory.count() == DEFAULT_MAX_ENTRIES  # one over the cap: one unverified entry goes
    [gone] = memory.archived()
    assert gone.extra["archive"]["reason"] == "size_cap"
    assert gone.id not in (new, filler[0]["id"])  # never the new entry, never a verified one
    assert memory.get(new) is not None and memory.get(filler[0]["id"]) is not None


def test_user_set_cap_is_enforced(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV, "2")
    memory = SkillMemory(store, HashingEmbedder())
    assert memory.config.max_lessons == 2
    ids = [_lesson(memory, noun) for noun in ("apples", "bridges", "clouds")]
    assert memory.count() == 2
    assert [lesson.id for lesson in memory.archived()] == [ids[0]]
    # the settings object a command built (with its flags on top) decides, not the environment
    config = MemoryConfig.from_settings(Settings(playbook_max_entries=7))
    assert config.max_lessons == 7
    monkeypatch.delenv(ENV)
    assert MemoryConfig.from_settings().max_lessons == DEFAULT_MAX_ENTRIES


@pytest.mark.parametrize("value", ["0", "-3"])
def test_out_of_range_cap_is_a_clear_user_error(
    store: Store, monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    monkeypatch.setenv(ENV, value)
    with pytest.raises(UserError, match=f"{ENV} must be at least 1, got {value}"):
        SkillMemory(store, HashingEmbedder())
    with pytest.raises(UserError, match="must be at least 1"):
        Settings()
    with pytest.raises(ValueError, match="greater than or equal to 1"):
        MemoryConfig(max_lessons=0)


def test_dream_has_the_option_and_refuses_a_bad_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    from nightschool.cli import app

    runner = CliRunner()
    dream = typer.main.get_command(app).commands["dream"]  # type: ignore[attr-defined]
    [option] = [p for p in dream.params if p.name == "playbook_max_entries"]
    assert option.opts == ["--playbook-max-entries"]
    assert ENV in option.help and "5,000" in option.help  # what --help shows
    flag = runner.invoke(app, ["dream", "--playbook-max-entries", "0"])
    assert flag.exit_code == 2 and "--playbook-max-entries" in flag.output
    monkeypatch.setenv(ENV, "0")
    env = runner.invoke(app, ["dream"])  # refused before any model or database is opened
    assert env.exit_code == 2
    assert f"{ENV} must be at least 1, got 0" in env.output
