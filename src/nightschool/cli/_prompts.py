"""`nightschool prompts ...`: the prompt registry (list, show, rollback) and GEPA (optimise)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.panel import Panel
from rich.table import Table

from nightschool.cli._common import (
    NO_MODEL_CHOICE,
    ModelChoice,
    UnsandboxedCodeOpt,
    err,
    errors_to_exit_codes,
    open_store,
    preflight,
    progress_bar,
    settings_from,
    with_model_options,
)
from nightschool.errors import EXIT_CODES
from nightschool.privacy import no_external_network

if TYPE_CHECKING:
    from nightschool.prompts.optimise import OptimiseResult
    from nightschool.prompts.registry import PromptEntry

prompts_app = typer.Typer(
    help="Versioned prompts (solver, reflection, planning): the live one of each slot, "
    "its history, rollback, and GEPA optimisation behind the promotion gate.",
    no_args_is_help=True,
)

SlotOpt = Annotated[
    str | None,
    typer.Option("--slot", help="solver, reflection or planning.", show_default=False),
]


def _when(entry: PromptEntry) -> str:
    return entry.timestamp.strftime("%Y-%m-%d %H:%M:%S")


def _first_line(text: str, limit: int = 60) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _verdict_cell(verdict: dict[str, Any] | None) -> str:
    if not verdict:
        return "—"
    low, high = verdict.get("ci_low"), verdict.get("ci_high")
    interval = (
        f" [{low:+.3f}, {high:+.3f}]"
        if isinstance(low, int | float) and isinstance(high, int | float)
        else ""
    )
    p_value = verdict.get("p_value")
    p_text = f", p={p_value:.3g}" if isinstance(p_value, int | float) else ""
    return f"lift {verdict.get('lift', 0.0):+.3f}{interval} (n={verdict.get('n')}{p_text})"


def _what(entry: PromptEntry) -> str:
    if entry.kind == "rollback":
        return f"→ prompt {entry.restores}"
    if entry.kind == "baseline":
        return "→ built-in prompt"
    return _first_line(entry.text)


@prompts_app.command("list")
def list_prompts(
    slot: SlotOpt = None,
    limit: Annotated[
        int | None, typer.Option("--limit", "-n", min=1, help="Only the latest N entries.")
    ] = None,
) -> None:
    """List the registry's history, oldest first; ★ marks each slot's live prompt."""
    with errors_to_exit_codes():
        # function-local: CLI start-up time (prompts, ~110 modules, ~270 ms)
        from nightschool.prompts import registry

        if slot is not None:
            registry.check_slot(slot)
        settings = settings_from()
        if not settings.database_exists():
            Console().print("no prompt registered yet: every slot uses its built-in prompt")
            return
        with open_store(settings) as store:
            entries = registry.history(store, slot, limit=limit)
            slots = registry.SLOTS if slot is None else (registry.check_slot(slot),)
            live = {name: registry.current(store, name) for name in slots}
        console = Console()
        if entries:
            table = Table(title=f"prompts ({len(entries)} entries)")
            for column in ("id", "when (UTC)", "slot", "kind", "prompt", "verdict", "run"):
                table.add_column(column, overflow="fold")
            live_ids = {e.id for e in live.values() if e is not None}
            for entry in entries:
                mark = " ★" if entry.kind == "promotion" and entry.id in live_ids else ""
                table.add_row(
                    str(entry.id),
                    _when(entry),
                    entry.slot,
                    entry.kind,
                    escape(_what(entry)) + mark,
                    escape(_verdict_cell(entry.verdict)),
                    escape((entry.run_id or "—").rsplit("/", 1)[-1]),
                )
            console.print(table)
        else:
            console.print("no prompt registered yet")
        for name, live_entry in live.items():
            now = registry.said(None if live_entry is None else live_entry.id)
            console.print(f"live {name}: {now}", highlight=False)


@prompts_app.command("show")
def show_prompt(
    entry_id: Annotated[
        int | None,
        typer.Argument(help="Registry entry id (default: the slot's live prompt).", min=1),
    ] = None,
    slot: SlotOpt = None,
) -> None:
    """Show one prompt: its text, the promotion gate's verdict and how it was measured."""
    with errors_to_exit_codes():
        # function-local: CLI start-up time (prompts, ~110 modules, ~270 ms)
        from nightschool.prompts import registry

        name = registry.check_slot(slot or "solver")
        console = Console()
        settings = settings_from()
        if entry_id is None and not settings.database_exists():
            console.print(f"live {name} prompt: the built-in one", highlight=False)
            console.print(Panel(escape(registry.default_prompt(name)), title=name))
            return
        with open_store(settings, must_exist=True) as store:
            entry = registry.get(store, entry_id) if entry_id else registry.current(store, name)
            if entry is None:
                console.print(f"live {name} prompt: the built-in one", highlight=False)
                console.print(Panel(escape(registry.default_prompt(name)), title=name))
                return
            restored = registry.get(store, entry.restores) if entry.restores else None
            live = registry.current(store, entry.slot)
        console.print(
            f"[bold]entry {entry.id}[/] · {entry.slot} · {entry.kind} · {_when(entry)} UTC",
            highlight=False,
        )
        if entry.note:
            console.print(f"note: {escape(entry.note)}", highlight=False)
        if entry.kind == "baseline":
            console.print(f"back to the built-in {entry.slot} prompt from here on")
            return
        if restored is not None:
            console.print(f"re-activates prompt {restored.id}; it follows:", highlight=False)
            entry = restored
        state = " (live)" if live is not None and live.id == entry.id else ""
        parent = registry.said(entry.parent)
        console.print(f"[bold]prompt {entry.id}{state}[/], measured against {parent}")
        console.print(f"run: {escape(entry.run_id or '—')}", highlight=False)
        console.print(Panel(escape(entry.text), title=f"{entry.slot} prompt {entry.id}"))
        verdict = entry.verdict or {}
        console.print(f"[bold]verdict[/] {escape(str(verdict.get('summary') or '—'))}")
        if entry.record:
            console.print(escape(json.dumps(entry.record, indent=1)), highlight=False)


