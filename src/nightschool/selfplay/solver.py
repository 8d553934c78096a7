"""The self-play solver: an isolated agent that writes a solution and retries on feedback.

One challenge → one trajectory. Each attempt asks the model for the complete
solution file, runs setup, solution and validator in a fresh sandbox workspace,
and records one `run_solution` tool call. On failure the next attempt sees the
validator's output tail — never the validator's source (PRIOR-ART: showing the
source let a solver copy the answer key).

A model-server or sandbox fault ends the episode as an infrastructure error
(`outcome=unknown`, `extra["infrastructure_error"]`), never as the agent's
failure.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

from nightschool.challenges import Challenge, evaluate
from nightschool.errors import InfrastructureError
from nightschool.llm import ChatModel, Message
from nightschool.sandbox import Sandbox
from nightschool.trajectory import Outcome, ToolCall, Trajectory

if TYPE_CHECKING:
    from nightschool.memory import RetrievedLesson, SkillMemory

SYSTEM_PROMPT = (
    "You are a careful programmer solving a small, self-contained coding task. "
    "Read the task, then reply with the complete contents of the requested file in "
    "exactly one fenced code block. Use only the standard library. Do not explain at length."
)

_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[^\n]*\n(.*?)(?:```|\Z)", re.DOTALL)


class SolverConfig(BaseModel):
    """Settings of the self-play solver."""

    max_attempts: int = Field(default=3, ge=1, le=3, description="Attempts per challenge.")
    temperature: float = Field(default=0.2, ge=0, description="Sampling temperature.")
    max_tokens: int = Field(default=512, gt=0, description="Completion cap per attempt, tokens.")
    feedback_chars: int = Field(
        default=1500, gt=0, description="Validator output tail shown on retry, characters."
    )
    lessons_k: int = Field(
        default=3, ge=0, description="Playbook lessons retrieved into the prompt (0: none)."
    )


@dataclass(frozen=True)
class SolveResult:
    """What one `Solver.solve` produced.

    Attributes:
        trajectory: the episode record (not yet stored).
        attempts: attempts used (0 if the first model call failed).
        passed: the validator accepted an attempt.
        tool_errors: attempts whose reply held no code or whose run timed out.
        infrastructure_error: the fault that ended the episode early, if any.
    """

    trajectory: Trajectory
    attempts: int
    passed: bool
    tool_errors: int
    infrastructure_error: InfrastructureError | None = None


def extract_code(reply: str, solution_file: str) -> str | None:
    """Pull the solution source out of a model reply.

    Prefers a fenced block tagged with the file's language (`python`/`py` for
    `.py`, `bash`/`sh` for `.sh`), else the longest fenced block, else the whole
    reply when it has no fences but looks like code. Returns None when nothing
    usable is there.
    """
    found: list[tuple[str, str]] = _FENCE.findall(reply)
    blocks = [(lang.lower(), body.strip()) for lang, body in found]
    blocks = [(lang, body) for lang, body in blocks if body]
    wanted = {"python", "py", "python3"} if solution_file.endswith(".py") else {"bash", "sh"}
    tagged = [body for lang, body in blocks if lang in wanted]
    if tagged:
        return max(tagged, key=len)
    if blocks:
        return max((body for _, body in blocks), key=len)
    text = reply.strip()
    return text + "\n" if text and "\n" in text else None


def _retry_message(feedback: str, solution_file: str) -> str:
    return (
        f"Your {solution_file} did not pass. The checker said:\n\n{feedback}\n\n"
        f"Fix the problem and reply with the complete corrected {solution_file} "
        "in one fenced code block."
    )


class Solver:
    """Solves a `Challenge` with a model in the sandbox, up to `max_attempts` times.

    Args:
        model: any `ChatModel`.
        sandbox: where setup, solution and validator run.
        config: attempts, sampling and feedback size.
    """

    def __init__(
        self,
        model: ChatModel,
        sandbox: Sandbox,
        config: SolverConfig | None = None,
        *,
        playbook: SkillMemory | None = None,
    ):
        self.model = model
        self.sandbox = sandbox
        self.config = config or SolverConfig()
        self.playbook = playbook

    def lessons_for(self, challenge: Challenge) -> list[RetrievedLesson]:
        """Playbook lessons retrieved for `challenge` (empty without a playbook)."""
        if self.playbook is None or self.config.lessons_k == 0:
            return []
        return self.playbook.retrieve(
            challenge.prompt, k=self.config.lessons_k, cluster=challenge.cluster
        )

    def solve(
        self,
        challenge: Challenge,
        *,
        session_id: str = "",
        on_event: Callable[[str], None] | None = None,
        system_prompt: str = SYSTEM_PROMPT,
        lessons: Sequence[RetrievedLesson] | None = None,
    ) -> SolveResult:
        """Run the attempt loop on one challenge.

        Args:
            challenge: the rendered challenge.
            session_id: recorded on the trajectory (the dream run's id).
            on_event: called with short progress strings ("attempt 2/3: asking model").
            system_prompt: the solver's system prompt.
            lessons: lessons to show under `### SKILL PLAYBOOK`; None retrieves them
                from the playbook (if any). Their ids are recorded in
                `extra["lessons_shown"]`.

        Returns:
            `SolveResult`; infrastructure faults are captured in it, not raised.
        """
        notify = on_event or (lambda _msg: None)
        cfg = self.config
        shown = list(self.lessons_for(challenge) if lessons is None else lessons)
        if shown:
            from nightschool.memory import format_playbook

            system_prompt = f"{system_prompt}\n\n{format_playbook(shown)}"
        messages: list[Message] = [
            {"role": "system", "content": system_prompt},
            {"role": "user", "content": challenge.prompt},
        ]
        calls: list[ToolCall] = []
        replies: list[str] = []
        tokens_in = tokens_out = tool_errors = 0
        passed = False
        feedback = ""
        infra: InfrastructureError | None = None
        started = time.perf_counter()
        for attempt in range(1, cfg.max_attempts + 1):
            try:
                notify(f"attempt {attempt}/{cfg.max_attempts}: asking {self.model.name}")
                completion = self.model.complete(
                    messages, temperature=cfg.temperature, max_tokens=cfg.max_tokens
                )
                tokens_in += completion.tokens_in
                tokens_out += completion.tokens_out
                replies.append(completion.text)
                messages.append({"role": "assistant", "content": completion.text})
                code = extract_code(completion.text, challenge.solution_file)
                if code is None:
                    tool_errors += 1
                    feedback = "Your reply contained no code block, so nothing was run."
                    calls.append(
                        ToolCall(
                            name="run_solution",
                            arguments={"attempt": attempt, "file": challenge.solution_file},
                            error=feedback,
                        )
                    )
                else:
                    notify(f"attempt {attempt}/{cfg.max_attempts}: running in sandbox")
                    run_start = time.perf_counter()
                    evaluation = evaluate(self.sandbox, challenge, code)
                    passed = evaluation.passed
                    feedback = evaluation.feedback[-cfg.feedback_chars :]
                    if evaluation.validation.timed_out:
                        tool_errors += 1
                    calls.append(
                        ToolCall(
                            name="run_solution",
                            arguments={
                                "attempt": attempt,
                                "file": challenge.solution_file,
                                "code": code,
                            },
                            result="passed" if passed else "failed",
                            error=None if passed else feedback,
                            duration_s=round(time.perf_counter() - run_start, 4),
                        )
                    )
            except InfrastructureError as exc:
                infra = exc
                break
            if passed:
                break
            if attempt < cfg.max_attempts:
                messages.append(
                    {"role": "user", "content": _retry_message(feedback, challenge.solution_file)}
                )
        attempts = len(calls)
        if infra is not None:
            outcome, reason = Outcome.UNKNOWN, None
        elif passed:
            outcome, reason = Outcome.PASSED, None
        else:
            first_line = feedback.strip().splitlines()[0] if feedback.strip() else "no output"
            reason = f"validator rejected all {attempts} attempts; last: {first_line[:300]}"
            outcome = Outcome.FAILED
        extra: dict[str, object] = {
            "template": challenge.template,
            "seed": challenge.seed,
            "challenge_hash": challenge.challenge_hash,
            "attempts": attempts,
            "tool_errors": tool_errors,
            "sandboxed": self.sandbox.isolated,
            "lessons_shown": [item.lesson.id for item in shown],
            "lesson_scores": [round(item.score, 6) for item in shown],
        }
        if infra is not None:
            extra["infrastructure_error"] = f"{type(infra).__name__}: {infra.message}"
        trajectory = Trajectory(
            session_id=session_id,
            task_kind="selfplay",
            cluster=challenge.cluster,
            tier=challenge.tier,
            model=self.model.name,
            temperature=cfg.temperature,
            system_prompt=system_prompt,
            user_request=challenge.prompt,
            planning_output=_prose(replies[0]) if replies else "",
            tool_calls=calls,
            n_steps=len(replies),
            tokens_in=tokens_in,
            tokens_out=tokens_out,
            duration_s=round(time.perf_counter() - started, 4),
            outcome=outcome,
            failure_reason=reason,
            validator_signal=(None if not calls or infra else ("pass" if passed else "fail")),
            extra=extra,
            final_response=replies[-1] if replies else "",
        )
        return SolveResult(trajectory, attempts, passed, tool_errors, infra)


def _prose(reply: str) -> str:
    """The part of a reply outside code fences (the model's plan, if any)."""
    return _FENCE.sub("", reply).strip()[:2000]
