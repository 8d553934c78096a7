"""`nightschool eval`: run a suite, freeze a baseline, compare against it, list runs.

Exit codes: 0 success (for `compare`: no regression), 1 regression beyond
tolerance (`compare` only), 2 misuse, a model or suite mismatch, or a
corrupt baseline, 3 model server, nightschool server or sandbox unavailable
(the run is stored as `aborted`), 4 unusable database, 130 Ctrl-C (the run is
stored as `interrupted` with every finished result).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from nightschool.cli._common import (
    NO_MODEL_CHOICE,
    ModelChoice,
    err,
    errors_to_exit_codes,
    open_store,
    progress_bar,
    settings_from,
    with_model_options,
)
from nightschool.cli._eval_options import (
    ROUTES,
    RUNNERS,
    LimitOpt,
    PlaybookOpt,
    RouteOpt,
    RunnerOpt,
    SeedOpt,
    ServerKeyOpt,
    ServerOpt,
    SuiteOpt,
    TemperatureOpt,
    TimeoutOpt,
)
from nightschool.cli._parallel import (
    BackendOpt,
    RayAddressOpt,
    WorkersOpt,
    driver_playbook,
    eval_agent,
    parallel_backend,
)
from nightschool.errors import EXIT_CODES, UserError

if TYPE_CHECKING:
    from nightschool.config import Settings
    from nightschool.evals import Comparison, EvalRun, Runner
    from nightschool.store import Store

eval_app = typer.Typer(
    help="Evaluate the agent: run a suite, freeze a baseline, compare a run against it. "
    "Exit codes: 0 ok (compare: no regression), 1 regression, 2 misuse, model/suite mismatch "
    "or bad baseline file, 3 model/server/sandbox unavailable, 4 database, 130 Ctrl-C.",
    no_args_is_help=True,
)


@contextlib.contextmanager
def _inprocess_runner(
    settings: Settings, store: Store, *, playbook: bool, temperature: float, route: str = "full"
) -> Iterator[Runner]:
    # function-local: CLI start-up time (evals loads numpy and scipy, ~1.4 s)
    from nightschool.evals import inprocess_runner
    from nightschool.llm import check_model, make_model
    from nightschool.sandbox import Sandbox

    with err.status("loading the model ..."):
        model = make_model(settings)
        check_model(model)
    memory = None
    if playbook:
        # function-local: CLI start-up time (the playbook loads numpy, ~300 ms)
        from nightschool.playbook import SkillMemory

        with err.status("loading the skill playbook ..."):
            memory = SkillMemory(store)
    try:
        with inprocess_runner(
            model,
            store,
            Sandbox(),
            memory=memory,
            router=_chat_router(settings, memory, route),
            temperature=temperature,
            max_tokens=settings.max_tokens,
        ) as runner:
            yield runner
    finally:
        if memory is not None:
            memory.close()


def _chat_router(settings: Settings, memory: Any, route: str) -> Any:
    """The `ChatRouter` of `--route`: forced, or the home's saved one (`auto`)."""
    # function-local: CLI start-up time (learn loads numpy and scipy, ~1.2 s)
    from nightschool.learn.chat_router import ChatRouter

    if route not in ROUTES:
        raise UserError(f"--route must be one of {', '.join(ROUTES)}, not {route!r}")
    if route != "auto":
        return ChatRouter(forced="direct" if route == "direct" else "full")
    embedder = getattr(memory, "embedder", None)
    if embedder is None:
        # function-local: CLI start-up time (the playbook loads numpy, ~300 ms)
        from nightschool.playbook import default_embedder

        embedder = default_embedder()
    return ChatRouter.from_home(settings.home_dir(), embedder)


