"""`nightschool strategies list | show | rollback` through typer's CliRunner on a temp home."""

from __future__ import annotations

from typing import Any

import pytest
from typer.testing import CliRunner

from nightschool.cli import app
from nightschool.config import Settings
from nightschool.errors import EXIT_CODES
from nightschool.store import Store
from nightschool.strategies import champions
from nightschool.strategies.baselines import REFINE, SAMPLE

runner = CliRunner()
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
    "summary": "PROMOTE (mcnemar-exact, n=6 p=0.0156): lift +1.0000",
}


def strategies(*args: str, input: str | None = None) -> Any:
    return runner.invoke(app, ["strategies", *args], input=input, env={"COLUMNS": "200"})


@pytest.fixture
def registry() -> list[champions.ChampionEntry]:
    """Two promotions in the temp home's database: `g1c1` (SAMPLE), then `g2c1` (REFINE)."""
    with Store.open(Settings().database_path()) as store:
        first = champions.register(
            store,
            name="g1c1",
            source=SAMPLE,
            verdict=VERDICT,
            lineage=[{"name": "g1c1", "generation": 1, "run_id": "/runs/one"}],
            run_id="/runs/one",
            record={"budget": 3},
            proven_against=None,
        )
        second = champions.register(
            store,
            name="g2c1",
            source=REFINE,
            verdict={**VERDICT, "lift": 0.5},
            lineage=[
                {"name": "g2c1", "generation": 2, "run_id": "/runs/two"},
                {"name": "g1c1", "generation": 1, "run_id": "/runs/one", "champion_id": 1},
            ],
            run_id="/runs/two",
            proven_against=first.id,
        )
    return [first, second]


def current_id() -> int | None:
    with Store.open(Settings().database_path()) as store:
        now = champions.current(store)
        return None if now is None else now.id


def test_help_lists_the_commands() -> None:
    result = strategies("--help")
    assert result.exit_code == 0
    for command in ("list", "show", "rollback"):
        assert command in result.stdout
    assert "--yes" in strategies("rollback", "--help").stdout


def test_an_empty_home_lists_nothing_and_creates_no_database() -> None:
    result = strategies("list")
    assert result.exit_code == 0 and "no strategy champion registered yet" in result.stdout
    assert not Settings().database_path().exists()
    shown = strategies("show")
    assert shown.exit_code == EXIT_CODES["usage"] and "no database" in shown.stderr


def test_list_marks_the_current_champion(registry: list[champions.ChampionEntry]) -> None:
    result = strategies("list")
    assert result.exit_code == 0, result.output
    assert "g1c1" in result.stdout and "g2c1 ★" in result.stdout
    assert "lift +0.500 [+0.540, +1.000] (n=6, p=0.0156)" in result.stdout
    assert "current: champion 2 (g2c1)" in result.stdout
    latest = strategies("list", "--limit", "1").stdout
    assert "(1 entries)" in latest and "g2c1 ★" in latest and "g1c1" not in latest


def test_show_prints_source_lineage_and_verdict(registry: list[champions.ChampionEntry]) -> None:
    result = strategies("show")  # the current one
    assert result.exit_code == 0, result.output
    assert "champion 2: g2c1 (current)" in result.stdout
    assert "Depth: one sample, then refine it" in result.stdout  # REFINE's source
    assert "g1c1 [champion 1]: gen 1 of /runs/one" in result.stdout
    assert "PROMOTE (mcnemar-exact" in result.stdout and '"p_value": 0.0156' in result.stdout
    first = strategies("show", "1")
    assert first.exit_code == 0 and "Best-of-budget" in first.stdout  # SAMPLE's source
    assert "(current)" not in first.stdout and "budget=3" in first.stdout


def test_show_of_an_unknown_id_is_misuse(registry: list[champions.ChampionEntry]) -> None:
    result = strategies("show", "99")
    assert result.exit_code == EXIT_CODES["usage"]
    assert "no strategy champion entry 99" in result.stderr
    assert strategies("show", "abc").exit_code == EXIT_CODES["usage"]  # not an int


def test_rollback_asks_first_and_declining_changes_nothing(
    registry: list[champions.ChampionEntry],
) -> None:
    declined = strategies("rollback", input="n\n")
    assert declined.exit_code == EXIT_CODES["error"]
    assert "roll back from champion 2 (g2c1) to champion 1?" in declined.stdout
    assert "nothing changed" in declined.stderr and current_id() == 2

    accepted = strategies("rollback", input="y\n")
    assert accepted.exit_code == 0, accepted.output
    assert "entry 3: now using champion 1 (g1c1)" in accepted.stdout
    assert current_id() == 1


def test_rollback_yes_by_id_and_to_the_builtin_solver(
    registry: list[champions.ChampionEntry],
) -> None:
    result = strategies("rollback", "1", "--yes")
    assert result.exit_code == 0 and current_id() == 1
    again = strategies("rollback", "1", "-y")
    assert again.exit_code == EXIT_CODES["usage"] and "already current" in again.stderr
    reset = strategies("rollback", "-y")  # champion 1 had no predecessor
    assert reset.exit_code == 0 and "now using the built-in solver" in reset.stdout
    assert current_id() is None
    nothing = strategies("rollback", "-y")
    assert nothing.exit_code == EXIT_CODES["usage"] and "nothing to roll back" in nothing.stderr
    unknown = strategies("rollback", "42", "-y")
    assert unknown.exit_code == EXIT_CODES["usage"] and "no strategy champion entry 42" in (
        unknown.stderr
    )
    listed = strategies("list")
    assert "current: the built-in solver (no champion)" in listed.stdout
    assert "→ built-in solver (no champion)" in listed.stdout
    shown = strategies("show", "3")  # the rollback entry shows the champion it restored
    assert "re-activates champion 1" in shown.stdout and "Best-of-budget" in shown.stdout
