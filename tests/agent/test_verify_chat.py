"""Chat lessons verified on their own turn's request, with and without the lesson."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from nightschool.agent import CHAT_VERIFY_K, chat_lesson_candidates, verify_chat_lesson
from nightschool.errors import ModelUnavailableError
from nightschool.lessons.skills import recall_request
from nightschool.llm import ScriptedModel
from nightschool.playbook import HashingEmbedder, MemoryConfig, SkillMemory
from nightschool.sandbox import Sandbox
from nightschool.store import Store
from nightschool.trajectory import Outcome, Trajectory

REQUEST = (
    "Write a Python function count_evens(xs) that counts the even numbers of a list.\n"
    "assert count_evens([1, 2, 4]) == 2\n"
    "assert count_evens([]) == 0"
)
SIMILAR = "Write a Python function count_evens(xs) that counts the even numbers in a list."
UNRELATED = "write a limerick about autumn leaves falling on a quiet pond"
WRONG = "```python\ndef count_evens(xs):\n    return len(xs)\n```"
RIGHT = "```python\ndef count_evens(xs):\n    return sum(1 for x in xs if x % 2 == 0)\n```"
ADVICE = "test each element with x % 2 == 0 and count only those"


@pytest.fixture
def memory(store: Store) -> SkillMemory:
    """Hashing embeddings; no near-identical exception, so only verified lessons reach chat."""
    return SkillMemory(store, HashingEmbedder(), MemoryConfig(chat_recall_score=1.01))


def chat_turn(store: Store, request: str = REQUEST, kind: str = "chat") -> Trajectory:
    turn = Trajectory(
        task_kind=kind, user_request=request, outcome=Outcome.FAILED, final_response=WRONG
    )
    return store.append_trajectory(turn)


def lesson_from(memory: SkillMemory, turn: Trajectory, source: str = "reflection") -> str:
    learned = memory.learn(
        trigger=REQUEST.splitlines()[0],  # as `PlaybookSink` does: the request's first sentence
        anti_pattern="returning the list's length instead of counting matches",
        correct_pattern=ADVICE,
        domains=["python_general"],
        source=source,
        source_trajectory_id=turn.id,
    )
    assert learned.status == "written" and learned.lesson_id
    return learned.lesson_id


def answers(with_lesson: str, without: str) -> Callable[[list[dict[str, Any]]], str]:
    """A model that answers `with_lesson` when the playbook shows the advice, else `without`."""

    def reply(messages: list[dict[str, Any]]) -> str:
        return with_lesson if ADVICE in messages[0]["content"] else without

    return reply


def test_a_lesson_that_solves_its_request_is_verified_and_reaches_similar_chat_turns(
    store: Store, memory: SkillMemory
) -> None:
    lesson_id = lesson_from(memory, chat_turn(store))
    assert recall_request(memory, SIMILAR).lessons == []  # unverified: chat never sees it
    [(lesson, request, examples)] = chat_lesson_candidates(memory, store)
    assert lesson.id == lesson_id and request == REQUEST and len(examples) == 2
    model = ScriptedModel(answers(RIGHT, WRONG))
    pairs: list[tuple[int, int, int]] = []

    done = verify_chat_lesson(
        model, Sandbox(), memory, lesson, request, examples, on_pair=lambda *p: pairs.append(p)
    )

    assert done.verified and done.with_lesson == [1] * 6 and done.without == [0] * 6
    assert done.calls == 2 * CHAT_VERIFY_K == len(model.calls) and len(pairs) == 6
    assert done.p_value is not None and done.p_value < 0.05
    # both arms of a pair: the same request, seed and temperature; only the playbook differs
    first, second = model.calls[0], model.calls[1]
    assert first.messages[1] == second.messages[1] and first.seed == second.seed
    assert ADVICE in first.messages[0]["content"] and ADVICE not in second.messages[0]["content"]
    assert "SKILL PLAYBOOK" not in second.messages[0]["content"]
    assert len({call.seed for call in model.calls}) == CHAT_VERIFY_K
    stored = memory.get(lesson_id)
    assert stored is not None and stored.verified
    assert stored.extra["verification"]["comparison"]["method"] == "paired-request-examples"
    assert (stored.times_helpful, stored.times_harmful) == (6, 0)
    assert chat_lesson_candidates(memory, store) == []  # verified once, never again
    # now shown to a similar request, and still to nothing unrelated
    assert [r.lesson.id for r in recall_request(memory, SIMILAR).lessons] == [lesson_id]
    assert recall_request(memory, UNRELATED).lessons == []


def test_a_lesson_that_hurts_its_request_is_rejected_and_never_shown(
    store: Store, memory: SkillMemory
) -> None:
    lesson_id = lesson_from(memory, chat_turn(store))
    [(lesson, request, examples)] = chat_lesson_candidates(memory, store)
    done = verify_chat_lesson(
        ScriptedModel(answers(WRONG, RIGHT)), Sandbox(), memory, lesson, request, examples
    )
    assert not done.verified and done.with_lesson == [0] * 6 and done.without == [1] * 6
    # 6 pairs lost, none won: past the playbook's margin, so it is retired (archived)
    assert memory.get(lesson_id) is None
    [archived] = memory.archived()
    assert archived.id == lesson_id and archived.times_harmful == 6 and not archived.verified
    assert recall_request(memory, SIMILAR).lessons == []
    assert chat_lesson_candidates(memory, store) == []


def test_a_lesson_without_a_lift_is_kept_unverified_and_not_asked_again(
    store: Store, memory: SkillMemory
) -> None:
    lesson_id = lesson_from(memory, chat_turn(store))
    [(lesson, request, examples)] = chat_lesson_candidates(memory, store)
    done = verify_chat_lesson(
        ScriptedModel(answers(RIGHT, RIGHT)), Sandbox(), memory, lesson, request, examples
    )
    assert not done.verified and done.p_value is None  # no pair differs
    stored = memory.get(lesson_id)
    assert stored is not None and not stored.verified and stored.times_harmful == 0
    assert recall_request(memory, SIMILAR).lessons == []
    assert chat_lesson_candidates(memory, store) == []  # its verdict is stored


def test_only_chat_lessons_with_examples_and_no_verdict_are_candidates(
    store: Store, memory: SkillMemory
) -> None:
    wanted = lesson_from(memory, chat_turn(store), source="user_correction")
    no_examples = chat_turn(store, request="count the even numbers of my list please")
    memory.learn(
        trigger="counting even numbers when the user gives no examples",
        anti_pattern="guessing the format",
        correct_pattern="ask for the list's format first",
        domains=["python_general"],
        source="reflection",
        source_trajectory_id=no_examples.id,
    )
    practice = chat_turn(store, kind="selfplay")
    memory.learn(
        trigger="a self-play task about sorting intervals by their start",
        anti_pattern="sorting by the end",
        correct_pattern="sort the pairs by their first element",
        domains=["python_general"],
        source="selfplay",
        source_trajectory_id=practice.id,
    )
    assert [lesson.id for lesson, _, _ in chat_lesson_candidates(memory, store)] == [wanted]


def test_a_model_fault_stores_no_verdict(store: Store, memory: SkillMemory) -> None:
    lesson_id = lesson_from(memory, chat_turn(store))
    [(lesson, request, examples)] = chat_lesson_candidates(memory, store)
    model = ScriptedModel([RIGHT, WRONG, ModelUnavailableError("the server went away")])
    with pytest.raises(ModelUnavailableError):
        verify_chat_lesson(model, Sandbox(), memory, lesson, request, examples)
    stored = memory.get(lesson_id)
    assert stored is not None and "verification" not in stored.extra
    assert (stored.times_helpful, stored.times_harmful) == (0, 0)
    assert len(chat_lesson_candidates(memory, store)) == 1  # still waiting
    with pytest.raises(ValueError, match="at least 6"):
        verify_chat_lesson(model, Sandbox(), memory, lesson, request, examples, k=5)


def test_the_cli_verifies_a_chat_lesson_against_a_model_server(
    tmp_path: Path, openai_stub: Callable[..., Any]
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    with Store.open(home / "nightschool.db") as store:
        lesson_id = lesson_from(SkillMemory(store), chat_turn(store))
    script = Path(sys.executable).with_name("nightschool")
    env = {"NIGHTSCHOOL_HOME": str(home), "COLUMNS": "200", "PATH": "/usr/bin:/bin"}

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(script), "lessons", "verify-chat", *args],
            capture_output=True, text=True, env=env, timeout=300,
        )  # fmt: skip

    with openai_stub(lambda messages: answers(RIGHT, WRONG)(messages)) as url:
        done = run("--base-url", url, "--k", "7")
        assert done.returncode == 0, done.stderr
        assert "1 chat lesson(s)" in done.stderr and f"{lesson_id} verified" in done.stderr
        assert "7/7 with it, 0/7 without" in done.stderr
        again = run("--base-url", url)
        assert again.returncode == 0 and "0 chat lesson(s)" in again.stderr
    assert run("--k", "5").returncode == 2
    with Store.open(home / "nightschool.db") as store:
        stored = SkillMemory(store).get(lesson_id)
    assert stored is not None and stored.verified and stored.times_helpful == 7


@pytest.mark.e2e
def test_the_embedded_model_verifies_a_chat_lesson_end_to_end(tmp_path: Path) -> None:
    from nightschool.llm import EmbeddedConfig, EmbeddedModel

    # one backend (SQLite): what is tested here is the real model and the real sandbox
    with Store.open(tmp_path / "e2e.db") as store:
        memory = SkillMemory(store, HashingEmbedder(), MemoryConfig(chat_recall_score=1.01))
        lesson_id = lesson_from(memory, chat_turn(store))
        [(lesson, request, examples)] = chat_lesson_candidates(memory, store)
        with EmbeddedModel(EmbeddedConfig(model="smollm2-135m")) as model:
            done = verify_chat_lesson(
                model, Sandbox(), memory, lesson, request, examples, max_tokens=200
            )
        # 12 real calls, each reply's code run in the real sandbox; a verdict is stored
        # either way (the 135M model rarely solves it, so no particular verdict is asserted)
        assert done.calls == 12 and len(done.with_lesson) == len(done.without) == 6
        assert set(done.with_lesson) | set(done.without) <= {0, 1}
        stored = memory.get(lesson_id) or next(x for x in memory.archived() if x.id == lesson_id)
        assert stored.extra["verification"]["comparison"]["with"] == done.with_lesson
        assert stored.verified == done.verified
        assert chat_lesson_candidates(memory, store) == []
