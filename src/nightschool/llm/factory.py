"""Build the `ChatModel` the settings ask for, and preflight it."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from pydantic import ValidationError

from nightschool.config import EMBEDDED_MODEL, Settings
from nightschool.errors import UserError
from nightschool.llm._protocol import ChatModel
from nightschool.llm.embedded import EmbeddedModel
from nightschool.llm.openai_compat import OpenAICompatibleConfig, OpenAICompatibleModel


@runtime_checkable
class Checkable(Protocol):
    """A model with a cheap preflight that raises when the model cannot serve."""

    def check(self) -> None:
        """Raise if the model cannot answer; return None otherwise."""
        ...


def make_model(settings: Settings) -> ChatModel:
    """Return the model selected by `settings.model` and `settings.base_url`.

    Selection:
        - `base_url` set: `OpenAICompatibleModel` sending `settings.model` as the
          model name, with `settings.model_api_key` and `settings.request_timeout_s`.
        - `base_url` unset and `model == "embedded"` (the default): `EmbeddedModel`.
        - `base_url` unset and any other model name: `UserError`.

    Nothing is loaded or contacted here; call `check_model` for a preflight.

    Raises:
        UserError: a server model name without `--base-url`, or a malformed base URL.
    """
    if settings.base_url is None:
        if settings.model != EMBEDDED_MODEL:
            raise UserError(
                f"model {settings.model!r} is not the embedded model; "
                "pass --base-url for a server model",
                hint="e.g. --base-url http://127.0.0.1:8080/v1 --model NAME, "
                f"or --model {EMBEDDED_MODEL}",
            )
        return EmbeddedModel()
    try:
        config = OpenAICompatibleConfig(
            base_url=settings.base_url,
            api_key=settings.model_api_key,
            model=settings.model,
            timeout_s=settings.request_timeout_s,
        )
    except ValidationError as exc:
        problems = "; ".join(str(error["msg"]) for error in exc.errors())
        raise UserError(f"invalid model server settings: {problems}") from exc
    return OpenAICompatibleModel(config)


def check_model(model: ChatModel) -> None:
    """Run the model's preflight `check()` when it has one; otherwise do nothing.

    Raises:
        ModelUnavailableError: a server model cannot be reached (CLI exit code 3).
        ModelResponseError: the server rejected the preflight (bad key, wrong URL).
        UserError: the embedded model cannot be loaded (missing package).
    """
    if isinstance(model, Checkable):
        model.check()
