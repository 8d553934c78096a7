"""What a challenge generation asks for and what it produced (the generator and its bank)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from nightschool.challenges._model import Challenge

__all__ = ["GenerationOutcome", "GenerationRequest", "Rejection"]


@dataclass(frozen=True)
class GenerationRequest:
    """What to generate.

    Attributes:
        cluster: one of `CLUSTERS`.
        tier: one of `TIERS` (a difficulty hint in the prompt).
        source: `llm` (self-play) or `journal` (mined from a failed chat turn).
        brief: the skill to practise (journal mining: the redacted user
            request); "" for none.
        source_trajectory_id: the trajectory it was mined from, if any.
        needed_clusters: clusters the bank is short of (diversity injection).
        forbidden_shapes: task shapes the bank already has ("do not write another ...").
    """

    cluster: str
    tier: str
    source: str = "llm"
    brief: str = ""
    source_trajectory_id: str | None = None
    needed_clusters: tuple[str, ...] = ()
    forbidden_shapes: tuple[str, ...] = ()


@dataclass(frozen=True)
class Rejection:
    """One refused attempt: `kind` (in `REJECTION_KINDS`), one-line `detail`, 1-based `attempt`."""

    kind: str
    detail: str
    attempt: int


@dataclass(frozen=True)
class GenerationOutcome:
    """What `ChallengeGenerator.generate` produced.

    Attributes:
        challenge: the accepted challenge, or None.
        rejections: every refused attempt, in order.
        attempts: attempts made (= model calls; at most `max_attempts`).
        model_calls: model calls made.
        duration_s: wall-clock seconds of the whole generation.
        self_test: the validator self-test status of the last attempt that
            reached it (`passed`, `rejected`, `skipped`), or `not_run`.
        self_tests: the self-test status of every attempt that reached it.
        gate_reports: for the accepted attempt, what each gate said.
    """

    challenge: Challenge | None
    rejections: tuple[Rejection, ...]
    attempts: int
    model_calls: int
    duration_s: float
    self_test: str
    self_tests: tuple[str, ...] = ()
    gate_reports: dict[str, Any] = field(default_factory=dict)

    @property
    def accepted(self) -> bool:
        """True when a challenge passed every gate."""
        return self.challenge is not None
