from __future__ import annotations

import pytest

from nightschool.feedback import correction
from nightschool.feedback.correction import (
    JACCARD_REPHRASE_THRESHOLD,
    MIN_CURRENT_TOKENS_FOR_REPHRASE,
    CorrectionVerdict,
    classify_correction,
    content_tokens,
    correction_phrase,
    jaccard,
)

PREVIOUS = "Reply with three words exactly: kangaroo trampoline lighthouse"


# -- both signals -----------------------------------------------------------------


def test_the_seed_example_is_a_correction() -> None:
    verdict = classify_correction(
        PREVIOUS, "no, reply with three words exactly: kangaroo trampoline metronome"
    )
    assert verdict.is_correction
    assert verdict.signals == ("phrase:no", "rephrase")
    assert verdict.jaccard >= JACCARD_REPHRASE_THRESHOLD
    assert (
        verdict.reason
        == f"user-correction signal: phrase + rephrase(jaccard={verdict.jaccard:.2f})"
    )


@pytest.mark.parametrize(
    ("current", "phrase"),
    [
        ("No, count the lines of python code in the project", "no"),
        ("Nope, count the lines of python code in the project", "nope"),
        ("Wrong. Count the lines of python code in the project", "wrong"),
        ("Actually, count the lines of python code in the project", "actually"),
        ("That's not right, count the lines of python code in the project", "that's not"),
        ("I meant count the lines of python code in the project", "i meant"),
        ("You misunderstood: count the lines of python code in the project", "you misunderstood"),
        ("Try again: count the lines of python code in the project", "try again"),
        ("Redo it: count the lines of python code in the project", "redo"),
        ("Didn't work. Count the lines of python code in the project", "didn't work"),
        ("That didn't work, count the lines of python code in the project", "that didn't work"),
        ("Not what I asked: count lines of python code in the project", "not what i asked"),
        ("Incorrect - count the lines of python code in the project", "incorrect"),
        ("“No”, count the lines of python code in the project", "no"),
    ],
)
def test_phrase_coverage(current: str, phrase: str) -> None:
    verdict = classify_correction("Count the lines of python code in the project", current)
    assert verdict.is_correction, verdict
    assert verdict.signals[0] == f"phrase:{phrase}"


# -- single-signal guards ---------------------------------------------------------


def test_phrase_without_rephrase_is_not_a_correction() -> None:
    verdict = classify_correction(PREVIOUS, "No, I think you're right")
    assert not verdict.is_correction
    assert verdict.signals == ("phrase:no",)


def test_rephrase_without_phrase_is_not_a_correction() -> None:
    verdict = classify_correction(
        PREVIOUS, "and also reply with three words exactly: kangaroo trampoline lighthouse"
    )
    assert not verdict.is_correction
    assert verdict.signals == ("rephrase",)
    assert verdict.jaccard >= JACCARD_REPHRASE_THRESHOLD


def test_phrase_with_unrelated_topic_is_not_a_correction() -> None:
    verdict = classify_correction(PREVIOUS, "No. What is the capital of France?")
    assert not verdict.is_correction
    assert verdict.jaccard < JACCARD_REPHRASE_THRESHOLD


def test_phrase_must_be_anchored_at_the_start() -> None:
    current = "reply with three words exactly, no: kangaroo trampoline metronome"
    assert correction_phrase(current) is None
    assert not classify_correction(PREVIOUS, current).is_correction


def test_phrase_must_be_a_whole_word() -> None:
    assert correction_phrase("Nothing like kangaroo trampoline lighthouse") is None
    assert correction_phrase("Actuallyness kangaroo") is None
    assert correction_phrase("Wrongful kangaroo") is None


def test_phrase_is_searched_only_in_the_window() -> None:
    assert correction_phrase(" " * 300 + "no, kangaroo") is None
    assert correction_phrase("   \n no, kangaroo") == "no"


# -- vetoes -----------------------------------------------------------------------


def test_affirmation_without_negative_marker_vetoes() -> None:
    current = "Actually that works great, reply with three words exactly kangaroo trampoline"
    assert correction_phrase(current) is None
    verdict = classify_correction(PREVIOUS, current)
    assert not verdict.is_correction
    assert verdict.signals == ("rephrase",)


def test_youre_right_vetoes_an_actually() -> None:
    assert correction_phrase("Actually you're right, three words exactly kangaroo") is None


def test_negative_marker_keeps_the_phrase_despite_an_affirmation() -> None:
    current = "Actually it's not perfect: reply with three words exactly kangaroo trampoline"
    assert correction_phrase(current) == "actually"
    assert classify_correction(PREVIOUS, current).is_correction


def test_leading_no_blocks_the_veto() -> None:
    current = "No, thanks, but reply with three words exactly: kangaroo trampoline metronome"
    assert correction_phrase(current) == "no"
    assert classify_correction(PREVIOUS, current).is_correction


# -- defensive inputs -------------------------------------------------------------


@pytest.mark.parametrize(
    ("previous", "current"),
    [(None, None), (PREVIOUS, None), (None, "no, kangaroo trampoline"), (42, ["no"]), ("", "")],
)
def test_none_and_non_string_inputs_never_raise(previous: object, current: object) -> None:
    verdict = classify_correction(previous, current)
    assert isinstance(verdict, CorrectionVerdict)
    assert not verdict.is_correction


def test_missing_previous_message_gives_zero_jaccard() -> None:
    verdict = classify_correction(None, "no, reply with three words kangaroo")
    assert verdict.jaccard == 0.0
    assert verdict.signals == ("phrase:no",)


# -- thresholds -------------------------------------------------------------------


def test_constants_are_the_prior_art_values() -> None:
    assert JACCARD_REPHRASE_THRESHOLD == 0.40
    assert MIN_CURRENT_TOKENS_FOR_REPHRASE == 2


def test_threshold_is_inclusive_and_pinned() -> None:
    # previous {alpha, beta, gamma, delta, epsilon}; current {alpha, beta} → 2/5 = 0.40
    previous = "alpha beta gamma delta epsilon"
    at = classify_correction(previous, "no, alpha beta")
    assert at.jaccard == pytest.approx(0.40)
    assert at.is_correction
    below = classify_correction(previous, "no, alpha beta zeta")  # 2/6
    assert below.jaccard == pytest.approx(2 / 6)
    assert not below.is_correction


def test_threshold_knob_is_read_at_call_time(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(correction, "JACCARD_REPHRASE_THRESHOLD", 0.9)
    assert not classify_correction("alpha beta gamma delta epsilon", "no, alpha beta").is_correction


def test_single_content_token_cannot_rephrase() -> None:
    verdict = classify_correction("kangaroo", "no, kangaroo")
    assert verdict.jaccard == 1.0
    assert not verdict.is_correction
    assert "too few content tokens" in verdict.reason


def test_stopwords_and_correction_words_are_not_content() -> None:
    assert content_tokens("No, I meant the THREE words, actually!") == {"three", "words"}
    assert jaccard("the a an", "kangaroo") == 0.0


def test_curly_apostrophes_are_normalised() -> None:
    assert correction_phrase("That\u2019s not right, kangaroo trampoline") == "that's not"
