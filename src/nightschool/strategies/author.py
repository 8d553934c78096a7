"""An LLM authors candidate strategies from the incumbent's compacted losses.

The author sees the contract (`CONTRACT_TEXT`), the incumbent's source and one
compact line per train task — every task, never a prefix (PRIOR-ART: a prefix
slice hid the tail's failure modes) — and answers with a strategy module in a
fenced code block. When the primary model returns no code block, or code that
breaks the contract, one retry goes to the fallback model (the primary again
when there is none). Each attempt is recorded.

The contract text the author sees can be the caller's (`evolve --contract
FILE`): the authoring prompt is then a coordinate two runs can compare through
the gate. Only the prompt changes; `lint_strategy` still enforces the real
contract (author blindness, conserved dose) on whatever comes back.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from nightschool.errors import InfrastructureError
from nightschool.llm import ChatModel, Message
from nightschool.solver.core import extract_code
from nightschool.strategies.contract import CONTRACT_TEXT, lint_strategy

__all__ = [
    "AUTHOR_GRAMMAR",
    "AUTHOR_PREAMBLE",
    "AUTHOR_SYSTEM",
    "AuthorAttempt",
    "AuthorOutcome",
    "TaskLine",
    "author_candidate",
    "author_messages",
    "author_system",
    "compact_losses",
    "contract_sha256",
]

AUTHOR_PREAMBLE = (
    "You design solving strategies for small coding tasks. A strategy is a short Python "
    "module that spends a fixed budget of model calls through a harness. Reply with the "
    "complete module in exactly one ```python fenced code block.\n\n"
)
"""What the author's system prompt says before the contract text."""


def author_system(contract: str = CONTRACT_TEXT) -> str:
    """The author's system prompt: `AUTHOR_PREAMBLE` + `contract` (default: `CONTRACT_TEXT`)."""
    return AUTHOR_PREAMBLE + contract


def contract_sha256(contract: str) -> str:
    """SHA-256 (hex) of the contract text as UTF-8: which contract a run's author saw."""
    return hashlib.sha256(contract.encode("utf-8")).hexdigest()


AUTHOR_SYSTEM = author_system()
"""The author's system prompt with the built-in contract."""

AUTHOR_GRAMMAR = r"""
root ::= "```python\ndef solve(task, harness):\n" line more "```\n"
more ::= line? line? line? line? line? line? line? line? line? line? line?
line ::= "    " [^\n`]+ "\n"
"""
"""GBNF for a local model (llama.cpp enforces it; servers ignore it): a fenced
`solve(task, harness)` of up to 12 indented lines. A 135M model only keeps a
format when constrained (see `nightschool.llm.ChatModel`)."""

FEEDBACK_CHARS = 120
"""Most characters of validator feedback per task line."""


@dataclass(frozen=True)
class TaskLine:
    """One train task's result for the author.

    Attributes:
        task_id: `template/tier/seed`.
        cluster: the template's cluster.
        passed: verified pass.
        feedback: short validator feedback or strategy error ("" on pass).
    """

    task_id: str
    cluster: str
    passed: bool
    feedback: str = ""


def compact_losses(lines: Sequence[TaskLine]) -> str:
    """One line per task: `id | cluster | PASS/FAIL | feedback`, first line of feedback only."""
    out = []
    for line in lines:
        mark = "PASS" if line.passed else "FAIL"
        text = " ".join(line.feedback.split())[:FEEDBACK_CHARS]
        out.append(f"- {line.task_id} | {line.cluster} | {mark}" + (f" | {text}" if text else ""))
    return "\n".join(out)


@dataclass(frozen=True)
class AuthorAttempt:
    """One model call of the author.

    Attributes:
        model: model name.
        status: `ok`, `no_code`, `lint` or `infrastructure`.
        detail: the lint violations, or the fault, or "".
        tokens: prompt + completion tokens.
        seconds: wall-clock seconds of the call.
    """

    model: str
    status: str
    detail: str
    tokens: int
    seconds: float = 0.0


@dataclass(frozen=True)
class AuthorOutcome:
    """The result of authoring one candidate.

    Attributes:
        ok: a contract-clean strategy came back.
        source: the strategy module; when not ok, the rejected code of the last
            attempt (kept for diagnosis, never run), or "" when none came back.
        status: the last attempt's status.
        detail: why it failed ("" when ok).
        attempts: every attempt, in order (1 or 2).
    """

    ok: bool
    source: str
    status: str
    detail: str
    attempts: tuple[AuthorAttempt, ...] = field(default_factory=tuple)

    @property
    def tokens(self) -> int:
        """Tokens spent authoring."""
        return sum(a.tokens for a in self.attempts)


