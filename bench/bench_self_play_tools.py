"""Does the agent call the self-play tools when asked, and only then? (issue 10, part 4)

Runs the real chat pipeline (`ChatPipeline` with `SelfPlayTools`, the embedded
model, bubblewrap, a throw-away SQLite store) on a fixed script of requests,
each the first message of its own session: four that ask for practice (one
cycle, a background loop twice, stop) and unrelated ones that must not. A
background loop started by the script runs real cycles until the next request
stops it, as in `nightschool chat`. (In one long session the 1.5B called no
self-play tool at all in two of four runs: the earlier coding turns pull it
towards prose.)
After a request that started a loop the script waits `--loop-wait` seconds,
as a user reading the reply would, so the loop gets to practise. Printed per
request: the tools called, the expected self-play tool, seconds; then each
loop's cycles and why it stopped, the hit rate on the practice requests, the
false-call rate on the others, and the prompt tokens the three extra tools add
to a turn's first model call (the same request with and without them, through
the model's own tokenizer).

    .venv/bin/python bench/bench_self_play_tools.py              # the default model
    .venv/bin/python bench/bench_self_play_tools.py --model qwen2.5-coder-0.5b
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path
from typing import Any

from nightschool.agent import AgentConfig, ChatPipeline, build_system_prompt, uses_native_tools
from nightschool.agent.self_play import SelfPlayTools
from nightschool.agent.tools import SELF_PLAY_TOOL_SPECS, SessionWorkspace
from nightschool.cli._idle import ForegroundService
from nightschool.config import Settings
from nightschool.llm import Message
from nightschool.llm.factory import make_model
from nightschool.llm.preempt import Foreground
from nightschool.playbook import SkillMemory
from nightschool.sandbox import Sandbox
from nightschool.store import Store

SCRIPT: tuple[tuple[str, str | None], ...] = (
    ("Write a Python function that returns the n-th Fibonacci number.", None),
    ("Practise one self-play challenge now and tell me how it went.", "self_play"),
    ("What is 17 * 23? Use Python to check.", None),
    ("Go practise in the background until I come back.", "self_play_loop"),
    ("How do I reverse a list in Python?", None),
    ("Start practising in the background, please.", "self_play_loop"),
    ("Stop practising now.", "stop_self_play"),
    ("List the files in your workspace.", None),
    ("Explain in one sentence what a Python generator is.", None),
)
"""(request, the self-play tool it should call or None), in session order."""


def first_call_tokens(
    model: Any, tmp: str, sandbox: Sandbox, practice: SelfPlayTools
) -> tuple[int, int]:
    """Prompt tokens of a turn's first model call, with and without the self-play tools."""
    counts = []
    for tools in (practice, None):
        workspace = SessionWorkspace(Path(tmp) / "probe", sandbox, practice=tools)
        native = uses_native_tools(model)
        system = build_system_prompt(
            protocol="native" if native else "fenced", tools=workspace.specs
        )
        messages = [
            Message(role="system", content=system),
            Message(role="user", content=SCRIPT[0][0]),
        ]
        completion = model.complete(
            messages, max_tokens=1, tools=workspace.schemas if native else None
        )
        counts.append(completion.tokens_in)
    return counts[0], counts[1]


def main() -> None:
    """Run the script and print the table and the rates."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=None, help="catalog model (default: the default)")
    parser.add_argument(
        "--loop-wait", type=float, default=120.0, help="seconds after a loop starts"
    )
    args = parser.parse_args()
    settings = Settings(model=args.model) if args.model else Settings()
    model = make_model(settings)
    sandbox = Sandbox()
    with tempfile.TemporaryDirectory() as tmp, Store.open(Path(tmp) / "bench.db") as store:
        playbook = SkillMemory(store)
        foreground = Foreground()
        practice = SelfPlayTools(
            store, model, sandbox, foreground=foreground, playbook=playbook, verify_k=0
        )

        def pipeline(tools: SelfPlayTools | None) -> ChatPipeline:
            return ChatPipeline(
                model=model,
                store=store,
                sandbox=sandbox,
                memory=playbook,
                reflector=None,
                workspace_root=Path(tmp) / "ws",
                config=AgentConfig(max_tokens=settings.max_tokens),
                wake_up=False,
                practice=tools,
            )

        chat = ForegroundService(pipeline(practice), foreground)
        print(f"model {model.name}; {len(SCRIPT)} requests, one session each\n")
        print(f"{'request':<66} {'expected':<15} {'called':<28} {'s':>6}")
        hits = misses = false_calls = unrelated = 0
        for index, (request, expected) in enumerate(SCRIPT):
            started = time.perf_counter()
            messages = [Message(role="user", content=request)]
            result = chat.handle(messages, session_id=f"bench-{index}")
            seconds = time.perf_counter() - started
            names = [call.name for call in result.tool_calls]
            practised = [name for name in names if name in SELF_PLAY_TOOL_SPECS]
            if expected is None:
                unrelated += 1
                false_calls += bool(practised)
            elif expected in practised:
                hits += 1
            else:
                misses += 1
            shown = ", ".join(names) or "-"
            print(f"{request[:66]:<66} {expected or '-':<15} {shown[:28]:<28} {seconds:>6.1f}")
            print(f"    reply: {result.reply[:110]!r}")
            if practice.running():
                time.sleep(args.loop_wait)
        practice.stop("bench over")
        for run in practice.status()["runs"]:
            print(f"\nloop run {run['run']}: {run['cycles']} cycle(s), {run['stop_reason']}")

        with_tools, without = first_call_tokens(model, tmp, sandbox, practice)
        chat.close()
        playbook.close()
    asked = hits + misses
    print(
        f"\npractice requests: {hits}/{asked} called the right tool · unrelated requests: "
        f"{false_calls}/{unrelated} called a self-play tool"
    )
    print(
        f"prompt tokens of one unrelated turn: {with_tools} with the self-play tools, "
        f"{without} without (+{with_tools - without})"
    )


if __name__ == "__main__":
    main()
