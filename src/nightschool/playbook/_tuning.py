"""The playbook's thresholds, resolved from `MemoryConfig` and the embedder's scale.

Each value comes from the config when it is set, else from an attribute of the
embedder (a model states what its cosines mean), else from the defaults below.
Pure functions: the writer (`duplicate_threshold`) and the retriever
(`vector_weight`, `relevance_floor`) read them; nothing here touches the store.
"""

from __future__ import annotations

from nightschool.playbook._embed import Embedder
from nightschool.playbook._model import Kind, MemoryConfig

DEFAULT_DUPLICATE_THRESHOLD = 0.92
"""Near-duplicate cosine for an embedder without its own `duplicate_threshold`."""

DEFAULT_VECTOR_WEIGHT = 0.9
"""Fusion weight of the vector side for an embedder without its own `vector_weight`."""

DEFAULT_RELEVANCE_FLOOR = 0.26
"""Relevance floor for an embedder without its own `relevance_floor`: the value
calibrated for all-MiniLM-L6-v2 (`MiniLMEmbedder.relevance_floor`, where the
measured figures are), a common scale for sentence-embedding cosines. Measure
another model with `bench/bench_retrieval.py --floors-only` and set
`MemoryConfig.min_score` (or a `relevance_floor` attribute on the embedder)."""


def _embedder_value(embedder: Embedder, name: str) -> float | None:
    value = getattr(embedder, name, None)
    return float(value) if isinstance(value, int | float) else None


def duplicate_threshold(config: MemoryConfig, embedder: Embedder) -> float:
    """Cosine (-1..1) at or above which `learn` reinforces instead of writing.

    `config.duplicate_threshold`, else the embedder's `duplicate_threshold`,
    else `DEFAULT_DUPLICATE_THRESHOLD`.
    """
    if config.duplicate_threshold is not None:
        return config.duplicate_threshold
    value = _embedder_value(embedder, "duplicate_threshold")
    return DEFAULT_DUPLICATE_THRESHOLD if value is None else value


def vector_weight(config: MemoryConfig, embedder: Embedder) -> float:
    """Weight (0..1) of the vector side in fusion; BM25 gets 1 - this.

    `config.vector_weight`, else the embedder's `vector_weight`, else
    `DEFAULT_VECTOR_WEIGHT`.
    """
    if config.vector_weight is not None:
        return config.vector_weight
    value = _embedder_value(embedder, "vector_weight")
    return DEFAULT_VECTOR_WEIGHT if value is None else value


def relevance_floor(config: MemoryConfig, embedder: Embedder, kind: Kind = "lesson") -> float:
    """The fused score (0..1) below which retrieval drops an entry of `kind`.

    `config.min_score` / `config.min_skill_score` when set; otherwise the
    embedder's `relevance_floor` (`skill_relevance_floor` for skills, falling
    back to `relevance_floor`), else `DEFAULT_RELEVANCE_FLOOR`; 0 under
    `fusion="rrf"` with no explicit floor.
    """
    explicit = config.min_skill_score if kind == "skill" else config.min_score
    if explicit is not None:
        return explicit
    if config.fusion != "mix":
        return 0.0
    names = ("skill_relevance_floor", "relevance_floor") if kind == "skill" else ()
    for name in names or ("relevance_floor",):
        value = _embedder_value(embedder, name)
        if value is not None:
            return value
    return DEFAULT_RELEVANCE_FLOOR
