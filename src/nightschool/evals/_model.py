"""Records of the eval harness: tasks, agent replies, task results, runs. Side-effect free.

A `Task` is one prompt with its scorer. A runner turns the prompt into an
`AgentReply`; the scorer turns the reply into a `Score`; the harness stores a
`TaskResult` per task under one `EvalRun`. Two runs are paired task by task on
`TaskResult.task_id`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from statistics import NormalDist
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from nightschool.sandbox import Sandbox

RunStatus = Literal["running", "completed", "interrupted", "aborted"]
"""`running` while tasks execute; `completed` when every task has a result;
`interrupted` after Ctrl-C; `aborted` after an infrastructure fault."""


@dataclass(frozen=True)
class ToolCallView:
    """One tool call of the agent as a runner can see it.

    Attributes:
        name: tool name (`list_files`, `read_file`, `run_python`, ...).
        error: the tool's error text, or None when it succeeded.
        arguments: the call's arguments when visible (in-process), else {}.
    """

    name: str
    error: str | None = None
    arguments: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class AgentReply:
    """What the agent answered to one task's prompt.

    Attributes:
        text: the assistant reply shown to the user.
        tool_calls: the turn's tool calls in order (empty when none or not visible).
        tool_calls_visible: whether `tool_calls` is known (in-process, or an HTTP
            server that sends the `nightschool` extension); when False an empty
            `tool_calls` means "unknown", not "none".
        tokens_in: prompt tokens the turn spent (all model calls).
        tokens_out: completion tokens the turn spent.
        trajectory_id: the stored trajectory of the turn, if known.
        model: the model that answered, as reported by the agent.
        lessons_shown: playbook lesson ids shown for this turn.
    """

    text: str
    tool_calls: tuple[ToolCallView, ...] = ()
    tool_calls_visible: bool = False
    tokens_in: int = 0
    tokens_out: int = 0
    trajectory_id: str | None = None
    model: str = ""
    lessons_shown: tuple[str, ...] = ()


@dataclass(frozen=True)
class Score:
    """A scorer's verdict on one reply.

    Attributes:
        passed: whether the task counts as solved (pass@1 counts these).
        score: a value in [0, 1]; 1.0/0.0 for pass/fail suites, a partial
            credit where a suite defines one (see its module).
        error: why it failed (first line of a traceback, "no code in reply", ...);
            None on pass.
        detail: scorer-specific facts kept in the run's result row.
    """

    passed: bool
    score: float
    error: str | None = None
    detail: Mapping[str, Any] = field(default_factory=dict)


Scorer = Callable[["AgentReply", "Sandbox"], Score]
"""Scores a reply; may run code in the sandbox. Raises only for infrastructure
faults (`SandboxFaultError`, `ChallengeFaultError`), never for a wrong answer."""


@dataclass(frozen=True)
class Task:
    """One eval task.

    Attributes:
        id: stable identifier, unique within its suite and equal across runs
            (the pairing key).
        prompt: the user message sent to the agent.
        scorer: turns the agent's reply into a `Score`.
        workspace_files: relative path -> text placed in the agent's session
            workspace before the prompt is sent (runners that can reach the
            workspace do so; see `InProcessRunner`).
        meta: suite-specific facts (cluster, tier, entry point, ...).
    """

    id: str
    prompt: str
    scorer: Scorer
    workspace_files: Mapping[str, str] = field(default_factory=dict)
    meta: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class TaskResult:
    """The stored outcome of one task in one run (a row of `eval_results`).

    Attributes:
        task_id: the task's id.
        passed: scored as solved.
        score: the scorer's value in [0, 1].
        tokens_in: prompt tokens spent by the agent on the task.
        tokens_out: completion tokens spent.
        duration_s: wall-clock seconds for the agent turn plus scoring.
        error: failure reason (`timeout`, the scorer's error), None on pass.
        trajectory_id: the agent's stored trajectory, when known.
        detail: the scorer's facts (JSON-serialisable).
    """

    task_id: str
    passed: bool
    score: float
    tokens_in: int = 0
    tokens_out: int = 0
    duration_s: float = 0.0
    error: str | None = None
    trajectory_id: str | None = None
    detail: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class PassRate:
    """pass@1 with a two-sided Wilson score interval.

    Attributes:
        passed: tasks passed.
        n: tasks scored.
        rate: passed / n (0.0 when n == 0).
        low: lower bound of the interval.
        high: upper bound of the interval.
        confidence: two-sided confidence level of the interval (0.95).
        method: always `wilson`.
    """

    passed: int
    n: int
    rate: float
    low: float
    high: float
    confidence: float = 0.95
    method: str = "wilson"

    def summary(self) -> str:
        """`pass@1 0.312 (5/16), 95% Wilson CI [0.142, 0.555]`."""
        pct = round(self.confidence * 100)
        return (
            f"pass@1 {self.rate:.3f} ({self.passed}/{self.n}), {pct}% Wilson CI "
            f"[{self.low:.3f}, {self.high:.3f}]"
        )


def pass_at_1(passed: int, n: int, confidence: float = 0.95) -> PassRate:
    """pass@1 (one sample per task, so the plain pass fraction) with a Wilson interval.

    The Wilson (1927) score interval inverts the normal score test, so unlike
    the Wald interval it stays inside [0, 1] and keeps near-nominal coverage at
    small n and at rates near 0 or 1 (Brown, Cai & DasGupta 2001, Statistical
    Science 16(2), recommend it for n < 40). Source: E. B. Wilson (1927),
    "Probable inference, the law of succession, and statistical inference",
    JASA 22(158): centre (p + z²/2n) / (1 + z²/n), half-width
    z·sqrt(p(1-p)/n + z²/4n²) / (1 + z²/n).

    Args:
        passed: tasks passed (0 <= passed <= n).
        n: tasks scored.
        confidence: two-sided level, in (0, 1).

    Returns:
        `PassRate`; for n == 0 the interval is the uninformative [0, 1].

    Raises:
        ValueError: if `passed` is outside 0..n or `confidence` outside (0, 1).
    """
    if not 0 <= passed <= n:
        raise ValueError(f"passed must be in 0..n, got {passed} of {n}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    if n == 0:
        return PassRate(0, 0, 0.0, 0.0, 1.0, confidence)
    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    p = passed / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    low = 0.0 if passed == 0 else max(0.0, centre - half)
    high = 1.0 if passed == n else min(1.0, centre + half)
    return PassRate(passed, n, p, low, high, confidence)


@dataclass(frozen=True)
class EvalRun:
    """One stored eval run (a row of `eval_runs`) and, when loaded, its results.

    Attributes:
        id: run id (32 hex digits).
        suite: suite name.
        runner: `inprocess`, `http` or `stub` (echoes the prompt, no model).
        model: model name the agent reported (or was configured with).
        seed: the suite seed.
        version: nightschool version that ran it.
        started_at: ISO-8601 UTC start time.
        finished_at: ISO-8601 UTC end time, or None while running.
        status: see `RunStatus`.
        n: tasks with a stored result.
        passed: of which passed.
        config: the run's options (limit, timeout_s, playbook, server URL, ...).
        results: per-task results in execution order (empty unless loaded).
    """

    id: str
    suite: str
    runner: str
    model: str
    seed: int
    version: str
    started_at: str
    finished_at: str | None
    status: str
    n: int
    passed: int
    config: Mapping[str, Any] = field(default_factory=dict)
    results: tuple[TaskResult, ...] = ()

    @property
    def pass_rate(self) -> PassRate:
        """pass@1 over the stored results with its 95% Wilson interval."""
        return pass_at_1(self.passed, self.n)
