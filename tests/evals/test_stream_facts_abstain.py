"""The stream's facts arm (environment facts from recurring failures) and abstain arm."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from nightschool.errors import UserError
from nightschool.evals.stream import (
    FACTS,
    StrategyItem,
    StreamContext,
    StreamRow,
    StreamRun,
    StreamSettings,
    StreamTask,
    abstaining_recall,
    admitted,
    classify,
    combined_recall,
    make_task,
    paired_utility,
    parse_strategy,
    run_stream,
    static_examples,
)
from nightschool.lessons.extraction import LessonExtractor
from nightschool.llm.scripted import ScriptedModel
from nightschool.playbook import Lesson, SkillMemory
from nightschool.sandbox import Sandbox
from nightschool.solver import Solver
from nightschool.store import Store

# checker lines as the stream stored them (MBPP order 0's no-memory arm)
LINES = {
    "wrong value": "public test failed: assert odd_sum(3, 9) == 24; got 21",
    "wrong type": "public test failed: assert pair([1, 2]) == (1, 2); got [1, 2]",
    "missing import": "public test raised NameError: name 'math' is not defined",
    "error: NameError": "public test raised NameError: name 'd' is not defined",
    "error: TypeError": (
        "public test raised TypeError: '<' not supported between instances of 'int' and 'str'"
    ),
    "load error": "solution.py failed to load: SyntaxError: '(' was never closed (solution.py)",
    "no code": "",
}


@pytest.mark.parametrize(("name", "line"), sorted(LINES.items()))
def test_classify_sorts_each_checker_line(name: str, line: str) -> None:
    assert classify(line) == name


def test_a_generator_or_an_int_for_a_float_is_a_wrong_type() -> None:
    assert classify("public test failed: assert f([1]) == [2]; got <generator object f>") == (
        "wrong type"
    )
    assert classify("public test failed: assert m([1, 2], 2) == 16.0; got 12") == "wrong type"


def test_a_fact_is_admitted_at_its_second_task_and_a_mis_solved_task_teaches_none() -> None:
    imports, types, value = LINES["missing import"], LINES["wrong type"], LINES["wrong value"]
    assert admitted([imports]) == []
    assert admitted([value, value, value]) == []  # the task mis-solved: no fact
    assert admitted([types, imports, value, imports, types, imports]) == [
        "missing import",
        "wrong type",
    ]
    assert admitted([imports], min_tasks=1) == ["missing import"]
    assert admitted(["", ""]) == ["no function"]  # a reply without code, twice
    assert set(admitted(list(LINES.values()) * 2)) <= set(FACTS)


# -- a real stream: sandbox, store, the embedded MiniLM retrieval; a scripted model --


def _task(name: str, call: str, want: str, doc: str) -> StreamTask:
    test = (
        f"def check(candidate):\n    assert candidate({call}) == {want}\n"
        f"    assert candidate({call}) == {want}\n\n"
        f"def test_check():\n    check({name})\n\ntest_check()\n"
    )
    prompt = f'def {name}(x: float) -> float:\n    """\n\t{doc}\n\t"""\n'
    return make_task(
        task_id=f"mbpp_{name}", suite="mbpp", prompt=prompt, entry_point=name, test=test
    )


ROOTS = [
    _task("root_a", "16.0", "4.0", "Return the square root of x."),
    _task("root_b", "9.0", "3.0", "Return the square root of a number x."),
    _task("root_c", "4.0", "2.0", "Return the square root of the value x."),
    _task("root_d", "25.0", "5.0", "Return the square root of x, as a float."),
]


def _sqrt_reply(messages: list[dict[str, Any]], *markers: str) -> str:
    """`math.sqrt` under the request's name, imported only when the prompt holds a marker."""
    name = re.search(r"^def (\w+)\(", messages[-1]["content"], re.MULTILINE)
    assert name is not None
    text = "\n".join(m["content"] for m in messages)
    head = "import math\n" if any(marker in text for marker in markers) else ""
    return f"```python\n{head}def {name[1]}(x):\n    return math.sqrt(x)\n```"


def _facts_reply(messages: list[dict[str, Any]]) -> str:
    """Uses `math` without its import unless the prompt carries the missing-import fact."""
    return _sqrt_reply(messages, "import <module>")


def _context(tmp_path: Path, model: ScriptedModel, sandbox: Sandbox) -> tuple[StreamContext, Store]:
    store = Store.open(tmp_path / "run" / "memory.db")
    memory = SkillMemory(store)
    solver = Solver(model, sandbox).single_attempt()
    return StreamContext(
        solver, sandbox, store, memory, LessonExtractor(model, memory, solver)
    ), store


