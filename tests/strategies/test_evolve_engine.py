"""The evolution loop with a scripted model on real challenges in the real sandbox."""

from __future__ import annotations

import gzip
import io
import json
import shutil
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from nightschool.challenges import Challenge
from nightschool.errors import EXIT_CODES, InfrastructureError, ModelUnavailableError, UserError
from nightschool.gate import GateConfig, PairedResult, SequentialGate
from nightschool.llm import Message, ScriptedModel
from nightschool.sandbox import Sandbox
from nightschool.strategies import AuthoringFailedError, Evolution, EvolutionConfig, Node, engine
from nightschool.strategies.archive import CHECKPOINT_NAME, load_checkpoint, select_champion
from nightschool.strategies.author import AUTHOR_SYSTEM
from nightschool.strategies.report import print_report, report_markdown, write_reports
from nightschool.strategies.tasks import (
    HOLDOUT_SEED_BASE,
    TaskSpec,
    assert_disjoint,
    draw_holdout,
    draw_train,
)

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap not installed")

CLUSTERS = ("python_general",)
MAGIC = "MAGIC: read the task twice"
DEPTH = f'def solve(task, harness):\n    return harness.sample(prompt_extra="{MAGIC}")\n'


def config(**overrides: object) -> EvolutionConfig:
    values: dict[str, object] = {
        "generations": 1,
        "population": 1,
        "train": 3,
        "holdout": 6,
        "budget": 2,
        "clusters": CLUSTERS,
        "champion": "score",
        "seed": 3,
    }
    values.update(overrides)
    return EvolutionConfig.model_validate(values)


def known_challenges(cfg: EvolutionConfig) -> dict[str, Challenge]:
    train = draw_train(cfg.train, seed=cfg.seed, clusters=cfg.clusters)
    holdout = draw_holdout(cfg.holdout, train, seed=cfg.seed, clusters=cfg.clusters)
    return {c.prompt: c for c in (t.render() for t in train + holdout)}


def is_author(messages: Sequence[Message]) -> bool:
    return messages[0]["content"] == AUTHOR_SYSTEM


def world(
    cfg: EvolutionConfig,
    author: Callable[[Sequence[Message]], str] | None = None,
    *,
    always_good: bool = False,
) -> ScriptedModel:
    """Solver: right code only when the prompt carries MAGIC (or always), padded with a
    100-word comment unless the prompt says BRIEF. Author: `author` or DEPTH."""
    challenges = known_challenges(cfg)

    def reply(messages: Sequence[Message]) -> str:
        if is_author(messages):
            return author(messages) if author else f"Try depth.\n```python\n{DEPTH}```"
        user = messages[1]["content"]
        for prompt, challenge in challenges.items():
            if user.startswith(prompt) or prompt in user:
                if messages[0]["content"].startswith("You review"):
                    return "looks wrong"
                good = always_good or MAGIC in messages[-1]["content"]
                body = challenge.reference_solution if good else challenge.wrong_solution
                if "BRIEF" not in messages[-1]["content"]:
                    body += "\n# " + "padding " * 100
                return f"```python\n{body}\n```"
        return "I do not know this task"

    return ScriptedModel(reply, name="scripted-solver")


