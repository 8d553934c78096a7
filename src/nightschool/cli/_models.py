"""`nightschool models`: the embedded models, where their files are, which is the default."""

from __future__ import annotations

import json
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from nightschool.cli._common import errors_to_exit_codes, settings_from

STATE_LABELS = {
    "ready": "[green]ready[/]",
    "installed": "[yellow]installed[/]¹",
    "missing": "[red]not installed[/]",
}
"""How each `ModelStatus.state` reads in the table."""


def models(
    as_json: Annotated[
        bool, typer.Option("--json", help="Print a JSON list instead of a table.")
    ] = False,
) -> None:
    """List the embedded models: size, quantisation, file, installed or not, the default.

    Reads nothing large and assembles nothing. Exit 0.
    """
    with errors_to_exit_codes():
        # function-local: CLI start-up time (llm loads httpx, ~60 modules, ~100 ms)
        from nightschool.llm import CATALOG, model_status

        settings = settings_from()
        statuses = [model_status(entry, settings.models_dir()) for entry in CATALOG]
        if as_json:
            typer.echo(json.dumps([s.model_dump() for s in statuses], indent=2))
            return
        table = Table(title="embedded models (--model NAME)", title_justify="left")
        table.add_column("name", no_wrap=True)
        for column in ("params", "quant", "size", "context", "state"):
            table.add_column(column, no_wrap=True)
        for status in statuses:
            table.add_row(
                status.name + (" [bold]*[/]" if status.default else ""),
                status.parameters,
                status.quantisation,
                f"{status.size_bytes / 1e6:.0f} MB",
                f"{status.n_ctx}",
                STATE_LABELS[status.state],
            )
        console = Console()
        console.print(table)
        for status in statuses:
            line = (
                f"[bold]{status.name}[/]: {escape(status.title)}, GGUF general.name "
                f"{escape(repr(status.metadata_name))}\n  file: {escape(status.path or '-')}"
            )
            if status.hint:
                line += f"\n  [yellow]{escape(status.hint)}[/]"
            console.print(line, highlight=False, soft_wrap=True)
        console.print(
            "[dim]* the default (`--model embedded`); ¹ parts installed, assembled into "
            "the file below on first use[/]",
            highlight=False,
        )
        console.print(
            "[dim]any local GGUF file: --model-path FILE.gguf; a server: --base-url URL "
            "--model NAME[/]",
            highlight=False,
        )
