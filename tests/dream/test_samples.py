"""`dream --samples N`: extra independent solves that give a challenge both a pass and a fail."""

from __future__ import annotations

import dataclasses
import itertools
import json
import random
import shutil
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
from typer.testing import CliRunner

from nightschool.challenges import Challenge
from nightschool.dream import DreamLoop, FrontierTracker
from nightschool.dream.samples import Sampler
from nightschool.errors import ModelUnavailableError, UserError
from nightschool.exports import pairwise_pass_fail
from nightschool.llm import Message, ScriptedModel
from nightschool.sandbox import Sandbox
from nightschool.solver import Solver
from nightschool.store import Store
from nightschool.trajectory import Outcome

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap not installed")


def answering(
    seen: dict[str, Challenge], verdicts: Sequence[bool | Exception]
) -> Callable[[Sequence[Message]], str]:
    """A model that answers call i with the reference (True) or the wrong solution (False).

    After `verdicts` it keeps answering wrong.
    """
    calls = itertools.chain(verdicts, itertools.repeat(False))

    def reply(messages: Sequence[Message]) -> str:
        prompt = next(m["content"] for m in messages if m["role"] == "user")
        challenge = next(c for p, c in seen.items() if p in prompt)
        verdict = next(calls)
        if isinstance(verdict, Exception):
            raise verdict
        code = challenge.reference_solution if verdict else challenge.wrong_solution
        return f"```python\n{code}\n```"

    return reply


def loop_with(store: Store, model: ScriptedModel) -> DreamLoop:
    return DreamLoop(store, Solver(model, Sandbox()), FrontierTracker(store), rng=random.Random(4))


def test_samples_give_a_first_try_pass_its_failing_counterpart(
    store: Store, rendered: dict[str, Challenge]
) -> None:
    model = ScriptedModel(answering(rendered, [True, False, True]))
    loop = loop_with(store, model)
    [cycle] = loop.run(1, cluster="algo", tier="starter")
    assert cycle.passed and cycle.attempts == 1
    assert pairwise_pass_fail(store.iter_trajectories()) == []  # one solve: no pair
    drawn = Sampler(store, loop.solver, 3, session_id=loop.session_id).sample(cycle)
    assert drawn.passed == (False, True) and drawn.contrast and not drawn.skipped
    first = store.get_trajectory(cycle.trajectory_id)
    assert first is not None
    samples = [store.get_trajectory(i) for i in drawn.trajectory_ids]
    for index, sample in enumerate(samples, start=1):
        assert sample is not None and sample.task_kind == "selfplay"
        assert sample.extra["sample_of"] == first.id and sample.extra["sample_index"] == index
        assert sample.extra["challenge_hash"] == first.extra["challenge_hash"]
        assert sample.extra["attempts"] == 1 and sample.session_id == loop.session_id
        assert sample.system_prompt == first.system_prompt
    assert [s.temperature for s in samples if s] == [0.55, 0.9]  # the solver's attempt 2, 3
    # each sample was asked the task itself (no retry prompt), with its own seed
    asked = model.calls[1:]
    assert [c.messages[1]["content"] for c in asked] == [first.user_request] * 2
    seeds = [c.seed for c in model.calls]
    assert len(set(seeds)) == 3
    # only the cycle counts on the frontier
    assert store.counts()["frontier_runs"] == 1 and loop.tracker.states()[0].runs == 1
    [pair] = pairwise_pass_fail(store.iter_trajectories())
    assert pair["pair_kind"] == "cross" and pair["rejected_trajectory_id"] == samples[0].id  # type: ignore[union-attr]


def test_when_samples_are_not_drawn(store: Store, rendered: dict[str, Challenge]) -> None:
    loop = loop_with(store, ScriptedModel(answering(rendered, [])))
    [cycle] = loop.run(1, cluster="sql", tier="starter")
    assert not cycle.passed and cycle.attempts == 3
    assert Sampler(store, loop.solver, 1).sample(cycle).trajectory_ids == ()
    generated = dataclasses.replace(cycle, source="generated")
    assert Sampler(store, loop.solver, 3).sample(generated).skipped == (
        "a generated challenge is not re-rendered"
    )
    faulted = dataclasses.replace(cycle, infrastructure_error="SandboxFaultError: x")
    assert Sampler(store, loop.solver, 3).sample(faulted).skipped == "the cycle ended on a fault"
    drawn = Sampler(store, loop.solver, 2).sample(cycle)
    assert drawn.passed == (False,) and not drawn.contrast
    assert store.counts()["trajectories"] == 2
    with pytest.raises(UserError):
        Sampler(store, loop.solver, 0)


def test_a_model_outage_in_a_sample_is_stored_then_raised(
    store: Store, rendered: dict[str, Challenge]
) -> None:
    outage = ModelUnavailableError("connection refused")
    loop = loop_with(store, ScriptedModel(answering(rendered, [True, outage])))
    [cycle] = loop.run(1, cluster="algo", tier="starter")
    with pytest.raises(ModelUnavailableError):
        Sampler(store, loop.solver, 3).sample(cycle)
    unknown = list(store.iter_trajectories(outcome=Outcome.UNKNOWN))
    assert [t.extra["sample_of"] for t in unknown] == [cycle.trajectory_id]


def test_dream_samples_then_export_preference(
    tmp_path: Path, rendered: dict[str, Challenge], monkeypatch: pytest.MonkeyPatch
) -> None:
    import nightschool.llm
    from nightschool.cli import app

    model = ScriptedModel(answering(rendered, [True, False, True]), name="scripted-coder")
    monkeypatch.setattr(nightschool.llm, "make_model", lambda *_a, **_k: model)
    runner = CliRunner()
    dream = runner.invoke(
        app,
        [
            "dream", "--cycles", "1", "--samples", "3", "--cluster", "algo", "--tier",
            "starter", "--seed", "5", "--no-lessons", "--no-skills", "--templates-only",
        ],
        env={"COLUMNS": "200"},
    )  # fmt: skip
    assert dream.exit_code == 0, dream.output
    assert "pass/fail pair" in dream.stderr and "(1/2 passed)" in dream.stderr
    assert "2 extra solve(s); 1 of 1 cycle(s) now have both a pass and a fail" in dream.stdout
    out = tmp_path / "pairs.jsonl"
    export = runner.invoke(
        app, ["trajectories", "export", "--format", "preference", "-o", str(out)]
    )
    assert export.exit_code == 0, export.output
    [pair] = [json.loads(line) for line in out.read_text().splitlines()]
    [challenge] = rendered.values()
    assert pair["prompt"] == challenge.prompt.strip() and pair["pair_kind"] == "cross"
    assert pair["chosen"] == f"```python\n{challenge.reference_solution.strip()}\n```"
    assert pair["rejected"] == f"```python\n{challenge.wrong_solution.strip()}\n```"
    assert "wrote 1 preference pairs" in export.stderr and "1 duplicate pairs" in export.stderr
    dry = runner.invoke(app, ["status"])
    assert "frontier runs 1" in dry.stdout
