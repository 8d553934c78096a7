"""GEPA's side of the solver prompt: an adapter that scores prompts, and a reflection LM.

`SolverPromptAdapter` implements `gepa.core.adapter.GEPAAdapter` for one
component, `system_prompt` (the self-play solver's system prompt):

* `evaluate(batch, candidate)`: each `PromptTask` is solved once by a
  single-attempt `Solver` (pass@1, no playbook, no worked examples) under the
  candidate's prompt, in the sandbox; score 1.0 when the validator accepts the
  code, else 0.0; the trajectory is a `Rollout` with the code and the checker's
  output.
* `make_reflective_dataset`: the failing rollouts of the batch (all of them
  when none failed), each with the task, the code the model wrote and the
  validator's output: rich text feedback, not bare scores (PRIOR-ART's GEPA
  notes: that is what GEPA's reflection needs).

`ModelReflection` is GEPA's reflection LM (`str | messages -> str`) over any
nightschool `ChatModel`. PRIOR-ART: weak local reflection models (1.5B-3B)
produce garbage, and the same small model as task and reflection model
stalls; give a stronger one where there is one (`--reflection-model`).

Per-item failures are data (score 0 with the reason as feedback); a model or
sandbox fault (`InfrastructureError`) is systemic and raised, which stops the
GEPA run (`raise_on_exception=True`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from gepa.core.adapter import EvaluationBatch, ProposalFn

from nightschool.challenges import Challenge
from nightschool.llm import ChatModel, Message
from nightschool.prompts.registry import MAX_PROMPT_CHARS
from nightschool.solver.core import Solver

__all__ = [
    "COMPONENT",
    "REFLECTION_TEMPLATE",
    "ModelReflection",
    "PromptTask",
    "Rollout",
    "SolverPromptAdapter",
]

COMPONENT = "system_prompt"
"""The one component of a solver-prompt candidate: `{"system_prompt": text}`."""

TASK_CHARS = 1500
"""Task text shown to the reflection LM per example, characters (head kept)."""
CODE_CHARS = 1200
"""Generated code shown per example, characters (head kept)."""
FEEDBACK_CHARS = 900
"""Checker output shown per example, characters (tail kept: the verdict is at the end)."""

REFLECTION_TEMPLATE = """I gave a programming assistant the following system prompt. \
With it, the assistant solves small, self-contained coding tasks; each reply must contain \
the complete solution file in one fenced code block, which an automatic checker then runs:
```
<curr_param>
```

Below are tasks the assistant got with this system prompt, the code it wrote, and what \
the checker said about it:
```
<side_info>
```

Write a better system prompt for the assistant. Study the checker's messages: name the \
mistakes the assistant keeps making and give general rules that avoid them (about reading \
the task, input and output formats, edge cases, the standard library, what not to add). \
Do not include solutions to these particular tasks. Keep it short: a few sentences or \
bullet points. Keep the rule that the reply is the complete file in exactly one fenced \
code block.

