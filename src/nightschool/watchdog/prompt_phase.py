"""The idle watchdog's prompt phase: one small GEPA run on the solver prompt.

`optimise_prompt_phase` is what an idle phase calls (the watchdog wires it;
see `nightschool.watchdog.work`). Each run draws a fresh training tier and a
fresh held-out set (its seed comes from the clock), so repeated nights never
re-test candidates on the same held-out items (no adaptive reuse of the
gate's data), and registers the winner only when the gate promotes it.
Every model call goes through the model the caller passes (a
`PreemptibleModel` while idle), so a user turn stops the run (`Preempted`)
before anything is registered.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from nightschool.prompts.optimise import OptimiseConfig, optimise_prompt, write_report
from nightschool.watchdog import PhaseResult

if TYPE_CHECKING:
    from nightschool.llm import ChatModel
    from nightschool.sandbox import Sandbox
    from nightschool.store import Store

__all__ = ["PHASE_BUDGET", "PHASE_HOLDOUT", "PHASE_TRAIN", "optimise_prompt_phase"]

PHASE_BUDGET = 24
"""GEPA metric calls of one idle run (single-attempt solves on the training tier)."""
PHASE_TRAIN = 6
"""Training tasks of one idle run."""
PHASE_HOLDOUT = 12
"""Held-out tasks of one idle run (each solved by both prompts: 24 solves)."""


def optimise_prompt_phase(
    store: Store,
    model: ChatModel,
    sandbox: Sandbox,
    home: Path | None,
    *,
    reflection_model: ChatModel | None = None,
    clock: Callable[[], float] = time.time,
    temperature: float = 0.2,
    max_tokens: int = 512,
    budget: int = PHASE_BUDGET,
    train: int = PHASE_TRAIN,
    holdout: int = PHASE_HOLDOUT,
    on_event: Callable[[str], None] | None = None,
) -> PhaseResult:
    """Run one GEPA optimisation of the solver prompt as an idle phase.

    Args:
        store: the database.
        model: the phase's model (a `PreemptibleModel` while idle).
        sandbox: where solutions run.
        home: the nightschool home; the run's `report.json` goes to
            `home/prompts/<run id>/` (None: no report file).
        reflection_model: GEPA's reflection model (None: `model`).
        clock: epoch seconds; seeds the run (fresh tasks every run).
        temperature: the solver's sampling temperature.
        max_tokens: the solver's completion cap, tokens.
        budget: GEPA metric calls (see `OptimiseConfig.budget`).
        train: training tasks.
        holdout: held-out tasks.
        on_event: short progress lines.

    Returns:
        `PhaseResult("ok", ...)` with `record` = status, prompt ids, pass
        counts and the verdict's summary.

    Raises:
        Preempted: a user turn started (nothing registered).
        InfrastructureError: the model or the sandbox failed (nothing registered).
        StalePromptError: the live prompt changed during the run.
    """
    stamp = int(clock())
    run_id = f"idle-prompts-{stamp}"
    config = OptimiseConfig(
        budget=budget,
        train=train,
        holdout=holdout,
        seed=stamp % 1_000_000,
        temperature=temperature,
        max_tokens=max_tokens,
    )
    result = optimise_prompt(
        store,
        model,
        sandbox,
        config,
        reflection_model=reflection_model,
        run_id=run_id,
        on_event=on_event,
    )
    if home is not None:
        write_report(home / "prompts" / run_id, result)
    record: dict[str, object] = {
        "status": result.status,
        "incumbent_id": result.incumbent_id,
        "prompt_id": None if result.entry is None else result.entry.id,
        "metric_calls": result.metric_calls,
        "train_scores": list(result.train_scores),
    }
    if result.status == "no_candidate":
        detail = (
            f"GEPA: no prompt beat the live one on {train} training tasks "
            f"({result.metric_calls} solves)"
        )
    else:
        before, n = result.pass_rate("incumbent")
        after, _ = result.pass_rate("candidate")
        record.update(incumbent_pass=before, candidate_pass=after, holdout=n)
        record["verdict"] = (result.verdict or {}).get("summary")
        mark = (
            f"registered as prompt {result.entry.id}"
            if result.entry is not None
            else "kept the live prompt"
        )
        detail = f"solver prompt: held-out {before}/{n} -> {after}/{n}; {mark}"
    return PhaseResult("ok", detail, record)
