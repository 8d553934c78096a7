"""Configuration and result types of the chat-turn pipeline (the shared contract)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from nightschool.errors import UserError
from nightschool.trajectory import ToolCall, Trajectory

MAX_EXAMPLE_REDRAWS = 8
"""Most redraws `AgentConfig.example_redraws` allows: each takes four bytes of the
request's SHA-256 as its seed, so eight have seeds of their own."""


@dataclass(frozen=True)
class AgentConfig:
    """Settings of one `ChatPipeline`.

    Attributes:
        max_steps: model calls per turn (tool rounds plus the answer), >= 1.
        max_tokens: completion cap per model call, tokens.
        temperature: sampling temperature of the agent's calls.
        playbook_k: lessons retrieved per request (0: none).
        skills_k: skills retrieved per request and shown under `### WORKED
            EXAMPLES` (0: none).
        skills_token_budget: estimated tokens of the `### WORKED EXAMPLES`
            section; skills that do not fit are not shown (one or two
            starter-sized solutions fit 600).
        verify: run the verifier after a turn that ran tools.
        tool_timeout_s: wall-clock limit of one sandboxed tool run, seconds.
        reflect_on_correction: schedule `reflect_one` when the user corrects a turn.
        max_tool_output_chars: characters of one tool result shown to the model
            and recorded (head and tail kept).
        history_chars: characters of earlier conversation sent to the model
            (newest kept). With the tool rounds this keeps a turn inside the
            embedded model's 4k-token context.
        verifier_max_tokens: completion cap of the verifier call, tokens.
        repair_tool_leaks: when the final reply's code defines, imports or
            calls one of the agent's tool names, make one more model call to
            rewrite it (`agent._leak`); False only finds and records the leak
            (`extra["tool_leak"]`) and keeps the reply.
        check_examples: when the request states Python examples (`assert`
            lines, doctest pairs) and the reply has code, run them in the
            sandbox; on a failure ask the request once more, hotter, and keep
            the redraw only when it passes (`agent._examples`: the only arm the
            MBPP stream promoted, +6 points). False still runs and records them
            (`extra["examples"]`), without the redraw.
        example_redraws: redraws at most when the examples fail (each only
            after the one before failed too), with `check_examples` on; 0 to
            `MAX_EXAMPLE_REDRAWS`. 2: on the MBPP stream a third draw where
            the second failed its public test too repaired 9 more tasks than
            one redraw (145 vs 136 of 200, 9 wins / 0 losses, p = 0.002;
            `resample2` arm), at 1.54 model calls per task against 1.30.
        ask_for_missing_code: when the request asks for code to be written and
            the final reply has none (the run's output, a placeholder), make one
            more direct call asking for the code, kept only when it has code
            (`agent._missing_code`, `extra["missing_code"]`).
    """

    max_steps: int = 6
    max_tokens: int = 512
    temperature: float = 0.2
    playbook_k: int = 3
    skills_k: int = 2
    skills_token_budget: int = 600
    verify: bool = True
    tool_timeout_s: float = 20.0
    reflect_on_correction: bool = True
    max_tool_output_chars: int = 2000
    history_chars: int = 6000
    verifier_max_tokens: int = 120
    repair_tool_leaks: bool = True
    check_examples: bool = True
    example_redraws: int = 2
    ask_for_missing_code: bool = True

    def __post_init__(self) -> None:
        checks = {
            "max_steps": self.max_steps >= 1,
            "max_tokens": self.max_tokens >= 1,
            "temperature": self.temperature >= 0,
            "playbook_k": self.playbook_k >= 0,
            "skills_k": self.skills_k >= 0,
            "skills_token_budget": self.skills_token_budget >= 0,
            "tool_timeout_s": self.tool_timeout_s > 0,
            "max_tool_output_chars": self.max_tool_output_chars >= 100,
            "history_chars": self.history_chars >= 100,
            "verifier_max_tokens": self.verifier_max_tokens >= 16,
            "example_redraws": 0 <= self.example_redraws <= MAX_EXAMPLE_REDRAWS,
        }
        bad = [name for name, ok in checks.items() if not ok]
        if bad:
            raise UserError(f"invalid agent setting(s): {', '.join(bad)}")


@dataclass(frozen=True)
class CorrectionEvent:
    """The user's new message corrected the previous turn.

    Attributes:
        trajectory_id: the earlier turn, now marked failed.
        jaccard: content-token overlap of the two user messages, 0..1.
        signals: classifier signals, e.g. `("phrase:no", "rephrase")`.
        lessons_retracted: lessons with that turn's provenance that were removed.
        reflection_scheduled: `reflect_one` was queued in the background.
    """

    trajectory_id: str
    jaccard: float
    signals: tuple[str, ...]
    lessons_retracted: int
    reflection_scheduled: bool


@dataclass(frozen=True)
class TurnResult:
    """One handled chat turn.

    Attributes:
        reply: the assistant text for the user (not redacted).
        trajectory: the turn as stored (redacted), `task_kind` as requested.
        lessons_shown: ids of the lessons shown under `### SKILL PLAYBOOK`.
        tool_calls: the turn's tool calls as stored.
        correction: set when this request corrected the previous turn.
        tokens_in, tokens_out: all model calls of the turn, verifier included.
        timings: seconds per phase: `correction_check`, `retrieval`, `model`,
            `tools`, `verifier`, `record`, and `total`.
        skills_shown: ids of the skills shown under `### WORKED EXAMPLES`.
    """

    reply: str
    trajectory: Trajectory
    lessons_shown: tuple[str, ...]
    tool_calls: tuple[ToolCall, ...]
    correction: CorrectionEvent | None
    tokens_in: int
    tokens_out: int
    timings: Mapping[str, float]
    skills_shown: tuple[str, ...] = ()


@dataclass(frozen=True)
class BackgroundResult:
    """One finished real-time reflection.

    Attributes:
        trajectory_id: the corrected turn that was reflected on.
        status: `ok` (a lesson was written or reinforced), `no lesson` (the
            reflection was skipped, unparseable, timed out, or its lesson was
            rejected) or `failed` (an exception, or cancelled at close).
        detail: the diagnosis preview, the reason, or the exception type and message.
        lesson_id: the lesson written or reinforced, when `ok`.
    """

    trajectory_id: str
    status: str
    detail: str
    lesson_id: str | None
