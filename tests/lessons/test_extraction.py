from __future__ import annotations

import importlib.util
import random
import shutil

import pytest
from tests.lessons._scripted import lesson_writer as scripted

from nightschool.challenges import Challenge, render, templates
from nightschool.dream import DreamLoop, FrontierTracker
from nightschool.lessons.extraction import EXTRACTION_GRAMMAR, LessonExtractor, parse_lesson
from nightschool.lessons.guard import (
    generalization_problem,
    guess_domains,
    shared_run,
    task_summary,
)
from nightschool.lessons.verify import VERIFY_SEED_BASE
from nightschool.llm import ScriptedModel
from nightschool.playbook import HashingEmbedder, SkillMemory, default_embedder
from nightschool.sandbox import Sandbox
from nightschool.solver import Solver
from nightschool.store import Store

needs_bwrap = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap not installed")

GOOD_LESSON = """Here is the lesson.
**TRIGGER:** a task asks to aggregate rows from a delimited text file
ANTI-PATTERN: splitting each line on commas by hand, which breaks on quoted fields
- CORRECT PATTERN: read the file with the csv module and convert numbers explicitly
DOMAINS: data_analysis, python_general
CONFIDENCE: 0.8
"""


def test_parse_lesson_lenient() -> None:
    lesson = parse_lesson(GOOD_LESSON)
    assert lesson is not None
    assert lesson.trigger.startswith("a task asks to aggregate")
    assert lesson.anti_pattern.startswith("splitting each line")
    assert lesson.correct_pattern.startswith("read the file with the csv module")
    assert lesson.domains == ["data_analysis", "python_general"] and lesson.confidence == 0.8
    assert parse_lesson("Trigger - x\nCorrect pattern - y\nConfidence: high").confidence == 0.5  # type: ignore[union-attr]
    assert parse_lesson("I think you should be more careful.") is None
    assert parse_lesson("TRIGGER: only a trigger") is None


def test_shared_run_and_guard() -> None:
    prompt = "Write a Python program solution.py that reads sales.csv and prints totals per region"
    assert shared_run("it reads sales.csv and prints totals per region quickly", [prompt])
    assert shared_run("aggregate values per group with the csv module", [prompt]) is None
    ok = dict(
        trigger="aggregate a delimited file by key",
        anti_pattern="manual split",
        correct_pattern="use csv.DictReader",
        domains=["data_analysis"],
        sources=[prompt],
    )
    assert generalization_problem(**ok) is None  # type: ignore[arg-type]
    assert "copies the challenge" in str(
        generalization_problem(  # type: ignore[arg-type]
            **{**ok, "trigger": "reads sales.csv and prints totals per region"}
        )
    )
    assert generalization_problem(**{**ok, "domains": []}) == "no domains given"  # type: ignore[arg-type]
    assert "outside the taxonomy" in str(generalization_problem(**{**ok, "domains": ["web"]}))  # type: ignore[arg-type]


def test_guess_domains_and_summary() -> None:
    assert guess_domains("anything", "sql") == ["sql"]
    assert guess_domains("Count ERROR lines with a regex") == ["regex_parse"]
    assert guess_domains("say hello") == ["python_general"]
    assert task_summary("Merge two JSON files.\nInput: base.json") == "Merge two JSON files."


@needs_bwrap
def test_extractor_keeps_only_lessons_that_help(
    store: Store, rendered: dict[str, Challenge]
) -> None:
    challenge = render(templates("data_analysis")[0].name, "basic", 4)
    memory = SkillMemory(store, embedder=HashingEmbedder())
    model = scripted(rendered, GOOD_LESSON, helps=True)
    solver = Solver(model, Sandbox(), playbook=memory)
    original = solver.solve(challenge, lessons=[])
    assert not original.passed
    outcome = LessonExtractor(model, memory, solver).extract(challenge, original)
    assert outcome.status == "written", outcome
    lesson = memory.get(outcome.lesson_id or "")
    assert lesson is not None and lesson.verified and lesson.source == "selfplay"
    assert lesson.source_trajectory_id == original.trajectory.id
    comparison = lesson.extra["verification"]
    assert comparison["method"] == "paired-fresh-renderings" and comparison["k"] == 6
    assert comparison["passes_with"] == 6 and comparison["passes_without"] == 0
    assert comparison["test"] == "mcnemar-exact" and comparison["promote"] is True
    assert all(seed >= VERIFY_SEED_BASE for seed in comparison["seeds"])  # fresh renderings
    grammars = [call.grammar for call in model.calls if call.grammar]
    assert grammars == [EXTRACTION_GRAMMAR]  # constrains the embedded model


