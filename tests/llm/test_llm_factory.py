from __future__ import annotations

import socket
from pathlib import Path

import pytest

from nightschool.config import DEFAULT_EMBEDDED_MODEL, EMBEDDED_MODEL, Settings
from nightschool.errors import ModelUnavailableError, UserError
from nightschool.llm import (
    EmbeddedModel,
    OpenAICompatibleModel,
    ScriptedModel,
    check_model,
    make_model,
)


def test_default_settings_select_the_default_embedded_model(tmp_path: Path) -> None:
    settings = Settings(model=EMBEDDED_MODEL, base_url=None, home=tmp_path)
    model = make_model(settings)
    assert isinstance(model, EmbeddedModel)
    assert model.name == DEFAULT_EMBEDDED_MODEL == "qwen2.5-coder-1.5b"
    assert model.config.models_dir == tmp_path / "models" == settings.models_dir()
    assert not (tmp_path / "models").exists()  # assembled on the first load, not here


def test_a_catalog_name_selects_that_model() -> None:
    model = make_model(Settings(model="smollm2-135m"))
    assert isinstance(model, EmbeddedModel) and model.name == "smollm2-135m"
    assert isinstance(make_model(Settings(model="qwen2.5-coder-0.5b")), EmbeddedModel)


def test_threads_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    assert make_model(Settings(model="smollm2-135m")).config.n_threads is None  # the default rule
    monkeypatch.setenv("NIGHTSCHOOL_THREADS", "2")
    model = make_model(Settings(model="smollm2-135m"))
    assert isinstance(model, EmbeddedModel) and model.config.n_threads == 2
    monkeypatch.setenv("NIGHTSCHOOL_THREADS", "0")
    with pytest.raises(ValueError, match="threads"):
        Settings()


def test_the_suite_runs_on_the_small_model() -> None:
    # tests/conftest.py sets NIGHTSCHOOL_MODEL=smollm2-135m for every test.
    model = make_model(Settings())
    assert isinstance(model, EmbeddedModel) and model.name == "smollm2-135m"


def test_model_path_selects_that_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    gguf = tmp_path / "My-Model.Q8_0.gguf"
    gguf.write_bytes(b"GGUF")
    monkeypatch.setenv("NIGHTSCHOOL_MODEL_PATH", str(gguf))
    model = make_model(Settings())
    assert isinstance(model, EmbeddedModel)
    assert model.entry is None and model.config.model_path == gguf
    assert model.name == "My-Model.Q8_0"


def test_missing_model_path_is_a_user_error(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="no such file") as info:
        make_model(Settings(model_path=tmp_path / "nope.gguf"))
    assert info.value.exit_code == 2


def test_model_path_with_a_base_url_is_a_user_error(tmp_path: Path) -> None:
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF")
    with pytest.raises(UserError, match="cannot be combined with --base-url"):
        make_model(Settings(model_path=gguf, base_url="http://127.0.0.1:8080/v1"))


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
