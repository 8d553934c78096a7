"""`nightschool dream` and `nightschool status`."""

from __future__ import annotations

import contextlib
import signal
import threading
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from nightschool.cli._common import (
    NO_MODEL_CHOICE,
    ModelChoice,
    UnsandboxedCodeOpt,
    err,
    errors_to_exit_codes,
    open_store,
    preflight,
    progress_bar,
    settings_from,
    with_model_options,
)
from nightschool.cli._dream_report import budget_lines, cycle_lines, final_outcomes, kept_summary
from nightschool.cli._idle import show_phases
from nightschool.cli._parallel import RayAddressOpt, WorkersOpt, parallel_backend, remote_resources
from nightschool.errors import UserError


def _mark(cycle: Any) -> str:
    """A cycle's verdict: passed, failed, a fault, or skipped (the router's `stop`)."""
    if cycle.skipped:
        return f"[dim]- skipped: {escape(cycle.skipped)}[/]"
    if cycle.infrastructure_error:
        return f"[yellow]! {cycle.infrastructure_error}[/]"
    return "[green]✓ passed[/]" if cycle.passed else "[red]✗ failed[/]"


def _samples_line(drawn: Any) -> str:
    if drawn.skipped:
        return f"    [dim]no samples: {drawn.skipped}[/]"
    marks = "".join("[green]✓[/]" if ok else "[red]✗[/]" for ok in drawn.passed)
    pair = " → pass/fail pair" if drawn.contrast else ""
    fault = f" [yellow](stopped: {escape(drawn.fault)})[/]" if drawn.fault else ""
    return f"    samples {marks} ({sum(drawn.passed)}/{len(drawn.passed)} passed){pair}{fault}"


