"""A learning curve interrupted and resumed gives what an uninterrupted one gives.

Real sandbox, store, playbook and gate; the model is the scripted learner of
`tests.lessons._scripted` (it passes a held-out item when shown a worked
example of its template). The CLI's `--resume`, SIGINT and refusals are tested
in `tests/evals/test_curve_cli.py`.
"""

from __future__ import annotations

import json
import random
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.lessons._scripted import learner

from nightschool.challenges import Challenge
from nightschool.dream import DreamLoop, FrontierTracker
from nightschool.errors import UserError
from nightschool.evals.curve import Curve, CurveJournal, build_heldout, run_curve
from nightschool.llm import ScriptedModel
from nightschool.playbook import SkillMemory, default_embedder
from nightschool.sandbox import Sandbox
from nightschool.solver import Solver, SolverConfig
from nightschool.store import Store

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap not installed")

PARAMS = {"tiers": ["starter"], "per_cell": 1, "seed": 0, "cycles": 3}
START_ITEMS = 16  # 8 clusters x 1 tier x 1 per cell, in each of sets (a) and (b)


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Store]:
    """SQLite only: the journal lives in the run directory, whatever the database."""
    with Store.open(tmp_path / "curve.db") as opened:
        yield opened


@pytest.fixture
def memory(db: Store) -> Iterator[SkillMemory]:
    opened = SkillMemory(db, default_embedder())
    try:
        yield opened
    finally:
        opened.close()


def _curve(
    store: Store,
    memory: SkillMemory,
    rendered: dict[str, Challenge],
    journal: CurveJournal | None,
    **hooks: Callable[..., Any],
) -> tuple[Curve, ScriptedModel]:
    model = learner(rendered)
    config = SolverConfig(max_attempts=1)
    heldout = build_heldout(["starter"], per_cell=1, seed=0)
    done = journal.cycles_done() if journal is not None else 0
    loop = DreamLoop(
        store,
        Solver(model, Sandbox(), config, playbook=memory),
        FrontierTracker(store),
        rng=random.Random(f"0:{done}"),  # as the CLI seeds a resumed dream
        exclude_templates=heldout.unseen_templates,
    )
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
        journal=journal,
        **hooks,
    )
    return curve, model


def _outcomes(curve: Curve) -> dict[tuple[int, str, str], bool]:
    return {
        (m.checkpoint, m.arm, r.task_id): r.passed for m in curve.measurements for r in m.results
    }


def _eval_solves(store: Store) -> int:
    return int(store.query("SELECT COUNT(*) FROM trajectories WHERE task_kind = 'eval'", [])[0][0])


def _journal_events(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (out / "journal.jsonl").read_text().splitlines()]


def test_interrupted_while_measuring_resumes_without_measuring_or_dreaming_again(
    tmp_path: Path, db: Store, memory: SkillMemory, rendered: dict[str, Challenge]
) -> None:
    with Store.open(tmp_path / "whole.db") as other:
        whole_memory = SkillMemory(other, default_embedder())
        try:
            whole, _ = _curve(other, whole_memory, rendered, None)  # never interrupted
        finally:
            whole_memory.close()

    out = tmp_path / "run"
    seen: list[Any] = []

    def stop_in_the_second_measurement(index: int, total: int, row: Any) -> None:
        seen.append(row)
        if len(seen) == START_ITEMS + 3:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        _curve(
            db, memory, rendered, CurveJournal(out, PARAMS, resume=False),
            on_item=stop_in_the_second_measurement,
        )  # fmt: skip
    solved_before = _eval_solves(db)

    journal = CurveJournal(out, PARAMS, resume=True)
    assert len(journal.items(0, "none")) == START_ITEMS and len(journal.items(1, "both")) == 3
    assert journal.chunk(1).done and journal.chunk(1).cycles == 3
    resumed, model = _curve(db, memory, rendered, journal)

    assert resumed.cycles == []  # the dream chunk was finished: not dreamt again
    assert not any("TRIGGER" in str(call.messages) for call in model.calls)
    both = resumed.measurements[1]
    assert len(both.results) == START_ITEMS
    solved_now = _eval_solves(db) - solved_before
    assert solved_now == sum(1 for r in both.results[3:] if not r.reused)  # the rest, once
    assert len(model.calls) == solved_now
    assert _outcomes(resumed) == _outcomes(whole)  # the same curve, verdicts and all
    assert [v["summary"] for v in resumed.verdicts] == [v["summary"] for v in whole.verdicts]
    items = [(e["checkpoint"], e["arm"], e["result"]["task_id"]) for e in _journal_events(out)
             if e["event"] == "item"]  # fmt: skip
    assert len(items) == len(set(items)) == 2 * START_ITEMS


def test_interrupted_while_dreaming_goes_on_with_the_chunks_remaining_cycles(
    tmp_path: Path, db: Store, memory: SkillMemory, rendered: dict[str, Challenge]
) -> None:
    out = tmp_path / "run"

    def stop_after_the_first_cycle(index: int, cycle: Any) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        _curve(
            db, memory, rendered, CurveJournal(out, PARAMS, resume=False),
            on_cycle=stop_after_the_first_cycle,
        )  # fmt: skip
    journal = CurveJournal(out, PARAMS, resume=True)
    assert journal.chunk(1).cycles == 1 and not journal.chunk(1).done
    indices: list[int] = []
    resumed, _ = _curve(
        db, memory, rendered, journal, on_cycle=lambda index, cycle: indices.append(index)
    )
    assert len(resumed.cycles) == 2 and indices == [1, 2]  # numbered after the first session's
    assert resumed.measurements[1].cycles == 3
    assert _eval_solves(db) >= START_ITEMS
    assert len(journal.items(0, "none")) == START_ITEMS  # the start was measured once
    events = [e["event"] for e in _journal_events(out)]
    assert events.count("cycle") == 3 and events.count("chunk") == 1


def test_the_journal_refuses_what_would_mix_two_curves(tmp_path: Path) -> None:
    out = tmp_path / "run"
    with pytest.raises(UserError, match="nothing to resume"):
        CurveJournal(out, PARAMS, resume=True)
    CurveJournal(out, PARAMS, resume=False)
    with pytest.raises(UserError, match="already holds a learning-curve run") as held:
        CurveJournal(out, PARAMS, resume=False)
    assert held.value.hint is not None and "--resume" in held.value.hint
    with pytest.raises(UserError, match=r"other settings \(per_cell\)"):
        CurveJournal(out, {**PARAMS, "per_cell": 2}, resume=True)
    (out / "journal.jsonl").write_text('{"event": "cycle", "checkpoint": 1}\n')
    with pytest.raises(UserError, match="line 1 is not a curve event"):
        CurveJournal(out, PARAMS, resume=True)
    (out / "journal.jsonl").write_text('{"event": "chunk", "checkpoint": 1}\n{"event": "cy')
    assert CurveJournal(out, PARAMS, resume=True).chunk(1).done  # a torn last line is dropped
