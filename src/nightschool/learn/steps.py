"""Step states of a trajectory, their features and their value labels.

A step is one tool call (for the self-play solver: one `run_solution` attempt).
The state after step i is everything known once that step's result is in: the
request (cluster, tier, task kind, prompt size, lessons and skills shown) and
the history up to and including step i (its verdict and error kind, how far
the checker got, the code's size and how much it changed since the previous
attempt, whether the same error repeats). Unlike the prior system's PRM, which
saw one state per turn and so learned request difficulty (prefix AUC
0.59-0.66, PRIOR-ART.md), these features change from step to step.

Nothing here may depend on the trajectory's length or final outcome, or a
value model could read the answer off the state: a state only looks back.

Labels (PRIOR-ART.md): `V_i = gamma ** (N - i - 1) * terminal` for the N
steps of a trajectory, `terminal` 1 for `passed` and 0 for `failed`, with
gamma = 0.9; trajectories with outcome `unknown` (no verdict, an
infrastructure fault) are skipped.
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass

from nightschool.trajectory import Outcome, ToolCall, Trajectory

__all__ = [
    "CLUSTERS",
    "FEATURE_NAMES",
    "GAMMA",
    "REQUEST_FEATURES",
    "TRAINING_KINDS",
    "LabelledStates",
    "StepState",
    "label_states",
    "request_features",
    "step_states",
]

GAMMA = 0.9
"""Discount of the step value labels (PRIOR-ART.md)."""

CLUSTERS = (
    "algo",
    "bash",
    "concurrency",
    "data_analysis",
    "python_general",
    "regex_parse",
    "sql",
)
"""The template bank's clusters, one indicator feature each (others: `cluster_other`)."""

TIERS = ("starter", "basic", "intermediate", "advanced", "expert")
"""Tiers in order of difficulty; `tier_rank` is the index (unknown: -1)."""

TRAINING_KINDS = ("selfplay", "verification", "chat")
"""Task kinds a PRM learns from. `eval` is left out: those are the held-out
items every learned component is measured on."""

_TEST_OF = re.compile(r"\(test (\d+) of (\d+)\)")
_ERROR_KINDS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("err_syntax", re.compile(r"SyntaxError|IndentationError|syntax error")),
    (
        "err_name",
        re.compile(r"NameError|ImportError|ModuleNotFoundError|AttributeError|command not found"),
    ),
    (
        "err_runtime",
        re.compile(r"TypeError|ValueError|KeyError|IndexError|ZeroDivisionError|RecursionError"),
    ),
    ("err_wrong_answer", re.compile(r"expected|mismatch|differ", re.IGNORECASE)),
    ("err_exit_status", re.compile(r"exited with status|exit code|non-zero", re.IGNORECASE)),
    ("err_timeout", re.compile(r"timed out|timeout", re.IGNORECASE)),
)

REQUEST_FEATURES: tuple[str, ...] = (
    *(f"cluster_{name}" for name in CLUSTERS),
    "cluster_other",
    "tier_rank",
    "kind_selfplay",
    "kind_verification",
    "kind_chat",
    "bash_solution",
    "log_prompt_chars",
    "lessons_shown",
    "skills_shown",
)
"""Features that are the same for every step of a trajectory (the request)."""

STEP_FEATURES: tuple[str, ...] = (
    "step_index",
    "verdict_passed",
    "verdict_failed",
    "no_code",
    "duplicate",
    "tool_ok",
    *(name for name, _ in _ERROR_KINDS),
    "test_progress",
    "test_progress_known",
    "log_feedback_chars",
    "log_code_lines",
    "code_defs",
    "code_imports",
    "code_similarity_prev",
    "progress_delta",
    "best_progress_so_far",
    "prior_failures",
    "prior_no_code",
    "same_error_as_prev",
    "temperature",
)
"""Features that change from step to step (the state after the step)."""

FEATURE_NAMES: tuple[str, ...] = REQUEST_FEATURES + STEP_FEATURES
"""Every feature, in the order of a feature vector (checkpoints store this list)."""


@dataclass(frozen=True)
class StepState:
    """The state after one step of one trajectory.

    Attributes:
        trajectory_id: the trajectory's id.
        group: what a train/test split keeps together (the challenge hash when
            the trajectory has one, so renders of one challenge never straddle
            the split; else the trajectory id).
        index: 0-based step index.
        features: one float per name in `FEATURE_NAMES`.
        passed_here: this step's run passed (the outcome is decided).
        followed: another step came after this one in the trajectory. Never a
            feature (it looks ahead); evaluation uses it to ask "will a later
            attempt recover?" only where a later attempt was made.
    """

    trajectory_id: str
    group: str
    index: int
    features: tuple[float, ...]
    passed_here: bool
    followed: bool = False


@dataclass(frozen=True)
class LabelledStates:
    """States with their labels, ready for training or evaluation.

    Attributes:
        states: every state, trajectories in input order, steps in order.
        values: `V_i` per state (same length as `states`), in [0, 1].
        eventual: 1.0 when the state's trajectory passed, else 0.0.
        skipped_unknown: trajectories left out for outcome `unknown`.
        skipped_empty: trajectories left out for having no step.
    """

    states: list[StepState]
    values: list[float]
    eventual: list[float]
    skipped_unknown: int
    skipped_empty: int


