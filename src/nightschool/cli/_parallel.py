"""`--backend`, `--ray-address`, `--workers`: where the episodes of a command run.

Shared by `eval run`, `evolve`, `eval learning-curve` and `dream --samples`.
`--backend local` (the default) passes no backend down, so every command runs
exactly as it always did; `--backend ray` starts (or joins) Ray before the
command's egress guard and hands the library a `RayBackend` and the
picklable `SettingsResources` its workers rebuild the model and sandbox from.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING, Annotated

import typer

from nightschool.cli._common import err
from nightschool.errors import UserError

if TYPE_CHECKING:
    from nightschool.config import Settings
    from nightschool.evals import RemoteAgent
    from nightschool.parallel import Backend, SettingsResources
    from nightschool.playbook import SkillMemory
    from nightschool.sandbox import Sandbox, SandboxConfig
    from nightschool.store import Store

BackendOpt = Annotated[
    str,
    typer.Option(
        "--backend",
        help="Where episodes run: local (this process, one after the other) or ray (one Ray "
        "task per episode; pip install 'nightschool[ray]'). The database is written only here.",
    ),
]
RayAddressOpt = Annotated[
    str | None,
    typer.Option(
        "--ray-address",
        help="--backend ray: join this running cluster (auto, ray://host:10001); default: "
        "start a local Ray instance on 127.0.0.1 with --workers CPUs.",
        show_default=False,
    ),
]
WorkersOpt = Annotated[
    int,
    typer.Option(
        "--workers", min=1, help="--backend ray: episodes at once (CPUs of a local instance)."
    ),
]


@contextlib.contextmanager
def parallel_backend(
    kind: str,
    *,
    address: str | None,
    workers: int,
    unsandboxed: bool = False,
    local_only: bool = True,
) -> Iterator[Backend | None]:
    """Yield the backend asked for: None for `local`, a started `RayBackend` for `ray`.

    Enter it before `no_external_network()` (a local Ray instance cannot start
    under it); the Ray instance it started is shut down on exit, Ctrl-C included.

    Raises:
        UserError: an unknown backend, `--ray-address`/`--workers` without
            `--backend ray`, `--unsandboxed` with ray (a killed worker could leave
            unsandboxed processes behind), or Ray not installed.
        InfrastructureError: Ray could not be started or reached.
    """
    if kind == "local":
        if address is not None:
            raise UserError("--ray-address needs --backend ray")
        if workers != 1:
            raise UserError("--workers needs --backend ray (the local backend runs one at a time)")
        yield None
        return
    if kind != "ray":
        raise UserError(f"--backend must be local or ray, not {kind!r}")
    if unsandboxed:
        raise UserError(
            "--backend ray needs the bubblewrap sandbox: a worker killed mid-episode takes its "
            "sandboxed runs with it (--die-with-parent), an unsandboxed run would be orphaned",
            hint="drop --unsandboxed, or use --backend local",
        )
    # function-local: CLI start-up time (parallel, 4 modules, ~10 ms)
    from nightschool.parallel import make_backend

    with err.status("starting Ray ..." if address is None else f"joining Ray at {address} ..."):
        backend = make_backend("ray", workers=workers, address=address, local_only=local_only)
    try:
        yield backend
    finally:
        backend.close()


def remote_resources(settings: Settings, sandbox: SandboxConfig) -> SettingsResources:
    """What a worker rebuilds the model and sandbox from: `settings` without database secrets.

    The home directory is pinned (a worker resolves the same models directory);
    the database URL and the nightschool server key are dropped (a worker never
    opens the database); the model server key stays (the worker calls the model).
    An embedded model in a worker decodes with 1 thread unless `NIGHTSCHOOL_THREADS`
    says otherwise: workers decode side by side, and the per-call choice
    (`nightschool.llm._threads`) could race there (two workers that look at
    the same instant each see the other idle and both take every core, where
    llama.cpp's spin-waiting threads run tenfold slower).
    """
    # function-local: CLI start-up time (parallel, 4 modules, ~10 ms)
    from nightschool.parallel import SettingsResources

    update = {
        "home": settings.home_dir(),
        "api_key": None,
        "database_url": None,
        "threads": settings.threads or 1,
    }
    return SettingsResources(settings.model_copy(update=update), sandbox)


@contextlib.contextmanager
def driver_playbook(store: Store, playbook: bool) -> Iterator[SkillMemory | None]:
    """The playbook the driver snapshots for parallel episodes (None with --no-playbook)."""
    if not playbook:
        yield None
        return
    # function-local: CLI start-up time (the playbook loads numpy, ~300 ms)
    from nightschool.playbook import SkillMemory

    with err.status("loading the skill playbook ..."):
        memory = SkillMemory(store)
    try:
        yield memory
    finally:
        memory.close()


def eval_agent(
    settings: Settings,
    sandbox: Sandbox,
    suite: str,
    seed: int,
    timeout_s: float,
    temperature: float,
    *,
    route: str = "full",
) -> RemoteAgent:
    """The in-process agent of `_inprocess_runner`, as a spec its workers rebuild."""
    # function-local: CLI start-up time (evals loads numpy and scipy, ~1.4 s)
    from nightschool.agent import AgentConfig
    from nightschool.evals import RemoteAgent
    from nightschool.llm import make_model

    return RemoteAgent(
        resources=remote_resources(settings, sandbox.config),
        config=AgentConfig(
            max_tokens=settings.max_tokens,
            temperature=temperature,
            verify=False,
            reflect_on_correction=False,
        ),
        suite=suite,
        seed=seed,
        timeout_s=timeout_s,
        model_name=make_model(settings).name,  # builds the client only, loads nothing
        route="direct" if route == "direct" else "full",
    )
