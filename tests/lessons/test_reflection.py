"""The Reflector on the real SQLite store, with the scripted model and the embedded one."""

from __future__ import annotations

import importlib.util
import logging
import threading
import time
from collections.abc import Sequence
from typing import Any

import pytest

from nightschool.errors import ModelUnavailableError
from nightschool.lessons.reflection import (
    REFLECTION_PROMPT,
    ReflectionSink,
    Reflector,
    ReflectorConfig,
    build_prompt,
    parse_reflection,
)
from nightschool.llm import ChatModel, Completion, Message, ScriptedModel
from nightschool.store import Store
from nightschool.trajectory import Correction, Outcome, ToolCall, Trajectory

GOOD_REPLY = (
    "DIAGNOSIS: The agent read access.log without checking that the file exists.\n"
    "REVISED PLAN:\n"
    "1. List the workspace to find the log file.\n"
    "2. Open the file that actually exists.\n"
    "3. Count the ERROR lines and report the number.\n"
)
DIAGNOSIS = "The agent read access.log without checking that the file exists."
PLAN = [
    "List the workspace to find the log file.",
    "Open the file that actually exists.",
    "Count the ERROR lines and report the number.",
]


# -- parse_reflection ---------------------------------------------------------------

PARSE_CASES: list[tuple[str, str, tuple[str, list[str]] | None]] = [
    ("canonical", GOOD_REPLY, (DIAGNOSIS, PLAN)),
    (
        "lowercase headers, 1) numbering",
        "diagnosis: wrong file name.\nrevised plan:\n1) list files\n2) read the right one",
        ("wrong file name.", ["list files", "read the right one"]),
    ),
    (
        "markdown bold",
        "**Diagnosis:** The loop never ends.\n\n**Revised Plan:**\n1. Add a break.\n2. Test it.",
        ("The loop never ends.", ["Add a break.", "Test it."]),
    ),
    (
        "bold header with colon outside",
        "**DIAGNOSIS**: Off by one.\n**REVISED PLAN**:\n1. Use range(n + 1).",
        ("Off by one.", ["Use range(n + 1)."]),
    ),
    (
        "markdown headings, diagnosis on the next line, dash bullets",
        "## Diagnosis\nThe regex was too greedy.\n\n## Revised plan\n- Use a non-greedy "
        "quantifier.\n- Add a test with two matches.",
        (
            "The regex was too greedy.",
            ["Use a non-greedy quantifier.", "Add a test with two matches."],
        ),
    ),
    (
        "Step N: style",
        "DIAGNOSIS: It never parsed the header row.\nREVISED PLAN:\nStep 1: Skip the header.\n"
        "Step 2: Parse the rest.",
        ("It never parsed the header row.", ["Skip the header.", "Parse the rest."]),
    ),
    (
        "star bullets with bold step labels",
        "Diagnosis: bad SQL join.\nRevised plan:\n* **Step 1:** Inspect the schema.\n"
        "* **Step 2:** Join on the key.",
        ("bad SQL join.", ["Inspect the schema.", "Join on the key."]),
    ),
    (
        "prose before and after",
        "Sure! Here is my analysis of the failure.\n\nDIAGNOSIS: The function returned "
        "None.\nREVISED PLAN:\n1. Return the value.\n2. Run the tests.\n\nI hope this helps! "
        "Let me know if you need more.",
        ("The function returned None.", ["Return the value.", "Run the tests."]),
    ),
    (
        "more than five steps are cut to five",
        "DIAGNOSIS: too slow.\nREVISED PLAN:\n" + "\n".join(f"{i}. step {i}" for i in range(1, 9)),
        ("too slow.", [f"step {i}" for i in range(1, 6)]),
    ),
    (
        "everything on one line",
        "DIAGNOSIS: It used the wrong file. REVISED PLAN: 1. List files. 2. Read data.csv. "
        "3. Sum the column.",
        ("It used the wrong file.", ["List files.", "Read data.csv.", "Sum the column."]),
    ),
    (
        "wrapped step lines",
        "DIAGNOSIS: The date format was wrong.\nREVISED PLAN:\n1. Parse dates with\n"
        "   datetime.strptime.\n2. Print ISO dates.",
        (
            "The date format was wrong.",
            ["Parse dates with datetime.strptime.", "Print ISO dates."],
        ),
    ),
    (
        "template echoed back before the real answer",
        "DIAGNOSIS: <one sentence: the main mistake>\nREVISED PLAN:\n1. <first step>\n"
        "2. <next step>\n\nDIAGNOSIS: The agent guessed the file name.\nREVISED PLAN:\n"
        "1. Look for the file first.",
        ("The agent guessed the file name.", ["Look for the file first."]),
    ),
    (
        "plan given as text on the header line",
        "DIAGNOSIS: It did not check the input.\nREVISED PLAN: Validate the input before use.",
        ("It did not check the input.", ["Validate the input before use."]),
    ),
    (
        "numbered list without a plan header",
        "Diagnosis: wrong encoding.\n\nHere is what to do instead:\n1. Open with utf-8.\n"
        "2. Strip the BOM.",
        ("wrong encoding.", ["Open with utf-8.", "Strip the BOM."]),
    ),
    (
        "messy small-model output with sub-bullets and a trailing note",
        "  Diagnosis:   The assistant   printed the sum instead of the average .\n"
        "Revised Plan :\n\n1. **Compute** the sum\n    - then divide by the count\n"
        "2. Print `avg` with two decimals\nNote: be careful with empty lists.",
        (
            "The assistant printed the sum instead of the average .",
            ["Compute the sum then divide by the count", "Print `avg` with two decimals"],
        ),
    ),
    ("missing plan", "DIAGNOSIS: The agent gave up.\n\nThat is all.", None),
    ("missing diagnosis", "REVISED PLAN:\n1. Try again.\n2. Harder.", None),
    ("placeholders only", "DIAGNOSIS: <one sentence>\nREVISED PLAN:\n1. <first step>", None),
    ("empty reply", "", None),
    ("plain chatter", "I am sorry, I cannot help with that request.", None),
]


