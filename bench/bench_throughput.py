"""Throughput of the embedded model: the hardware ceiling, ours beside it, dream cycles old vs new.

Four parts, printed side by side in one run (`--parts`, default all three):

- **ceiling**: this machine's memory bandwidth (numpy sums over a 1 GiB array
  on 1 and 2 threads) and llama.cpp's own decode through its low-level calls
  (`Llama.eval`: one `llama_decode` per 512-token batch for the prompt, one
  per token for generation, no sampling, no chat template) at 1 and 2 threads.
  Generation is bandwidth-bound: tokens/s cannot exceed bandwidth / GGUF bytes.
- **ours**: the same model through `EmbeddedModel.complete` (chat template,
  sampler, Python loop), KV reuse off, at 1 and 2 threads and the automatic
  choice: prompt tokens/s (max_tokens=1) and generation tokens/s (the extra
  tokens of a 200-token reply over its extra time); ours / ceiling.
- **spec**: prompt-lookup drafting (`LlamaPromptLookupDecoding`) on and off
  for a first attempt and a repair that quotes the failing program: speed,
  tokens per decode, whether the greedy reply is the same, and memory.
- **dream**: `--cycles` self-play cycles per arm through the real dream loop
  (`open_practice`: solver, bubblewrap sandbox, SQLite in a temporary home,
  the same `--seed`), each arm in its own process:
  *old* is the issue's starting point and *new* the working tree as a user
  gets it (threads chosen per call, `NIGHTSCHOOL_THREADS` unset). With `--old
  settings` (the default) *old* is the working tree at the starting settings
  (`NIGHTSCHOOL_THREADS=1`, no prefix reuse, verification's `control-first`
  order: every rendering's control solved, then its candidate): the same
  template bank, so the arms render the same challenges and the cycles pair.
  `--no-reuse-arm` adds *no-reuse*: *new* with `NIGHTSCHOOL_REUSE_PREFIX=0`,
  and counts its stored trajectories (cycles and verification arms) whose
  code equals one of new's.
  With `--old ref` *old* is the code at `--old-ref` (a git worktree; the last
  commit before per-call threads and prefix reuse); since the bank's seeds draw new tasks (issue
  "Transfer, measured honestly") that code renders other challenges for the
  same seed, so its cycles do not pair with the new arm's. Both arms use the
  settings a user gets by default (`--verify-k 6`, dream's default: a passing
  cycle's skill is verified on fresh renderings). Printed: cycles per hour,
  passes, prompt tokens decoded per cycle, of those the ones *re-read* (an
  earlier prompt of the process shared them up to there: the system prompt
  and task of a repair, a verification arm's playbook; what a prompt adds
  after that is read for the first time, `PromptHistory`), how many calls
  restored a saved KV state (`PrefixStates`), verification's share of the time
  (trajectories of kind `verification`), and how many cycles made the same
  attempts (same code, token for token) in both arms: the reproducibility check
  of prefix reuse (`nightschool.llm._prefix`). The new arm holds verification
  to `--verify-share` of its time (default 0.25, what `nightschool dream` does
  by default; 1 verifies every candidate at once); the old arm has no budget:
  the verification line adds the comparisons that promoted and the candidates
  still waiting at the end.

Usage: `python bench/bench_throughput.py [--model qwen2.5-coder-1.5b] [--cycles 6]
[--seed 7] [--cluster python_general] [--verify-k 6] [--parts ceiling,ours,spec,dream]
[--old settings|ref] [--no-reuse-arm] [--verify-share S] [--out F]`.
Measure on an idle machine (the load average is printed): llama.cpp's worker
threads spin-wait, so another busy process changes every figure, and the
automatic thread choice then takes 1 thread on purpose.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

from _dream_arm import dream_arm  # a sibling module: the script's folder is on sys.path

ROOT = Path(__file__).resolve().parents[1]

USER_SHARE = 0.25
"""The new arm's verification share unless `--verify-share` says otherwise: the
default of `NIGHTSCHOOL_VERIFY_SHARE` (`nightschool.config.Settings`)."""

OLD_REF = "033e78a"
"""The last commit before per-call threads and KV prefix reuse (issue 27)."""

PROMPT_TEXT = (
    "Write a Python module `inventory.py` with a dataclass `Item` (name, quantity, unit price), "
    "a class `Inventory` that stores items by name and has methods add(item), remove(name, "
    "quantity), total_value() and low_stock(threshold) returning the names of items below the "
    "threshold sorted alphabetically. Raise KeyError for unknown names and ValueError for "
    "negative quantities. Include docstrings and type hints."
)


def bandwidth(threads: int, size: int = 1 << 30, repeats: int = 3) -> float:
    """Read bandwidth, bytes/s: the best of `repeats` sums of a `size`-byte array over `threads`."""
    import numpy as np

    array = np.ones(size // 4, dtype=np.float32)
    parts = np.array_split(array, threads)
    best = float("inf")
    for _ in range(repeats):
        workers = [threading.Thread(target=part.sum) for part in parts]
        start = time.perf_counter()
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        best = min(best, time.perf_counter() - start)
    return size / best


def ceiling(model: str) -> dict[str, Any]:
    """llama.cpp's own prompt and generation tokens/s at 1 and 2 threads, and the bandwidth bound."""
    import llama_cpp

    from nightschool.config import Settings
    from nightschool.llm.catalog import lookup_model, resolve_model_file

    path = resolve_model_file(lookup_model(model), Settings().models_dir())
    llama = llama_cpp.Llama(model_path=str(path), n_ctx=2048, verbose=False)
    text = (PROMPT_TEXT + " ") * 8
    prompt = llama.tokenize(text.encode())[:512]
    out: dict[str, Any] = {
        "gguf_bytes": path.stat().st_size,
        "threads": {},
        "system_info": llama_cpp.llama_print_system_info().decode(),  # the build's instruction sets
    }
    for threads in (1, 2):
        llama_cpp.llama_set_n_threads(llama._ctx.ctx, threads, threads)
        llama.reset()
        llama.eval(prompt[:32])  # warm-up: the first decode allocates buffers
        llama.reset()
        start = time.perf_counter()
        llama.eval(prompt)
        pp = len(prompt) / (time.perf_counter() - start)
        llama.reset()
        llama.eval(prompt[:64])
        steps = 96
        start = time.perf_counter()
        for index in range(steps):
            llama.eval([prompt[64 + index]])
        tg = steps / (time.perf_counter() - start)
        gbs = bandwidth(threads)
        out["threads"][threads] = {
            "prompt_tps": pp,
            "gen_tps": tg,
            "bandwidth_gbs": gbs / 1e9,
            "gen_bound_tps": gbs / out["gguf_bytes"],
        }
    llama.close()
    return out


