"""Failure detection for chat turns: outcome heuristics and the user-correction classifier.

Both are pure functions with no model call (seed 002; PRIOR-ART.md):
`classify_chat_outcome` only ever moves a turn from `unknown` to `failed`;
`classify_correction` says whether the user's new message corrects the previous
answer (anchored phrase AND rephrase).
"""

from nightschool.feedback.correction import (
    JACCARD_REPHRASE_THRESHOLD,
    MIN_CURRENT_TOKENS_FOR_REPHRASE,
    PHRASE_WINDOW_CHARS,
    STOPWORDS,
    CorrectionVerdict,
    classify_correction,
    content_tokens,
    correction_phrase,
    jaccard,
)
from nightschool.feedback.heuristics import (
    ABORT_MARKER_PREFIX,
    REPEATED_ACTION_THRESHOLD,
    REPEATED_ERROR_THRESHOLD,
    STEP_LIMIT_MARKER,
    apply_chat_outcome_heuristics,
    classify_chat_outcome,
    normalise_error,
)

__all__ = [
    "ABORT_MARKER_PREFIX",
    "JACCARD_REPHRASE_THRESHOLD",
    "MIN_CURRENT_TOKENS_FOR_REPHRASE",
    "PHRASE_WINDOW_CHARS",
    "REPEATED_ACTION_THRESHOLD",
    "REPEATED_ERROR_THRESHOLD",
    "STEP_LIMIT_MARKER",
    "STOPWORDS",
    "CorrectionVerdict",
    "apply_chat_outcome_heuristics",
    "classify_chat_outcome",
    "classify_correction",
    "content_tokens",
    "correction_phrase",
    "jaccard",
    "normalise_error",
]
