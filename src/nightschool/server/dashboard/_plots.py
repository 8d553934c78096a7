"""Server-side SVG plots (matplotlib, no JavaScript), cached on the data's version.

Figures are built with `matplotlib.figure.Figure` (no pyplot global figure
state) and rendered under one lock, because matplotlib's rcParams are process
global. A rendered plot is kept per (name, version) until a newer version
replaces it, so a page reload draws nothing.
"""

from __future__ import annotations

import io
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import numpy as np

from nightschool.evals import pass_at_1
from nightschool.server.dashboard._aggregates import Rate

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

_RENDER_LOCK = threading.Lock()
"""Serialises rendering: matplotlib's rcParams (and its font cache) are process-global."""

PALETTE = (
    "#2563eb", "#dc2626", "#16a34a", "#9333ea", "#ea580c", "#0891b2", "#ca8a04", "#db2777",
)  # fmt: skip
"""Line colours, in order (colour-blind-distinguishable first pairs)."""

WIDTH_IN = 11.0
"""Plot width, inches at 100 dpi (the page's content column is about 1,100 px)."""
HEIGHT_IN = 3.4


class PlotCache:
    """Rendered SVGs by name, each valid for one data version."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._plots: dict[str, tuple[Any, bytes]] = {}

    def get(self, name: str, version: Any, draw: Callable[[], bytes]) -> bytes:
        """The SVG `name` at `version`, drawn by `draw()` unless already cached."""
        with self._lock:
            cached = self._plots.get(name)
        if cached is not None and cached[0] == version:
            return cached[1]
        svg = draw()
        with self._lock:
            self._plots[name] = (version, svg)
        return svg


def _figure(height: float = HEIGHT_IN) -> tuple[Figure, Axes]:
    # function-local: start-up time (matplotlib, ~0.5 s; `create_dashboard` warms it)
    from matplotlib.figure import Figure

    fig = Figure(figsize=(WIDTH_IN, height), dpi=100)
    ax = fig.add_subplot()
    ax.grid(alpha=0.3)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    return fig, ax


def _svg(fig: Figure) -> bytes:
    import matplotlib  # function-local: see _figure

    buffer = io.BytesIO()
    with _RENDER_LOCK, matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "ns"}):
        fig.tight_layout()
        fig.savefig(buffer, format="svg", metadata={"Date": None})
    return buffer.getvalue()


def _empty(message: str) -> bytes:
    fig, ax = _figure(1.2)
    ax.axis("off")
    ax.text(0.5, 0.5, message, ha="center", va="center", color="#6b7280", fontsize=11)
    return _svg(fig)


def _day(number: int) -> datetime:
    return datetime.fromtimestamp(number * 86400, UTC).replace(tzinfo=None)


def trailing(days: Mapping[int, Rate], window: int) -> dict[int, Rate]:
    """Pool each day with the `window - 1` days before it (a trailing window).

    Pooling counts (not averaging daily rates) weighs each trajectory once.
    Only days that have verdicts of their own get a point.
    """
    if window <= 1:
        return dict(days)
    return {
        day: _sum(days[d] for d in range(day - window + 1, day + 1) if d in days) for day in days
    }


def _sum(rates: Iterable[Rate]) -> Rate:
    total = Rate()
    for rate in rates:
        total = total + rate
    return total


def window_for(series: Mapping[str, Mapping[int, Rate]]) -> int:
    """Days pooled per point: 1 while the history spans two weeks or less, else 7."""
    days = [d for group in series.values() for d in group]
    return 7 if days and max(days) - min(days) > 14 else 1


def rates_over_time(
    series: Mapping[str, Mapping[int, Rate]],
    *,
    title: str,
    band: str | None = None,
    min_n: int = 1,
    window: int = 1,
) -> bytes:
    """Pass rate over time, one line per group; a 95% Wilson band around the `band` group.

    Args:
        series: group -> UTC day number -> `Rate` of that day.
        title: the plot title.
        band: the group drawn with its interval (None: no band).
        min_n: points with fewer verdicts are left out (their rate is noise).
        window: days pooled per point (`trailing`).

    Returns:
        The SVG document (UTF-8 bytes).
    """
    series = {group: trailing(days, window) for group, days in series.items()}
    if not any(r.n >= min_n for days in series.values() for r in days.values()):
        return _empty("no trajectories with a verdict yet")
    # function-local: see _figure
    from matplotlib.dates import AutoDateLocator, ConciseDateFormatter

    fig, ax = _figure()
    for i, (group, days) in enumerate(sorted(series.items())):
        points = sorted((d, r) for d, r in days.items() if r.n >= min_n)
        if not points:
            continue
        xs = np.array([_day(d) for d, _ in points], dtype="datetime64[s]")
        ys = [r.passed / r.n for _, r in points]
        colour = PALETTE[i % len(PALETTE)]
        width = 2.2 if group == band else 1.3
        ax.plot(xs, ys, color=colour, linewidth=width, marker="o", markersize=2.5, label=group)
        if group == band:
            intervals = [pass_at_1(r.passed, r.n) for _, r in points]
            ax.fill_between(
                xs,
                [p.low for p in intervals],
                [p.high for p in intervals],
                color=colour,
                alpha=0.15,
                linewidth=0,
                label=f"{group} 95% interval",
            )
    locator = AutoDateLocator()  # type: ignore[no-untyped-call]
    ax.xaxis.set_major_locator(locator)
    ax.xaxis.set_major_formatter(ConciseDateFormatter(locator))  # type: ignore[no-untyped-call]
    ax.set_ylim(0, 1)
    ax.set_ylabel("pass rate")
    ax.set_title(title, fontsize=11, loc="left")
    ax.legend(fontsize=8, ncol=4, loc="lower left", frameon=False)
    return _svg(fig)


def eval_history(points: Sequence[dict[str, Any]]) -> bytes:
    """pass@1 of each eval run (oldest left) with its Wilson interval, one series per suite.

    Args:
        points: dicts with `suite`, `label`, `rate`, `low`, `high`, oldest first.
    """
    if not points:
        return _empty("no eval runs yet")
    fig, ax = _figure()
    suites = sorted({p["suite"] for p in points})
    for i, suite in enumerate(suites):
        mine = [(x, p) for x, p in enumerate(points) if p["suite"] == suite]
        ax.errorbar(
            [x for x, _ in mine],
            [p["rate"] for _, p in mine],
            yerr=[
                [p["rate"] - p["low"] for _, p in mine],
                [p["high"] - p["rate"] for _, p in mine],
            ],
            color=PALETTE[i % len(PALETTE)],
            marker="o",
            capsize=3,
            label=suite,
        )
    ax.set_xticks(range(len(points)), [p["label"] for p in points], fontsize=7, rotation=30)
    ax.set_ylim(0, 1)
    ax.set_ylabel("pass@1")
    ax.set_title("eval runs: pass@1 with 95% Wilson intervals", fontsize=11, loc="left")
    ax.legend(fontsize=8, frameon=False)
    return _svg(fig)


def learning_curve(rows: Sequence[dict[str, Any]], title: str) -> bytes:
    """Held-out pass@1 per checkpoint, one line per set x arm, with Wilson bars (`Curve.rows`)."""
    if not rows:
        return _empty("no learning curve measured")
    fig, ax = _figure()
    labels = {"a": "(a) new seeds", "b": "(b) unseen templates"}
    series: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for row in rows:
        arms = ["both", "lessons", "skills"] if row["checkpoint"] == 0 else [row["arm"]]
        for arm in arms:
            series.setdefault((row["set"], arm), []).append(row)
    for i, ((set_name, arm), mine) in enumerate(sorted(series.items())):
        if len(mine) < 2:
            continue
        mine.sort(key=lambda r: r["checkpoint"])
        ax.errorbar(
            [r["checkpoint"] for r in mine],
            [r["pass_at_1"] for r in mine],
            yerr=[
                [r["pass_at_1"] - r["ci_low"] for r in mine],
                [r["ci_high"] - r["pass_at_1"] for r in mine],
            ],
            color=PALETTE[i % len(PALETTE)],
            linestyle="-" if set_name == "a" else "--",
            marker="o",
            capsize=3,
            label=f"{labels.get(set_name, set_name)} · {arm}",
        )
    from matplotlib.ticker import MaxNLocator  # function-local: see _figure

    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("checkpoint (0 = before dreaming)")
    ax.set_ylabel("held-out pass@1")
    ax.set_ylim(0, 1)
    ax.set_title(title, fontsize=11, loc="left")
    ax.legend(fontsize=8, frameon=False)
    return _svg(fig)
