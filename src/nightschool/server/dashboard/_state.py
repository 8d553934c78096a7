"""What every dashboard page stands on: its settings, its state, the error page, form reading.

Split from `_app.py` so that the pages (`_pages.py`) and the app both import it
and neither imports the other.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs

from fastapi import Request
from fastapi.responses import HTMLResponse
from pydantic import BaseModel, ConfigDict, Field
from starlette.exceptions import HTTPException

from nightschool.server.dashboard._aggregates import FrontierCache, TrajectoryCounts
from nightschool.server.dashboard._auth import DASHBOARD_PATH, Gate
from nightschool.server.dashboard._plots import PlotCache

if TYPE_CHECKING:
    import jinja2

    from nightschool.playbook import SkillMemory
    from nightschool.store import Store


SECURITY_HEADERS = {
    "content-security-policy": "default-src 'none'; style-src 'self'; img-src 'self'; "
    "form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    "x-frame-options": "DENY",
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "cache-control": "no-store",
}
"""Sent with every page: no scripts at all, no framing (the retract button), no referrer."""


class DashboardConfig(BaseModel):
    """Settings of the dashboard."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    page_size: int = Field(default=50, ge=5, le=500)
    """Rows per page of the trajectory, lesson, exposure and diary lists."""
    evolve_dirs: tuple[Path, ...] = ()
    """Directories whose subdirectories are evolve runs (`<home>/evolve`); the run
    directories named by the strategy-champion registry are shown as well."""
    max_form_bytes: int = Field(default=16_384, ge=1024)
    """Largest form body the login and retract forms accept, bytes."""


def default_config(store: Store) -> DashboardConfig:
    """The config for a store in a nightschool home: evolve runs under `<home>/evolve`."""
    if str(store.path) == ":memory:":
        return DashboardConfig()
    return DashboardConfig(evolve_dirs=(Path(store.path).parent / "evolve",))


@dataclass
class Dashboard:
    """What every page handler needs: the store, the playbook, caches, templates.

    Attributes:
        store: the database (read; written only by a confirmed retraction).
        memory: the playbook that retracts, or None (retraction unavailable).
        gate: access checks.
        config: settings.
        templates: the Jinja2 environment (autoescaping on).
    """

    store: Store
    memory: SkillMemory | None
    gate: Gate
    config: DashboardConfig
    templates: jinja2.Environment
    counts: TrajectoryCounts = field(init=False)
    frontier: FrontierCache = field(init=False)
    plots: PlotCache = field(default_factory=PlotCache)

    def __post_init__(self) -> None:
        self.counts = TrajectoryCounts(self.store)
        self.frontier = FrontierCache(self.store)

    def render(
        self, request: Request, name: str, *, http_status: int = 200, **context: Any
    ) -> HTMLResponse:
        """Render template `name` with `context` plus what the layout needs."""
        page = self.templates.get_template(name).render(
            base=DASHBOARD_PATH,
            path=request.url.path,
            needs_login=self.gate.needs_login,
            logout_token=self.gate.form_token("logout"),
            **context,
        )
        return HTMLResponse(page, status_code=http_status, headers=SECURITY_HEADERS)


def route_of(request: Request) -> str:
    """The request's path below `DASHBOARD_PATH` (`/`, `/lessons/L-...`)."""
    path = request.url.path
    if not path.startswith(DASHBOARD_PATH):
        return path
    return path[len(DASHBOARD_PATH) :] or "/"


def error_page(dash: Dashboard, request: Request, status: int, message: str) -> HTMLResponse:
    """An HTML error page with `status`."""
    return dash.render(
        request, "error.html", http_status=status, status_code=status, message=message
    )


async def read_form(request: Request, limit: int) -> dict[str, str]:
    """The urlencoded form body (first value of each field), at most `limit` bytes.

    Raises:
        HTTPException: 413 over the limit, 415 for another content type.
    """
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if kind != "application/x-www-form-urlencoded":
        raise HTTPException(415, "send the form as application/x-www-form-urlencoded")
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            raise HTTPException(413, f"the form is over {limit:,} bytes")
    fields = parse_qs(body.decode("utf-8", "replace"), keep_blank_values=True, max_num_fields=20)
    return {name: values[0] for name, values in fields.items() if values}