@pytest.mark.parametrize(
    ("text", "expected"), [case[1:] for case in PARSE_CASES], ids=[case[0] for case in PARSE_CASES]
)
def test_parse_reflection(text: str, expected: tuple[str, list[str]] | None) -> None:
    assert parse_reflection(text) == expected


# -- helpers --------------------------------------------------------------------------


def failed_trajectory(store: Store, **changes: Any) -> Trajectory:
    fields: dict[str, Any] = {
        "session_id": "session-1",
        "task_kind": "chat",
        "cluster": "data_analysis",
        "tier": "basic",
        "user_request": "Count the ERROR lines in access.log",
        "tool_calls": [
            ToolCall(
                name="run_bash",
                arguments={"command": "grep -c ERROR access.log"},
                error="grep: access.log: No such file or directory",
            )
        ],
        "outcome": Outcome.FAILED,
        "failure_reason": "the file access.log does not exist",
        "validator_signal": "expected 12, got nothing",
        "final_response": "There are 0 errors.",
    }
    fields.update(changes)
    return store.append_trajectory(Trajectory(**fields))


def claim(store: Store, trajectory_id: str) -> tuple[Any, ...] | None:
    rows = store.query(
        "SELECT status, reflection_trajectory_id, detail, claimed_at, finished_at "
        "FROM reflection_claims WHERE trajectory_id = ?",
        (trajectory_id,),
    )
    return rows[0] if rows else None


def reflections(store: Store) -> list[Trajectory]:
    return list(store.iter_trajectories(task_kind="reflection"))


class RecordingSink:
    def __init__(self) -> None:
        self.calls: list[tuple[Any, Trajectory]] = []

    def __call__(self, reflection: Any, source: Trajectory) -> str:
        self.calls.append((reflection, source))
        return f"lesson-for-{source.id}"


# -- reflect_one ------------------------------------------------------------------------


