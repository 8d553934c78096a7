"""The model options written once: `with_model_options` and `ModelChoice` (`cli/_common.py`)."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Annotated, Any

import pytest
import typer
from typer.testing import CliRunner

from nightschool.cli import app
from nightschool.cli._common import NO_MODEL_CHOICE, ModelChoice, with_model_options

FOUR = ("model", "model_path", "base_url", "model_api_key")
ENV = ("NIGHTSCHOOL_MODEL", "NIGHTSCHOOL_MODEL_PATH", "NIGHTSCHOOL_BASE_URL")
"""The variables of `--model`, `--model-path` and `--base-url`, in that order."""


def probe_app(seen: dict[str, Any]) -> typer.Typer:
    """A one-command app whose command records what it was called with in `seen`."""
    probe = typer.Typer()

    @probe.command()
    @with_model_options
    def run(
        before: Annotated[int, typer.Option(help="An option before the model options.")] = 1,
        model_choice: ModelChoice = NO_MODEL_CHOICE,
        after: Annotated[bool, typer.Option("--after", help="One after them.")] = False,
    ) -> None:
        """Record the call."""
        seen.update(before=before, model_choice=model_choice, after=after)

    return probe


@pytest.fixture
def no_model_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (*ENV, "NIGHTSCHOOL_MODEL_API_KEY"):
        monkeypatch.delenv(name, raising=False)


@pytest.mark.usefixtures("no_model_env")
def test_the_four_options_arrive_as_one_choice(tmp_path: Path) -> None:
    seen: dict[str, Any] = {}
    gguf = tmp_path / "m.gguf"
    args = ["--before", "2", "--model", "m", "--model-path", str(gguf), "--after"]
    result = CliRunner().invoke(
        probe_app(seen),
        [*args, "--base-url", "http://127.0.0.1:9/v1"],
        env={"NIGHTSCHOOL_MODEL_API_KEY": "k"},
    )
    assert result.exit_code == 0, result.output
    assert seen == {
        "before": 2,
        "model_choice": ModelChoice("m", gguf, "http://127.0.0.1:9/v1", "k"),
        "after": True,
    }
    assert seen["model_choice"].given


@pytest.mark.usefixtures("no_model_env")
def test_nothing_given_is_the_empty_choice_and_settings_decide() -> None:
    seen: dict[str, Any] = {}
    result = CliRunner().invoke(probe_app(seen), [])
    assert result.exit_code == 0, result.output
    assert seen["model_choice"] == NO_MODEL_CHOICE and not NO_MODEL_CHOICE.given
    assert NO_MODEL_CHOICE.settings().model == "embedded"


@pytest.mark.usefixtures("no_model_env")
def test_settings_take_the_choice_and_more_on_top_skipping_none() -> None:
    settings = ModelChoice(model="m", base_url="http://h/v1").settings(api_key="t", max_tokens=None)
    assert (settings.model, settings.base_url, settings.api_key) == ("m", "http://h/v1", "t")
    assert settings.model_path is None and settings.model_api_key is None


def test_the_options_take_the_place_of_the_choice_parameter() -> None:
    @with_model_options
    def command(
        first: int = 0, model_choice: ModelChoice = NO_MODEL_CHOICE, last: int = 0
    ) -> ModelChoice:
        return model_choice

    assert list(inspect.signature(command).parameters) == ["first", *FOUR, "last"]
    assert command(1, "m", last=2) == ModelChoice(model="m")
    assert command() == NO_MODEL_CHOICE


def test_a_command_without_one_choice_parameter_is_refused_at_import() -> None:
    def none(model: str | None = None) -> None: ...

    def taken(model: str | None = None, model_choice: ModelChoice = NO_MODEL_CHOICE) -> None: ...

    with pytest.raises(TypeError, match="needs one parameter annotated ModelChoice"):
        with_model_options(none)
    with pytest.raises(TypeError, match="already has model"):
        with_model_options(taken)


def test_every_command_with_model_options_has_all_four_in_order() -> None:
    def walk(command: Any, path: str) -> Any:
        yield path, command
        for name, sub in getattr(command, "commands", {}).items():
            yield from walk(sub, f"{path} {name}".strip())

    with_model = {}
    for path, command in walk(typer.main.get_command(app), ""):
        names = [param.name for param in command.params]
        if "model" in names:
            start = names.index("model")
            assert tuple(names[start : start + 4]) == FOUR, path
            with_model[path] = command
    assert set(with_model) == {
        "dream", "reflect", "serve", "watch", "chat", "evolve", "doctor", "prompts optimise",
        "lessons verify-chat", "eval run", "eval freeze", "eval compare", "eval learning-curve",
        "eval stream",
    }  # fmt: skip
    dream = with_model["dream"].params
    start = [param.name for param in dream].index("model")
    assert [param.envvar for param in dream[start : start + 4]] == [
        *ENV,
        "NIGHTSCHOOL_MODEL_API_KEY",
    ]
