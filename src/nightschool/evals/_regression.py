"""The `regression` suite: a fixed, seeded set of template challenges.

One challenge per (cluster, tier) pair: 8 clusters x 5 tiers (starter to
expert) = 40 tasks (35 before `web_automation`, whose 5 are judged with the
host's browser: `challenges._webrun`). For each pair the template is drawn from that cluster's
templates with `random.Random(f"regression:{seed}:{cluster}:{tier}")` and
rendered with the suite seed, so the same seed gives the same tasks (and task
ids `<template>:<tier>:<seed>`) in any process. Adding the `starter` tier left
the other 28 tasks of a seed unchanged: each pair draws from its own seed.

Scoring: the solution file is extracted from the reply
(`solver.extract_code`) and judged with `challenges.evaluate` (setup,
solution, validator in a fresh sandbox workspace); a challenge whose setup
fails raises `ChallengeFaultError` (an infrastructure fault, not a failure).
"""

from __future__ import annotations

import random

from nightschool.challenges import CLUSTERS, TIERS, Challenge, evaluate, render, templates
from nightschool.evals._model import AgentReply, Score, Task
from nightschool.sandbox import Sandbox
from nightschool.solver.core import extract_code

INSTRUCTION = (
    "Solve this task. Reply with the complete contents of the requested file in exactly one "
    "fenced code block.\n\n"
)
"""Put before each challenge prompt in the message sent to the agent."""


def regression_challenges(seed: int = 0) -> list[Challenge]:
    """The suite's challenges, clusters in `CLUSTERS` order, tiers easiest first."""
    chosen: list[Challenge] = []
    for cluster in CLUSTERS:
        names = [template.name for template in templates(cluster)]
        for tier in TIERS:
            rng = random.Random(f"regression:{seed}:{cluster}:{tier}")
            chosen.append(render(rng.choice(names), tier, seed))
    return chosen


def task_id(challenge: Challenge) -> str:
    """`<template>:<tier>:<seed>`, e.g. `algo.top_k:advanced:0`."""
    return f"{challenge.template}:{challenge.tier}:{challenge.seed}"


def score_reply(challenge: Challenge, reply: AgentReply, sandbox: Sandbox) -> Score:
    """Judge the solution in `reply` with the challenge's validator.

    Raises:
        ChallengeFaultError: the challenge's setup failed (broken challenge).
        SandboxFaultError: the sandbox could not start a run.
    """
    code = extract_code(reply.text, challenge.solution_file)
    if code is None:
        return Score(False, 0.0, "no code in reply")
    evaluation = evaluate(sandbox, challenge, code)
    if evaluation.passed:
        return Score(True, 1.0)
    lines = evaluation.feedback.strip().splitlines()
    return Score(False, 0.0, (lines[0] if lines else "validator rejected the solution")[:300])


def _task(challenge: Challenge) -> Task:
    def scorer(reply: AgentReply, sandbox: Sandbox) -> Score:
        return score_reply(challenge, reply, sandbox)

    return Task(
        id=task_id(challenge),
        prompt=INSTRUCTION + challenge.prompt,
        scorer=scorer,
        meta={
            "template": challenge.template,
            "cluster": challenge.cluster,
            "tier": challenge.tier,
            "challenge_hash": challenge.challenge_hash,
        },
    )


def regression_tasks(seed: int = 0) -> list[Task]:
    """The 40 regression tasks for `seed` (see the module docstring)."""
    return [_task(challenge) for challenge in regression_challenges(seed)]
