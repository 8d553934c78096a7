"""`nightschool strategies ...`: the strategy-champion registry (list, show, rollback)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.syntax import Syntax
from rich.table import Table

from nightschool.cli._common import err, errors_to_exit_codes, open_store, settings_from
from nightschool.errors import EXIT_CODES

if TYPE_CHECKING:
    from nightschool.strategies.champions import ChampionEntry

strategies_app = typer.Typer(
    help="Evolved solving strategies: the promoted champion self-play solves with, "
    "its history, and rollback.",
    no_args_is_help=True,
)


def _when(entry: ChampionEntry) -> str:
    return entry.timestamp.strftime("%Y-%m-%d %H:%M:%S")


def _verdict_cell(verdict: dict[str, Any] | None) -> str:
    if not verdict:
        return "—"
    p_value = verdict.get("p_value")
    low, high = verdict.get("ci_low"), verdict.get("ci_high")
    interval = (
        f" [{low:+.3f}, {high:+.3f}]"
        if isinstance(low, int | float) and isinstance(high, int | float)
        else ""
    )
    p_text = f", p={p_value:.3g}" if isinstance(p_value, int | float) else ""
    return f"lift {verdict.get('lift', 0.0):+.3f}{interval} (n={verdict.get('n')}{p_text})"


def _what(entry: ChampionEntry) -> str:
    if entry.kind == "rollback":
        return f"→ champion {entry.restores} ({entry.name})"
    if entry.kind == "baseline":
        return "→ built-in solver (no champion)"
    return entry.name


@strategies_app.command("list")
def list_strategies(
    limit: Annotated[
        int | None, typer.Option("--limit", "-n", min=1, help="Only the latest N entries.")
    ] = None,
) -> None:
    """List the registry's history, oldest first; ★ marks the current champion."""
    with errors_to_exit_codes():
        # function-local: CLI start-up time (strategies load numpy and scipy, ~1.1 s)
        from nightschool.strategies import champions

        settings = settings_from()
        if not settings.database_exists():
            Console().print("no strategy champion registered yet (run `nightschool evolve`)")
            return
        with open_store(settings) as store:
            entries = champions.history(store, limit=limit)
            now = champions.current(store)
        if not entries:
            Console().print("no strategy champion registered yet (run `nightschool evolve`)")
            return
        table = Table(title=f"strategy champions ({len(entries)} entries)")
        for column in ("id", "when (UTC)", "kind", "strategy", "verdict", "run"):
            table.add_column(column, overflow="fold")
        for entry in entries:
            mark = " ★" if now is not None and entry.id == now.id else ""
            run = (entry.run_id or "—").rsplit("/", 1)[-1]
            table.add_row(
                str(entry.id),
                _when(entry),
                entry.kind,
                escape(_what(entry)) + mark,
                escape(_verdict_cell(entry.verdict)),
                escape(run),
            )
        console = Console()
        console.print(table)
        if now is None:
            console.print("current: the built-in solver (no champion)")
        else:
            console.print(f"current: champion {now.id} ({escape(now.name)})", highlight=False)


@strategies_app.command("show")
def show_strategy(
    entry_id: Annotated[
        int | None,
        typer.Argument(help="Registry entry id (default: the current champion).", min=1),
    ] = None,
) -> None:
    """Show one champion: its source, lineage and the promotion gate's verdict."""
    with errors_to_exit_codes():
        # function-local: CLI start-up time (strategies load numpy and scipy, ~1.1 s)
        from nightschool.strategies import champions

        with open_store(settings_from(), must_exist=True) as store:
            if entry_id is None:
                entry = champions.current(store)
                if entry is None:
                    raise champions.ChampionError(
                        "no strategy champion is current",
                        hint="see `nightschool strategies list`",
                    )
            else:
                entry = champions.get(store, entry_id)
            restored = champions.get(store, entry.restores) if entry.restores else None
            now = champions.current(store)
        console = Console()
        head = f"[bold]entry {entry.id}[/] · {entry.kind} · {_when(entry)} UTC"
        console.print(head, highlight=False)
        if entry.note:
            console.print(f"note: {escape(entry.note)}", highlight=False)
        if entry.kind == "baseline":
            console.print("back to the built-in solver: no champion from here on")
            return
        if restored is not None:
            console.print(f"re-activates champion {restored.id}; it follows:", highlight=False)
            entry = restored
        current = " (current)" if now is not None and now.id == entry.id else ""
        console.print(f"[bold]champion {entry.id}: {escape(entry.name)}{current}[/]")
        console.print(f"run: {escape(entry.run_id or '—')}", highlight=False)
        if entry.record:
            settings_line = ", ".join(f"{k}={v}" for k, v in entry.record.items())
            console.print(f"promoted under: {escape(settings_line)}", highlight=False)
        console.print("[bold]lineage[/] (newest first)")
        for item in entry.lineage:
            tag = f" [champion {item['champion_id']}]" if "champion_id" in item else ""
            where = f"gen {item.get('generation', '?')} of {item.get('run_id', '?')}"
            line = f"  - {item.get('name')}{tag}: {where}"
            console.print(escape(line), highlight=False)
        console.print("[bold]verdict[/]")
        verdict = entry.verdict or {}
        console.print(f"  {escape(str(verdict.get('summary') or _verdict_cell(verdict)))}")
        console.print(escape(json.dumps(verdict, indent=1)), highlight=False)
        console.print("[bold]source[/]")
        console.print(Syntax(entry.source, "python", line_numbers=True, word_wrap=True))


@strategies_app.command("rollback")
def rollback_strategy(
    entry_id: Annotated[
        int | None,
        typer.Argument(
            help="Entry to re-activate (default: the champion before the current one; "
            "past the first, the built-in solver).",
            min=1,
        ),
    ] = None,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
) -> None:
    """Re-activate an earlier champion (a new entry; history is never rewritten).

    Exit codes: 0 rolled back, 1 declined at the prompt, 2 unknown id or
    nothing to roll back, 4 unusable database.
    """
    with errors_to_exit_codes():
        # function-local: CLI start-up time (strategies load numpy and scipy, ~1.1 s)
        from nightschool.strategies import champions

        with open_store(settings_from(), must_exist=True) as store:
            now = champions.current(store)
            target = champions.rollback_target(store, entry_id)
            to = f"champion {target}" if target else "the built-in solver (no champion)"
            frm = f"champion {now.id} ({now.name})" if now else "the built-in solver"
            if not yes and not typer.confirm(f"roll back from {frm} to {to}?", default=False):
                err.print("rollback cancelled; nothing changed")
                raise typer.Exit(EXIT_CODES["error"])
            entry = champions.rollback(store, entry_id, note="rolled back from the command line")
        Console().print(
            f"entry {entry.id}: now using "
            + (
                f"champion {entry.restores} ({entry.name})"
                if entry.restores
                else "the built-in solver"
            ),
            highlight=False,
        )
