"""Two sequences decoded as one batch against one after the other: llama.cpp's ceiling.

A verification's first two renderings are always both solved (one rendering
that is no candidate-only win never ends a k = 6 comparison), so their first
arms could be decoded together. This bench measures what that could save at
most, through llama.cpp's low-level calls (no chat template, no stop strings,
no Python beyond the loop): two prompts (the solver's system prompt and two
fresh renderings' tasks), then `--tokens` generated tokens each, sampled at
temperature 0.2 with the sampler chain llama-cpp-python builds (top-k 40,
top-p 0.95, min-p 0.05, temperature, distribution), in two ways:

- **sequential**: sequence A's prompt and tokens, then B's (one sequence in the
  KV cache at a time, as `EmbeddedModel.complete` decodes);
- **batched**: both prompts in one batch, then one decode per step carrying
  both sequences' next tokens (a context with two sequences, unified KV cache).

Both generate the same number of tokens (end-of-generation ignored), so the
ratio is the ceiling of the saving; real replies differ in length, and after
the shorter one ends the longer decodes alone. Measured on this project's
2-core AMD EPYC (the build for this CPU, 2 threads, 1.5B, idle; 248- and
256-token prompts, 150 tokens each): 0.99-1.02x in 6 of 7 repeats, 1.15x once
(`bench/results/throughput/batched-decode-qwen2.5-coder-1.5b.json`); a first
prototype on other 250-token prompts gave 1.07-1.09x. So on 2 cores a step
carrying two sequences (their sampling over the 151,936-token vocabulary
included) takes about as long as two steps of one.

Usage: `python bench/bench_batched_decode.py [--model qwen2.5-coder-1.5b]
[--tokens 150] [--repeats 2] [--out F]`. Measure on an idle machine.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path
from typing import Any

TEMPLATE = "python_general.config_merge"
"""The rendered tasks (seeds 500,000,001 and 500,000,002, verification's range)."""


def _context(model: str) -> Any:
    """A `llama_cpp.Llama` whose context holds two sequences in a unified KV cache."""
    import llama_cpp

    from nightschool.config import Settings
    from nightschool.llm.catalog import lookup_model, resolve_model_file

    path = resolve_model_file(lookup_model(model), Settings().models_dir())
    defaults = llama_cpp.llama_cpp.llama_context_default_params

    def two_sequences() -> Any:
        params = defaults()
        params.n_seq_max = 2
        params.kv_unified = True
        return params

    llama_cpp.llama_cpp.llama_context_default_params = two_sequences
    try:
        return llama_cpp.Llama(
            model_path=str(path), n_ctx=4096, n_threads=2, n_threads_batch=2, verbose=False
        )
    finally:
        llama_cpp.llama_cpp.llama_context_default_params = defaults


def measure(model: str, tokens: int, repeats: int) -> dict[str, Any]:
    """Seconds for two prompts + `tokens` tokens each, sequential and batched, per repeat."""
    import llama_cpp

    from nightschool.challenges import render
    from nightschool.solver.core import SYSTEM_PROMPT

    llama = _context(model)
    ctx = llama._ctx.ctx
    memory = llama_cpp.llama_get_memory(ctx)
    batch = llama_cpp.llama_batch_init(512, 0, 2)
    prompts = [
        llama.tokenize(f"{SYSTEM_PROMPT}\n\n{render(TEMPLATE, 'starter', seed).prompt}".encode())
        for seed in (500_000_001, 500_000_002)
    ]
    if sum(map(len, prompts)) > 512:
        raise SystemExit("the two prompts do not fit one 512-token batch")

    def add(token: int, pos: int, seq: int, logits: bool) -> None:
        n = batch.n_tokens
        batch.token[n], batch.pos[n], batch.n_seq_id[n] = token, pos, 1
        batch.seq_id[n][0], batch.logits[n] = seq, logits
        batch.n_tokens = n + 1

    def sampler(seed: int) -> Any:
        chain = llama_cpp.llama_sampler_chain_init(llama_cpp.llama_sampler_chain_default_params())
        for link in (
            llama_cpp.llama_sampler_init_top_k(40),
            llama_cpp.llama_sampler_init_top_p(0.95, 1),
            llama_cpp.llama_sampler_init_min_p(0.05, 1),
            llama_cpp.llama_sampler_init_temp(0.2),
            llama_cpp.llama_sampler_init_dist(seed),
        ):
            llama_cpp.llama_sampler_chain_add(chain, link)
        return chain

    def decode(seqs: list[int]) -> None:
        """Prompts of `seqs` in one batch, then `tokens` steps carrying each sequence's token."""
        llama_cpp.llama_memory_clear(memory, True)
        batch.n_tokens = 0
        last: dict[int, int] = {}
        for seq in seqs:
            for pos, token in enumerate(prompts[seq]):
                end = pos == len(prompts[seq]) - 1
                if end:
                    last[seq] = batch.n_tokens
                add(token, pos, seq, end)
        if llama_cpp.llama_decode(ctx, batch) != 0:
            raise SystemExit("llama_decode failed")
        chains = {seq: sampler(seq + 1) for seq in seqs}
        pos = {seq: len(prompts[seq]) for seq in seqs}
        for _ in range(tokens):
            chosen = {s: llama_cpp.llama_sampler_sample(chains[s], ctx, last[s]) for s in seqs}
            batch.n_tokens = 0
            for seq, token in chosen.items():
                last[seq] = batch.n_tokens
                add(token, pos[seq], seq, True)
                pos[seq] += 1
            if llama_cpp.llama_decode(ctx, batch) != 0:
                raise SystemExit("llama_decode failed")
        for chain in chains.values():
            llama_cpp.llama_sampler_free(chain)

    decode([0])  # warm-up: the first decode allocates buffers
    runs = []
    for _ in range(repeats):
        start = time.perf_counter()
        decode([0])
        decode([1])
        sequential = time.perf_counter() - start
        start = time.perf_counter()
        decode([0, 1])
        runs.append({"sequential_s": sequential, "batched_s": time.perf_counter() - start})
    llama_cpp.llama_batch_free(batch)
    llama.close()
    return {"prompt_tokens": [len(p) for p in prompts], "tokens_each": tokens, "runs": runs}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="qwen2.5-coder-1.5b")
    parser.add_argument("--tokens", type=int, default=150, help="generated tokens per sequence")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    report = {"model": args.model, "load_start": os.getloadavg()[0]}
    report |= measure(args.model, args.tokens, args.repeats)
    print(f"{args.model}: prompts {report['prompt_tokens']} tokens, {args.tokens} generated "
          f"each, 2 threads; load average {os.getloadavg()[0]:.2f} at the end")  # fmt: skip
    print(f"{'sequential s':>13} {'batched s':>10} {'batched / sequential':>21}")
    for run in report["runs"]:
        print(f"{run['sequential_s']:>13.2f} {run['batched_s']:>10.2f} "
              f"{run['sequential_s'] / run['batched_s']:>20.2f}x")  # fmt: skip
    if args.out:
        args.out.write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
