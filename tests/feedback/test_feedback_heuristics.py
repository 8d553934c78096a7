from __future__ import annotations

from typing import Any

import pytest

from nightschool.browser import SEQUENCE_ABORTED_BANNER
from nightschool.feedback import (
    REPEATED_ACTION_THRESHOLD,
    REPEATED_ERROR_THRESHOLD,
    STEP_LIMIT_MARKER,
    apply_chat_outcome_heuristics,
    classify_chat_outcome,
    normalise_error,
)
from nightschool.feedback.heuristics import SELECTOR_THRASH_THRESHOLD
from nightschool.trajectory import Outcome, ToolCall, Trajectory


def turn(*calls: ToolCall, final: str = "done", **kw: Any) -> Trajectory:
    return Trajectory(task_kind="chat", tool_calls=list(calls), final_response=final, **kw)


def err(error: str, name: str = "run_python", code: str = "x") -> ToolCall:
    return ToolCall(name=name, arguments={"code": code}, error=error)


def test_healthy_turn_stays_unknown() -> None:
    t = turn(ToolCall(name="run_python", arguments={"code": "print(1)"}, result="1"))
    assert classify_chat_outcome(t) == (Outcome.UNKNOWN, None)
    assert apply_chat_outcome_heuristics(t) is t


def test_abort_marker_fails_the_turn() -> None:
    outcome, reason = classify_chat_outcome(turn(final=f"I stopped.\n\n{STEP_LIMIT_MARKER}"))
    assert outcome == Outcome.FAILED
    assert reason is not None and STEP_LIMIT_MARKER in reason


def test_any_attempt_aborted_marker_counts() -> None:
    outcome, reason = classify_chat_outcome(turn(final="x [ATTEMPT_ABORTED_NGRAM_LOOP] y"))
    assert outcome == Outcome.FAILED
    assert reason is not None and "[ATTEMPT_ABORTED_NGRAM_LOOP]" in reason


def test_same_normalised_error_three_times_fails() -> None:
    t = turn(
        err("Error: NameError: x is not defined", code="a"),
        err("error:   nameerror: x is NOT defined\n", code="b"),
        err("NameError:  x is not defined", code="c"),
    )
    outcome, reason = classify_chat_outcome(t)
    assert outcome == Outcome.FAILED
    assert reason is not None and "3 times" in reason and "run_python" in reason


def test_two_repeated_errors_are_below_threshold() -> None:
    assert REPEATED_ERROR_THRESHOLD == 3
    t = turn(err("boom", code="a"), err("boom", code="b"), err("other", code="c"))
    assert classify_chat_outcome(t)[0] == Outcome.UNKNOWN


def test_single_tool_error_never_fires() -> None:
    assert classify_chat_outcome(turn(err("boom")))[0] == Outcome.UNKNOWN


def test_same_error_on_different_tools_is_not_repeated() -> None:
    t = turn(
        err("boom", name="run_python", code="a"),
        err("boom", name="run_shell", code="b"),
        err("boom", name="read_file", code="c"),
    )
    assert classify_chat_outcome(t)[0] == Outcome.UNKNOWN


def test_repeated_identical_actions_fail() -> None:
    call = ToolCall(name="list_files", arguments={"path": "."}, result="(empty)")
    outcome, reason = classify_chat_outcome(turn(call, call, call))
    assert REPEATED_ACTION_THRESHOLD == 3
    assert outcome == Outcome.FAILED
    assert reason is not None and "list_files" in reason


def test_argument_order_does_not_hide_repetition() -> None:
    a = ToolCall(name="write_file", arguments={"path": "a", "content": "x"})
    b = ToolCall(name="write_file", arguments={"content": "x", "path": "a"})
    assert classify_chat_outcome(turn(a, b, a))[0] == Outcome.FAILED


def test_different_arguments_are_not_repetition() -> None:
    calls = [ToolCall(name="read_file", arguments={"path": f"f{i}"}) for i in range(5)]
    assert classify_chat_outcome(turn(*calls))[0] == Outcome.UNKNOWN


@pytest.mark.parametrize("outcome", [Outcome.PASSED, Outcome.FAILED])
def test_existing_verdict_is_never_overruled(outcome: Outcome) -> None:
    reason = "validator said so" if outcome == Outcome.FAILED else None
    t = turn(final=STEP_LIMIT_MARKER, outcome=outcome, failure_reason=reason)
    assert classify_chat_outcome(t) == (outcome, reason)