def author_messages(
    incumbent_name: str, incumbent_source: str, losses: str, *, contract: str = CONTRACT_TEXT
) -> list[Message]:
    """The author's prompt: contract, incumbent source, compacted results on every train task.

    Args:
        incumbent_name: the incumbent's archive name.
        incumbent_source: its module source.
        losses: `compact_losses(...)` of its latest measurement.
        contract: the contract text shown in the system prompt (`CONTRACT_TEXT`
            unless the caller supplies its own).
    """
    user = (
        f"The current best strategy is `{incumbent_name}`:\n\n```python\n{incumbent_source}```\n\n"
        f"Its results on every train task (id | cluster | result | checker feedback):\n{losses}\n\n"
        "Write a different strategy that should pass more tasks, or as many with fewer tokens. "
        "Reply with the complete module in one ```python block."
    )
    return [
        {"role": "system", "content": author_system(contract)},
        {"role": "user", "content": user},
    ]


def _attempt(
    model: ChatModel,
    messages: list[Message],
    *,
    temperature: float,
    max_tokens: int,
    seed: int | None,
    grammar: str | None,
) -> tuple[AuthorAttempt, str]:
    start = time.perf_counter()
    try:
        completion = model.complete(
            messages, temperature=temperature, max_tokens=max_tokens, seed=seed, grammar=grammar
        )
    except InfrastructureError as exc:
        fault = f"{type(exc).__name__}: {exc.message}"
        seconds = round(time.perf_counter() - start, 4)
        return AuthorAttempt(model.name, "infrastructure", fault, 0, seconds), ""
    seconds = round(time.perf_counter() - start, 4)
    tokens = completion.tokens_in + completion.tokens_out
    code = extract_code(completion.text, "strategy.py") if "```" in completion.text else None
    if code is None:
        no_code = "the reply held no code block"
        return AuthorAttempt(model.name, "no_code", no_code, tokens, seconds), ""
    violations = lint_strategy(code + "\n")
    if violations:
        detail = "; ".join(str(v) for v in violations[:8])
        return AuthorAttempt(model.name, "lint", detail, tokens, seconds), code + "\n"
    return AuthorAttempt(model.name, "ok", "", tokens, seconds), code + "\n"


def author_candidate(
    model: ChatModel,
    messages: list[Message],
    *,
    fallback: ChatModel | None = None,
    temperature: float = 0.7,
    max_tokens: int = 768,
    seed: int | None = None,
    grammar: str | None = None,
) -> AuthorOutcome:
    """Ask `model` for a strategy; retry once on `fallback` when no usable code comes back.

    A retry happens when the first reply has no code block, breaks the
    contract (the violations are shown in the retry prompt) or the primary
    model failed (an infrastructure fault). Never raises for those cases: the
    outcome records every attempt.

    Args:
        model: the primary author.
        messages: `author_messages(...)`.
        fallback: the retry model (None: `model` again).
        temperature: sampling temperature.
        max_tokens: completion cap, tokens.
        seed: base seed (the retry uses `seed + 1`).
        grammar: optional GBNF (e.g. `AUTHOR_GRAMMAR` for a local model).

    Returns:
        `AuthorOutcome`; `ok` with the linted source, or the failure's status
        (`no_code`, `lint`, `infrastructure`) and detail.
    """
    first, source = _attempt(
        model, messages, temperature=temperature, max_tokens=max_tokens, seed=seed, grammar=grammar
    )
    attempts = [first]
    if first.status != "ok":
        retry_messages = list(messages)
        if first.status == "lint":
            retry_messages += [
                {"role": "assistant", "content": f"```python\n{source}```"},
                {
                    "role": "user",
                    "content": f"That module breaks the contract: {first.detail}. Reply with a "
                    "corrected module in one ```python block.",
                },
            ]
        second, source = _attempt(
            fallback or model,
            retry_messages,
            temperature=temperature,
            max_tokens=max_tokens,
            seed=None if seed is None else seed + 1,
            grammar=grammar,
        )
        attempts.append(second)
    last = attempts[-1]
    ok = last.status == "ok"
    return AuthorOutcome(ok, source, last.status, last.detail, tuple(attempts))