def _run(tmp_path: Path, tasks: list[StreamTask]) -> StreamRun:
    (tmp_path / "run").mkdir()
    settings = StreamSettings(
        suite="mbpp", order_seed=0, task_ids=tuple(t.task_id for t in tasks), model="scripted"
    )
    return StreamRun(tmp_path / "run", settings)


@contextmanager
def _streamed(
    tmp_path: Path,
    sandbox: Sandbox,
    reply: Any,
    tasks: list[StreamTask],
    *,
    strategies: bool = False,
) -> Iterator[tuple[StreamRun, StreamContext, ScriptedModel]]:
    """A run of `tasks` answered by `reply`, its stores open inside the block."""
    model = ScriptedModel(reply)
    run = _run(tmp_path, tasks)
    ctx, store = _context(tmp_path, model, sandbox)
    strategy_store = Store.open(tmp_path / "run" / "strategy.db") if strategies else None
    if strategy_store is not None:
        ctx.strategies = SkillMemory(strategy_store, embedder=ctx.memory.embedder)
    try:
        yield run, ctx, model
    finally:
        store.close()
        if strategy_store is not None:
            strategy_store.close()


def test_facts_arm_shows_a_recurring_environment_fact_to_later_tasks(
    tmp_path: Path, sandbox: Sandbox
) -> None:
    with _streamed(tmp_path, sandbox, _facts_reply, ROOTS) as (run, ctx, _model):
        rows = run_stream(ROOTS, run, ctx, arms=("no_memory", "facts"))
    facts = [r for r in rows if r.arm == "facts"]
    unaided = [r for r in rows if r.arm == "no_memory"]
    assert not any(r.public_passed for r in unaided)  # every no-memory answer forgets the import
    # one failure is no fact: the first two tasks are shown nothing and take the no-memory answer
    assert [r.reused for r in facts[:2]] == [True, True]
    assert not facts[0].lessons_shown and not facts[1].lessons_shown
    # after the second task's missing import, every later task is shown the fact and passes
    for row in facts[2:]:
        assert row.lessons_shown and row.lessons_shown[0].startswith("F-")
        assert row.added_tokens > 0 and not row.reused
        assert row.public_passed and row.passed
    assert not any(r.learned for r in facts)


def test_facts_arm_learns_only_from_public_tests(tmp_path: Path, sandbox: Sandbox) -> None:
    """Answers that pass their public test but fail hidden ones teach no fact."""

    def reply(messages: list[dict[str, Any]]) -> str:
        name = re.search(r"^def (\w+)\(", messages[-1]["content"], re.MULTILINE)
        assert name is not None
        # right on the public call, the hidden copy of it raises NameError (a second call)
        body = "    global n\n    n = globals().get('n', 0) + 1\n    if n > 1:\n        nope()\n"
        return f"```python\ndef {name[1]}(x):\n{body}    return x ** 0.5\n```"

    with _streamed(tmp_path, sandbox, reply, ROOTS) as (run, ctx, _model):
        rows = run_stream(ROOTS, run, ctx, arms=("no_memory", "facts"))
    unaided = [r for r in rows if r.arm == "no_memory"]
    assert all(r.public_passed and not r.passed for r in unaided)
    assert all(r.reused and not r.lessons_shown for r in rows if r.arm == "facts")


# -- the abstain arm --


def _row(position: int, arm: str, public: bool, *shown: str) -> StreamRow:
    return StreamRow(
        position=position,
        task_id=f"t{position}",
        arm=arm,
        passed=public,
        public_passed=public,
        hidden_error="",
        tokens=10,
        added_tokens=0,
        skills_shown=list(shown),
    )


def test_paired_utility_counts_only_earlier_exposures_that_changed_the_outcome() -> None:
    rows = [
        _row(0, "no_memory", False), _row(0, "memory", True, "S1", "S2"),  # helped
        _row(1, "no_memory", True), _row(1, "memory", False, "S2"),  # hurt
        _row(2, "no_memory", True), _row(2, "memory", True, "S1"),  # a tie: nothing
        _row(3, "no_memory", False), _row(3, "abstain", True, "S1"),  # its own exposure
        _row(4, "memory", True, "S3"),  # no no-memory answer to pair with
        _row(5, "no_memory", False), _row(5, "placebo", True, "S4"),  # not an exposing arm
        _row(6, "no_memory", False), _row(6, "memory", True, "S1"),  # at the task: not yet
    ]  # fmt: skip
    assert paired_utility(rows, 6) == {"S1": (2, 0), "S2": (1, 1)}


