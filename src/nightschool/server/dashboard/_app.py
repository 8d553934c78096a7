"""The dashboard app: access control, error handling, login, static files (state: `_state.py`).

`create_dashboard(store, ...)` returns an ASGI app meant to be mounted at
`DASHBOARD_PATH` (`/dashboard`): `create_app` mounts it beside the API, and
`standalone_app` serves it alone for `nightschool dashboard`. The pages live in
`_pages.py`; everything there reads, except the confirmed retraction.
"""

from __future__ import annotations

import html
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

import jinja2
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from starlette.exceptions import HTTPException

from nightschool.server.dashboard import _format
from nightschool.server.dashboard._auth import (
    COOKIE_NAME,
    DASHBOARD_PATH,
    SESSION_MAX_AGE_S,
    Gate,
    safe_next,
)
from nightschool.server.dashboard._pages import add_pages
from nightschool.server.dashboard._state import (
    SECURITY_HEADERS,
    Dashboard,
    DashboardConfig,
    default_config,
    error_page,
    read_form,
    route_of,
)

if TYPE_CHECKING:
    from nightschool.playbook import SkillMemory
    from nightschool.store import Store


OPEN_ROUTES = ("/login", "/static/")
"""Dashboard paths (below `DASHBOARD_PATH`) served without a login."""


def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("nightschool.server.dashboard", "templates"),
        autoescape=jinja2.select_autoescape(default=True, default_for_string=True),
        undefined=jinja2.ChainableUndefined,  # stored JSON (reports, verdicts) has optional keys
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(_format.FILTERS)
    env.globals.update(_format.GLOBALS)
    return env


def create_dashboard(
    store: Store,
    *,
    memory: SkillMemory | None,
    api_key: str | None,
    config: DashboardConfig | None = None,
    warm: bool = False,
) -> FastAPI:
    """Build the dashboard app, to be mounted at `DASHBOARD_PATH`.

    Args:
        store: the database to show.
        memory: the playbook whose `retract` the retract button calls; None
            shows lessons read-only.
        api_key: the server's key (the login); None: no login, loopback names only.
        config: settings; None means `default_config(store)`.
        warm: compute the overview's aggregates and frontier states now (about
            0.5 s at 100,000 trajectories) instead of on the first page load.

    Returns:
        The ASGI app. Imports its plotting modules now, so the first page
        load does not pay for them.
    """
    # function-local: a warm import when a dashboard is built (matplotlib, ~0.5 s, once per
    # process); `_plots` imports it only where it draws
    import matplotlib.figure  # noqa: F401

    dash = Dashboard(store, memory, Gate(api_key), config or default_config(store), _environment())
    if warm:
        dash.counts.refresh()
        dash.frontier.states()
    app = FastAPI(docs_url=None, redoc_url=None, openapi_url=None)
    _install_errors(app, dash)
    _install_gate(app, dash)
    _add_login(app, dash)
    _add_static(app)
    add_pages(app, dash)
    return app


def standalone_app(
    store: Store,
    *,
    memory: SkillMemory | None,
    api_key: str | None,
    config: DashboardConfig | None = None,
    warm: bool = False,
) -> FastAPI:
    """The dashboard alone (`nightschool dashboard`): `/dashboard`, `/` (a redirect), `/health`.

    Arguments as for `create_dashboard`.
    """
    outer = FastAPI(docs_url=None, redoc_url=None, openapi_url=None)

    @outer.get("/health")
    def health() -> dict[str, str]:
        return {"status": "ok"}

    @outer.get("/")
    def root() -> RedirectResponse:
        return RedirectResponse(f"{DASHBOARD_PATH}/", status_code=303)

    outer.mount(
        DASHBOARD_PATH,
        create_dashboard(store, memory=memory, api_key=api_key, config=config, warm=warm),
    )
    return outer


def _install_errors(app: FastAPI, dash: Dashboard) -> None:
    async def on_http(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        messages = {404: "no such page or record", 405: "method not allowed"}
        message = exc.detail if isinstance(exc.detail, str) else messages.get(exc.status_code, "")
        return error_page(dash, request, exc.status_code, message or "request refused")

    async def on_validation(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, RequestValidationError)
        first = exc.errors()[0] if exc.errors() else {}
        where = ".".join(str(part) for part in first.get("loc", ())[1:])
        return error_page(dash, request, 400, f"bad parameter {where}: {first.get('msg', '')}")

    app.add_exception_handler(HTTPException, on_http)
    app.add_exception_handler(RequestValidationError, on_validation)


def _install_gate(app: FastAPI, dash: Dashboard) -> None:
    @app.middleware("http")
    async def gate(request: Request, call_next: Any) -> Response:
        refusal = dash.gate.host_refusal(request)
        if refusal is not None:
            return HTMLResponse(
                f"<!doctype html><title>refused</title><p>{html.escape(refusal)}</p>",
                status_code=403,
                headers=SECURITY_HEADERS,
            )
        route = route_of(request)
        if not route.startswith(OPEN_ROUTES) and not dash.gate.authorised(request):
            if request.method in ("GET", "HEAD"):
                target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
                query = urlencode({"next": target})
                return RedirectResponse(f"{DASHBOARD_PATH}/login?{query}", status_code=303)
            return error_page(dash, request, 401, "log in first")
        response: Response = await call_next(request)
        return response


def _add_login(app: FastAPI, dash: Dashboard) -> None:
    @app.get("/login", response_class=HTMLResponse)
    def login_page(request: Request, next: str | None = None) -> Response:
        if not dash.gate.needs_login:
            return RedirectResponse(safe_next(next), status_code=303)
        return dash.render(request, "login.html", next=safe_next(next), problem="")

    @app.post("/login", response_class=HTMLResponse)
    async def login(request: Request) -> Response:
        form = await read_form(request, dash.config.max_form_bytes)
        target = safe_next(form.get("next"))
        if not dash.gate.needs_login:
            return RedirectResponse(target, status_code=303)
        if not dash.gate.check_key(form.get("key", "")):
            return dash.render(
                request, "login.html", http_status=401, next=target, problem="wrong key"
            )
        response = RedirectResponse(target, status_code=303)
        response.set_cookie(
            COOKIE_NAME,
            dash.gate.session_cookie(),
            max_age=SESSION_MAX_AGE_S,
            path=DASHBOARD_PATH,
            httponly=True,
            samesite="strict",
            secure=request.url.scheme == "https",
        )
        return response

    @app.post("/logout")
    async def logout(request: Request) -> Response:
        form = await read_form(request, dash.config.max_form_bytes)
        if not dash.gate.check_form_token("logout", form.get("token", "")):
            return error_page(dash, request, 403, "stale form; reload the page and try again")
        response = RedirectResponse(f"{DASHBOARD_PATH}/login", status_code=303)
        response.delete_cookie(COOKIE_NAME, path=DASHBOARD_PATH)
        return response


def _add_static(app: FastAPI) -> None:
    files = resources.files("nightschool.server.dashboard") / "static"

    @app.get("/static/{name}")
    def static(name: str) -> Response:
        kinds = {".css": "text/css; charset=utf-8", ".svg": "image/svg+xml", ".png": "image/png"}
        suffix = Path(name).suffix
        if name not in {entry.name for entry in files.iterdir()} or suffix not in kinds:
            raise HTTPException(404)
        return Response(
            (files / name).read_bytes(),
            media_type=kinds[suffix],
            headers={"cache-control": "public, max-age=3600", "x-content-type-options": "nosniff"},
        )
