"""One dream arm of `bench_throughput.py` (and `bench_build.py`): cycles through the real loop.

Runs in the child process `bench_throughput.run_arm` starts, so that each arm
imports its own `nightschool` (and, for `bench_build.py`, its own llama.cpp build).
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import tempfile
import time
from collections import Counter
from typing import Any


def dream_arm(
    model: str,
    cycles: int,
    seed: int,
    cluster: str | None,
    verify_k: int,
    verify_order: str,
    verify_share: float | None = None,
) -> dict[str, Any]:
    """Run `cycles` dream cycles in a temporary home with this process's `nightschool`.

    `verify_order` is set on the dream's `PairedVerifier` (`adaptive`, the
    default a user gets, or `control-first`, the order at the issue's start).
    `verify_share` is `nightschool dream --verify-share` (None: not passed, so
    code from before the option runs too).
    """
    from nightschool.cli._common import open_store
    from nightschool.config import Settings
    from nightschool.llm import make_model
    from nightschool.practice import open_practice
    from nightschool.sandbox import Sandbox, SandboxConfig

    with tempfile.TemporaryDirectory(prefix="ns-throughput-") as home:
        os.environ["NIGHTSCHOOL_HOME"] = home
        settings = Settings(model=model)
        store = open_store(settings)
        chat_model = make_model(settings)
        sandbox = Sandbox(SandboxConfig())
        try:
            with open_practice(
                store,
                chat_model,
                sandbox,
                temperature=settings.temperature,
                max_tokens=settings.max_tokens,
                verify_k=verify_k,
                seed=seed,
                curriculum=cluster is None,
                home=settings.home_dir(),
                **({} if verify_share is None else {"verify_share": verify_share}),
            ) as practice:
                if practice.loop.verifier is not None:
                    practice.loop.verifier.order = verify_order
                start = time.perf_counter()
                results = practice.loop.run(cycles, cluster=cluster, on_cycle=_progress(cycles))
                elapsed = time.perf_counter() - start
                waiting = Counter(w.kind for w in getattr(practice.loop, "waiting", []))
            records = {
                row[0]: json.loads(row[1])
                for row in store.query("SELECT id, record FROM trajectories")
            }
            verification_s = sum(
                r.get("duration_s", 0.0)
                for r in records.values()
                if r.get("task_kind") == "verification"
            )
            verifying = verification_detail(results, records.values())
            verifying["waiting_at_end"] = dict(waiting)
        finally:
            store.close()
        rows = []
        for cycle in results:
            record = records.get(cycle.trajectory_id, {})
            digest = hashlib.sha256("\x00".join(_codes(record)).encode()).hexdigest()[:16]
            rows.append(
                {
                    "challenge": f"{cycle.template}/{cycle.tier}/{cycle.seed}",
                    "passed": cycle.passed,
                    "attempts": cycle.attempts,
                    "codes": digest,
                    "seconds": cycle.duration_s,
                    "tokens_in": record.get("tokens_in", 0),
                    "tokens_out": record.get("tokens_out", 0),
                }
            )
        usage = getattr(chat_model, "usage", None)
        return {
            "elapsed_s": elapsed,
            "verification_s": verification_s,
            "verification": verifying,
            "cycles": rows,
            # every stored trajectory (cycles and verification arms), counted alike in both arms
            "tokens_in": sum(r.get("tokens_in", 0) for r in records.values()),
            "tokens_cached": usage.tokens_cached if usage else 0,
            # decoded prompt tokens that an earlier prompt shared (PromptHistory), and the calls
            # whose prefix came from a saved KV state; None where the code predates them
            "tokens_reread": getattr(usage, "tokens_reread", None),
            "restores": getattr(usage, "restores", None),
            "trajectory_digests": [_codes_digest(r) for r in records.values()],
            "tokens_out": sum(r.get("tokens_out", 0) for r in records.values()),
            "model_s": usage.seconds if usage else None,
            "threads": usage.threads if usage else {"1 (old default)": None},
        }


def _progress(cycles: int) -> Any:
    """An `on_cycle` callback printing one line per cycle to stderr (the parent shows it)."""

    def line(index: int, cycle: Any) -> None:
        verdict = "passed" if cycle.passed else "failed"
        print(f"  cycle {index + 1}/{cycles}: {cycle.template} ({cycle.tier}) {verdict} "
              f"in {cycle.duration_s:.0f} s", file=sys.stderr, flush=True)  # fmt: skip

    return line


def verification_detail(results: Any, records: Any) -> dict[str, Any]:
    """Where verification's time went: comparisons by kind, solves, sandbox seconds.

    A refusal needs two renderings that are no candidate-only win (k = 6), so
    a comparison solves at least 2 renderings unless stored controls settle
    some: `solves / comparisons` near 2 means the comparisons are at their floor.
    `sandbox_s` is the time the verification solves spent running code (the
    rest is model time): validator timeouts show up here.
    """
    kinds: Counter[str] = Counter()
    promoted = 0
    for cycle in results:
        # a candidate that waited for --verify-share is compared after a later cycle
        for outcome in (cycle.lesson, cycle.skill, *getattr(cycle, "caught_up", ())):
            if outcome is None or not outcome.comparison:
                continue
            kinds["skill" if hasattr(outcome, "skill_id") else "lesson"] += 1
            promoted += bool(outcome.comparison.get("promote"))
    solves = [r for r in records if r.get("task_kind") == "verification"]
    sandbox = sum(call.get("duration_s") or 0.0 for r in solves for call in r.get("tool_calls", []))
    return {
        "lesson_comparisons": kinds["lesson"],
        "skill_comparisons": kinds["skill"],
        "promoted": promoted,
        "solves": len(solves),
        "sandbox_s": round(sandbox, 2),
    }


def _codes(record: dict[str, Any]) -> list[str]:
    """The code of each tool call of a stored trajectory, in order."""
    return [
        c["arguments"].get("code", "")
        for c in record.get("tool_calls", [])
        if isinstance(c.get("arguments"), dict)
    ]


def _codes_digest(record: dict[str, Any]) -> str:
    """16 hex digits over a stored trajectory's kind, request, outcome and each tool call's code."""
    basis = [
        record.get("task_kind", ""),
        record.get("user_request", ""),
        record.get("outcome"),
        *_codes(record),
    ]
    return hashlib.sha256("\x00".join(map(str, basis)).encode()).hexdigest()[:16]
