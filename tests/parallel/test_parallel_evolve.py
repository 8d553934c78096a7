"""An `evolve` generation with its tournament games on Ray equals the local run."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from tests.parallel._support import needs_bwrap

from nightschool.config import Settings
from nightschool.llm import make_model
from nightschool.parallel import RayBackend, SettingsResources
from nightschool.sandbox import Sandbox
from nightschool.strategies.author import AUTHOR_SYSTEM
from nightschool.strategies.engine import Evolution, EvolutionConfig
from nightschool.strategies.tasks import draw_holdout, draw_train

MAGIC = "MAGIC: read the task twice"
DEPTH = f'def solve(task, harness):\n    return harness.sample(prompt_extra="{MAGIC}")\n'
CLUSTERS = ("python_general",)


def untimed(value: Any) -> Any:
    """`value` without wall-clock fields (`seconds`, `latency`): they differ run to run."""
    if isinstance(value, dict):
        return {k: untimed(v) for k, v in value.items() if k not in ("seconds", "latency")}
    if isinstance(value, list):
        return [untimed(v) for v in value]
    return value


@needs_bwrap
def test_an_evolve_generation_on_ray_equals_the_local_backend(
    ray_cluster: Any, openai_stub: Callable[..., AbstractContextManager[str]], tmp_path: Path
) -> None:
    config = EvolutionConfig(
        generations=1,
        population=1,
        train=2,
        holdout=2,
        budget=2,
        seed=4,
        clusters=CLUSTERS,
        champion="score",
    )
    train = draw_train(2, seed=4, clusters=list(CLUSTERS))
    holdout = draw_holdout(2, train, seed=4, clusters=list(CLUSTERS))
    known = {t.render().prompt: t.render() for t in train + holdout}
    games: list[str] = []

    def reply(messages: list[dict[str, Any]]) -> str:
        if messages[0]["content"] == AUTHOR_SYSTEM:
            return f"```python\n{DEPTH}```"
        for prompt, challenge in known.items():
            if prompt in messages[1]["content"]:
                games.append(challenge.template)
                good = MAGIC in messages[-1]["content"]
                body = challenge.reference_solution if good else challenge.wrong_solution
                return f"```python\n{body}\n```"
        return "unknown task"

    with openai_stub(reply) as url:
        settings = Settings(base_url=url, model="stub", home=tmp_path / "home")
        model, sandbox = make_model(settings), Sandbox()
        local = Evolution.start(tmp_path / "local", config, model=model, sandbox=sandbox).run()
        local_calls = len(games)
        backend = RayBackend(workers=2)
        remote = Evolution.start(
            tmp_path / "ray",
            config,
            model=model,
            sandbox=sandbox,
            backend=backend,
            resources=SettingsResources(settings, sandbox.config),
        ).run()
        backend.close()
    assert len(games) == 2 * local_calls  # every game played once per backend
    for key in ("generations", "incumbent", "baseline_incumbent", "holdout", "verdict", "status"):
        assert untimed(remote[key]) == untimed(local[key]), key
    assert local["status"] == "done" and local["generations_completed"] == 1
    assert local["incumbent"] == "g1c1" and local["verdict"]["n"] == 2
    assert len(local["generations"][0]["rows"]) == 3  # the baselines, played in one batch
