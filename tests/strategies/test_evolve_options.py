"""evolve's options: a caller's contract, author and analyst models, latency, the cost
ledger, the holdout offset and runtime hooks (scripted models, real sandbox)."""

from __future__ import annotations

import hashlib
import io
import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from tests.strategies._scripted import CRITIC, CUSTOM, OFFSET, config, worker

from nightschool.llm import ScriptedModel
from nightschool.sandbox import Sandbox
from nightschool.strategies import Evolution, Node, TaskResult, select_champion
from nightschool.strategies.archive import load_checkpoint
from nightschool.strategies.author import AUTHOR_SYSTEM, author_system
from nightschool.strategies.contract import CONTRACT_TEXT
from nightschool.strategies.harness import CRITIC_PROMPT
from nightschool.strategies.hooks import PlayEvent, PlayHooks, PlayLog
from nightschool.strategies.ledger import totals
from nightschool.strategies.report import print_report, report_markdown, write_reports
from nightschool.strategies.tasks import HOLDOUT_SEED_BASE, TaskSpec, draw_holdout, draw_train

needs_bwrap = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap not installed")


@dataclass
class RecordingHook:
    """Records every hook call in order."""

    calls: list[tuple[str, PlayEvent, TaskResult | None]] = field(default_factory=list)

    def before_play(self, event: PlayEvent) -> None:
        self.calls.append(("before", event, None))

    def after_play(self, event: PlayEvent, result: TaskResult) -> None:
        self.calls.append(("after", event, result))


@dataclass
class Run:
    state: dict[str, Any]
    worker: ScriptedModel
    author: ScriptedModel
    analyst: ScriptedModel
    hook: RecordingHook
    run_dir: Path


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Run:
    """One run with every option: a caller's contract, an author and an analyst model of
    their own, a holdout offset, a recording hook."""
    if shutil.which("bwrap") is None:
        pytest.skip("bubblewrap not installed")
    cfg = config(contract=CUSTOM, holdout_offset=OFFSET)
    model = worker(cfg)
    author = ScriptedModel(lambda _m: f"```python\n{CRITIC}```", name="scripted-author")
    analyst = ScriptedModel(
        lambda _m: "the loop never checks the edge case", name="scripted-analyst"
    )
    hook = RecordingHook()
    run_dir = tmp_path_factory.mktemp("options") / "run"
    evolution = Evolution.start(
        run_dir,
        cfg,
        contract_path="/contracts/mine.txt",
        model=model,
        sandbox=Sandbox(),
        author=author,
        analyst=analyst,
        hooks=[hook],
    )
    state = evolution.run()
    write_reports(run_dir, state)
    return Run(state, model, author, analyst, hook, run_dir)


def all_plays(state: dict[str, Any]) -> list[dict[str, Any]]:
    """Every play of the run, once: generation rows, then both holdout arms."""
    plays = [r for g in state["generations"] for row in g["rows"] for r in row["results"]]
    holdout = state["holdout"]
    return plays + holdout["baseline_results"] + holdout["champion_results"]


# -- the contract ---------------------------------------------------------------


@needs_bwrap
def test_a_callers_contract_is_what_the_author_sees_and_the_run_records_it(run: Run) -> None:
    [call] = run.author.calls
    system = call.messages[0]["content"]
    assert system == author_system(CUSTOM) and CUSTOM in system
    assert CONTRACT_TEXT not in system
    digest = hashlib.sha256(CUSTOM.encode()).hexdigest()
    assert run.state["contract"] == {
        "source": "caller",
        "path": "/contracts/mine.txt",
        "sha256": digest,
    }
    assert run.state["config"]["contract"] == CUSTOM  # a resumed run keeps authoring with it
    report = json.loads((run.run_dir / "report.json").read_text())
    assert report["contract"]["sha256"] == digest and "contract" not in report["config"]
    assert f"contract: /contracts/mine.txt (sha256 {digest[:16]})" in report_markdown(run.state)


def test_without_a_contract_the_built_in_one_is_recorded(tmp_path: Path) -> None:
    cfg = config()
    evolution = Evolution.start(tmp_path / "r", cfg, model=worker(cfg), sandbox=Sandbox())
    digest = hashlib.sha256(CONTRACT_TEXT.encode()).hexdigest()
    assert evolution.state["contract"] == {"source": "built-in", "path": None, "sha256": digest}
    assert author_system() == AUTHOR_SYSTEM
    with pytest.raises(ValueError, match="empty"):
        config(contract="  \n")


