"""Several candidates against one baseline: the family-wise error rate (Holm's step-down).

When k arms are each paired with the same baseline (the stream's memory,
placebo, curated, fixed and retry arms against no memory), the chance that at
least one of them looks better by luck grows with k: five honest tests at
alpha = 0.05 give about a 23% chance of a false promotion. Holm's step-down
adjustment (Holm 1979, "A simple sequentially rejective multiple test
procedure", Scand. J. Statist. 6:65-70) keeps that chance at alpha for any
dependence between the tests and rejects at least what Bonferroni rejects.
"""

from __future__ import annotations

import math
from collections.abc import Sequence


def holm_adjusted(p_values: Sequence[float]) -> list[float]:
    """Holm-adjusted p-values, in the order given.

    The i-th smallest of m p-values is multiplied by (m - i + 1), made monotone
    (never below an adjusted smaller one) and capped at 1. Compare each to
    alpha as usual: the family-wise error rate is then at most alpha.

    Args:
        p_values: one p-value per test, each in [0, 1].

    Returns:
        The adjusted p-values, same length and order; `[]` for `[]`.

    Raises:
        ValueError: a p-value outside [0, 1] or NaN.
    """
    for p in p_values:
        if math.isnan(p) or not 0.0 <= p <= 1.0:
            raise ValueError(f"p-value {p!r} is outside [0, 1]")
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    adjusted = [0.0] * m
    running = 0.0
    for rank, index in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p_values[index]))
        adjusted[index] = running
    return adjusted


__all__ = ["holm_adjusted"]