def ours(model: str) -> dict[str, Any]:
    """`EmbeddedModel.complete` tokens/s at 1 and 2 threads and automatic (KV reuse off)."""
    from nightschool.llm import EmbeddedConfig, EmbeddedModel

    messages = [
        {"role": "system", "content": "You are a careful Python programmer. Answer with code."},
        {"role": "user", "content": PROMPT_TEXT},
    ]
    out: dict[str, Any] = {}
    for label, threads in (("1", 1), ("2", 2), ("auto", None)):
        config = EmbeddedConfig(model=model, n_threads=threads, reuse_prefix=False)
        with EmbeddedModel(config) as embedded:
            embedded.complete(messages, temperature=0, max_tokens=8)  # warm-up
            first = embedded.complete(messages, temperature=0, max_tokens=1)
            full = embedded.complete(messages, temperature=0, max_tokens=200)
            chosen = embedded.threads
        extra_s = max(1e-6, full.duration_s - first.duration_s)
        out[label] = {
            "prompt_tps": first.tokens_in / first.duration_s,
            "gen_tps": (full.tokens_out - 1) / extra_s,
            "threads": chosen.threads if chosen else None,
            "reason": chosen.reason if chosen else "",
        }
    return out


FAILING = """from dataclasses import dataclass


@dataclass
class Item:
    name: str
    quantity: int
    unit_price: float


class Inventory:
    def __init__(self) -> None:
        self.items: dict[str, Item] = {}

    def add(self, item: Item) -> None:
        if item.quantity < 0:
            raise ValueError("negative quantity")
        self.items[item.name] = item

    def remove(self, name: str, quantity: int) -> None:
        if quantity < 0:
            raise ValueError("negative quantity")
        self.items[name].quantity -= quantity

    def total_value(self) -> float:
        return sum(i.quantity * i.unit_price for i in self.items.values())

    def low_stock(self, threshold: int) -> list[str]:
        return [i.name for i in self.items.values() if i.quantity < threshold]
"""


