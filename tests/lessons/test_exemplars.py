"""Format exemplars: the agent's own solved functions from other tasks, never the nearest.

Real playbook and embedder (the production MiniLM and its relevance floor);
the skills are written directly, as the stream and the dream loop write them.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from tests._challenges import bare_challenge

from nightschool.challenges import Challenge
from nightschool.config import Settings
from nightschool.errors import UserError
from nightschool.lessons.skills import exemplars, learn_skill, recall, related_ids
from nightschool.playbook import MemoryConfig, SkillMemory, default_embedder
from nightschool.store import Store


def _task(template: str, prompt: str, *, cluster: str = "python_general") -> Challenge:
    return bare_challenge(template, prompt, cluster=cluster)


CELSIUS = _task(
    "python_general.celsius",
    "def to_fahrenheit(celsius: float) -> float:\n    Convert a temperature in degrees "
    "Celsius to degrees Fahrenheit.",
)
PALINDROME = _task(
    "python_general.palindrome",
    "def is_palindrome(text: str) -> bool:\n    Return True when the text reads the same "
    "backwards, ignoring case.",
)
ORDERS = _task(
    "sql.orders",
    "def orders_of(con, name: str) -> int:\n    Return how many orders the customer with this "
    "name placed, from the SQLite table orders.",
    cluster="sql",
)
WORD_COUNT = _task(
    "python_general.word_count",
    "def word_count(text: str) -> int:\n    Return the number of words in the text.",
)
ASKED = _task(
    "python_general.word_frequency",
    "def word_frequency(text: str) -> dict[str, int]:\n    Count how often each word occurs "
    "in the text and return a dict from word to count.",
)


@pytest.fixture
def memory(store: Store) -> Iterator[SkillMemory]:
    opened = SkillMemory(store, default_embedder())
    try:
        yield opened
    finally:
        opened.close()


def _learn(memory: SkillMemory, task: Challenge, code: str, *, verified: bool = True) -> str:
    result = learn_skill(memory, task, code, source_trajectory_id=f"T-{task.template}")
    assert result.status == "written" and result.lesson_id
    if verified:
        memory.set_verified(result.lesson_id, True, {"test": "set by hand"})
    return result.lesson_id


def test_exemplars_are_the_oldest_unrelated_solutions_of_the_same_cluster(
    memory: SkillMemory,
) -> None:
    celsius = _learn(
        memory, CELSIUS, "def to_fahrenheit(celsius):\n    return celsius * 9 / 5 + 32\n"
    )
    palindrome = _learn(
        memory,
        PALINDROME,
        "def is_palindrome(text):\n    t = text.lower()\n    return t == t[::-1]\n",
    )
    orders = _learn(
        memory,
        ORDERS,
        "def orders_of(con, name):\n    return con.execute('SELECT COUNT(*) FROM orders "
        "WHERE name = ?', (name,)).fetchone()[0]\n",
    )
    near = _learn(memory, WORD_COUNT, "def word_count(text):\n    return len(text.split())\n")
    related = related_ids(memory, ASKED.prompt)
    assert near in related  # the nearest: what retrieval would show, never an exemplar
    assert celsius not in related and palindrome not in related

    chosen = [s.id for s in exemplars(memory, ASKED, k=2)]
    assert chosen == [celsius, palindrome]  # oldest first; not the sql one, not the nearest
    assert orders not in [s.id for s in exemplars(memory, ASKED, k=5)]  # another cluster
    assert [s.id for s in exemplars(memory, ASKED, k=1)] == [celsius]
    assert exemplars(memory, ASKED, k=0) == [] and exemplars(None, ASKED, k=2) == []
    assert [s.id for s in exemplars(memory, ASKED, k=2, exclude_ids={celsius})] == [palindrome]
    # never its own template or task
    assert celsius not in [s.id for s in exemplars(memory, CELSIUS, k=5)]
    # verified_only skips what the gate has not verified; a harmful one is never shown
    memory.set_verified(celsius, False, {"test": "not promoted"})
    assert [s.id for s in exemplars(memory, ASKED, k=2, verified_only=True)] == [palindrome]
    memory.record_paired(palindrome, helped=0, harmed=2)
    assert [s.id for s in exemplars(memory, ASKED, k=2)] == [celsius]


def test_recall_shows_exemplars_only_when_no_skill_of_the_task_is_retrieved(
    memory: SkillMemory,
) -> None:
    celsius = _learn(
        memory, CELSIUS, "def to_fahrenheit(celsius):\n    return celsius * 9 / 5 + 32\n"
    )
    own = _learn(memory, WORD_COUNT, "def word_count(text):\n    return len(text.split())\n")
    asked_again = _task(WORD_COUNT.template, WORD_COUNT.prompt + "\n    Words are split on spaces.")
    # a skill of the task's own template wins: recall, not exemplars
    assert recall(memory, asked_again, exemplars_k=2).skill_ids == [own]
    # no skill of its template: the exemplar fills in, rendered as a worked example
    shown = recall(memory, ASKED, exemplars_k=2)
    assert shown.skill_ids == [celsius]
    assert "to_fahrenheit" in shown.skill_sections[0]
    # off by default, and off when skills are off
    assert recall(memory, ASKED).skill_ids == []
    assert recall(memory, ASKED, skills_k=0, exemplars_k=2).skill_ids == []


def test_exemplar_count_comes_from_settings_and_is_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NIGHTSCHOOL_EXEMPLARS", raising=False)
    assert MemoryConfig.from_settings().exemplars_k == 0
    monkeypatch.setenv("NIGHTSCHOOL_EXEMPLARS", "2")
    assert MemoryConfig.from_settings().exemplars_k == 2
    assert MemoryConfig.from_settings(Settings(exemplars=1)).exemplars_k == 1
    monkeypatch.setenv("NIGHTSCHOOL_EXEMPLARS", "9")
    with pytest.raises(UserError, match="NIGHTSCHOOL_EXEMPLARS"):
        MemoryConfig.from_settings()


@pytest.mark.parametrize("k", [0, 1])
def test_a_dream_cycle_is_shown_the_configured_exemplars(store: Store, k: int) -> None:
    import random
    import shutil

    from nightschool.dream import DreamLoop, FrontierTracker
    from nightschool.llm import ScriptedModel
    from nightschool.sandbox import Sandbox
    from nightschool.solver import Solver

    if shutil.which("bwrap") is None:
        pytest.skip("bubblewrap not installed")
    memory = SkillMemory(store, default_embedder(), config=MemoryConfig(exemplars_k=k))
    try:
        celsius = _learn(
            memory, CELSIUS, "def to_fahrenheit(celsius):\n    return celsius * 9 / 5 + 32\n"
        )
        model = ScriptedModel(lambda _messages: "```python\nprint('no idea')\n```")
        solver = Solver(model, Sandbox(), playbook=memory)
        loop = DreamLoop(store, solver, FrontierTracker(store), rng=random.Random(1))
        cycle = loop.run_cycle(cluster="python_general", tier="starter")
        system = model.calls[0].messages[0]["content"]
    finally:
        memory.close()
    if k:
        assert cycle.skills_shown == (celsius,)
        assert "to_fahrenheit" in system
    else:
        assert cycle.skills_shown == () and "to_fahrenheit" not in system


def test_dream_has_the_exemplars_option_and_refuses_a_bad_count(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import typer
    from typer.testing import CliRunner

    from nightschool.cli import app

    runner = CliRunner()
    dream = typer.main.get_command(app).commands["dream"]  # type: ignore[attr-defined]
    [option] = [p for p in dream.params if p.name == "exemplars"]
    assert option.opts == ["--exemplars"] and "NIGHTSCHOOL_EXEMPLARS" in option.help
    flag = runner.invoke(app, ["dream", "--exemplars", "6"])
    assert flag.exit_code == 2 and "--exemplars" in flag.output
    monkeypatch.setenv("NIGHTSCHOOL_EXEMPLARS", "7")
    env = runner.invoke(app, ["dream"])  # refused before any model or database is opened
    assert env.exit_code == 2 and "NIGHTSCHOOL_EXEMPLARS must be between 0 and 5" in env.output
