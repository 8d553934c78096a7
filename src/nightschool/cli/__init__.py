"""The `nightschool` command line: a thin layer over the library.

Parses flags, builds the collaborators, calls the library, and turns domain
errors into a clear message and an exit code (`nightschool.errors.EXIT_CODES`).
Each command group lives in its own module; this one assembles the app.
Commands import the library inside their bodies (`# function-local: CLI
start-up time`, with the package's measured cost): `nightschool --help` loads
only config, errors, privacy and trajectory of it; each other package takes
~10 ms to ~1.7 s to import.
"""

from __future__ import annotations

import typer

from nightschool.cli._curve import learning_curve
from nightschool.cli._dashboard import dashboard
from nightschool.cli._diary import diary
from nightschool.cli._doctor import doctor
from nightschool.cli._dream import dream, status
from nightschool.cli._eval import eval_app
from nightschool.cli._evolve import evolve
from nightschool.cli._idle import watch
from nightschool.cli._learn import learn_app
from nightschool.cli._lessons import lessons_app, reflect
from nightschool.cli._models import models
from nightschool.cli._prompts import prompts_app
from nightschool.cli._records import trajectories_app
from nightschool.cli._serve import chat, serve
from nightschool.cli._strategies import strategies_app
from nightschool.cli._stream import stream
from nightschool.privacy import disable_telemetry

app = typer.Typer(
    name="nightschool",
    help="Self-improvement for local LLM agents: practise, record, learn — no weight updates.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@app.callback()
def _start_up() -> None:
    """Before any command: telemetry opt-outs (`privacy.TELEMETRY_OPT_OUTS`)."""
    disable_telemetry()


app.command()(dream)
app.command()(status)
app.command()(reflect)
app.command()(serve)
app.command()(dashboard)
app.command()(watch)
app.command()(diary)
app.command()(chat)
app.command()(evolve)
app.command()(models)
app.command()(doctor)
app.add_typer(trajectories_app, name="trajectories")
app.add_typer(lessons_app, name="lessons")
app.add_typer(strategies_app, name="strategies")
app.add_typer(prompts_app, name="prompts")
app.add_typer(learn_app, name="learn")
eval_app.command("learning-curve")(learning_curve)
eval_app.command("stream")(stream)
app.add_typer(eval_app, name="eval")


def main() -> None:
    """Console-script entry point."""
    app()


__all__ = ["app", "main"]
