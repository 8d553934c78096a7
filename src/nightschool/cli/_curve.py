"""`nightschool eval learning-curve`: does dreaming make the agent better on held-out tasks?"""

from __future__ import annotations

import contextlib
import random
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from nightschool.cli._common import (
    NO_MODEL_CHOICE,
    ModelChoice,
    err,
    errors_to_exit_codes,
    open_store,
    preflight,
    sigterm_as_interrupt,
    with_model_options,
)
from nightschool.cli._parallel import (
    BackendOpt,
    RayAddressOpt,
    WorkersOpt,
    parallel_backend,
    remote_resources,
)
from nightschool.errors import EXIT_CODES, UserError


def _split(value: str) -> list[str]:
    return [part.strip() for part in value.split(",") if part.strip()]


@with_model_options
def learning_curve(
    out: Annotated[
        Path, typer.Option("--out", "-o", help="Directory for curve.csv, verdicts.json, curve.png.")
    ] = Path("learning-curve"),
    checkpoints: Annotated[
        int, typer.Option("--checkpoints", "-k", min=1, help="Dream chunks, each then measured.")
    ] = 3,
    cycles: Annotated[
        int | None,
        typer.Option("--cycles", min=1, help="Dream cycles per checkpoint (or use --minutes)."),
    ] = None,
    minutes: Annotated[
        float | None,
        typer.Option("--minutes", min=0.1, help="Dream minutes per checkpoint (whole cycles)."),
    ] = None,
    tiers: Annotated[
        str, typer.Option("--tiers", help="Comma-separated tiers of the held-out sets.")
    ] = "starter,basic",
    per_cell: Annotated[
        int, typer.Option("--per-cell", min=1, help="Held-out items per cluster × tier, per set.")
    ] = 2,
    ablation: Annotated[
        str,
        typer.Option(
            help="Measure the lessons-only and skills-only arms: final | all | none; unless "
            "none, also the placebo (unrelated items shown) and equal-compute (the dream's "
            "calls as test-time attempts) arms at the last checkpoint."
        ),
    ] = "final",
    verify_k: Annotated[
        int,
        typer.Option(
            "--verify-k", min=0, help="Fresh renderings per skill/lesson verification (0: off)."
        ),
    ] = 6,
    seed: Annotated[int, typer.Option(help="Seed of held-out sets and dream choices.")] = 0,
    fresh: Annotated[
        bool,
        typer.Option(
            "--fresh/--reuse-home",
            help="Refuse a home that already holds trajectories (a curve starts from nothing).",
        ),
    ] = True,
    frontier: Annotated[
        str,
        typer.Option(
            "--frontier",
            help="Cluster picker of the dream: brittle (default) or prm (PRM uncertainty x "
            "rarity, engaged while <home>/learners/prm.json exists: copy a trained one in). "
            "Two curves, one per picker, are the frontier-weighting ablation.",
        ),
    ] = "brittle",
    resume: Annotated[
        bool,
        typer.Option(
            "--resume",
            help="Go on with the curve in --out (after Ctrl-C, SIGTERM or a crash): same "
            "options, same NIGHTSCHOOL_HOME; measured items and dreamt cycles are kept.",
        ),
    ] = False,
    model_choice: ModelChoice = NO_MODEL_CHOICE,
    backend: BackendOpt = "local",
    ray_address: RayAddressOpt = None,
    workers: WorkersOpt = 1,
) -> None:
    """Measure held-out pass@1, dream, measure again at checkpoints; gate each against the start.

    Run it in a fresh home (NIGHTSCHOOL_HOME=/tmp/curve nightschool eval learning-curve ...):
    the start must be an agent that has learned nothing. With --backend ray the
    held-out solves of every measurement run as Ray tasks; the dream runs here.
    Every measured item and dream cycle is journalled in --out as it finishes
    (journal.jsonl); Ctrl-C or SIGTERM keeps them, and --resume goes on.
    Exit codes: 0 done, 2 bad options, 3 model or sandbox unavailable, 4
    unusable database, 130 interrupted (resume with --resume).
    """
    with errors_to_exit_codes(), contextlib.ExitStack() as stack:
        if ablation not in ("final", "all", "none"):
            raise UserError("--ablation must be final, all or none")
        if (cycles is None) == (minutes is None):
            raise UserError("give exactly one of --cycles or --minutes (per checkpoint)")
        # function-local: CLI start-up time (evals loads numpy and scipy, ~1.4 s)
        from nightschool.challenges import TIERS
        from nightschool.dream import DreamLoop
        from nightschool.evals.curve import CurveJournal, build_heldout, run_curve
        from nightschool.learn.frontier import check_picker, make_tracker
        from nightschool.lessons.extraction import LessonExtractor
        from nightschool.lessons.verify import PairedVerifier
        from nightschool.playbook import SkillMemory
        from nightschool.solver import Solver, SolverConfig

        tier_list = _split(tiers)
        unknown = [t for t in tier_list if t not in TIERS]
        if unknown:
            raise UserError(f"unknown tier(s) {', '.join(unknown)}; choose from {', '.join(TIERS)}")
        settings = model_choice.settings()
        check_picker(frontier)
        parallel = stack.enter_context(
            parallel_backend(backend, address=ray_address, workers=workers)
        )
        journal = CurveJournal(
            out,
            {
                "tiers": tier_list, "per_cell": per_cell, "seed": seed,
                "checkpoints": checkpoints, "cycles": cycles, "minutes": minutes,
                "ablation": ablation, "verify_k": verify_k, "frontier": frontier,
                "model": settings.model, "base_url": settings.base_url,
                "model_path": str(settings.model_path) if settings.model_path else None,
                "database": settings.database_label(),
                "temperature": settings.temperature, "max_tokens": settings.max_tokens,
            },
            resume=resume,
        )  # fmt: skip
        store = open_store(settings)
        if fresh and not resume and store.query("SELECT COUNT(*) FROM trajectories")[0][0]:
            store.close()
            raise UserError(
                f"{settings.database_label()} already holds trajectories; a learning curve "
                "starts from an agent that has learned nothing",
                hint="set NIGHTSCHOOL_HOME to an empty directory, or pass --reuse-home",
            )
        sandbox, chat_model = preflight(settings, unsandboxed=False, runs="generated code")
        heldout = build_heldout(tier_list, per_cell, seed)
        memory = SkillMemory(store)
        try:
            config = SolverConfig(temperature=settings.temperature, max_tokens=settings.max_tokens)
            solver = Solver(chat_model, sandbox, config, playbook=memory)
            eval_solver = solver.single_attempt()
            verifier = (
                PairedVerifier(solver, store=store, k=verify_k, session_id="curve-verify")
                if verify_k
                else None
            )
            extractor = (
                LessonExtractor(chat_model, memory, solver, verifier=verifier) if verifier else None
            )
            loop = DreamLoop(
                store,
                solver,
                make_tracker(store, frontier, settings.home_dir()),
                # a resumed dream must not replay the choices of the cycles it already ran
                rng=random.Random(f"{seed}:{journal.cycles_done()}" if resume else seed),
                extractor=extractor,
                verifier=verifier,
                exclude_templates=heldout.unseen_templates,
            )
            err.print(
                f"learning curve with [bold]{chat_model.name}[/]: held-out (a) "
                f"{len(heldout.set_a)} items, (b) {len(heldout.set_b)} items "
                f"(unseen templates: {', '.join(sorted(heldout.unseen_templates))}); "
                f"{checkpoints} checkpoint(s) of "
                + (f"{cycles} cycle(s)" if cycles else f"{minutes} minute(s)"),
                highlight=False,
            )

            def on_measure(message: str) -> None:
                err.print(f"[bold]{message}[/]", highlight=False)

            def on_item(index: int, total: int, row: Any) -> None:
                mark = "✓" if row.passed else "✗"
                note = " (nothing shown: the start's result)" if row.reused else ""
                err.print(f"  {index:>3}/{total} {mark} {row.task_id}{note}", highlight=False)

            def on_cycle(index: int, cycle: Any) -> None:
                mark = "✓" if cycle.passed else "✗"
                extra = ""
                if cycle.skill and cycle.skill.status == "written":
                    extra += f" · skill {cycle.skill.skill_id} verified={cycle.skill.verified}"
                if cycle.lesson and cycle.lesson.lesson_id:
                    extra += f" · lesson {cycle.lesson.lesson_id}"
                err.print(
                    f"  cycle {index + 1} {mark} {cycle.template} · {cycle.tier} "
                    f"({cycle.attempts} attempt(s), {cycle.duration_s:.0f}s){extra}",
                    highlight=False,
                )

            try:
                with sigterm_as_interrupt():
                    curve = run_curve(
                        store=store,
                        memory=memory,
                        loop=loop,
                        eval_solver=eval_solver,
                        heldout=heldout,
                        checkpoints=checkpoints,
                        cycles_per_checkpoint=cycles,
                        minutes_per_checkpoint=minutes,
                        ablation=ablation,  # type: ignore[arg-type]
                        on_measure=on_measure,
                        on_item=on_item,
                        on_cycle=on_cycle,
                        backend=parallel,
                        resources=remote_resources(settings, sandbox.config) if parallel else None,
                        journal=journal,
                    )
            except KeyboardInterrupt:
                err.print(
                    "[yellow]interrupted[/]: every measured item and finished cycle is kept in "
                    f"{escape(str(journal.path))}; go on with the same command plus --resume",
                    highlight=False,
                )
                raise typer.Exit(EXIT_CODES["interrupted"]) from None
            written = curve.write(out)
        finally:
            memory.close()
            store.close()
        console = Console()
        table = Table(title="learning curve: held-out pass@1 (Wilson 95%)")
        for column in ("checkpoint", "dream min", "cycles", "arm", "set", "pass@1", "95% CI"):
            table.add_column(column, justify="right")
        for row in curve.rows():
            table.add_row(
                str(row["checkpoint"]),
                f"{row['dream_minutes']:.1f}",
                str(row["cycles"]),
                row["arm"],
                row["set"],
                f"{row['pass_at_1']:.3f} ({row['passed']}/{row['n']})",
                f"[{row['ci_low']:.3f}, {row['ci_high']:.3f}]",
            )
        console.print(table)
        for verdict in curve.verdicts:
            console.print(
                f"checkpoint {verdict['checkpoint']} · {verdict['arm']} · set "
                f"({verdict['set']}, {verdict['measures']}) vs start, one pair per template: "
                f"{verdict['summary']}",
                highlight=False,
            )
        for name, path in written.items():
            console.print(f"{name}: {path}", highlight=False)
