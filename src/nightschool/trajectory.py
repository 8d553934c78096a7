"""The trajectory record: one agent episode with its tool calls and outcome.

Fields follow the self-improvement spec (seed 002) and PRIOR-ART.md:
`final_response` is kept last so that a human reading the tail of an export
sees the reply. Records are versioned (`format_version`); readers reject a
version newer than `FORMAT_VERSION`.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

FORMAT_VERSION = 1
"""Version of the trajectory and correction JSON records written by this code."""


class Outcome(StrEnum):
    """Outcome of an episode. `unknown` covers no verdict and infrastructure errors."""

    PASSED = "passed"
    FAILED = "failed"
    UNKNOWN = "unknown"


def new_id() -> str:
    """Return a fresh random id (32 lowercase hex characters)."""
    return uuid.uuid4().hex


def utc_now() -> datetime:
    """Return the current time as a timezone-aware UTC datetime."""
    return datetime.now(UTC)


class ToolCall(BaseModel):
    """One tool invocation inside a trajectory.

    Attributes:
        name: tool name, e.g. `run_solution`.
        arguments: JSON-serialisable arguments the agent passed.
        result: what the tool returned (text), or None.
        error: error text if the tool failed, else None.
        duration_s: wall-clock seconds the tool took.
    """

    model_config = ConfigDict(extra="forbid")

    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    result: str | None = None
    error: str | None = None
    duration_s: float = 0.0


class Trajectory(BaseModel):
    """One episode: a chat turn, a self-play challenge, a reflection or an eval task.

    Invariant (checked by `coherence_problem`, enforced by the store): a
    `passed` trajectory has no `failure_reason`.
    """

    model_config = ConfigDict(extra="forbid")

    format_version: int = FORMAT_VERSION
    id: str = Field(default_factory=new_id)
    timestamp: datetime = Field(default_factory=utc_now)
    session_id: str = ""
    task_kind: str = Field(description="selfplay | chat | reflection | eval")
    cluster: str | None = None
    tier: str | None = None
    model: str = ""
    temperature: float | None = None
    system_prompt: str = ""
    user_request: str = ""
    planning_output: str = ""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    n_steps: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    duration_s: float = 0.0
    outcome: Outcome = Outcome.UNKNOWN
    failure_reason: str | None = None
    validator_signal: str | None = None
    extra: dict[str, Any] = Field(default_factory=dict)
    final_response: str = ""

    def coherence_problem(self) -> str | None:
        """Return why this record contradicts itself, or None if it is coherent."""
        if self.outcome == Outcome.PASSED and self.failure_reason:
            return "a passed trajectory cannot carry a failure_reason"
        if self.format_version > FORMAT_VERSION:
            return f"format_version {self.format_version} is newer than {FORMAT_VERSION}"
        return None

    @property
    def infrastructure_error(self) -> str | None:
        """The infrastructure fault that ended this episode, if any."""
        value = self.extra.get("infrastructure_error")
        return str(value) if value else None


class Correction(BaseModel):
    """A later verdict on a trajectory's outcome, stored beside it (never a rewrite).

    When several corrections exist, the one that counts is the latest human
    label if any, else the latest machine verdict. A `passed` correction clears
    the failure reason.
    """

    model_config = ConfigDict(extra="forbid")

    format_version: int = FORMAT_VERSION
    trajectory_id: str
    outcome: Outcome
    failure_reason: str | None = None
    source: str = Field(description="who decided: user_correction, validator, verifier, ...")
    authority: Literal["human", "machine"] = "machine"
    note: str = ""
    timestamp: datetime = Field(default_factory=utc_now)

    def coherence_problem(self) -> str | None:
        """Return why this correction contradicts itself, or None."""
        if self.outcome == Outcome.PASSED and self.failure_reason:
            return "a passed correction cannot carry a failure_reason"
        return None


def apply_correction(trajectory: Trajectory, correction: Correction | None) -> Trajectory:
    """Return `trajectory` with `correction` overlaid (a copy; the input is untouched).

    Args:
        trajectory: the record as written.
        correction: the correction that counts, or None.

    Returns:
        A copy whose `outcome` is the correction's; `failure_reason` is cleared
        on `passed`, else the correction's reason (or the original one when the
        correction gives none). `extra["correction"]` says where it came from.
    """
    if correction is None:
        return trajectory
    reason: str | None
    if correction.outcome == Outcome.PASSED:
        reason = None
    else:
        reason = correction.failure_reason or trajectory.failure_reason
        if correction.outcome == Outcome.FAILED and not reason:
            reason = f"marked failed by {correction.source}"
    extra = dict(trajectory.extra)
    extra["correction"] = {
        "source": correction.source,
        "authority": correction.authority,
        "original_outcome": trajectory.outcome.value,
        "timestamp": correction.timestamp.isoformat(),
    }
    return trajectory.model_copy(
        update={"outcome": correction.outcome, "failure_reason": reason, "extra": extra}
    )
