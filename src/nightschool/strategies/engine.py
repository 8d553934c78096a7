"""The strategy-evolution loop: baselines, authored generations, one holdout verdict.

Generation 0 plays the built-in baselines on the train slice; the best (by
the champion policy) becomes the incumbent and stays the *baseline incumbent*.
When a strategy champion is registered (`nightschool.strategies.champions`), the
run starts from it: it plays first in generation 0, beside the baselines (not
in place of the one it descends from), and it is the baseline incumbent, i.e.
the gate's reference, whatever the train scores. Why: a promotion replaces the
champion in use, so only a strategy that beats *that champion* on a fresh
holdout may be registered; had a baseline that edged it on train become the
reference, a candidate could be promoted over the baseline and registered over
a champion it never beat. The baselines still play so the search may restart
from one of them when it scores better on this run's train slice (it must then
beat the champion on the holdout too).
Each later generation an LLM authors `population` candidates from the
incumbent's compacted results on every train task; contract-clean candidates
and the incumbent (re-measured) play the same train tasks at the same budget,
and the champion policy picks the next incumbent. After the last generation —
only then — the holdout slice is drawn (disjoint from train, asserted) and the
champion plays the baseline incumbent on it; `promotion_gate` decides. Train
scores are search telemetry; the verdict is the only evidence-grade comparison.

Games (one strategy on one task, `evolution.games.play_game`) are played in
batches through a `nightschool.parallel` backend: all of a generation's
strategies on all train tasks at once, the two holdout arms together. The
local backend plays them one after the other here, as before; with Ray they
run as tasks and come back in submission order, so the state is the same.

Around every game the run calls its runtime hooks (`hooks.PlayHooks`:
`before_play`, `after_play`; a watchdog or audit seam). Each play's latency
and spend per role (worker, analyst) and model come back in its `TaskResult`;
the run adds them, with the author's calls, to one cost ledger in the state
(`ledger`). Latency is reported beside the verdict and never gates.

State is checkpointed after every generation (`checkpoint.json` in the run
directory); `Evolution.resume` continues after the last completed generation,
so an interrupt loses at most the generation in progress.
"""

from __future__ import annotations

import contextlib
import math
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from nightschool.errors import InfrastructureError, UserError
from nightschool.gate import GateConfig, PairedResult, SequentialGate, promotion_gate
from nightschool.llm import ChatModel
from nightschool.parallel import Backend, LocalBackend, LocalResources, Resources
from nightschool.sandbox import Sandbox
from nightschool.strategies.archive import (
    CHECKPOINT_NAME,
    AuthoringFailedError,
    Node,
    TaskResult,
    gzip_size,
    load_checkpoint,
    select_champion,
    write_json_atomic,
)
from nightschool.strategies.author import (
    AUTHOR_GRAMMAR,
    TaskLine,
    author_candidate,
    author_messages,
    compact_losses,
    contract_sha256,
)
from nightschool.strategies.baselines import BASELINES
from nightschool.strategies.champions import ChampionEntry, start_point
from nightschool.strategies.config import EvolutionConfig
from nightschool.strategies.contract import CONTRACT_TEXT
from nightschool.strategies.games import Game, GameRules, play_game, stable_seed
from nightschool.strategies.hooks import PlayEvent, PlayHooks
from nightschool.strategies.ledger import add_attempts, add_results, latency, new_ledger
from nightschool.strategies.tasks import TaskSpec, draw_holdout, draw_train

__all__ = ["Evolution", "EvolutionConfig"]


def _pair(incumbent: TaskResult, candidate: TaskResult) -> PairedResult:
    """One holdout task as a gate input: pass/fail scores, token costs."""
    return PairedResult(
        incumbent.task_id,
        float(incumbent.passed),
        float(candidate.passed),
        incumbent.tokens,
        candidate.tokens,
    )


_stable_seed = stable_seed


Progress = Callable[[str], None]


