"""`nightschool trajectories ...`: inspect and export recorded trajectories."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TextIO

import typer

from nightschool import __version__
from nightschool.cli._common import (
    err,
    errors_to_exit_codes,
    open_store,
    parse_since,
    settings_from,
)
from nightschool.errors import UserError
from nightschool.trajectory import Outcome

if TYPE_CHECKING:
    from nightschool.store import Store
    from nightschool.trajectory import Trajectory

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


FORMATS = ("jsonl", "openai-chat", "preference", "hf")
"""`--format` values; all but `jsonl` are fine-tuning exports (`nightschool.exports`)."""


def _check_query(
    format_: str, outcome: str | None, task_kind: str | None, cluster: str | None
) -> Outcome | None:
    """Validate the export flags; return the `--outcome` as an `Outcome`.

    Raises:
        UserError: an unknown format, outcome, task kind or cluster, or a
            measurement task kind asked of a fine-tuning format.
    """
    # function-local: CLI start-up time (exports load numpy, ~340 ms)
    from nightschool.challenges import CLUSTERS
    from nightschool.exports import MEASUREMENT_KINDS, TASK_KINDS

    if format_ not in FORMATS:
        raise UserError(f"unknown format {format_!r}; choose one of {', '.join(FORMATS)}")
    if task_kind is not None and task_kind not in TASK_KINDS:
        raise UserError(f"unknown task kind {task_kind!r}; choose one of {', '.join(TASK_KINDS)}")
    if format_ != "jsonl" and task_kind in MEASUREMENT_KINDS:
        raise UserError(
            f"{task_kind} trajectories are measurements and never go into a fine-tuning export",
            hint="--format jsonl exports every record as stored",
        )
    if cluster is not None and cluster not in CLUSTERS:
        raise UserError(f"unknown cluster {cluster!r}; choose one of {', '.join(CLUSTERS)}")
    if outcome is None:
        return None
    try:
        return Outcome(outcome)
    except ValueError:
        choices = ", ".join(o.value for o in Outcome)
        raise UserError(f"unknown outcome {outcome!r}; choose one of {choices}") from None


def _export(
    store: Store,
    format_: str,
    selected: Iterable[Trajectory],
    output: Path | None,
    selection: dict[str, str],
) -> str:
    """Write `selected` in `format_`; return the one-line summary.

    `selection` names the filters (shown in the hf dataset card).
    """
    # function-local: CLI start-up time (exports load numpy, ~340 ms)
    from nightschool.exports import (
        MEASUREMENT_KINDS,
        Exclusions,
        Tally,
        openai_chat_records,
        pairwise_pass_fail,
        write_hf_dataset,
    )

    tally = Tally(unit="trajectories")
    destination = str(output) if output else ""
    if format_ == "jsonl":
        tally.written = write_jsonl((t.model_dump(mode="json") for t in selected), output)
        return tally.summary(destination)
    exclusions = Exclusions.from_trajectories(
        t for kind in sorted(MEASUREMENT_KINDS) for t in store.iter_trajectories(task_kind=kind)
    )
    if format_ == "openai-chat":
        write_jsonl(openai_chat_records(selected, exclusions=exclusions, tally=tally), output)
    elif format_ == "preference":
        write_jsonl(pairwise_pass_fail(selected, exclusions=exclusions, tally=tally), output)
    else:
        assert output is not None  # checked by the caller
        write_hf_dataset(
            selected, output, exclusions=exclusions, tally=tally, version=__version__,
            selection=selection,
        )  # fmt: skip
    return tally.summary(destination)


@trajectories_app.command("export")
def export_trajectories(
    format_: Annotated[
        str,
        typer.Option(
            "--format",
            help="jsonl: every record as stored (eval and verification included); "
            "openai-chat: OpenAI chat fine-tuning JSONL from passing trajectories; "
            "preference: (rejected, chosen) pairs for DPO trainers (prompt/chosen/rejected); "
            "hf: a Hugging Face datasets directory (Parquet + dataset card; needs -o). "
            "The fine-tuning formats never include eval, verification or held-out items.",
        ),
    ] = "jsonl",
    since: Annotated[
        str | None, typer.Option(help="Only trajectories at or after this date (YYYY-MM-DD).")
    ] = None,
    cluster: Annotated[str | None, typer.Option(help="Only this cluster.")] = None,
    outcome: Annotated[
        str | None,
        typer.Option(help="Only this effective outcome (passed|failed|unknown)."),
    ] = None,
    task_kind: Annotated[
        str | None,
        typer.Option(help="Only this task kind (selfplay|chat|reflection|eval|verification)."),
    ] = None,
    output: Annotated[
        Path | None,
        typer.Option(
            "--output", "-o", help="Write here instead of stdout (for hf: a new directory)."
        ),
    ] = None,
) -> None:
    """Export trajectories (corrections applied) as records or fine-tuning data.

    A one-line summary (written, skipped and why) goes to stderr.
    """
    with errors_to_exit_codes():
        wanted = _check_query(format_, outcome, task_kind, cluster)
        if format_ == "hf" and output is None:
            raise UserError("--format hf writes a directory: give its path with --output/-o")
        if output is not None and not output.parent.is_dir():
            raise UserError(f"the directory of --output {output} does not exist")
        moment = parse_since(since)
        store = open_store(settings_from(), must_exist=True)
        try:
            selected = store.iter_trajectories(
                since=moment, task_kind=task_kind, outcome=wanted, cluster=cluster
            )
            asked = {"since": since, "cluster": cluster, "outcome": outcome, "task": task_kind}
            selection = {name: value for name, value in asked.items() if value is not None}
            summary = _export(store, format_, selected, output, selection)
        finally:
            store.close()
        err.print(summary, highlight=False, soft_wrap=True)
