"""User-correction classifier: is the new message a correction of the previous answer?

Purely lexical, no model call (seed 002, "Real-time loop closure"; PRIOR-ART.md).
Two signals must BOTH fire:

- Signal A, anchored correction phrase: the message (first `PHRASE_WINDOW_CHARS`
  characters) starts with `no`, `nope`, `wrong`, `actually`, `that's not right`,
  `I meant`, `you misunderstood`, `try again`, `redo`, `didn't work`, ... A
  "no" deep inside a sentence does not count. An affirmation ("works great",
  "you're right") without a negative marker vetoes the phrase; a leading "no"
  blocks that veto.
- Signal B, rephrase: Jaccard overlap of content tokens (stopwords removed)
  between the previous user message and this one is at least
  `JACCARD_REPHRASE_THRESHOLD`, and this message has at least
  `MIN_CURRENT_TOKENS_FOR_REPHRASE` content tokens.

One signal alone has too many false positives: "No, I think you're right" is a
phrase without a rephrase; "... and also, what about X?" is a rephrase without
a phrase.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

JACCARD_REPHRASE_THRESHOLD = 0.40
"""Minimum content-token Jaccard with the previous user message for Signal B
(the value the seed-002 agent ran with; PRIOR-ART.md)."""

MIN_CURRENT_TOKENS_FOR_REPHRASE = 2
"""Content tokens the current message needs before Signal B can fire, so a bare
"no" can never count as a rephrase (PRIOR-ART.md)."""

PHRASE_WINDOW_CHARS = 240
"""Characters at the start of the message searched for the phrase and the veto
(PRIOR-ART.md: "anchored phrase regex over the first ~240 chars")."""

_PHRASES = (
    r"no+",
    r"nope",
    r"nah",
    r"wrong",
    r"incorrect",
    r"actually",
    r"not quite",
    r"not what i (?:asked|meant|wanted|said)",
    r"(?:that|this|it)(?:'s| is| was) (?:not|wrong|incorrect)",
    r"(?:that|this|it)(?:'s| is) not (?:right|correct|it|what i (?:asked|meant|wanted))",
    r"i meant",
    r"i mean",
    r"i said",
    r"i asked",
    r"you misunderstood",
    r"you misread",
    r"you got it wrong",
    r"misunderstood",
    r"try again",
    r"redo",
    r"do it again",
    r"(?:(?:that|this|it) )?(?:didn't|doesn't|did not|does not|won't|isn't) work(?:ing)?",
    r"(?:that|this|it)(?:'s| is) (?:still )?(?:broken|failing)",
    r"still (?:wrong|broken|failing|not working|doesn't work)",
)

_PHRASE = re.compile(r"^\W*(" + "|".join(_PHRASES) + r")\b", re.IGNORECASE)
"""Signal A: a correction phrase at the very start (leading punctuation/quotes skipped)."""

_LEADING_NO = re.compile(r"^\W*(?:no+|nope|nah)\b", re.IGNORECASE)

_AFFIRMATION = re.compile(
    r"\b(?:works? (?:great|fine|perfectly|now)|worked|you(?:'re| are) (?:right|correct)|"
    r"that(?:'s| is) (?:right|correct|perfect|great)|perfect|thanks|thank you|exactly|"
    r"looks good|all good|great job|well done)\b",
    re.IGNORECASE,
)
"""Affirmations that veto Signal A unless a negative marker is present."""

_NEGATIVE = re.compile(
    r"n't\b|\b(?:not|never|wrong|incorrect|broken|fails?|failed|failing|errors?|bug)\b",
    re.IGNORECASE,
)
"""Negative markers; one next to an affirmation keeps the phrase ("not perfect")."""

_TOKEN = re.compile(r"[a-z0-9_]+(?:'[a-z]+)?")

_STOPWORD_TEXT = """
    a an the this that these those it its it's i i'm me my mine we us our you your yours
    he him his she her they them their what which who whom whose when where why how
    all any some each every both few many much more most other such no nope nah not nor
    only own same so than too very just also again still actually please meant mean said
    asked is are was were be been being am do does did done doing have has had having
    can could will would shall should may might must and or but if then else of at by for
    with about against between into through during before after above below to from up
    down in out on off over under there here yes ok okay hey hi hmm um oh well like
    s t don't didn't doesn't isn't wasn't aren't won't can't try redo wrong incorrect
