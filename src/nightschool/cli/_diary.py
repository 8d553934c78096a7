"""`nightschool diary`: read the agent's first-person diary."""

from __future__ import annotations

import json
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from nightschool.cli._common import err, errors_to_exit_codes, open_store, settings_from


def diary(
    limit: Annotated[
        int, typer.Option("--limit", "-n", min=1, help="Rows to show, newest first.")
    ] = 10,
    narrative: Annotated[
        bool, typer.Option("--narrative", help="Show only the consolidated narratives.")
    ] = False,
    json_out: Annotated[
        bool,
        typer.Option(
            "--json",
            help="Print JSON lines: the self-state first (kind `self_state`), then the "
            "rows, newest first.",
        ),
    ] = False,
) -> None:
    """Show how the agent sees itself now, then its latest diary entries."""
    with errors_to_exit_codes():
        # function-local: CLI start-up time (selfhood, ~110 modules, ~240 ms)
        from nightschool.selfhood import Diary, self_state

        settings = settings_from()
        console = Console()
        if not settings.database_exists():
            (err if json_out else console).print(
                f"no database yet at {settings.database_label()}; run `nightschool dream` first.",
                highlight=False,
            )
            return
        store = open_store(settings)
        try:
            state = self_state(store)
            rows = Diary(store).entries(limit, kind="narrative" if narrative else None)
        finally:
            store.close()
        if json_out:
            lines = [{"kind": "self_state", **state.to_record(), "summary": state.summary()}]
            lines += [row.to_json() for row in rows]
            for line in lines:
                typer.echo(json.dumps(line, ensure_ascii=False, sort_keys=True))
            return
        console.print(f"[bold]{escape(state.summary())}[/]", highlight=False)
        last_chat = state.last_user_turn
        console.print(
            f"[dim]last chat turn {f'{last_chat:%Y-%m-%d %H:%M} UTC' if last_chat else 'never'}"
            f" · mastered {', '.join(state.mastered) or 'nothing yet'}[/]",
            highlight=False,
        )
        if not rows:
            what = "narratives" if narrative else "diary entries"
            console.print(f"no {what} yet; they are written after the idle phases run.")
            return
        table = Table(title="diary (newest first)", show_lines=True)
        table.add_column("when (UTC)", no_wrap=True)
        table.add_column("phase", no_wrap=True)
        table.add_column("entry")
        for row in rows:
            colour = "cyan" if row.kind == "entry" else "magenta"
            phase = f"[{colour}]{escape(row.phase)}[/]"
            table.add_row(f"{row.timestamp:%Y-%m-%d %H:%M}", phase, escape(row.text))
        console.print(table)
