"""`nightschool trajectories ...`: inspect and export recorded trajectories."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any, TextIO

import typer

from nightschool.cli._common import (
    err,
    errors_to_exit_codes,
    open_store,
    parse_since,
    settings_from,
)
from nightschool.errors import UserError

trajectories_app = typer.Typer(
    help="Inspect and export recorded trajectories.", no_args_is_help=True
)


@contextmanager
def output_file(path: Path | None) -> Iterator[TextIO]:
    """Yield a handle that writes to `path` atomically (via `.partial` then rename), or stdout.

    Readers of `path` never see a half-written file; on error the partial file
    is removed.
    """
    if path is None:
        yield sys.stdout
        return
    tmp = path.with_name(path.name + ".partial")
    try:
        with tmp.open("w", encoding="utf-8") as handle:
            yield handle
        tmp.replace(path)
    finally:
        tmp.unlink(missing_ok=True)


def write_jsonl(records: Iterable[dict[str, Any]], path: Path | None) -> int:
    """Write one JSON object per line to `path` (or stdout); return the count."""
    count = 0
    with output_file(path) as handle:
        for record in records:
            handle.write(json.dumps(record, ensure_ascii=False))
            handle.write("\n")
            count += 1
    return count


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
    with errors_to_exit_codes():
        if format_ != "jsonl":
            raise UserError(f"unsupported format {format_!r}; only jsonl is available")
        moment = parse_since(since)
        store = open_store(settings_from(), must_exist=True)
        try:
            count = write_jsonl(
                (t.model_dump(mode="json") for t in store.iter_trajectories(since=moment)),
                output,
            )
        finally:
            store.close()
        err.print(f"exported {count} trajectories" + (f" to {output}" if output else ""))