@contextlib.contextmanager
def _runner(
    kind: str,
    settings: Settings,
    store: Store,
    *,
    server: str | None,
    timeout_s: float,
    playbook: bool,
    temperature: float,
    route: str = "full",
) -> Iterator[Runner]:
    if kind not in RUNNERS:
        raise UserError(f"--runner must be one of {', '.join(RUNNERS)}, not {kind!r}")
    if kind != "inprocess":
        # The in-process options mean nothing to a runner that is not the agent here.
        why = {"http": "the server decides it", "stub": "the stub only echoes"}[kind]
        if not playbook:
            raise UserError(f"--no-playbook applies to the in-process runner; {why}")
        if route != "full":
            raise UserError(f"--route applies to the in-process runner; {why}")
    if kind == "inprocess":
        if server is not None:
            raise UserError("--server is only for --runner http")
        with _inprocess_runner(
            settings, store, playbook=playbook, temperature=temperature, route=route
        ) as r:
            yield r
    elif kind == "http":
        # function-local: CLI start-up time (evals loads numpy and scipy, ~1.4 s)
        from nightschool.evals import HttpRunner

        if server is None:
            raise UserError("--runner http needs --server URL (a running `nightschool serve`)")
        runner = HttpRunner(server, settings.api_key, settings.model, timeout_s)
        try:
            yield runner
        finally:
            runner.close()
    else:
        # function-local: CLI start-up time (evals loads numpy and scipy, ~1.4 s)
        from nightschool.evals import StubRunner

        if server is not None:
            raise UserError("--server is only for --runner http; the stub runner has no server")
        yield StubRunner()


def _execute(
    *,
    suite_name: str,
    runner_kind: str,
    settings: Settings,
    store: Store,
    server: str | None,
    limit: int | None,
    timeout_s: float,
    seed: int,
    playbook: bool,
    temperature: float,
    task_ids: list[str] | None = None,
    expect_model: str | None = None,
    backend_kind: str = "local",
    ray_address: str | None = None,
    workers: int = 1,
    route: str = "full",
) -> EvalRun:
    """Run a suite with a Rich progress bar; on Ctrl-C say what was kept and exit 130.

    `expect_model`: refuse before running (exit 2) when the in-process or stub model
    differs (the stub's is `stub`: a stub baseline never pairs with a real model).
    `backend_kind` `ray`: each task is an episode on Ray (in-process runner only).
    """
    # function-local: CLI start-up time (evals loads numpy and scipy, ~1.4 s)
    from nightschool.evals import get_suite, local_only, run_eval, run_eval_parallel
    from nightschool.sandbox import Sandbox

    if backend_kind != "local" and runner_kind != "inprocess":
        raise UserError(
            f"--backend {backend_kind} runs the in-process agent in its workers; "
            f"drop --runner {runner_kind}"
        )
    if backend_kind != "local" and route == "auto":
        raise UserError("--route auto runs in-process only; use --route full or direct on Ray")
    if route not in ROUTES:
        raise UserError(f"--route must be one of {', '.join(ROUTES)}, not {route!r}")
    suite = get_suite(suite_name, seed)
    sandbox = Sandbox()
    with err.status("checking the sandbox ..."):
        sandbox.check()
    progress = progress_bar()
    state: dict[str, Any] = {"run_id": None, "done": 0}
    config = {
        "playbook": playbook,
        "temperature": temperature,
        "server": server,
        "route": route,
    }
    with contextlib.ExitStack() as stack:
        backend = stack.enter_context(
            parallel_backend(backend_kind, address=ray_address, workers=workers)
        )
        if backend is not None:
            memory = stack.enter_context(driver_playbook(store, playbook))
            agent = eval_agent(
                settings, sandbox, suite_name, seed, timeout_s, temperature, route=route
            )
            runner = None
        else:
            stack.enter_context(local_only())  # model preflight included: nothing leaves here
            runner = stack.enter_context(
                _runner(
                    runner_kind,
                    settings,
                    store,
                    server=server,
                    timeout_s=timeout_s,
                    playbook=playbook,
                    temperature=temperature,
                    route=route,
                )
            )
        if expect_model is not None and runner is not None and runner.name in ("inprocess", "stub"):
            # function-local: CLI start-up time (evals loads numpy and scipy, ~1.4 s)
            from nightschool.evals import BaselineMismatchError

            if runner.model_name != expect_model:
                stub = "stub" in (expect_model, runner.model_name)
                raise BaselineMismatchError(
                    f"model mismatch: the baseline was run with {expect_model!r}, this run "
                    f"would use {runner.model_name!r}",
                    hint="a stub run pairs only with a stub baseline (--runner stub)"
                    if stub
                    else "pass the baseline's --model / --base-url",
                )
        try:
            with progress:
                bar = progress.add_task(f"{suite_name}", total=None)

                def on_start(run_id: str, total: int) -> None:
                    state["run_id"] = run_id
                    progress.update(bar, total=total, description=f"{suite_name} · {run_id[:8]}")

                def on_result(index: int, task: Any, result: Any) -> None:
                    state["done"] += 1
                    mark = "[green]✓[/]" if result.passed else "[red]✗[/]"
                    why = "" if result.passed else f" [dim]{escape((result.error or '')[:90])}[/]"
                    progress.console.print(
                        f"{mark} {escape(f'{task.id:<40}')} {result.duration_s:6.1f}s "
                        f"{result.tokens_in + result.tokens_out:6d} tok{why}",
                        highlight=False,
                    )
                    progress.advance(bar)

                if runner is None:
                    assert backend is not None
                    return run_eval_parallel(
                        suite,
                        agent,
                        store,
                        backend,
                        memory=memory,
                        limit=limit,
                        task_ids=task_ids,
                        config=config,
                        on_start=on_start,
                        on_result=on_result,
                    )
                return run_eval(
                    suite,
                    runner,
                    store,
                    sandbox,
                    limit=limit,
                    task_ids=task_ids,
                    timeout_s=timeout_s,
                    config=config,
                    on_start=on_start,
                    on_result=on_result,
                )
        except KeyboardInterrupt:
            err.print(
                f"[yellow]interrupted[/]: run {state['run_id']} is stored as interrupted with "
                f"its {state['done']} finished result(s)."
            )
            raise typer.Exit(EXIT_CODES["interrupted"]) from None