def test_reflect_one_stores_the_reflection_and_calls_the_sink(store: Store) -> None:
    source = failed_trajectory(store)
    model = ScriptedModel([GOOD_REPLY], name="critic")
    sink = RecordingSink()
    reflector = Reflector(store, model, sink=sink)

    outcome = reflector.reflect_one(source)

    assert outcome.status == "reflected", outcome.detail
    assert outcome.sink_result == f"lesson-for-{source.id}"
    reflection = outcome.reflection
    assert reflection is not None
    assert reflection.source_trajectory_id == source.id
    assert (reflection.diagnosis, reflection.revised_plan) == (DIAGNOSIS, PLAN)
    assert sink.calls == [(reflection, store.get_trajectory(source.id))]

    [stored] = reflections(store)
    assert stored.id == reflection.reflection_trajectory_id
    assert stored.extra["reflected_from"] == source.id
    assert stored.extra["diagnosis"] == DIAGNOSIS and stored.extra["revised_plan"] == PLAN
    assert stored.outcome == Outcome.UNKNOWN and stored.failure_reason is None
    assert (stored.session_id, stored.cluster, stored.tier) == (
        "session-1",
        "data_analysis",
        "basic",
    )
    assert stored.model == "critic" and stored.temperature == 0.3
    assert stored.final_response == GOOD_REPLY
    assert stored.planning_output.splitlines()[0] == "1. List the workspace to find the log file."
    assert stored.tokens_in > 0 and stored.tokens_out > 0

    status, reflection_id, _, _, finished_at = claim(store, source.id) or ()
    assert (status, reflection_id) == ("done", stored.id) and finished_at is not None

    # What the model saw: the task, the compacted tool call, the reasons, the format.
    [call] = model.calls
    assert call.temperature == 0.3 and call.max_tokens == 400
    prompt = call.messages[-1]["content"]
    assert stored.user_request == prompt
    for expected in (
        "Count the ERROR lines in access.log",
        "run_bash(command='grep -c ERROR access.log')",
        "ERROR: grep: access.log: No such file or directory",
        "There are 0 errors.",
        "the file access.log does not exist",
        "expected 12, got nothing",
        "DIAGNOSIS:",
        "REVISED PLAN:",
    ):
        assert expected in prompt


def test_dedup_is_shared_by_reflect_one_and_run(store: Store) -> None:
    first, second = failed_trajectory(store), failed_trajectory(store)
    model = ScriptedModel([GOOD_REPLY, GOOD_REPLY])
    reflector = Reflector(store, model)

    assert reflector.reflect_one(first).status == "reflected"
    again = reflector.reflect_one(first)
    assert (again.status, again.detail) == ("skipped", "already reflected (done)")
    assert [t.id for t in reflector.pending()] == [second.id]

    report = reflector.run(limit=10)
    assert (report.considered, report.reflected) == (1, 1)
    assert report.outcomes[0].source_trajectory_id == second.id
    assert reflector.reflect_one(second).status == "skipped"
    assert reflector.run().considered == 0
    # A second Reflector on the same database sees the same record.
    assert Reflector(store, ScriptedModel([])).reflect_one(first).status == "skipped"
    assert len(model.calls) == 2 and len(reflections(store)) == 2


@pytest.mark.parametrize("outcome", [Outcome.PASSED, Outcome.UNKNOWN])
def test_only_failed_trajectories_are_reflected(store: Store, outcome: Outcome) -> None:
    source = failed_trajectory(store, outcome=outcome, failure_reason=None)
    model = ScriptedModel([GOOD_REPLY])
    reflector = Reflector(store, model)

    result = reflector.reflect_one(source)

    assert result.status == "skipped" and f"outcome is {outcome.value}" in result.detail
    assert reflector.pending() == [] and reflector.run().considered == 0
    assert model.calls == [] and claim(store, source.id) is None


def test_reflections_are_never_reflected(store: Store) -> None:
    reflection = failed_trajectory(store, task_kind="reflection")
    tagged = failed_trajectory(store, extra={"reflected_from": "x"})
    model = ScriptedModel([GOOD_REPLY])
    reflector = Reflector(store, model)

    for trajectory in (reflection, tagged):
        result = reflector.reflect_one(trajectory)
        assert result.status == "skipped" and "reflection" in result.detail
    assert reflector.pending() == [] and model.calls == []


