"""One place that assembles a practice session: solver, playbook, verifier, extractor, dream loop.

`nightschool dream` (once or `--loop`), the idle watchdog's dream and
self-play phases, and the chat agent's `self_play` tools all practise through
`open_practice`, so they behave the same. `consolidate` is the work between
cycles of a continuous loop (seed 000: drain the backlog before the next
cycle): reflect on failed trajectories not yet reflected on.
"""

from __future__ import annotations

import contextlib
import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from nightschool.dream.frontier import FrontierTracker, adaptive_cooldown
from nightschool.dream.loop import CycleCutShort, CycleResult, DreamLoop
from nightschool.dream.sources import CurriculumSources
from nightschool.lessons.reflection import Reflector
from nightschool.llm import ChatModel
from nightschool.prompts.live import with_live_prompt
from nightschool.sandbox import Sandbox
from nightschool.solver.core import Solver, SolverConfig
from nightschool.store import Store

if TYPE_CHECKING:
    from nightschool.playbook import SkillMemory

CONSOLIDATE_REFLECTIONS = 2
"""Backlog reflections between two cycles of a continuous loop (each is one model call)."""
FIRST_COOLDOWN_S = 5.0
"""The adaptive cool-off a continuous loop starts from, seconds (its floor, seed 000)."""


@dataclass
class Practice:
    """A ready dream loop and what it owns.

    Attributes:
        loop: the dream loop.
        playbook: the skill playbook the solver reads and writes (None: off).
        model: the model the solver and the learning code call.
    """

    loop: DreamLoop
    playbook: SkillMemory | None
    model: ChatModel


@contextlib.contextmanager
def open_practice(
    store: Store,
    model: ChatModel,
    sandbox: Sandbox,
    *,
    temperature: float = 0.2,
    max_tokens: int = 512,
    lessons: bool = True,
    skills: bool = True,
    verify_k: int = 6,
    seed: int | None = None,
    playbook: SkillMemory | None = None,
    session_id: str | None = None,
    curriculum: bool = True,
    champion: bool = True,
    home: Path | None = None,
    search: str = "retry",
    router: bool = True,
    frontier: str = "brittle",
    verify_share: float | None = None,
) -> Iterator[Practice]:
    """Build a dream loop over `store`; closes the playbook it opened on exit.

    Args:
        store: the open database.
        model: the model (a `PreemptibleModel` for idle work).
        sandbox: where solutions run.
        temperature: the solver's first-attempt temperature.
        max_tokens: the solver's completion cap, tokens.
        lessons: show lessons and extract verified ones from failed cycles.
        skills: keep passing solutions as skills and show verified ones.
        verify_k: fresh renderings per arm of a verification (0: no
            verification, so no lesson extraction and unverified skills).
        seed: seeds the loop's choices (None: random).
        playbook: an already open playbook to share (e.g. the chat server's);
            None opens one when lessons or skills are on.
        session_id: recorded on every trajectory.
        curriculum: route through journal mining and generated challenges
            when the template bank has nothing left to teach (see
            `nightschool.dream.sources`); False: template bank only.
        champion: cycles solve through the registered strategy champion when
            one is current, looked up at every cycle
            (`nightschool.strategies.champion_solver`); False, or no champion:
            the default solver. Verification always uses the default solver.
        home: the nightschool home whose learned models the solver may use
            (`learners.solver_hooks`); None: none.
        search: `retry` (repair the latest failure), `prm` (PRM-guided
            repair), `best-of-n` (independent samples) or `mcts` (tree search
            with the PRM as value); see `learners.search`. The PRM ones need
            `home`.
        router: let a gate-approved router checkpoint in `home` set each
            cycle's budget.
        frontier: `brittle` (`FrontierTracker.pick_seed`) or `prm`
            (`learners.frontier.PrmFrontierTracker`: PRM uncertainty x rarity
            with a 20% floor, engaged only while a PRM checkpoint exists in
            `home`).
        verify_share: hold verification to this share of the dream's time
            (`DreamLoop`'s `verify_share`); None: every candidate at once.

    Raises:
        UserError: an unknown `search` or `frontier`.
        ValueError: a `verify_share` outside (0, 1] (`DreamLoop`; the CLI's
            flag and `NIGHTSCHOOL_VERIFY_SHARE` refuse one before this).
    """
    # function-local: start-up time (learn, lessons and strategies load the gate's scipy and
    # the playbook's numpy, ~1.5 s; `nightschool serve` imports this module while it starts)
    from nightschool.learn.frontier import check_picker
    from nightschool.learn.search import check_search
    from nightschool.lessons.extraction import LessonExtractor
    from nightschool.lessons.verify import PairedVerifier

    check_picker(frontier)
    check_search(search)
    policy = budget_router = None
    if home is not None:
        from nightschool.learn import solver_hooks  # function-local: start-up time

        policy, budget_router = solver_hooks(home, search=search, router=router)
    owned = None
    if playbook is None and (lessons or skills):
        from nightschool.playbook import SkillMemory  # function-local: start-up time

        playbook = owned = SkillMemory(store)
    try:
        solver = Solver(
            model,
            sandbox,
            SolverConfig(temperature=temperature, max_tokens=max_tokens),
            search=policy,
            router=budget_router,
        )
        solver.playbook = playbook
        verifier = (
            PairedVerifier(solver, store=store, k=verify_k) if verify_k and playbook else None
        )
        extractor = (
            LessonExtractor(model, playbook, solver, verifier=verifier)
            if lessons and verifier is not None and playbook is not None
            else None
        )
        rng = random.Random(seed) if seed is not None else random.Random()
        sources = None
        if curriculum:
            sources = CurriculumSources(store, model, sandbox, rng=rng)
        cycle_solver = solver
        if champion:
            # function-local: start-up time
            from nightschool.strategies.champion_solver import ChampionSolver

            cycle_solver = ChampionSolver(solver, store)
        # cycles use the prompt registry's live solver prompt (built-in when none)
        cycle_solver = with_live_prompt(cycle_solver, store)
        from nightschool.learn.frontier import make_tracker  # function-local: start-up time

        tracker = make_tracker(store, frontier, home)
        loop = DreamLoop(
            store,
            cycle_solver,
            tracker,
            rng=rng,
            session_id=session_id,
            extractor=extractor,
            skills=skills,
            lessons=lessons,
            verifier=verifier,
            sources=sources,
            verify_share=verify_share,
        )
        yield Practice(loop, playbook, model)
    finally:
        if owned is not None:
            owned.close()