def _summary(run: EvalRun) -> Table:
    rate = run.pass_rate
    timeouts = sum(1 for r in run.results if r.error == "timeout")
    n = max(1, len(run.results))
    table = Table(title=escape(f"eval {run.suite} · run {run.id} · {run.status}"))
    for column in ("runner", "model", "passed", "pass@1 [95% Wilson CI]"):
        table.add_column(column)
    for column in ("timeouts", "tok/task", "s/task"):
        table.add_column(column, justify="right")
    table.add_row(
        escape(run.runner),
        escape(run.model),
        f"{rate.passed}/{rate.n}",
        f"{rate.rate:.3f} [{rate.low:.3f}, {rate.high:.3f}]",
        str(timeouts),
        f"{sum(r.tokens_in + r.tokens_out for r in run.results) / n:.0f}",
        f"{sum(r.duration_s for r in run.results) / n:.1f}",
    )
    return table


@with_model_options
def run(
    suite: SuiteOpt,
    runner: RunnerOpt = "inprocess",
    server: ServerOpt = None,
    api_key: ServerKeyOpt = None,
    limit: LimitOpt = None,
    timeout: TimeoutOpt = 300.0,
    seed: SeedOpt = 0,
    playbook: PlaybookOpt = True,
    temperature: TemperatureOpt = 0.0,
    model_choice: ModelChoice = NO_MODEL_CHOICE,
    backend: BackendOpt = "local",
    ray_address: RayAddressOpt = None,
    workers: WorkersOpt = 1,
    route: RouteOpt = "full",
) -> None:
    """Run a suite and store the run and every per-task result.

    With --backend ray each task runs as one Ray task (the in-process agent
    rebuilt in the worker); results are written here, in task order.
    """
    with errors_to_exit_codes():
        settings = model_choice.settings(api_key=api_key)
        store = open_store(settings)
        try:
            result = _execute(
                suite_name=suite,
                runner_kind=runner,
                settings=settings,
                store=store,
                server=server,
                limit=limit,
                timeout_s=timeout,
                seed=seed,
                playbook=playbook,
                temperature=temperature,
                backend_kind=backend,
                ray_address=ray_address,
                workers=workers,
                route=route,
            )
            Console().print(_summary(result))
            Console().print(result.pass_rate.summary(), highlight=False)
        finally:
            store.close()


