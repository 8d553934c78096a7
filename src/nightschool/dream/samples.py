"""N-sample self-consistency: extra independent solves of a dream cycle's challenge.

`nightschool dream --samples N` solves each cycle's challenge N times: the
cycle itself (the solver's full attempt loop, as without `--samples`) and
N - 1 extra **samples**, so a challenge gets both a pass and a fail where one
solve would not: a first-try pass, or three failed attempts, gives no
preference pair on its own (seed 002 `distill.self_consistency`, whose
`pairwise_pass_fail` is `nightschool.exports.pairwise_pass_fail`).

Each sample is one attempt (pass@1) from the same prompt the cycle's first
attempt saw (the stored system prompt, with the same lessons and worked
examples, and the task), never the retry prompt: the samples are
independent draws of the same question. Sample k (k = 1 .. N-1) samples at
the temperature the solver uses for attempt `k mod max_attempts` (0.55, 0.9,
0.2, ... with the defaults: the solver's own temperatures) with the seed salt
`config.seed + k`, so its sampling seed differs from every call of the cycle.
One model call per sample: a single attempt never resamples (nothing ran
before it).

Samples are stored as `selfplay` trajectories with `extra["sample_of"]` (the
cycle's trajectory id), `extra["sample_index"]` and `extra["samples"]` and the
cycle's `challenge_hash`; they carry the cycle's `lessons_shown`/`skills_shown`.
They are not frontier runs and record no lesson exposure: the frontier
counts cycles (first-try wins, brittleness, tier unlocks), and N samples of
one challenge counted as N cycles would unlock tiers N times faster on a
single rendering. Only template-bank challenges are sampled: they re-render
exactly from (template, tier, seed); a mined or generated challenge is not
kept anywhere it could be re-read from.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from nightschool.challenges import Challenge, render
from nightschool.dream.loop import CycleResult
from nightschool.errors import ChallengeFaultError, UserError
from nightschool.parallel import Backend, LocalResources, Resources, derive_id
from nightschool.solver.attempts import attempt_temperature
from nightschool.solver.core import Solver
from nightschool.solver.episodes import SolveJob, solve_once
from nightschool.store import Store
from nightschool.trajectory import Trajectory

CARRIED = (
    "lessons_shown",
    "lesson_scores",
    "skills_shown",
    "pick_mode",
    "pick_reason",
    "challenge_source",
    "source_reason",
)
"""`extra` keys a sample copies from its cycle's trajectory (what the prompt showed, the pick)."""


@dataclass(frozen=True)
class SampleSet:
    """The extra samples of one cycle.

    Attributes:
        cycle_trajectory_id: the cycle's own trajectory.
        cycle_passed: the cycle's verdict.
        trajectory_ids: the samples' stored trajectories, in order.
        passed: each sample's verdict, in the same order.
        skipped: why no sample was drawn ("" when they were).
        fault: the challenge fault that ended sampling early, if any.
    """

    cycle_trajectory_id: str
    cycle_passed: bool
    trajectory_ids: tuple[str, ...] = ()
    passed: tuple[bool, ...] = ()
    skipped: str = ""
    fault: str | None = None

    @property
    def contrast(self) -> bool:
        """The cycle and its samples hold both a pass and a fail."""
        return bool(self.passed) and {self.cycle_passed, *self.passed} == {True, False}


