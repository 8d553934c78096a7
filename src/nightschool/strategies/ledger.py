"""One cost ledger per evolution run, and the latency summary of a set of plays.

The ledger is JSON (it lives in the checkpoint): `{role: {model: {"calls",
"tokens", "seconds"}}}` with the roles `worker` (the strategies' `sample` and
`refine` calls), `analyst` (their `critique` calls) and `author` (authoring,
the fallback's retries included). Tokens are prompt + completion as the
backend reports them; seconds are wall-clock per call. It counts the spend of
the work the checkpoint holds: a generation lost to an interrupt is not in it.

Latency is reported, never gating: neither the champion policy nor the gate
reads it.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Sequence
from typing import Any

from nightschool.strategies.archive import TaskResult
from nightschool.strategies.author import AuthorAttempt

__all__ = ["ROLES", "add_attempts", "add_results", "latency", "new_ledger", "totals"]

ROLES = ("worker", "analyst", "author")
"""The ledger's roles, in report order."""

Ledger = dict[str, dict[str, dict[str, Any]]]


def new_ledger() -> Ledger:
    """An empty ledger with every role present."""
    return {role: {} for role in ROLES}


def _add(ledger: Ledger, role: str, model: str, calls: int, tokens: int, seconds: float) -> None:
    row = ledger.setdefault(role, {}).setdefault(model, {"calls": 0, "tokens": 0, "seconds": 0.0})
    row["calls"] += calls
    row["tokens"] += tokens
    row["seconds"] = round(row["seconds"] + seconds, 4)


def add_results(ledger: Ledger, results: Iterable[TaskResult]) -> None:
    """Add the plays' spend (`TaskResult.usage`) to `ledger`, in place."""
    for result in results:
        for use in result.usage:
            role, model = str(use["role"]), str(use["model"])
            _add(ledger, role, model, int(use["calls"]), int(use["tokens"]), float(use["seconds"]))


def add_attempts(ledger: Ledger, attempts: Iterable[AuthorAttempt]) -> None:
    """Add authoring calls to the `author` role of `ledger`, in place."""
    for attempt in attempts:
        _add(ledger, "author", attempt.model, 1, attempt.tokens, attempt.seconds)


def totals(ledger: Ledger) -> dict[str, dict[str, Any]]:
    """Per role: calls, tokens and seconds summed over its models."""
    out: dict[str, dict[str, Any]] = {}
    for role, models in ledger.items():
        out[role] = {
            "calls": sum(int(m["calls"]) for m in models.values()),
            "tokens": sum(int(m["tokens"]) for m in models.values()),
            "seconds": round(sum(float(m["seconds"]) for m in models.values()), 4),
        }
    return out


def latency(results: Sequence[TaskResult]) -> dict[str, Any]:
    """Play latency of `results`: count, mean, median and max seconds per play."""
    seconds = [r.seconds for r in results]
    if not seconds:
        return {"plays": 0, "mean_s": None, "median_s": None, "max_s": None}
    return {
        "plays": len(seconds),
        "mean_s": round(statistics.fmean(seconds), 4),
        "median_s": round(statistics.median(seconds), 4),
        "max_s": round(max(seconds), 4),
    }