@with_model_options
def freeze(
    output: Annotated[Path, typer.Option("--output", "-o", help="Baseline JSON file to write.")],
    suite: Annotated[
        str | None, typer.Option("--suite", "-s", help="Suite to run (unless --run).")
    ] = None,
    from_run: Annotated[
        str | None,
        typer.Option("--run", help="Freeze this stored run (id or prefix) instead of running."),
    ] = None,
    runner: RunnerOpt = "inprocess",
    server: ServerOpt = None,
    api_key: ServerKeyOpt = None,
    limit: LimitOpt = None,
    timeout: TimeoutOpt = 300.0,
    seed: SeedOpt = 0,
    playbook: PlaybookOpt = True,
    temperature: TemperatureOpt = 0.0,
    model_choice: ModelChoice = NO_MODEL_CHOICE,
) -> None:
    """Run a suite (or take a stored run) and write it as a baseline file."""
    with errors_to_exit_codes():
        # function-local: CLI start-up time (evals loads numpy and scipy, ~1.4 s)
        from nightschool.evals import load_run, write_baseline

        if (suite is None) == (from_run is None):
            raise UserError("give exactly one of --suite (run it now) or --run RUN_ID")
        settings = model_choice.settings(api_key=api_key)
        store = open_store(settings)
        try:
            if from_run is not None:
                result = load_run(store, from_run)
            else:
                assert suite is not None
                result = _execute(
                    suite_name=suite,
                    runner_kind=runner,
                    settings=settings,
                    store=store,
                    server=server,
                    limit=limit,
                    timeout_s=timeout,
                    seed=seed,
                    playbook=playbook,
                    temperature=temperature,
                )
            if result.status != "completed":
                err.print(f"[yellow]warning:[/] run {result.id} is {result.status}")
            path = write_baseline(result, output)
            Console().print(_summary(result))
            Console().print(f"baseline written to {escape(str(path))}", highlight=False)
        finally:
            store.close()


def _comparison_table(comparison: Comparison) -> Table:
    table = Table(title="paired comparison (baseline vs this run)")
    for column in ("", "pass@1", "95% CI (Wilson)"):
        table.add_column(column)
    for label, rate in (
        ("baseline", comparison.baseline_rate),
        ("this run", comparison.current_rate),
    ):
        table.add_row(
            label, f"{rate.rate:.3f} ({rate.passed}/{rate.n})", f"[{rate.low:.3f}, {rate.high:.3f}]"
        )
    return table


def _test_line(comparison: Comparison, alpha: float) -> str:
    """The gate's evidence phrased for a comparison (candidate = baseline, incumbent = run)."""
    verdict = comparison.verdict
    if verdict.p_value is None:
        return f"paired test: none needed ({verdict.reason})"
    return (
        f"paired test ({verdict.test}, promotion gate with candidate = baseline): "
        f"p = {verdict.p_value:.4g}, drop {verdict.lift:+.3f}, one-sided bounds at alpha "
        f"{alpha:g} [{verdict.ci_low:+.3f}, {verdict.ci_high:+.3f}]"
    )