def test_scripted_author_displaces_sample_and_the_gate_promotes_on_a_disjoint_holdout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cfg = config()
    model = world(cfg)
    draws: list[int] = []

    def spy(*args: Any, **kwargs: Any) -> list[TaskSpec]:
        draws.append(sum(is_author(c.messages) for c in model.calls))
        return draw_holdout(*args, **kwargs)

    monkeypatch.setattr(engine, "draw_holdout", spy)
    run = Evolution.start(tmp_path / "run", cfg, model=model, sandbox=Sandbox())
    state = run.run()

    gen0, gen1 = state["generations"]
    assert [r["name"] for r in gen0["rows"]] == ["sample", "refine", "sample_then_refine"]
    assert all(r["score"] == 0.0 for r in gen0["rows"]) and gen0["champion"] == "sample"
    assert gen1["incumbent_before"] == "sample" and gen1["champion"] == "g1c1"
    rows = {r["name"]: r for r in gen1["rows"]}
    assert rows["g1c1"]["score"] == 1.0 and rows["sample"]["score"] == 0.0
    assert rows["g1c1"]["cost"] < rows["sample"]["cost"]

    nodes = {n["name"]: n for n in state["archive"]}
    child = nodes["g1c1"]
    assert child["source"] == DEPTH and child["parent"] == "sample" and child["generation"] == 1
    assert child["gzip_bytes"] == len(gzip.compress(DEPTH.encode(), 9, mtime=0))
    for node in nodes.values():
        assert {"name", "source", "generation", "parent", "score", "cost", "gzip_bytes"} <= set(
            node
        )

    holdout = [TaskSpec.from_json(t) for t in state["holdout"]["tasks"]]
    train = [TaskSpec.from_json(t) for t in state["train"]]
    assert not {t.task_id for t in holdout} & {t.task_id for t in train}
    assert state["holdout"]["drawn_after_generation"] == 1
    verdict = state["verdict"]
    assert verdict["promote"] is True and verdict["test"] == "mcnemar-exact"
    assert verdict["n"] == 6 and verdict["lift"] == 1.0 and verdict["cost_savings"] > 0
    assert [p["task_id"] for p in state["holdout"]["pairs"]] == [t.task_id for t in holdout]

    # The holdout was drawn only after all authoring (every author call precedes the draw).
    assert draws == [sum(is_author(c.messages) for c in model.calls)] == [1]
    calls = [c.messages for c in model.calls]
    last_author = max(i for i, m in enumerate(calls) if is_author(m))
    author_text = "".join(m["content"] for m in calls[last_author])
    assert all(t.task_id in author_text for t in train)  # every train task, compacted
    assert not any(t.task_id in author_text for t in holdout)

    markdown, data = write_reports(tmp_path / "run", state)
    assert "PROMOTE" in markdown.read_text() and "## lineage" in markdown.read_text()
    assert json.loads(data.read_text())["verdict"]["promote"] is True


def test_sequential_holdout_gate_stops_as_soon_as_it_promotes(tmp_path: Path) -> None:
    cfg = config(holdout=12, holdout_gate="sequential")
    state = Evolution.start(tmp_path / "run", cfg, model=world(cfg), sandbox=Sandbox()).run()
    verdict, record = state["verdict"], state["holdout"]
    assert verdict["promote"] is True and verdict["test"] == "betting-eprocess"
    # every pair is a candidate-only win, so the e-process crosses 1/alpha early
    assert 6 <= verdict["n"] < 12 and len(record["pairs"]) == verdict["n"]
    assert len(record["tasks"]) == 12 and record["gate"] == "sequential"
    drawn = [TaskSpec.from_json(t).task_id for t in record["tasks"]]
    assert [p["task_id"] for p in record["pairs"]] == drawn[: verdict["n"]]
    markdown, _ = write_reports(tmp_path / "run", state)
    assert "PROMOTE" in markdown.read_text() and "betting-eprocess" in markdown.read_text()
    print_report(Console(file=io.StringIO(), width=120), state)  # no interval: still prints


def test_sequential_gate_concludes_without_promotion_when_evidence_is_short() -> None:
    gate = SequentialGate(GateConfig())
    for i in range(4):
        assert gate.update(PairedResult(f"t{i}", 0.0, 1.0, 10, 5)) is None
    verdict = gate.conclude()
    assert verdict.promote is False and verdict.n == 4 and verdict.lift == 1.0
    assert "after 4 pairs; floor 6 pairs" in verdict.reason and 0 < verdict.p_value <= 1


