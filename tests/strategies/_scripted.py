"""Scripted models and settings shared by the evolve option tests."""

from __future__ import annotations

from collections.abc import Sequence

from nightschool.challenges import Challenge
from nightschool.llm import Message, ScriptedModel
from nightschool.strategies import EvolutionConfig
from nightschool.strategies.harness import CRITIC_PROMPT
from nightschool.strategies.tasks import draw_holdout, draw_train

MAGIC = "MAGIC: read the task twice"
CRITIC = (
    "def solve(task, harness):\n"
    "    first = harness.sample()\n"
    "    harness.critique(first)\n"
    f'    return harness.sample(prompt_extra="{MAGIC}")\n'
)
CUSTOM = "MY CONTRACT: write solve(task, harness); spend calls only through the harness.\n"
OFFSET = 40


def config(**overrides: object) -> EvolutionConfig:
    values: dict[str, object] = {
        "generations": 1,
        "population": 1,
        "train": 2,
        "holdout": 6,
        "budget": 3,
        "clusters": ("python_general",),
        "champion": "score",
        "seed": 3,
    }
    values.update(overrides)
    return EvolutionConfig.model_validate(values)


def worker(cfg: EvolutionConfig) -> ScriptedModel:
    """Right code only when the prompt carries MAGIC; flags any call that is not its role."""
    train = draw_train(cfg.train, seed=cfg.seed, clusters=cfg.clusters)
    holdout = draw_holdout(
        cfg.holdout, train, seed=cfg.seed, clusters=cfg.clusters, offset=cfg.holdout_offset
    )
    known: dict[str, Challenge] = {c.prompt: c for c in (t.render() for t in train + holdout)}

    def reply(messages: Sequence[Message]) -> str:
        system = messages[0]["content"]
        if system == CRITIC_PROMPT or system.startswith("You design"):
            return "NOT MY ROLE"
        for prompt, challenge in known.items():
            if prompt in messages[1]["content"]:
                good = MAGIC in messages[-1]["content"]
                body = challenge.reference_solution if good else challenge.wrong_solution
                return f"```python\n{body}\n```"
        return "I do not know this task"

    return ScriptedModel(reply, name="scripted-worker")
