"""The strategy-champion registry: register, current, history, rollback, append-only."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from nightschool.store import Store
from nightschool.strategies import champions
from nightschool.strategies.baselines import REFINE, SAMPLE
from nightschool.strategies.champions import ChampionError, StaleChampionError

VERDICT: dict[str, Any] = {
    "promote": True,
    "reason": "candidate-only wins 6 of 6",
    "n": 6,
    "test": "mcnemar-exact",
    "lift": 1.0,
    "ci_low": 0.54,
    "ci_high": 1.0,
    "p_value": 0.0156,
    "cost_savings": 12.0,
}


def promote(store: Store, name: str, source: str = SAMPLE, **kw: Any) -> champions.ChampionEntry:
    now = champions.current(store)
    return champions.register(
        store,
        name=name,
        source=source,
        verdict=VERDICT,
        lineage=[{"name": name, "generation": 1, "run_id": "/runs/a"}],
        run_id=kw.pop("run_id", f"/runs/{name}"),
        record={"budget": 2},
        proven_against=None if now is None else now.id,
        **kw,
    )


def test_the_migration_is_recorded(store: Store) -> None:
    assert "m010_strategy_champions" in store.applied_migrations()


def test_register_makes_current_and_history_keeps_every_row(store: Store) -> None:
    assert champions.current(store) is None and champions.history(store) == []
    first = promote(store, "g1c1")
    assert champions.current(store) == first
    assert (first.id, first.kind, first.previous, first.champion_id) == (1, "promotion", None, 1)
    assert first.source == SAMPLE and first.verdict == VERDICT and first.budget == 2
    assert first.lineage == [{"name": "g1c1", "generation": 1, "run_id": "/runs/a"}]
    second = promote(store, "g2c1", REFINE)
    assert champions.current(store) == second and second.previous == first.id
    assert [e.id for e in champions.history(store)] == [1, 2]
    assert [e.id for e in champions.history(store, limit=1)] == [2]
    assert champions.get(store, 1) == first


def test_rollback_walks_back_through_promotions_then_to_the_builtin_solver(store: Store) -> None:
    first = promote(store, "g1c1")
    second = promote(store, "g2c1", REFINE)
    before = champions.history(store)

    back = champions.rollback(store, note="bad night")
    assert (back.kind, back.restores, back.previous, back.name) == ("rollback", 1, 2, "g1c1")
    assert champions.current(store) == first and back.note == "bad night"
    assert champions.history(store)[:2] == before  # nothing rewritten

    reset = champions.rollback(store)  # the first champion had no predecessor
    assert reset.kind == "baseline" and reset.champion_id is None and reset.previous == 1
    assert champions.current(store) is None
    with pytest.raises(ChampionError, match="nothing to roll back"):
        champions.rollback(store)

    again = champions.rollback(store, second.id)  # explicitly, by id
    assert again.restores == second.id and champions.current(store) == second
    assert [e.kind for e in champions.history(store)] == [
        "promotion",
        "promotion",
        "rollback",
        "baseline",
        "rollback",
    ]
    # a rollback row as target means the champion it restored
    assert champions.rollback_target(store, back.id) == first.id
    # a baseline row as target means no champion
    assert champions.rollback(store, reset.id).kind == "baseline"


def test_bad_ids_and_already_current_are_refused(store: Store) -> None:
    with pytest.raises(ChampionError, match="no strategy champion entry 7"):
        champions.get(store, 7)
    with pytest.raises(ChampionError):
        champions.rollback(store, 7)
    first = promote(store, "g1c1")
    with pytest.raises(ChampionError, match="already current"):
        champions.rollback(store, first.id)
    assert len(champions.history(store)) == 1
    assert ChampionError("x").exit_code == 2


def test_the_table_is_append_only(store: Store) -> None:
    promote(store, "g1c1")
    with pytest.raises(sqlite3.DatabaseError, match="append-only"):
        store.connection.execute("UPDATE strategy_champions SET source = 'x'")
    with pytest.raises(sqlite3.DatabaseError, match="append-only"):
        store.connection.execute("DELETE FROM strategy_champions")
    assert champions.get(store, 1).source == SAMPLE


def test_register_refuses_what_is_not_a_proven_promotion(store: Store) -> None:
    with pytest.raises(ValueError, match="only a verdict that promotes"):
        champions.register(
            store,
            name="x",
            source=SAMPLE,
            verdict={**VERDICT, "promote": False},
            proven_against=None,
        )
    with pytest.raises(ValueError, match="breaks the contract"):
        champions.register(
            store,
            name="x",
            source="import os\ndef solve(task, harness):\n    return ''\n",
            verdict=VERDICT,
            proven_against=None,
        )
    first = promote(store, "g1c1")
    with pytest.raises(StaleChampionError) as stale:  # proven against "no champion"
        champions.register(store, name="y", source=REFINE, verdict=VERDICT, proven_against=None)
    assert (stale.value.expected, stale.value.actual) == (None, first.id)
    assert stale.value.exit_code == 1
    assert champions.history(store) == [first]


def state(
    tmp_path: Path, *, promote_it: bool = True, start: dict[str, Any] | None = None
) -> dict[str, Any]:
    archive = [
        {"name": "sample", "source": SAMPLE, "generation": 0, "parent": None},
        {"name": "g1c1", "source": REFINE, "generation": 1, "parent": "sample"},
        {"name": "g2c1", "source": REFINE, "generation": 2, "parent": "g1c1"},
    ]
    if start is not None:
        archive.append({"name": start["node"], "source": SAMPLE, "generation": 0, "parent": None})
        archive[1]["parent"] = start["node"]
    for node in archive:
        node.update(score=0.5, cost=10.0, gzip_bytes=99)
    return {
        "status": "done",
        "config": {
            "budget": 3,
            "solve_max_tokens": 256,
            "temperature": 0.2,
            "tier": "basic",
            "clusters": None,
            "seed": 5,
            "gate_mode": "superiority",
            "holdout_gate": "fixed",
        },
        "models": {"solver": "scripted"},
        "archive": archive,
        "holdout": {"champion": "g2c1", "baseline": "sample"},
        "verdict": {**VERDICT, "promote": promote_it},
        "start_champion": start,
    }


def test_register_run_registers_only_a_promotion_and_only_once(
    store: Store, tmp_path: Path
) -> None:
    refused = champions.register_run(store, tmp_path / "a", state(tmp_path, promote_it=False))
    assert refused.status == "not_promoted" and refused.entry is None
    assert champions.history(store) == []

    done = champions.register_run(store, tmp_path / "b", state(tmp_path))
    assert done.status == "registered" and done.entry is not None
    entry = done.entry
    assert (entry.name, entry.source, entry.run_id) == ("g2c1", REFINE, str(tmp_path / "b"))
    assert [i["name"] for i in entry.lineage] == ["g2c1", "g1c1", "sample"]
    assert entry.record["budget"] == 3 and entry.record["solver_model"] == "scripted"
    again = champions.register_run(store, tmp_path / "b", state(tmp_path))
    assert again.status == "already" and again.entry == entry
    assert len(champions.history(store)) == 1


def test_a_run_from_a_champion_inherits_its_lineage_and_must_still_face_it(
    store: Store, tmp_path: Path
) -> None:
    first = promote(store, "g1c1")
    start = champions.start_point(first)
    assert start is not None and start["node"] == "champion-1"
    registration = champions.register_run(store, tmp_path / "c", state(tmp_path, start=start))
    assert registration.entry is not None and registration.entry.previous == first.id
    lineage = registration.entry.lineage
    assert [i["name"] for i in lineage] == ["g2c1", "g1c1", "g1c1"]
    assert lineage[2] == {"name": "g1c1", "generation": 1, "run_id": "/runs/a", "champion_id": 1}

    champions.rollback(store)  # champion 2 -> 1; a run that started from 2 is now stale
    stale_start = champions.start_point(registration.entry)
    with pytest.raises(StaleChampionError):
        champions.register_run(store, tmp_path / "d", state(tmp_path, start=stale_start))
    assert len(champions.history(store)) == 3