def test_sequential_holdout_gate_needs_superiority() -> None:
    with pytest.raises(ValueError, match="superiority"):
        config(holdout_gate="sequential", gate_mode="noninferiority_cheaper")


def test_author_failures_are_recorded_per_candidate_and_survivors_compete(
    tmp_path: Path,
) -> None:
    cfg = config(population=3)
    author = ScriptedModel(
        [
            "I cannot write code.",
            "```python\nimport os\n" + DEPTH + "```",
            f"```python\n{DEPTH}```",
        ],
        name="primary",
    )
    fallback = ScriptedModel(
        ["still no code", "```python\nx = eval('1')\n" + DEPTH + "```"], name="fb"
    )
    run = Evolution.start(
        tmp_path / "r", cfg, model=world(cfg), sandbox=Sandbox(), author=author, fallback=fallback
    )
    state = run.run()
    rows = {r["name"]: r for r in state["generations"][1]["rows"]}
    assert rows["g1c1"]["status"] == "author_failed"
    assert rows["g1c1"]["detail"].startswith("primary:no_code -> fb:no_code")
    assert rows["g1c2"]["status"] == "author_failed"
    assert (
        "primary:lint -> fb:lint" in rows["g1c2"]["detail"] and "'eval'" in rows["g1c2"]["detail"]
    )
    assert rows["g1c3"]["status"] == "candidate" and rows["g1c3"]["score"] == 1.0
    assert rows["g1c1"]["score"] is None and rows["g1c2"]["score"] is None
    retry = fallback.calls[1].messages[-1]["content"]
    assert "line 1: import of 'os'" in retry  # the lint violation goes back to the author
    assert state["generations"][1]["champion"] == "g1c3"


@pytest.mark.parametrize(
    ("failure", "error", "code"),
    [
        ("no code here", AuthoringFailedError, EXIT_CODES["error"]),
        (ModelUnavailableError("down"), InfrastructureError, EXIT_CODES["infrastructure"]),
    ],
)
def test_all_candidates_failing_stops_the_run(
    tmp_path: Path, failure: str | BaseException, error: type[Exception], code: int
) -> None:
    cfg = config(population=2)
    author = ScriptedModel([failure] * 4, name="author")
    run = Evolution.start(tmp_path / "r", cfg, model=world(cfg), sandbox=Sandbox(), author=author)
    with pytest.raises(error) as caught:
        run.run()
    assert caught.value.exit_code == code  # type: ignore[attr-defined]
    assert "all 2 candidate(s) failed" in str(caught.value)
    state = load_checkpoint(tmp_path / "r")
    assert state["status"] == "failed" and state["generations_completed"] == 0
    failed = state["failed_generation"]
    assert [r["status"] for r in failed["rows"]] == ["author_failed"] * 2
    assert state["holdout"] is None and state["verdict"] is None
    assert "failed" in report_markdown(state)


def node(name: str, score: float, cost: float) -> Node:
    return Node(name, "", 0, None, "candidate", score=score, cost=cost)


def test_champion_policies_and_cost_aware_tie_break() -> None:
    incumbent, rich, cheap = node("inc", 0.5, 300), node("rich", 0.5, 900), node("cheap", 0.5, 100)
    assert select_champion([incumbent, rich, cheap], "score").name == "inc"  # tie keeps first
    assert select_champion([incumbent, rich, cheap], "costAware").name == "cheap"
    better = node("better", 0.6, 1000)
    assert select_champion([incumbent, cheap, better], "costAware").name == "better"
    assert select_champion([incumbent, cheap, better], "costAware", epsilon=0.15).name == "cheap"
    assert select_champion([incumbent, better], "score", epsilon=0.15).name == "inc"
    zero, free = node("zero", 0.0, 300), node("free", 0.0, 0)
    assert select_champion([zero, free], "costAware").name == "zero"  # nothing works: no tie-break
    twin = node("twin", 0.5, 300)
    assert select_champion([incumbent, twin], "costAware").name == "inc"
    with pytest.raises(ValueError):
        select_champion([Node("x", "", 0, None, "author_failed")], "score")