class Evolution:
    """One evolution run bound to a run directory.

    Args:
        run_dir: where `checkpoint.json` (and the reports) live.
        model: the solving model (harness calls).
        sandbox: runs strategies and validators.
        author: the authoring model (default: `model`).
        fallback: the author's retry model (default: `author`).
        analyst: the critic's model, serving the strategies' `harness.critique`
            calls (default: `model`); same budget, its own ledger role.
        on_event: progress callback (short strings).
        backend: where tournament games run (default: `LocalBackend`, one
            after the other in this process); authoring and the checkpoint
            stay in this process either way.
        resources: the model and sandbox of each game; default: `model` and
            `sandbox` themselves (`LocalResources`). A remote backend needs
            `SettingsResources` that rebuild `model` in each worker.
        analyst_resources: where a game gets the analyst's model; default:
            `LocalResources(analyst, sandbox)` when `analyst` is given. A remote
            backend needs `SettingsResources` for the analyst too.
        hooks: `PlayHooks` called around every game (`nightschool.strategies.hooks`).

    Use `Evolution.start(config, ...)` for a new run or `Evolution.resume(run_dir, ...)`.
    """

    def __init__(
        self,
        run_dir: Path,
        state: dict[str, Any],
        *,
        model: ChatModel,
        sandbox: Sandbox,
        author: ChatModel | None = None,
        fallback: ChatModel | None = None,
        analyst: ChatModel | None = None,
        on_event: Progress | None = None,
        backend: Backend | None = None,
        resources: Resources | None = None,
        analyst_resources: Resources | None = None,
        hooks: Sequence[PlayHooks] = (),
    ) -> None:
        self.run_dir = run_dir
        self.state = state
        self.config = EvolutionConfig.model_validate(state["config"])
        self.model = model
        self.sandbox = sandbox
        self.author = author or model
        self.fallback = fallback
        self.analyst = analyst
        self.hooks = tuple(hooks)
        self.notify: Progress = on_event or (lambda _m: None)
        self.backend: Backend = backend or LocalBackend()
        self.resources: Resources = resources or LocalResources(model, sandbox)
        if analyst_resources is None and analyst is not None:
            analyst_resources = LocalResources(analyst, sandbox)
        self.analyst_resources = analyst_resources
        self.state.setdefault("ledger", new_ledger())
        self.archive = {n["name"]: Node.from_json(n) for n in state["archive"]}
        self.train = [TaskSpec.from_json(t) for t in state["train"]]

    @classmethod
    def start(
        cls,
        run_dir: Path,
        config: EvolutionConfig,
        *,
        champion: ChampionEntry | None = None,
        contract_path: str | None = None,
        **kwargs: Any,
    ) -> Evolution:
        """Create a new run in `run_dir` (drawing the train slice) and checkpoint it.

        Args:
            run_dir: the run directory (must not hold a checkpoint).
            config: the run's settings.
            champion: the registered champion to start from (None: the baselines
                alone); stored in the checkpoint as `start_champion`, so a resumed
                run keeps it even if the registry changed.
            contract_path: where `config.contract` was read from, recorded with
                its SHA-256 in `state["contract"]` (None: not from a file).
            **kwargs: the constructor's collaborators (`model`, `sandbox`, ...).

        Raises:
            UserError: `run_dir` already holds a checkpoint (use `resume`).
        """
        if (run_dir / CHECKPOINT_NAME).exists():
            raise UserError(
                f"{run_dir} already holds an evolution run", hint=f"resume it: --resume {run_dir}"
            )
        try:
            train = draw_train(
                config.train, seed=config.seed, tier=config.tier, clusters=config.clusters
            )
        except ValueError as exc:
            raise UserError(str(exc)) from exc
        state: dict[str, Any] = {
            "version": 1,
            "config": config.model_dump(mode="json"),
            "train": [t.to_json() for t in train],
            "generations_completed": -1,
            "incumbent": None,
            "baseline_incumbent": None,
            "archive": [],
            "generations": [],
            "failed_generation": None,
            "holdout": None,
            "verdict": None,
            "status": "running",
            "error": None,
            "start_champion": start_point(champion),
            "contract": {
                "source": "built-in" if config.contract is None else "caller",
                "path": contract_path,
                "sha256": contract_sha256(config.contract or CONTRACT_TEXT),
            },
            "ledger": new_ledger(),
        }
        run = cls(run_dir, state, **kwargs)
        state["models"] = {
            "solver": run.model.name,
            "author": run.author.name,
            "fallback": (run.fallback or run.author).name,
            "analyst": (run.analyst or run.model).name,
        }
        run.checkpoint()
        return run

    @classmethod
    def resume(cls, run_dir: Path, **kwargs: Any) -> Evolution:
        """Load the run in `run_dir`; `run()` continues after its last completed generation.

        An unfinished run continues only with the solver model it started with:
        train scores of earlier generations and the recorded provenance
        (`state["models"]`) belong to that model.

        Raises:
            UserError: no valid checkpoint in `run_dir`, or `model` is not the
                run's solver model (while the run is unfinished).
        """
        run = cls(run_dir, load_checkpoint(run_dir), **kwargs)
        solver = run.state.get("models", {}).get("solver")
        if run.state["status"] != "done" and solver is not None and solver != run.model.name:
            raise UserError(
                f"{run_dir} was started with the solver model {solver!r}, not {run.model.name!r}",
                hint=f"resume with --model {solver} (and its --base-url)",
            )
        return run

    # -- state ---------------------------------------------------------------

    def checkpoint(self) -> None:
        """Write the state atomically to `run_dir/checkpoint.json`."""
        self.state["archive"] = [n.to_json() for n in self.archive.values()]
        write_json_atomic(self.run_dir / CHECKPOINT_NAME, self.state)

    @property
    def incumbent(self) -> Node:
        """The current champion (after generation 0)."""
        name = self.state["incumbent"]
        if name is None:
            raise RuntimeError("no incumbent before generation 0 has completed")
        return self.archive[str(name)]

    # -- playing -------------------------------------------------------------

    def play(self, source: str, tasks: Sequence[TaskSpec]) -> list[TaskResult]:
        """Play `source` on `tasks` at the run's budget; every pass re-verified.

        Raises:
            InfrastructureError: a model or sandbox fault (the play is not scored).
        """
        return self.play_all([(source, tasks)])[0]

    def play_all(
        self,
        plays: Sequence[tuple[str, Sequence[TaskSpec]]],
        announce: Sequence[str] = (),
        *,
        names: Sequence[str] = (),
        phase: str = "train",
    ) -> list[list[TaskResult]]:
        """Play every (source, tasks) pair as one batch of games on the run's backend.

        Games are submitted in order (all tasks of the first pair, then the
        second, ...) and come back in that order, so the local backend plays
        exactly the loop `[self.play(s, t) for s, t in plays]` would.

        Args:
            plays: (strategy source, tasks) pairs.
            announce: optional progress lines, one per pair, sent to `on_event`
                when the pair's first game is submitted.
            names: the strategies' archive names, one per pair, for the hooks
                (missing: `?`).
            phase: `train` or `holdout`, for the hooks.

        Returns:
            One result list per pair, in task order.

        Raises:
            InfrastructureError: a model or sandbox fault (nothing is scored).
        """
        rules = GameRules(
            self.resources,
            budget=self.config.budget,
            max_tokens=self.config.solve_max_tokens,
            temperature=self.config.temperature,
            seed=self.config.seed,
            critic=self.analyst_resources,
        )
        generation = int(self.state["generations_completed"]) + (phase == "train")
        pending: deque[PlayEvent] = deque()

        def games() -> Iterator[Game]:
            for index, (source, tasks) in enumerate(plays):
                if index < len(announce):
                    self.notify(announce[index])
                name = names[index] if index < len(names) else "?"
                for spec in tasks:
                    event = PlayEvent(phase, generation, name, spec.task_id)
                    pending.append(event)
                    for hook in self.hooks:
                        hook.before_play(event)
                    yield Game(source, spec)

        def result(flat: Iterator[TaskResult]) -> TaskResult:
            played = next(flat)
            event = pending.popleft()
            for hook in self.hooks:
                hook.after_play(event, played)
            return played

        with contextlib.closing(self.backend.map(play_game, rules, games())) as flat:
            out = [[result(flat) for _ in tasks] for _, tasks in plays]
        for results in out:
            add_results(self.state["ledger"], results)
        return out

    def _measure(self, *nodes: Node) -> None:
        """Measure `nodes` on the train slice in one batch of games (`play_all`)."""
        results = self.play_all(
            [(node.source, self.train) for node in nodes],
            [f"playing {node.name} on {len(self.train)} train tasks" for node in nodes],
            names=[node.name for node in nodes],
        )
        for node, measured in zip(nodes, results, strict=True):
            node.measure(measured)

    # -- generations ---------------------------------------------------------

    def _row(self, node: Node) -> dict[str, Any]:
        return {
            "name": node.name,
            "parent": node.parent,
            "status": node.status,
            "score": node.score,
            "cost": node.cost,
            "seconds": node.seconds,
            "gzip_bytes": node.gzip_bytes,
            "detail": node.detail,
            "results": [asdict(r) for r in node.results],
        }

    def _generation_zero(self) -> None:
        nodes = []
        start = self.state.get("start_champion")
        if start is not None:  # first: it keeps its place on a train-score tie
            source = str(start["source"])
            node = Node(start["node"], source, 0, None, "champion", gzip_bytes=gzip_size(source))
            nodes.append(node)
        for name, source in BASELINES.items():
            node = Node(name, source, 0, None, "baseline", gzip_bytes=gzip_size(source))
            nodes.append(node)
        self._measure(*nodes)
        champion = select_champion(nodes, self.config.champion, self.config.epsilon)
        for node in nodes:
            self.archive[node.name] = node
        self.state["incumbent"] = champion.name
        self.state["baseline_incumbent"] = nodes[0].name if start is not None else champion.name
        self.state["generations"].append(
            {
                "generation": 0,
                "incumbent_before": None,
                "champion": champion.name,
                "rows": [self._row(n) for n in nodes],
            }
        )

    def _author(self, generation: int) -> list[Node]:
        incumbent = self.incumbent
        lines = [TaskLine(r.task_id, r.cluster, r.passed, r.feedback) for r in incumbent.results]
        contract = self.config.contract or CONTRACT_TEXT
        messages = author_messages(
            incumbent.name, incumbent.source, compact_losses(lines), contract=contract
        )
        nodes = []
        for index in range(1, self.config.population + 1):
            name = f"g{generation}c{index}"
            self.notify(f"generation {generation}: authoring {name}")
            outcome = author_candidate(
                self.author,
                messages,
                fallback=self.fallback,
                temperature=self.config.author_temperature,
                max_tokens=self.config.author_max_tokens,
                seed=_stable_seed(self.config.seed, name),
                grammar=AUTHOR_GRAMMAR if self.config.author_grammar else None,
            )
            add_attempts(self.state["ledger"], outcome.attempts)
            tried = " -> ".join(f"{a.model}:{a.status}" for a in outcome.attempts)
            nodes.append(
                Node(
                    name,
                    outcome.source,
                    generation,
                    incumbent.name,
                    "candidate" if outcome.ok else "author_failed",
                    gzip_bytes=gzip_size(outcome.source) if outcome.source else 0,
                    detail="" if outcome.ok else f"{tried}: {outcome.detail}"[:600],
                    author_tokens=outcome.tokens,
                )
            )
            if not outcome.ok and all(a.status == "infrastructure" for a in outcome.attempts):
                nodes[-1].detail = f"infrastructure: {tried}: {outcome.detail}"[:600]
        return nodes

    def _generation(self, generation: int) -> None:
        incumbent = self.incumbent
        nodes = self._author(generation)
        survivors = [n for n in nodes if n.status == "candidate"]
        if not survivors:
            self.state["failed_generation"] = {
                "generation": generation,
                "incumbent_before": incumbent.name,
                "rows": [self._row(n) for n in nodes],
            }
            infra = all(n.detail.startswith("infrastructure:") for n in nodes)
            self.state["status"] = "failed"
            message = (
                f"generation {generation}: all {len(nodes)} candidate(s) failed to be authored "
                f"(first: {nodes[0].detail[:200]})"
            )
            self.state["error"] = message
            for node in nodes:
                self.archive[node.name] = node
            self.checkpoint()
            if infra:
                raise InfrastructureError(message, hint="check the author model and --base-url")
            raise AuthoringFailedError(
                message, hint="try a stronger --model, a --fallback-model, or a larger --population"
            )
        # The incumbent is re-measured at the same budget, on the same tasks, same seeds.
        self._measure(incumbent, *survivors)
        champion = select_champion(
            [incumbent, *survivors], self.config.champion, self.config.epsilon
        )
        for node in nodes:
            self.archive[node.name] = node
        self.state["incumbent"] = champion.name
        self.state["failed_generation"] = None
        self.state["generations"].append(
            {
                "generation": generation,
                "incumbent_before": incumbent.name,
                "champion": champion.name,
                "rows": [self._row(n) for n in [incumbent, *nodes]],
            }
        )

    # -- the decision ---------------------------------------------------------

    def _decide(self) -> None:
        holdout = draw_holdout(
            self.config.holdout,
            self.train,
            seed=self.config.seed,
            tier=self.config.tier,
            clusters=self.config.clusters,
            offset=self.config.holdout_offset,
        )
        champion = self.incumbent
        baseline = self.archive[str(self.state["baseline_incumbent"])]
        record: dict[str, Any] = {
            "tasks": [t.to_json() for t in holdout],
            "drawn_after_generation": self.state["generations_completed"],
            "offset": self.config.holdout_offset,
            "champion": champion.name,
            "baseline": baseline.name,
            "pairs": [],
        }
        self.state["holdout"] = record
        if champion.name == baseline.name:
            self.state["verdict"] = {
                "promote": False,
                "reason": "no challenger: the champion is still the baseline incumbent",
                "n": 0,
                "test": "none",
            }
            return
        self.notify(f"holdout: {champion.name} vs {baseline.name} on {len(holdout)} tasks")
        gate = GateConfig(
            mode=self.config.gate_mode, alpha=self.config.gate_alpha, seed=self.config.seed
        )
        sequential = (
            SequentialGate(gate.model_copy(update={"max_pairs": len(holdout)}))
            if self.config.holdout_gate == "sequential"
            else None
        )
        if sequential is not None:  # task by task; stop once the e-process promotes
            theirs: list[TaskResult] = []
            ours: list[TaskResult] = []
            for task in holdout:
                pair = self.play_all(
                    [(baseline.source, [task]), (champion.source, [task])],
                    names=[baseline.name, champion.name],
                    phase="holdout",
                )
                theirs += pair[0]
                ours += pair[1]
                decided = sequential.update(_pair(theirs[-1], ours[-1]))
                if decided is not None:  # promoted, or (with max_pairs) stopped for futility
                    outcome = "promoted" if decided.promote else "stopped"
                    self.notify(f"sequential gate {outcome} after {len(ours)} of {len(holdout)}")
                    break
        else:
            theirs, ours = self.play_all(
                [(baseline.source, holdout), (champion.source, holdout)],
                names=[baseline.name, champion.name],
                phase="holdout",
            )
        pairs = [_pair(b, c) for b, c in zip(theirs, ours, strict=True)]
        record["pairs"] = [asdict(p) for p in pairs]
        record["baseline_results"] = [asdict(r) for r in theirs]
        record["champion_results"] = [asdict(r) for r in ours]
        record["gate"] = self.config.holdout_gate
        verdict = sequential.conclude() if sequential is not None else promotion_gate(pairs, gate)
        fields = {
            key: None if isinstance(value, float) and math.isnan(value) else value
            for key, value in asdict(verdict).items()
        }
        # Latency of every holdout play: reported beside the verdict, never gating.
        record["latency"] = {"baseline": latency(theirs), "champion": latency(ours)}
        self.state["verdict"] = {
            **fields,
            "summary": verdict.summary(),
            "latency": record["latency"],
        }

    def run(self) -> dict[str, Any]:
        """Run (or continue) to the end; checkpoint after each generation.

        Returns:
            The final state (also in `checkpoint.json`).

        Raises:
            AuthoringFailedError: every candidate of a generation failed (exit 1).
            InfrastructureError: a model or sandbox fault; resume later.
            KeyboardInterrupt: passes through; the last checkpoint is intact.
        """
        if self.state["status"] == "done":
            return self.state
        self.state["status"] = "running"
        self.state["error"] = None
        while self.state["generations_completed"] < self.config.generations:
            generation = int(self.state["generations_completed"]) + 1
            self.notify(f"generation {generation} of {self.config.generations}")
            if generation == 0:
                self._generation_zero()
            else:
                self._generation(generation)
            self.state["generations_completed"] = generation
            self.checkpoint()
        self._decide()
        self.state["status"] = "done"
        self.checkpoint()
        return self.state
