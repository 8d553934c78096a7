"""SQL and row conversion for the `lessons` tables (private to `SkillMemory`)."""

from __future__ import annotations

import hashlib
import json
import math
import textwrap
import uuid
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import numpy as np
import numpy.typing as npt

from nightschool.playbook._model import DOMAINS, FORMAT_VERSION, KINDS, SOURCES, Kind, Lesson
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
    "kind",
    "template",
    "tier",
    "extra",
    "times_harmful",
)
"""Columns read into a `Lesson` (matched to its fields by name)."""

SELECT_LESSON = ", ".join(LESSON_COLUMNS)

ARCHIVE_COPY_COLUMNS = ", ".join((*LESSON_COLUMNS, "code_hash", "embedding", "embedding_model"))
"""Columns copied verbatim from `lessons` into `lessons_archive`."""

MAX_TEXT_CHARS = 4000
"""Longest trigger / anti-pattern / correct pattern accepted by `learn`."""

MAX_CODE_CHARS = 8000
"""Longest code example accepted by `learn`."""

MAX_SUMMARY_CHARS = 1000
"""Longest skill summary accepted by `learn_skill` (a summary is one sentence or two)."""

MAX_SKILL_CODE_CHARS = 4000
"""Longest skill code accepted by `learn_skill`: about 1,000 tokens, already more than
the default worked-examples budget (600 tokens), so longer code could never be shown.
The template bank's reference solutions are 137-1,412 characters."""

MAX_REINFORCED_BY = 50
"""Entries kept in `extra["reinforced_by"]` (the count lives in `reinforcements`)."""

SAME_CODE_CHALLENGES = "same_code_challenges"
"""`extra` key of a skill: other challenges whose passing code was this skill's code."""


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


def any_of(dialect: str, values: Sequence[Any]) -> tuple[str, Any]:
    """A membership test against a list of values, as SQL and its one parameter.

    Args:
        dialect: `Store.dialect` (`sqlite` or `postgres`).
        values: the list (ints or strings; may be empty).

    Returns:
        (sql, param) to write `f"column {sql}"`: on SQLite
        `IN (SELECT value FROM json_each(?))` with the values as a JSON array;
        on Postgres `= ANY(?)` with a Python list (a typed array parameter).
    """
    if dialect == "postgres":
        return "= ANY(?)", list(values)
    return "IN (SELECT value FROM json_each(?))", json.dumps(list(values))


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


def skill_problem(
    *, summary: str, code: str, domains: Sequence[str], source: str, confidence: float
) -> str:
    """Why a candidate skill cannot be stored, or "" when it can.

    A skill needs a non-empty summary (at most `MAX_SUMMARY_CHARS`) and
    non-empty code (at most `MAX_SKILL_CODE_CHARS`); domains, source and
    confidence follow the lesson rules.
    """
    for name, text, limit in (
        ("summary", summary, MAX_SUMMARY_CHARS),
        ("code", code, MAX_SKILL_CODE_CHARS),
    ):
        if not isinstance(text, str):
            return f"{name} is not a string"
        if not text.strip():
            return f"{name} is empty"
        if len(text) > limit:
            return f"{name} is longer than {limit} characters"
    return validation_problem(
        trigger=summary,
        anti_pattern="",
        correct_pattern=summary,
        code_example="",
        domains=domains,
        source=source,
        confidence=confidence,
    )


def normalise_code(code: str) -> str:
    """Code with layout noise removed, for the exact-duplicate check of skills.

    Line endings become LF, tabs expand to 8 columns, the common indentation
    is removed, trailing whitespace is stripped and blank lines are dropped.
    Comments and names are kept: two programs that differ there are different
    skills (stripping comments would need a parser per language).
    """
    text = code.replace("\r\n", "\n").replace("\r", "\n").expandtabs(8)
    lines = [line.rstrip() for line in textwrap.dedent(text).split("\n")]
    return "\n".join(line for line in lines if line)


def code_hash(code: str) -> str:
    """sha256 (hex) of `normalise_code(code)`; stored in `lessons.code_hash`."""
    return hashlib.sha256(normalise_code(code).encode("utf-8")).hexdigest()


def entry_text(kind: str, trigger: str, anti_pattern: str, correct_pattern: str) -> str:
    """The text whose embedding represents a playbook entry of `kind`.

    A skill is represented by its task summary alone (Voyager retrieves skills
    by their description; the code's identifiers would pull unrelated requests
    that mention the same library); a lesson by `embedding_text`.
    """
    if kind == "skill":
        return trigger.strip()
    return embedding_text(trigger, anti_pattern, correct_pattern)


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


RESTORE_COLUMNS: tuple[str, ...] = (
    *LESSON_COLUMNS,
    "code_hash",
    "embedding",
    "embedding_model",
)
"""Columns written by `SkillMemory.restore`, in the order of `restore_values`."""

RESTORE_INDEX = {name: i for i, name in enumerate(RESTORE_COLUMNS)}
"""Position of each column in a `restore_values` tuple."""


def restore_values(record: Mapping[str, Any]) -> tuple[Any, ...]:
    """Column values (without the embedding pair) for one `export()` record.

    Text is redacted; missing counters default to 0, missing times to now, a
    missing id to a fresh one; a record without `kind` (format version 1) is
    a lesson.

    Raises:
        ValueError: the record is newer than this code, or not a valid lesson
            or skill.
    """
    version = int(record.get("format_version", FORMAT_VERSION))
    if version > FORMAT_VERSION:
        raise ValueError(f"format_version {version} is newer than {FORMAT_VERSION}")
    kind = str(record.get("kind", "lesson"))
    if kind not in KINDS:
        raise ValueError(f"unknown kind {kind!r}; allowed: {', '.join(KINDS)}")
    problem = _record_problem(kind, record)
    if problem:
        raise ValueError(problem)
    now = epoch_now()
    code = redact_text(str(record.get("code_example", "")))
    return (
        str(record.get("id") or new_lesson_id()),
        _epoch(record.get("created_at"), now),
        _epoch(record.get("updated_at"), now),
        *(
            redact_text(str(record.get(name, "")).strip())
            for name in ("trigger", "anti_pattern", "correct_pattern")
        ),
        code,
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
        kind,
        str(record.get("template", "")),
        str(record.get("tier", "")),
        json.dumps(redact(dict(record.get("extra") or {})), sort_keys=True),
        max(0, int(record.get("times_harmful", 0))),
        code_hash(code) if kind == "skill" else "",
    )


def _record_problem(kind: Kind | str, record: Mapping[str, Any]) -> str:
    if kind == "skill":
        return skill_problem(
            summary=record.get("trigger", ""),
            code=record.get("code_example", ""),
            domains=record.get("domains", []),
            source=record.get("source", ""),
            confidence=record.get("confidence", 0.5),
        )
    return validation_problem(
        trigger=record.get("trigger", ""),
        anti_pattern=record.get("anti_pattern", ""),
        correct_pattern=record.get("correct_pattern", ""),
        code_example=record.get("code_example", ""),
        domains=record.get("domains", []),
        source=record.get("source", ""),
        confidence=record.get("confidence", 0.5),
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
