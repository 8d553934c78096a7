"""The idle skills phase also verifies chat lessons on their own turn's examples.

Real parts: bubblewrap, SQLite (and Postgres), the playbook with a hashing
embedder; the model is scripted (it solves the request only when the lesson is shown).
"""

from __future__ import annotations

from typing import Any

from nightschool.llm import ScriptedModel
from nightschool.playbook import HashingEmbedder, SkillMemory
from nightschool.sandbox import Sandbox
from nightschool.store import Store
from nightschool.trajectory import Outcome, Trajectory
from nightschool.watchdog.work import NightschoolWork

REQUEST = (
    "Write a Python function count_evens(xs) that counts the even numbers of a list.\n"
    "assert count_evens([1, 2, 4]) == 2"
)
ADVICE = "test each element with x % 2 == 0 and count only those"
WRONG = "```python\ndef count_evens(xs):\n    return len(xs)\n```"
RIGHT = "```python\ndef count_evens(xs):\n    return sum(1 for x in xs if x % 2 == 0)\n```"


def reply(messages: list[dict[str, Any]]) -> str:
    return RIGHT if ADVICE in messages[0]["content"] else WRONG


def test_the_skills_phase_verifies_a_waiting_chat_lesson(store: Store) -> None:
    playbook = SkillMemory(store, HashingEmbedder())
    turn = store.append_trajectory(
        Trajectory(task_kind="chat", user_request=REQUEST, outcome=Outcome.FAILED)
    )
    learned = playbook.learn(
        trigger=REQUEST.splitlines()[0],
        anti_pattern="returning the list's length",
        correct_pattern=ADVICE,
        domains=["python_general"],
        source="reflection",
        source_trajectory_id=turn.id,
    )
    assert learned.lesson_id
    model = ScriptedModel(reply)
    try:
        off = NightschoolWork(store, model, Sandbox(), playbook=playbook, verify_k=0)
        assert off.run("skills").status == "skipped" and model.calls == []
        work = NightschoolWork(store, model, Sandbox(), playbook=playbook, verify_k=2)
        result = work.run("skills")
        assert result.status == "ok", result
        assert result.record == {
            "checked": 0, "verified": 0, "chat_checked": 1, "chat_verified": 1
        }  # fmt: skip
        assert "1 of 1 chat lesson(s)" in result.detail and len(model.calls) == 12
        stored = playbook.get(learned.lesson_id)
        assert stored is not None and stored.verified
        again = work.run("skills")  # its verdict is stored: nothing waits any more
        assert again.status == "skipped" and len(model.calls) == 12
    finally:
        playbook.close()
