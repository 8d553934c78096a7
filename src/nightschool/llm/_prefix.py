"""KV-cache prefix reuse for the embedded model, kept reproducible.

Calls that share a prompt prefix (the attempts of one challenge, the renderings
of a verification, the steps of a chat turn) need not decode it again:
llama-cpp-python keeps the longest common prefix of the cached and the new
prompt's tokens. Two of its choices change replies, though, and are avoided here:

- When the new prompt is the cached one (a retry), it decodes the last token
  alone. A one-token decode takes another kernel path whose logits differ in
  the last bits, and greedy replies diverge (measured: the same prompt twice
  gave 102 then 92 tokens). Here at least `PREFIX_BACKOFF` tokens of every
  prompt are decoded, in one batch.
- The previous reply's tokens stay in the cache, decoded one at a time; a new
  prompt that quotes the reply would read them from there. Here the kept
  prefix ends where the previous prompt ended.
- It keeps the common prefix to the token, so the rest is decoded in a batch
  that starts anywhere; llama.cpp's matrix kernels tile a batch's rows from
  its first one, and a token decoded at another offset within its tile rounds
  differently (measured on the 1.5B at 2 threads: a 445-token prefix kept,
  then 241 new tokens: the last logits differed by up to 0.47; 6 dream cycles:
  the attempts of 5 differed). Here the kept prefix is cut to a multiple of
  `PREFIX_ALIGN`, so every batch starts where a fresh decode's tiles start:
  the same logits bit for bit (the same test, 416 tokens kept).

`bench/bench_throughput.py` checks that replies with reuse equal replies
without it, token for token, on the same calls.
"""

from __future__ import annotations

import ctypes
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

PREFIX_BACKOFF = 8
"""Prompt tokens decoded even when the cache holds them (see the module docstring)."""

PREFIX_ALIGN = 32
"""The kept prefix is a multiple of this many tokens (see the module docstring): llama.cpp's
KV-cache padding without flash attention; 8 was measured exact as well, 32 leaves margin
for wider tiles, and costs 16 re-read tokens per call on average."""


def shared_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    """Length of the longest common prefix of two token sequences."""
    shared = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        shared += 1
    return shared


def kept_prefix(cached: Sequence[int], prompt_end: int, prompt: Sequence[int]) -> int:
    """Tokens of `prompt` to take from the cache.

    Args:
        cached: the tokens in the KV cache (the previous prompt, then its reply).
        prompt_end: where the previous prompt ended in `cached` (0: keep nothing).
        prompt: the new prompt's tokens.

    Returns:
        The common prefix, cut at `prompt_end` and at `len(prompt) - PREFIX_BACKOFF`,
        then down to a multiple of `PREFIX_ALIGN`; at least 0.
    """
    limit = min(prompt_end, len(prompt) - PREFIX_BACKOFF)
    keep = max(0, min(shared_prefix(cached[:limit], prompt), limit))
    return keep - keep % PREFIX_ALIGN


PREFIX_STATES_BYTES = 256 << 20
"""Most bytes of saved KV states `PrefixStates` holds (least recently used dropped first):
a 600-token prompt of the 1.5B default is 17 MB (28,672 bytes per token: 28 layers, K and V,
256 f16 values each)."""

PREFIX_STATES = 8
"""Most KV states `PrefixStates` holds: a dream cycle alternates between about four prefixes
(the solver's prompt, each verification arm's, the extractor's)."""

RECENT_PROMPTS = 32
"""Earlier prompts a call's re-read tokens are counted against (`PromptHistory`)."""


@dataclass
class SavedPrefix:
    """One sequence's KV cells, copied out of llama.cpp (`llama_state_seq_get_data`)."""

    tokens: tuple[int, ...]
    data: bytes


