"""Shared pieces of the command line: consoles, options, error mapping, builders."""

from __future__ import annotations

import functools
import inspect
import signal
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from nightschool.config import Settings
from nightschool.errors import EXIT_CODES, NightschoolError, UserError

if TYPE_CHECKING:
    from nightschool.llm import ChatModel
    from nightschool.sandbox import Sandbox
    from nightschool.store import Store

err = Console(stderr=True)
"""Progress, warnings and errors go to stderr; results go to stdout."""


def progress_bar(*, eta: bool = False) -> Progress:
    """The long-job display on stderr (`dream`, `eval run`, `eval stream`).

    Spinner, description, bar, done/total, elapsed, and with `eta` the time
    remaining; it disappears when the job ends (transient).
    """
    columns: list[ProgressColumn] = [
        SpinnerColumn(),
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
    ]
    if eta:
        columns += [TextColumn("eta"), TimeRemainingColumn()]
    return Progress(*columns, console=err, transient=True)


ModelOpt = Annotated[
    str | None,
    typer.Option(
        "--model",
        help="An embedded model run in-process by llama.cpp (`nightschool models`; default "
        "`embedded` = qwen2.5-coder-1.5b, `smollm2-135m` is the fast one), or the model name "
        "on the server given by --base-url.",
        envvar="NIGHTSCHOOL_MODEL",
        show_default=False,
    ),
]
ModelPathOpt = Annotated[
    Path | None,
    typer.Option(
        "--model-path",
        help="Load this local GGUF file in-process instead of a catalog model "
        "(chat template from its metadata).",
        envvar="NIGHTSCHOOL_MODEL_PATH",
        show_default=False,
        dir_okay=False,
    ),
]
BaseUrlOpt = Annotated[
    str | None,
    typer.Option(
        "--base-url",
        help="OpenAI-compatible server, e.g. http://127.0.0.1:8080/v1 (llama.cpp, vLLM, Ollama).",
        envvar="NIGHTSCHOOL_BASE_URL",
        show_default=False,
    ),
]
UnsandboxedCodeOpt = Annotated[
    bool,
    typer.Option("--unsandboxed", help="Run generated code WITHOUT bubblewrap isolation (unsafe)."),
]
"""`--unsandboxed` of the commands that run model-written code (`dream`, `watch`)."""

ApiKeyOpt = Annotated[
    str | None,
    typer.Option(
        "--model-api-key",
        help="Bearer token for the model server (or NIGHTSCHOOL_MODEL_API_KEY).",
        envvar="NIGHTSCHOOL_MODEL_API_KEY",
        show_default=False,
    ),
]

R = TypeVar("R")


@dataclass(frozen=True)
class ModelChoice:
    """The model options of one command line, as given (`None`: not given).

    `with_model_options` fills it from `--model`, `--model-path`, `--base-url`
    and `--model-api-key` (each also read from its `NIGHTSCHOOL_*` variable);
    what is not given is left to `Settings` (its environment and defaults).
    """

    model: str | None = None
    """`--model`: a catalog model, or the model name on the server of `base_url`."""
    model_path: Path | None = None
    """`--model-path`: a local GGUF file loaded in-process."""
    base_url: str | None = None
    """`--base-url`: an OpenAI-compatible server."""
    model_api_key: str | None = None
    """`--model-api-key`: the bearer token for that server."""

    @property
    def given(self) -> bool:
        """Whether any of the four options was given (on the command line or its variable)."""
        return any(value is not None for value in vars(self).values())

    def settings(self, **more: Any) -> Settings:
        """Settings from the environment with these options and `more` on top (`None`s skipped).

        Raises:
            pydantic.ValidationError: a value `Settings` does not accept.
        """
        return settings_from(
            model=self.model,
            model_path=self.model_path,
            base_url=self.base_url,
            model_api_key=self.model_api_key,
            **more,
        )


NO_MODEL_CHOICE = ModelChoice()
"""Nothing given: the default of a command's `ModelChoice` parameter (see `with_model_options`)."""

_MODEL_OPTIONS: dict[str, Any] = {
    "model": ModelOpt,
    "model_path": ModelPathOpt,
    "base_url": BaseUrlOpt,
    "model_api_key": ApiKeyOpt,
}
"""The four options, by the parameter name Typer passes each under, in `--help` order."""