def speculative(model: str, threads: int) -> dict[str, Any]:
    """Prompt-lookup drafting (llama-cpp-python's `LlamaPromptLookupDecoding`) on and off.

    Two call kinds the solver makes: a first attempt (the task alone) and a
    repair (`retry_prompt`: the task, the failing program, the checker's
    message). Greedy, 320 tokens at most, KV reuse off, fixed threads. The
    draft needs `logits_all`, so llama-cpp-python keeps n_ctx x vocabulary
    float32 scores; the resident-memory growth is printed beside the speed.
    """
    import resource

    import llama_cpp
    from llama_cpp.llama_speculative import LlamaPromptLookupDecoding

    from nightschool.config import Settings
    from nightschool.llm.catalog import lookup_model, resolve_model_file
    from nightschool.solver import SYSTEM_PROMPT
    from nightschool.solver.attempts import retry_prompt

    entry = lookup_model(model)
    path = resolve_model_file(entry, Settings().models_dir())
    task = PROMPT_TEXT + " Write it to inventory.py."
    calls = {
        "first attempt": task,
        "repair": retry_prompt(
            task,
            "inventory.py",
            failed_code=FAILING,
            checker="KeyError not raised: remove('pear', 1) on an unknown name\n"
            "low_stock(5) returned ['b', 'a'], expected ['a', 'b']",
        ),
    }
    out: dict[str, Any] = {}
    for draft in (False, True):
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        llama = llama_cpp.Llama(
            model_path=str(path),
            n_ctx=entry.n_ctx,
            n_threads=threads,
            n_threads_batch=threads,
            draft_model=LlamaPromptLookupDecoding(num_pred_tokens=10) if draft else None,
            # 0.3.36 sizes its score buffer by this flag, not by the draft's need (a
            # draft without it overflows the buffer past 512 tokens): pass it.
            logits_all=draft,
            verbose=False,
        )
        decodes = 0
        eval_tokens = llama.eval

        def counting(tokens: Any, _eval: Any = eval_tokens) -> None:
            nonlocal decodes
            decodes += 1
            _eval(tokens)

        llama.eval = counting  # type: ignore[method-assign]
        for kind, text in calls.items():
            messages = [
                {"role": "system", "content": SYSTEM_PROMPT},
                {"role": "user", "content": text},
            ]
            llama.reset()
            decodes = 0
            start = time.perf_counter()
            reply = llama.create_chat_completion(messages=messages, temperature=0, max_tokens=320)
            seconds = time.perf_counter() - start
            usage = reply["usage"]
            out.setdefault(kind, {})["draft" if draft else "plain"] = {
                "seconds": seconds,
                "tokens_out": usage["completion_tokens"],
                "tokens_per_decode": usage["completion_tokens"] / max(1, decodes - 1),
                "text": reply["choices"][0]["message"]["content"],
            }
        grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
        out.setdefault("rss_growth_mb", {})["draft" if draft else "plain"] = grown / 1024
        llama.close()
    return out