class PrefixStates:
    """The KV states of earlier prompts, to restore the one sharing most with a new prompt.

    One KV cache holds one prompt; a dream cycle alternates the solver's,
    each verification arm's and the extractor's prompts, and a chat turn after
    background practice finds the cache holding practice. Before the cache
    is overwritten its prompt's cells are saved here (bounded by
    `PREFIX_STATES` and `PREFIX_STATES_BYTES`, least recently used dropped
    first; a state whose tokens begin another's is dropped as covered). A
    restored state puts the same cells at the same positions as a fresh
    decode did, so the logits after it are the fresh decode's bit for bit
    (`tests/llm/test_llm_prefix_threads.py`).
    """

    def __init__(self, limit: int = PREFIX_STATES, max_bytes: int = PREFIX_STATES_BYTES) -> None:
        self.limit = limit
        self.max_bytes = max_bytes
        self._saved: list[SavedPrefix] = []  # least recently used first

    def __len__(self) -> int:
        return len(self._saved)

    @property
    def nbytes(self) -> int:
        """Bytes held."""
        return sum(len(s.data) for s in self._saved)

    def add(self, state: SavedPrefix) -> None:
        """Hold `state` (most recently used); drop what it covers and what exceeds the bounds."""
        if len(state.data) > self.max_bytes or not state.tokens:
            return
        n = len(state.tokens)
        self._saved = [
            s
            for s in self._saved
            if not (len(s.tokens) <= n and state.tokens[: len(s.tokens)] == s.tokens)
        ]
        self._saved.append(state)
        while len(self._saved) > self.limit or self.nbytes > self.max_bytes:
            self._saved.pop(0)

    def best(self, prompt: Sequence[int]) -> tuple[SavedPrefix | None, int]:
        """The held state keeping most of `prompt` (`kept_prefix`), and how much.

        Only a lookup: the caller marks the state `used` when it restores it (a
        state the live cache beats stays as old as it was).
        """
        best: SavedPrefix | None = None
        keep = 0
        for state in self._saved:
            kept = kept_prefix(state.tokens, len(state.tokens), prompt)
            if kept > keep:
                best, keep = state, kept
        return best, keep

    def used(self, state: SavedPrefix) -> None:
        """Mark a held state most recently used (a no-op for one not held)."""
        if state in self._saved:
            self._saved.remove(state)
            self._saved.append(state)


class PromptHistory:
    """The last `RECENT_PROMPTS` prompts, to count the tokens a call reads again.

    A prompt token is re-read when it is decoded although an earlier prompt
    had the same tokens up to and including it (a shared prefix: the system
    prompt and task of a repair, a verification arm's playbook). What a
    prompt adds after its longest shared prefix is read for the first time.
    """

    def __init__(self, size: int = RECENT_PROMPTS) -> None:
        self._prompts: deque[tuple[int, ...]] = deque(maxlen=size)

    def reread(self, prompt: Sequence[int], cached: int) -> int:
        """Tokens of `prompt` decoded again (`cached` came from the KV cache); remembers it."""
        shared = max((shared_prefix(p, prompt) for p in self._prompts), default=0)
        self._prompts.append(tuple(prompt))
        return max(0, shared - cached)