@prompts_app.command("rollback")
def rollback_prompt(
    entry_id: Annotated[
        int | None,
        typer.Argument(
            help="Entry to re-activate (default: the prompt live before the current one; "
            "past the first, the built-in prompt).",
            min=1,
        ),
    ] = None,
    slot: SlotOpt = None,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
) -> None:
    """Re-activate an earlier prompt of a slot (a new entry; history is never rewritten).

    The slot is the entry's when an id is given, else --slot (default solver).
    Exit codes: 0 rolled back, 1 declined at the prompt, 2 unknown id or slot
    or nothing to roll back, 4 unusable database.
    """
    with errors_to_exit_codes():
        # function-local: CLI start-up time (prompts, ~110 modules, ~270 ms)
        from nightschool.prompts import registry

        with open_store(settings_from(), must_exist=True) as store:
            if slot is not None:
                name = registry.check_slot(slot)
            elif entry_id is not None:
                name = registry.get(store, entry_id).slot
            else:
                name = "solver"
            now = registry.current(store, name)
            target = registry.rollback_target(store, name, entry_id)
            frm = registry.said(None if now is None else now.id)
            to = registry.said(target)
            if not yes and not typer.confirm(f"roll the {name} prompt back from {frm} to {to}?"):
                err.print("rollback cancelled; nothing changed")
                raise typer.Exit(EXIT_CODES["error"])
            entry = registry.rollback(
                store, name, entry_id, note="rolled back from the command line"
            )
        Console().print(
            f"entry {entry.id}: the {name} slot now uses {registry.said(entry.prompt_id)}",
            highlight=False,
        )


def _print_result(console: Console, result: OptimiseResult) -> None:
    table = Table(title=f"{result.slot} prompt: live vs GEPA's best")
    for column in ("measure", "live prompt", "GEPA's best"):
        table.add_column(column, justify="left" if column == "measure" else "right")
    before, after = result.train_scores
    table.add_row("training tier (GEPA's score)", f"{before:.2f}", f"{after:.2f}")
    if result.pairs:
        for label, set_name in (("held-out a+b", None), ("set a", "a"), ("set b", "b")):
            inc, n = result.pass_rate("incumbent", set_name)
            cand, _ = result.pass_rate("candidate", set_name)
            if n:
                table.add_row(f"{label} pass@1", f"{inc}/{n}", f"{cand}/{n}")
    console.print(table)
    console.print(
        f"{result.metric_calls} GEPA solves, {result.reflections} reflection(s), "
        f"{result.candidates} candidate(s) kept, {result.duration_s:.0f}s",
        highlight=False,
    )
    if result.status == "no_candidate":
        console.print("GEPA found no prompt better than the live one: nothing to measure")
        return
    console.print(f"gate: {escape(str((result.verdict or {}).get('summary')))}", highlight=False)
    console.print(Panel(escape(result.candidate), title="GEPA's best prompt"))
    if result.entry is not None:
        console.print(
            f"[bold green]registered[/] as {result.slot} prompt {result.entry.id}: self-play "
            "uses it from the next cycle (`nightschool prompts rollback` undoes it)",
            highlight=False,
        )
    else:
        console.print("not registered: the live prompt stays")