class _Memory:
    """A playbook stand-in: `abstaining_recall` only reads entries by id."""

    def __init__(self, entries: dict[str, Lesson]) -> None:
        self.entries = entries

    def get(self, entry_id: str) -> Lesson | None:
        return self.entries.get(entry_id)


def test_abstain_shows_only_entries_that_helped_more_than_they_hurt() -> None:
    one, two = static_examples(2)  # two real worked examples
    stand_in = _Memory({"S1": one, "S2": two})
    rows = [
        _row(0, "no_memory", False), _row(0, "memory", True, "S1", "S2"),
        _row(1, "no_memory", True), _row(1, "memory", False, "S2"),
        _row(2, "no_memory", False), _row(2, "memory", False, "S1", "S2", "S9"),
    ]  # fmt: skip
    shown = abstaining_recall(stand_in, "t2", 2, rows)  # type: ignore[arg-type]
    assert [x.lesson.id for x in shown.skills] == [one.id]  # S2: 1 helped, 1 hurt; S9: unseen
    assert shown.skill_sections and one.code_example.strip() in shown.skill_sections[0]
    # the first task: nothing has earned anything yet, so nothing is shown
    first = abstaining_recall(stand_in, "t0", 0, rows)  # type: ignore[arg-type]
    assert not first.skills and not first.lessons and not first.skill_sections
    with pytest.raises(UserError, match="memory arm"):
        abstaining_recall(stand_in, "t7", 7, rows)  # type: ignore[arg-type]


LESSON = (
    "TRIGGER: a numeric helper from the standard library is needed\n"
    "ANTI-PATTERN: calling a module's function without importing the module\n"
    "CORRECT PATTERN: import the module at the top of the solution\n"
    "DOMAINS: python_general\nCONFIDENCE: 0.6\n"
)


def _shown_reply(messages: list[dict[str, Any]]) -> str:
    """Right only when shown something (a lesson or a worked example); the lesson call."""
    if "TRIGGER" in messages[-1]["content"]:
        return LESSON
    return _sqrt_reply(messages, "### SKILL PLAYBOOK", "### WORKED")


def test_abstain_arm_withholds_until_an_entry_has_helped_then_shows_it(
    tmp_path: Path, sandbox: Sandbox
) -> None:
    with _streamed(tmp_path, sandbox, _shown_reply, ROOTS) as (run, ctx, _model):
        rows = run_stream(ROOTS, run, ctx, arms=("no_memory", "memory", "abstain"))
    by = {(r.position, r.arm): r for r in rows}
    assert by[(0, "memory")].learned == "lesson:written"  # failed: a lesson
    lesson = by[(0, "memory")].learned_id
    # the next task: the memory arm is shown the lesson and passes; the abstain arm has
    # no exposure to go by, so it withholds it and takes the failing no-memory answer
    assert lesson in by[(1, "memory")].lessons_shown and by[(1, "memory")].public_passed
    assert by[(1, "abstain")].reused and not by[(1, "abstain")].public_passed
    # once that exposure helped (pass with it, fail without), the abstain arm shows it
    for position in (2, 3):
        mine = by[(position, "abstain")]
        assert mine.lessons_shown == [lesson] and mine.public_passed and not mine.reused
        # the worked examples learned at positions 1 and 2 were never exposed unpaired-free
        assert set(mine.skills_shown) <= {
            s for p in range(position) for s in by[(p, "memory")].skills_shown
        }


# -- the strategy arm --

STRATEGY = (
    "TITLE: Import before use\n"
    "WHEN: computing roots or powers of numbers with a math helper\n"
    "DO: import the module at the top of the solution before calling it\n"
)


def test_parse_strategy_reads_the_three_lines_leniently() -> None:
    item = parse_strategy("**Title**: Import first\n- when: a helper is used\nDO - ignored\nDo: x")
    assert item == StrategyItem("Import first", "a helper is used", "x")
    assert parse_strategy("TITLE: only a title\nWHEN: no do line") is None


def _strategy_reply(messages: list[dict[str, Any]]) -> str:
    """Right only when shown a strategy; the distillation call answers `STRATEGY`."""
    if "Write ONE general strategy" in messages[-1]["content"]:
        return STRATEGY
    return _sqrt_reply(messages, "### SKILL PLAYBOOK")