@with_model_options
def compare_cmd(
    baseline: Annotated[Path, typer.Option("--baseline", "-b", help="Baseline JSON file.")],
    from_run: Annotated[
        str | None,
        typer.Option("--run", help="Compare this stored run (id or prefix) instead of running."),
    ] = None,
    tolerance: Annotated[
        float, typer.Option("--tolerance", help="Acceptable paired pass-rate drop (0.05 = 5 pts).")
    ] = 0.0,
    alpha: Annotated[
        float, typer.Option("--alpha", help="One-sided level of the exact McNemar test.")
    ] = 0.05,
    strict: Annotated[
        bool, typer.Option("--strict", help="Any drop beyond --tolerance fails (no test).")
    ] = False,
    runner: Annotated[
        str | None,
        typer.Option("--runner", help="inprocess, http or stub (default: the baseline's runner)."),
    ] = None,
    server: ServerOpt = None,
    api_key: ServerKeyOpt = None,
    timeout: TimeoutOpt = 300.0,
    playbook: PlaybookOpt = True,
    temperature: TemperatureOpt = 0.0,
    model_choice: ModelChoice = NO_MODEL_CHOICE,
) -> None:
    """Run the baseline's tasks again (or take --run) and pair them with the baseline.

    Exit 0: no regression; 1: regression beyond tolerance; 2: model or suite
    mismatch, or an unreadable baseline.
    """
    with errors_to_exit_codes():
        # function-local: CLI start-up time (evals loads numpy and scipy, ~1.4 s)
        from nightschool.evals import compare, load_baseline, load_run

        frozen = load_baseline(baseline)
        settings = model_choice.settings(api_key=api_key)
        store = open_store(settings)
        try:
            if from_run is not None:
                result = load_run(store, from_run)
            else:
                result = _execute(
                    suite_name=frozen.suite,
                    runner_kind=runner or str(frozen.provenance.get("runner", "inprocess")),
                    settings=settings,
                    store=store,
                    server=server,
                    limit=None,
                    timeout_s=timeout,
                    seed=frozen.seed,
                    playbook=playbook,
                    temperature=temperature,
                    task_ids=frozen.task_ids,
                    expect_model=frozen.model,
                )
            comparison = compare(frozen, result, tolerance=tolerance, alpha=alpha, strict=strict)
        finally:
            store.close()
        console = Console()
        console.print(_comparison_table(comparison))
        console.print(
            f"paired tasks {comparison.n} · baseline-only passes {comparison.baseline_only} · "
            f"run-only passes {comparison.current_only} · drop {comparison.drop:+.1%}",
            highlight=False,
        )
        if comparison.missing:
            err.print(f"[yellow]warning:[/] {len(comparison.missing)} baseline task(s) not in run")
        console.print(_test_line(comparison, alpha), highlight=False)
        if comparison.regression:
            shown = ", ".join(comparison.regressed_tasks[:10])
            console.print(
                f"[bold red]REGRESSION[/]: {escape(comparison.reason)}; regressed: {escape(shown)}"
            )
            raise typer.Exit(1)
        console.print(f"[green]no regression[/]: {comparison.reason}")


def runs(
    suite: Annotated[str | None, typer.Option("--suite", "-s", help="Only this suite.")] = None,
    limit: Annotated[int, typer.Option("--limit", "-n", min=1, help="Newest N runs.")] = 20,
) -> None:
    """List stored eval runs, newest first."""
    with errors_to_exit_codes():
        # function-local: CLI start-up time (evals loads numpy and scipy, ~1.4 s)
        from nightschool.evals import list_runs

        settings = settings_from()
        if not settings.database_exists():
            Console().print("no eval runs yet (no database).")
            return
        store = open_store(settings)
        try:
            table = Table(title="eval runs")
            for column in ("run", "started", "suite", "runner", "model", "status", "pass@1"):
                table.add_column(column)
            for item in list_runs(store, suite=suite, limit=limit):
                rate = item.pass_rate
                table.add_row(
                    item.id[:12],
                    item.started_at,
                    escape(item.suite),
                    escape(item.runner),
                    escape(item.model),
                    escape(item.status),
                    f"{rate.rate:.3f} ({rate.passed}/{rate.n}) [{rate.low:.2f}, {rate.high:.2f}]",
                )
            Console().print(table)
        finally:
            store.close()


eval_app.command("run")(run)
eval_app.command("freeze")(freeze)
eval_app.command("compare")(compare_cmd)
eval_app.command("runs")(runs)
