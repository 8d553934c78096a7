"""Jinja2 filters and globals of the dashboard templates (pure functions)."""

from __future__ import annotations

import json
import math
import time
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlencode

from nightschool.evals import PassRate, pass_at_1


def when(value: datetime | float | str | None) -> str:
    """`2025-06-01 14:03 UTC`; "—" for nothing. ISO strings are shown as they are."""
    if value is None or value == "":
        return "—"
    if isinstance(value, str):
        return value.replace("T", " ")[:16] + " UTC"
    if not isinstance(value, datetime):
        value = datetime.fromtimestamp(float(value), UTC)
    elif value.tzinfo is not None:
        value = value.astimezone(UTC)
    return value.strftime("%Y-%m-%d %H:%M UTC")


def ago(value: datetime | None) -> str:
    """`3 min ago`, `2.5 h ago`, `4 d ago`; "never" for None."""
    if value is None:
        return "never"
    seconds = max(0.0, time.time() - value.timestamp())
    if seconds < 90:
        return f"{seconds:.0f} s ago"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min ago"
    if seconds < 172800:
        return f"{seconds / 3600:.1f} h ago"
    return f"{seconds / 86400:.0f} d ago"


def pct(value: float | None, digits: int = 1) -> str:
    """A fraction as a percentage (`61.2%`); "—" for None or NaN."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    return f"{100 * value:.{digits}f}%"


def signed(value: float | None, digits: int = 3) -> str:
    """`+0.150`; "—" for None or NaN."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    return f"{value:+.{digits}f}"


def num(value: int | float | None) -> str:
    """Thousands separators (`100,072`); "—" for None."""
    return "—" if value is None else f"{value:,}"


def short(value: str | None, width: int = 12) -> str:
    """The first `width` characters of an id."""
    return (value or "")[:width]


def rate_class(value: float | None) -> str:
    """CSS class of a pass rate's colour (`rate-0` red ... `rate-10` green, `rate-none`)."""
    if value is None:
        return "rate-none"
    return f"rate-{max(0, min(10, round(value * 10)))}"


def pretty(value: Any) -> str:
    """Indented JSON of any JSON-ready value."""
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True, default=str)


def query(params: Mapping[str, Any], **overrides: Any) -> str:
    """`?a=1&b=2` from `params` with `overrides` applied (None or "" drops a key)."""
    merged = {**params, **overrides}
    kept = {k: v for k, v in merged.items() if v is not None and v != ""}
    return "?" + urlencode(kept) if kept else ""


def interval(passed: int, n: int) -> PassRate:
    """pass@1 with its 95% Wilson interval (`evals.pass_at_1`)."""
    return pass_at_1(int(passed), int(n))


FILTERS = {
    "when": when,
    "ago": ago,
    "pct": pct,
    "signed": signed,
    "num": num,
    "short": short,
    "rate_class": rate_class,
    "pretty": pretty,
}
"""Filters available in every template."""

GLOBALS = {"query": query, "interval": interval}
"""Functions available in every template."""
