"""The metered harness API a strategy spends its budget through (parent side).

A strategy sees only `sample`, `refine`, `critique`, `run_tests` and
`budget_left` (see `nightschool.strategies.contract.CONTRACT_TEXT`). Every model
call costs one call from a budget that is the same for every strategy; a call
over budget raises `BudgetExhausted`. Cost is counted in tokens (prompt +
completion, as the backend reports them). `run_tests` shows the validator's
visible output, never its source (author blindness), and is capped at
`budget + 1` runs so a strategy cannot spin the sandbox without limit.

The harness never trusts a score a strategy reports: `verify` re-runs the
validator on the returned code itself.

Personas: `sample`, `refine` and `critique` take an optional `persona` (at
most `MAX_PERSONA_CHARS`), a role the model plays for that call, put before
the call's system prompt. A strategy can so run several roles (a researcher
hands notes to an engineer, a panel of reviewers) over the same metered budget:
each call still costs one call, whoever it speaks as.

Roles: `sample` and `refine` are the *worker*'s calls; `critique` is the
*analyst*'s, served by `critic` when one is given (a critic on a different
model than the worker, `evolve --analyst-model`), else by the worker's model.
Either way it costs one call of the same budget. `usage` reports tokens,
calls and seconds per role and model (the run's cost ledger adds them up).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from nightschool.challenges import Challenge, evaluate
from nightschool.llm import ChatModel, Message
from nightschool.sandbox import Sandbox
from nightschool.solver.core import SYSTEM_PROMPT, extract_code

__all__ = ["PASSED", "BudgetExhausted", "Harness", "HarnessCall", "task_view"]

PASSED = "PASSED"
"""What `run_tests` answers for code the validator accepts."""

FEEDBACK_CHARS = 800
"""Most characters of validator output `run_tests` returns after `FAILED: `."""

MAX_PROMPT_EXTRA_CHARS = 2000
"""Longest `prompt_extra` a strategy may pass to `sample`, characters."""

MAX_FEEDBACK_CHARS = 2000
"""Longest `feedback` a strategy may pass to `refine`, characters (`run_tests`
answers at most `FEEDBACK_CHARS` + 8)."""

MAX_PERSONA_CHARS = 300
"""Longest `persona` a strategy may pass to a model call, characters."""

MAX_CODE_CHARS = 6000
"""Longest `code` a strategy may pass to `refine` or `critique`, characters.