# -- author and analyst models --------------------------------------------------


@needs_bwrap
def test_author_and_analyst_run_on_their_own_models(run: Run) -> None:
    systems = [c.messages[0]["content"] for c in run.worker.calls]
    assert CRITIC_PROMPT not in systems  # every critique went to the analyst
    assert not any(s.startswith("You design") for s in systems)  # authoring never hit it
    assert run.state["models"] == {
        "solver": "scripted-worker",
        "author": "scripted-author",
        "fallback": "scripted-author",
        "analyst": "scripted-analyst",
    }
    # g1c1 critiques once per play: 2 train tasks, then 6 holdout tasks.
    assert run.state["incumbent"] == "g1c1" and run.state["verdict"]["promote"] is True
    assert len(run.analyst.calls) == 2 + 6
    assert all(c.messages[0]["content"] == CRITIC_PROMPT for c in run.analyst.calls)


# -- latency and the cost ledger ------------------------------------------------


@needs_bwrap
def test_every_play_records_its_latency_and_the_verdict_reports_it(run: Run) -> None:
    plays = all_plays(run.state)
    assert len(plays) == 3 * 2 + 2 * 2 + 2 * 6
    assert all(p["seconds"] > 0 for p in plays)
    timing = run.state["verdict"]["latency"]
    assert timing == run.state["holdout"]["latency"]
    assert timing["champion"]["plays"] == timing["baseline"]["plays"] == 6
    assert 0 < timing["champion"]["median_s"] <= timing["champion"]["max_s"]
    rows = run.state["generations"][1]["rows"]
    assert all(r["seconds"] is not None and r["seconds"] > 0 for r in rows)
    markdown = report_markdown(run.state)
    assert "latency (reported, not gating): champion median" in markdown
    assert "| s/task |" in markdown


def test_latency_never_decides_the_champion() -> None:
    slow = Node("slow", "", 0, None, "candidate", score=0.5, cost=100, seconds=90.0)
    fast = Node("fast", "", 0, None, "candidate", score=0.5, cost=100, seconds=0.1)
    assert select_champion([slow, fast], "costAware").name == "slow"
    assert select_champion([slow, fast], "score").name == "slow"


@needs_bwrap
def test_one_cost_ledger_per_run_by_role_and_model(run: Run) -> None:
    ledger = run.state["ledger"]
    plays = all_plays(run.state)
    author = ledger["author"]["scripted-author"]
    assert author["calls"] == 1 and author["tokens"] > 0 and author["seconds"] >= 0
    analyst = ledger["analyst"]["scripted-analyst"]
    assert analyst["calls"] == 8 and analyst["tokens"] > 0
    spent = [u for p in plays for u in p["usage"] if u["role"] == "analyst"]
    assert sum(u["tokens"] for u in spent) == analyst["tokens"]
    work = ledger["worker"]["scripted-worker"]
    assert work["calls"] == len(run.worker.calls)
    assert set(ledger["worker"]) == {"scripted-worker"}
    assert set(ledger["analyst"]) == {"scripted-analyst"}
    # the plays' costs and the ledger's worker + analyst rows are the same tokens
    assert work["tokens"] + analyst["tokens"] == sum(p["tokens"] for p in plays)
    assert totals(ledger)["worker"]["tokens"] == work["tokens"]
    report = json.loads((run.run_dir / "report.json").read_text())
    assert report["ledger"] == ledger and report["ledger_totals"]["author"]["calls"] == 1
    markdown = report_markdown(run.state)
    assert "## cost ledger" in markdown and "| analyst | scripted-analyst | 8 |" in markdown
    out = io.StringIO()
    print_report(Console(file=out, width=140), run.state)
    assert "cost ledger" in out.getvalue() and "scripted-author" in out.getvalue()


# -- the holdout offset ---------------------------------------------------------


@needs_bwrap
def test_the_holdout_is_drawn_at_the_offset_and_recorded(run: Run) -> None:
    assert run.state["config"]["holdout_offset"] == OFFSET
    assert run.state["holdout"]["offset"] == OFFSET
    seeds = [t["seed"] for t in run.state["holdout"]["tasks"]]
    assert seeds == [HOLDOUT_SEED_BASE + OFFSET + i for i in range(6)]
    assert f"seeds at offset {OFFSET}" in report_markdown(run.state)


