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


def prefix_keeping_llama(llama_cpp: Any) -> type:
    """A `llama_cpp.Llama` subclass whose `generate` keeps the prefix by `kept_prefix`.

    Built on first load (llama_cpp is imported lazily). The instance's
    `keep_prefix` (bool) turns reuse on; `reused` holds the tokens the latest
    prompt took from the cache; `forget()` clears the cache.
    """

    class PrefixKeepingLlama(llama_cpp.Llama):  # type: ignore[misc]
        keep_prefix = True
        reused = 0
        _prompt_end = 0

        def forget(self) -> None:
            """Clear the KV cache: the next prompt is decoded whole."""
            self.reset()
            self._prompt_end = 0

        def generate(self, tokens: Sequence[int], *args: Any, **kwargs: Any) -> Any:
            prompt = list(tokens)
            keep = 0
            if self.keep_prefix:
                keep = kept_prefix(self._input_ids, self._prompt_end, prompt)
            # llama-cpp-python keeps min(n_tokens, common prefix); n_tokens = 0 resets.
            self.n_tokens = keep
            self.reused = keep
            self._prompt_end = len(prompt)
            return super().generate(prompt, *args, **kwargs)

    return PrefixKeepingLlama


@dataclass
class DecodeUsage:
    """Running totals over an embedded model's calls (what prefix reuse and threads saved).

    Attributes:
        calls: completed calls.
        tokens_in: prompt tokens, all of them.
        tokens_cached: of those, taken from the KV cache (not decoded).
        tokens_out: generated tokens.
        seconds: wall-clock seconds inside `complete`.
        threads: calls per thread count chosen.
    """

    calls: int = 0
    tokens_in: int = 0
    tokens_cached: int = 0
    tokens_out: int = 0
    seconds: float = 0.0
    threads: dict[int, int] = field(default_factory=dict)

    def add(
        self, tokens_in: int, tokens_cached: int, tokens_out: int, seconds: float, threads: int
    ) -> None:
        """Count one completed call."""
        self.calls += 1
        self.tokens_in += tokens_in
        self.tokens_cached += tokens_cached
        self.tokens_out += tokens_out
        self.seconds += seconds
        self.threads[threads] = self.threads.get(threads, 0) + 1

    @property
    def tokens_decoded(self) -> int:
        """Prompt tokens decoded (read again), `tokens_in - tokens_cached`."""
        return self.tokens_in - self.tokens_cached
