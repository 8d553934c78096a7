from __future__ import annotations

import re
from collections.abc import Sequence

import pytest

from nightschool.agent.verifier import (
    REFUTE_CONFIDENCE,
    VERIFIER_GRAMMAR,
    Verifier,
    build_verifier_prompt,
    parse_verdict,
)
from nightschool.llm import Message, ScriptedModel
from nightschool.trajectory import ToolCall

REQUEST = "how can I see how many lines of code is a project? just give me the code"
WC = ToolCall(
    name="run_shell",
    arguments={"command": "find . -name '*.py' | xargs cat | wc -l"},
    result="exit code: 0\nstdout:\n1623",
)
NUMBER_REPLY = "The project has **1,623 lines of code**."
CODE_REPLY = "```bash\nfind . -name '*.py' | xargs cat | wc -l\n```"


def section(prompt: str, name: str) -> str:
    match = re.search(rf"{name}:\n(.*?)\n\n", prompt, re.DOTALL)
    assert match is not None, name
    return match.group(1)


def rubric_follower(messages: Sequence[Message]) -> str:
    """A stub judge that applies the prompt's constraint rubric literally."""
    prompt = messages[-1]["content"]
    assert "explicit constraints" in prompt and "AGENT'S RESPONSE" in prompt
    request = section(prompt, "USER REQUEST").lower()
    response = section(prompt, "AGENT'S RESPONSE")
    wants_code = "give me the code" in request or "just the code" in request
    has_code = "```" in response or "`" in response
    if wants_code and not has_code:
        return (
            "VERDICT: REFUTED\nCONFIDENCE: 0.9\n"
            "NOTE: The user asked for code but the agent returned a number."
        )
    return "VERDICT: CONFIRMED\nCONFIDENCE: 0.8\nNOTE: The reply gives what was asked."


def test_prompt_holds_rubric_request_tools_and_reply_slot() -> None:
    prompt = build_verifier_prompt(REQUEST, [WC], NUMBER_REPLY)
    assert section(prompt, "USER REQUEST") == REQUEST
    assert "1623" in section(prompt, "TOOL CALLS AND OUTPUT")
    assert section(prompt, "AGENT'S RESPONSE") == NUMBER_REPLY
    for needle in ("just give me the code", "in one sentence", "as JSON", "different question"):
        assert needle in prompt
    assert prompt.index("CONSTRAINTS") < prompt.index("EVIDENCE")
    assert "VERDICT: <CONFIRMED or REFUTED or UNCERTAIN>" in prompt


def test_prompt_slots_are_bounded() -> None:
    calls = [
        ToolCall(name="run_shell", arguments={"command": f"c{i}"}, result="x" * 5000)
        for i in range(20)
    ]
    prompt = build_verifier_prompt("q" * 10_000, calls, "r" * 10_000)
    assert len(prompt) < 12_000
    assert "20. run_shell" in prompt and "1. run_shell" not in prompt
    assert "(empty response)" in build_verifier_prompt("q", [], "  ")


def test_wrong_question_shape_is_refuted() -> None:
    model = ScriptedModel(rubric_follower)
    verdict = Verifier(model).verify(REQUEST, [WC], NUMBER_REPLY)
    assert verdict.verdict == "REFUTED" and verdict.confidence >= REFUTE_CONFIDENCE
    assert verdict.fails_turn
    assert "asked for code" in verdict.note
    assert model.calls[0].grammar == VERIFIER_GRAMMAR
    assert model.calls[0].temperature == 0.0


def test_the_code_reply_is_confirmed() -> None:
    verdict = Verifier(ScriptedModel(rubric_follower)).verify(REQUEST, [WC], CODE_REPLY)
    assert verdict.verdict == "CONFIRMED" and not verdict.fails_turn


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("VERDICT: REFUTED\nCONFIDENCE: 0.85\nNOTE: wrong form", ("REFUTED", 0.85, "wrong form")),
        ("**Verdict:** refuted\n**Confidence:** 85%\nNote - off", ("REFUTED", 0.85, "off")),
        ("verdict - Confirmed, confidence .9", ("CONFIRMED", 0.9, "")),
        ("I think this is REFUTED. Confidence: 70", ("REFUTED", 0.7, "")),
        ("VERDICT: UNCERTAIN\nCONFIDENCE: 3", ("UNCERTAIN", 0.03, "")),
        ("VERDICT: REFUTED", ("REFUTED", 0.0, "")),
    ],
)
def test_parse_is_lenient(text: str, expected: tuple[str, float, str]) -> None:
    verdict, confidence, note = parse_verdict(text)
    assert (verdict, note) == (expected[0], expected[2])
    assert confidence == pytest.approx(expected[1])


def test_unparseable_is_uncertain() -> None:
    assert parse_verdict("the model rambled")[:2] == ("UNCERTAIN", 0.0)


def test_low_confidence_refutation_does_not_fail_the_turn() -> None:
    model = ScriptedModel(["VERDICT: REFUTED\nCONFIDENCE: 0.69\nNOTE: unsure"])
    assert not Verifier(model).verify("q", [WC], "r").fails_turn