With these caps a model call's prompt stays within about 12,000 characters
beyond the task (~3,500 tokens at ~3.5 characters per token), inside the
embedded model's 4,096-token context with its 512-token completion. Without
them a strategy could overflow the context on purpose or by accident; the
backend's refusal is a `ModelResponseError`, an infrastructure fault that
aborts the whole run instead of failing that strategy."""

CRITIC_PROMPT = (
    "You review a solution to a small coding task. List the concrete bugs or "
    "mismatches with the task, briefly. Do not write code."
)
"""System prompt of `critique` (the reply is prose, returned as is)."""


class BudgetExhausted(Exception):
    """A harness call was made with no budget left."""


@dataclass(frozen=True)
class HarnessCall:
    """One metered harness call.

    Attributes:
        op: `sample`, `refine`, `critique` or `run_tests`.
        tokens: prompt + completion tokens (0 for `run_tests`).
        ok: for `run_tests`, whether the code passed; None for model calls.
        role: `worker` (sample, refine), `analyst` (critique) or `tests`.
        model: the model that served the call ("" for `run_tests`).
        seconds: wall-clock seconds of the call.
    """

    op: str
    tokens: int
    ok: bool | None = None
    role: str = "worker"
    model: str = ""
    seconds: float = 0.0


def task_view(challenge: Challenge, task_id: str) -> dict[str, str]:
    """The `task` dict a strategy receives: id, prompt, solution_file, cluster, tier."""
    return {
        "id": task_id,
        "prompt": challenge.prompt,
        "solution_file": challenge.solution_file,
        "cluster": challenge.cluster,
        "tier": challenge.tier,
    }


@dataclass
class Harness:
    """Meters one strategy's work on one task.

    Args:
        model: the solving model.
        sandbox: where `run_tests` and `verify` run the validator.
        challenge: the task.
        budget: model calls allowed (same for every strategy).
        max_tokens: completion cap per model call, tokens.
        temperature: default sampling temperature.
        seed: base seed; call k uses `seed + k` so replays are reproducible.
        system_prompt: the system prompt of `sample` and `refine` (the solver's;
            self-play through a champion adds the playbook and worked examples).
        critic: the model that serves `critique` (the analyst role); None: `model`.

    Attributes:
        calls: every metered call, in order.
    """

    model: ChatModel
    sandbox: Sandbox
    challenge: Challenge
    budget: int
    max_tokens: int = 512
    temperature: float = 0.2
    seed: int | None = None
    calls: list[HarnessCall] = field(default_factory=list)
    system_prompt: str = SYSTEM_PROMPT
    critic: ChatModel | None = None

    @property
    def model_calls(self) -> int:
        """Model calls made so far."""
        return sum(1 for c in self.calls if c.op != "run_tests")

    @property
    def test_runs(self) -> int:
        """`run_tests` calls made so far."""
        return sum(1 for c in self.calls if c.op == "run_tests")

    @property
    def budget_left(self) -> int:
        """Model calls left."""
        return max(0, self.budget - self.model_calls)

    @property
    def tokens(self) -> int:
        """Tokens spent so far (the strategy's cost)."""
        return sum(c.tokens for c in self.calls)

    def usage(self) -> list[dict[str, Any]]:
        """Spend of the model calls so far, per (role, model), in first-use order.

        Returns:
            Dicts `{"role", "model", "calls", "tokens", "seconds"}` (tokens:
            prompt + completion; seconds: wall-clock, rounded to 0.1 ms).
        """
        rows: dict[tuple[str, str], dict[str, Any]] = {}
        for call in self.calls:
            if call.op == "run_tests":
                continue
            row = rows.setdefault(
                (call.role, call.model),
                {"role": call.role, "model": call.model, "calls": 0, "tokens": 0, "seconds": 0.0},
            )
            row["calls"] += 1
            row["tokens"] += call.tokens
            row["seconds"] = round(row["seconds"] + call.seconds, 4)
        return list(rows.values())

    @staticmethod
    def _as(persona: str, system: str) -> str:
        """`system` spoken as `persona` (unchanged when there is none)."""
        persona = " ".join(persona.split())
        return f"You are {persona}.\n\n{system}" if persona else system

    def _complete(self, op: str, messages: list[Message], temperature: float | None) -> str:
        if self.budget_left <= 0:
            raise BudgetExhausted(f"no model calls left (budget {self.budget})")
        seed = None if self.seed is None else self.seed + self.model_calls
        temp = self.temperature if temperature is None else float(temperature)
        analyst = op == "critique"
        model = (self.critic or self.model) if analyst else self.model
        start = time.perf_counter()
        completion = model.complete(
            messages, temperature=max(0.0, min(temp, 2.0)), max_tokens=self.max_tokens, seed=seed
        )
        self.calls.append(
            HarnessCall(
                op,
                completion.tokens_in + completion.tokens_out,
                role="analyst" if analyst else "worker",
                model=model.name,
                seconds=round(time.perf_counter() - start, 4),
            )
        )
        return completion.text

    @staticmethod
    def _check_length(name: str, text: str, limit: int) -> None:
        if len(text) > limit:
            raise ValueError(f"{name} is {len(text)} characters; the harness takes at most {limit}")

    def _code(self, reply: str) -> str:
        return extract_code(reply, self.challenge.solution_file) or ""

    def sample(
        self, prompt_extra: str = "", temperature: float | None = None, persona: str = ""
    ) -> str:
        """A fresh solution; `prompt_extra` is appended to the task. One model call.

        Args:
            prompt_extra: text appended to the task prompt.
            temperature: this call's temperature (None: the run's).
            persona: a role for this call ("" for none), e.g. "a careful engineer".

        Returns:
            The extracted code ("" when the reply held none).

        Raises:
            BudgetExhausted: no model calls left.
            ValueError: `prompt_extra` is longer than `MAX_PROMPT_EXTRA_CHARS`, or
                `persona` than `MAX_PERSONA_CHARS` (no call is spent).
            InfrastructureError: the model failed (not the strategy's fault).
        """
        self._check_length("prompt_extra", prompt_extra, MAX_PROMPT_EXTRA_CHARS)
        self._check_length("persona", persona, MAX_PERSONA_CHARS)
        prompt = self.challenge.prompt
        if prompt_extra:
            prompt = f"{prompt}\n\n{prompt_extra}"
        messages: list[Message] = [
            {"role": "system", "content": self._as(persona, self.system_prompt)},
            {"role": "user", "content": prompt},
        ]
        return self._code(self._complete("sample", messages, temperature))

    def refine(self, code: str, feedback: str, persona: str = "") -> str:
        """An improved solution given `code` and `feedback`, spoken as `persona`. One model call.

        Raises:
            ValueError: `code`, `feedback` or `persona` is over `MAX_CODE_CHARS` /
                `MAX_FEEDBACK_CHARS` / `MAX_PERSONA_CHARS` (no call is spent).
        """
        self._check_length("code", code, MAX_CODE_CHARS)
        self._check_length("feedback", feedback, MAX_FEEDBACK_CHARS)
        self._check_length("persona", persona, MAX_PERSONA_CHARS)
        file = self.challenge.solution_file
        messages: list[Message] = [
            {"role": "system", "content": self._as(persona, self.system_prompt)},
            {"role": "user", "content": self.challenge.prompt},
            {"role": "assistant", "content": f"```\n{code}\n```"},
            {
                "role": "user",
                "content": f"Feedback on your {file}:\n\n{feedback}\n\nReply with the complete "
                f"corrected {file} in one fenced code block.",
            },
        ]
        return self._code(self._complete("refine", messages, None))

    def critique(self, code: str, persona: str = "") -> str:
        """The analyst's review of `code` (prose), by `critic` or else `model`. One model call.

        `persona` sets the reviewer's role ("" for the plain critic), e.g. "a
        tester who lists the task's edge cases" (with `code` a draft or empty).

        Raises:
            ValueError: `code` is over `MAX_CODE_CHARS`, or `persona` over
                `MAX_PERSONA_CHARS` (no call is spent).
        """
        self._check_length("code", code, MAX_CODE_CHARS)
        self._check_length("persona", persona, MAX_PERSONA_CHARS)
        messages: list[Message] = [
            {"role": "system", "content": self._as(persona, CRITIC_PROMPT)},
            {"role": "user", "content": f"Task:\n{self.challenge.prompt}\n\nSolution:\n{code}"},
        ]
        return self._complete("critique", messages, None).strip()

    def run_tests(self, code: str) -> str:
        """Run the validator on `code`: `PASSED`, or `FAILED: ` + its output tail.

        Raises:
            BudgetExhausted: more than `budget + 1` test runs.
            InfrastructureError: the sandbox failed.
        """
        if self.test_runs >= self.budget + 1:
            raise BudgetExhausted(f"no test runs left ({self.budget + 1} allowed)")
        start = time.perf_counter()
        evaluation = evaluate(self.sandbox, self.challenge, str(code))
        seconds = round(time.perf_counter() - start, 4)
        self.calls.append(HarnessCall("run_tests", 0, evaluation.passed, "tests", "", seconds))
        if evaluation.passed:
            return PASSED
        return "FAILED: " + evaluation.feedback[-FEEDBACK_CHARS:]

    def verify(self, code: str) -> tuple[bool, str]:
        """Re-run the validator on the final `code` (not metered; never trusts a claim).

        Returns:
            (passed, feedback): feedback is the validator's output tail on failure.
        """
        if not code.strip():
            return False, "no code was returned"
        evaluation = evaluate(self.sandbox, self.challenge, code)
        return evaluation.passed, evaluation.feedback

    def dispatch(self, op: str, args: dict[str, Any]) -> Any:
        """Serve one call from the sandboxed runner by name.

        Raises:
            ValueError: `op` is not part of the harness API, or bad arguments.
            BudgetExhausted, InfrastructureError: as the methods.
        """
        if op == "budget_left":
            return self.budget_left
        persona = str(args.get("persona", ""))
        if op == "sample":
            temperature = args.get("temperature")
            if temperature is not None and not isinstance(temperature, int | float):
                raise ValueError("temperature must be a number")
            return self.sample(str(args.get("prompt_extra", "")), temperature, persona)
        if op == "refine":
            return self.refine(str(args.get("code", "")), str(args.get("feedback", "")), persona)
        if op == "critique":
            return self.critique(str(args.get("code", "")), persona)
        if op == "run_tests":
            return self.run_tests(str(args.get("code", "")))
        raise ValueError(f"unknown harness call {op!r}")