OLD_SETTINGS = {"NIGHTSCHOOL_THREADS": "1", "NIGHTSCHOOL_REUSE_PREFIX": "0"}
"""The issue's starting settings: one llama.cpp thread, the KV cache forgotten between calls
(and, `run_arm`'s `verify_order`, every verification rendering's control solved first)."""

NO_REUSE_SETTINGS = {"NIGHTSCHOOL_REUSE_PREFIX": "0"}
"""The `no-reuse` arm (`--no-reuse-arm`): the new arm with KV prefix reuse off."""


def import_path(src: Path, first: Path | None = None) -> str:
    """A child's `PYTHONPATH`: `src`, after `first` when given (another llama-cpp-python build)."""
    return str(src) if first is None else f"{first}{os.pathsep}{src}"


def run_arm(
    src: Path,
    args: argparse.Namespace,
    settings: dict[str, str],
    verify_order: str = "adaptive",
    first: Path | None = None,
    verify_share: float | None = None,
) -> dict[str, Any]:
    """Run `dream_arm` in a child process importing `nightschool` from `src`.

    `settings` are the arm's environment variables; the new arm's thread choice
    is never fixed by the caller's own `NIGHTSCHOOL_THREADS`. `first`: a folder
    imported before `src` and the environment (another llama-cpp-python build,
    `bench_build.py`).
    `verify_share`: the arm's `nightschool dream --verify-share` (None: not set).
    """
    env = {k: v for k, v in os.environ.items() if k != "NIGHTSCHOOL_THREADS"}
    env.update(settings, PYTHONPATH=import_path(src, first))
    command = [
        sys.executable, __file__, "--child-arm", "--model", args.model, "--cycles",
        str(args.cycles), "--seed", str(args.seed), "--verify-k", str(args.verify_k),
        "--verify-order", verify_order,
    ]  # fmt: skip
    if verify_share is not None:
        command += ["--verify-share", str(verify_share)]
    command.append(f"--cluster={args.cluster}")  # '' too: the frontier chooses (the child's
    # default is python_general, so leaving the flag out would not pass '' on)
    print(f"arm at {src}{' with ' + str(first) if first else ''} {settings or ''}: "
          f"{args.cycles} cycles", file=sys.stderr, flush=True)  # fmt: skip
    # stderr passes through: the child's progress lines, and its traceback if it fails
    done = subprocess.run(command, env=env, stdout=subprocess.PIPE, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"arm at {src} failed (exit {done.returncode}; its output is above)")
    return json.loads(done.stdout.strip().splitlines()[-1])


@contextlib.contextmanager
def old_tree(ref: str) -> Any:
    """A git worktree of `ref` (removed afterwards); yields its `src` folder."""
    place = Path(tempfile.mkdtemp(prefix="ns-old-"))
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "-f", "--detach", str(place), ref],
                   check=True, capture_output=True)  # fmt: skip
    try:
        yield place / "src"
    finally:
        subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(place)],
                       check=False, capture_output=True)  # fmt: skip


def dream(args: argparse.Namespace) -> dict[str, Any]:
    """Old and new arms on the same seed; the paired figures."""
    if args.old == "settings":
        old = run_arm(ROOT / "src", args, OLD_SETTINGS, verify_order="control-first")
    else:
        with old_tree(args.old_ref) as old_src:
            old = run_arm(old_src, args, {})
    share = USER_SHARE if args.verify_share is None else args.verify_share
    arms = {"old": old, "new": run_arm(ROOT / "src", args, {}, verify_share=share)}
    if args.no_reuse_arm:
        arms["no-reuse"] = run_arm(ROOT / "src", args, NO_REUSE_SETTINGS, verify_share=share)
    same = {
        name: sum(
            a["codes"] == b["codes"] for a, b in zip(old["cycles"], arm["cycles"], strict=True)
        )
        for name, arm in arms.items()
        if name != "old"
    }
    # no-reuse vs new: how many stored trajectories (cycles and verification arms) made the
    # same code (old's verification order differs, so its trajectories are other ones)
    same_all = {}
    if "no-reuse" in arms:
        theirs = arms["no-reuse"]["trajectory_digests"]
        common = Counter(theirs) & Counter(arms["new"]["trajectory_digests"])
        same_all["no-reuse"] = f"{sum(common.values())} of {len(theirs)}"
    return {**arms, "same_attempts": same["new"], "same_attempts_by_arm": same,
            "same_trajectories_by_arm": same_all}  # fmt: skip


