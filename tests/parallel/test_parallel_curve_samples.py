"""`eval learning-curve` and `dream --samples` on Ray give what the local backend gives.

The model is a real OpenAI-compatible server on loopback (workers are other
processes), answering from the prompt: the reference solution when a worked
example of the challenge's own template is in the system prompt (or for a
dream seed), the wrong one otherwise. Sandbox, store, playbook and gate are real.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from tests.lessons._scripted import asked
from tests.parallel._support import needs_bwrap
from typer.testing import CliRunner

from nightschool.challenges import Challenge
from nightschool.config import Settings
from nightschool.dream import DreamLoop, FrontierTracker
from nightschool.dream.loop import DREAM_SEED_LIMIT
from nightschool.evals.curve import build_heldout, run_curve
from nightschool.llm import Message, ScriptedModel
from nightschool.parallel import RayBackend, SettingsResources
from nightschool.playbook import SkillMemory, default_embedder
from nightschool.sandbox import Sandbox
from nightschool.solver import Solver, SolverConfig
from nightschool.store import Store

Stub = Callable[..., Any]


def learner(seen: dict[str, Challenge]) -> Callable[[Sequence[Message]], str]:
    def reply(messages: Sequence[Message]) -> str:
        challenge = asked(seen, messages)
        if challenge is None:
            return "```python\nprint('no idea')\n```"
        shown = challenge.reference_solution.strip() in messages[0]["content"]
        good = shown or challenge.seed < DREAM_SEED_LIMIT
        code = challenge.reference_solution if good else challenge.wrong_solution
        lang = "bash" if challenge.solution_file.endswith(".sh") else "python"
        return f"```{lang}\n{code}\n```"

    return reply


def _curve(
    tmp_path: Path, name: str, reply: Callable[[Sequence[Message]], str], backend: Any, url: str
) -> tuple[dict[tuple[int, str, str], bool], int]:
    config = SolverConfig(max_attempts=1)
    with Store.open(tmp_path / f"{name}.db") as store:
        memory = SkillMemory(store, default_embedder())
        try:
            heldout = build_heldout(["starter"], per_cell=2, seed=0)
            model = ScriptedModel(reply)
            loop = DreamLoop(
                store,
                Solver(model, Sandbox(), config, playbook=memory),
                FrontierTracker(store),
                # the 3 cycles must practise a template of set (a) for the curve to move: with
                # the 8th cluster (web_automation) seed 0's cycles practised none of them
                rng=random.Random(1),
                exclude_templates=heldout.unseen_templates,
            )
            settings = Settings(base_url=url, model="stub", home=tmp_path / "home")
            curve = run_curve(
                store=store,
                memory=memory,
                loop=loop,
                eval_solver=Solver(model, Sandbox(), config),
                heldout=heldout,
                checkpoints=1,
                cycles_per_checkpoint=3,
                minutes_per_checkpoint=None,
                ablation="none",
                backend=backend,
                resources=SettingsResources(settings, Sandbox().config) if backend else None,
            )
        finally:
            memory.close()
        results = {
            (m.checkpoint, m.arm, r.task_id): r.passed
            for m in curve.measurements
            for r in m.results
        }
        evals = store.query("SELECT COUNT(*), COUNT(DISTINCT id) FROM trajectories "
                            "WHERE task_kind = 'eval'")[0]  # fmt: skip
        assert evals[0] == evals[1]
        return results, int(evals[0])


@needs_bwrap
def test_learning_curve_on_ray_measures_what_the_local_backend_measures(
    ray_cluster: Any, openai_stub: Stub, rendered: dict[str, Challenge], tmp_path: Path
) -> None:
    reply = learner(rendered)
    with openai_stub(reply) as url:
        local, local_rows = _curve(tmp_path, "local", reply, None, url)
        remote, remote_rows = _curve(tmp_path, "ray", reply, RayBackend(workers=2), url)
    assert remote == local
    assert remote_rows == local_rows
    start = [passed for (checkpoint, _, _), passed in local.items() if checkpoint == 0]
    after = [passed for (checkpoint, _, _), passed in local.items() if checkpoint == 1]
    assert sum(after) > sum(start)  # the dream's skills were shown and helped, on both


def _answering(seen: dict[str, Challenge], verdicts: list[bool]) -> Callable[..., str]:
    """Call i gets the reference solution when `verdicts[i]`, else (and after) the wrong one."""
    calls = iter(verdicts)

    def reply(messages: Sequence[Message]) -> str:
        challenge = asked(seen, messages)
        assert challenge is not None
        good = next(calls, False)
        code = challenge.reference_solution if good else challenge.wrong_solution
        return f"```python\n{code}\n```"

    return reply


@needs_bwrap
@pytest.mark.parametrize("backend", ["local", "ray"])
def test_dream_samples_on_either_backend(
    ray_cluster: Any,
    openai_stub: Stub,
    rendered: dict[str, Challenge],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    backend: str,
) -> None:
    """`dream --samples 3`: the cycle passes, its two samples (one pass, one fail) run on
    `backend`; the same rows either way, each sample once."""
    from nightschool.cli import app

    monkeypatch.setenv("NIGHTSCHOOL_HOME", str(tmp_path / backend))
    with openai_stub(_answering(rendered, [True, True, False])) as url:
        args = [
            "dream", "--cycles", "1", "--samples", "3", "--cluster", "algo", "--tier",
            "starter", "--seed", "5", "--no-lessons", "--no-skills", "--templates-only",
            "--base-url", url, "--model", "stub", "--backend", backend,
        ]  # fmt: skip
        if backend == "ray":
            args += ["--workers", "2"]
        dream = CliRunner().invoke(app, args, env={"COLUMNS": "200"})
    assert dream.exit_code == 0, dream.output
    assert "(1/2 passed)" in dream.stderr
    with Store.open(tmp_path / backend / "nightschool.db") as store:
        cycle = [t for t in store.iter_trajectories() if "sample_of" not in t.extra]
        samples = [t for t in store.iter_trajectories() if "sample_of" in t.extra]
        assert len(cycle) == 1 and cycle[0].outcome.value == "passed"
        assert len(samples) == 2 and len({t.id for t in samples}) == 2
        assert {t.extra["sample_of"] for t in samples} == {cycle[0].id}
        assert sorted(t.outcome.value for t in samples) == ["failed", "passed"]
        assert store.counts()["frontier_runs"] == 1  # only the cycle counts on the frontier
