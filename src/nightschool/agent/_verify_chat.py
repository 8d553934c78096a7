"""Chat lessons verified on their own turn: its request re-solved with and without the lesson.

A lesson learned from a failed chat turn (its reflection, a user's correction)
is shown to a later chat turn only once verified (`lessons.skills.recall_request`:
verified entries only, but for a nearly identical request), and until now nothing
verified one: they waited forever. A turn whose request states examples
(`request_examples`: `assert` lines, doctests) carries its own check, so its
lesson can be verified the way self-play's are (issue "Mechanisms that
transfer", the user's own stream): the request is answered `k` times with the
lesson under `### SKILL PLAYBOOK` and `k` times without it, as direct answers
(the agent's system prompt without tools, as the example redraws ask), pair `i`
of both arms sharing seed `i` and `VERIFY_TEMPERATURE`; each reply's code is run
against the examples in the sandbox. The pairs go through the promotion gate
(exact McNemar, alpha 5%: with the default `k` = 6, at least 5 more requests
solved with the lesson than without, and none lost). `set_verified` stores the
comparison and credits its pairs (`times_helpful` / `times_harmful`), so a
lesson that hurts its own request is also retired by the playbook's margin.

What this shows is that the lesson helps on the request it was learned from,
not that it transfers to other requests: it keeps a useless or harmful lesson
out of chat, and lets a useful one be shown to similar requests.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from nightschool.agent._examples import (
    EXAMPLE_TIMEOUT_S,
    _code,
    _program,
    request_examples,
    run_examples,
)
from nightschool.agent.loop import build_system_prompt
from nightschool.gate import GateConfig, PairedResult, promotion_gate
from nightschool.llm import ChatModel, Message
from nightschool.playbook import Lesson, RetrievedLesson, SkillMemory, format_playbook
from nightschool.sandbox import Sandbox
from nightschool.store import Store

__all__ = [
    "CHAT_VERIFY_K",
    "CHAT_VERIFY_METHOD",
    "VERIFY_TEMPERATURE",
    "ChatVerification",
    "chat_lesson_candidates",
    "verify_chat_lesson",
]

CHAT_VERIFY_K = 6
"""Pairs per lesson (12 model calls): the promotion gate's `min_pairs`, the fewest it
judges, and enough for the exact McNemar test to promote with one tie to spare (5
wins, 0 losses: p = 0.031); self-play verification uses the same 6 (`dream --verify-k`)."""

VERIFY_TEMPERATURE = 0.7
"""Sampling temperature of both arms: the same request asked again needs spread for
its pairs to differ (the agent's own 0.2 gives nearly the same reply each time)."""

CHAT_VERIFY_METHOD = "paired-request-examples"
"""`comparison["method"]` of a chat verification."""

_CHAT_SOURCES = ("reflection", "user_correction")


@dataclass
class ChatVerification:
    """One lesson's verification on its turn's request.

    Attributes:
        lesson_id: the lesson.
        examples: how many examples the request states.
        with_lesson, without: per pair, 1 when the reply's code passed every
            example, 0 when not.
        verified: the gate promoted the lesson against no lesson.
        p_value: the gate's exact p-value (None when no pair differs).
        calls: model calls made.
    """

    lesson_id: str
    examples: int
    with_lesson: list[int] = field(default_factory=list)
    without: list[int] = field(default_factory=list)
    verified: bool = False
    p_value: float | None = None
    calls: int = 0

    def record(self) -> dict[str, Any]:
        """The comparison `set_verified` stores (`with` / `without` as self-play's)."""
        return {
            "method": CHAT_VERIFY_METHOD,
            "with": list(self.with_lesson),
            "without": list(self.without),
            "examples": self.examples,
            "k": len(self.with_lesson),
            "temperature": VERIFY_TEMPERATURE,
            "p_value": self.p_value,
        }


def chat_lesson_candidates(
    memory: SkillMemory, store: Store
) -> list[tuple[Lesson, str, list[str]]]:
    """Lessons from chat turns never verified whose request states examples.

    Returns:
        (lesson, the request, its examples) per lesson, oldest first: a lesson
        (not a skill) from a reflection or a user's correction, with no stored
        verification yet, whose source trajectory is a chat turn whose request
        `request_examples` reads at least one example from.
    """
    found = []
    for lesson in memory.list(verified=False, kind="lesson"):
        if lesson.source not in _CHAT_SOURCES or "verification" in lesson.extra:
            continue
        source = store.get_trajectory(lesson.source_trajectory_id)
        if source is None or source.task_kind != "chat":
            continue
        examples = request_examples(source.user_request)
        if examples:
            found.append((lesson, source.user_request, examples))
    return found


def _solved(
    model: ChatModel,
    sandbox: Sandbox,
    system: str,
    request: str,
    examples: Sequence[str],
    *,
    seed: int,
    max_tokens: int,
    timeout_s: float,
) -> int:
    """1 when the reply's code passes every example, else 0 (no code is a failure)."""
    completion = model.complete(
        [Message(role="system", content=system), Message(role="user", content=request)],
        temperature=VERIFY_TEMPERATURE,
        max_tokens=max_tokens,
        seed=seed,
    )
    code = _program(request, _code(completion.text))
    if code is None:
        return 0
    passed, _error = run_examples(sandbox, code, examples, timeout_s)
    return int(passed)


def verify_chat_lesson(
    model: ChatModel,
    sandbox: Sandbox,
    memory: SkillMemory,
    lesson: Lesson,
    request: str,
    examples: Sequence[str],
    *,
    k: int = CHAT_VERIFY_K,
    max_tokens: int = 512,
    timeout_s: float = EXAMPLE_TIMEOUT_S,
    on_pair: Callable[[int, int, int], None] | None = None,
) -> ChatVerification:
    """Re-solve `request` `k` times with `lesson` and `k` times without; store the verdict.

    Args:
        model: answers both arms.
        sandbox: runs each reply's code against `examples`.
        memory: the playbook holding `lesson` (`set_verified` writes the verdict).
        lesson: the lesson to verify.
        request: the chat turn's request it was learned from.
        examples: the request's examples (`request_examples`).
        k: pairs, at least the gate's `min_pairs` (6).
        max_tokens: completion cap of each call, tokens.
        timeout_s: limit of each examples run, seconds.
        on_pair: called after each pair with (pair number from 1, with, without).

    Returns:
        The verification, also stored on the lesson.

    Raises:
        InfrastructureError: the model failed; nothing is stored (a fault is
            never a verdict on the lesson).
        SandboxFaultError: the sandbox could not start a run; nothing is stored.
        ValueError: `k` below the gate's `min_pairs`.
    """
    gate = GateConfig()
    if k < gate.min_pairs:
        raise ValueError(f"k must be at least {gate.min_pairs} (the gate judges no fewer pairs)")
    shown = RetrievedLesson(lesson=lesson, score=1.0, bm25_score=0.0, vector_score=1.0, rank=1)
    with_system = build_system_prompt(format_playbook([shown], token_budget=None), tools={})
    without_system = build_system_prompt("", tools={})
    digest = hashlib.sha256(request.encode()).digest()
    result = ChatVerification(lesson.id, len(examples))
    for pair in range(k):
        seed = int.from_bytes(hashlib.sha256(digest + pair.to_bytes(2, "big")).digest()[:4], "big")
        for system, outcomes in (
            (with_system, result.with_lesson),
            (without_system, result.without),
        ):
            outcomes.append(
                _solved(
                    model,
                    sandbox,
                    system,
                    request,
                    examples,
                    seed=seed,
                    max_tokens=max_tokens,
                    timeout_s=timeout_s,
                )
            )
        result.calls += 2
        if on_pair is not None:
            on_pair(pair + 1, result.with_lesson[-1], result.without[-1])
    verdict = promotion_gate(
        [
            PairedResult(
                task_id=f"{lesson.id}#{pair}",
                incumbent_score=float(without),
                candidate_score=float(with_lesson),
            )
            for pair, (with_lesson, without) in enumerate(
                zip(result.with_lesson, result.without, strict=True)
            )
        ],
        gate,
    )
    result.verified, result.p_value = verdict.promote, verdict.p_value
    memory.set_verified(lesson.id, result.verified, result.record())
    return result
