"""Measured results for the dashboard: eval runs, learning curves, strategy champions, evolve runs.

Verdicts are the library's own: an eval run is paired task by task with the
previous completed run of the same suite and model through
`evolution.promotion_gate` (superiority, one-sided alpha 0.05); a learning
curve is rebuilt from its `eval` trajectories (`extra.learning_curve`) exactly
as `evals.curve` measured it (items an arm did not re-solve take the start's
result) and gated by `Curve.add`; champions come from the registry
(`evolution.champions.history`); evolve runs are the `report.json` files their
directories hold.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nightschool.evals import EvalRun, PassRate, list_runs, load_run, pass_at_1
from nightschool.gate import PairedResult, promotion_gate
from nightschool.strategies import champions

if TYPE_CHECKING:
    from nightschool.store import Store
    from nightschool.strategies.champions import ChampionEntry

MAX_EVOLVE_RUNS = 50
"""Evolve run directories listed (newest first by name)."""


@dataclass(frozen=True)
class EvalRow:
    """One eval run with its pass@1 interval and its verdict against the previous run."""

    run: EvalRun
    rate: PassRate
    previous_id: str | None = None
    verdict: dict[str, Any] | None = None


def _verdict_json(verdict: Any) -> dict[str, Any]:
    return {
        "promote": verdict.promote,
        "reason": verdict.reason,
        "n": verdict.n,
        "test": verdict.test,
        "lift": verdict.lift,
        "ci_low": verdict.ci_low,
        "ci_high": verdict.ci_high,
        "p_value": verdict.p_value,
        "summary": verdict.summary(),
    }


def paired_with(previous: EvalRun, run: EvalRun) -> dict[str, Any] | None:
    """The promotion gate's verdict on `run` (candidate) against `previous` (incumbent).

    Returns:
        The verdict as JSON-ready data, or None when the runs share no task.
    """
    before = {r.task_id: r for r in previous.results}
    pairs = [
        PairedResult(
            task_id=r.task_id,
            incumbent_score=float(before[r.task_id].passed),
            candidate_score=float(r.passed),
            incumbent_cost=float(before[r.task_id].tokens_in + before[r.task_id].tokens_out),
            candidate_cost=float(r.tokens_in + r.tokens_out),
        )
        for r in run.results
        if r.task_id in before
    ]
    return _verdict_json(promotion_gate(pairs)) if pairs else None


def eval_rows(store: Store, *, limit: int = 100) -> list[EvalRow]:
    """The latest eval runs, newest first, each paired with the run before it.

    "The run before it" is the previous `completed` run of the same suite and
    model (runs still going, interrupted or aborted are shown but not paired).
    """
    runs = list_runs(store, limit=limit)
    loaded: dict[str, EvalRun] = {}

    def full(run: EvalRun) -> EvalRun:
        if run.id not in loaded:
            loaded[run.id] = load_run(store, run.id)
        return loaded[run.id]

    out = []
    for i, run in enumerate(runs):
        previous = next(
            (
                older
                for older in runs[i + 1 :]
                if older.suite == run.suite
                and older.model == run.model
                and older.status == "completed"
            ),
            None,
        )
        verdict = None
        if previous is not None and run.status == "completed":
            verdict = paired_with(full(previous), full(run))
        out.append(
            EvalRow(run, pass_at_1(run.passed, run.n), previous.id if previous else None, verdict)
        )
    return out


@dataclass
class CurveView:
    """One learning curve rebuilt from the store.

    Attributes:
        session_id: the session its eval trajectories were recorded under.
        rows: one per measurement x set (`Curve.rows`: pass@1 and Wilson interval).
        verdicts: each later measurement against the start (`Curve.add`).
        items: held-out items at the start.
    """

    session_id: str
    rows: list[dict[str, Any]] = field(default_factory=list)
    verdicts: list[dict[str, Any]] = field(default_factory=list)
    items: int = 0


_CURVE_SQL = (
    "SELECT session_id, json_extract(record, '$.extra.learning_curve.checkpoint'), "
    "json_extract(record, '$.extra.learning_curve.arm'), "
    "json_extract(record, '$.extra.learning_curve.set'), json_extract(record, '$.extra.template'), "
    "COALESCE(tier, ''), json_extract(record, '$.extra.seed'), outcome, id, COALESCE(cluster, ''), "
    "CAST(json_extract(record, '$.tokens_in') AS INTEGER) "
    "+ CAST(json_extract(record, '$.tokens_out') AS INTEGER) "
    "FROM trajectories WHERE task_kind = 'eval' "
    "AND json_extract(record, '$.extra.learning_curve') IS NOT NULL ORDER BY rowid"
)


def learning_curves(store: Store) -> list[CurveView]:
    """Every learning curve whose eval trajectories are in `store` (one per session)."""
    # function-local: start-up time (evals.curve loads the dream loop, ~30 modules, ~80 ms;
    # only the evals page's curves need it)
    from nightschool.evals.curve import ARMS, Curve, HeldOut, ItemResult, Measurement

    by_session: dict[str, dict[tuple[int, str], dict[str, ItemResult]]] = {}
    for row in store.query(_CURVE_SQL):
        session, checkpoint, arm, set_name, template, tier, seed = row[:7]
        if checkpoint is None or arm not in ARMS or set_name not in ("a", "b"):
            continue
        item = ItemResult(
            task_id=f"{set_name}:{template}:{tier}:{seed}",
            set_name=str(set_name),
            cluster=str(row[9]),
            tier=str(tier),
            passed=row[7] == "passed",
            tokens=int(row[10] or 0),
            trajectory_id=str(row[8]),
            shown=0,
        )
        measured = by_session.setdefault(str(session), {})
        measured.setdefault((int(checkpoint), str(arm)), {})[item.task_id] = item
    curves = []
    for session, measured in by_session.items():
        start_items = measured.get((0, "none"))
        if not start_items:
            continue
        curve = Curve(heldout=HeldOut((), (), frozenset()))
        curve.add(Measurement(0, 0.0, 0, "none", list(start_items.values())))
        order = sorted(
            (key for key in measured if key != (0, "none")),
            key=lambda key: (key[0], ARMS.index(key[1])),
        )
        for checkpoint, arm in order:
            mine = measured[(checkpoint, arm)]
            results = [
                mine.get(task_id) or ItemResult(**{**vars(item), "reused": True})
                for task_id, item in start_items.items()
            ]
            curve.add(Measurement(checkpoint, 0.0, 0, arm, results))  # type: ignore[arg-type]
        curves.append(CurveView(session, curve.rows(), curve.verdicts, len(start_items)))
    return curves


def champion_history(store: Store) -> tuple[list[ChampionEntry], int | None]:
    """Every registry row, newest first, and the current champion id (None: baselines)."""
    rows = champions.history(store)
    current = champions.current(store)
    return rows[::-1], (current.id if current is not None else None)


@dataclass(frozen=True)
class EvolveRun:
    """One evolve run directory with a `report.json`.

    Attributes:
        key: a stable short id for URLs (hash of the resolved path).
        path: the directory.
        report: the parsed `report.json`, or None when it cannot be read.
        problem: why it cannot be read ("" when it can).
    """

    key: str
    path: Path
    report: dict[str, Any] | None
    problem: str = ""


def _run_key(path: Path) -> str:
    return hashlib.sha256(str(path).encode()).hexdigest()[:12]


def evolve_runs(roots: Sequence[Path], extra_dirs: Sequence[str | None] = ()) -> list[EvolveRun]:
    """The evolve runs under `roots` (one level) and in `extra_dirs` (registry run ids).

    Only directories holding `report.json` are listed, newest name first, at
    most `MAX_EVOLVE_RUNS`.
    """
    found: dict[Path, None] = {}
    for root in roots:
        if root.is_dir():
            for child in sorted(root.iterdir(), reverse=True):
                if (child / "report.json").is_file():
                    found[child.resolve()] = None
    for name in extra_dirs:
        if name and (Path(name) / "report.json").is_file():
            found[Path(name).resolve()] = None
    out = []
    for path in list(found)[:MAX_EVOLVE_RUNS]:
        try:
            report = json.loads((path / "report.json").read_text(encoding="utf-8"))
            problem = "" if isinstance(report, dict) else "report.json is not an object"
        except (OSError, ValueError) as exc:
            report, problem = None, f"report.json cannot be read: {exc}"
        out.append(
            EvolveRun(_run_key(path), path, report if isinstance(report, dict) else None, problem)
        )
    return out


def lineage_tree(report: dict[str, Any]) -> list[dict[str, Any]]:
    """The report's archive lineage as nested nodes: each node's dict plus `children`."""
    nodes = [dict(node) for node in report.get("lineage", []) if isinstance(node, dict)]
    names = {node.get("name") for node in nodes}
    children: dict[Any, list[dict[str, Any]]] = {}
    for node in nodes:
        parent = node.get("parent") if node.get("parent") in names else None
        children.setdefault(parent, []).append(node)
    seen: set[Any] = set()

    def grow(parent: Any) -> list[dict[str, Any]]:
        out = []
        for node in children.get(parent, []):
            if node.get("name") in seen:
                continue
            seen.add(node.get("name"))
            out.append({**node, "children": grow(node.get("name"))})
        return out

    return grow(None)