def consolidate(practice: Practice, *, limit: int = CONSOLIDATE_REFLECTIONS) -> int:
    """Reflect on up to `limit` failed trajectories not yet reflected on; returns how many.

    Raises:
        Preempted: a user turn started (idle work).
        InfrastructureError: the model failed on every try (the reflector
            stops early and releases its claims).
    """
    if practice.playbook is None or limit <= 0:
        return 0
    from nightschool.lessons.sink import PlaybookSink  # function-local: start-up time (playbook)

    reflector = Reflector(practice.loop.store, practice.model, sink=PlaybookSink(practice.playbook))
    return reflector.run(limit).reflected


def next_cooldown(tracker: FrontierTracker, cycle: CycleResult, current_s: float) -> float:
    """The adaptive cool-off after `cycle`, seconds (`adaptive_cooldown` of its frontier run).

    A cycle without a frontier run (a challenge or infrastructure fault) keeps
    `current_s`.
    """
    runs = tracker.runs(cycle.cluster)
    if runs and runs[-1].trajectory_id == cycle.trajectory_id:
        return adaptive_cooldown(current_s, runs[-1])
    return current_s


def run_loop(
    practice: Practice,
    *,
    should_stop: Callable[[], bool],
    sleep: Callable[[float], bool],
    on_cycle: Callable[[int, CycleResult], None] | None = None,
    on_event: Callable[[str], None] | None = None,
    max_cycles: int | None = None,
    consolidate_limit: int = CONSOLIDATE_REFLECTIONS,
    cooldown_scale: float = 1.0,
) -> list[CycleResult]:
    """Cycle until `should_stop()` (or `max_cycles`), consolidating and cooling off between.

    After each cycle: `consolidate` (reflect on the backlog), then a pause of
    the adaptive cool-off (seed 000: halve after progress, x0.75 after a flat
    win, x2 after a failure, within 5-180 s) times `cooldown_scale`, through
    `sleep(seconds)`, which returns True when woken to stop.

    `on_cycle` reports every cycle whose trajectory was stored, and only
    those, except the one an infrastructure fault ends (stored as `unknown`,
    then raised). A user turn that cuts a cycle short after its trajectory was
    written (`CycleCutShort`: during its skill or lesson follow-up) has the
    cycle reported before the `Preempted` propagates; a turn before that write
    leaves nothing stored and nothing reported.

    Raises:
        InfrastructureError: a cycle hit a model or sandbox fault (stored as an
            `unknown` trajectory first).
        Preempted: a user turn started (`CycleCutShort` when the cycle in
            progress was already stored and reported).
    """
    results: list[CycleResult] = []
    cooldown = FIRST_COOLDOWN_S
    tracker = practice.loop.tracker
    while not should_stop() and (max_cycles is None or len(results) < max_cycles):
        try:
            cycle = practice.loop.run_cycle(on_event=on_event)
        except CycleCutShort as cut:  # stored, so reported; then give way
            results.append(cut.cycle)
            if on_cycle is not None:
                on_cycle(len(results) - 1, cut.cycle)
            raise
        results.append(cycle)
        if on_cycle is not None:
            on_cycle(len(results) - 1, cycle)
        if should_stop():
            break
        if on_event is not None:
            on_event("consolidating: reflecting on the backlog")
        consolidate(practice, limit=consolidate_limit)
        cooldown = next_cooldown(tracker, cycle, cooldown)
        if on_event is not None:
            on_event(f"cooling off {cooldown * cooldown_scale:.1f}s")
        if sleep(cooldown * cooldown_scale):
            break
    return results
