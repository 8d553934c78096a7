"""`nightschool evolve`: search for better solving strategies, promote only on held-out proof."""

from __future__ import annotations

import contextlib
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

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

if TYPE_CHECKING:
    from nightschool.config import Settings
    from nightschool.llm import ChatModel
    from nightschool.strategies.hooks import PlayHooks


def read_contract(path: Path) -> str:
    """The text of `--contract FILE` (UTF-8).

    Raises:
        UserError: the file is missing, unreadable, not UTF-8 or empty (exit 2).
    """
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(
            f"--contract {path}: cannot read it ({type(exc).__name__}: {exc})",
            hint="give a readable UTF-8 text file with the contract the author should see",
        ) from exc
    if not text.strip():
        raise UserError(f"--contract {path} is empty")
    return text


def check_options(
    *,
    champion: str,
    gate_mode: str,
    holdout_gate: str,
    resume: Path | None,
    run_dir: Path | None,
    holdout: int,
    holdout_offset: int | None,
) -> None:
    """Refuse contradictory or unknown option values before any work.

    Raises:
        UserError: the first problem found (exit 2).
    """
    # function-local: CLI start-up time (strategies load numpy and scipy, ~1.1 s)
    from nightschool.strategies.tasks import HOLDOUT_SEED_BASE

    if champion not in ("score", "costAware"):
        raise UserError(f"--champion {champion!r}: use `score` or `costAware`")
    if gate_mode not in ("superiority", "noninferiority_cheaper"):
        raise UserError(f"--gate-mode {gate_mode!r}: use superiority or noninferiority_cheaper")
    if holdout_gate not in ("fixed", "sequential"):
        raise UserError(f"--holdout-gate {holdout_gate!r}: use fixed or sequential")
    if holdout_gate == "sequential" and gate_mode != "superiority":
        raise UserError("--holdout-gate sequential works with --gate-mode superiority only")
    if holdout_offset is not None and holdout_offset > HOLDOUT_SEED_BASE - holdout:
        raise UserError(f"--holdout-offset: at most {HOLDOUT_SEED_BASE - holdout}")
    if resume is not None and run_dir is not None and resume != run_dir:
        raise UserError("give either --run-dir (new run) or --resume (existing run)")


def play_hooks(stack: contextlib.ExitStack, play_log: Path | None) -> list[PlayHooks]:
    """The runtime hooks of this command line (`--play-log`), closed with `stack`.

    Raises:
        UserError: the play log cannot be opened (exit 2).
    """
    # function-local: CLI start-up time (strategies load numpy and scipy, ~1.1 s)
    from nightschool.strategies.hooks import PlayLog

    hooks: list[PlayHooks] = []
    if play_log is not None:
        try:
            log = PlayLog(play_log)
        except OSError as exc:
            raise UserError(f"--play-log {play_log}: cannot open it ({exc})") from exc
        stack.callback(log.close)
        hooks.append(log)
    return hooks