"""

STOPWORDS = frozenset(_STOPWORD_TEXT.split())
"""Words dropped before the Jaccard overlap: articles, pronouns, common quantifiers,
auxiliary and modal verbs, prepositions, and the correction words themselves (so
"no, I meant X" compares on X). Seed 002 removed the same classes."""


@dataclass(frozen=True)
class CorrectionVerdict:
    """What the classifier decided about one message.

    Attributes:
        is_correction: True only when both signals fired.
        signals: the signals that fired, e.g. `("phrase:no", "rephrase")`.
        jaccard: content-token Jaccard with the previous user message, 0..1.
        reason: one line saying why, for logs and failure reasons.
    """

    is_correction: bool
    signals: tuple[str, ...]
    jaccard: float
    reason: str


def _text(value: object) -> str:
    """Defensive normalisation: None and non-strings become ''."""
    return value if isinstance(value, str) else ""


def content_tokens(text: str) -> set[str]:
    """Lower-cased word tokens of `text` without `STOPWORDS` (apostrophes normalised)."""
    lowered = text.lower().replace("\u2019", "'")
    return {tok for tok in _TOKEN.findall(lowered) if tok not in STOPWORDS}


def jaccard(previous: str, current: str) -> float:
    """Jaccard overlap of the content tokens of two messages (0.0 when either has none)."""
    a, b = content_tokens(previous), content_tokens(current)
    if not a or not b:
        return 0.0
    return len(a & b) / len(a | b)


def correction_phrase(current_user: object) -> str | None:
    """The anchored correction phrase `current_user` starts with, or None (Signal A).

    Returns None too when an affirmation without a negative marker vetoes it
    (unless the message starts with "no"/"nope"/"nah", which blocks the veto).
    """
    window = _text(current_user)[:PHRASE_WINDOW_CHARS].replace("\u2019", "'")
    match = _PHRASE.match(window)
    if match is None:
        return None
    if (
        _AFFIRMATION.search(window)
        and not _NEGATIVE.search(window)
        and not _LEADING_NO.match(window)
    ):
        return None
    return " ".join(match.group(1).lower().split())


def classify_correction(previous_user: object, current_user: object) -> CorrectionVerdict:
    """Decide whether `current_user` corrects the answer to `previous_user`.

    Args:
        previous_user: the user's previous message (None or non-string: absent).
        current_user: the user's new message (None or non-string: absent).

    Returns:
        A `CorrectionVerdict`; `is_correction` needs Signal A (anchored phrase,
        not vetoed) and Signal B (Jaccard >= `JACCARD_REPHRASE_THRESHOLD` with
        >= `MIN_CURRENT_TOKENS_FOR_REPHRASE` content tokens). Never raises.
    """
    previous, current = _text(previous_user), _text(current_user)
    if not current.strip():
        return CorrectionVerdict(False, (), 0.0, "no current message")
    signals: list[str] = []
    phrase = correction_phrase(current)
    if phrase is not None:
        signals.append(f"phrase:{phrase}")
    score = jaccard(previous, current) if previous.strip() else 0.0
    enough_tokens = len(content_tokens(current)) >= MIN_CURRENT_TOKENS_FOR_REPHRASE
    rephrase = enough_tokens and score >= JACCARD_REPHRASE_THRESHOLD
    if rephrase:
        signals.append("rephrase")
    if phrase is not None and rephrase:
        reason = f"user-correction signal: phrase + rephrase(jaccard={score:.2f})"
        return CorrectionVerdict(True, tuple(signals), score, reason)
    if phrase is None and rephrase:
        reason = f"rephrase(jaccard={score:.2f}) without a correction phrase"
    elif phrase is not None:
        why = "too few content tokens" if not enough_tokens else f"jaccard={score:.2f}"
        reason = f"correction phrase {phrase!r} without a rephrase ({why})"
    else:
        reason = f"no correction phrase, jaccard={score:.2f}"
    return CorrectionVerdict(False, tuple(signals), score, reason)
