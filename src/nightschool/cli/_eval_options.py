"""The options of `nightschool eval run`, `freeze` and `compare` (split from `_eval.py`)."""

from __future__ import annotations

from typing import Annotated

import typer

SuiteOpt = Annotated[
    str,
    typer.Option(
        "--suite",
        "-s",
        help="humaneval | regression | post_learning | default (regression then post_learning).",
    ),
]
RunnerOpt = Annotated[
    str,
    typer.Option(
        "--runner",
        help="inprocess (the default: the real agent in this process), http (a running "
        "server) or stub (echoes each prompt back, no model or agent: exercises the "
        "pipeline in CI, and its tasks fail).",
    ),
]
RUNNERS = ("inprocess", "http", "stub")
ServerOpt = Annotated[
    str | None,
    typer.Option(
        "--server",
        help="nightschool server for --runner http, e.g. http://127.0.0.1:8000 (loopback only).",
        show_default=False,
    ),
]
ServerKeyOpt = Annotated[
    str | None,
    typer.Option(
        "--api-key",
        help="Token of the nightschool server (NIGHTSCHOOL_API_KEY), --runner http.",
        envvar="NIGHTSCHOOL_API_KEY",
        show_default=False,
    ),
]
LimitOpt = Annotated[
    int | None, typer.Option("--limit", "-n", min=1, help="Only the first N tasks.")
]
TimeoutOpt = Annotated[
    float, typer.Option("--timeout", min=0.001, help="Per-task limit for the agent, seconds.")
]
SeedOpt = Annotated[int, typer.Option("--seed", help="Suite seed (picks regression tasks).")]
PlaybookOpt = Annotated[
    bool,
    typer.Option(
        "--playbook/--no-playbook",
        help="Show the skill playbook's lessons to the agent (in-process runner).",
    ),
]
TemperatureOpt = Annotated[
    float, typer.Option("--temperature", min=0.0, help="Agent sampling temperature.")
]
RouteOpt = Annotated[
    str,
    typer.Option(
        "--route",
        help="How each task is answered: full (the agent loop), direct (one model call, "
        "no tools) or auto (the home's saved chat router; it may have been trained on "
        "this suite). Two runs, one direct and one full, are what `learn chat-router` "
        "learns from.",
    ),
]
ROUTES = ("full", "direct", "auto")
