"""Helpers for scripted models in the learning tests."""

from __future__ import annotations

import random
from collections.abc import Sequence

from nightschool.challenges import Challenge
from nightschool.dream import DreamLoop, FrontierTracker
from nightschool.dream.loop import DREAM_SEED_LIMIT
from nightschool.lessons.extraction import LessonExtractor
from nightschool.lessons.verify import PairedVerifier
from nightschool.llm import Message, ScriptedModel
from nightschool.playbook import SkillMemory
from nightschool.sandbox import Sandbox
from nightschool.solver import Solver
from nightschool.store import Store

CSV_LESSON = """TRIGGER: a task asks to aggregate rows from a delimited text file
ANTI-PATTERN: splitting each line on commas by hand, which breaks on quoted fields
CORRECT PATTERN: read the file with the csv module and convert numbers explicitly
DOMAINS: data_analysis, python_general
CONFIDENCE: 0.8
"""
"""A lesson that passes the generalization guard for the data_analysis templates."""


def asked(seen: dict[str, Challenge], messages: Sequence[Message]) -> Challenge | None:
    """The rendered challenge whose prompt is in the call's first user message, if any."""
    prompt = next(m["content"] for m in messages if m["role"] == "user")
    return next((c for p, c in seen.items() if p in prompt), None)


def learner(seen: dict[str, Challenge], *, solves_dream: bool = True) -> ScriptedModel:
    """Passes a challenge when shown a worked example of its own template (or a dream seed)."""

    def reply(messages: Sequence[Message]) -> str:
        system = messages[0]["content"]
        challenge = asked(seen, messages)
        if challenge is None:
            return "```python\nprint('no idea')\n```"
        # seeds are different tasks: the double "benefits" from a worked example of any
        # rendering of its own template, shown verbatim (never another template's)
        shown = any(
            c.template == challenge.template and c.reference_solution.strip() in system
            for c in seen.values()
        )
        good = shown or (solves_dream and challenge.seed < DREAM_SEED_LIMIT)
        code = challenge.reference_solution if good else challenge.wrong_solution
        lang = "bash" if challenge.solution_file.endswith(".sh") else "python"
        return f"```{lang}\n{code}\n```"

    return ScriptedModel(reply)


def lesson_writer(seen: dict[str, Challenge], lesson: str, *, helps: bool) -> ScriptedModel:
    """Writes `lesson` when asked for one; solves a challenge iff `helps` and a lesson is shown."""

    def reply(messages: Sequence[Message]) -> str:
        if "TRIGGER:" in messages[-1]["content"]:
            return lesson
        challenge = asked(seen, messages)
        assert challenge is not None
        good = helps and "### SKILL PLAYBOOK" in messages[0]["content"]
        code = challenge.reference_solution if good else challenge.wrong_solution
        return f"```python\n{code}\n```"

    return ScriptedModel(reply)


def lesson_dream(
    store: Store,
    memory: SkillMemory,
    seen: dict[str, Challenge],
    *,
    verify_share: float | None = None,
) -> DreamLoop:
    """A lesson-learning dream loop on the real sandbox (skills off, k = 6).

    Its scripted model writes `CSV_LESSON` when asked for a lesson and fails
    every challenge until a lesson is shown.
    """
    model = lesson_writer(seen, CSV_LESSON, helps=True)
    solver = Solver(model, Sandbox(), playbook=memory)
    verifier = PairedVerifier(solver, store=store, k=6)
    return DreamLoop(
        store,
        solver,
        FrontierTracker(store),
        rng=random.Random(4),
        extractor=LessonExtractor(model, memory, solver, verifier=verifier),
        verifier=verifier,
        skills=False,
        verify_share=verify_share,
    )