@with_model_options
def dream(
    cycles: Annotated[int, typer.Option("--cycles", "-n", min=1, help="Cycles to run.")] = 3,
    cluster: Annotated[
        str | None, typer.Option(help="Practise only this cluster (default: frontier picks).")
    ] = None,
    tier: Annotated[
        str | None,
        typer.Option(help="Render at this tier (starter|basic|intermediate|advanced|expert)."),
    ] = None,
    seed: Annotated[
        int | None, typer.Option(help="Seed for cluster/template/challenge choices.")
    ] = None,
    lessons: Annotated[
        bool,
        typer.Option(
            "--lessons/--no-lessons",
            help="Show playbook lessons to the solver and extract verified lessons "
            "from failed or struggled cycles.",
        ),
    ] = True,
    skills: Annotated[
        bool,
        typer.Option(
            "--skills/--no-skills",
            help="Keep passing solutions as skills and show similar ones as worked examples.",
        ),
    ] = True,
    verify_k: Annotated[
        int,
        typer.Option(
            "--verify-k",
            min=0,
            help="Fresh renderings solved with and without each new lesson or skill; it is "
            "kept as verified only when the promotion gate says it helps (0: skills stay "
            "unverified and lesson extraction is off).",
        ),
    ] = 6,
    playbook_max_entries: Annotated[
        int | None,
        typer.Option(
            "--playbook-max-entries",
            min=1,
            show_default=False,
            help="Size cap of the playbook per kind (lessons and skills counted apart): above "
            "it the least useful unverified entries are archived, never a verified one "
            "\\[default: NIGHTSCHOOL_PLAYBOOK_MAX_ENTRIES, else 5,000].",
        ),
    ] = None,
    exemplars: Annotated[
        int | None,
        typer.Option(
            "--exemplars",
            min=0,
            max=5,
            show_default=False,
            help="Show a cycle that finds no skill of its own template this many of your "
            "verified solutions to other tasks of its cluster, as format exemplars (0: off) "
            "\\[default: NIGHTSCHOOL_EXEMPLARS, else 0].",
        ),
    ] = None,
    loop: Annotated[
        bool,
        typer.Option(
            "--loop",
            help="Keep dreaming until Ctrl-C or SIGTERM (--cycles is ignored): between cycles, "
            "reflect on the backlog and cool off adaptively (5 s-3 min).",
        ),
    ] = False,
    curriculum: Annotated[
        bool,
        typer.Option(
            "--curriculum/--templates-only",
            help="When the template bank has nothing left to teach, mine failed chat turns "
            "and write new challenges with the model (quality-gated); --templates-only: never.",
        ),
    ] = True,
    samples: Annotated[
        int,
        typer.Option(
            "--samples",
            min=1,
            help="Solves per cycle: the cycle plus N-1 independent single-attempt samples of "
            "the same challenge and prompt at the solver's temperatures, stored as trajectories "
            "(extra.sample_of) so a challenge gets both a pass and a fail for preference pairs "
            "(`trajectories export --format preference`); only the cycle counts on the frontier.",
        ),
    ] = 1,
    search: Annotated[
        str,
        typer.Option(
            "--search",
            help="retry: each retry repairs the latest failure (rising temperature); prm: it "
            "repairs the failure the process reward model values highest; best-of-n: every "
            "attempt is an independent sample of the task; mcts: tree search over repairs and "
            "fresh samples with the PRM as its value. Same budget for all; prm and mcts need "
            "`nightschool learn prm` (bench/bench_search.py compares them).",
        ),
    ] = "retry",
    router: Annotated[
        bool,
        typer.Option(
            "--router/--no-router",
            help="Let the learned router set each cycle's attempt budget when "
            "`nightschool learn router` saved one (only when the gate promoted it).",
        ),
    ] = True,
    frontier: Annotated[
        str,
        typer.Option(
            "--frontier",
            help="brittle: pick clusters by recent friction (default); prm: weight them by "
            "the PRM's uncertainty x how rarely they were practised, 20% uniform floor "
            "(needs a saved PRM; otherwise the brittle picker).",
        ),
    ] = "brittle",
    verify_share: Annotated[
        float | None,
        typer.Option(
            "--verify-share",
            min=0.01,
            max=1.0,
            show_default=False,
            help="Hold verification (the controlled comparisons) to this share of the dream's "
            "time: a candidate that does not fit waits and is verified after a later cycle; "
            "what still waits at the end is kept for the next dream (a skill stored unverified, "
            "a lesson candidate never shown until verified). 1 verifies every candidate at "
            "once \\[default: NIGHTSCHOOL_VERIFY_SHARE, else 0.25].",
        ),
    ] = None,
    model_choice: ModelChoice = NO_MODEL_CHOICE,
    unsandboxed: UnsandboxedCodeOpt = False,
    backend: Annotated[
        str,
        typer.Option(
            "--backend",
            help="Where the extra samples of --samples N run: local (here, one after the "
            "other) or ray (the N-1 samples of a cycle at once, one Ray task each; pip install "
            "'nightschool[ray]'). Only meaningful with --samples > 1; cycles always run here.",
        ),
    ] = "local",
    ray_address: RayAddressOpt = None,
    workers: WorkersOpt = 1,
) -> None:
    """Run self-play cycles: pick a challenge, solve it with the model, judge it in a sandbox.

    Each cycle's trajectory and frontier run are written together after it ends,
    so Ctrl-C never leaves half a cycle behind.
    """
    with errors_to_exit_codes():
        # function-local: CLI start-up time (learn loads numpy and scipy, ~1.2 s)
        from nightschool.learn.frontier import check_picker
        from nightschool.learn.search import check_search
        from nightschool.practice import open_practice

        if backend != "local" and samples < 2:
            raise UserError(
                f"--backend {backend} parallelises the extra samples of --samples N; with "
                f"--samples {samples} there is nothing to run in parallel",
                hint="add --samples 4 (or more), or drop --backend",
            )
        check_search(search)  # before any model or database is opened
        check_picker(frontier)
        settings = model_choice.settings(
            playbook_max_entries=playbook_max_entries,
            exemplars=exemplars,
            verify_share=verify_share,
        )
        sandbox, chat_model = preflight(settings, unsandboxed=unsandboxed, runs="generated code")
        store = open_store(settings)
        try:
            with contextlib.ExitStack() as stack:
                parallel = stack.enter_context(
                    parallel_backend(
                        backend, address=ray_address, workers=workers, unsandboxed=unsandboxed
                    )
                )
                resources = remote_resources(settings, sandbox.config) if parallel else None
                with err.status("loading the skill playbook ..."):
                    playbook = None
                    if lessons or skills:
                        # function-local: CLI start-up time (the playbook loads numpy, ~300 ms)
                        from nightschool.playbook import MemoryConfig, SkillMemory

                        config = MemoryConfig.from_settings(settings)
                        playbook = SkillMemory(store, config=config)
                        stack.callback(playbook.close)
                    practice = stack.enter_context(
                        open_practice(
                            store,
                            chat_model,
                            sandbox,
                            temperature=settings.temperature,
                            max_tokens=settings.max_tokens,
                            lessons=lessons,
                            skills=skills,
                            verify_k=verify_k,
                            seed=seed,
                            curriculum=curriculum and cluster is None and tier is None,
                            home=settings.home_dir(),
                            search=search,
                            router=router,
                            frontier=frontier,
                            playbook=playbook,
                            verify_share=settings.verify_share,
                        )
                    )
                _dream_run(
                    practice,
                    settings,
                    chat_model.name,
                    cycles,
                    cluster,
                    tier,
                    loop,
                    samples,
                    backend=parallel,
                    resources=resources,
                )
        finally:
            store.close()


