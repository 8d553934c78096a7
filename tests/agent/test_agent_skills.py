"""Skills (worked examples) and the tool protocol in `ChatPipeline` turns."""

from __future__ import annotations

import functools
from collections.abc import Callable

import pytest

from nightschool.agent import ChatPipeline
from nightschool.llm import Message, ScriptedModel, tool_reply
from nightschool.playbook import (
    PLAYBOOK_HEADER,
    WORKED_EXAMPLES_HEADER,
    Embedder,
    HashingEmbedder,
    MemoryConfig,
    SkillMemory,
    default_embedder,
)
from nightschool.store import Store
from nightschool.trajectory import Outcome

MERGE = """\
intervals = sorted(tuple(map(int, line.split())) for line in open("intervals.txt"))
merged = []
for a, b in intervals:
    if merged and a <= merged[-1][1]:
        merged[-1][1] = max(merged[-1][1], b)
    else:
        merged.append([a, b])
for a, b in merged:
    print(a, b)
"""
MERGE_SUMMARY = (
    "Read intervals (two integers per line) from intervals.txt, merge the overlapping "
    "ones and print the merged intervals sorted by start."
)
MERGE_REQUEST = "Merge the overlapping intervals in intervals.txt and print the result, sorted."
WORDS = """\
#!/usr/bin/env bash
tr -cs '[:alpha:]' '\\n' < text.txt | tr '[:upper:]' '[:lower:]' | sort | uniq -c \\
  | sort -k1,1nr -k2 | head -n 5 | awk '{print $2, $1}'
"""


def user(text: str) -> Message:
    return {"role": "user", "content": text}


@pytest.fixture(scope="module")
def minilm() -> Embedder:
    return default_embedder()


@pytest.fixture
def make(make_pipeline: Callable[..., ChatPipeline]) -> Callable[..., ChatPipeline]:
    return functools.partial(make_pipeline, verify=False)


def verify(memory: SkillMemory, *ids: str) -> None:
    """Mark entries verified, as a paired comparison that promoted them would."""
    for entry_id in ids:
        assert memory.set_verified(entry_id, True, {"with": [1, 1], "without": [0, 0]})


def learn_merge_skill(memory: SkillMemory, summary: str = MERGE_SUMMARY, code: str = MERGE) -> str:
    result = memory.learn_skill(
        summary=summary,
        code=code,
        domains=["algo"],
        source_trajectory_id="practice-1",
        template="algo.merge_intervals",
        extra={"solution_file": "solution.py"},
    )
    assert result.status == "written" and result.lesson_id is not None
    return result.lesson_id


# -- skills in chat ---------------------------------------------------------------------


def test_similar_request_shows_the_skill_and_an_unrelated_one_none(
    make: Callable[..., ChatPipeline], store: Store, minilm: Embedder
) -> None:
    memory = SkillMemory(store, minilm)
    skill_id = learn_merge_skill(memory)
    lesson = memory.learn(
        trigger="When merging overlapping intervals",
        anti_pattern="comparing only neighbours in input order",
        correct_pattern="sort the intervals by start first, then merge in one pass",
        domains=["algo"],
        source="reflection",
        source_trajectory_id="t-0",
    )
    assert lesson.lesson_id is not None
    pipe = make(ScriptedModel(lambda _m: "Here it is."), memory)
    before = pipe.handle([user(MERGE_REQUEST)], session_id="s0")
    assert lesson.lesson_id not in before.lessons_shown  # unverified, not its own task
    verify(memory, skill_id, lesson.lesson_id)

    similar = pipe.handle([user(MERGE_REQUEST)], session_id="s1")
    prompt = similar.trajectory.system_prompt
    assert similar.skills_shown == (skill_id,)
    assert similar.trajectory.extra["skills_shown"] == [skill_id]
    assert len(similar.trajectory.extra["skill_scores"]) == 1
    assert lesson.lesson_id in similar.lessons_shown
    assert prompt.index(PLAYBOOK_HEADER) < prompt.index(WORKED_EXAMPLES_HEADER)
    assert f"Task: {MERGE_SUMMARY}" in prompt and "merged.append([a, b])" in prompt
    shown = memory.get(skill_id)
    assert shown is not None and shown.times_shown == 1 + len(before.skills_shown)

    unrelated = pipe.handle([user("write a haiku about rain")], session_id="s2")
    assert unrelated.skills_shown == () and unrelated.trajectory.extra["skills_shown"] == []
    assert WORKED_EXAMPLES_HEADER not in unrelated.trajectory.system_prompt
    memory.close()


