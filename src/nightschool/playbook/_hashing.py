"""`HashingEmbedder`: a deterministic, model-free embedder (test double and fallback).

Feature hashing (Weinberger et al., 2009, "Feature hashing for large scale
multitask learning") of a bag of content words plus the character trigrams of
each word (`#word#` padded, as in fastText's subword n-grams), signed, summed and
L2-normalised. Trigrams make morphological variants overlap ("sorting" and
"sorted" share `#so`, `sor`, `ort`); there is no notion of synonyms, so
paraphrases that share no word stems score near zero. That is its job: fast,
reproducible vectors for tests, and a fallback with no dependency.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from functools import lru_cache

import numpy as np
import numpy.typing as npt

from nightschool.playbook._text import tokens

WORD_WEIGHT = 1.0
"""Weight of a whole-word feature."""

TRIGRAM_WEIGHT = 0.35
"""Weight of each character-trigram feature (a 6-letter word has 6 of them)."""


class HashingEmbedder:
    """Deterministic hashed bag of words and character trigrams.

    Identical input gives bit-identical output on every platform (CRC-32
    hashing, no randomness). Rows are L2-normalised; a text with no letters or
    digits gives an all-zero row.

    Args:
        dim: vector width; a power of two keeps buckets uniform. 512 keeps
            hash collisions rare for lesson-sized texts (about 60 features).
    """

    duplicate_threshold = 0.9
    """Cosine at or above which two lessons count as near-duplicates.

    Measured with `bench/bench_retrieval.py`: with only surface overlap, reworded
    duplicates score 0.32-0.82 and the nearest distinct hand-written lesson at
    most 0.58, so only near-verbatim restatements are merged."""

    vector_weight = 0.5
    """Fusion weight of its vectors: without synonyms they are weaker than BM25 here
    (labelled set recall@5: BM25 alone 0.635, these vectors alone 0.541, equal-weight
    mix 0.628, mix at 0.9 0.561)."""

    relevance_floor = 0.31
    """Fused score (mix fusion at weight 0.5, cluster boost excluded) below which a
    lesson is not relevant to a request (`MemoryConfig.min_score`).

    Measured with `bench/bench_retrieval.py --floors-only --embedder hashing` on 74
    labelled lessons among 600 synthetic distractors: the 148 labelled queries'
    recall@5 is 0.635 with no floor and 0.622 at 0.31, while 90.0% of 80
    unrelated requests get nothing (82.5% at 0.30; 92.5% at 0.35, where recall
    falls to 0.581). 0.31 is the only floor on a 0.005 grid that meets both
    targets: shared surface words ("weather", "CPU") give unrelated requests
    BM25 hits that these vectors cannot outweigh. In a playbook of a few lessons
    BM25 adds almost nothing (FTS5 clamps the IDF of words in more than half of
    the rows), so a lesson then needs a cosine of about 0.62 to clear the floor."""

    skill_relevance_floor = 0.4
    """The same floor for skills (`MemoryConfig.min_skill_score`). Measured like
    `MiniLMEmbedder.skill_relevance_floor` (46 skills, 105 challenge prompts):
    recall@5 0.981 from 0 to 0.40; 96.3% of unrelated requests get no skill at
    0.40, the middle of the feasible range 0.335-0.46."""

    def __init__(self, dim: int = 512) -> None:
        if dim < 8:
            raise ValueError("dim must be at least 8")
        self.dim = dim
        self.name = f"hashing-v1-{dim}"

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Embed `texts`; returns float32 of shape (len(texts), dim)."""
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            words = tokens(text) or tokens(text, keep_stopwords=True)
            if not words:
                continue
            parts = [_features(word, self.dim) for word in words]
            index = np.concatenate([p[0] for p in parts])
            value = np.concatenate([p[1] for p in parts])
            vec = np.bincount(index, weights=value, minlength=self.dim)
            norm = float(np.linalg.norm(vec))
            if norm > 0:
                out[row] = vec / norm
        return out


@lru_cache(maxsize=1 << 16)
def _features(word: str, dim: int) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.float64]]:
    padded = f"#{word}#"
    feats = [("w:" + word, WORD_WEIGHT)]
    feats.extend(("c:" + padded[i : i + 3], TRIGRAM_WEIGHT) for i in range(len(padded) - 2))
    index = np.empty(len(feats), dtype=np.intp)
    value = np.empty(len(feats), dtype=np.float64)
    for i, (feat, weight) in enumerate(feats):
        h = zlib.crc32(feat.encode("utf-8"))
        index[i] = h % dim
        value[i] = weight if (h >> 31) & 1 else -weight
    return index, value
