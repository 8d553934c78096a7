"""Optimise the solver's system prompt with GEPA; promote only through the gate.

`optimise_prompt` runs one optimisation of the `solver` slot:

1. **The incumbent** is the slot's live prompt (`registry.current`, else the
   built-in `SYSTEM_PROMPT`); GEPA starts from it.
2. **A held-out set** is built first, with the learning curve's
   `build_heldout` (set a: new seeds of practised templates; set b: one
   unseen template per cluster), at `build_heldout` seed
   `PROMPT_HOLDOUT_SEED_OFFSET + seed`: the learning curve and the benches
   use seeds below that offset, so the gate never measures on their items.
   `holdout` items are taken alternately from sets a and b.
3. **A private training tier**: `train` fresh renders at `tier`, of every
   template but set b's unseen ones, with render seeds in
   [`PROMPT_TRAIN_SEED_BASE`, + `PROMPT_TRAIN_SEED_SPAN`) = [700M, 800M). The
   dream renders below `DREAM_SEED_LIMIT` (1M), `evolve` below 2M,
   verification in [500M, 600M) and the held-out sets from 1,000M up, so no
   training task is ever practised, verified or held out; `check_train`
   checks the ranges and `check_disjoint` the rendered challenges (by hash).
4. **GEPA** (`gepa.optimize`, its real engine: reflective mutation, Pareto
   candidate selection, strict-improvement acceptance) searches with
   `SolverPromptAdapter` on the training tier (train set = its validation
   set) until `budget` metric calls (one call = one single-attempt solve of
   one training task; GEPA may overshoot by up to one iteration,
   `2 * minibatch + train` calls). Its reflection LM is `ModelReflection`
   over `reflection_model` (default: the task model itself).
5. **The gate**: when GEPA's best candidate differs from the incumbent, both
   solve every held-out item once (pass@1, same seeds, so the same sampling:
   equal budget per task) and `promotion_gate` (superiority, exact McNemar on
   the pass/fail pairs) decides. Only a promoting verdict registers the
   candidate (`registry.register`, checked in one transaction against the
   prompt it was measured against): nothing is ever half-registered, and a
   Ctrl-C before that point leaves the registry untouched.
"""

from __future__ import annotations

import json
import logging
import math
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from gepa.api import optimize
from gepa.core.result import GEPAResult
from pydantic import BaseModel, ConfigDict, Field

from nightschool.challenges import CLUSTERS, TIERS, render, templates
from nightschool.dream.loop import DREAM_SEED_LIMIT
from nightschool.errors import UserError
from nightschool.evals.curve import HELDOUT_SEED_BASE, HeldOut, build_heldout, check_disjoint
from nightschool.gate import GateConfig, PairedResult, Verdict, promotion_gate
from nightschool.prompts import registry
from nightschool.prompts.adapter import (
    COMPONENT,
    REFLECTION_TEMPLATE,
    ModelReflection,
    PromptTask,
    Rollout,
    SolverPromptAdapter,
)
from nightschool.solver.core import Solver, SolverConfig

if TYPE_CHECKING:
    from nightschool.llm import ChatModel
    from nightschool.sandbox import Sandbox
    from nightschool.store import Store

__all__ = [
    "PROMPT_HOLDOUT_SEED_OFFSET",
    "PROMPT_TRAIN_SEED_BASE",
    "PROMPT_TRAIN_SEED_SPAN",
    "HoldoutPair",
    "OptimiseConfig",
    "OptimiseResult",
    "check_train",
    "draw_train_tier",
    "optimise_prompt",
    "pick_holdout",
]

logger = logging.getLogger("nightschool.prompts")

PROMPT_TRAIN_SEED_BASE = 700_000_000
"""Training renders use seeds from here (see the module docstring for the map of ranges)."""
PROMPT_TRAIN_SEED_SPAN = 100_000_000
"""Width of the training seed range."""
PROMPT_HOLDOUT_SEED_OFFSET = 10_000
"""`build_heldout` seeds of the prompt gate start here; curve and bench runs use smaller ones."""
Arm = Literal["incumbent", "candidate"]
"""The two prompts a held-out task is solved with."""
_VERIFY_SEEDS = range(500_000_000, 600_000_000)
"""`learning.verify`'s render seeds (`VERIFY_SEED_BASE` + 100M)."""