def with_model_options(command: Callable[..., R]) -> Callable[..., R]:
    """Give a command the four model options, passed to it as one `ModelChoice`.

    The command declares one parameter annotated `ModelChoice` (default
    `NO_MODEL_CHOICE`); the returned command's signature (what Typer reads)
    has `--model`, `--model-path`, `--base-url` and `--model-api-key` in its
    place, so they keep that place in `--help`. A call's four values are
    gathered into the `ModelChoice` the command receives.

    Raises:
        TypeError: `command` has no parameter annotated `ModelChoice`, or more
            than one, or one of the option names is already taken (at import).
    """
    signature = inspect.signature(command, eval_str=True)
    slots = [p.name for p in signature.parameters.values() if p.annotation is ModelChoice]
    if len(slots) != 1:
        raise TypeError(f"{command.__qualname__} needs one parameter annotated ModelChoice")
    slot = slots[0]
    taken = set(signature.parameters) & set(_MODEL_OPTIONS)
    if taken:
        raise TypeError(f"{command.__qualname__} already has {', '.join(sorted(taken))}")
    parameters: list[inspect.Parameter] = []
    for parameter in signature.parameters.values():
        if parameter.name != slot:
            parameters.append(parameter)
            continue
        parameters += [
            inspect.Parameter(name, parameter.kind, default=None, annotation=option)
            for name, option in _MODEL_OPTIONS.items()
        ]
    outer = signature.replace(parameters=parameters)

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> R:
        given = outer.bind(*args, **kwargs).arguments
        choice = ModelChoice(**{name: given.pop(name, None) for name in _MODEL_OPTIONS})
        return command(**given, **{slot: choice})

    wrapper.__signature__ = outer  # type: ignore[attr-defined]
    wrapper.__annotations__ = {
        **{p.name: p.annotation for p in outer.parameters.values()},
        "return": outer.return_annotation,
    }
    return wrapper


def preflight(settings: Settings, *, unsandboxed: bool, runs: str) -> tuple[Sandbox, ChatModel]:
    """Build and check the sandbox and the model before anything is written.

    Args:
        settings: model settings.
        unsandboxed: run without bubblewrap (warns on stderr).
        runs: what the sandbox runs, for the warning (e.g. "generated code").

    Returns:
        (sandbox, model), both checked.

    Raises:
        UserError: bad model settings (unknown model, missing --model-path file,
            missing model packages); exit 2.
        SandboxUnavailableError, ModelUnavailableError: exit 3.
    """
    # function-local: CLI start-up time (llm loads httpx, ~60 modules, ~100 ms)
    from nightschool.llm import check_model, make_model
    from nightschool.sandbox import Sandbox, SandboxConfig

    if unsandboxed:
        err.print(f"[bold yellow]warning:[/] running {runs} WITHOUT a sandbox")
    sandbox = Sandbox(SandboxConfig(unsandboxed=unsandboxed))
    model = make_model(settings, on_progress=progress_note)  # misuse first: loads nothing
    with err.status("checking the sandbox and the model ..."):
        sandbox.check()
        check_model(model)
    return sandbox, model


def progress_note(line: str) -> None:
    """Print a one-line progress note on stderr (e.g. a model being assembled)."""
    err.print(f"[dim]·[/] {escape(line)}", highlight=False, soft_wrap=True)


def settings_from(**overrides: Any) -> Settings:
    """Settings from the environment, with the flags that were given on top."""
    return Settings(**{k: v for k, v in overrides.items() if v is not None})


@contextmanager
def errors_to_exit_codes() -> Iterator[None]:
    """Map domain errors and Ctrl-C to a message on stderr and an exit code."""
    try:
        yield
    except NightschoolError as exc:
        err.print(f"[bold red]error:[/] {escape(exc.message)}", highlight=False)
        if exc.hint:
            err.print(f"[dim]hint:[/] {escape(exc.hint)}", highlight=False)
        raise typer.Exit(exc.exit_code) from None
    except KeyboardInterrupt:
        err.print(
            "[yellow]interrupted[/]: the cycle in progress was not recorded; "
            "everything before it is safe."
        )
        raise typer.Exit(EXIT_CODES["interrupted"]) from None


def _terminate(_signum: int, _frame: object) -> None:
    raise KeyboardInterrupt


@contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """Inside, SIGTERM (a service manager, `kill`) stops the work as Ctrl-C does.

    A long measurement that keeps its finished rows on Ctrl-C keeps them on
    SIGTERM too; the previous handler is restored on the way out.
    """
    previous = signal.signal(signal.SIGTERM, _terminate)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def open_store(settings: Settings, *, must_exist: bool = False) -> Store:
    """Open the database of `settings`: `NIGHTSCHOOL_DATABASE_URL`'s Postgres, else the SQLite file.

    Raises:
        UserError: `must_exist` and there is no database yet.
        StoreError: the database cannot be opened or reached.
    """
    # function-local: CLI start-up time (the store compiles redact's patterns, ~70 ms)
    from nightschool.store import Store

    if settings.database_url:
        return Store.open_url(settings.database_url, home=settings.home_dir())
    path = settings.database_path()
    if must_exist and not path.exists():
        raise UserError(f"no database at {path}", hint="run `nightschool dream` first")
    return Store.open(path)


def parse_since(value: str | None) -> datetime | None:
    """Parse a `--since` value (YYYY-MM-DD or ISO timestamp; naive means UTC)."""
    if value is None:
        return None
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise UserError(
            f"--since {value!r} is not a date; use YYYY-MM-DD or an ISO timestamp"
        ) from None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)
