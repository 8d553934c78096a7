"""`nightschool dashboard`: serve the browser dashboard alone, over the home's database."""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Annotated

import typer

from nightschool.cli._common import err, errors_to_exit_codes, open_store, settings_from
from nightschool.errors import UserError

if TYPE_CHECKING:
    from nightschool.playbook import SkillMemory
    from nightschool.store import Store


def dashboard(
    host: Annotated[
        str, typer.Option(help="Address to listen on; anything but loopback needs an API key.")
    ] = "127.0.0.1",
    port: Annotated[
        int, typer.Option(min=0, max=65535, help="TCP port (0: pick a free one).")
    ] = 8001,
    retract: Annotated[
        bool,
        typer.Option(
            "--retract/--read-only",
            help="Offer the lesson retract button (behind a confirmation); --read-only hides it.",
        ),
    ] = True,
) -> None:
    """Serve the dashboard (http://127.0.0.1:8001/dashboard) over the home's database.

    It reads the database that `nightschool serve`, `dream` and `watch` write,
    and changes nothing but a lesson you retract. With NIGHTSCHOOL_API_KEY set,
    the browser logs in once with that key (kept as a signed cookie, never in a
    URL); without one it only listens on loopback.

    Ctrl-C stops it.
    """
    with errors_to_exit_codes():
        # function-local: CLI start-up time (the dashboard: numpy, scipy, fastapi, ~1.7 s)
        import uvicorn

        from nightschool.server import is_loopback
        from nightschool.server._net import bind
        from nightschool.server.dashboard import DASHBOARD_PATH, standalone_app

        settings = settings_from()
        if not settings.api_key and not is_loopback(host):
            raise UserError(
                f"refusing to listen on {host} without an API key: anyone who can reach "
                "this address could read the agent's history and retract its lessons",
                hint="set NIGHTSCHOOL_API_KEY to a long random token, or use --host 127.0.0.1",
            )
        sock = bind(host, port)
        store = open_store(settings, must_exist=True)
        memory = None
        try:
            if retract:
                memory = _playbook(store)
            with err.status("reading the database ..."):
                app = standalone_app(store, memory=memory, api_key=settings.api_key, warm=True)
            bound_host, bound_port = sock.getsockname()[:2]
            shown = f"[{bound_host}]" if ":" in str(bound_host) else str(bound_host)
            err.print(
                f"nightschool dashboard on http://{shown}:{bound_port}{DASHBOARD_PATH}/ · "
                f"database {settings.database_label()}",
                highlight=False,
                soft_wrap=True,
            )
            if settings.api_key:
                err.print("log in with NIGHTSCHOOL_API_KEY (the browser keeps a signed cookie)")
            else:
                err.print(
                    f"[yellow]no NIGHTSCHOOL_API_KEY set:[/] no login, because {host} is a "
                    "loopback address (only this machine can connect)",
                    highlight=False,
                )
            config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off")
            with contextlib.suppress(KeyboardInterrupt):
                uvicorn.Server(config).run(sockets=[sock])
        finally:
            if memory is not None:
                memory.close()
            store.close()
            sock.close()
        err.print("stopped")


def _playbook(store: Store) -> SkillMemory | None:
    """The playbook that retracts (the packaged embedder, loaded only if a write needs it).

    None, with a note, when the embedding model's packages are missing: the
    dashboard then shows lessons read-only.
    """
    # function-local: CLI start-up time (the playbook loads numpy, ~300 ms)
    from nightschool.playbook import SkillMemory

    try:
        return SkillMemory(store)
    except UserError as exc:
        err.print(f"[yellow]note:[/] lessons are read-only here: {exc.message}", highlight=False)
        return None
