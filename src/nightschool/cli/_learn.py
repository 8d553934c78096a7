"""`nightschool learn ...`: train the small models on the agent's own history."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, TypeVar

import typer
from rich.console import Console
from rich.table import Table

from nightschool.cli._common import err, errors_to_exit_codes, open_store, settings_from

if TYPE_CHECKING:
    from nightschool.store import Store

learn_app = typer.Typer(
    help="Train the small models (process reward model, router) on recorded trajectories.",
    no_args_is_help=True,
)


R = TypeVar("R")


def _train(what: str, learn: Callable[[Store, Path], R]) -> R:
    """Open the home's store, run `learn(store, home)` under a status line, close the store.

    Raises:
        UserError: there is no database yet.
    """
    settings = settings_from()
    store = open_store(settings, must_exist=True)
    try:
        with err.status(f"training {what} ..."):
            return learn(store, settings.home_dir())
    finally:
        store.close()


def _auc(value: float | None) -> str:
    return "n/a (one class)" if value is None else f"{value:.3f}"


@learn_app.command("prm")
def learn_prm_command(
    force: Annotated[
        bool,
        typer.Option("--force", help="Write the checkpoint even if it does not beat the baseline."),
    ] = False,
    folds: Annotated[int, typer.Option(min=2, max=20, help="Grouped cross-validation folds.")] = 5,
    min_trajectories: Annotated[
        int, typer.Option(min=2, help="Fewest labelled trajectories to train on.")
    ] = 20,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
) -> None:
    """Train the process reward model and print its held-out report.

    Learns from self-play, verification and chat trajectories (never eval
    items); measures on held-out trajectories by grouped cross-validation
    beside a request-only baseline; writes `<home>/learners/prm.json` only
    when the PRM beats that baseline on open states. Exit 0 when saved, 1
    when measured but not saved, 2 when there is not enough data yet.
    """
    with errors_to_exit_codes():
        # function-local: CLI start-up time (learn loads numpy and scipy, ~1.2 s)
        from nightschool.learn import PrmConfig, learn_prm

        config = PrmConfig(folds=folds, min_trajectories=min_trajectories)
        report = _train(
            "the process reward model",
            lambda store, home: learn_prm(store, home, config, force=force),
        )
    if as_json:
        typer.echo(json.dumps(report.to_json(), indent=1))
    else:
        out = Console()
        kinds = ", ".join(f"{k} {v}" for k, v in report.by_kind.items())
        out.print(
            f"learned from {report.trajectories} trajectories ({kinds}; "
            f"{report.passed} passed, {report.failed} failed), {report.states} step states; "
            f"skipped {report.skipped_unknown} unknown, {report.skipped_empty} without steps"
        )
        table = Table(title=f"held-out AUC ({report.folds}-fold, grouped by challenge)")
        table.add_column("states")
        table.add_column("PRM", justify="right")
        table.add_column("request-only baseline", justify="right")
        table.add_row(
            f"every prefix ({report.states})",
            _auc(report.auc_prefix),
            _auc(report.baseline_auc_prefix),
        )
        table.add_row(
            f"open: failed, more attempts followed ({report.open_states}, "
            f"{report.open_positive} recovered)",
            _auc(report.auc_open),
            _auc(report.baseline_auc_open),
        )
        out.print(table)
        out.print(
            f"scoring: {report.score_us_single:.2f} µs per state one at a time, "
            f"{report.score_us_batch:.3f} µs batched; features {report.features_us:.1f} µs"
        )
        mark = "[green]saved[/]" if report.saved else "[yellow]not saved[/]"
        version = f" version {report.version}" if report.saved else ""
        out.print(f"{mark}{version}: {report.reason} ({report.path})")
    if not report.saved:
        raise typer.Exit(1)


@learn_app.command("router")
def learn_router_command(
    force: Annotated[
        bool,
        typer.Option("--force", help="Write the checkpoint even if the gate does not promote it."),
    ] = False,
    direct_at: Annotated[
        float, typer.Option(min=0.01, max=1.0, help="p(first attempt passes) for `direct`.")
    ] = 0.8,
    stop_at: Annotated[
        float, typer.Option(min=0.0, max=0.99, help="p(full budget passes) for `stop`.")
    ] = 0.05,
    min_trajectories: Annotated[
        int, typer.Option(min=4, help="Fewest full-budget self-play episodes.")
    ] = 30,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
) -> None:
    """Train the budget router and replay held-out episodes against the full budget.

    The router reads a request and answers `direct` (one attempt), `retry`
    (the full budget; also whenever it is unsure) or `stop` (no attempt).
    Held-out self-play episodes are replayed cut to the routed budget and
    paired with the full budget; the promotion gate (non-inferior and
    cheaper) and a 30% token saving decide whether `<home>/learners/router.json`
    is written. Exit 0 when saved, 1 when not, 2 when there is not enough data.
    """
    with errors_to_exit_codes():
        # function-local: CLI start-up time (learn loads numpy and scipy, ~1.2 s)
        from nightschool.learn import RouterConfig, learn_router

        config = RouterConfig(
            direct_at=direct_at, stop_at=stop_at, min_trajectories=min_trajectories
        )
        report = _train(
            "the router", lambda store, home: learn_router(store, home, config, force=force)
        )
    if as_json:
        typer.echo(json.dumps(report.to_json(), indent=1))
    else:
        out = Console()
        decisions = ", ".join(f"{k} {v}" for k, v in report.decisions.items())
        out.print(
            f"replayed {report.episodes} held-out self-play episodes ({decisions}); "
            f"p_first also learned from {report.first_only} single-attempt episodes"
        )
        table = Table(title="held-out replay: always the full budget vs routed")
        table.add_column("arm")
        table.add_column("pass rate", justify="right")
        table.add_column("tokens/episode", justify="right")
        table.add_row("full budget", f"{report.pass_full:.3f}", f"{report.tokens_full:.0f}")
        table.add_row("routed", f"{report.pass_routed:.3f}", f"{report.tokens_routed:.0f}")
        out.print(table)
        out.print(f"tokens saved: {report.savings:.1%} (bar: 30%)")
        out.print(f"gate: {report.verdict}")
        mark = "[green]saved[/]" if report.saved else "[yellow]not saved[/]"
        version = f" version {report.version}" if report.saved else ""
        out.print(f"{mark}{version}: {report.reason} ({report.path})")
    if not report.saved:
        raise typer.Exit(1)


@learn_app.command("chat-router")
def learn_chat_router_command(
    force: Annotated[
        bool,
        typer.Option("--force", help="Write the checkpoint even if the gate does not promote it."),
    ] = False,
    direct_at: Annotated[
        float, typer.Option(min=0.01, max=1.0, help="p(a direct answer passes) for `direct`.")
    ] = 0.75,
    k: Annotated[int, typer.Option("--k", min=1, max=50, help="Neighbours per decision.")] = 7,
    min_pairs: Annotated[int, typer.Option(min=2, help="Fewest requests answered both ways.")] = 20,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
) -> None:
    """Train the chat router: answer a chat request directly, or run the agent loop.

    Learns from requests answered both ways: two eval runs of one suite, one
    `nightschool eval run --route direct` and one `--route full`. Held-out
    requests (5-fold) get the measured outcome of the way the router picks,
    paired with always-full through the promotion gate (non-inferior and
    cheaper) with a 30% token-saving bar; always-direct is shown beside it.
    Writes `<home>/learners/chat_router.json` only when both hold; `serve`
    and `chat` then route their turns with it. Exit 0 when saved, 1 when not,
    2 when there is not enough data.
    """
    with errors_to_exit_codes():
        # function-local: CLI start-up time (evals loads numpy and scipy, ~1.4 s)
        from nightschool.evals import chat_pairs
        from nightschool.learn.chat_router import ChatRouterConfig, learn_chat_router
        from nightschool.playbook import default_embedder

        config = ChatRouterConfig(direct_at=direct_at, k=k, min_pairs=min_pairs)
        report = _train(
            "the chat router",
            lambda store, home: learn_chat_router(
                chat_pairs(store), home, default_embedder(), config, force=force
            ),
        )
    if as_json:
        typer.echo(json.dumps(report.to_json(), indent=1))
    else:
        out = Console()
        decisions = ", ".join(f"{k} {v}" for k, v in report.decisions.items())
        out.print(f"judged on {report.requests} held-out requests answered both ways ({decisions})")
        table = Table(title="held-out requests: always the agent loop, always direct, routed")
        table.add_column("arm")
        table.add_column("pass rate", justify="right")
        table.add_column("tokens/request", justify="right")
        table.add_row("full (agent loop)", f"{report.pass_full:.3f}", f"{report.tokens_full:.0f}")
        table.add_row("direct", f"{report.pass_direct:.3f}", f"{report.tokens_direct:.0f}")
        table.add_row("routed", f"{report.pass_routed:.3f}", f"{report.tokens_routed:.0f}")
        out.print(table)
        out.print(f"tokens saved by routing: {report.savings:.1%} (bar: 30%)")
        out.print(f"gate, routed vs full: {report.verdict}")
        out.print(f"gate, direct vs full: {report.direct_verdict}")
        mark = "[green]saved[/]" if report.saved else "[yellow]not saved[/]"
        version = f" version {report.version}" if report.saved else ""
        out.print(f"{mark}{version}: {report.reason} ({report.path})")
    if not report.saved:
        raise typer.Exit(1)