def test_eval_tasks_never_become_lessons(store: Store) -> None:
    benchmark_item = failed_trajectory(store, task_kind="eval")
    chat_turn = failed_trajectory(store, task_kind="chat")
    model = ScriptedModel([GOOD_REPLY])
    reflector = Reflector(store, model)

    result = reflector.reflect_one(benchmark_item)

    assert result.status == "skipped" and "eval task" in result.detail
    assert [t.id for t in reflector.pending()] == [chat_turn.id] and model.calls == []


def test_unstored_and_infrastructure_failures_are_skipped(store: Store) -> None:
    reflector = Reflector(store, ScriptedModel([GOOD_REPLY]))
    loose = Trajectory(task_kind="chat", outcome=Outcome.FAILED, failure_reason="x")
    assert "not in the store" in reflector.reflect_one(loose).detail
    broken = failed_trajectory(store, extra={"infrastructure_error": "sandbox down"})
    assert "infrastructure error" in reflector.reflect_one(broken).detail


def test_effective_outcome_after_corrections_decides(store: Store) -> None:
    overridden = failed_trajectory(store)
    store.add_correction(
        Correction(trajectory_id=overridden.id, outcome=Outcome.PASSED, source="user")
    )
    promoted = failed_trajectory(store, outcome=Outcome.UNKNOWN, failure_reason=None)
    store.add_correction(
        Correction(
            trajectory_id=promoted.id,
            outcome=Outcome.FAILED,
            failure_reason="user said: no, that is wrong",
            source="user_correction",
        )
    )
    model = ScriptedModel([GOOD_REPLY])
    reflector = Reflector(store, model)

    assert [t.id for t in reflector.pending()] == [promoted.id]
    skipped = reflector.reflect_one(overridden)
    assert skipped.status == "skipped" and "outcome is passed" in skipped.detail
    # The in-memory copy says unknown; the store's overlay says failed: the store wins.
    assert reflector.reflect_one(promoted).status == "reflected"
    assert "user said: no, that is wrong" in model.calls[0].messages[-1]["content"]


def test_infrastructure_error_releases_the_claim_for_a_later_pass(store: Store) -> None:
    source = failed_trajectory(store)
    model = ScriptedModel([ModelUnavailableError("connection refused"), GOOD_REPLY])
    reflector = Reflector(store, model)

    failed = reflector.reflect_one(source)

    assert failed.status == "error" and "connection refused" in failed.detail
    assert claim(store, source.id) is None and reflections(store) == []
    assert store.get_trajectory(source.id) == source  # nothing recorded against the agent
    assert [t.id for t in reflector.pending()] == [source.id]
    assert reflector.reflect_one(source).status == "reflected"
    assert claim(store, source.id)[0] == "done"  # type: ignore[index]


def test_timeout_releases_the_claim(store: Store) -> None:
    source = failed_trajectory(store)

    def slow(messages: Sequence[Message]) -> str:
        time.sleep(0.5)
        return GOOD_REPLY

    reflector = Reflector(store, ScriptedModel(slow), ReflectorConfig(per_call_timeout_s=0.05))
    start = time.monotonic()
    outcome = reflector.reflect_one(source)

    assert time.monotonic() - start < 0.4
    assert outcome.status == "error" and outcome.detail == "timeout after 0.05s"
    assert claim(store, source.id) is None and reflections(store) == []
    time.sleep(0.5)  # the abandoned call finishes; its reply is dropped
    assert reflections(store) == [] and claim(store, source.id) is None


