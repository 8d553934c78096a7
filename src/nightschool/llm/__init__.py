"""Chat models: the `ChatModel` contract and its backends.

- `OpenAICompatibleModel`: any OpenAI-compatible HTTP server (`--base-url URL --model NAME`).
- `EmbeddedModel`: SmolLM2-135M-Instruct in-process via llama-cpp-python (`--model embedded`,
  the default).
- `ScriptedModel`: a deterministic test double.

Importing this package loads no model and opens no connection.
"""

from nightschool.llm._protocol import ChatModel, Completion, Message
from nightschool.llm.embedded import EMBEDDED_MODEL_NAME, EmbeddedConfig, EmbeddedModel
from nightschool.llm.factory import check_model, make_model
from nightschool.llm.openai_compat import OpenAICompatibleConfig, OpenAICompatibleModel
from nightschool.llm.scripted import ScriptedCall, ScriptedModel

__all__ = [
    "EMBEDDED_MODEL_NAME",
    "ChatModel",
    "Completion",
    "EmbeddedConfig",
    "EmbeddedModel",
    "Message",
    "OpenAICompatibleConfig",
    "OpenAICompatibleModel",
    "ScriptedCall",
    "ScriptedModel",
    "check_model",
    "make_model",
]