def _verdict(call: ToolCall) -> str:
    """`passed`, `failed`, `no_code`, `duplicate` or `ok` (a tool call without a verdict)."""
    if call.result == "passed":
        return "passed"
    if call.name == "run_solution":
        if call.result == "failed":
            return "failed"
        error = call.error or ""
        if error.startswith("duplicate of attempt"):
            return "duplicate"
        return "no_code"
    return "failed" if call.error else "ok"


def _progress(text: str, verdict: str) -> float | None:
    """Fraction of the checker's tests passed before the first failure, if it says."""
    if verdict == "passed":
        return 1.0
    match = _TEST_OF.search(text)
    if match is None:
        return None
    k, n = int(match.group(1)), int(match.group(2))
    return (k - 1) / n if n > 0 else None


def _code(call: ToolCall) -> str:
    code = call.arguments.get("code")
    return code if isinstance(code, str) else ""


def request_features(trajectory: Trajectory) -> list[float]:
    """The request part of every state of `trajectory` (`REQUEST_FEATURES` order)."""
    cluster = trajectory.cluster or ""
    tier = trajectory.tier or ""
    extra = trajectory.extra
    solution_file = ""
    if trajectory.tool_calls:
        solution_file = str(trajectory.tool_calls[0].arguments.get("file", ""))
    lessons = extra.get("lessons_shown")
    skills = extra.get("skills_shown")
    return [
        *(float(cluster == name) for name in CLUSTERS),
        float(cluster not in CLUSTERS),
        float(TIERS.index(tier)) if tier in TIERS else -1.0,
        float(trajectory.task_kind == "selfplay"),
        float(trajectory.task_kind == "verification"),
        float(trajectory.task_kind == "chat"),
        float(solution_file.endswith(".sh")),
        math.log1p(len(trajectory.user_request)),
        float(len(lessons)) if isinstance(lessons, list) else 0.0,
        float(len(skills)) if isinstance(skills, list) else 0.0,
    ]


def _error_signature(text: str) -> tuple[bool, ...]:
    return tuple(bool(pattern.search(text)) for _, pattern in _ERROR_KINDS)


def step_states(trajectory: Trajectory) -> list[StepState]:
    """The state after each tool call of `trajectory`, oldest first.

    Args:
        trajectory: any trajectory; its outcome is not read.

    Returns:
        One `StepState` per tool call (empty for a trajectory without tool
        calls); `features` has `len(FEATURE_NAMES)` finite floats.
    """
    request = request_features(trajectory)
    group = str(trajectory.extra.get("challenge_hash") or trajectory.id)
    states: list[StepState] = []
    previous_code = ""
    previous_signature: tuple[bool, ...] | None = None
    previous_progress = 0.0
    best_progress = 0.0
    prior_failures = 0
    prior_no_code = 0
    for index, call in enumerate(trajectory.tool_calls):
        verdict = _verdict(call)
        feedback = call.error or ""
        code = _code(call)
        signature = _error_signature(feedback)
        progress = _progress(feedback, verdict)
        known = progress is not None
        value = progress if progress is not None else 0.0
        similarity = (
            difflib.SequenceMatcher(None, previous_code, code, autojunk=False).quick_ratio()
            if previous_code and code
            else 0.0
        )
        temperature = call.arguments.get("temperature")
        step = [
            float(index),
            float(verdict == "passed"),
            float(verdict == "failed"),
            float(verdict == "no_code"),
            float(verdict == "duplicate"),
            float(verdict == "ok"),
            *(float(flag) for flag in signature),
            value,
            float(known),
            math.log1p(len(feedback)),
            math.log1p(code.count("\n") + 1 if code else 0),
            float(code.count("def ")),
            float(code.count("import ")),
            similarity,
            value - previous_progress if known else 0.0,
            max(best_progress, value),
            float(prior_failures),
            float(prior_no_code),
            float(any(signature) and signature == previous_signature),
            float(temperature) if isinstance(temperature, (int, float)) else 0.0,
        ]
        followed = index + 1 < len(trajectory.tool_calls)
        states.append(
            StepState(
                trajectory.id, group, index, tuple(request + step), verdict == "passed", followed
            )
        )
        prior_failures += int(verdict == "failed")
        prior_no_code += int(verdict in ("no_code", "duplicate"))
        if code:
            previous_code = code
        previous_signature = signature
        if known:
            previous_progress = value
            best_progress = max(best_progress, value)
    return states


def label_states(trajectories: Iterable[Trajectory], gamma: float = GAMMA) -> LabelledStates:
    """States and `V_i = gamma ** (N - i - 1) * terminal` labels of `trajectories`.

    Args:
        trajectories: trajectories with corrections already applied (the
            store's `iter_trajectories` does that).
        gamma: the discount, in (0, 1].

    Returns:
        `LabelledStates`; `unknown` outcomes and trajectories without tool
        calls are counted, not labelled.

    Raises:
        ValueError: `gamma` outside (0, 1].
    """
    if not 0 < gamma <= 1:
        raise ValueError(f"gamma must be in (0, 1], got {gamma}")
    states: list[StepState] = []
    values: list[float] = []
    eventual: list[float] = []
    unknown = empty = 0
    for trajectory in trajectories:
        if trajectory.outcome == Outcome.UNKNOWN:
            unknown += 1
            continue
        steps = step_states(trajectory)
        if not steps:
            empty += 1
            continue
        terminal = 1.0 if trajectory.outcome == Outcome.PASSED else 0.0
        n = len(steps)
        for state in steps:
            states.append(state)
            values.append(gamma ** (n - state.index - 1) * terminal)
            eventual.append(terminal)
    return LabelledStates(states, values, eventual, unknown, empty)
