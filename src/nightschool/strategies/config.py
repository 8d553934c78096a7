"""The settings of one evolution run (`EvolutionConfig`, stored in the checkpoint)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from nightschool.strategies.archive import ChampionPolicy
from nightschool.strategies.tasks import HOLDOUT_SEED_BASE

__all__ = ["EvolutionConfig"]


class EvolutionConfig(BaseModel):
    """Settings of one evolution run (stored in the checkpoint)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    generations: int = Field(default=2, ge=0)
    """Authored generations after generation 0."""
    population: int = Field(default=2, ge=1)
    """Candidates authored per generation."""
    champion: ChampionPolicy = "costAware"
    """Champion policy: `score`, or `costAware` (within epsilon, cheapest wins)."""
    epsilon: float = Field(default=0.0, ge=0.0, lt=1.0)
    """Train scores within epsilon are ties (pass-rate units)."""
    budget: int = Field(default=3, ge=1)
    """Model calls per strategy per task, the same for every strategy."""
    train: int = Field(default=6, ge=1)
    """Train tasks."""
    holdout: int = Field(default=8, ge=1)
    """Holdout tasks for the single promotion decision."""
    seed: int = 0
    """Seed of task draws, model calls and the gate."""
    tier: str = "basic"
    """Challenge tier of every task."""
    clusters: tuple[str, ...] | None = None
    """Restrict tasks to these clusters (None: all)."""
    solve_max_tokens: int = Field(default=512, gt=0)
    """Completion cap of each harness model call, tokens."""
    temperature: float = Field(default=0.2, ge=0.0)
    """Default sampling temperature of harness calls."""
    author_temperature: float = Field(default=0.7, ge=0.0)
    """Sampling temperature of the author (diversity across the population)."""
    author_max_tokens: int = Field(default=768, gt=0)
    """Completion cap of one authoring call, tokens."""
    author_grammar: bool = False
    """Constrain the author with `AUTHOR_GRAMMAR` (for a small local model)."""
    gate_mode: Literal["superiority", "noninferiority_cheaper"] = "superiority"
    """Promotion gate mode (see `nightschool.gate`)."""
    gate_alpha: float = Field(default=0.05, gt=0.0, lt=0.5)
    """One-sided false-promotion rate of the holdout gate."""
    holdout_gate: Literal["fixed", "sequential"] = "fixed"
    """`fixed`: play every holdout task, then `promotion_gate`. `sequential`: play the
    holdout task by task and stop as soon as the anytime-valid `SequentialGate`
    promotes (superiority only); the unplayed tasks cost nothing."""

    holdout_offset: int | None = Field(default=None, ge=0)
    """None: holdout render seeds drawn at random (by `seed`). An int N: the
    consecutive seeds `HOLDOUT_SEED_BASE + N + i`, so runs at offsets at least
    `holdout` apart play disjoint holdouts (`tasks.draw_holdout`)."""
    contract: str | None = None
    """Contract text shown to the author instead of `CONTRACT_TEXT` (None: the
    built-in one). The lint enforces the real contract either way."""

    @model_validator(mode="after")
    def _sequential_needs_superiority(self) -> EvolutionConfig:
        if self.holdout_gate == "sequential" and self.gate_mode != "superiority":
            raise ValueError("the sequential holdout gate supports gate_mode='superiority' only")
        return self

    @model_validator(mode="after")
    def _offset_in_range(self) -> EvolutionConfig:
        if self.holdout_offset is not None and self.holdout_offset > (
            HOLDOUT_SEED_BASE - self.holdout
        ):
            raise ValueError(
                f"holdout_offset must be at most {HOLDOUT_SEED_BASE - self.holdout} "
                f"(holdout seeds stay below {2 * HOLDOUT_SEED_BASE})"
            )
        if self.contract is not None and not self.contract.strip():
            raise ValueError("the contract text is empty")
        return self