def test_holdouts_at_offsets_a_holdout_apart_are_disjoint() -> None:
    train = draw_train(6, seed=1)
    first = draw_holdout(8, train, seed=1, offset=0)
    second = draw_holdout(8, train, seed=1, offset=8)
    other_run = draw_holdout(8, draw_train(6, seed=2), seed=2, offset=8)
    assert not {t.task_id for t in first} & {t.task_id for t in second}
    assert not {t.task_id for t in first} & {t.task_id for t in other_run}
    assert not {t.task_id for t in train} & {t.task_id for t in first + second}
    # without an offset, two runs of one seed draw the same holdout
    assert draw_holdout(8, train, seed=1) == draw_holdout(8, train, seed=1)
    with pytest.raises(ValueError, match="offset"):
        draw_holdout(8, train, seed=1, offset=HOLDOUT_SEED_BASE - 7)
    with pytest.raises(ValueError, match="holdout_offset"):
        config(holdout=8, holdout_offset=HOLDOUT_SEED_BASE)
    assert TaskSpec.from_json(second[0].to_json()).seed == HOLDOUT_SEED_BASE + 8


# -- hooks ----------------------------------------------------------------------


@needs_bwrap
def test_hooks_bracket_every_play_in_order(run: Run) -> None:
    assert isinstance(run.hook, PlayHooks)
    calls = run.hook.calls
    assert len(calls) == 2 * len(all_plays(run.state))
    for before, after in zip(calls[::2], calls[1::2], strict=True):
        assert before[0] == "before" and after[0] == "after"  # local backend: bracketed
        assert before[1] == after[1]
        assert after[2] is not None and after[2].task_id == after[1].task_id
    events = [c[1] for c in calls[::2]]
    phases = [(e.phase, e.generation) for e in events]
    assert phases == [("train", 0)] * 6 + [("train", 1)] * 4 + [("holdout", 1)] * 12
    assert [e.strategy for e in events[:6]] == ["sample"] * 2 + ["refine"] * 2 + [
        "sample_then_refine"
    ] * 2
    assert {e.strategy for e in events[6:10]} == {"sample", "g1c1"}
    assert [e.strategy for e in events[10:]] == ["sample"] * 6 + ["g1c1"] * 6
    holdout_ids = [t["task_id"] for t in run.state["holdout"]["champion_results"]]
    assert [e.task_id for e in events[16:]] == holdout_ids


@needs_bwrap
def test_a_hook_that_raises_stops_the_run_and_keeps_the_checkpoint(tmp_path: Path) -> None:
    class Watchdog:
        def before_play(self, event: PlayEvent) -> None:
            pass

        def after_play(self, event: PlayEvent, result: TaskResult) -> None:
            raise RuntimeError(f"watchdog: stop after {event.task_id}")

    cfg = config(generations=0, train=1)
    evolution = Evolution.start(
        tmp_path / "r", cfg, model=worker(cfg), sandbox=Sandbox(), hooks=[Watchdog()]
    )
    with pytest.raises(RuntimeError, match="watchdog: stop"):
        evolution.run()
    state = load_checkpoint(tmp_path / "r")
    assert state["generations_completed"] == -1 and state["generations"] == []


def test_the_play_log_hook_appends_one_json_line_per_play(tmp_path: Path) -> None:
    log = PlayLog(tmp_path / "logs" / "plays.jsonl")
    event = PlayEvent("train", 1, "g1c1", "python_general.x/basic/3")
    result = TaskResult(event.task_id, "python_general", True, 42, 2, 1, "ok", seconds=0.25)
    log.before_play(event)
    log.after_play(event, result)
    log.after_play(event, result)
    log.close()
    lines = [
        json.loads(line)
        for line in (tmp_path / "logs" / "plays.jsonl").read_text().split("\n")
        if line
    ]
    assert len(lines) == 2
    assert lines[0]["event"]["strategy"] == "g1c1" and lines[0]["tokens"] == 42
    assert lines[0]["passed"] is True and lines[0]["seconds"] == 0.25
    assert isinstance(log, PlayHooks)
