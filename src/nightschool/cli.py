"""The `nightschool` command line: a thin layer over the library.

Parses flags, builds the collaborators, calls the library, and turns domain
errors into a clear message and an exit code (`nightschool.errors.EXIT_CODES`).
"""

from __future__ import annotations

import json
import random
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
)
from rich.table import Table

from nightschool.config import Settings
from nightschool.errors import EXIT_CODES, NightschoolError, UserError

app = typer.Typer(
    name="nightschool",
    help="Self-improvement for local LLM agents: practise, record, learn — no weight updates.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
trajectories_app = typer.Typer(
    help="Inspect and export recorded trajectories.", no_args_is_help=True
)
app.add_typer(trajectories_app, name="trajectories")

_err = Console(stderr=True)

ModelOpt = Annotated[
    str | None,
    typer.Option(
        "--model",
        help="`embedded` (default: bundled SmolLM2-135M via llama.cpp) or the model name "
        "on the server given by --base-url.",
        envvar="NIGHTSCHOOL_MODEL",
        show_default=False,
    ),
]
BaseUrlOpt = Annotated[
    str | None,
    typer.Option(
        "--base-url",
        help="OpenAI-compatible server, e.g. http://127.0.0.1:8080/v1 (llama.cpp, vLLM, Ollama).",
        envvar="NIGHTSCHOOL_BASE_URL",
        show_default=False,
    ),
]
ApiKeyOpt = Annotated[
    str | None,
    typer.Option(
        "--api-key",
        help="Bearer token for the server (or NIGHTSCHOOL_API_KEY).",
        envvar="NIGHTSCHOOL_API_KEY",
        show_default=False,
    ),
]


def _settings(**overrides: Any) -> Settings:
    return Settings(**{k: v for k, v in overrides.items() if v is not None})


@contextmanager
def _errors_to_exit_codes() -> Iterator[None]:
    """Map domain errors and Ctrl-C to a message on stderr and an exit code."""
    try:
        yield
    except NightschoolError as exc:
        _err.print(f"[bold red]error:[/] {exc.message}", highlight=False)
        if exc.hint:
            _err.print(f"[dim]hint:[/] {exc.hint}", highlight=False)
        raise typer.Exit(exc.exit_code) from None
    except KeyboardInterrupt:
        _err.print(
            "[yellow]interrupted[/]: the cycle in progress was not recorded; "
            "everything before it is safe."
        )
        raise typer.Exit(EXIT_CODES["interrupted"]) from None


def _open_store(settings: Settings) -> Any:
    from nightschool.store import Store

    return Store.open(settings.database_path())


@app.command()
def dream(
    cycles: Annotated[int, typer.Option("--cycles", "-n", min=1, help="Cycles to run.")] = 3,
    cluster: Annotated[
        str | None, typer.Option(help="Practise only this cluster (default: frontier picks).")
    ] = None,
    tier: Annotated[
        str | None,
        typer.Option(help="Render at this tier (basic|intermediate|advanced|expert)."),
    ] = None,
    seed: Annotated[
        int | None, typer.Option(help="Seed for cluster/template/challenge choices.")
    ] = None,
    model: ModelOpt = None,
    base_url: BaseUrlOpt = None,
    api_key: ApiKeyOpt = None,
    unsandboxed: Annotated[
        bool,
        typer.Option(
            "--unsandboxed", help="Run generated code WITHOUT bubblewrap isolation (unsafe)."
        ),
    ] = False,
) -> None:
    """Run self-play cycles: render challenges, solve them with the model, judge in a sandbox."""
    with _errors_to_exit_codes():
        from nightschool.llm.factory import check_model, make_model
        from nightschool.sandbox import Sandbox, SandboxConfig
        from nightschool.selfplay import DreamLoop, FrontierTracker, Solver, SolverConfig, summarize

        settings = _settings(model=model, base_url=base_url, api_key=api_key)
        if unsandboxed:
            _err.print("[bold yellow]warning:[/] running generated code WITHOUT a sandbox")
        sandbox = Sandbox(SandboxConfig(unsandboxed=unsandboxed))
        with _err.status("checking the sandbox and the model ..."):
            sandbox.check()
            chat_model = make_model(settings)
            check_model(chat_model)
        store = _open_store(settings)
        try:
            tracker = FrontierTracker(store)
            solver = Solver(
                chat_model,
                sandbox,
                SolverConfig(temperature=settings.temperature, max_tokens=settings.max_tokens),
            )
            loop = DreamLoop(
                store, solver, tracker, rng=random.Random(seed) if seed is not None else None
            )
            _err.print(
                f"dreaming {cycles} cycle(s) with [bold]{chat_model.name}[/] · "
                f"database {settings.database_path()}",
                highlight=False,
            )
            progress = Progress(
                SpinnerColumn(),
                TextColumn("[progress.description]{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                console=_err,
                transient=True,
            )
            with progress:
                task = progress.add_task("starting", total=cycles)

                def on_event(message: str) -> None:
                    progress.update(task, description=message)

                def on_cycle(index: int, cycle: Any) -> None:
                    mark = "[green]✓ passed[/]" if cycle.passed else "[red]✗ failed[/]"
                    if cycle.infrastructure_error:
                        mark = f"[yellow]! {cycle.infrastructure_error}[/]"
                    progress.console.print(
                        f"cycle {index + 1}/{cycles}  {cycle.template:<32} {cycle.tier:<12} "
                        f"{mark} after {cycle.attempts} attempt(s), {cycle.duration_s:.1f}s "
                        f"[dim]({cycle.pick.mode})[/]",
                        highlight=False,
                    )
                    progress.advance(task)

                results = loop.run(
                    cycles, cluster=cluster, tier=tier, on_cycle=on_cycle, on_event=on_event
                )
            table = Table(title=f"dream summary · session {loop.session_id}")
            for column in ("cluster", "runs", "passes", "mean attempts", "tier now"):
                table.add_column(column, justify="left" if column == "cluster" else "right")
            for row in summarize(results, tracker):
                table.add_row(
                    str(row["cluster"]),
                    str(row["runs"]),
                    str(row["passes"]),
                    f"{row['attempts']:.2f}",
                    str(row["tier"]),
                )
            Console().print(table)
        finally:
            store.close()


@app.command()
def status() -> None:
    """Show what the database holds and the frontier of every cluster."""
    with _errors_to_exit_codes():
        from nightschool.selfplay import FrontierTracker

        settings = _settings()
        path = settings.database_path()
        console = Console()
        if not path.exists():
            console.print(f"no database yet at {path}; run `nightschool dream` first.")
            return
        store = _open_store(settings)
        try:
            counts = store.counts()
            console.print(f"database {path}", highlight=False)
            console.print(
                f"trajectories {counts['trajectories']} (passed {counts['passed']}, failed "
                f"{counts['failed']}, unknown {counts['unknown']}) · corrections "
                f"{counts['corrections']} · frontier runs {counts['frontier_runs']}"
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
        finally:
            store.close()


def _parse_since(value: str | None) -> datetime | None:
    if value is None:
        return None
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise UserError(
            f"--since {value!r} is not a date; use YYYY-MM-DD or an ISO timestamp"
        ) from None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


@trajectories_app.command("export")
def export_trajectories(
    format_: Annotated[str, typer.Option("--format", help="Output format (jsonl).")] = "jsonl",
    since: Annotated[
        str | None, typer.Option(help="Only trajectories at or after this date (YYYY-MM-DD).")
    ] = None,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write here instead of stdout.")
    ] = None,
) -> None:
    """Write trajectories (corrections applied) one JSON record per line."""
    with _errors_to_exit_codes():
        if format_ != "jsonl":
            raise UserError(f"unsupported format {format_!r}; only jsonl is available")
        moment = _parse_since(since)
        settings = _settings()
        if not settings.database_path().exists():
            raise UserError(f"no database at {settings.database_path()}")
        store = _open_store(settings)
        count = 0
        try:
            tmp = output.with_name(output.name + ".partial") if output else None
            handle = tmp.open("w", encoding="utf-8") if tmp else sys.stdout
            try:
                for trajectory in store.iter_trajectories(since=moment):
                    handle.write(json.dumps(trajectory.model_dump(mode="json"), ensure_ascii=False))
                    handle.write("\n")
                    count += 1
            finally:
                if tmp:
                    handle.close()
            if tmp and output:
                tmp.replace(output)  # readers never see a half-written export
        finally:
            store.close()
        _err.print(f"exported {count} trajectories" + (f" to {output}" if output else ""))


def main() -> None:
    """Console-script entry point."""
    app()


if __name__ == "__main__":
    main()