def _dream_run(
    practice: Any,
    settings: Any,
    model_name: str,
    cycles: int,
    cluster: str | None,
    tier: str | None,
    loop: bool,
    samples: int = 1,
    *,
    backend: Any = None,
    resources: Any = None,
) -> None:
    # function-local: CLI start-up time (dream, ~110 modules, ~260 ms)
    from nightschool.dream import summarize
    from nightschool.dream.samples import Sampler
    from nightschool.practice import run_loop

    dream_loop = practice.loop
    sampler = Sampler(
        dream_loop.store,
        dream_loop.solver,
        samples,
        session_id=dream_loop.session_id,
        backend=backend,
        resources=resources,
    )
    drawn: list[Any] = []
    playbook = practice.playbook
    what = "until Ctrl-C" if loop else f"{cycles} cycle(s)"
    err.print(
        f"dreaming {what} with [bold]{model_name}[/] · database {settings.database_label()}",
        highlight=False,
    )
    progress = progress_bar()
    results: list[Any] = []
    with progress:
        task = progress.add_task("starting", total=None if loop else cycles)

        def on_event(message: str) -> None:
            progress.update(task, description=message)

        def on_cycle(index: int, cycle: Any) -> None:
            results.append(cycle)
            mark = _mark(cycle)
            shown = f", {len(cycle.lessons_shown)} lesson(s) shown" * bool(
                cycle.lessons_shown
            ) + f", {len(cycle.skills_shown)} skill(s) shown" * bool(cycle.skills_shown)
            source = "" if cycle.source == "template" else f" {cycle.source}"
            count = f"{index + 1}" if loop else f"{index + 1}/{cycles}"
            progress.console.print(
                f"cycle {count}  {cycle.template:<32} {cycle.tier:<12} "
                f"{mark} after {cycle.attempts} attempt(s), {cycle.duration_s:.1f}s"
                f"{shown} [dim]({cycle.pick.mode}{source})[/]",
                highlight=False,
            )
            for line in cycle_lines(cycle):
                progress.console.print(line, highlight=False)
            if samples > 1:
                drawn.append(sampler.sample(cycle, on_event=on_event))
                progress.console.print(_samples_line(drawn[-1]), highlight=False)
            progress.advance(task)

        if loop:
            stop = threading.Event()

            def on_term(_signum: int, _frame: Any) -> None:
                stop.set()

            previous = signal.signal(signal.SIGTERM, on_term)
            try:
                run_loop(
                    practice,
                    should_stop=stop.is_set,
                    sleep=stop.wait,
                    on_cycle=on_cycle,
                    on_event=on_event,
                )
            except KeyboardInterrupt:
                progress.console.print(
                    "[yellow]stopped by Ctrl-C[/] (the cycle in progress was not recorded)"
                )
            finally:
                signal.signal(signal.SIGTERM, previous)
        else:
            dream_loop.run(cycles, cluster=cluster, tier=tier, on_cycle=on_cycle, on_event=on_event)
    table = Table(title=f"dream summary · session {dream_loop.session_id}")
    for column in ("cluster", "runs", "passes", "mean attempts", "tier now"):
        table.add_column(column, justify="left" if column == "cluster" else "right")
    for row in summarize(results, dream_loop.tracker):
        table.add_row(
            str(row["cluster"]),
            str(row["runs"]),
            str(row["passes"]),
            f"{row['attempts']:.2f}",
            str(row["tier"]),
        )
    console = Console()
    console.print(table)
    if samples > 1:
        extra = sum(len(d.passed) for d in drawn)
        console.print(
            f"samples: {extra} extra solve(s); {sum(d.contrast for d in drawn)} of "
            f"{len(drawn)} cycle(s) now have both a pass and a fail"
        )
    lessons_done, skills_done = final_outcomes(results)
    learned = [o for o in lessons_done if o.lesson_id]
    new_skills = [s for s in skills_done if s.status == "written" and not s.earlier]
    generated = sum(c.source != "template" for c in results)
    if playbook is not None:
        console.print(
            f"lessons learned this run: {len(learned)} · skills kept: {len(new_skills)} "
            f"({sum(s.verified for s in new_skills)} verified) · playbook: "
            f"{playbook.count(kind='lesson')} lesson(s), "
            f"{playbook.count(kind='skill')} skill(s)"
            + (f" · {generated} cycle(s) on mined or generated challenges" if generated else "")
        )
        for line in kept_summary(results):
            console.print(line, highlight=False)
    for line in budget_lines(dream_loop):
        console.print(line, highlight=False)


