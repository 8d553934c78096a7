from __future__ import annotations

import socket

import pytest

from nightschool.config import EMBEDDED_MODEL, Settings
from nightschool.errors import ModelUnavailableError, UserError
from nightschool.llm import (
    EmbeddedModel,
    OpenAICompatibleModel,
    ScriptedModel,
    check_model,
    make_model,
)


def test_default_settings_select_the_embedded_model() -> None:
    model = make_model(Settings(model=EMBEDDED_MODEL, base_url=None))
    assert isinstance(model, EmbeddedModel)


def test_base_url_selects_the_server_model() -> None:
    settings = Settings(
        model="qwen2.5-coder",
        base_url="http://127.0.0.1:8080/v1/",
        model_api_key="sk-1",
        request_timeout_s=30.0,
    )
    model = make_model(settings)
    assert isinstance(model, OpenAICompatibleModel)
    assert model.name == "qwen2.5-coder"
    assert model.config.base_url == "http://127.0.0.1:8080/v1"
    assert model.config.api_key == "sk-1"
    assert model.config.timeout_s == 30.0
    model.close()


def test_server_model_name_without_base_url_is_a_user_error() -> None:
    with pytest.raises(UserError, match="pass --base-url for a server model"):
        make_model(Settings(model="llama3", base_url=None))


def test_malformed_base_url_is_a_user_error() -> None:
    with pytest.raises(UserError, match="base URL"):
        make_model(Settings(model="llama3", base_url="localhost:8080"))


def test_settings_from_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NIGHTSCHOOL_BASE_URL", "http://10.0.0.2:8000/v1")
    monkeypatch.setenv("NIGHTSCHOOL_MODEL", "served")
    model = make_model(Settings())
    assert isinstance(model, OpenAICompatibleModel)
    assert model.chat_url == "http://10.0.0.2:8000/v1/chat/completions"
    model.close()


def test_check_model_calls_check_when_present() -> None:
    check_model(ScriptedModel(["unused"]))

    class NoCheck:
        name = "plain"

    check_model(NoCheck())  # type: ignore[arg-type]


def test_check_model_surfaces_an_unreachable_server() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    model = make_model(Settings(model="m", base_url=f"http://127.0.0.1:{port}/v1"))
    with pytest.raises(ModelUnavailableError) as info:
        check_model(model)
    assert info.value.exit_code != 0
