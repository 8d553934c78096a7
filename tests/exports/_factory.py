"""Trajectories for the export tests, shaped like the ones the solver, the eval runners and
verification record."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from nightschool.solver.core import SYSTEM_PROMPT
from nightschool.trajectory import Outcome, ToolCall, Trajectory

START = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)

GOOD = "def add(a, b):\n    return a + b\n"
BAD = "def add(a, b):\n    return a - b\n"
WORSE = "def add(a, b):\n    return a * b\n"


def run_call(code: str | None, result: str | None, *, attempt: int = 1) -> ToolCall:
    """A `run_solution` call as the solver records it (result None: not run)."""
    arguments: dict[str, Any] = {"attempt": attempt, "file": "solution.py", "temperature": 0.2}
    if code is not None:
        arguments["code"] = code
    error = None if result == "passed" else "AssertionError: add(2, 3) == 5"
    return ToolCall(name="run_solution", arguments=arguments, result=result, error=error)


def selfplay(
    codes: Sequence[tuple[str | None, str | None]],
    *,
    challenge: str = "c0ffee",
    prompt: str = "Write add(a, b) in solution.py.",
    cluster: str = "algo",
    minutes: int = 0,
    seed: int = 7,
    template: str = "algo.add",
    model: str = "qwen-test",
    outcome: Outcome | None = None,
    extra: dict[str, Any] | None = None,
) -> Trajectory:
    """A self-play trajectory whose attempts ran `codes` ((code, result) per attempt)."""
    calls = [run_call(code, result, attempt=i) for i, (code, result) in enumerate(codes, 1)]
    passed = bool(calls) and calls[-1].result == "passed"
    if outcome is None:
        outcome = Outcome.PASSED if passed else Outcome.FAILED
    return Trajectory(
        timestamp=START + timedelta(minutes=minutes),
        task_kind="selfplay",
        cluster=cluster,
        tier="starter",
        model=model,
        temperature=0.2,
        system_prompt=SYSTEM_PROMPT,
        user_request=prompt,
        tool_calls=calls,
        outcome=outcome,
        failure_reason=None if outcome != Outcome.FAILED else "validator rejected",
        validator_signal="pass" if passed else "fail",
        extra={
            "template": template,
            "seed": seed,
            "challenge_hash": challenge,
            "attempts": len(calls),
            "challenge_source": "template",
            **(extra or {}),
        },
        final_response=f"```python\n{codes[-1][0]}\n```" if codes else "",
    )


def chat(
    request: str = "What is a closure in Python?",
    answer: str = "A function that keeps the variables of the scope it was made in.",
    *,
    outcome: Outcome = Outcome.PASSED,
    tools: bool = False,
    minutes: int = 0,
) -> Trajectory:
    """A chat turn (optionally with one tool call)."""
    calls = [ToolCall(name="read_file", arguments={"path": "a.txt"}, result="42")] if tools else []
    return Trajectory(
        timestamp=START + timedelta(minutes=minutes),
        task_kind="chat",
        model="qwen-test",
        system_prompt="You are a helpful assistant.",
        user_request=request,
        tool_calls=calls,
        outcome=outcome,
        final_response=answer,
    )


def measured(
    kind: str,
    *,
    challenge: str = "",
    prompt: str = "Held-out task text.",
    template: str = "algo.heldout",
    curve_set: str | None = None,
    outcome: Outcome = Outcome.PASSED,
    minutes: int = 0,
) -> Trajectory:
    """An `eval` or `verification` trajectory (optionally a learning-curve item of `curve_set`)."""
    extra: dict[str, Any] = {"template": template, "seed": 1_000_000_123}
    if challenge:
        extra["challenge_hash"] = challenge
    if curve_set is not None:
        extra["learning_curve"] = {"checkpoint": 0, "arm": "none", "set": curve_set}
    return Trajectory(
        timestamp=START + timedelta(minutes=minutes),
        task_kind=kind,
        cluster="algo",
        tier="starter",
        model="qwen-test",
        system_prompt=SYSTEM_PROMPT,
        user_request=prompt,
        tool_calls=[run_call(GOOD, "passed")] if outcome == Outcome.PASSED else [],
        outcome=outcome,
        failure_reason=None if outcome != Outcome.FAILED else "no",
        extra=extra,
    )
