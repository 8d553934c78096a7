"""The chat pipeline on the real parts: embedded SmolLM2, bubblewrap, SQLite, MiniLM playbook.

Kept few and short (small `max_tokens`): the machine is shared. SmolLM2-135M
rarely follows a format, so assertions check what the pipeline guarantees
(recording, correction, reflection through the grammar, retrieval), not the
quality of the small model's answers.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from nightschool.agent import AgentConfig, ChatPipeline, Verifier
from nightschool.lessons.reflection import Reflector, ReflectorConfig
from nightschool.lessons.sink import PlaybookSink
from nightschool.llm import EmbeddedConfig, EmbeddedModel, Message
from nightschool.playbook import PLAYBOOK_HEADER, SkillMemory
from nightschool.sandbox import Sandbox
from nightschool.store import Store
from nightschool.trajectory import Outcome, ToolCall

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap not installed"),
]

REQUEST_1 = "Reply with three words exactly: kangaroo trampoline lighthouse"
REQUEST_2 = "no, reply with three words exactly: kangaroo trampoline metronome"
REQUEST_3 = "Reply with three words exactly: kangaroo trampoline giraffe"


@pytest.fixture(scope="module")
def model() -> Iterator[EmbeddedModel]:
    with EmbeddedModel(EmbeddedConfig(model="smollm2-135m")) as loaded:
        yield loaded


def user(text: str) -> Message:
    return {"role": "user", "content": text}


@pytest.mark.store_backends("postgres")
def test_one_real_turn_is_recorded(model: EmbeddedModel, store: Store, tmp_path: Path) -> None:
    pipe = ChatPipeline(
        model=model,
        store=store,
        sandbox=Sandbox(),
        memory=None,
        reflector=None,
        workspace_root=tmp_path / "ws",
        config=AgentConfig(max_steps=2, max_tokens=48, verifier_max_tokens=60),
    )
    try:
        result = pipe.handle([user("What is 17 * 3? You may use run_python.")], session_id="e2e")
    finally:
        pipe.close()
    stored = store.get_trajectory(result.trajectory.id)
    assert stored is not None
    assert stored.model == "smollm2-135m" and stored.task_kind == "chat"
    assert 1 <= stored.n_steps <= 2 and stored.tokens_in > 0 and stored.tokens_out > 0
    assert stored.tool_calls or stored.final_response.strip()
    assert stored.outcome in (Outcome.UNKNOWN, Outcome.FAILED)
    if stored.tool_calls:
        assert stored.extra["verifier"].get("verdict") in ("CONFIRMED", "REFUTED", "UNCERTAIN")
    assert result.timings["model"] > 0


def test_verifier_grammar_holds_on_the_embedded_model(model: EmbeddedModel) -> None:
    call = ToolCall(name="run_shell", arguments={"command": "wc -l *.py"}, result="1623 total")
    verdict = Verifier(model, max_tokens=60).verify(
        "how many lines of code? just give me the code", [call], "The project has 1,623 lines."
    )
    assert verdict.raw.startswith("VERDICT: ")
    assert verdict.verdict in ("CONFIRMED", "REFUTED", "UNCERTAIN")
    assert 0.0 <= verdict.confidence <= 1.0 and verdict.note


@pytest.mark.store_backends("sqlite")
def test_correction_becomes_a_lesson_that_the_next_similar_turn_sees(
    model: EmbeddedModel, store: Store, tmp_path: Path
) -> None:
    memory = SkillMemory(store)  # the packaged MiniLM embedder
    reflector = Reflector(
        store, model, ReflectorConfig(max_tokens=200, temperature=0.0), sink=PlaybookSink(memory)
    )
    pipe = ChatPipeline(
        model=model,
        store=store,
        sandbox=Sandbox(),
        memory=memory,
        reflector=reflector,
        workspace_root=tmp_path / "ws",
        config=AgentConfig(max_steps=2, max_tokens=40, verify=False),
    )
    try:
        first = pipe.handle([user(REQUEST_1)], session_id="chat-1")
        convo = [user(REQUEST_1), {"role": "assistant", "content": first.reply}, user(REQUEST_2)]
        second = pipe.handle(convo, session_id="chat-1")  # type: ignore[arg-type]
        event = second.correction
        assert event is not None and event.trajectory_id == first.trajectory.id
        assert event.reflection_scheduled
        [correction] = store.corrections(first.trajectory.id)
        assert correction.source == "user_correction" and correction.authority == "human"
        corrected = store.get_trajectory(first.trajectory.id)
        assert corrected is not None and corrected.outcome == Outcome.FAILED

        assert pipe.wait_background(timeout_s=600)
        [done] = pipe.background_results()
        assert done.status == "ok", done
        assert done.lesson_id is not None
        lesson = memory.get(done.lesson_id)
        assert lesson is not None and lesson.source_trajectory_id == first.trajectory.id

        # Chat shows other requests verified entries only; re-solving a chat turn with and
        # without its lesson is not built yet (issue 26), so the verdict is set here.
        assert memory.set_verified(done.lesson_id, True, {"with": [1, 1], "without": [0, 0]})
        third = pipe.handle([user(REQUEST_3)], session_id="chat-2")
    finally:
        pipe.close()
        memory.close()
    assert done.lesson_id in third.lessons_shown
    assert PLAYBOOK_HEADER in third.trajectory.system_prompt
    assert done.lesson_id in third.trajectory.system_prompt
    assert third.trajectory.extra["lessons_shown"] == list(third.lessons_shown)


@pytest.mark.store_backends("postgres")
def test_the_requests_example_is_run_and_a_failure_redrawn_on_the_real_model(
    model: EmbeddedModel, store: Store, tmp_path: Path
) -> None:
    """SmolLM2 at temperature 0 writes `double` right and `second_largest` wrong (seen)."""
    pipe = ChatPipeline(
        model=model,
        store=store,
        sandbox=Sandbox(),
        memory=None,
        reflector=None,
        workspace_root=tmp_path / "ws",
        config=AgentConfig(max_steps=1, max_tokens=96, verify=False, temperature=0.0),
        wake_up=False,
    )
    ask = "Write a Python function {}.\n```python\nassert {}\n```"
    try:
        easy = pipe.handle(
            [user(ask.format("double(x) that returns twice x", "double(2) == 4"))], session_id="a"
        )
        hard = pipe.handle(
            [
                user(
                    ask.format(
                        "second_largest(xs) that returns the second largest distinct number "
                        "of a list",
                        "second_largest([4, 9, 9, 2]) == 4",
                    )
                )
            ],
            session_id="b",
        )
    finally:
        pipe.close()
    if "examples" in easy.trajectory.extra:  # a reply with code: its example was run
        record = easy.trajectory.extra["examples"]
        assert record["examples"] == 1
        assert easy.trajectory.n_steps == 1 + record.get("redraws", 0)
    record = hard.trajectory.extra["examples"]  # it writes code: its example is run
    assert record["examples"] == 1
    if record["passed"]:  # not seen: a right answer needs no redraw
        assert hard.trajectory.n_steps == 1 and "redraw" not in record
        return
    assert record["error"] and record["redraw"] in ("fixed", "still fails", "no code")
    assert record["redraws"] in (1, 2)  # a second one only after the first failed too
    assert hard.trajectory.n_steps == 1 + record["redraws"]  # the answer, then the redraws
    stored = store.get_trajectory(hard.trajectory.id)
    assert stored is not None
    if record["repaired"]:
        assert stored.final_response != "" and stored.outcome != Outcome.FAILED
    else:
        assert stored.outcome == Outcome.FAILED
        assert "fails the request's own example" in (stored.failure_reason or "")