def named_model(settings: Settings, name: str, role: str) -> ChatModel:
    """Build and check the model `name` on the same `--base-url` (or embedded) for `role`.

    Raises:
        UserError: an unknown model name without `--base-url` (exit 2).
        ModelUnavailableError: the model does not answer (exit 3).
    """
    # function-local: CLI start-up time (llm loads httpx, ~60 modules, ~100 ms)
    from nightschool.llm import check_model, make_model

    with err.status(f"checking the {role} model ..."):
        model = make_model(settings.model_copy(update={"model": name, "model_path": None}))
        check_model(model)
    return model


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
        typer.Option(help="Author retry model on the same --base-url (default: the author model)."),
    ] = None,
    author_model: Annotated[
        str | None,
        typer.Option(
            help="Model that authors the candidates: an embedded name, or a model on the "
            "same --base-url (default: --model)."
        ),
    ] = None,
    analyst_model: Annotated[
        str | None,
        typer.Option(
            help="Critic model serving the strategies' harness.critique calls (same budget), "
            "e.g. a stronger critic beside a cheap worker: an embedded name or a model on "
            "the same --base-url (default: --model)."
        ),
    ] = None,
    contract: Annotated[
        Path | None,
        typer.Option(
            "--contract",
            help="Contract text the author sees instead of the built-in one (a new run; "
            "recorded by path and sha256). The lint still enforces the real contract.",
        ),
    ] = None,
    holdout_offset: Annotated[
        int | None,
        typer.Option(
            "--holdout-offset",
            min=0,
            help="Holdout render seeds start at this offset (consecutive): runs whose offsets "
            "differ by at least --holdout play disjoint holdouts (a new run; default: "
            "seeds drawn at random by --seed).",
        ),
    ] = None,
    play_log: Annotated[
        Path | None,
        typer.Option(
            "--play-log",
            help="Append one JSON line per game (strategy, task, pass, tokens, seconds) "
            "to this file as games finish (a runtime hook).",
        ),
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

    The report and checkpoint record each play's latency (reported, never
    gating) and one cost ledger: tokens, calls and seconds per role (worker,
    analyst, author) and model.
    """
    with errors_to_exit_codes(), contextlib.ExitStack() as stack:
        # Ray (if asked for) starts before the egress guard; its workers guard each game.
        parallel = stack.enter_context(
            parallel_backend(backend, address=ray_address, workers=workers, unsandboxed=unsandboxed)
        )
        # local-only, workers included: a non-loopback model server is refused (exit 2)
        stack.enter_context(no_external_network())
        # function-local: CLI start-up time (strategies load numpy and scipy, ~1.1 s)
        from nightschool.strategies import champions
        from nightschool.strategies.engine import Evolution, EvolutionConfig
        from nightschool.strategies.report import print_report, write_reports

        check_options(
            champion=champion,
            gate_mode=gate_mode,
            holdout_gate=holdout_gate,
            resume=resume,
            run_dir=run_dir,
            holdout=holdout,
            holdout_offset=holdout_offset,
        )
        contract_text = read_contract(contract) if contract is not None else None
        if resume is not None:
            # function-local: CLI start-up time (strategies load numpy and scipy, ~1.1 s)
            from nightschool.strategies.archive import load_checkpoint

            load_checkpoint(resume)  # a missing or broken checkpoint is misuse (exit 2)
        settings = model_choice.settings()
        sandbox, chat_model = preflight(settings, unsandboxed=unsandboxed, runs="strategies")
        fallback = (
            None if fallback_model is None else named_model(settings, fallback_model, "fallback")
        )
        author = None if author_model is None else named_model(settings, author_model, "author")
        analyst = None if analyst_model is None else named_model(settings, analyst_model, "analyst")
        local = settings.base_url is None  # an embedded model: catalog or --model-path
        hooks = play_hooks(stack, play_log)

        def on_event(message: str) -> None:
            err.print(f"[dim]·[/] {message}", highlight=False)

        kwargs: dict[str, Any] = {
            "model": chat_model,
            "sandbox": sandbox,
            "fallback": fallback,
            "author": author,
            "analyst": analyst,
            "hooks": hooks,
        }
        if parallel is not None:
            kwargs |= {
                "backend": parallel,
                "resources": remote_resources(settings, sandbox.config),
            }
            if analyst_model is not None:
                update = {"model": analyst_model, "model_path": None}
                analyst_settings = settings.model_copy(update=update)
                kwargs["analyst_resources"] = remote_resources(analyst_settings, sandbox.config)
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
                holdout_offset=holdout_offset,
                contract=contract_text,
            )
            start = champions.current(store)
            if start is not None:
                err.print(
                    f"starting from strategy champion {start.id} ({start.name})", highlight=False
                )
            run = Evolution.start(
                directory,
                config,
                champion=start,
                contract_path=None if contract is None else str(contract.resolve()),
                on_event=on_event,
                **kwargs,
            )
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
