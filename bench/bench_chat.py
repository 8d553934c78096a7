"""Chat turns: the overhead of the learning hooks, and server throughput under 16 clients.

(a) Hook overhead per chat turn, on a 10k-lesson playbook (the 74 labelled
lessons plus synthetic ones, MiniLM vectors from bench_retrieval's cache):
the phases the learning machinery adds around the model, as `ChatPipeline`
times them in `TurnResult.timings` —
`correction_check` (classifier; on correction turns also the correction
record and the lesson retraction), `retrieval` (playbook retrieve, query
embedding included) and `record` (redact + append the trajectory + lesson
exposure counters, one durable transaction with synchronous=FULL). Measured
over many turns on a scripted model (model time ~0), p50 / p95 in ms; about
10% of the turns are user corrections of the previous turn. Then the same
pipeline with the embedded model (the default or NIGHTSCHOOL_MODEL; llama.cpp,
real generation, max_tokens as given) for a few turns: the hooks as a fraction of
that turn's own model time (`timings["model"]`). Target: hooks p95 <= 15 ms.

(b) Throughput: 16 concurrent clients, each a multi-turn session, against
`nightschool serve`'s app (uvicorn on a thread, real HTTP via httpx) on the
real pipeline (real SQLite, the 10k playbook, real sandbox) with a scripted
model: turns/s, p50 / p95 client-side latency, and the store's count of
chat trajectories must equal the turns sent.

The built playbook is cached as `/tmp/nightschool-bench/chat-playbook-N-v1.db`
(each part works on a copy). Usage: `python bench/bench_chat.py [--lessons 10000] [--turns 300]
[--embedded-turns 8] [--embedded-max-tokens 96] [--clients 16]
[--client-turns 12] [--skip-embedded] [--tool-turns] [--parts a,b]`
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import tempfile
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import numpy as np

from bench_retrieval import (
    CACHE_DIR,
    GENERATOR_VERSION,
    CachedEmbedder,
    build,
    labelled_records,
    latency_queries,
    synthetic_lessons,
)
from data.retrieval_evalset import LESSONS
from nightschool.agent import AgentConfig, ChatPipeline, TurnResult
from nightschool.llm import ChatModel, EmbeddedConfig, EmbeddedModel, Message, ScriptedModel
from nightschool.playbook import SkillMemory, default_embedder
from nightschool.sandbox import Sandbox
from nightschool.server import SESSION_HEADER, create_app, serve_in_thread
from nightschool.store import Store

HOOKS = ("correction_check", "retrieval", "record")
TARGET_P95_MS = 15.0
CORRECTION_RATE = 0.10
"""Share of turns that correct the previous one (2 of 3 turns of a session can)."""


def ms(values: Sequence[float], q: float) -> float:
    return float(np.percentile(np.asarray(values) * 1000.0, q))


def build_playbook(path: Path, size: int) -> float:
    embedder = default_embedder()
    cached = CachedEmbedder(
        embedder, CACHE_DIR / f"{embedder.name.replace('/', '_')}-v{GENERATOR_VERSION}.npz"
    )
    pool = synthetic_lessons(max(size - len(LESSONS), 1), seed=1)
    seconds = build(path, cached, labelled_records() + pool[: size - len(LESSONS)])
    cached.save()
    return seconds


def make_pipeline(
    store: Store, memory: SkillMemory, model: ChatModel, root: Path, max_tokens: int
) -> ChatPipeline:
    return ChatPipeline(
        model=model,
        store=store,
        sandbox=Sandbox(),
        memory=memory,
        reflector=None,
        workspace_root=root,
        config=AgentConfig(max_tokens=max_tokens, verify=True),
    )


def sessions_script(n_turns: int, seed: int = 5) -> list[tuple[str, list[str]]]:
    """Sessions of 3 requests; about `CORRECTION_RATE` of turns correct the one before."""
    rng = random.Random(seed)
    queries = latency_queries(n_turns, seed=seed)
    out: list[tuple[str, list[str]]] = []
    index = 0
    while index < n_turns:
        turns: list[str] = []
        for _ in range(min(3, n_turns - index)):
            if turns and rng.random() < CORRECTION_RATE * 3 / 2:
                turns.append(f"No, I meant {turns[-1].rstrip('?')} in plain Python")
            else:
                turns.append(queries[index])
            index += 1
        out.append((f"bench-{len(out)}", turns))
    return out


def run_turns(pipeline: ChatPipeline, script: list[tuple[str, list[str]]]) -> list[TurnResult]:
    results = []
    for session, requests in script:
        history: list[Message] = []
        for request in requests:
            history.append(Message(role="user", content=request))
            result = pipeline.handle(history, session_id=session)
            history.append(Message(role="assistant", content=result.reply))
            results.append(result)
    return results


def hook_seconds(result: TurnResult) -> float:
    return sum(float(result.timings.get(name, 0.0)) for name in HOOKS)


def part_a(db: Path, args: argparse.Namespace, workdir: Path) -> None:
    print(f"\n## (a) learning-hook overhead per chat turn, {args.lessons:,}-lesson playbook\n")
    with Store.open(db) as store:
        memory = SkillMemory(store)
        memory.retrieve("warm up the index", k=3)
        scripted = ScriptedModel(lambda messages: "Here is how: use a small, tested function.")
        pipeline = make_pipeline(store, memory, scripted, workdir / "ws", 256)
        script = sessions_script(args.turns)
        run_turns(pipeline, sessions_script(6, seed=99))  # warm-up
        results = run_turns(pipeline, script)
        corrections = sum(1 for r in results if r.correction is not None)
        hooks = [hook_seconds(r) for r in results]
        print(
            f"scripted model, {len(results)} turns ({corrections} user corrections), "
            f"load average {os.getloadavg()[0]:.2f}\n"
        )
        print("| phase | p50 ms | p95 ms | max ms |\n|---|---|---|---|")
        for name in HOOKS:
            values = [float(r.timings.get(name, 0.0)) for r in results]
            print(
                f"| {name} | {ms(values, 50):.2f} | {ms(values, 95):.2f} | {ms(values, 100):.2f} |"
            )
        p95 = ms(hooks, 95)
        verdict = "PASS" if p95 <= TARGET_P95_MS else "FAIL"
        print(f"| **all hooks** | **{ms(hooks, 50):.2f}** | **{p95:.2f}** | {ms(hooks, 100):.2f} |")
        for label, subset in (
            ("plain turns only", [hook_seconds(r) for r in results if r.correction is None]),
            ("correction turns only", [hook_seconds(r) for r in results if r.correction]),
        ):
            if subset:
                print(
                    f"\n{label} ({len(subset)}): p50 {ms(subset, 50):.2f} ms, "
                    f"p95 {ms(subset, 95):.2f} ms"
                )
        print(f"\nhooks p95 {p95:.2f} ms vs target <= {TARGET_P95_MS:g} ms: {verdict}")
        pipeline.close()
        alone = []
        for query in latency_queries(200, seed=13):
            start = time.perf_counter()
            memory.retrieve(query, k=3)
            alone.append(time.perf_counter() - start)
        print(
            f"baseline, `SkillMemory.retrieve(q, k=3)` alone in a loop now: p50 {ms(alone, 50):.2f}"
            f" ms, p95 {ms(alone, 95):.2f} ms (load average {os.getloadavg()[0]:.2f})"
        )

        if args.skip_embedded:
            memory.close()
            return
        model = EmbeddedModel(EmbeddedConfig(seed=0))
        model.complete([{"role": "user", "content": "hi"}], max_tokens=4)  # load it
        live = make_pipeline(
            store, memory, model, workdir / "ws-embedded", args.embedded_max_tokens
        )
        embedded = run_turns(live, sessions_script(args.embedded_turns, seed=7))
        live.close()
        memory.close()
    model_s = [float(r.timings["model"]) for r in embedded]
    hook_s = [hook_seconds(r) for r in embedded]
    fraction = [h / m for h, m in zip(hook_s, model_s, strict=True) if m > 0]
    print(
        f"\nembedded model ({model.name}, max_tokens {args.embedded_max_tokens}), "
        f"{len(embedded)} turns through the same pipeline:"
    )
    print(
        f"- model time per turn: p50 {ms(model_s, 50):.0f} ms, p95 {ms(model_s, 95):.0f} ms "
        f"(tokens out per turn median {statistics.median(r.tokens_out for r in embedded):.0f})"
    )
    print(f"- hooks in those turns: p50 {ms(hook_s, 50):.2f} ms, p95 {ms(hook_s, 95):.2f} ms")
    print(
        f"- hooks / model time of the same turn: median {100 * statistics.median(fraction):.2f}%, "
        f"max {100 * max(fraction):.2f}%"
    )
    print(
        f"- scripted-run hooks p95 / embedded model-time p50: "
        f"{100 * ms(hooks, 95) / ms(model_s, 50):.2f}%"
    )


def tool_reply(messages: Sequence[Message]) -> str:
    if any("VERDICT" in m["content"] and "CONFIDENCE" in m["content"] for m in messages):
        return "VERDICT: CONFIRMED\nCONFIDENCE: 0.90\nNOTE: the tool output shows the write"
    if messages[-1]["content"].startswith("TOOL RESULT"):
        return "Done: the note is saved."
    call = {"name": "write_file", "arguments": {"path": "note.txt", "content": "x"}}
    return f"```tool\n{json.dumps(call)}\n```"


def part_b(db: Path, args: argparse.Namespace, workdir: Path) -> None:
    print(f"\n## (b) throughput: {args.clients} concurrent clients over HTTP, scripted model\n")
    with Store.open(db) as store:
        before = store.counts()["trajectories"]
        memory = SkillMemory(store)
        memory.retrieve("warm up the index", k=3)
        model = ScriptedModel(
            tool_reply if args.tool_turns else (lambda m: "Here is how: a small tested function.")
        )
        pipeline = make_pipeline(store, memory, model, workdir / "ws-http", 256)
        app = create_app(pipeline, store=store, memory=memory, api_key="bench", model_name="ns")
        queries = latency_queries(args.clients * args.client_turns, seed=3)
        latencies: list[float] = []
        failures: list[str] = []
        lock = threading.Lock()

        def client(index: int, root: str) -> None:
            history: list[dict[str, str]] = []
            with httpx.Client(
                base_url=root, headers={"Authorization": "Bearer bench"}, timeout=300
            ) as http:
                for turn in range(args.client_turns):
                    history.append(
                        {"role": "user", "content": queries[index * args.client_turns + turn]}
                    )
                    start = time.perf_counter()
                    response = http.post(
                        "/v1/chat/completions",
                        json={"model": "ns", "messages": history},
                        headers={SESSION_HEADER: f"http-{index}"},
                    )
                    took = time.perf_counter() - start
                    with lock:
                        latencies.append(took)
                        if response.status_code != 200:
                            failures.append(response.text[:200])
                    reply = response.json()["choices"][0]["message"]["content"]
                    history.append({"role": "assistant", "content": reply})

        with serve_in_thread(app) as root:
            start = time.perf_counter()
            with ThreadPoolExecutor(args.clients) as pool:
                list(pool.map(lambda i: client(i, root), range(args.clients)))
            wall = time.perf_counter() - start
        pipeline.close()
        memory.close()
        stored = store.counts()["trajectories"] - before
    sent = args.clients * args.client_turns
    print(
        f"{sent} turns ({args.clients} clients x {args.client_turns} turns, "
        f"{'one write_file tool call + verifier per turn' if args.tool_turns else 'no tools'}) "
        f"in {wall:.2f} s; load average {os.getloadavg()[0]:.2f}\n"
    )
    print("| turns/s | p50 latency ms | p95 latency ms | max ms | errors | stored / sent |")
    print("|---|---|---|---|---|---|")
    print(
        f"| {sent / wall:.1f} | {ms(latencies, 50):.1f} | {ms(latencies, 95):.1f} | "
        f"{ms(latencies, 100):.1f} | {len(failures)} | {stored} / {sent} |"
    )
    print(
        "\nall trajectories accounted for: "
        + ("YES" if stored == sent and not failures else f"NO ({failures[:2]})")
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lessons", type=int, default=10_000)
    parser.add_argument("--turns", type=int, default=300)
    parser.add_argument("--embedded-turns", type=int, default=8)
    parser.add_argument("--embedded-max-tokens", type=int, default=96)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--client-turns", type=int, default=12)
    parser.add_argument("--skip-embedded", action="store_true")
    parser.add_argument("--tool-turns", action="store_true")
    parser.add_argument("--parts", default="a,b", help="which parts to run: a, b or a,b")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="nightschool-bench-chat-") as tmp:
        workdir = Path(tmp)
        workdir.chmod(0o755)  # the sandbox user must reach the session workspaces under it
        template = CACHE_DIR / f"chat-playbook-{args.lessons}-v{GENERATOR_VERSION}.db"
        if template.exists():
            print(f"reusing the {args.lessons:,}-lesson playbook {template}")
        else:
            template.parent.mkdir(parents=True, exist_ok=True)
            partial = template.with_suffix(".partial.db")
            partial.unlink(missing_ok=True)
            seconds = build_playbook(partial, args.lessons)
            partial.replace(template)
            print(f"built a {args.lessons:,}-lesson playbook in {seconds:.1f} s ({template})")
        for part, name in ((part_a, "a"), (part_b, "b")):
            if name not in args.parts.split(","):
                continue
            db = workdir / f"{name}.db"
            shutil.copy(template, db)
            part(db, args, workdir)


if __name__ == "__main__":
    main()