BRIEF = 'def solve(task, harness):\n    return harness.sample(prompt_extra="BRIEF")\n'


@pytest.mark.parametrize(("policy", "champion"), [("costAware", "g1c1"), ("score", "sample")])
def test_cost_aware_prefers_an_equally_good_cheaper_candidate(
    tmp_path: Path, policy: str, champion: str
) -> None:
    cfg = config(champion=policy)
    model = world(cfg, author=lambda _m: f"```python\n{BRIEF}```", always_good=True)
    state = Evolution.start(tmp_path / "r", cfg, model=model, sandbox=Sandbox()).run()
    gen1 = state["generations"][1]
    assert gen1["champion"] == champion
    rows = {r["name"]: r for r in gen1["rows"]}
    assert rows["g1c1"]["score"] == rows["sample"]["score"] == 1.0
    assert rows["g1c1"]["cost"] < rows["sample"]["cost"]
    verdict = state["verdict"]
    if champion == "sample":
        assert verdict["test"] == "none" and verdict["promote"] is False
    else:  # equal pass/fail on the holdout: superiority is not shown
        assert verdict["test"] == "zero-width" and verdict["promote"] is False
        assert verdict["cost_savings"] > 0


def test_cost_aware_does_not_crown_a_strategy_that_spends_nothing_and_fails(
    tmp_path: Path,
) -> None:
    cfg = config(champion="costAware")
    crash = "def solve(task, harness):\n    return task.nothing\n"
    model = world(cfg, author=lambda _m: f"```python\n{crash}```")
    state = Evolution.start(tmp_path / "r", cfg, model=model, sandbox=Sandbox()).run()
    rows = {r["name"]: r for r in state["generations"][1]["rows"]}
    assert rows["g1c1"]["score"] == rows["sample"]["score"] == 0.0 and rows["g1c1"]["cost"] == 0
    assert all(r["status"] == "error" for r in rows["g1c1"]["results"])
    assert state["generations"][1]["champion"] == "sample"


def test_interrupt_mid_generation_loses_only_that_generation(tmp_path: Path) -> None:
    cfg = config(generations=2)
    author_calls = 0
    base = world(cfg)

    def interrupting(messages: Sequence[Message]) -> str:
        nonlocal author_calls
        if is_author(messages):
            author_calls += 1
        elif author_calls >= 2:  # generation 2 is authored; its play is cut off
            raise KeyboardInterrupt
        return base.complete(messages).text

    run_dir = tmp_path / "r"
    solver = ScriptedModel(interrupting, name="scripted-solver")  # the name world() uses
    first = Evolution.start(run_dir, cfg, model=solver, sandbox=Sandbox())
    with pytest.raises(KeyboardInterrupt):
        first.run()
    saved = load_checkpoint(run_dir)
    assert saved["generations_completed"] == 1 and saved["status"] == "running"
    assert {n["name"] for n in saved["archive"]} == {
        "sample",
        "refine",
        "sample_then_refine",
        "g1c1",
    }
    assert saved["holdout"] is None
    assert [p.name for p in run_dir.iterdir()] == [CHECKPOINT_NAME]  # no torn temp file

    again = world(cfg)
    state = Evolution.resume(run_dir, model=again, sandbox=Sandbox()).run()
    assert is_author(again.calls[0].messages)  # gens 0 and 1 were not replayed
    assert state["generations_completed"] == 2 and state["status"] == "done"
    names = [n["name"] for n in state["archive"]]
    assert names == ["sample", "refine", "sample_then_refine", "g1c1", "g2c1"]
    g1 = {n["name"]: n for n in state["archive"]}["g1c1"]
    saved_g1 = {n["name"]: n for n in saved["archive"]}["g1c1"]
    assert (g1["source"], g1["parent"], g1["gzip_bytes"]) == (
        saved_g1["source"],
        saved_g1["parent"],
        saved_g1["gzip_bytes"],
    )
    assert state["holdout"]["drawn_after_generation"] == 2
    # A finished run resumes to the same state without any model call.
    idle = ScriptedModel([])
    assert (
        Evolution.resume(run_dir, model=idle, sandbox=Sandbox()).run()["verdict"]
        == state["verdict"]
    )
    assert idle.calls == []
    with pytest.raises(UserError, match="already holds"):
        Evolution.start(run_dir, cfg, model=idle, sandbox=Sandbox())