def show(report: dict[str, Any]) -> None:
    """Print the parts that ran as tables."""
    print(f"load average {os.getloadavg()[0]:.2f} at the end; model {report['model']}")
    if "ceiling" in report:
        c = report["ceiling"]
        print(f"\nceiling (llama.cpp low-level decode; GGUF {c['gguf_bytes'] / 1e9:.2f} GB)")
        print(f"{'threads':>8} {'prompt t/s':>11} {'gen t/s':>8} {'GB/s':>6} {'gen bound t/s':>14}")
        for threads, row in c["threads"].items():
            print(f"{threads:>8} {row['prompt_tps']:>11.1f} {row['gen_tps']:>8.2f} "
                  f"{row['bandwidth_gbs']:>6.1f} {row['gen_bound_tps']:>14.1f}")  # fmt: skip
    if "ours" in report:
        print("\nours (EmbeddedModel.complete, reuse off) and ours / llama.cpp at the same threads")
        print(f"{'threads':>8} {'prompt t/s':>11} {'gen t/s':>8} {'gen ratio':>10}  chosen")
        for label, row in report["ours"].items():
            ref = report.get("ceiling", {}).get("threads", {}).get(row["threads"])
            ratio = f"{row['gen_tps'] / ref['gen_tps']:.0%}" if ref else "-"
            print(f"{label:>8} {row['prompt_tps']:>11.1f} {row['gen_tps']:>8.2f} {ratio:>10}  "
                  f"{row['reason']}")  # fmt: skip
    if "spec" in report:
        sp = report["spec"]
        print("\nprompt-lookup drafting (greedy, KV reuse off): seconds, tokens, tokens per decode")
        for kind in ("first attempt", "repair"):
            plain, draft = sp[kind]["plain"], sp[kind]["draft"]
            same = "same reply" if plain["text"] == draft["text"] else "DIFFERENT reply"
            print(f"{kind:>14}: plain {plain['seconds']:6.1f} s {plain['tokens_out']:4} tok; "
                  f"draft {draft['seconds']:6.1f} s {draft['tokens_out']:4} tok "
                  f"({draft['tokens_per_decode']:.2f}/decode); "
                  f"{plain['seconds'] / draft['seconds']:.2f}x; {same}")  # fmt: skip
        rss = sp["rss_growth_mb"]
        print(
            f"peak resident memory growth: plain {rss['plain']:.0f} MB, draft {rss['draft']:.0f} MB"
        )
    if "dream" in report:
        d = report["dream"]
        n = len(d["old"]["cycles"])
        print(f"\ndream, {n} cycles per arm, same seed")
        print(f"{'arm':>8} {'cycles/h':>9} {'passed':>7} {'prompt decoded/cycle':>21} "
              f"{'re-read/cycle':>14} {'cached':>7} {'restores':>9} {'gen tokens':>10} "
              f"{'verify %':>9}  threads")  # fmt: skip
        for arm in ("old", "new", "no-reuse", "reuse"):
            if arm not in d:
                continue
            a = d[arm]
            decoded = (a["tokens_in"] - a["tokens_cached"]) / n
            reread = "-" if a.get("tokens_reread") is None else f"{a['tokens_reread'] / n:.0f}"
            restores = "-" if a.get("restores") is None else str(a["restores"])
            print(f"{arm:>8} {3600 * n / a['elapsed_s']:>9.1f} "
                  f"{sum(c['passed'] for c in a['cycles']):>7} {decoded:>21.0f} {reread:>14} "
                  f"{a['tokens_cached']:>7} {restores:>9} {a['tokens_out']:>10} "
                  f"{a['verification_s'] / a['elapsed_s']:>9.0%}  {a['threads']}")  # fmt: skip
        for arm in ("old", "new", "no-reuse", "reuse"):
            v = d.get(arm, {}).get("verification")
            if v is None:  # an arm run by code from before the breakdown
                continue
            comparisons = v["lesson_comparisons"] + v["skill_comparisons"]
            waiting = sum(v.get("waiting_at_end", {}).values())
            promoted = f", {v['promoted']} promoted" if "promoted" in v else ""
            waits = f", {waiting} still waiting at the end" if waiting else ""
            print(f"{arm:>8} verification: {comparisons} comparisons ({v['lesson_comparisons']} "
                  f"lessons, {v['skill_comparisons']} skills{promoted}{waits}), {v['solves']} solves "
                  f"({v['solves'] / max(1, comparisons):.1f} per comparison; a refusal's floor "
                  f"is 2), {d[arm]['verification_s']:.0f} s of which {v['sandbox_s']:.0f} s "
                  "running code")  # fmt: skip
        old = d["old"]
        same = d.get("same_attempts_by_arm", {"new": d["same_attempts"]})
        same_all = d.get("same_trajectories_by_arm", {})
        for arm in ("new", "no-reuse", "reuse"):
            if arm not in d:
                continue
            a = d[arm]
            speed = old["elapsed_s"] / a["elapsed_s"]
            fewer = 1 - (a["tokens_in"] - a["tokens_cached"]) / max(1, old["tokens_in"])
            reread = ""
            if a.get("tokens_reread") is not None and old.get("tokens_reread"):
                reread = f", re-read {1 - a['tokens_reread'] / old['tokens_reread']:.0%} fewer"
            print(f"{arm} / old: {speed:.2f}x cycles per hour; prompt tokens decoded {fewer:.0%} "
                  f"fewer{reread}; same attempts in {same[arm]} of {n} cycles"
                  + (f"; {same_all[arm]} trajectories as new's" if arm in same_all else ""))  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="qwen2.5-coder-1.5b")
    parser.add_argument("--cycles", type=int, default=6)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--cluster", default="python_general", help="'' lets the frontier choose")
    parser.add_argument("--verify-k", type=int, default=6, help="dream's default: 6")
    parser.add_argument("--parts", default="ceiling,ours,spec,dream")
    parser.add_argument("--spec-threads", type=int, default=2)
    parser.add_argument(
        "--old",
        choices=("settings", "ref"),
        default="settings",
        help="the old dream arm: this tree at 1 thread (same challenges) or the code at --old-ref",
    )
    parser.add_argument("--old-ref", default=OLD_REF)
    parser.add_argument(
        "--no-reuse-arm",
        action="store_true",
        help="a third dream arm: new with KV prefix reuse off",
    )
    parser.add_argument(
        "--verify-share",
        type=float,
        default=None,
        help="the new arm's `nightschool dream --verify-share` (default 0.25, what a user gets "
        "since c0a2ae8; 1: every candidate at once). The old arm never has a budget.",
    )
    parser.add_argument("--verify-order", default="adaptive", help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--child-arm", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child_arm:
        result = dream_arm(
            args.model, args.cycles, args.seed, args.cluster or None, args.verify_k,
            args.verify_order, args.verify_share,
        )  # fmt: skip
        print(json.dumps(result))
        return
    parts = set(args.parts.split(","))
    report: dict[str, Any] = {"model": args.model, "load_start": os.getloadavg()[0]}
    if "ceiling" in parts:
        report["ceiling"] = ceiling(args.model)
    if "ours" in parts:
        report["ours"] = ours(args.model)
    if "spec" in parts:
        report["spec"] = speculative(args.model, args.spec_threads)
    if "dream" in parts:
        report["dream"] = dream(args)
    show(report)
    if args.out:
        args.out.write_text(json.dumps(report, indent=1, default=str))


if __name__ == "__main__":
    main()
