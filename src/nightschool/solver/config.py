"""The self-play solver's settings (`solver.SolverConfig`)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field


class SolverConfig(BaseModel):
    """Settings of the self-play solver.

    `SolverConfig(retry_mode="conversation", temperature_step=0, max_resamples=0)`
    reproduces the solver before fresh retries (same conversation, fixed
    temperature); a repeated program is still recorded as a wasted attempt
    instead of being run again (the validator would give the same verdict).
    """

    max_attempts: int = Field(default=3, ge=1, le=8, description="Attempts per challenge.")
    temperature: float = Field(
        default=0.2, ge=0, description="Sampling temperature of the first attempt."
    )
    temperature_step: float = Field(
        default=0.35,
        ge=0,
        description="Added per attempt and per resample (attempt k: base + k * step).",
    )
    max_temperature: float = Field(
        default=1.0, ge=0, description="Ceiling of the rising temperature (never below base)."
    )
    max_resamples: int = Field(
        default=2,
        ge=0,
        le=5,
        description="Extra model calls per attempt when its reply repeats a program already run.",
    )
    retry_mode: Literal["fresh", "conversation"] = Field(
        default="fresh",
        description="fresh: each retry is system + task + failing code + checker message; "
        "conversation: the retry is appended to the growing conversation (old behaviour).",
    )
    seed: int = Field(
        default=0, ge=0, description="Salt of every call's seed (same salt: same seeds)."
    )
    max_tokens: int = Field(default=512, gt=0, description="Completion cap per attempt, tokens.")
    feedback_chars: int = Field(
        default=1500, gt=0, description="Validator output tail shown on retry, characters."
    )
    lessons_k: int = Field(
        default=3, ge=0, description="Playbook lessons retrieved into the prompt (0: none)."
    )
    strip_test_code: bool = Field(
        default=True,
        description="At the starter tier (the checker imports the file and calls a function), "
        "drop top-level test code before running (bench/bench_sanitize.py measures it).",
    )
