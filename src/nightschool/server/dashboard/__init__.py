"""The dashboard: is the agent getting better, at what, from which lessons, which promotions held.

Server-rendered HTML (Jinja2 templates, one hand-written CSS file, SVG plots
drawn by matplotlib on the server; no JavaScript, nothing to build with Node)
shipped as package data. `create_dashboard(store, memory=..., api_key=...)`
builds the app that `create_app` mounts at `/dashboard` beside the API;
`standalone_app` serves it alone (`nightschool dashboard`).

Pages: overview (pass rate over time per kind and cluster, cluster x tier,
frontier and unlocked tiers, playbook size and verified share, idle phases'
last runs, current strategy champion, latest narrative), trajectories (keyset
pages with filters; viewer with tool calls, checker output, corrections
overlay), lessons and skills (lineage: source trajectory -> reflection ->
lesson -> every exposure with its outcome -> retraction; retract behind a
confirmation), evals (runs with pass@1 intervals and paired gate verdicts;
learning curves), strategies (champion registry, evolve run reports), diary.

Access: the server's API key, posted once to a login form, then an HttpOnly,
SameSite=Strict cookie (see `_auth`); without a key (loopback only) no login.
Everything is read-only except a confirmed retraction through
`SkillMemory.retract`.
"""

from nightschool.server.dashboard._app import create_dashboard, standalone_app
from nightschool.server.dashboard._auth import COOKIE_NAME, DASHBOARD_PATH, SESSION_MAX_AGE_S
from nightschool.server.dashboard._state import DashboardConfig, default_config

__all__ = [
    "COOKIE_NAME",
    "DASHBOARD_PATH",
    "SESSION_MAX_AGE_S",
    "DashboardConfig",
    "create_dashboard",
    "default_config",
    "standalone_app",
]