@prompts_app.command("optimise")
@with_model_options
def optimise(
    slot: Annotated[str, typer.Option("--slot", help="The slot to optimise.")] = "solver",
    budget: Annotated[
        int,
        typer.Option("--budget", min=2, help="GEPA metric calls: single-attempt training solves."),
    ] = 40,
    train: Annotated[int, typer.Option("--train", min=1, help="Training tasks.")] = 6,
    holdout: Annotated[
        int, typer.Option("--holdout", min=1, help="Held-out tasks the gate compares on.")
    ] = 12,
    tier: Annotated[str, typer.Option(help="Challenge tier of every task.")] = "starter",
    seed: Annotated[
        int, typer.Option(min=0, help="Seed of the tasks drawn, GEPA and the gate.")
    ] = 0,
    reflection_model: Annotated[
        str | None,
        typer.Option(
            "--reflection-model",
            help="GEPA's reflection model: a catalog name, or a model on the same --base-url "
            "(default: the task model; a stronger one reflects better).",
            show_default=False,
        ),
    ] = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Measure, but register nothing.")
    ] = False,
    model_choice: ModelChoice = NO_MODEL_CHOICE,
    unsandboxed: UnsandboxedCodeOpt = False,
) -> None:
    """Optimise a prompt with GEPA on a private training tier; register it only if the gate says so.

    The candidate and the live prompt then solve the same held-out tasks once
    each; the promotion gate (superiority, exact McNemar) decides. The
    registry is written once, at the very end: Ctrl-C leaves it untouched.
    Only the solver slot has an optimiser (pass@1 in the sandbox).

    Exit codes: 0 done (whatever the verdict), 1 the live prompt changed
    during the run, 2 misuse, 3 model or sandbox fault, 4 unusable database,
    130 interrupted.
    """
    with errors_to_exit_codes():
        # function-local: CLI start-up time (GEPA, numpy and scipy, ~1.3 s)
        from nightschool.llm import check_model, make_model
        from nightschool.prompts import registry
        from nightschool.prompts.optimise import OptimiseConfig, optimise_prompt, write_report

        config = OptimiseConfig(
            slot=registry.check_slot(slot),
            budget=budget,
            train=train,
            holdout=holdout,
            tier=tier,
            seed=seed,
        )
        settings = model_choice.settings()
        config = config.model_copy(
            update={"max_tokens": settings.max_tokens, "temperature": settings.temperature}
        )
        config.check()  # misuse before any model loads
        with no_external_network():
            sandbox, chat_model = preflight(settings, unsandboxed=unsandboxed, runs="solutions")
            reflector = None
            if reflection_model is not None:
                with err.status("checking the reflection model ..."):
                    reflector = make_model(
                        settings.model_copy(update={"model": reflection_model, "model_path": None})
                    )
                    check_model(reflector)
            stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
            directory = settings.home_dir() / "prompts" / stamp
            with open_store(settings) as store:
                progress = progress_bar()
                with progress:
                    task = progress.add_task("starting", total=budget + 2 * holdout)

                    def on_event(message: str) -> None:
                        progress.console.print(f"[dim]·[/] {escape(message)}", highlight=False)

                    def on_rollout(done: int, rollout: Any) -> None:
                        mark = "passed" if rollout.passed else "failed"
                        progress.update(
                            task, completed=done, description=f"{rollout.task_id} {mark}"
                        )

                    try:
                        result = optimise_prompt(
                            store,
                            chat_model,
                            sandbox,
                            config,
                            reflection_model=reflector,
                            run_id=str(directory),
                            on_event=on_event,
                            on_rollout=on_rollout,
                            register=not dry_run,
                        )
                    except KeyboardInterrupt:
                        err.print("[yellow]interrupted[/]: nothing was registered")
                        raise typer.Exit(EXIT_CODES["interrupted"]) from None
        report = write_report(directory, result)
        _print_result(Console(), result)
        err.print(f"report: {report}", highlight=False)