def test_skill_exposure_gets_the_turns_outcome(
    make: Callable[..., ChatPipeline], store: Store, minilm: Embedder
) -> None:
    memory = SkillMemory(store, minilm)
    skill_id = learn_merge_skill(memory)
    # A model that never stops calling tools: the step limit fails the turn.
    pipe = make(ScriptedModel(lambda _m: tool_reply("list_files", {}), supports_tools=True), memory)
    result = pipe.handle([user(MERGE_REQUEST)], session_id="s", task_kind="eval")
    assert result.trajectory.outcome == Outcome.FAILED
    assert result.skills_shown == (skill_id,)  # eval turns see practice skills too
    skill = memory.get(skill_id)
    assert skill is not None and skill.times_shown == 1 and skill.times_followed_by_failure == 1
    memory.close()


def test_only_skills_that_fit_the_budget_are_shown_and_recorded(
    make: Callable[..., ChatPipeline], store: Store
) -> None:
    memory = SkillMemory(store, HashingEmbedder(), MemoryConfig(min_skill_score=0.0))
    big = learn_merge_skill(memory, code=MERGE * 12)  # about 800 estimated tokens
    small = memory.learn_skill(
        summary="Print the five most common words of text.txt with their counts.",
        code=WORDS,
        domains=["bash"],
        source_trajectory_id="practice-2",
    ).lesson_id
    assert small is not None
    verify(memory, big, small)
    pipe = make(ScriptedModel(lambda _m: "ok"), memory, skills_token_budget=600)
    result = pipe.handle([user("merge intervals and count the words")], session_id="s")
    assert result.skills_shown == (small,)
    assert big not in result.trajectory.system_prompt and WORDS.strip() in (
        result.trajectory.system_prompt
    )
    stored_big, stored_small = memory.get(big), memory.get(small)
    assert stored_big is not None and stored_big.times_shown == 0
    assert stored_small is not None and stored_small.times_shown == 1
    off = make(ScriptedModel(lambda _m: "ok"), memory, skills_k=0)
    assert off.handle([user("merge intervals")], session_id="t").skills_shown == ()
    memory.close()


# -- the tool protocol ---------------------------------------------------------------------


def test_protocol_follows_the_models_capability(make: Callable[..., ChatPipeline]) -> None:
    native = ScriptedModel([tool_reply("list_files", {}), "Nothing there."], supports_tools=True)
    result = make(native, None).handle([user("list my files")], session_id="n")
    trajectory = result.trajectory
    assert trajectory.extra["tool_protocol"] == "native" and trajectory.extra["blob_replies"] == 0
    assert "```tool" not in trajectory.system_prompt
    assert [c.name for c in result.tool_calls] == [
        "list_files"
    ] and result.reply == "Nothing there."
    assert native.calls[0].tools is not None

    fenced = ScriptedModel(["Hi."])
    plain = make(fenced, None).handle([user("hi")], session_id="f").trajectory
    assert plain.extra["tool_protocol"] == "fenced" and "```tool" in plain.system_prompt
    assert fenced.calls[0].tools is None


def test_blob_turn_is_recorded_with_its_count(make: Callable[..., ChatPipeline]) -> None:
    blob = '```json\n{"name": "solution", "arguments": {"code": "print(1)"}}\n```'
    model = ScriptedModel(lambda _m: blob)
    result = make(model, None, max_steps=2).handle([user("code please")], session_id="b")
    extra = result.trajectory.extra
    assert result.reply == "print(1)" and result.trajectory.final_response == "print(1)"
    assert extra["blob_replies"] == 2 and extra["blob_answer"] is True
    assert result.trajectory.n_steps == 2
