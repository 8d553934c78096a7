"""Chat models: the `ChatModel` contract and its backends.

- `OpenAICompatibleModel`: any OpenAI-compatible HTTP server (`--base-url URL --model NAME`).
- `EmbeddedModel`: a catalog model in-process via llama-cpp-python (`--model NAME`;
  the default is Qwen2.5-Coder-1.5B-Instruct, `nightschool models` lists them), or
  any local GGUF file (`--model-path FILE.gguf`).
- `ScriptedModel`: a deterministic test double (`tool_reply` scripts a native tool call).

Native tool calling (`ToolCallingModel.supports_tools`, `complete(..., tools=...)`,
`Completion.tool_calls`) follows the OpenAI wire format; see `_protocol`.

Importing this package loads no model, assembles no file and opens no connection.
"""

from nightschool.llm._protocol import (
    ChatModel,
    Completion,
    Message,
    NativeToolCall,
    ToolCallingModel,
    ToolSpec,
    WireToolCall,
    plain_messages,
    supports_native_tools,
    tool_names,
)
from nightschool.llm.catalog import (
    CATALOG,
    CatalogEntry,
    ModelStatus,
    default_model,
    lookup_model,
    model_status,
)
from nightschool.llm.embedded import EMBEDDED_MODEL_NAME, EmbeddedConfig, EmbeddedModel
from nightschool.llm.factory import check_model, make_model
from nightschool.llm.openai_compat import OpenAICompatibleConfig, OpenAICompatibleModel
from nightschool.llm.scripted import ScriptedCall, ScriptedModel, tool_reply

__all__ = [
    "CATALOG",
    "EMBEDDED_MODEL_NAME",
    "CatalogEntry",
    "ChatModel",
    "Completion",
    "EmbeddedConfig",
    "EmbeddedModel",
    "Message",
    "ModelStatus",
    "NativeToolCall",
    "OpenAICompatibleConfig",
    "OpenAICompatibleModel",
    "ScriptedCall",
    "ScriptedModel",
    "ToolCallingModel",
    "ToolSpec",
    "WireToolCall",
    "check_model",
    "default_model",
    "lookup_model",
    "make_model",
    "model_status",
    "plain_messages",
    "supports_native_tools",
    "tool_names",
    "tool_reply",
]
