"""`nightschool reflect` and `nightschool lessons ...`: the skill playbook."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from nightschool.cli._common import (
    NO_MODEL_CHOICE,
    ModelChoice,
    err,
    errors_to_exit_codes,
    open_store,
    settings_from,
    with_model_options,
)
from nightschool.cli._records import write_jsonl
from nightschool.errors import UserError

lessons_app = typer.Typer(
    help="The skill playbook: lessons learned from failures.", no_args_is_help=True
)


@with_model_options
def reflect(
    limit: Annotated[
        int, typer.Option("--limit", "-n", min=1, help="Reflect on at most this many.")
    ] = 10,
    model_choice: ModelChoice = NO_MODEL_CHOICE,
) -> None:
    """Reflect on failed trajectories not yet reflected on, and learn lessons from them."""
    with errors_to_exit_codes():
        # function-local: CLI start-up time (lessons.sink loads numpy, ~300 ms)
        from nightschool.lessons.reflection import Reflector
        from nightschool.lessons.sink import PlaybookSink
        from nightschool.llm import check_model, make_model
        from nightschool.playbook import SkillMemory

        settings = model_choice.settings()
        store = open_store(settings, must_exist=True)
        try:
            with err.status("checking the model and loading the playbook ..."):
                chat_model = make_model(settings)
                check_model(chat_model)
                memory = SkillMemory(store)
            reflector = Reflector(store, chat_model, sink=PlaybookSink(memory))
            pending = len(reflector.pending())
            err.print(f"{pending} failed trajectory(ies) waiting for reflection; doing {limit}")

            def on_outcome(outcome: Any) -> None:
                source = outcome.source_trajectory_id[:12]
                if outcome.status == "reflected" and outcome.reflection is not None:
                    learned = outcome.sink_result
                    verdict = (
                        f"lesson {learned.status} {learned.lesson_id or ''} ({learned.reason})"
                        if learned is not None
                        else "no lesson"
                    )
                    err.print(
                        f"[green]reflected[/] {source}: {outcome.reflection.diagnosis[:100]}\n"
                        f"    → {verdict}",
                        highlight=False,
                    )
                else:
                    err.print(f"[yellow]{outcome.status}[/] {source}: {outcome.detail[:140]}")

            with err.status("reflecting ..."):
                report = reflector.run(limit, on_outcome=on_outcome)
            Console().print(
                f"reflected {report.reflected}, unparseable {report.unparseable}, "
                f"skipped {report.skipped}, errors {report.errors}"
                + (" (stopped early after repeated errors)" if report.stopped_early else "")
            )
            if report.stopped_early:
                raise typer.Exit(3)
        finally:
            store.close()


@lessons_app.command("list")
def list_lessons(
    verified: Annotated[
        bool | None,
        typer.Option("--verified/--unverified", help="Only verified (or unverified) lessons."),
    ] = None,
    limit: Annotated[int | None, typer.Option("--limit", "-n", help="At most this many.")] = None,
    kind: Annotated[
        str, typer.Option("--kind", help="lesson | skill | all (skills: code from passing cycles).")
    ] = "lesson",
) -> None:
    """List lessons (or skills) with provenance and retrieval counters."""
    with errors_to_exit_codes():
        # function-local: CLI start-up time (the playbook loads numpy, ~300 ms)
        from nightschool.playbook import Kind, SkillMemory

        if kind not in ("lesson", "skill", "all"):
            raise UserError(f"--kind must be lesson, skill or all, not {kind!r}")
        store = open_store(settings_from(), must_exist=True)
        try:
            chosen: Kind | None = "skill" if kind == "skill" else "lesson"
            lessons = SkillMemory(store).list(
                limit=limit, verified=verified, kind=None if kind == "all" else chosen
            )
        finally:
            store.close()
        if not lessons:
            Console().print("the playbook is empty" if kind != "skill" else "no skills yet")
            return
        table = Table(title=f"skill playbook ({len(lessons)} entries, kind {kind})")
        for column in (
            "id",
            "kind",
            "verified",
            "conf",
            "domains",
            "shown",
            "pass",
            "fail",
            "help/harm",
            "source",
            "trigger",
        ):
            table.add_column(column, overflow="fold")
        for lesson in lessons:
            table.add_row(
                lesson.id,
                lesson.kind,
                "yes" if lesson.verified else "no",
                f"{lesson.confidence:.2f}",
                ",".join(lesson.domains),
                str(lesson.times_shown),
                str(lesson.times_followed_by_pass),
                str(lesson.times_followed_by_failure),
                f"{lesson.times_helpful}/{lesson.times_harmful}",
                f"{lesson.source}\n{lesson.source_trajectory_id[:12]}",
                lesson.trigger[:80],
            )
        Console().print(table)


@lessons_app.command("show")
def show_lesson(lesson_id: Annotated[str, typer.Argument(help="Lesson id.")]) -> None:
    """Show one lesson in full, with where it came from and how it has done."""
    with errors_to_exit_codes():
        # function-local: CLI start-up time (the playbook loads numpy, ~300 ms)
        from nightschool.playbook import SkillMemory

        store = open_store(settings_from(), must_exist=True)
        try:
            lesson = SkillMemory(store).get(lesson_id)
            if lesson is None:
                raise UserError(f"no lesson {lesson_id!r}", hint="see `nightschool lessons list`")
            source = (
                store.get_trajectory(lesson.source_trajectory_id)
                if lesson.source_trajectory_id
                else None
            )
        finally:
            store.close()
        console = Console()
        console.print(
            f"[bold]{lesson.id}[/]  {'verified' if lesson.verified else 'unverified'}"
            f" · confidence {lesson.confidence:.2f} · {', '.join(lesson.domains)}"
        )
        if lesson.kind == "skill":
            console.print(f"[bold]task[/]             {lesson.trigger}", highlight=False)
            console.print(
                f"[bold]from[/]             {lesson.template or '-'} · {lesson.tier or '-'}",
                highlight=False,
            )
            console.print(f"[bold]code[/]\n{lesson.code_example}", highlight=False)
        else:
            console.print(f"[bold]trigger[/]          {lesson.trigger}", highlight=False)
            console.print(f"[bold]anti-pattern[/]     {lesson.anti_pattern}", highlight=False)
            console.print(f"[bold]correct pattern[/]  {lesson.correct_pattern}", highlight=False)
            if lesson.code_example:
                console.print(f"[bold]code example[/]\n{lesson.code_example}", highlight=False)
        console.print(
            f"[bold]counters[/]         shown {lesson.times_shown}, helpful "
            f"{lesson.times_helpful}, harmful {lesson.times_harmful}"
            f"{' (shown to no one)' if lesson.harmful else ''}, then passed "
            f"{lesson.times_followed_by_pass}, then failed "
            f"{lesson.times_followed_by_failure}, reinforced {lesson.reinforcements}"
        )
        console.print(
            f"[bold]source[/]           {lesson.source}, trajectory "
            f"{lesson.source_trajectory_id or '(none)'}",
            highlight=False,
        )
        if source is not None:
            console.print(
                f"                 {source.task_kind} · {source.cluster or '-'} · "
                f"{source.outcome.value}: {source.user_request[:120]!r}",
                highlight=False,
            )
        verification = lesson.extra.get("verification")
        if verification:
            console.print(f"[bold]verification[/]     {verification}", highlight=False)


@lessons_app.command("verify-chat")
@with_model_options
def verify_chat(
    limit: Annotated[
        int, typer.Option("--limit", "-n", min=1, help="Verify at most this many lessons.")
    ] = 5,
    k: Annotated[
        int,
        typer.Option(
            "--k", min=6, max=20, help="Pairs per lesson (2 model calls each; the gate needs 6)."
        ),
    ] = 6,
    model_choice: ModelChoice = NO_MODEL_CHOICE,
) -> None:
    """Verify lessons from chat turns whose request states examples, on that request.

    Each lesson's request is answered k times with the lesson and k times without,
    each reply's code run against the request's examples in the sandbox; the
    pairs go through the promotion gate. A verified lesson is shown to later chat
    turns; the verdict either way is stored (`lessons show`). Exit codes: 0 done,
    2 bad options, 3 model or sandbox unavailable, 4 unusable database.
    """
    with errors_to_exit_codes():
        # function-local: CLI start-up time (the agent and the playbook load numpy, ~300 ms)
        from nightschool.agent import chat_lesson_candidates, verify_chat_lesson
        from nightschool.llm import check_model, make_model
        from nightschool.playbook import SkillMemory
        from nightschool.sandbox import Sandbox

        settings = model_choice.settings()
        store = open_store(settings, must_exist=True)
        try:
            memory = SkillMemory(store)
            candidates = chat_lesson_candidates(memory, store)
            err.print(
                f"{len(candidates)} chat lesson(s) with a request that states examples wait "
                f"for verification; doing {min(limit, len(candidates))}, {k} pairs each"
            )
            if not candidates:
                return
            with err.status("checking the model ..."):
                chat_model = make_model(settings)
                check_model(chat_model)
            sandbox = Sandbox()
            for lesson, request, examples in candidates[:limit]:
                with err.status(f"{lesson.id}: {k} pairs ..."):
                    done = verify_chat_lesson(
                        chat_model, sandbox, memory, lesson, request, examples, k=k
                    )
                p = "-" if done.p_value is None else f"{done.p_value:.3g}"
                err.print(
                    f"{lesson.id} {'verified' if done.verified else 'not verified'}: solved "
                    f"{sum(done.with_lesson)}/{k} with it, {sum(done.without)}/{k} without "
                    f"(exact p = {p}; {len(examples)} example(s))"
                )
        finally:
            store.close()


@lessons_app.command("retract")
def retract_lessons(
    trajectory: Annotated[
        str, typer.Option("--trajectory", "-t", help="Source trajectory id whose lessons go.")
    ],
) -> None:
    """Remove every lesson learned from a trajectory (archived first; nothing is lost)."""
    with errors_to_exit_codes():
        # function-local: CLI start-up time (the playbook loads numpy, ~300 ms)
        from nightschool.playbook import SkillMemory

        if not trajectory.strip():
            raise UserError("--trajectory needs a non-empty trajectory id")
        store = open_store(settings_from(), must_exist=True)
        try:
            count = SkillMemory(store).retract_from_trajectory(
                trajectory, reason="retracted from the command line"
            )
        finally:
            store.close()
        Console().print(
            f"retracted {count} lesson(s) learned from trajectory {trajectory}"
            + (" (archived in lessons_archive)" if count else "")
        )


@lessons_app.command("export")
def export_lessons(
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write here instead of stdout.")
    ] = None,
) -> None:
    """Write every lesson as one JSON record per line (with format_version)."""
    with errors_to_exit_codes():
        # function-local: CLI start-up time (the playbook loads numpy, ~300 ms)
        from nightschool.playbook import SkillMemory

        store = open_store(settings_from(), must_exist=True)
        try:
            count = write_jsonl(SkillMemory(store).export(), output)
        finally:
            store.close()
        err.print(f"exported {count} lessons" + (f" to {output}" if output else ""))