Reply with the new system prompt only, inside ``` blocks."""
"""GEPA's instruction-proposal template (same placeholders as its default,
`gepa.strategies.instruction_proposal`), told what the prompt is for and what
must stay in it."""


@dataclass(frozen=True)
class PromptTask:
    """One task a prompt is scored on (GEPA's `DataInst`).

    Attributes:
        task_id: unique within a run (`train:<template>:<tier>:<seed>`, or a
            held-out item's `a:...`/`b:...` id).
        challenge: the rendered challenge.
    """

    task_id: str
    challenge: Challenge


@dataclass(frozen=True)
class Rollout:
    """One task solved once under one prompt (GEPA's `RolloutOutput` and `Trajectory`).

    Attributes:
        task_id: the task's id.
        passed: the validator accepted the code.
        feedback: the checker's output tail (or why nothing ran).
        code: the code that ran (None: the reply held none, or the prompt was refused).
        reply: the model's raw reply ("" when it was not asked).
        tokens: model tokens spent, in and out.
        task: the task text the model saw.
    """

    task_id: str
    passed: bool
    feedback: str
    code: str | None
    reply: str
    tokens: int
    task: str

    @property
    def score(self) -> float:
        """1.0 passed, 0.0 not."""
        return 1.0 if self.passed else 0.0


def _head(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + "\n[... cut]"


def _tail(text: str, limit: int) -> str:
    return text if len(text) <= limit else "[cut ...]\n" + text[-limit:]


class SolverPromptAdapter:
    """GEPA adapter scoring solver system prompts by pass@1 in the sandbox.

    Args:
        solver: supplies the model, sandbox and settings; its `single_attempt()`
            (one attempt, no playbook) does the solving.
        on_rollout: called after every solve with its `Rollout` (progress).
        session_id: recorded on the (unstored) solver trajectories.

    Attributes:
        rollouts: solves made so far (GEPA's metric calls plus any held-out ones).
    """

    propose_new_texts: ProposalFn | None = None
    """GEPA's own reflective proposer writes new texts (through the reflection LM)."""

    def __init__(
        self,
        solver: Solver,
        *,
        on_rollout: Callable[[Rollout], None] | None = None,
        session_id: str = "",
    ) -> None:
        self.solver = solver.single_attempt()
        self.on_rollout = on_rollout
        self.session_id = session_id
        self.rollouts = 0

    def rollout(self, task: PromptTask, prompt: str) -> Rollout:
        """Solve `task` once under `prompt`.

        A blank prompt, or one over `MAX_PROMPT_CHARS`, is not sent: the
        rollout fails with that as its feedback (the registry would refuse it).

        Raises:
            InfrastructureError: the model or the sandbox failed.
        """
        challenge = task.challenge
        if not prompt.strip() or len(prompt) > MAX_PROMPT_CHARS:
            why = "blank" if not prompt.strip() else f"{len(prompt)} characters long"
            rollout = Rollout(
                task.task_id,
                False,
                f"the system prompt was not used: it is {why} "
                f"(it must be non-blank and at most {MAX_PROMPT_CHARS} characters)",
                None,
                "",
                0,
                challenge.prompt,
            )
        else:
            result = self.solver.solve(
                challenge, session_id=self.session_id, system_prompt=prompt, lessons=()
            )
            if result.infrastructure_error is not None:
                raise result.infrastructure_error
            trajectory = result.trajectory
            call = trajectory.tool_calls[0] if trajectory.tool_calls else None
            code = call.arguments.get("code") if call is not None else None
            if result.passed:
                feedback = "passed: the checker accepted the code"
            elif call is not None and call.error:
                feedback = call.error
            else:
                feedback = trajectory.failure_reason or "no output"
            rollout = Rollout(
                task.task_id,
                result.passed,
                feedback,
                code if isinstance(code, str) else None,
                trajectory.final_response,
                trajectory.tokens_in + trajectory.tokens_out,
                challenge.prompt,
            )
        self.rollouts += 1
        if self.on_rollout is not None:
            self.on_rollout(rollout)
        return rollout

    def evaluate(
        self,
        batch: list[PromptTask],
        candidate: dict[str, str],
        capture_traces: bool = False,
    ) -> EvaluationBatch[Rollout, Rollout]:
        """Score `candidate["system_prompt"]` on `batch` (GEPA's contract).

        Returns:
            `EvaluationBatch` with `len(outputs) == len(scores) == len(batch)`,
            scores in {0.0, 1.0}; `trajectories` (the same `Rollout`s) only when
            `capture_traces`. Neither argument is mutated.

        Raises:
            KeyError: the candidate has no `system_prompt`.
            InfrastructureError: the model or the sandbox failed.
        """
        prompt = candidate[COMPONENT]
        rollouts = [self.rollout(task, prompt) for task in batch]
        return EvaluationBatch(
            outputs=rollouts,
            scores=[r.score for r in rollouts],
            trajectories=list(rollouts) if capture_traces else None,
        )

    def make_reflective_dataset(
        self,
        candidate: dict[str, str],
        eval_batch: EvaluationBatch[Rollout, Rollout],
        components_to_update: list[str],
    ) -> Mapping[str, Sequence[Mapping[str, Any]]]:
        """The failing rollouts (all, when none failed) as GEPA's reflective records.

        Each record: `Task` (head of the task text), `Generated code` (or what
        the model replied instead), `Checker output` (tail of the validator's
        output), `Score`. Deterministic (no sampling).
        """
        rollouts = list(eval_batch.trajectories or eval_batch.outputs)
        shown = [r for r in rollouts if not r.passed] or rollouts
        records: list[dict[str, Any]] = []
        for rollout in shown:
            if rollout.code is not None:
                generated = _head(rollout.code, CODE_CHARS)
            elif rollout.reply:
                generated = "(no code block found in the reply)\n" + _head(
                    rollout.reply, CODE_CHARS
                )
            else:
                generated = "(the model was not asked)"
            records.append(
                {
                    "Task": _head(rollout.task, TASK_CHARS),
                    "Generated code": generated,
                    "Checker output": _tail(rollout.feedback, FEEDBACK_CHARS),
                    "Score": f"{rollout.score:g} ({'passed' if rollout.passed else 'failed'})",
                }
            )
        return {name: records for name in components_to_update}


def _role(role: Any) -> Literal["system", "user", "assistant"]:
    return role if role in ("system", "assistant") else "user"


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # OpenAI content parts: keep the text ones
        return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return str(content)


class ModelReflection:
    """GEPA's reflection LM (`prompt -> text`) over a nightschool `ChatModel`.

    Args:
        model: the reflection model (a stronger one than the task model where
            there is one; see the module docstring).
        max_tokens: completion cap per reflection, tokens.
        temperature: sampling temperature (varied proposals help the search).
        seed: seed of the first call; call k uses `seed + k`.

    Attributes:
        calls: reflections made.
        tokens: tokens spent, in and out.
    """

    def __init__(
        self,
        model: ChatModel,
        *,
        max_tokens: int = 768,
        temperature: float = 0.7,
        seed: int = 0,
    ) -> None:
        self.model = model
        self.max_tokens = max_tokens
        self.temperature = temperature
        self.seed = seed
        self.calls = 0
        self.tokens = 0

    def __call__(self, prompt: str | list[dict[str, Any]]) -> str:
        """Answer one reflection prompt (a string, or chat messages) with the model's text.

        Raises:
            InfrastructureError: the model failed.
        """
        if isinstance(prompt, str):
            messages: list[Message] = [{"role": "user", "content": prompt}]
        else:
            messages = [
                Message(role=_role(m.get("role")), content=_text(m.get("content"))) for m in prompt
            ]
        completion = self.model.complete(
            messages,
            temperature=self.temperature,
            max_tokens=self.max_tokens,
            seed=self.seed + self.calls,
        )
        self.calls += 1
        self.tokens += completion.tokens_in + completion.tokens_out
        return completion.text
