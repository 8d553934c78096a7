"""Build the `ChatModel` the settings ask for, and preflight it."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from pydantic import ValidationError

from nightschool.config import Settings
from nightschool.errors import UserError
from nightschool.llm._assemble import Progress
from nightschool.llm._protocol import ChatModel
from nightschool.llm.catalog import lookup_model
from nightschool.llm.embedded import EmbeddedConfig, EmbeddedModel
from nightschool.llm.openai_compat import OpenAICompatibleConfig, OpenAICompatibleModel


@runtime_checkable
class Checkable(Protocol):
    """A model with a cheap preflight that raises when the model cannot serve."""

    def check(self) -> None:
        """Raise if the model cannot answer; return None otherwise."""
        ...


def make_model(settings: Settings, *, on_progress: Progress | None = None) -> ChatModel:
    """Return the model selected by `settings.model`, `settings.model_path` and `settings.base_url`.

    Selection:
        - `base_url` set: `OpenAICompatibleModel` sending `settings.model` as the
          model name, with `settings.model_api_key` and `settings.request_timeout_s`.
        - `base_url` unset and `model_path` set: `EmbeddedModel` on that GGUF file.
        - `base_url` unset: `EmbeddedModel` on the catalog model `settings.model`
          (`embedded`, the default, is `qwen2.5-coder-1.5b`), assembled on first use
          into `settings.models_dir()`.

    Nothing is loaded or contacted here (a `model_path` is only checked to
    exist); call `check_model` for a preflight.

    Args:
        settings: the model settings.
        on_progress: passed to `EmbeddedModel` (a note when a split model is assembled).

    Raises:
        UserError: a model name that is not in the catalog without `--base-url`,
            a `model_path` that is not a file or comes with `--base-url`, or a
            malformed base URL.
    """
    if settings.base_url is None:
        if settings.model_path is not None:
            path = settings.model_path.expanduser()
            if not path.is_file():
                raise UserError(
                    f"--model-path {path}: no such file",
                    hint="give the path of a local .gguf file (or unset NIGHTSCHOOL_MODEL_PATH)",
                )
            config = EmbeddedConfig(
                model_path=path, n_threads=settings.threads, reuse_prefix=settings.reuse_prefix
            )
            return EmbeddedModel(config, on_progress=on_progress)
        entry = lookup_model(settings.model)
        config = EmbeddedConfig(
            model=entry.name,
            models_dir=settings.models_dir(),
            n_threads=settings.threads,
            reuse_prefix=settings.reuse_prefix,
        )
        return EmbeddedModel(config, on_progress=on_progress)
    if settings.model_path is not None:
        raise UserError(
            "--model-path loads a GGUF file in-process; it cannot be combined with --base-url",
            hint="drop one of them (or unset NIGHTSCHOOL_MODEL_PATH / NIGHTSCHOOL_BASE_URL)",
        )
    try:
        server = OpenAICompatibleConfig(
            base_url=settings.base_url,
            api_key=settings.model_api_key,
            model=settings.model,
            timeout_s=settings.request_timeout_s,
        )
    except ValidationError as exc:
        problems = "; ".join(str(error["msg"]) for error in exc.errors())
        raise UserError(f"invalid model server settings: {problems}") from exc
    return OpenAICompatibleModel(server)


def check_model(model: ChatModel) -> None:
    """Run the model's preflight `check()` when it has one; otherwise do nothing.

    Raises:
        ModelUnavailableError: a server model cannot be reached (CLI exit code 3).
        ModelResponseError: the server rejected the preflight (bad key, wrong URL).
        UserError: the embedded model cannot be loaded (missing package).
    """
    if isinstance(model, Checkable):
        model.check()