def status() -> None:
    """Show what the database holds and the frontier of every cluster."""
    with errors_to_exit_codes():
        # function-local: CLI start-up time (dream, ~110 modules, ~260 ms)
        from nightschool.dream import FrontierTracker

        settings = settings_from()
        path = settings.database_label()
        console = Console()
        if not settings.database_exists():
            console.print(f"no database yet at {path}; run `nightschool dream` first.")
            return
        store = open_store(settings)
        try:
            counts = store.counts()
            console.print(f"database {path}", highlight=False)
            console.print(
                f"trajectories {counts['trajectories']} (passed {counts['passed']}, failed "
                f"{counts['failed']}, unknown {counts['unknown']}) · corrections "
                f"{counts['corrections']} · frontier runs {counts['frontier_runs']}"
            )
            kinds = {
                kind: (int(count), int(verified))
                for kind, count, verified in store.query(
                    "SELECT kind, COUNT(*), COALESCE(SUM(verified), 0) FROM lessons GROUP BY kind"
                )
            }
            lessons, verified = kinds.get("lesson", (0, 0))
            skills, skills_verified = kinds.get("skill", (0, 0))
            [(archived,)] = store.query("SELECT COUNT(DISTINCT id) FROM lessons_archive")
            [(pending,)] = store.query("SELECT COUNT(*) FROM pending_lessons")
            waits = f" · {pending} lesson candidate(s) waiting for verification" if pending else ""
            console.print(
                f"playbook {lessons} lessons ({verified} verified), {skills} skills "
                f"({skills_verified} verified) · {archived} retracted{waits}"
            )
            table = Table(title="frontier")
            columns = ("cluster", "runs", "passes", "first-try", "brittleness", "state", "tier")
            for column in columns:
                table.add_column(
                    column, justify="left" if column in ("cluster", "state") else "right"
                )
            for state in FrontierTracker(store).states():
                flags = [
                    name
                    for name, on in (
                        ("brittle", state.brittle),
                        ("mastered", state.mastered),
                        ("saturated", state.saturated),
                    )
                    if on
                ]
                table.add_row(
                    state.cluster,
                    str(state.runs),
                    str(state.passes),
                    str(state.first_try_wins),
                    str(state.brittleness),
                    ", ".join(flags) or ("untried" if state.runs == 0 else "steady"),
                    state.tier,
                )
            console.print(table)
            show_phases(store, settings)
        finally:
            store.close()
