"""The dashboard's pages: overview, trajectories, lessons and lineage, evals, strategies, diary.

Every handler is a plain function (FastAPI runs it in its thread pool; the
store serialises access with its lock) and only reads, except the retraction,
which needs the form token of its confirmation page and `confirm=yes`.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException

from nightschool.challenges import CLUSTERS, TIERS
from nightschool.errors import UserError
from nightschool.evals import load_run
from nightschool.server.dashboard import _plots, _queries, _results
from nightschool.server.dashboard._aggregates import DAY_S, VERDICT_KINDS, Rate
from nightschool.server.dashboard._auth import DASHBOARD_PATH
from nightschool.server.dashboard._state import (
    SECURITY_HEADERS,
    Dashboard,
    error_page,
    read_form,
)
from nightschool.watchdog import PHASES

if TYPE_CHECKING:
    from nightschool.server.dashboard._aggregates import Counts

OUTCOMES = ("passed", "failed", "unknown")
LESSON_KINDS = ("lesson", "skill")
LESSON_STATUSES = ("active", "verified", "retracted")
MAX_ID_CHARS = 128
"""Longest id a path or filter accepts."""


def _choice(value: str | None, allowed: tuple[str, ...] | list[str], name: str) -> str | None:
    """`value` if it is one of `allowed` (None or "" for no filter); else a 400."""
    if value is None or value == "":
        return None
    if value not in allowed:
        raise HTTPException(400, f"{name} must be one of {', '.join(allowed)}")
    return value


def _page_number(value: int) -> int:
    if value < 1 or value > 1_000_000:
        raise HTTPException(400, "page must be between 1 and 1,000,000")
    return value


def _id(value: str) -> str:
    if not value or len(value) > MAX_ID_CHARS:
        raise HTTPException(404, "no such record")
    return value


def overview_context(dash: Dashboard) -> dict[str, Any]:
    """Everything the overview shows (aggregates precomputed; see `_aggregates`)."""
    counts = dash.counts.refresh()
    today = int(time.time() // DAY_S)
    week = counts.rate(kinds=VERDICT_KINDS, since_day=today - 6)
    week_before = counts.rate(kinds=VERDICT_KINDS, since_day=today - 13, until_day=today - 6)
    grid = counts.grid(kinds=VERDICT_KINDS)
    clusters = list(CLUSTERS) + sorted({c for c, _ in grid} - set(CLUSTERS))
    kinds = sorted({cell[1] for cell in counts.cells})
    return {
        "counts": counts,
        "totals": counts.by_outcome(),
        "total": counts.total(),
        "today_total": counts.total(since_day=today),
        "week": week,
        "week_before": week_before,
        "kinds": [
            (kind, counts.by_outcome(kinds=[kind]), counts.rate(kinds=[kind])) for kind in kinds
        ],
        "grid": grid,
        "empty": Rate(),
        "clusters": clusters,
        "tiers": TIERS,
        "tier_totals": {tier: counts.rate(kinds=VERDICT_KINDS, tier=tier) for tier in TIERS},
        "frontier": dash.frontier.states(),
        "playbook": _queries.playbook_stats(dash.store),
        "most_shown": _queries.most_shown(dash.store),
        "phases": _queries.phase_runs(dash.store, [spec.name for spec in PHASES]),
        "champion": _queries.current_champion(dash.store),
        "narrative": _queries.latest_narrative(dash.store),
        "version": f"{counts.version[0]}-{counts.version[1]}",
    }


def _per(window: int) -> str:
    return "per day" if window == 1 else f"over the trailing {window} days"


def _kind_plot(counts: Counts) -> bytes:
    series = counts.daily("kind", kinds=VERDICT_KINDS)
    series.update(counts.daily("all", kinds=VERDICT_KINDS))
    window = _plots.window_for(series)
    return _plots.rates_over_time(
        series,
        title=f"pass rate {_per(window)}, by task kind (band: 95% interval of all)",
        band="all",
        window=window,
    )


def _cluster_plot(counts: Counts) -> bytes:
    series = counts.daily("cluster", kinds=("selfplay",))
    window = _plots.window_for(series)
    return _plots.rates_over_time(
        series, title=f"self-play pass rate {_per(window)}, by cluster", min_n=3, window=window
    )


def add_pages(app: FastAPI, dash: Dashboard) -> None:
    """Register every page of the dashboard on `app`."""
    _add_overview(app, dash)
    _add_trajectories(app, dash)
    _add_lessons(app, dash)
    _add_results(app, dash)


def _add_overview(app: FastAPI, dash: Dashboard) -> None:
    @app.get("/", response_class=HTMLResponse)
    def overview(request: Request) -> Response:
        return dash.render(request, "overview.html", **overview_context(dash))

    @app.get("/plots/{name}.svg")
    def plot(name: str) -> Response:
        if name in ("kinds", "clusters"):
            counts = dash.counts.refresh()
            draw = _kind_plot if name == "kinds" else _cluster_plot
            svg = dash.plots.get(name, counts.version, lambda: draw(counts))
        elif name == "evals":
            version = dash.store.query("SELECT COUNT(*), SUM(n), MAX(finished_at) FROM eval_runs")
            svg = dash.plots.get(name, version[0], lambda: _eval_plot(dash))
        elif name.startswith("curve-"):
            svg = _curve_plot(dash, name)
        else:
            raise HTTPException(404, "no such plot")
        return Response(svg, media_type="image/svg+xml", headers={"cache-control": "no-cache"})

    @app.get("/diary", response_class=HTMLResponse)
    def diary(request: Request, before: int | None = None) -> Response:
        rows, older = _queries.diary_page(dash.store, before=before, size=dash.config.page_size)
        return dash.render(
            request,
            "diary.html",
            rows=rows,
            older=older,
            first=before is None,
            narrative=_queries.latest_narrative(dash.store),
        )


def _eval_plot(dash: Dashboard) -> bytes:
    rows = _results.eval_rows(dash.store, limit=30)
    points = [
        {
            "suite": row.run.suite,
            "label": f"{row.run.started_at[5:16]} {row.run.id[:6]}",
            "rate": row.rate.rate,
            "low": row.rate.low,
            "high": row.rate.high,
        }
        for row in reversed(rows)
        if row.run.n
    ]
    return _plots.eval_history(points)


def _curve_plot(dash: Dashboard, name: str) -> bytes:
    session = name.removeprefix("curve-")
    version = dash.store.query(
        "SELECT COUNT(*), MAX(rowid) FROM trajectories WHERE task_kind = 'eval'"
    )[0]

    def draw() -> bytes:
        for curve in _results.learning_curves(dash.store):
            if curve.session_id == session:
                return _plots.learning_curve(curve.rows, f"learning curve · session {session}")
        raise HTTPException(404, "no such learning curve")

    return dash.plots.get(name, version, draw)


def _trajectory_filter(
    kind: str | None,
    outcome: str | None,
    cluster: str | None,
    tier: str | None,
    session: str | None,
    corrected: str | None,
) -> _queries.TrajectoryFilter:
    for name, value in (("kind", kind), ("cluster", cluster), ("tier", tier), ("session", session)):
        if value is not None and len(value) > MAX_ID_CHARS:
            raise HTTPException(400, f"{name} is too long")
    return _queries.TrajectoryFilter(
        kind=kind or None,
        outcome=_choice(outcome, OUTCOMES, "outcome"),
        cluster=cluster or None,
        tier=tier or None,
        session=session or None,
        corrected={"yes": True, "no": False}.get(
            _choice(corrected, ("yes", "no"), "corrected") or ""
        ),
    )


def _add_trajectories(app: FastAPI, dash: Dashboard) -> None:
    @app.get("/trajectories", response_class=HTMLResponse)
    def trajectories(
        request: Request,
        kind: str | None = None,
        outcome: str | None = None,
        cluster: str | None = None,
        tier: str | None = None,
        session: str | None = None,
        corrected: str | None = None,
        older: str | None = None,
        newer: str | None = None,
    ) -> Response:
        where = _trajectory_filter(kind, outcome, cluster, tier, session, corrected)
        page = _queries.list_trajectories(
            dash.store,
            where,
            older_than=_queries.parse_cursor(older),
            newer_than=_queries.parse_cursor(newer),
            limit=dash.config.page_size,
        )
        counts = dash.counts.refresh()
        if where.only_counted_fields():
            total = counts.total(
                kinds=[where.kind] if where.kind else None,
                cluster=where.cluster,
                tier=where.tier,
                outcome=where.outcome,
            )
        else:
            total = _queries.count_trajectories(dash.store, where)
        return dash.render(
            request,
            "trajectories.html",
            page=page,
            total=total,
            where=where,
            params=where.params(),
            kinds=sorted({cell[1] for cell in counts.cells}),
            outcomes=OUTCOMES,
            clusters=CLUSTERS,
            tiers=TIERS,
        )

    @app.get("/trajectories/{trajectory_id}", response_class=HTMLResponse)
    def trajectory(request: Request, trajectory_id: str) -> Response:
        view = _queries.trajectory_view(dash.store, _id(trajectory_id))
        if view is None:
            raise HTTPException(404, f"no trajectory {trajectory_id}")
        return dash.render(request, "trajectory.html", view=view, t=view.trajectory)

    @app.get("/trajectories/{trajectory_id}/screenshots/{number}.png")
    def screenshot(trajectory_id: str, number: int) -> Response:
        found = dash.store.get_trajectory(_id(trajectory_id))
        png = _queries.screenshot_png(found, number) if found is not None else None
        if png is None:
            raise HTTPException(404, "no such screenshot")
        return Response(png, media_type="image/png", headers=SECURITY_HEADERS)


def _add_lessons(app: FastAPI, dash: Dashboard) -> None:
    @app.get("/lessons", response_class=HTMLResponse)
    def lessons(
        request: Request, kind: str = "lesson", status: str = "active", page: int = 1
    ) -> Response:
        kind = _choice(kind, LESSON_KINDS, "kind") or "lesson"
        status = _choice(status, LESSON_STATUSES, "status") or "active"
        rows, total = _queries.list_lessons(
            dash.store,
            kind=kind,
            status=status,
            page=_page_number(page),
            size=dash.config.page_size,
        )
        return dash.render(
            request,
            "lessons.html",
            rows=rows,
            total=total,
            kind=kind,
            status=status,
            page=page,
            pages=max(1, -(-total // dash.config.page_size)),
            stats=_queries.playbook_stats(dash.store),
        )

    @app.get("/lessons/{lesson_id}", response_class=HTMLResponse)
    def lesson(request: Request, lesson_id: str, page: int = 1) -> Response:
        lineage = _queries.lesson_lineage(
            dash.store, _id(lesson_id), page=_page_number(page), size=dash.config.page_size
        )
        if lineage is None:
            raise HTTPException(404, f"no lesson or skill {lesson_id}")
        shown = lineage.exposure_totals["shown"]
        return dash.render(
            request,
            "lesson.html",
            line=lineage,
            l=lineage.lesson,
            page=page,
            pages=max(1, -(-shown // dash.config.page_size)),
            can_retract=dash.memory is not None,
        )

    @app.get("/lessons/{lesson_id}/retract", response_class=HTMLResponse)
    def retract_page(request: Request, lesson_id: str) -> Response:
        return _confirm(request, _id(lesson_id), problem="", status=200)

    @app.post("/lessons/{lesson_id}/retract", response_class=HTMLResponse)
    async def retract(request: Request, lesson_id: str) -> Response:
        lesson_id = _id(lesson_id)
        form = await read_form(request, dash.config.max_form_bytes)
        if not dash.gate.check_form_token(f"retract:{lesson_id}", form.get("token", "")):
            return error_page(
                dash, request, 403, "stale or forged form: open the confirmation page again"
            )
        if form.get("confirm") != "yes":
            return await run_in_threadpool(
                _confirm, request, lesson_id, "tick the box to confirm the retraction", 400
            )
        memory = dash.memory
        if memory is None:
            return error_page(dash, request, 409, _NO_PLAYBOOK)
        reason = " ".join(form.get("reason", "").split())[:300] or "retracted from the dashboard"
        done = await run_in_threadpool(memory.retract, lesson_id, reason)
        if not done:
            return error_page(dash, request, 404, f"{lesson_id} is not in the playbook")
        return RedirectResponse(f"{DASHBOARD_PATH}/lessons/{lesson_id}", status_code=303)

    def _confirm(request: Request, lesson_id: str, problem: str, status: int) -> Response:
        lineage = _queries.lesson_lineage(dash.store, lesson_id, size=1)
        if lineage is None:
            raise HTTPException(404, f"no lesson or skill {lesson_id}")
        if lineage.lesson["archived_at"] is not None:
            return RedirectResponse(f"{DASHBOARD_PATH}/lessons/{lesson_id}", status_code=303)
        if dash.memory is None:
            return error_page(dash, request, 409, _NO_PLAYBOOK)
        return dash.render(
            request,
            "retract.html",
            http_status=status,
            l=lineage.lesson,
            totals=lineage.exposure_totals,
            token=dash.gate.form_token(f"retract:{lesson_id}"),
            problem=problem,
        )


_NO_PLAYBOOK = (
    "this server runs without a skill playbook, so the dashboard cannot retract; "
    "use `nightschool lessons retract --trajectory <id>`"
)


def _add_results(app: FastAPI, dash: Dashboard) -> None:
    @app.get("/evals", response_class=HTMLResponse)
    def evals(request: Request) -> Response:
        rows = _results.eval_rows(dash.store, limit=100)
        curves = _results.learning_curves(dash.store)
        return dash.render(request, "evals.html", rows=rows, curves=curves)

    @app.get("/evals/{run_id}", response_class=HTMLResponse)
    def eval_run(request: Request, run_id: str) -> Response:
        try:
            run = load_run(dash.store, _id(run_id))
        except UserError as exc:
            raise HTTPException(404, exc.message) from None
        row = next(
            (r for r in _results.eval_rows(dash.store, limit=500) if r.run.id == run.id), None
        )
        return dash.render(request, "eval_run.html", run=run, row=row)

    @app.get("/strategies", response_class=HTMLResponse)
    def strategies(request: Request) -> Response:
        history, current = _results.champion_history(dash.store)
        runs = _results.evolve_runs(dash.config.evolve_dirs, [row.run_id for row in history])
        keys = {str(run.path): run.key for run in runs}
        run_keys = {
            row.run_id: keys.get(str(Path(row.run_id).resolve())) for row in history if row.run_id
        }
        return dash.render(
            request,
            "strategies.html",
            history=history,
            current=current,
            runs=runs,
            run_keys=run_keys,
        )

    @app.get("/strategies/runs/{key}", response_class=HTMLResponse)
    def evolve_run(request: Request, key: str) -> Response:
        history, _ = _results.champion_history(dash.store)
        runs = _results.evolve_runs(dash.config.evolve_dirs, [row.run_id for row in history])
        run = next((r for r in runs if r.key == key), None)
        if run is None:
            raise HTTPException(404, "no such evolve run")
        tree = _results.lineage_tree(run.report) if run.report else []
        return dash.render(request, "evolve_run.html", run=run, r=run.report or {}, tree=tree)