def test_infrastructure_error_turn_is_never_touched() -> None:
    t = turn(
        err("boom", code="a"),
        err("boom", code="a"),
        err("boom", code="a"),
        final=STEP_LIMIT_MARKER,
        extra={"infrastructure_error": "ModelUnavailableError: down"},
    )
    assert classify_chat_outcome(t) == (Outcome.UNKNOWN, None)


def test_apply_returns_a_promoted_copy() -> None:
    t = turn(final=STEP_LIMIT_MARKER)
    promoted = apply_chat_outcome_heuristics(t)
    assert promoted is not t
    assert t.outcome == Outcome.UNKNOWN
    assert promoted.outcome == Outcome.FAILED
    assert promoted.extra["failure_source"] == "heuristic"


def test_normalise_error() -> None:
    assert normalise_error("  Error:  Boom\n  happened ") == "boom happened"
    assert normalise_error("ERROR: error: x") == "x"
    assert normalise_error("TypeError: x") == "typeerror: x"


# -- the browser tool (seed 002: selector thrash, sequence aborted) -------------------


def click(*selectors: str, op: str = "interact") -> ToolCall:
    actions = [{"action": "click", "selector": selector} for selector in selectors]
    return ToolCall(name="browser", arguments={"op": op, "actions": actions}, result="ok")


def test_a_selector_three_times_is_below_the_thrash_threshold() -> None:
    assert SELECTOR_THRASH_THRESHOLD == 4
    t = turn(
        click("#send", "#name"),
        click("#send"),
        ToolCall(name="browser", arguments={"op": "read", "selector": "#send"}, result="Send"),
    )
    assert classify_chat_outcome(t) == (Outcome.UNKNOWN, None)


def test_a_selector_four_times_counting_sub_actions_fails() -> None:
    t = turn(
        click("#send", "#send"),
        ToolCall(name="browser", arguments={"op": "read", "selector": " #send "}, result="x"),
        click("#other", "#send"),
    )
    outcome, reason = classify_chat_outcome(t)
    assert outcome == Outcome.FAILED
    assert reason == "browser selector '#send' attempted 4 times in one turn"


def test_thrash_counts_actions_sent_as_a_json_string() -> None:
    actions = '[{"action": "click", "selector": "#go"}, {"action": "click", "selector": "#go"}]'
    calls = [
        ToolCall(name="browser", arguments={"op": "interact", "actions": actions, "n": i})
        for i in range(2)
    ]
    assert classify_chat_outcome(turn(*calls))[0] == Outcome.FAILED


def test_only_browser_calls_count_as_selectors() -> None:
    calls = [
        ToolCall(name="run_python", arguments={"code": str(i), "selector": "#send"})
        for i in range(5)
    ]
    assert classify_chat_outcome(turn(*calls))[0] == Outcome.UNKNOWN


def test_gotos_are_not_selectors() -> None:
    url = "http://127.0.0.1:8000/"
    actions = [{"action": "goto", "url": url, "selector": url}] * 2
    calls = [
        ToolCall(name="browser", arguments={"op": "interact", "actions": actions, "i": i})
        for i in range(2)
    ]
    assert classify_chat_outcome(turn(*calls))[0] == Outcome.UNKNOWN


def test_an_aborted_browser_sequence_fails_the_turn() -> None:
    banner = f"{SEQUENCE_ABORTED_BANNER}: goto_failed (aborted_sequence: true; 2 of 3 not run)"
    t = turn(ToolCall(name="browser", arguments={"op": "interact"}, result=f"{banner}\n1. goto"))
    outcome, reason = classify_chat_outcome(t)
    assert outcome == Outcome.FAILED
    assert reason == f"browser sequence aborted: {banner}"
    in_error = turn(
        ToolCall(name="browser", arguments={}, error=f"{SEQUENCE_ABORTED_BANNER}: click_failed")
    )
    assert classify_chat_outcome(in_error)[0] == Outcome.FAILED


def test_the_banner_from_another_tool_is_not_a_browser_abort() -> None:
    printed = ToolCall(
        name="run_python", arguments={"code": "print(b)"}, result=SEQUENCE_ABORTED_BANNER
    )
    assert classify_chat_outcome(turn(printed))[0] == Outcome.UNKNOWN
