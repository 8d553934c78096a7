"""The strategy-champion registry: which evolved strategy is in use, and how it got there.

`nightschool evolve` writes a verdict into its run directory; this registry is
where a *promoted* strategy goes so that the rest of nightschool uses it: the
dream loop solves through it (`nightschool.strategies.champion_solver`), and the
next `evolve` run starts from it. It lives in the store's append-only table
`strategy_champions` (migration `m010_strategy_champions`): one row per change
of the current champion, never updated or deleted, so the history is complete.

Row kinds:

* `promotion`: a strategy the promotion gate promoted, with its source, its
  lineage and the gate's verdict (interval, p-value). Its row id is the
  **champion id**.
* `rollback`: re-activates an earlier promotion (`restores` = its champion id).
* `baseline`: back to the built-in behaviour (no champion: the default
  `Solver` solves, `evolve` starts from the baselines alone).

The current champion is the latest row's: a promotion's own, a rollback's
`restores`, none after `baseline`. `previous` on every row is the champion that
was current just before it was written; `rollback()` with no target follows it
from the current champion's promotion row, so repeated rollbacks walk back
through the promotions, and past the first one to `baseline`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from nightschool.errors import NightschoolError, UserError
from nightschool.store.registry import AppendOnlyRegistry, Kind, live_id
from nightschool.strategies.contract import lint_strategy

if TYPE_CHECKING:
    from nightschool.store import Store

__all__ = [
    "ChampionEntry",
    "ChampionError",
    "Registration",
    "StaleChampionError",
    "chat_strategy",
    "current",
    "get",
    "history",
    "lineage_of",
    "register",
    "register_run",
    "rollback",
    "rollback_target",
    "start_point",
]


class ChampionError(UserError):
    """The registry cannot do what was asked (unknown id, nothing to roll back); exit 2."""


class StaleChampionError(NightschoolError):
    """A promotion was proven against a champion that is no longer current (exit 1).

    Attributes:
        expected: the champion id the run compared against (None: no champion).
        actual: the champion id current now (None: no champion).
    """

    def __init__(self, message: str, *, expected: int | None, actual: int | None) -> None:
        super().__init__(
            message, hint="run `nightschool evolve` again: it starts from the current champion"
        )
        self.expected = expected
        self.actual = actual


@dataclass(frozen=True)
class ChampionEntry:
    """One row of the registry.

    Attributes:
        id: the row id (1, 2, ...); for a `promotion` it is the champion id.
        timestamp: when the row was written (UTC).
        kind: `promotion`, `rollback` or `baseline`.
        name: the strategy's name in its evolve run (`g2c1`, `sample`, ...); for
            a rollback the restored champion's; `baselines` for a baseline row.
        source: the strategy module (`def solve(task, harness)`); "" unless a promotion.
        lineage: newest first, one dict per ancestor: `name`, `generation`,
            `run_id`, and `champion_id` where an ancestor was a registered
            champion; [] unless a promotion.
        verdict: the promotion gate's verdict (`promote`, `reason`, `n`, `test`,
            `lift`, `ci_low`, `ci_high`, `p_value`, `cost_savings`, ...,
            `summary`); None unless a promotion.
        run_id: the evolve run (its directory, resolved) that promoted it, or None.
        restores: for a rollback, the champion id it re-activates; else None.
        previous: the champion id current just before this row (None: none).
        note: why (free text).
        record: settings the strategy was promoted under: `budget` (model calls
            per task), `solve_max_tokens`, `temperature`, `solver_model`,
            `tier`, `clusters`, `seed`, `train_score`, `train_cost`, `gzip_bytes`.
    """

    id: int
    timestamp: datetime
    kind: Kind
    name: str
    source: str = ""
    lineage: list[dict[str, Any]] = field(default_factory=list)
    verdict: dict[str, Any] | None = None
    run_id: str | None = None
    restores: int | None = None
    previous: int | None = None
    note: str = ""
    record: dict[str, Any] = field(default_factory=dict)

    @property
    def champion_id(self) -> int | None:
        """The champion this row makes current: own id, `restores`, or None (baseline)."""
        return live_id(self)

    @property
    def budget(self) -> int | None:
        """Model calls per task the strategy was promoted at (None: not recorded)."""
        value = self.record.get("budget")
        return int(value) if isinstance(value, int) and value > 0 else None


@dataclass(frozen=True)
class Registration:
    """What `register_run` did with one finished evolve run.

    Attributes:
        status: `registered` (new promotion row), `already` (this run's winner
            was registered before: a resumed run), `not_promoted` (the gate
            kept the incumbent, or the run has not finished).
        entry: the promotion row (None when `not_promoted`).
        reason: one line for the user.
    """

    status: Literal["registered", "already", "not_promoted"]
    entry: ChampionEntry | None
    reason: str


def _missing(entry_id: int) -> ChampionError:
    return ChampionError(
        f"no strategy champion entry {entry_id}", hint="see `nightschool strategies list`"
    )


_REGISTRY: AppendOnlyRegistry[ChampionEntry] = AppendOnlyRegistry(
    table="strategy_champions",
    columns=(
        "kind",
        "name",
        "source",
        "lineage",
        "verdict",
        "run_id",
        "restores",
        "previous",
        "note",
        "record",
    ),
    entry=ChampionEntry,
    missing=_missing,
)


def get(store: Store, entry_id: int) -> ChampionEntry:
    """The registry row `entry_id`.

    Raises:
        ChampionError: there is no such row.
    """
    return _REGISTRY.get(store, entry_id)


def history(store: Store, *, limit: int | None = None) -> list[ChampionEntry]:
    """Every row, oldest first (the last `limit` rows when given)."""
    return _REGISTRY.history(store, limit=limit)


def current(store: Store) -> ChampionEntry | None:
    """The current champion's `promotion` row (source, lineage, verdict), or None.

    None when nothing was ever registered or the latest row is a `baseline`.
    """
    return _REGISTRY.current(store)


def _said(champion_id: int | None) -> str:
    return f"champion {champion_id}" if champion_id else "the built-in baselines"


def register(
    store: Store,
    *,
    name: str,
    source: str,
    verdict: Mapping[str, Any],
    lineage: Sequence[Mapping[str, Any]] = (),
    run_id: str | None = None,
    record: Mapping[str, Any] | None = None,
    note: str = "",
    proven_against: int | None,
) -> ChampionEntry:
    """Append a `promotion` row: the strategy becomes the current champion.

    Args:
        store: the open database.
        name: the strategy's name in its run.
        source: the strategy module; must pass `lint_strategy`.
        verdict: the promotion gate's verdict as JSON-ready data; `promote` must be True.
        lineage: newest first (see `ChampionEntry.lineage`).
        run_id: the evolve run that promoted it.
        record: settings it was promoted under (see `ChampionEntry.record`).
        note: free text.
        proven_against: the champion id the gate compared it with (None: no
            champion was current, it beat the baselines). The row is written
            only if that is still the current champion, checked in the same
            transaction: a promotion never replaces a champion it did not beat.

    Returns:
        The new row (its id is the new champion id).

    Raises:
        ValueError: the verdict does not promote, or the source breaks the
            strategy contract (a caller bug: evolve lints every candidate).
        StaleChampionError: `proven_against` is no longer the current champion.
    """
    if verdict.get("promote") is not True:
        raise ValueError("only a verdict that promotes registers a champion")
    violations = lint_strategy(source)
    if violations:
        raise ValueError(f"the strategy breaks the contract: {violations[0]}")

    def stale(expected: int | None, actual: int | None) -> StaleChampionError:
        return StaleChampionError(
            f"the promotion of {name} was proven against {_said(expected)}, but "
            f"{_said(actual)} is current now: not registered",
            expected=expected,
            actual=actual,
        )

    return _REGISTRY.promote(
        store,
        None,
        proven_against=proven_against,
        stale=stale,
        name=name,
        source=source,
        lineage=list(lineage),
        verdict=dict(verdict),
        run_id=run_id,
        note=note,
        record=dict(record or {}),
    )


def rollback_target(store: Store, target: int | None = None) -> int | None:
    """The champion id `rollback(store, target)` would make current (None: no champion).

    Raises:
        ChampionError: as `rollback`.
    """
    now = current(store)
    if target is None:
        if now is None:
            raise ChampionError(
                "no strategy champion is current: nothing to roll back",
                hint="see `nightschool strategies list`",
            )
        return now.previous
    champion_id = get(store, target).champion_id
    if champion_id == (None if now is None else now.id):
        what = f"champion {champion_id}" if champion_id else "the built-in solver"
        raise ChampionError(f"{what} is already current: nothing to roll back")
    return champion_id


def rollback(store: Store, target: int | None = None, *, note: str = "") -> ChampionEntry:
    """Re-activate an earlier champion by appending a row (history is never rewritten).

    Args:
        store: the open database.
        target: a registry row id: a promotion (that champion), a rollback (the
            champion it restored) or a baseline row (no champion). None: the
            champion that was current when the current one was promoted, or
            no champion (a `baseline` row) when there was none.
        note: why (free text).

    Returns:
        The appended `rollback` (or `baseline`) row.

    Raises:
        ChampionError: `target` does not exist or is already current, or (with
            no target) no champion is current.
    """
    with store.transaction():
        champion_id = rollback_target(store, target)
        if champion_id is None:
            return _REGISTRY.restore(store, None, None, name="baselines", note=note)
        restored = get(store, champion_id)
        return _REGISTRY.restore(store, None, champion_id, name=restored.name, note=note)


def chat_strategy(store: Store) -> dict[str, Any]:
    """`extra["strategy"]` of a chat turn: who solved it, and the champion current then.

    A chat turn is solved by the agent loop (tools in the session workspace),
    not by a strategy (`solve(task, harness)` has no tools and no
    conversation), so `champion_id` is None and `name` is `agent_loop`;
    `current_champion_id` records the registry's champion at that moment (None:
    none) so turns can later be compared across champion periods. The
    agent's `self_play` tools do solve through the champion (they practise
    through `practice.open_practice`).
    """
    now = current(store)
    return {
        "champion_id": None,
        "name": "agent_loop",
        "current_champion_id": None if now is None else now.id,
    }


# -- evolve runs ----------------------------------------------------------------


def start_point(champion: ChampionEntry | None) -> dict[str, Any] | None:
    """What an evolve run stores about the champion it starts from (JSON-ready), or None.

    Keys: `id`, `name`, `node` (its name inside the run: `champion-<id>`, so it
    cannot clash with this run's `g1c1`), `source`, `lineage`.
    """
    if champion is None:
        return None
    return {
        "id": champion.id,
        "name": champion.name,
        "node": f"champion-{champion.id}",
        "source": champion.source,
        "lineage": champion.lineage,
    }


def lineage_of(state: Mapping[str, Any], name: str, run_id: str) -> list[dict[str, Any]]:
    """The lineage of archive node `name` in an evolve checkpoint `state`, newest first.

    Walks `parent` links; a node that is the run's start champion is replaced by
    that champion's registered lineage, its first entry tagged with `champion_id`.
    """
    nodes = {n["name"]: n for n in state.get("archive", [])}
    start = state.get("start_champion")
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    cursor: str | None = name
    while cursor is not None and cursor in nodes and cursor not in seen:
        seen.add(cursor)
        node = nodes[cursor]
        if start is not None and cursor == start["node"]:
            inherited = [dict(item) for item in start.get("lineage", [])] or [
                {"name": start["name"]}
            ]
            inherited[0]["champion_id"] = start["id"]
            return out + inherited
        out.append({"name": cursor, "generation": node["generation"], "run_id": run_id})
        cursor = node.get("parent")
    return out


def register_run(store: Store, run_dir: Path, state: Mapping[str, Any]) -> Registration:
    """Register a finished evolve run's winner when, and only when, the gate promoted it.

    Idempotent: a run whose winner is already registered (a resumed, finished
    run) answers `already`. The promotion counts only against the champion
    the run started from (`state["start_champion"]`, None for a run that
    started from the baselines).

    Returns:
        The `Registration`.

    Raises:
        StaleChampionError: the current champion changed since the run started
            (another promotion or a rollback); nothing is registered.
    """
    verdict = state.get("verdict")
    if state.get("status") != "done" or not verdict or verdict.get("promote") is not True:
        reason = (verdict or {}).get("reason") or f"run status {state.get('status')}"
        return Registration("not_promoted", None, f"no promotion: {reason}")
    run_id = str(run_dir.resolve())
    winner = str(state["holdout"]["champion"])
    node = next(n for n in state["archive"] if n["name"] == winner)
    with store.transaction():
        rows = _REGISTRY.where(store, "run_id = ? AND kind = 'promotion'", (run_id,))
        if rows:
            entry = rows[0]
            return Registration("already", entry, f"already registered as champion {entry.id}")
        config = state["config"]
        start = state.get("start_champion")
        entry = register(
            store,
            name=winner,
            source=node["source"],
            verdict=verdict,
            lineage=lineage_of(state, winner, run_id),
            run_id=run_id,
            record={
                "budget": config["budget"],
                "solve_max_tokens": config["solve_max_tokens"],
                "temperature": config["temperature"],
                "tier": config["tier"],
                "clusters": config["clusters"],
                "seed": config["seed"],
                "gate_mode": config["gate_mode"],
                "holdout_gate": config["holdout_gate"],
                "solver_model": state.get("models", {}).get("solver"),
                "generation": node["generation"],
                "train_score": node["score"],
                "train_cost": node["cost"],
                "gzip_bytes": node["gzip_bytes"],
            },
            note=f"promoted by evolve over {state['holdout']['baseline']}",
            proven_against=None if start is None else int(start["id"]),
        )
    return Registration("registered", entry, f"registered as champion {entry.id}")