def prefix_keeping_llama(llama_cpp: Any) -> type:
    """A `llama_cpp.Llama` subclass whose `generate` keeps the prefix by `kept_prefix`.

    Built on first load (llama_cpp is imported lazily). The instance's
    `keep_prefix` (bool) turns reuse on: the prefix comes from the cache as
    it is, or from a saved state (`PrefixStates`) when one keeps more.
    `reused` holds the tokens the latest prompt took from the cache, `reread`
    the tokens it decoded although an earlier prompt shared them
    (`PromptHistory`), `restored` whether a saved state was loaded for it;
    `forget()` clears the cache (saved states stay: they are whole).
    """

    class PrefixKeepingLlama(llama_cpp.Llama):  # type: ignore[misc]
        keep_prefix = True
        reused = 0
        reread = 0
        restored = False
        _prompt_end = 0

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            # a recurrent (or hybrid) model's state is its last position's, not cells per token
            cells = not (
                getattr(self, "_is_recurrent", False) or getattr(self, "_is_hybrid", False)
            )
            self.states = PrefixStates(limit=PREFIX_STATES if cells else 0)
            self.history = PromptHistory()

        def forget(self) -> None:
            """Clear the KV cache: the next prompt is decoded whole (or from a saved state)."""
            self.reset()
            self._prompt_end = 0

        def generate(self, tokens: Sequence[int], *args: Any, **kwargs: Any) -> Any:
            prompt = list(tokens)
            keep = 0
            self.restored = False
            if self.keep_prefix:
                keep = kept_prefix(self._input_ids, self._prompt_end, prompt)
                state, kept = self.states.best(prompt)
                if self.states.limit and self._prompt_end - keep >= PREFIX_ALIGN:  # about to go
                    self._save()
                if state is not None and kept > keep:
                    self.restored = self._restore(state)
                    keep = kept if self.restored else 0  # refused: the cache is empty
                    if self.restored:
                        self.states.used(state)
            # llama-cpp-python keeps min(n_tokens, common prefix); n_tokens = 0 resets.
            self.n_tokens = keep
            self.reused = keep
            self.reread = self.history.reread(prompt, keep)
            self._prompt_end = len(prompt)
            return super().generate(prompt, *args, **kwargs)

        def _save(self) -> None:
            """Copy the cached prompt's cells (not its reply's) into `states`."""
            end = min(self._prompt_end, self.n_tokens)
            if end < PREFIX_ALIGN:
                return
            self._ctx.kv_cache_seq_rm(0, end, -1)
            self.n_tokens = end
            ctx = self._ctx.ctx
            size = llama_cpp.llama_state_seq_get_size(ctx, 0)
            buffer = (ctypes.c_uint8 * size)()
            written = llama_cpp.llama_state_seq_get_data(ctx, buffer, size, 0)
            if 0 < written <= size:
                tokens = tuple(int(t) for t in self.input_ids[:end])
                self.states.add(SavedPrefix(tokens, ctypes.string_at(buffer, written)))

        def _restore(self, state: SavedPrefix) -> bool:
            """Replace the cache with `state`'s cells; False (cache empty) if llama.cpp refuses."""
            memory = llama_cpp.llama_get_memory(self._ctx.ctx)
            llama_cpp.llama_memory_clear(memory, False)
            self.n_tokens = 0
            self._prompt_end = 0
            n = len(state.tokens)
            data = (ctypes.c_uint8 * len(state.data)).from_buffer_copy(state.data)
            loaded = llama_cpp.llama_state_seq_set_data(self._ctx.ctx, data, len(state.data), 0)
            # read, and cells from position 0 to n - 1: a state of no cells reads as loaded
            span = (
                llama_cpp.llama_memory_seq_pos_min(memory, 0),
                llama_cpp.llama_memory_seq_pos_max(memory, 0),
            )
            if not loaded or span != (0, n - 1):
                llama_cpp.llama_memory_clear(memory, False)
                return False
            self.input_ids[:n] = state.tokens
            self.n_tokens = n
            self._prompt_end = n
            return True

    return PrefixKeepingLlama


@dataclass
class DecodeUsage:
    """Running totals over an embedded model's calls (what prefix reuse and threads saved).

    Attributes:
        calls: completed calls.
        tokens_in: prompt tokens, all of them.
        tokens_cached: of those, taken from the KV cache (not decoded).
        tokens_reread: of those decoded, the ones an earlier prompt shared (`PromptHistory`).
        restores: calls whose prefix came from a saved state (`PrefixStates`).
        tokens_out: generated tokens.
        seconds: wall-clock seconds inside `complete`.
        threads: calls per thread count chosen.
    """

    calls: int = 0
    tokens_in: int = 0
    tokens_cached: int = 0
    tokens_reread: int = 0
    restores: int = 0
    tokens_out: int = 0
    seconds: float = 0.0
    threads: dict[int, int] = field(default_factory=dict)

    def add(
        self,
        tokens_in: int,
        tokens_cached: int,
        tokens_out: int,
        seconds: float,
        threads: int,
        *,
        tokens_reread: int = 0,
        restored: bool = False,
    ) -> None:
        """Count one completed call."""
        self.calls += 1
        self.tokens_in += tokens_in
        self.tokens_cached += tokens_cached
        self.tokens_reread += tokens_reread
        self.restores += restored
        self.tokens_out += tokens_out
        self.seconds += seconds
        self.threads[threads] = self.threads.get(threads, 0) + 1

    @property
    def tokens_decoded(self) -> int:
        """Prompt tokens decoded (read again), `tokens_in - tokens_cached`."""
        return self.tokens_in - self.tokens_cached