def test_unparseable_reply_is_recorded_and_not_retried(
    store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    source = failed_trajectory(store)
    model = ScriptedModel(["I think it went fine, honestly.", GOOD_REPLY])
    reflector = Reflector(store, model)

    with caplog.at_level(logging.DEBUG, logger="nightschool.lessons.reflection"):
        outcome = reflector.reflect_one(source)

    assert outcome.status == "unparseable" and outcome.reflection is None
    assert "unparseable" in caplog.text
    assert claim(store, source.id)[:2] == ("unparseable", None)  # type: ignore[index]
    assert reflections(store) == []
    assert reflector.reflect_one(source).status == "skipped"
    assert reflector.pending() == [] and reflector.run().considered == 0
    assert len(model.calls) == 1


def test_run_stops_after_max_failures(store: Store) -> None:
    sources = [failed_trajectory(store) for _ in range(5)]
    model = ScriptedModel([ModelUnavailableError(f"down {i}") for i in range(5)])
    reflector = Reflector(store, model, ReflectorConfig(max_failures_per_run=2))
    seen: list[str] = []

    report = reflector.run(limit=10, on_outcome=lambda outcome: seen.append(outcome.status))

    assert report.stopped_early and (report.considered, report.errors) == (2, 2)
    assert seen == ["error", "error"] and len(model.calls) == 2
    assert len(reflector.pending()) == 5  # every claim was released
    assert store.query("SELECT COUNT(*) FROM reflection_claims") == [(0,)]
    assert {t.id for t in reflector.pending()} == {t.id for t in sources}


def test_run_goes_newest_first_within_limit_and_counts(store: Store) -> None:
    base = time.time()
    from datetime import UTC, datetime

    ids = [
        failed_trajectory(store, timestamp=datetime.fromtimestamp(base + i, UTC)).id
        for i in range(4)
    ]
    model = ScriptedModel([GOOD_REPLY, "no format at all", ModelUnavailableError("blip")])
    report = Reflector(store, model).run(limit=3)

    assert [o.source_trajectory_id for o in report.outcomes] == ids[::-1][:3]
    assert [o.status for o in report.outcomes] == ["reflected", "unparseable", "error"]
    assert (report.reflected, report.unparseable, report.errors, report.skipped) == (1, 1, 1, 0)
    assert not report.stopped_early


def test_keyboard_interrupt_releases_the_claim(store: Store) -> None:
    source = failed_trajectory(store)
    reflector = Reflector(store, ScriptedModel([KeyboardInterrupt()]))

    with pytest.raises(KeyboardInterrupt):
        reflector.reflect_one(source)

    assert claim(store, source.id) is None and reflections(store) == []


def test_sink_failure_keeps_the_reflection(store: Store) -> None:
    source = failed_trajectory(store)

    def broken_sink(reflection: Any, trajectory: Trajectory) -> None:
        raise RuntimeError("lesson store is full")

    sink: ReflectionSink = broken_sink
    outcome = Reflector(store, ScriptedModel([GOOD_REPLY]), sink=sink).reflect_one(source)

    assert outcome.status == "reflected" and "lesson store is full" in outcome.detail
    assert outcome.sink_result is None and len(reflections(store)) == 1
    assert claim(store, source.id)[0] == "done"  # type: ignore[index]


def test_fresh_claims_block_and_stale_claims_are_reclaimed(store: Store) -> None:
    fresh, stale = failed_trajectory(store), failed_trajectory(store)
    with store.transaction() as conn:
        conn.execute(
            "INSERT INTO reflection_claims(trajectory_id, status, claimed_at) VALUES "
            "(?, 'in_progress', ?), (?, 'in_progress', ?)",
            (fresh.id, time.time(), stale.id, time.time() - 7200),
        )
    reflector = Reflector(store, ScriptedModel([GOOD_REPLY]), ReflectorConfig(stale_claim_s=3600))

    assert [t.id for t in reflector.pending()] == [stale.id]
    blocked = reflector.reflect_one(fresh)
    assert (blocked.status, blocked.detail) == ("skipped", "in progress")
    assert reflector.reflect_one(stale).status == "reflected"
    assert claim(store, stale.id)[0] == "done"  # type: ignore[index]
    assert claim(store, fresh.id)[0] == "in_progress"  # type: ignore[index]


def test_concurrent_paths_reflect_once(store: Store) -> None:
    source = failed_trajectory(store)
    gate = threading.Event()

    def slow(messages: Sequence[Message]) -> str:
        gate.wait(5)
        return GOOD_REPLY

    model = ScriptedModel(slow)
    reflector = Reflector(store, model)
    results: list[str] = []
    worker = threading.Thread(target=lambda: results.append(reflector.reflect_one(source).status))
    worker.start()
    deadline = time.monotonic() + 5
    while claim(store, source.id) is None and time.monotonic() < deadline:
        time.sleep(0.01)
    report = reflector.run()  # the backlog path while the real-time call is pending
    gate.set()
    worker.join(5)

    assert report.considered == 0
    assert results == ["reflected"] and len(model.calls) == 1 and len(reflections(store)) == 1


def test_prompt_is_truncated_for_a_small_context(store: Store) -> None:
    calls = [
        ToolCall(name=f"tool_{i}", arguments={"code": "x = 1\n" * 500}, result="ok " * 500)
        for i in range(40)
    ]
    huge = Trajectory(
        task_kind="chat",
        user_request="please " * 2000,
        tool_calls=calls,
        outcome=Outcome.FAILED,
        failure_reason="bad " * 500,
        validator_signal="AssertionError " * 500,
        final_response="answer " * 2000,
    )
    prompt = build_prompt(huge)

    assert len(prompt) < 6500
    assert "tool_0(" in prompt and "tool_39(" in prompt and "tool_20(" not in prompt
    assert "(30 more tool calls)" in prompt
    assert prompt.startswith(REFLECTION_PROMPT.split("{")[0])
    assert "(no tool calls)" in build_prompt(huge.model_copy(update={"tool_calls": []}))


# -- the real embedded model ------------------------------------------------------------


class Recording:
    """Wraps a ChatModel and keeps the last completion, to print the raw reply."""

    def __init__(self, inner: ChatModel) -> None:
        self.inner = inner
        self.last: Completion | None = None

    @property
    def name(self) -> str:
        return self.inner.name

    def complete(
        self,
        messages: Sequence[Message],
        *,
        temperature: float = 0.2,
        max_tokens: int = 512,
        seed: int | None = None,
        grammar: str | None = None,
    ) -> Completion:
        self.last = self.inner.complete(
            messages, temperature=temperature, max_tokens=max_tokens, seed=seed, grammar=grammar
        )
        return self.last


@pytest.mark.store_backends("sqlite")
@pytest.mark.e2e
@pytest.mark.skipif(
    importlib.util.find_spec("llama_cpp") is None, reason="llama_cpp is not importable"
)
def test_reflect_one_on_the_embedded_model(store: Store) -> None:
    from nightschool.llm import EmbeddedConfig, EmbeddedModel

    source = failed_trajectory(store)
    # One thread: llama.cpp's workers spin-wait, and with other processes busy on a
    # 2-core machine 2 threads took 51 s for this reply, 1 thread 8 s (measured).
    with EmbeddedModel(EmbeddedConfig(model="smollm2-135m", n_ctx=2048, n_threads=1)) as embedded:
        model = Recording(embedded)
        config = ReflectorConfig(max_tokens=300, per_call_timeout_s=120, seed=0)
        start = time.monotonic()
        outcome = Reflector(store, model, config).reflect_one(source)
        elapsed = time.monotonic() - start

    assert model.last is not None
    print(
        f"\nembedded reply ({elapsed:.1f}s, {model.last.tokens_in} tokens in, "
        f"{model.last.tokens_out} out, status={outcome.status}):\n{model.last.text}"
    )
    assert model.last.tokens_out <= 300
    row = claim(store, source.id)
    assert row is not None
    stored = reflections(store)
    # The grammar (REFLECTION_GRAMMAR) constrains the 135M model to the format.
    assert outcome.status == "reflected", (outcome.detail, model.last.text)
    assert outcome.reflection is not None and row[:2] == ("done", stored[0].id)
    assert stored[0].extra["reflected_from"] == source.id
    assert stored[0].final_response == model.last.text
    assert 1 <= len(outcome.reflection.revised_plan) <= 5