class Sampler:
    """Draws the extra samples of dream cycles and stores them.

    Args:
        store: the dream's database.
        solver: the dream's solver (its model, sandbox and config are used;
            its playbook is not: a sample sees what the cycle saw).
        samples: solves per cycle, the cycle included (1: no extra samples).
        session_id: recorded on the samples (the dream run's id).
        backend: None solves the samples here, one after the other; a
            `nightschool.parallel` backend solves them as episodes at once
            (`solver.episodes.solve_once`) and they are stored here in sample
            order, under ids derived from (cycle trajectory, sample index).
        resources: the solver's model and sandbox for `backend` (default: the
            solver's own; a remote backend needs `SettingsResources`).

    Raises:
        UserError: `samples` < 1.
    """

    def __init__(
        self,
        store: Store,
        solver: Solver,
        samples: int,
        *,
        session_id: str = "",
        backend: Backend | None = None,
        resources: Resources | None = None,
    ) -> None:
        if samples < 1:
            raise UserError("--samples must be at least 1")
        self.store = store
        self.solver = solver
        self.samples = samples
        self.session_id = session_id
        self.backend = backend
        self.resources = resources

    def solver_for(self, index: int) -> Solver:
        """The single-attempt solver of sample `index` (1-based; see the module docstring)."""
        cfg = self.solver.config
        temperature = attempt_temperature(
            cfg.temperature, cfg.temperature_step, cfg.max_temperature, index % cfg.max_attempts
        )
        config = cfg.model_copy(
            update={"max_attempts": 1, "temperature": temperature, "seed": cfg.seed + index}
        )
        return Solver(self.solver.model, self.solver.sandbox, config)

    def sample(
        self, cycle: CycleResult, *, on_event: Callable[[str], None] | None = None
    ) -> SampleSet:
        """Solve `cycle`'s challenge `samples - 1` more times and store each sample.

        Each sample is stored as soon as it is solved (Ctrl-C loses only the
        one in progress).

        Returns:
            What was drawn; `skipped` says why nothing was (one sample per
            cycle, a cycle that ended on a fault or was not attempted, a
            challenge not from the template bank, or one that no longer
            renders to the same hash).

        Raises:
            InfrastructureError: the model or sandbox failed during a sample;
                that sample was stored as `unknown` first. A challenge fault
                (`ChallengeFaultError`) ends the sampling instead (`fault`).
        """
        base = SampleSet(cycle.trajectory_id, cycle.passed)
        if self.samples == 1:
            return base
        skipped = ""
        first = self.store.get_trajectory(cycle.trajectory_id)
        if cycle.infrastructure_error is not None:
            skipped = "the cycle ended on a fault"
        elif cycle.skipped is not None:
            skipped = "the cycle was not attempted (router: stop)"
        elif cycle.source != "template":
            skipped = f"a {cycle.source} challenge is not re-rendered"
        elif first is None:
            skipped = "the cycle's trajectory is not in the store"
        if skipped or first is None:
            return SampleSet(cycle.trajectory_id, cycle.passed, skipped=skipped)
        challenge = render(cycle.template, cycle.tier, cycle.seed)
        if challenge.challenge_hash != first.extra.get("challenge_hash"):
            return SampleSet(
                cycle.trajectory_id, cycle.passed, skipped="the challenge renders differently now"
            )
        carried = {key: first.extra[key] for key in CARRIED if key in first.extra}
        notify = on_event or (lambda _msg: None)
        if self.backend is not None:
            return self._sample_on(self.backend, cycle, first, challenge, carried, notify)
        ids: list[str] = []
        passed: list[bool] = []
        fault: str | None = None
        for index in range(1, self.samples):
            notify(f"sample {index + 1}/{self.samples} of {challenge.template}")
            result = self.solver_for(index).solve(
                challenge,
                session_id=self.session_id,
                on_event=on_event,
                system_prompt=first.system_prompt,
                lessons=[],
            )
            extra = {
                **result.trajectory.extra,
                **carried,
                "sample_of": first.id,
                "sample_index": index,
                "samples": self.samples,
            }
            stored = self.store.append_trajectory(
                result.trajectory.model_copy(update={"extra": extra})
            )
            ids.append(stored.id)
            passed.append(result.passed)
            error = result.infrastructure_error
            if isinstance(error, ChallengeFaultError):
                fault = error.message
                break
            if error is not None:
                raise error
        return SampleSet(cycle.trajectory_id, cycle.passed, tuple(ids), tuple(passed), fault=fault)

    def _sample_on(
        self,
        backend: Backend,
        cycle: CycleResult,
        first: Trajectory,
        challenge: Challenge,
        carried: dict[str, object],
        notify: Callable[[str], None],
    ) -> SampleSet:
        """`sample` with the solves on `backend`, stored here in sample order (idempotently)."""
        resources = self.resources or LocalResources(self.solver.model, self.solver.sandbox)

        def jobs() -> Iterator[SolveJob]:
            for index in range(1, self.samples):
                notify(f"sample {index + 1}/{self.samples} of {challenge.template}")
                yield SolveJob(
                    challenge=challenge,
                    config=self.solver_for(index).config,
                    session_id=self.session_id,
                    trajectory_id=derive_id("sample", first.id, index),
                    system_prompt=first.system_prompt,
                )

        ids: list[str] = []
        passed: list[bool] = []
        fault: str | None = None
        with contextlib.closing(backend.map(solve_once, resources, jobs())) as solved:
            for index, result in enumerate(solved, start=1):
                extra = {
                    **result.trajectory.extra,
                    **carried,
                    "sample_of": first.id,
                    "sample_index": index,
                    "samples": self.samples,
                }
                with self.store.transaction():
                    if self.store.get_trajectory(result.trajectory.id) is None:
                        self.store.append_trajectory(
                            result.trajectory.model_copy(update={"extra": extra})
                        )
                ids.append(result.trajectory.id)
                passed.append(result.passed)
                error = result.infrastructure_error
                if isinstance(error, ChallengeFaultError):
                    fault = error.message
                    break  # closing the map cancels the samples still running
                if error is not None:
                    raise error
        return SampleSet(cycle.trajectory_id, cycle.passed, tuple(ids), tuple(passed), fault=fault)