class OptimiseConfig(BaseModel):
    """Settings of one `optimise_prompt` run."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    slot: str = "solver"
    """The slot to optimise; only `solver` has an executable per-item score so far."""
    budget: int = Field(default=40, ge=2)
    """GEPA metric calls (single-attempt solves of training tasks); must exceed `train`."""
    train: int = Field(default=6, ge=1)
    """Training tasks (GEPA's train and validation set)."""
    holdout: int = Field(default=12, ge=1)
    """Held-out tasks the gate compares on (each solved once per arm)."""
    tier: str = "starter"
    """Challenge tier of every task."""
    seed: int = Field(default=0, ge=0)
    """Seed of the training draw, the held-out set, GEPA's choices and the reflection calls."""
    minibatch: int = Field(default=3, ge=1)
    """GEPA's reflection minibatch (tasks per proposal; capped at `train`)."""
    max_tokens: int = Field(default=512, gt=0)
    """The solver's completion cap, tokens."""
    temperature: float = Field(default=0.2, ge=0)
    """The solver's sampling temperature."""
    reflection_max_tokens: int = Field(default=768, gt=0)
    """Completion cap of one reflection, tokens."""
    gate: GateConfig = GateConfig()
    """The promotion gate (default: superiority at alpha 0.05, at least 6 pairs)."""

    def check(self) -> None:
        """Raise unless a run with these settings can start.

        Raises:
            PromptError: an unknown slot, or a slot without an optimiser
                (`reflection`, `planning`: no per-item executable score yet).
            UserError: an unknown tier, or `budget` not above `train`.
        """
        slot = registry.check_slot(self.slot)
        if slot != "solver":
            raise registry.PromptError(
                f"the {slot} prompt cannot be optimised yet: it has no per-item executable "
                "score (only the solver slot does: pass@1 in the sandbox)",
                hint="optimise --slot solver; `prompts rollback` still works for every slot",
            )
        if self.tier not in TIERS:
            raise UserError(f"unknown tier {self.tier!r}; choose one of {', '.join(TIERS)}")
        if self.budget <= self.train:
            raise UserError(
                f"--budget {self.budget} must exceed --train {self.train}: GEPA first "
                "scores the starting prompt on every training task"
            )


@dataclass(frozen=True)
class HoldoutPair:
    """One held-out task solved by both prompts."""

    task_id: str
    set_name: str
    incumbent: bool
    candidate: bool
    incumbent_tokens: int
    candidate_tokens: int


@dataclass
class OptimiseResult:
    """What one `optimise_prompt` run found and did.

    Attributes:
        status: `registered` (the gate promoted the candidate; it is live now),
            `not_promoted` (measured, the gate kept the incumbent) or
            `no_candidate` (GEPA found nothing better than the incumbent on the
            training tier; no held-out measurement).
        slot: the slot.
        incumbent_id: the live prompt id the run started from (None: built-in).
        incumbent: its text.
        candidate: GEPA's best prompt (the incumbent's text when `no_candidate`).
        verdict: the gate's verdict as JSON-ready data (None when not measured).
        entry: the registered row (None unless `registered`).
        train_scores: GEPA's validation score (mean pass@1 on the training
            tier) of the incumbent and of the candidate.
        candidates: prompts GEPA kept (the seed included).
        metric_calls: GEPA's metric calls spent.
        reflections: reflection LM calls made.
        pairs: the held-out pairs.
        duration_s: wall-clock seconds of the run.
        record: settings and tallies (what `registry.PromptEntry.record` holds).
    """

    status: Literal["registered", "not_promoted", "no_candidate"]
    slot: str
    incumbent_id: int | None
    incumbent: str
    candidate: str
    verdict: dict[str, Any] | None = None
    entry: registry.PromptEntry | None = None
    train_scores: tuple[float, float] = (0.0, 0.0)
    candidates: int = 1
    metric_calls: int = 0
    reflections: int = 0
    pairs: list[HoldoutPair] = field(default_factory=list)
    duration_s: float = 0.0
    record: dict[str, Any] = field(default_factory=dict)

    def pass_rate(self, arm: Arm, set_name: str | None = None) -> tuple[int, int]:
        """(passed, n) of one arm on the held-out pairs (of one set, when given)."""
        mine = [p for p in self.pairs if set_name is None or p.set_name == set_name]
        return sum(getattr(p, arm) for p in mine), len(mine)

    def to_json(self) -> dict[str, Any]:
        """JSON-ready dict of everything above (the entry as its id)."""
        data = {k: v for k, v in asdict(self).items() if k != "entry"}
        data["entry_id"] = None if self.entry is None else self.entry.id
        return data


def check_train(train: Sequence[PromptTask], heldout: HeldOut) -> None:
    """Raise unless the training tier is disjoint from everything it must not touch.

    Checks (explicit `if`s, so they hold under `python -O`): every training
    seed in the private range, which lies outside the dream's, verification's
    and the held-out sets' ranges; no training template among set b's unseen
    ones; no training challenge (by hash) in either held-out set.

    Raises:
        UserError: naming the first violation.
    """
    private = range(PROMPT_TRAIN_SEED_BASE, PROMPT_TRAIN_SEED_BASE + PROMPT_TRAIN_SEED_SPAN)
    for task in train:
        seed = task.challenge.seed
        if seed not in private:
            raise UserError(f"training task {task.task_id} has a seed outside the private range")
        if seed < DREAM_SEED_LIMIT or seed in _VERIFY_SEEDS or seed >= HELDOUT_SEED_BASE:
            raise UserError(f"training task {task.task_id} uses a practised or held-out seed")
        if task.challenge.template in heldout.unseen_templates:
            raise UserError(f"training task {task.task_id} uses an unseen held-out template")
    check_disjoint(heldout, [t.challenge.challenge_hash for t in train])


def draw_train_tier(config: OptimiseConfig, exclude_templates: frozenset[str]) -> list[PromptTask]:
    """`config.train` fresh renders at `config.tier`, cycling over the shuffled templates.

    Seeds are drawn in the private range with `random.Random(f"prompts-train:{seed}")`.

    Raises:
        UserError: no template is left after `exclude_templates`.
    """
    rng = random.Random(f"prompts-train:{config.seed}")
    names = sorted(t.name for t in templates() if t.name not in exclude_templates)
    if not names:
        raise UserError("no template left for the training tier")
    rng.shuffle(names)
    seeds: set[int] = set()
    tasks: list[PromptTask] = []
    for index in range(config.train):
        seed = rng.randrange(
            PROMPT_TRAIN_SEED_BASE, PROMPT_TRAIN_SEED_BASE + PROMPT_TRAIN_SEED_SPAN
        )
        while seed in seeds:
            seed = rng.randrange(
                PROMPT_TRAIN_SEED_BASE, PROMPT_TRAIN_SEED_BASE + PROMPT_TRAIN_SEED_SPAN
            )
        seeds.add(seed)
        name = names[index % len(names)]
        tasks.append(
            PromptTask(f"train:{name}:{config.tier}:{seed}", render(name, config.tier, seed))
        )
    return tasks


def pick_holdout(config: OptimiseConfig) -> tuple[HeldOut, list[PromptTask]]:
    """The held-out sets of this run and the `config.holdout` tasks the gate uses.

    Tasks alternate between set a and set b (each in cluster order), so both
    sets and every cluster are represented.
    """
    per_cell = math.ceil(config.holdout / (2 * len(CLUSTERS)))
    heldout = build_heldout([config.tier], per_cell, PROMPT_HOLDOUT_SEED_OFFSET + config.seed)
    mixed = [item for pair in zip(heldout.set_a, heldout.set_b, strict=True) for item in pair]
    tasks = [PromptTask(item.task_id, item.challenge) for item in mixed[: config.holdout]]
    return heldout, tasks


_SHOWN = (
    "Base program full valset score",
    "Accepted candidate",
    "not better than",
    "Candidate rejected",
    "no text updates",
    "Found a better program",
    "did not propose",
    "Exception",
    "Skipping",
)
"""GEPA log lines worth a progress line (the rest go to `logging` at debug level)."""


class _GepaLog:
    """GEPA's logger (`log(message)`): to `logging`, and short lines to `on_event`."""

    def __init__(self, on_event: Callable[[str], None]) -> None:
        self.on_event = on_event

    def log(self, message: str) -> None:
        logger.debug("gepa: %s", message)
        text = " ".join(str(message).split())
        if "Proposed new text" in text:
            self.on_event(f"gepa: {text[:200]}{' ...' if len(text) > 200 else ''}")
        elif any(key in text for key in _SHOWN) and len(text) < 240:
            self.on_event(f"gepa: {text}")


def _verdict_json(verdict: Verdict) -> dict[str, Any]:
    fields = {
        key: None if isinstance(value, float) and math.isnan(value) else value
        for key, value in asdict(verdict).items()
    }
    return {**fields, "summary": verdict.summary()}


def optimise_prompt(
    store: Store,
    model: ChatModel,
    sandbox: Sandbox,
    config: OptimiseConfig | None = None,
    *,
    reflection_model: ChatModel | None = None,
    run_id: str | None = None,
    on_event: Callable[[str], None] | None = None,
    on_rollout: Callable[[int, Rollout], None] | None = None,
    register: bool = True,
) -> OptimiseResult:
    """Optimise a slot's prompt with GEPA and register the winner only if the gate promotes it.

    Args:
        store: the open database (the registry is read at the start and
            written at most once, at the end).
        model: the task model (the solver's).
        sandbox: where solutions run.
        config: the run's settings (see `OptimiseConfig`).
        reflection_model: GEPA's reflection model (None: `model`).
        run_id: recorded on the registered row (e.g. the run directory).
        on_event: short progress lines.
        on_rollout: called after every solve with (solves so far, rollout).
        register: False measures without registering (a bench).

    Returns:
        The `OptimiseResult`.

    Raises:
        PromptError: an unknown slot, or a slot without an optimiser
            (`reflection`, `planning`: no per-item executable score yet).
        UserError: bad settings (tier, budget not above `train`).
        InfrastructureError: the model or the sandbox failed (nothing registered).
        StalePromptError: the live prompt changed while the run ran (nothing registered).
    """
    config = config or OptimiseConfig()
    config.check()
    slot = registry.check_slot(config.slot)
    notify = on_event or (lambda _msg: None)
    started = time.perf_counter()
    live = registry.current(store, slot)
    incumbent_id = None if live is None else live.id
    incumbent = registry.live_prompt(store, slot)
    heldout, holdout = pick_holdout(config)
    train = draw_train_tier(config, heldout.unseen_templates)
    check_train(train, heldout)

    def counted(rollout: Rollout) -> None:
        if on_rollout is not None:
            on_rollout(adapter.rollouts, rollout)

    solver = Solver(
        model,
        sandbox,
        SolverConfig(
            max_attempts=1,
            temperature=config.temperature,
            max_tokens=config.max_tokens,
            seed=config.seed,
        ),
    )
    adapter = SolverPromptAdapter(solver, on_rollout=counted, session_id=run_id or "")
    reflection = ModelReflection(
        reflection_model or model, max_tokens=config.reflection_max_tokens, seed=config.seed
    )
    notify(
        f"GEPA on {len(train)} training tasks ({config.tier}), budget {config.budget} "
        f"solves; reflecting with {(reflection_model or model).name}"
    )
    result: GEPAResult[Rollout, int] = optimize(
        seed_candidate={COMPONENT: incumbent},
        trainset=train,
        adapter=adapter,
        reflection_lm=reflection,
        reflection_prompt_template=REFLECTION_TEMPLATE,
        reflection_minibatch_size=min(config.minibatch, len(train)),
        max_metric_calls=config.budget,
        logger=_GepaLog(notify),
        seed=config.seed,
        raise_on_exception=True,
        display_progress_bar=False,
    )
    best = result.candidates[result.best_idx][COMPONENT]
    scores = result.val_aggregate_scores
    out = OptimiseResult(
        status="no_candidate",
        slot=slot,
        incumbent_id=incumbent_id,
        incumbent=incumbent,
        candidate=best,
        train_scores=(float(scores[0]), float(scores[result.best_idx])),
        candidates=result.num_candidates,
        metric_calls=int(result.total_metric_calls or adapter.rollouts),
        reflections=reflection.calls,
    )
    out.record = {
        "model": model.name,
        "reflection_model": (reflection_model or model).name,
        "tier": config.tier,
        "budget": config.budget,
        "metric_calls": out.metric_calls,
        "reflections": out.reflections,
        "train": len(train),
        "holdout": len(holdout),
        "seed": config.seed,
        "heldout_seed": PROMPT_HOLDOUT_SEED_OFFSET + config.seed,
        "train_seed_base": PROMPT_TRAIN_SEED_BASE,
        "train_score_incumbent": out.train_scores[0],
        "train_score_candidate": out.train_scores[1],
        "candidates": out.candidates,
    }
    if best == incumbent:
        notify("GEPA found no prompt better than the live one on the training tier")
        out.duration_s = time.perf_counter() - started
        return out
    notify(f"measuring the candidate against the live prompt on {len(holdout)} held-out tasks")
    for task in holdout:
        before = adapter.rollout(task, incumbent)
        after = adapter.rollout(task, best)
        out.pairs.append(
            HoldoutPair(
                task.task_id,
                task.task_id.split(":", 1)[0],
                before.passed,
                after.passed,
                before.tokens,
                after.tokens,
            )
        )
    paired = [
        PairedResult(
            p.task_id,
            float(p.incumbent),
            float(p.candidate),
            p.incumbent_tokens,
            p.candidate_tokens,
        )
        for p in out.pairs
    ]
    verdict = promotion_gate(paired, config.gate)
    out.verdict = _verdict_json(verdict)
    arms: tuple[Arm, ...] = ("incumbent", "candidate")
    for arm in arms:
        out.record[f"{arm}_pass"] = list(out.pass_rate(arm))
        for set_name in ("a", "b"):
            out.record[f"{arm}_pass_{set_name}"] = list(out.pass_rate(arm, set_name))
    out.status = "not_promoted"
    notify(verdict.summary())
    if verdict.promote and register:
        out.entry = registry.register(
            store,
            slot=slot,
            text=best,
            verdict=out.verdict,
            proven_against=incumbent_id,
            run_id=run_id,
            record=out.record,
            note=f"promoted by GEPA over {registry.said(incumbent_id)}",
        )
        out.status = "registered"
    out.duration_s = time.perf_counter() - started
    return out


def write_report(directory: Path, result: OptimiseResult) -> Path:
    """Write `result` as `report.json` into `directory` (created); returns its path."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "report.json"
    path.write_text(json.dumps(result.to_json(), indent=1, default=str), encoding="utf-8")
    return path