@needs_bwrap
def test_extractor_rejects_lesson_that_does_not_help(
    store: Store, rendered: dict[str, Challenge]
) -> None:
    challenge = render(templates("sql")[0].name, "basic", 4)
    memory = SkillMemory(store, embedder=HashingEmbedder())
    model = scripted(rendered, GOOD_LESSON.replace("data_analysis, ", "sql, "), helps=False)
    solver = Solver(model, Sandbox(), playbook=memory)
    original = solver.solve(challenge, lessons=[])
    outcome = LessonExtractor(model, memory, solver).extract(challenge, original)
    assert outcome.status == "rejected" and "did not promote" in outcome.reason
    assert outcome.comparison is not None and outcome.comparison["passes_with"] == 0
    assert memory.count() == 0

    def candidate_prompts() -> list[str]:
        systems = [call.messages[0]["content"] for call in model.calls]
        return [system for system in systems if "### SKILL PLAYBOOK" in system]

    # the same lesson gives the same candidate prompt (its provisional id is a digest of
    # it, not a random id): a rerun of the dream decodes the same prompts
    first = candidate_prompts()
    model.calls.clear()
    LessonExtractor(model, memory, solver).extract(challenge, original)
    assert first and candidate_prompts() == first


@needs_bwrap
def test_dream_shows_lessons_and_updates_counters(store: Store) -> None:
    memory = SkillMemory(store, embedder=default_embedder())  # production floor
    learned = memory.learn(
        trigger="total the amounts of each month or key from a transactions csv file",
        anti_pattern="manual split",
        correct_pattern="use csv.DictReader",
        domains=["data_analysis"],
        source="manual",
    )
    assert learned.status == "written"
    solver = Solver(
        ScriptedModel(lambda _m: "```python\nprint(1)\n```"), Sandbox(), playbook=memory
    )
    loop = DreamLoop(store, solver, FrontierTracker(store), rng=random.Random(0))
    [cycle] = loop.run(1, cluster="data_analysis", tier="basic")
    assert cycle.lessons_shown == (learned.lesson_id,)
    [traj] = store.iter_trajectories()
    assert traj.extra["lessons_shown"] == [learned.lesson_id]
    assert (
        "### SKILL PLAYBOOK" in traj.system_prompt and str(learned.lesson_id) in traj.system_prompt
    )
    lesson = memory.get(str(learned.lesson_id))
    assert lesson is not None and lesson.times_shown == 1 and lesson.times_followed_by_failure == 1


@pytest.mark.e2e
@pytest.mark.skipif(
    importlib.util.find_spec("llama_cpp") is None, reason="llama_cpp is not importable"
)
def test_extraction_grammar_makes_the_embedded_model_parseable() -> None:
    from nightschool.llm import EmbeddedConfig, EmbeddedModel

    # The cap lets the grammar finish whatever SmolLM2 writes: three lines of at most 161
    # characters, about 590 tokens at one token per character (its degenerate replies, digits
    # and dates, come close). With 300 (and even 450) a build whose kernels round differently
    # (llama.cpp for AVX-512, `llm._cpu`) sampled such a reply and was cut before DOMAINS.
    with EmbeddedModel(EmbeddedConfig(model="smollm2-135m")) as model:
        reply = model.complete(
            [{"role": "user", "content": "You failed a CSV task. Write one lesson."}],
            max_tokens=1024,
            grammar=EXTRACTION_GRAMMAR,
        )
    assert reply.tokens_out < 1024, reply.text  # the grammar's end, not the cap
    lesson = parse_lesson(reply.text)
    assert lesson is not None, reply.text
    assert lesson.domains and set(lesson.domains) <= {
        "algo",
        "bash",
        "concurrency",
        "data_analysis",
        "python_general",
        "regex_parse",
        "sql",
    }
