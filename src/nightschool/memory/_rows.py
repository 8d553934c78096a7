"""SQL and row conversion for the `lessons` tables (private to `SkillMemory`)."""

from __future__ import annotations

import json
import math
import uuid
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import numpy as np
import numpy.typing as npt

from nightschool.memory._model import DOMAINS, FORMAT_VERSION, SOURCES, Lesson
from nightschool.redact import redact, redact_text

LESSON_COLUMNS: tuple[str, ...] = (
    "id",
    "created_at",
    "updated_at",
    "trigger",
    "anti_pattern",
    "correct_pattern",
    "code_example",
    "domains",
    "confidence",
    "verified",
    "source",
    "source_trajectory_id",
    "challenge_hash",
    "times_shown",
    "times_helpful",
    "times_followed_by_pass",
    "times_followed_by_failure",
    "reinforcements",
    "extra",
)
"""Columns read into a `Lesson`, in `Lesson` order."""

SELECT_LESSON = ", ".join(LESSON_COLUMNS)

ARCHIVE_COPY_COLUMNS = ", ".join((*LESSON_COLUMNS, "embedding", "embedding_model"))
"""Columns copied verbatim from `lessons` into `lessons_archive`."""

MAX_TEXT_CHARS = 4000
"""Longest trigger / anti-pattern / correct pattern accepted by `learn`."""

MAX_CODE_CHARS = 8000
"""Longest code example accepted by `learn`."""

MAX_REINFORCED_BY = 50
"""Entries kept in `extra["reinforced_by"]` (the count lives in `reinforcements`)."""


def new_lesson_id() -> str:
    """`L-` plus 12 random hex digits (48 bits: collision odds ~2e-5 at 100k lessons)."""
    return "L-" + uuid.uuid4().hex[:12]


def epoch_now() -> float:
    """Seconds since the Unix epoch, UTC."""
    return datetime.now(UTC).timestamp()


def to_lesson(row: Sequence[Any]) -> Lesson:
    """Build a `Lesson` from a row selected with `SELECT_LESSON`."""
    data = dict(zip(LESSON_COLUMNS, row, strict=True))
    data["domains"] = json.loads(data["domains"])
    data["extra"] = json.loads(data["extra"])
    data["verified"] = bool(data["verified"])
    data["created_at"] = datetime.fromtimestamp(data["created_at"], UTC)
    data["updated_at"] = datetime.fromtimestamp(data["updated_at"], UTC)
    return Lesson(**data)


def to_blob(vector: npt.NDArray[np.float32]) -> bytes:
    """Little-endian float32 bytes of a vector."""
    return np.asarray(vector, dtype="<f4").tobytes()


def from_blob(blob: bytes | None, dim: int) -> npt.NDArray[np.float32] | None:
    """Vector from `to_blob` bytes, or None when missing or of another width."""
    if blob is None or len(blob) != 4 * dim:
        return None
    return np.frombuffer(blob, dtype="<f4").astype(np.float32)


def validation_problem(
    *,
    trigger: str,
    anti_pattern: str,
    correct_pattern: str,
    code_example: str,
    domains: Sequence[str],
    source: str,
    confidence: float,
) -> str:
    """Why a candidate lesson cannot be stored, or "" when it can."""
    if not isinstance(trigger, str) or not trigger.strip():
        return "trigger is empty"
    if not isinstance(correct_pattern, str) or not correct_pattern.strip():
        return "correct_pattern is empty"
    for name, text, limit in (
        ("trigger", trigger, MAX_TEXT_CHARS),
        ("anti_pattern", anti_pattern, MAX_TEXT_CHARS),
        ("correct_pattern", correct_pattern, MAX_TEXT_CHARS),
        ("code_example", code_example, MAX_CODE_CHARS),
    ):
        if not isinstance(text, str):
            return f"{name} is not a string"
        if len(text) > limit:
            return f"{name} is longer than {limit} characters"
    if isinstance(domains, str) or not domains:
        return "domains must be a non-empty list"
    unknown = sorted({str(d) for d in domains} - set(DOMAINS))
    if unknown:
        return f"unknown domains {unknown}; allowed: {', '.join(DOMAINS)}"
    if source not in SOURCES:
        return f"unknown source {source!r}; allowed: {', '.join(SOURCES)}"
    if (
        isinstance(confidence, bool)
        or not isinstance(confidence, int | float)
        or not math.isfinite(confidence)
        or not 0.0 <= confidence <= 1.0
    ):
        return "confidence must be a number within 0..1"
    return ""


def embedding_text(trigger: str, anti_pattern: str, correct_pattern: str) -> str:
    """The text whose embedding represents a lesson: `<trigger>. Mistake: <anti>. Fix: <correct>`.

    Measured on the labelled set (`bench/bench_retrieval.py`, vector-only
    recall@5 / recall@1 with all-MiniLM-L6-v2): this labelled form 0.70 / 0.54,
    trigger alone 0.69 / 0.42, trigger + correct pattern 0.62 / 0.42, the three
    fields joined without labels 0.64 / 0.53. Including the fix also keeps two
    lessons with the same trigger but different advice apart for the
    near-duplicate check.
    """
    parts = [trigger.strip().rstrip(".")]
    if anti_pattern.strip():
        parts.append(f"Mistake: {anti_pattern.strip().rstrip('.')}")
    parts.append(f"Fix: {correct_pattern.strip().rstrip('.')}")
    return ". ".join(parts)


RESTORE_COLUMNS: tuple[str, ...] = (*LESSON_COLUMNS, "embedding", "embedding_model")
"""Columns written by `SkillMemory.restore`, in the order of `restore_values`."""


def restore_values(record: Mapping[str, Any]) -> tuple[Any, ...]:
    """Column values (without the embedding pair) for one `export()` record.

    Text is redacted; missing counters default to 0, missing times to now, a
    missing id to a fresh one.

    Raises:
        ValueError: the record is newer than this code, or not a valid lesson.
    """
    version = int(record.get("format_version", FORMAT_VERSION))
    if version > FORMAT_VERSION:
        raise ValueError(f"format_version {version} is newer than {FORMAT_VERSION}")
    problem = validation_problem(
        trigger=record.get("trigger", ""),
        anti_pattern=record.get("anti_pattern", ""),
        correct_pattern=record.get("correct_pattern", ""),
        code_example=record.get("code_example", ""),
        domains=record.get("domains", []),
        source=record.get("source", ""),
        confidence=record.get("confidence", 0.5),
    )
    if problem:
        raise ValueError(problem)
    now = epoch_now()
    return (
        str(record.get("id") or new_lesson_id()),
        _epoch(record.get("created_at"), now),
        _epoch(record.get("updated_at"), now),
        *(
            redact_text(str(record.get(name, "")).strip())
            for name in ("trigger", "anti_pattern", "correct_pattern")
        ),
        redact_text(str(record.get("code_example", ""))),
        json.dumps(list(dict.fromkeys(record["domains"]))),
        float(record.get("confidence", 0.5)),
        int(bool(record.get("verified", False))),
        str(record["source"]),
        str(record.get("source_trajectory_id", "")).strip(),
        str(record.get("challenge_hash", "")),
        *(
            max(0, int(record.get(name, 0)))
            for name in (
                "times_shown",
                "times_helpful",
                "times_followed_by_pass",
                "times_followed_by_failure",
                "reinforcements",
            )
        ),
        json.dumps(redact(dict(record.get("extra") or {})), sort_keys=True),
    )


def _epoch(value: Any, default: float) -> float:
    if value is None:
        return default
    if isinstance(value, int | float):
        return float(value)
    moment = datetime.fromisoformat(str(value))
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()
