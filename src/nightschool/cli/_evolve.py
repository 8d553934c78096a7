"""`nightschool evolve`: search for better solving strategies, promote only on held-out proof."""

from __future__ import annotations

import contextlib
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any, Literal

import typer
from rich.console import Console

from nightschool.cli._common import (
    NO_MODEL_CHOICE,
    ModelChoice,
    err,
    errors_to_exit_codes,
    open_store,
    preflight,
    with_model_options,
)
from nightschool.cli._parallel import (
    BackendOpt,
    RayAddressOpt,
    WorkersOpt,
    parallel_backend,
    remote_resources,
)
from nightschool.errors import EXIT_CODES, NightschoolError, UserError
from nightschool.privacy import no_external_network


@with_model_options
def evolve(
    generations: Annotated[
        int, typer.Option("--generations", "-g", min=0, help="Authored generations after gen 0.")
    ] = 2,
    population: Annotated[
        int, typer.Option("--population", "-p", min=1, help="Candidates authored per generation.")
    ] = 2,
    champion: Annotated[
        str,
        typer.Option(
            help="Champion policy: `score`, or `costAware` (scores within --epsilon tie; "
            "the cheapest wins)."
        ),
    ] = "costAware",
    epsilon: Annotated[float, typer.Option(min=0.0, help="Train-score tie margin.")] = 0.0,
    budget: Annotated[
        int, typer.Option("--budget", min=1, help="Model CALLS per strategy per task.")
    ] = 3,
    train: Annotated[int, typer.Option("--train", min=1, help="Train tasks.")] = 6,
    holdout: Annotated[int, typer.Option("--holdout", min=1, help="Holdout tasks.")] = 8,
    seed: Annotated[int, typer.Option(help="Seed of task draws, model calls and the gate.")] = 0,
    tier: Annotated[str, typer.Option(help="Challenge tier of every task.")] = "basic",
    cluster: Annotated[
        list[str] | None, typer.Option("--cluster", help="Only these clusters (repeatable).")
    ] = None,
    gate_mode: Annotated[
        str, typer.Option(help="`superiority` or `noninferiority_cheaper`.")
    ] = "superiority",
    holdout_gate: Annotated[
        str,
        typer.Option(
            help="`fixed` (play the whole holdout, then the gate) or `sequential` "
            "(anytime-valid e-process: stop as soon as it promotes; superiority only)."
        ),
    ] = "fixed",
    run_dir: Annotated[
        Path | None,
        typer.Option(
            "--run-dir",
            help="Where the checkpoint and reports go (default: new dir "
            "under NIGHTSCHOOL_HOME/evolve).",
        ),
    ] = None,
    resume: Annotated[
        Path | None,
        typer.Option(
            "--resume",
            help="Continue the run in this directory after its last "
            "completed generation (its stored settings win; give the same --model).",
        ),
    ] = None,
    fallback_model: Annotated[
        str | None,
        typer.Option(help="Author retry model on the same --base-url (default: the same model)."),
    ] = None,
    model_choice: ModelChoice = NO_MODEL_CHOICE,
    unsandboxed: Annotated[
        bool,
        typer.Option(
            "--unsandboxed", help="Run strategies and code WITHOUT bubblewrap isolation (unsafe)."
        ),
    ] = False,
    backend: BackendOpt = "local",
    ray_address: RayAddressOpt = None,
    workers: WorkersOpt = 1,
) -> None:
    """Evolve solving strategies on train challenges; one gated promotion on a holdout.

    A new run starts from the registered strategy champion, if any
    (`nightschool strategies list`): it plays in generation 0 beside the
    baselines and is what a candidate must beat. A promoted winner is
    registered as the new champion; self-play then solves through it.

    Exit codes: 0 done (whatever the verdict), 1 every candidate of a generation
    failed to be authored, or the champion changed while the run ran (the
    promotion is not registered), 2 misuse, 3 model or sandbox fault, 4
    unusable database, 130 interrupted (resume with --resume DIR).

    With --backend ray the tournament games (every candidate on every train
    task, and the holdout games) run as Ray tasks; authoring, the checkpoint
    and the database stay in this process.
    """
    with errors_to_exit_codes(), contextlib.ExitStack() as stack:
        # Ray (if asked for) starts before the egress guard; its workers guard each game.
        parallel = stack.enter_context(
            parallel_backend(backend, address=ray_address, workers=workers, unsandboxed=unsandboxed)
        )
        # local-only, workers included: a non-loopback model server is refused (exit 2)
        stack.enter_context(no_external_network())
        # function-local: CLI start-up time (strategies load numpy and scipy, ~1.1 s)
        from nightschool.llm import check_model, make_model
        from nightschool.strategies import champions
        from nightschool.strategies.engine import Evolution, EvolutionConfig
        from nightschool.strategies.report import print_report, write_reports

        if champion not in ("score", "costAware"):
            raise UserError(f"--champion {champion!r}: use `score` or `costAware`")
        if gate_mode not in ("superiority", "noninferiority_cheaper"):
            raise UserError(f"--gate-mode {gate_mode!r}: use superiority or noninferiority_cheaper")
        if holdout_gate not in ("fixed", "sequential"):
            raise UserError(f"--holdout-gate {holdout_gate!r}: use fixed or sequential")
        if holdout_gate == "sequential" and gate_mode != "superiority":
            raise UserError("--holdout-gate sequential works with --gate-mode superiority only")
        if resume is not None and run_dir is not None and resume != run_dir:
            raise UserError("give either --run-dir (new run) or --resume (existing run)")
        if resume is not None:
            # function-local: CLI start-up time (strategies load numpy and scipy, ~1.1 s)
            from nightschool.strategies.archive import load_checkpoint

            load_checkpoint(resume)  # a missing or broken checkpoint is misuse (exit 2)
        settings = model_choice.settings()
        sandbox, chat_model = preflight(settings, unsandboxed=unsandboxed, runs="strategies")
        fallback = None
        if fallback_model is not None:
            with err.status("checking the fallback model ..."):
                fallback = make_model(
                    settings.model_copy(update={"model": fallback_model, "model_path": None})
                )
                check_model(fallback)
        local = settings.base_url is None  # an embedded model: catalog or --model-path

        def on_event(message: str) -> None:
            err.print(f"[dim]·[/] {message}", highlight=False)

        kwargs: dict[str, Any] = {"model": chat_model, "sandbox": sandbox, "fallback": fallback}
        if parallel is not None:
            kwargs |= {
                "backend": parallel,
                "resources": remote_resources(settings, sandbox.config),
            }
        store = stack.enter_context(open_store(settings))
        if resume is not None:
            directory = resume
            run = Evolution.resume(directory, on_event=on_event, **kwargs)
        else:
            stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
            directory = run_dir or settings.home_dir() / "evolve" / stamp
            policy: Literal["score", "costAware"] = "score" if champion == "score" else "costAware"
            config = EvolutionConfig(
                generations=generations,
                population=population,
                champion=policy,
                epsilon=epsilon,
                budget=budget,
                train=train,
                holdout=holdout,
                seed=seed,
                tier=tier,
                clusters=tuple(cluster) if cluster else None,
                solve_max_tokens=settings.max_tokens,
                temperature=settings.temperature,
                author_max_tokens=max(settings.max_tokens, 256),
                author_grammar=local,
                gate_mode="superiority" if gate_mode == "superiority" else "noninferiority_cheaper",
                holdout_gate="sequential" if holdout_gate == "sequential" else "fixed",
            )
            start = champions.current(store)
            if start is not None:
                err.print(
                    f"starting from strategy champion {start.id} ({start.name})", highlight=False
                )
            run = Evolution.start(directory, config, champion=start, on_event=on_event, **kwargs)
        err.print(
            f"evolving with [bold]{chat_model.name}[/] · run dir {directory}", highlight=False
        )
        console = Console()
        try:
            state = run.run()
        except KeyboardInterrupt:
            err.print(
                f"[yellow]interrupted[/]: the generation in progress was lost; completed "
                f"generations are checkpointed. Resume: nightschool evolve --resume {directory}",
                highlight=False,
            )
            raise typer.Exit(EXIT_CODES["interrupted"]) from None
        except NightschoolError:
            print_report(console, run.state)
            write_reports(directory, run.state)
            raise
        print_report(console, state)
        markdown, data = write_reports(directory, state)
        err.print(f"reports: {markdown} · {data}", highlight=False)
        registration = champions.register_run(store, directory, state)
        if registration.entry is not None:
            console.print(
                f"strategy champion: {registration.entry.name} {registration.reason} "
                "(`nightschool strategies show`)",
                highlight=False,
            )
