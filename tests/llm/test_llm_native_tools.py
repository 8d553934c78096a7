"""Native tools on the real default model (Qwen2.5-Coder-0.5B): its template renders them,
and asked to list files it makes a tool call (measured: as a ```json fence, not
`<tool_call>` tags; the backend reads both)."""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from pathlib import Path

import pytest

from nightschool.agent import NATIVE_SYSTEM_PROMPT, TOOL_SCHEMAS, TOOL_SPECS
from nightschool.llm import EmbeddedConfig, EmbeddedModel, Message
from nightschool.llm.catalog import QWEN_CODER_05B, SplitFile
from nightschool.llm.embedded import _template_messages

assert isinstance(QWEN_CODER_05B.source, SplitFile)
MISSING = [
    p.package for p in QWEN_CODER_05B.source.parts if importlib.util.find_spec(p.package) is None
]

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(
        importlib.util.find_spec("llama_cpp") is None, reason="llama_cpp is not importable"
    ),
    pytest.mark.skipif(bool(MISSING), reason=f"not installed: {', '.join(MISSING)}"),
]

SYSTEM = NATIVE_SYSTEM_PROMPT.format(names=", ".join(TOOL_SPECS))


@pytest.fixture(scope="module")
def qwen(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedModel]:
    models = tmp_path_factory.mktemp("models")
    config = EmbeddedConfig(model="qwen2.5-coder-0.5b", n_ctx=2048, models_dir=Path(models))
    with EmbeddedModel(config) as model:
        yield model


def test_qwen_template_renders_tools_and_tool_turns(qwen: EmbeddedModel) -> None:
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter

    assert qwen.supports_tools
    assert qwen._llama is not None
    template = qwen._llama.metadata["tokenizer.chat_template"]
    messages: list[Message] = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": "list the files in my workspace"},
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
        {"role": "tool", "content": "a.txt (3 bytes)", "tool_call_id": "c1"},
    ]
    formatter = Jinja2ChatFormatter(template, eos_token="<|im_end|>", bos_token="")
    prompt = formatter(messages=_template_messages(messages), tools=list(TOOL_SCHEMAS)).prompt
    assert prompt.startswith(f"<|im_start|>system\n{SYSTEM}\n\n# Tools")
    assert '"name": "run_python"' in prompt and "<tool_call>" in prompt
    assert '<tool_call>\n{"name": "list_files", "arguments": {"path": "."}}\n</tool_call>' in prompt
    assert "<tool_response>\na.txt (3 bytes)\n</tool_response>" in prompt


def test_qwen_calls_list_files_natively(qwen: EmbeddedModel) -> None:
    messages: list[Message] = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": "list the files in my workspace"},
    ]
    result = qwen.complete(messages, temperature=0.0, max_tokens=48, tools=TOOL_SCHEMAS)
    assert [call.name for call in result.tool_calls] == ["list_files"], result.text
    assert result.tool_calls[0].arguments_error is None
    assert result.finish_reason == "tool_calls"