def test_strategy_arm_distils_from_failures_and_passes_and_shows_the_nearest(
    tmp_path: Path, sandbox: Sandbox
) -> None:
    with _streamed(tmp_path, sandbox, _strategy_reply, ROOTS, strategies=True) as (run, ctx, model):
        run_stream(ROOTS, run, ctx, arms=("no_memory",))
        # a later session: with no answer of its own the arm still learns from the first task
        rows = run_stream(ROOTS, run, ctx, arms=("strategy",))
        in_memory = ctx.memory.list(kind=None)
        items = ctx.strategies.list(kind=None)
    mine = [r for r in rows if r.arm == "strategy"]
    # the first task: nothing to show, the failed answer still teaches (one more call)
    assert not mine[0].lessons_shown and not mine[0].public_passed
    assert mine[0].learned == "strategy:written" and mine[0].model_calls == 2
    assert not mine[0].reused
    # later tasks are shown that item and pass; the same item again only reinforces it
    for row in mine[1:]:
        assert row.lessons_shown == [mine[0].learned_id] and row.public_passed
        assert row.learned == "strategy:reinforced"
    assert [i.extra["strategy"] for i in items] == ["Import before use"]
    assert items[0].extra["from"] == "failure" and not in_memory  # its own database only
    prompts = [m["content"] for call in model.calls for m in call.messages]
    assert any("failed its example test" in p for p in prompts)
    assert any("passed its example test" in p for p in prompts)


def test_a_strategy_that_copies_the_task_is_rejected_and_an_unrelated_task_sees_none(
    tmp_path: Path, sandbox: Sandbox
) -> None:
    copied = "TITLE: Roots\nWHEN: Return the square root of x as a float\nDO: use math.sqrt\n"

    def reply(messages: list[dict[str, Any]]) -> str:
        text = messages[-1]["content"]
        if "Write ONE general strategy" in text:
            return copied if "root_d" in text else STRATEGY
        return _strategy_reply(messages)

    shout = make_task(
        task_id="mbpp_shout",
        suite="mbpp",
        prompt='def shout(word: str) -> str:\n    """\n\tReturn the word in capitals.\n\t"""\n',
        entry_point="shout",
        test="def check(candidate):\n    assert candidate('a') == 'A'\n\n"
        "def test_check():\n    check(shout)\n\ntest_check()\n",
    )
    tasks = [ROOTS[0], ROOTS[3], shout]
    with _streamed(tmp_path, sandbox, reply, tasks, strategies=True) as (run, ctx, _model):
        rows = run_stream(tasks, run, ctx, arms=("strategy",))
    assert rows[1].learned == "strategy:rejected" and "copies" in rows[1].learned_note
    assert not rows[2].lessons_shown  # capitals: nothing near it


# -- the combined arm --


NEARER = (  # distilled from the third task: nearer to the second than `STRATEGY` is
    "TITLE: Square roots\n"
    "WHEN: computing the square root of a number x with a math helper\n"
    "DO: import the module at the top of the solution before calling it\n"
)


def _combined_reply(messages: list[dict[str, Any]]) -> str:
    text = messages[-1]["content"]
    if "Write ONE general strategy" in text:
        return NEARER if "root_c" in text else STRATEGY
    if "TRIGGER" in text:
        return LESSON
    return _sqrt_reply(messages, "### SKILL PLAYBOOK")


def test_combined_arm_shows_facts_then_the_strategy_then_earned_entries(
    tmp_path: Path, sandbox: Sandbox
) -> None:
    reply = _combined_reply
    with _streamed(tmp_path, sandbox, reply, ROOTS, strategies=True) as (run, ctx, _model):
        run_stream(ROOTS, run, ctx, arms=("no_memory", "memory", "strategy"))
        # a later session, over the finished arms: only what existed at each task is shown
        rows = run_stream(ROOTS, run, ctx, arms=("combined",))
        with pytest.raises(UserError, match="strategy arm"):
            combined_recall(ctx.store, ctx.memory, ctx.memory, ROOTS[0], 0, [], [])
    by = {(r.position, r.arm): r for r in rows}
    item = by[(0, "strategy")].learned_id
    lesson = by[(0, "memory")].learned_id
    assert by[(0, "strategy")].learned == "strategy:written" and item
    # the first task: no fact, the only strategy item was distilled from it, nothing earned
    assert by[(0, "combined")].reused and not by[(0, "combined")].lessons_shown
    # the second: the strategy item (no fact yet: one failure; the lesson not yet earned),
    # not the one distilled later from the third task, though retrieval ranks it nearer
    later = by[(2, "strategy")].learned_id
    assert by[(2, "strategy")].learned == "strategy:written" and later != item
    assert by[(1, "combined")].lessons_shown == [item] and by[(1, "combined")].public_passed
    # the third: the missing-import fact (two failures), the strategy, the earned lesson
    shown = by[(2, "combined")].lessons_shown
    assert shown[0].startswith("F-") and shown[1:] == [item, lesson]
    assert not any(r.learned for r in rows if r.arm == "combined")