def test_holdout_is_disjoint_from_train_and_overlap_is_caught() -> None:
    train = draw_train(10, seed=1)
    holdout = draw_holdout(12, train, seed=1)
    assert len({t.task_id for t in holdout}) == 12
    assert all(t.seed >= HOLDOUT_SEED_BASE for t in holdout)
    assert all(t.seed < HOLDOUT_SEED_BASE for t in train)
    assert_disjoint(train, holdout)
    with pytest.raises(AssertionError, match="overlaps train"):
        assert_disjoint(train, [*holdout, train[3]])
    twin = TaskSpec(train[0].template, train[0].tier, train[0].seed)
    with pytest.raises(AssertionError):
        assert_disjoint(train, [twin])
    assert draw_holdout(12, train, seed=1) == holdout  # deterministic given the seed


def test_report_prints_untrusted_text_literally() -> None:
    """Author faults carry server and model text; Rich must not read it as markup."""
    import io

    from rich.console import Console

    from nightschool.strategies.report import print_report

    detail = "infrastructure: m:infrastructure: ModelResponseError: HTTP 400 [/INST] [bold]x"
    row: dict[str, Any] = {"name": "g1c1", "parent": "sample", "status": "author_failed"}
    row["score"] = None
    row |= {"cost": None, "gzip_bytes": 0, "detail": detail}
    base: dict[str, Any] = {"name": "sample", "parent": None, "status": "baseline"}
    base |= {"score": 0.0, "cost": 9.0}
    base |= {"gzip_bytes": 99, "detail": ""}
    state: dict[str, Any] = {
        "status": "failed",
        "error": f"generation 1: all 1 candidate(s) failed to be authored (first: {detail})",
        "config": {},
        "train": [],
        "generations": [{"generation": 0, "champion": "sample", "rows": [base]}],
        "failed_generation": {"generation": 1, "rows": [row]},
        "archive": [{**base, "generation": 0}, {**row, "generation": 1}],
        "verdict": None,
        "holdout": None,
    }
    out = io.StringIO()
    print_report(Console(file=out, width=300, color_system=None), state)
    assert "[/INST] [bold]x" in out.getvalue()


def test_resume_refuses_another_solver_model(tmp_path: Path) -> None:
    cfg = config()
    Evolution.start(tmp_path / "r", cfg, model=ScriptedModel([], name="a"), sandbox=Sandbox())
    with pytest.raises(UserError, match="started with the solver model 'a', not 'b'"):
        Evolution.resume(tmp_path / "r", model=ScriptedModel([], name="b"), sandbox=Sandbox())
    Evolution.resume(tmp_path / "r", model=ScriptedModel([], name="a"), sandbox=Sandbox())


def test_disjointness_is_checked_under_python_O() -> None:
    """`assert` statements vanish under -O; the holdout check must not."""
    import subprocess
    import sys

    code = (
        "from nightschool.strategies.tasks import assert_disjoint, draw_train\n"
        "train = draw_train(3, seed=1)\n"
        "try:\n    assert_disjoint(train, train[:1])\nexcept AssertionError:\n    print('caught')\n"
    )
    out = subprocess.run([sys.executable, "-O", "-c", code], capture_output=True, text=True)
    assert out.stdout.strip() == "caught", out.stderr
