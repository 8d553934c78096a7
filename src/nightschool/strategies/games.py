"""Tournament games: one strategy on one task, the unit of work a backend maps.

A game renders its task, meters the strategy through a fresh `Harness` (the
run's budget, completion cap, temperature and the common-random-numbers seed
of the task: every strategy gets the same seeds per task), plays it in the
sandbox and re-verifies the returned code. `play_game` is a module-level,
database-free function of picklable arguments, so `nightschool.parallel`
can run games on Ray workers; the local backend runs the same function in
this process.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from nightschool.parallel import Resources
from nightschool.strategies.archive import TaskResult
from nightschool.strategies.harness import Harness, task_view
from nightschool.strategies.runner import play_strategy
from nightschool.strategies.tasks import TaskSpec

__all__ = ["Game", "GameRules", "play_game", "stable_seed"]


def stable_seed(*parts: object) -> int:
    """A 32-bit seed fixed by `parts` (first 4 bytes of SHA-256 over `a:b:...`)."""
    digest = hashlib.sha256(":".join(str(p) for p in parts).encode()).digest()
    return int.from_bytes(digest[:4], "big")


@dataclass(frozen=True)
class GameRules:
    """What every game of a run shares.

    Attributes:
        resources: the solving model and the sandbox (live, or settings a
            worker rebuilds them from).
        budget: model calls per strategy per task.
        max_tokens: completion cap of each harness model call, tokens.
        temperature: default sampling temperature of harness calls.
        seed: the run's seed (mixed with the task id into the harness seed).
        critic: the analyst's model (what serves `harness.critique`), as
            resources whose `model()` is used; None: the solving model.
    """

    resources: Resources
    budget: int
    max_tokens: int
    temperature: float
    seed: int
    critic: Resources | None = None


@dataclass(frozen=True)
class Game:
    """One strategy (its module source) on one task."""

    source: str
    spec: TaskSpec


def play_game(rules: GameRules, game: Game) -> TaskResult:
    """Play `game.source` on `game.spec` at the run's budget; the pass is re-verified.

    Returns:
        The `TaskResult` with the play's latency and its spend per role and
        model (a strategy that crashes, loops or overspends is a
        failed result, never an exception).

    Raises:
        InfrastructureError: a model or sandbox fault (the game is not scored).
    """
    model, sandbox = rules.resources.model(), rules.resources.sandbox()
    spec = game.spec
    challenge = spec.render()
    harness = Harness(
        model,
        sandbox,
        challenge,
        budget=rules.budget,
        max_tokens=rules.max_tokens,
        temperature=rules.temperature,
        # Common random numbers: every strategy gets the same seeds per task.
        seed=stable_seed(rules.seed, spec.task_id),
        critic=None if rules.critic is None else rules.critic.model(),
    )
    played = play_strategy(sandbox, game.source, harness, task_view(challenge, spec.task_id))
    passed, feedback = harness.verify(played.code)
    if played.status != "ok":
        feedback = f"strategy {played.status}: {played.detail.strip()[-300:]}"
    return TaskResult(
        task_id=spec.task_id,
        cluster=spec.cluster,
        passed=passed,
        tokens=harness.tokens,
        model_calls=harness.model_calls,
        test_runs=harness.test_runs,
        status=played.status,
        feedback="" if passed else feedback.strip()[-400:],
        seconds=played.duration_s,
        usage=harness.usage(),
    )
