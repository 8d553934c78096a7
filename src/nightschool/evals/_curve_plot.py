"""The learning curve's picture: pass@1 against dream minutes, one line per set and arm."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

ARMS: tuple[str, ...] = ("none", "lessons", "skills", "both", "placebo", "equal_compute")
"""The arms, in `curve.ARMS` order (kept here so the picture imports nothing of the curve)."""


def plot(rows: Sequence[dict[str, Any]], path: Path) -> Path | None:
    """Plot pass@1 (Wilson 95% bars) against dream minutes, one line per set and arm.

    Returns:
        `path`, or None when matplotlib is not installed.
    """
    try:  # function-local: start-up time (matplotlib.pyplot, ~0.5 s); without it, no plot
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    fig, ax = plt.subplots(figsize=(7, 4.2), dpi=120)
    styles = {"a": "-", "b": "--"}
    labels = {"a": "(a) same family: new tasks", "b": "(b) held out: unseen templates"}
    for set_name in ("a", "b"):
        for arm in ARMS:
            mine = [
                r
                for r in rows
                if r["set"] == set_name and (r["arm"] == arm or r["checkpoint"] == 0)
            ]
            mine = [r for r in mine if r["arm"] == arm or (r["checkpoint"] == 0 and arm == "both")]
            if arm == "none" or len(mine) < 1:
                continue
            xs = [r["dream_minutes"] for r in mine]
            ys = [r["pass_at_1"] for r in mine]
            err = [
                [r["pass_at_1"] - r["ci_low"] for r in mine],
                [r["ci_high"] - r["pass_at_1"] for r in mine],
            ]
            marker = {"lessons": "s", "skills": "^", "placebo": "x", "equal_compute": "D"}.get(
                arm, "o"
            )
            ax.errorbar(
                xs, ys, yerr=err, linestyle=styles[set_name] if arm == "both" else "none",
                marker=marker, capsize=3, label=f"{labels[set_name]} · {arm}",
            )  # fmt: skip
    ax.set_xlabel("dream time (minutes)")
    ax.set_ylabel("held-out pass@1")
    ax.set_ylim(0, 1)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="best")
    ax.set_title("nightschool learning curve")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path
