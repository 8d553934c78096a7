"""The verifier: after a turn that ran tools, one call judging evidence AND user intent.

Seed 002 ("wrong-question detection"): a verifier that only asked whether the
tool output supports the reply rubber-stamped an answer to a different question
(the user asked for *code* to count lines; the agent ran `wc -l` and replied
with a number; the verifier said CONFIRMED). So the rubric leads with the
constraints in the user's own wording ("just give me the code", "in one
sentence", "as JSON") and shows the agent's reply in its own slot: CONFIRMED
needs both sound tool evidence and a reply that does what was asked.

Reply format: `VERDICT: CONFIRMED|REFUTED|UNCERTAIN`, `CONFIDENCE: 0..1`,
`NOTE: ...`, constrained by `VERIFIER_GRAMMAR` where the backend enforces a
grammar and parsed leniently everywhere. A REFUTED with confidence at least
`REFUTE_CONFIDENCE` fails the turn.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from nightschool.agent.tools import cap_text
from nightschool.llm import ChatModel, Message
from nightschool.trajectory import Outcome, ToolCall, Trajectory

if TYPE_CHECKING:
    from nightschool.playbook import SkillMemory

logger = logging.getLogger("nightschool.agent")

REFUTE_CONFIDENCE = 0.7
"""A REFUTED verdict at or above this confidence marks the turn failed (seed 002)."""

VERIFIER_SYSTEM_PROMPT = (
    "You check an AI assistant's answer. Judge strictly and reply in the requested format."
)

VERIFIER_RUBRIC = """Judge two things.
1. CONSTRAINTS: Does the user's wording include explicit constraints on the form of the \
answer? Examples: "just give me the code", "in one sentence", "without using X", \
"list only the names", "as JSON". If yes, does the AGENT'S RESPONSE satisfy them? \
If the user asked for code and the agent returned a number, prose or a result, that is \
REFUTED: the agent answered a different question than the one asked, even if the tool \
output is internally consistent. Ignoring a requested format is REFUTED.
2. EVIDENCE: Does the tool output support what the response claims? A claim the tool \
output contradicts, or an answer based on a file or result only the agent's own \
workspace has, is REFUTED.
CONFIRMED needs both: sound evidence AND a response that does what the user asked. \
Say UNCERTAIN when you cannot tell."""
"""The rubric, constraint satisfaction first (seed 002's wording)."""

VERIFIER_PROMPT = """USER REQUEST:
{request}

TOOL CALLS AND OUTPUT:
{tools}

AGENT'S RESPONSE:
{response}

{rubric}

Reply in exactly this format:
VERDICT: <CONFIRMED or REFUTED or UNCERTAIN>
CONFIDENCE: <a number from 0 to 1>
NOTE: <one sentence: why>"""
"""The verification prompt (`str.format` fields: request, tools, response, rubric)."""

VERIFIER_GRAMMAR = r"""
root ::= "VERDICT: " verdict "\nCONFIDENCE: " confidence "\nNOTE: " note
verdict ::= "CONFIRMED" | "REFUTED" | "UNCERTAIN"
confidence ::= "0." [0-9] [0-9]? | "1.0"
note ::= [A-Za-z] [^\n]{5,200}
"""
"""GBNF for the verifier's reply (enforced by the embedded model; others ignore it)."""

# Prompt budgets, characters.
_REQUEST, _RESPONSE, _ARGS, _OUTPUT, _CALLS = 1500, 1500, 300, 600, 6

Verdict = Literal["CONFIRMED", "REFUTED", "UNCERTAIN"]

_VERDICT = re.compile(r"verdict\W{0,5}(confirmed|refuted|uncertain)", re.IGNORECASE)
_BARE_VERDICT = re.compile(r"\b(confirmed|refuted|uncertain)\b", re.IGNORECASE)
_CONFIDENCE = re.compile(r"confidence[\s:=*_-]{0,5}([0-9]*\.?[0-9]+)\s*(%?)", re.IGNORECASE)
_NOTE = re.compile(r"^\W*note\W{0,3}\s*(.+)$", re.IGNORECASE | re.MULTILINE)


@dataclass(frozen=True)
class VerifierVerdict:
    """The verifier's judgement of one turn.

    Attributes:
        verdict: CONFIRMED, REFUTED or UNCERTAIN (UNCERTAIN when unparseable).
        confidence: 0..1 (0 when none was given).
        note: one sentence why ("" if none).
        raw: the reply text.
        tokens_in, tokens_out: the call's token counts.
        duration_s: seconds the call took.
    """

    verdict: Verdict
    confidence: float
    note: str
    raw: str = ""
    tokens_in: int = 0
    tokens_out: int = 0
    duration_s: float = 0.0

    @property
    def fails_turn(self) -> bool:
        """True for REFUTED at confidence >= `REFUTE_CONFIDENCE`."""
        return self.verdict == "REFUTED" and self.confidence >= REFUTE_CONFIDENCE

    def as_record(self) -> dict[str, object]:
        """JSON-safe summary for `Trajectory.extra["verifier"]`."""
        return {
            "verdict": self.verdict,
            "confidence": round(self.confidence, 3),
            "note": self.note,
            "tokens_in": self.tokens_in,
            "tokens_out": self.tokens_out,
            "duration_s": round(self.duration_s, 4),
        }


def _squash(text: str) -> str:
    return " ".join(text.split())


def _describe_call(index: int, call: ToolCall) -> str:
    args = ", ".join(f"{k}={_squash(repr(v))}" for k, v in call.arguments.items())
    line = f"{index}. {call.name}({cap_text(args, _ARGS)})"
    if call.error:
        line += f"\n   ERROR: {cap_text(call.error, 300)}"
    if call.result:
        line += f"\n   OUTPUT: {cap_text(call.result.strip(), _OUTPUT)}"
    return line


def build_verifier_prompt(request: str, tool_calls: Sequence[ToolCall], response: str) -> str:
    """Fill `VERIFIER_PROMPT`: the request, the last tool calls with output, the reply slot.

    Shows the request's first 1,500 characters, the last 6 tool calls (arguments
    300, output 600 characters each) and the response (1,500, head and tail).
    """
    calls = list(tool_calls)[-_CALLS:]
    offset = len(tool_calls) - len(calls)
    shown = "\n".join(_describe_call(offset + i, c) for i, c in enumerate(calls, start=1))
    return VERIFIER_PROMPT.format(
        request=cap_text(request.strip() or "(empty)", _REQUEST),
        tools=shown or "(no tool calls)",
        response=cap_text(response.strip() or "(empty response)", _RESPONSE),
        rubric=VERIFIER_RUBRIC,
    )


def parse_verdict(text: str) -> tuple[Verdict, float, str]:
    """Parse a verifier reply leniently into (verdict, confidence 0..1, note).

    Accepts any case, markdown marks, `VERDICT - refuted`, a bare verdict word,
    confidence as `0.85`, `.85`, `85%` or `85` (read as a percentage). No
    verdict word at all gives UNCERTAIN with confidence 0.
    """
    cleaned = text.replace("**", "").replace("`", "")
    match = _VERDICT.search(cleaned) or _BARE_VERDICT.search(cleaned)
    if match is None:
        return "UNCERTAIN", 0.0, _squash(cleaned)[:200]
    verdict: Verdict = match.group(1).upper()  # type: ignore[assignment]
    confidence = 0.0
    found = _CONFIDENCE.search(cleaned)
    if found is not None:
        value = float(found.group(1))
        if found.group(2) == "%" or value > 1.0:
            value /= 100.0
        confidence = min(max(value, 0.0), 1.0)
    note_match = _NOTE.search(cleaned)
    note = _squash(note_match.group(1)) if note_match else ""
    return verdict, confidence, note[:300]


class Verifier:
    """Runs the verification call for one turn.

    Args:
        model: the judging model (usually the agent's own).
        max_tokens: completion cap, tokens.
        temperature: sampling temperature (0: greedy, the same turn gets the same verdict).
        grammar: GBNF for the reply; None disables it.
    """

    def __init__(
        self,
        model: ChatModel,
        *,
        max_tokens: int = 120,
        temperature: float = 0.0,
        grammar: str | None = VERIFIER_GRAMMAR,
    ) -> None:
        self.model = model
        self.max_tokens = max_tokens
        self.temperature = temperature
        self.grammar = grammar

    def verify(
        self, request: str, tool_calls: Sequence[ToolCall], response: str
    ) -> VerifierVerdict:
        """Judge `response` to `request` given the turn's tool calls.

        Raises:
            ModelUnavailableError, ModelResponseError: the model failed (callers
                decide; the pipeline records the verifier as unavailable).
        """
        messages: list[Message] = [
            {"role": "system", "content": VERIFIER_SYSTEM_PROMPT},
            {"role": "user", "content": build_verifier_prompt(request, tool_calls, response)},
        ]
        start = time.perf_counter()
        completion = self.model.complete(
            messages,
            temperature=self.temperature,
            max_tokens=self.max_tokens,
            grammar=self.grammar,
        )
        verdict, confidence, note = parse_verdict(completion.text)
        return VerifierVerdict(
            verdict=verdict,
            confidence=confidence,
            note=note,
            raw=completion.text,
            tokens_in=completion.tokens_in,
            tokens_out=completion.tokens_out,
            duration_s=time.perf_counter() - start,
        )


def apply_verdict(
    trajectory: Trajectory, verdict: VerifierVerdict | str, memory: SkillMemory | None
) -> Trajectory:
    """The turn with the verifier's verdict recorded (`extra["verifier"]`).

    Args:
        trajectory: the turn, before it is recorded.
        verdict: the verdict, or why the verifier did not run (recorded as
            `{"skipped": reason}`).
        memory: the playbook; a verdict that fails the turn retracts the
            lessons this turn wrote (`extra["lessons_retracted"]`). None: nothing
            to retract.

    Returns:
        A copy; failed with source `verifier` when `verdict.fails_turn`. A
        retraction that fails is logged and counts 0: the verdict still stands.
    """
    extra = dict(trajectory.extra)
    if isinstance(verdict, str):
        extra["verifier"] = {"skipped": verdict}
        return trajectory.model_copy(update={"extra": extra})
    extra["verifier"] = verdict.as_record()
    if not verdict.fails_turn:
        return trajectory.model_copy(update={"extra": extra})
    extra["failure_source"] = "verifier"
    retracted = 0
    if memory is not None:
        try:
            retracted = memory.retract_from_trajectory(trajectory.id, "verifier refuted")
        except Exception:
            logger.warning("retraction after a refuted turn failed", exc_info=True)
    extra["lessons_retracted"] = retracted
    reason = f"verifier refuted the reply ({verdict.confidence:.2f}): {verdict.note or 'no note'}"
    return trajectory.model_copy(
        update={"outcome": Outcome.FAILED, "failure_reason": reason[:500], "extra": extra}
    )
