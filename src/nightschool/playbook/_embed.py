"""The `Embedder` contract and the factory of the packaged default model."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into unit vectors for cosine similarity.

    Contract:
        - `name` identifies the model and its preprocessing; vectors made under
          different names are never compared (the playbook re-embeds instead).
        - `dim` is the vector width and never changes for one `name`.
        - `embed(texts)` returns a new float32 array of shape `(len(texts), dim)`
          whose rows have unit L2 norm; a text with no content may give an
          all-zero row. It must not mutate `texts`, must be deterministic for a
          given input on one machine, and must never reach the network.
        - Optional float attributes: `duplicate_threshold`, the cosine at or
          above which two lessons are near-duplicates for this model;
          `vector_weight`, the weight of its similarities in hybrid fusion;
          `relevance_floor` and `skill_relevance_floor`, the fused scores below
          which a lesson / skill is irrelevant to a request (measure them with
          `bench/bench_retrieval.py --floors-only`).

    Raises:
        UserError: the model's package is missing (with the install hint).
    """

    name: str
    dim: int

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Embed `texts`; shape (len(texts), dim), float32, rows L2-normalised."""
        ...
