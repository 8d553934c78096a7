"""`nightschool serve` (the OpenAI-compatible server) and `nightschool chat` (a terminal REPL)."""

from __future__ import annotations

import contextlib
import logging
import socket
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape

from nightschool.cli._common import (
    NO_MODEL_CHOICE,
    ModelChoice,
    err,
    errors_to_exit_codes,
    open_store,
    preflight,
    with_model_options,
)
from nightschool.cli._idle import ForegroundService, build_watchdog
from nightschool.config import Settings
from nightschool.errors import NightschoolError, UserError
from nightschool.trajectory import new_id

if TYPE_CHECKING:
    from nightschool.playbook import SkillMemory
    from nightschool.server._chat import ChatBackend, LearnedView, TurnView
    from nightschool.store import Store

SHUTDOWN_WAIT_S = 60.0
"""How long shutdown waits for background reflections before leaving them (seconds)."""

UnsandboxedOpt = Annotated[
    bool,
    typer.Option(
        "--unsandboxed", help="Run the agent's tools WITHOUT bubblewrap isolation (unsafe)."
    ),
]
LessonsOpt = Annotated[
    bool,
    typer.Option(
        "--lessons/--no-lessons",
        help="Show playbook lessons to the agent and learn new ones from corrections.",
    ),
]
SelfPlayToolsOpt = Annotated[
    bool,
    typer.Option(
        "--self-play-tools/--no-self-play-tools",
        help="Give the agent the self_play, self_play_loop and stop_self_play tools "
        "(ask it to practise; your next message stops background practice).",
    ),
]
BrowserOpt = Annotated[
    bool,
    typer.Option(
        "--browser/--no-browser",
        help="Give the agent the browser tool: headless Chromium on pages served on "
        "127.0.0.1 only (needs chromium and playwright; off by default).",
    ),
]


@dataclass
class _Agent:
    """The collaborators of a chat pipeline, closed together."""

    pipeline: Any
    store: Store
    memory: SkillMemory | None
    model_name: str
    model: Any = None
    sandbox: Any = None
    foreground: Any = None
    practice: Any = None
    browser: Any = None

    def close(self) -> None:
        if self.practice is not None and not self.practice.stop("shutting down", SHUTDOWN_WAIT_S):
            err.print("[yellow]background self-play did not stop in time[/]")
        pending = self.pipeline.pending_background()
        if pending:
            err.print(
                f"waiting up to {SHUTDOWN_WAIT_S:.0f} s for {pending} background reflection(s) ..."
            )
        try:
            self.pipeline.close(wait=True, timeout_s=SHUTDOWN_WAIT_S)
        finally:
            if self.browser is not None:
                self.browser.close()
            if self.memory is not None:
                self.memory.close()
            self.store.close()


@contextmanager
def _agent(
    settings: Settings,
    *,
    unsandboxed: bool,
    lessons: bool,
    self_play: bool = True,
    browser: bool = False,
) -> Iterator[_Agent]:
    """Check the sandbox and the model, open the store, build the pipeline; close all after.

    The pipeline's turns go through `ForegroundService` (`_Agent.foreground`);
    with `self_play` the agent has the self-play tools (`_Agent.practice`), with
    `browser` the browser tool (`_Agent.browser`).

    Raises:
        SandboxUnavailableError, ModelUnavailableError, BrowserUnavailableError:
            preflight failed (exit 3).
        UserError: bad model settings.
    """
    # function-local: CLI start-up time (the agent loads numpy and scipy, ~1.3 s)
    import nightschool.practice
    from nightschool.agent import AgentConfig, ChatPipeline
    from nightschool.agent.self_play import SelfPlayTools
    from nightschool.learn.chat_router import ChatRouter
    from nightschool.lessons.reflection import Reflector
    from nightschool.lessons.sink import PlaybookSink
    from nightschool.llm.preempt import Foreground
    from nightschool.playbook import SkillMemory

    sandbox, chat_model = preflight(settings, unsandboxed=unsandboxed, runs="the agent's tools")
    store = open_store(settings)
    memory = browsers = None
    try:
        if browser:
            # function-local: CLI start-up time (the browser tool, 10 modules, ~35 ms)
            from nightschool.browser import BrowserSessions

            browsers = BrowserSessions()  # checks chromium and playwright now
        reflector = None
        if lessons:
            with err.status("loading the skill playbook ..."):
                memory = SkillMemory(store)
                memory.retrieve("warm up the playbook index", k=1)  # loads the embedder now
            reflector = Reflector(store, chat_model, sink=PlaybookSink(memory))
        foreground = Foreground()
        practice = None
        if self_play:
            practice = SelfPlayTools(
                store,
                chat_model,
                sandbox,
                foreground=foreground,
                playbook=memory,
                temperature=settings.temperature,
                max_tokens=settings.max_tokens,
                verify_k=settings.self_play_verify_k,
                cooldown_scale=settings.idle_scale,
                home=settings.home_dir(),
                practice_root=nightschool.practice,
                verify_share=settings.verify_share,
            )
        pipeline = ChatPipeline(
            model=chat_model,
            store=store,
            sandbox=sandbox,
            memory=memory,
            reflector=reflector,
            workspace_root=settings.home_dir() / "workspaces",
            config=AgentConfig(max_tokens=settings.max_tokens, temperature=settings.temperature),
            practice=practice,
            # a saved chat router (`learn chat-router`) routes turns; none: the full loop
            router=ChatRouter.from_home(
                settings.home_dir(), memory.embedder if memory is not None else None
            ),
            browser=browsers,
        )
    except BaseException:
        if browsers is not None:
            browsers.close()
        if memory is not None:
            memory.close()
        store.close()
        raise
    service = ForegroundService(pipeline, foreground)
    agent = _Agent(
        service, store, memory, chat_model.name, chat_model, sandbox, foreground, practice, browsers
    )
    try:
        yield agent
    finally:
        agent.close()


@with_model_options
def serve(
    host: Annotated[
        str, typer.Option(help="Address to listen on; anything but loopback needs an API key.")
    ] = "127.0.0.1",
    port: Annotated[
        int, typer.Option(min=0, max=65535, help="TCP port (0: pick a free one).")
    ] = 8000,
    model_choice: ModelChoice = NO_MODEL_CHOICE,
    lessons: LessonsOpt = True,
    unsandboxed: UnsandboxedOpt = False,
    idle: Annotated[
        bool,
        typer.Option(
            "--idle/--no-idle",
            help="Run the idle watchdog: practise, reflect and write the diary while no "
            "request comes in; a request pre-empts it (`nightschool status` shows the phases).",
        ),
    ] = True,
    self_play_tools: SelfPlayToolsOpt = True,
    browser: BrowserOpt = False,
) -> None:
    """Serve the agent as an OpenAI-compatible API (POST /v1/chat/completions).

    Clients send `Authorization: Bearer $NIGHTSCHOOL_API_KEY`.

    Without NIGHTSCHOOL_API_KEY the server only starts on a loopback address.

    While idle it dreams (see `nightschool watch`); each request pre-empts that work.

    Ctrl-C stops it cleanly (background reflections get up to a minute to finish).
    """
    with errors_to_exit_codes():
        # function-local: CLI start-up time (the server loads fastapi, ~220 ms)
        import uvicorn

        from nightschool.server import create_app, is_loopback
        from nightschool.server._net import bind

        settings = model_choice.settings()
        if not settings.api_key and not is_loopback(host):
            raise UserError(
                f"refusing to listen on {host} without an API key: anyone who can reach "
                "this address could use the agent and its tools",
                hint="set NIGHTSCHOOL_API_KEY to a long random token, or use --host 127.0.0.1",
            )
        sock = bind(host, port)
        try:
            with _agent(
                settings,
                unsandboxed=unsandboxed,
                lessons=lessons,
                self_play=self_play_tools,
                browser=browser,
            ) as agent:
                foreground = agent.foreground
                dog = work = None
                if idle:
                    dog, work = build_watchdog(
                        settings,
                        agent.store,
                        agent.model,
                        agent.sandbox,
                        foreground=foreground,
                        playbook=agent.memory,
                        defer=agent.practice.running if agent.practice is not None else None,
                    )
                app = create_app(
                    agent.pipeline,
                    store=agent.store,
                    memory=agent.memory,
                    api_key=settings.api_key,
                    model_name="nightschool",
                )
                _announce(settings, agent, sock)
                logging.basicConfig(
                    level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
                )
                if dog is not None:
                    err.print(
                        f"idle watchdog on (scale {settings.idle_scale:g}); --no-idle turns it off"
                    )
                    dog.start()
                config = uvicorn.Config(app, log_level="info", access_log=True, lifespan="off")
                try:
                    # uvicorn re-raises the Ctrl-C it handled once its shutdown is done
                    with contextlib.suppress(KeyboardInterrupt):
                        uvicorn.Server(config).run(sockets=[sock])
                finally:
                    if dog is not None and work is not None:
                        foreground.close()  # idle work gives way at its next model call
                        dog.stop(timeout_s=SHUTDOWN_WAIT_S)
                        work.close()
                err.print("server stopped; closing the agent and the database ...")
        finally:
            sock.close()
        err.print("stopped")


def _announce(settings: Settings, agent: _Agent, sock: socket.socket) -> None:
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in str(host) else str(host)
    playbook = f"{agent.memory.count()} lessons" if agent.memory is not None else "off"
    err.print(
        f"nightschool serving [bold]{agent.model_name}[/] · database "
        f"{settings.database_label()} · playbook {playbook}",
        highlight=False,
        soft_wrap=True,
    )
    err.print(
        f"listening on http://{shown}:{port}/v1  (OpenAI base_url)", highlight=False, soft_wrap=True
    )
    if settings.api_key:
        err.print("API key required: Authorization: Bearer $NIGHTSCHOOL_API_KEY")
    else:
        err.print(
            f"[yellow]no NIGHTSCHOOL_API_KEY set:[/] requests are accepted without a key "
            f"because {host} is a loopback address (only this machine can connect)",
            highlight=False,
            soft_wrap=True,
        )


@with_model_options
def chat(
    server: Annotated[
        str | None,
        typer.Option(
            "--server",
            help="URL of a running `nightschool serve` (e.g. http://127.0.0.1:8000/v1); "
            "default: run the agent in this process.",
            show_default=False,
        ),
    ] = None,
    server_api_key: Annotated[
        str | None,
        typer.Option(
            "--server-api-key",
            help="API key of that server (or NIGHTSCHOOL_API_KEY).",
            envvar="NIGHTSCHOOL_API_KEY",
            show_default=False,
        ),
    ] = None,
    session: Annotated[
        str | None,
        typer.Option(help="Session id (keeps the workspace across runs); default: a new one."),
    ] = None,
    model_choice: ModelChoice = NO_MODEL_CHOICE,
    lessons: LessonsOpt = True,
    unsandboxed: UnsandboxedOpt = False,
    self_play_tools: SelfPlayToolsOpt = True,
    browser: BrowserOpt = False,
) -> None:
    """Chat with the agent in the terminal; shows when a lesson was used or learned.

    Type /exit (or Ctrl-D, Ctrl-C) to leave, /reset to start a new conversation.
    """
    with errors_to_exit_codes():
        # function-local: CLI start-up time (the server loads fastapi, ~220 ms)
        from nightschool.server._chat import HttpBackend, LocalBackend

        session_id = session or f"chat-{new_id()[:12]}"
        console = Console()
        if server is not None:
            if model_choice.given or unsandboxed:
                err.print("[yellow]note:[/] model and sandbox options are the server's; ignored")
            remote = HttpBackend(server, api_key=server_api_key, session_id=session_id)
            try:
                remote.check()
                console.print(f"chatting with {remote.base_url} · session {session_id}")
                run_repl(remote, console, _reader(console))
            finally:
                remote.close()
            return
        settings = model_choice.settings()
        with _agent(
            settings,
            unsandboxed=unsandboxed,
            lessons=lessons,
            self_play=self_play_tools,
            browser=browser,
        ) as agent:
            console.print(
                f"chatting with [bold]{agent.model_name}[/] in-process · session {session_id}"
                " · /exit to leave",
                highlight=False,
            )
            backend = LocalBackend(agent.pipeline, session_id)
            run_repl(backend, console, _reader(console))
            pending = agent.pipeline.pending_background()
            if pending:  # show what the last correction taught before leaving
                err.print(f"waiting up to {SHUTDOWN_WAIT_S:.0f} s for {pending} reflection(s) ...")
                agent.pipeline.wait_background(SHUTDOWN_WAIT_S)
                _show_learned(console, backend.poll())


def _reader(console: Console) -> Callable[[], str]:
    def read() -> str:
        return console.input("[bold cyan]you>[/] ")

    return read


def run_repl(backend: ChatBackend, console: Console, read_line: Callable[[], str]) -> None:
    """The chat loop: read a line, run a turn, print the reply and what was learned.

    Leaves on `/exit`, `/quit`, end of input (Ctrl-D) or Ctrl-C; a turn that fails
    (model down, refused request) prints the error and drops that message, so
    the conversation continues.
    """
    messages: list[Any] = []
    shown: dict[int, str] = {}
    while True:
        _show_learned(console, backend.poll())
        _show_self_play(console, backend, shown)
        try:
            line = read_line()
        except (EOFError, KeyboardInterrupt):
            console.print()
            break
        text = line.strip()
        if not text:
            continue
        if text in ("/exit", "/quit"):
            break
        if text == "/reset":
            messages = []
            console.print("[dim]new conversation[/]")
            continue
        messages.append({"role": "user", "content": line})
        try:
            with console.status("thinking ..."):
                turn = backend.send(messages)
        except KeyboardInterrupt:
            console.print("\n[yellow]interrupted[/]")
            break
        except NightschoolError as exc:
            messages.pop()
            console.print(f"[bold red]error:[/] {escape(exc.message)}", highlight=False)
            continue
        messages.append({"role": "assistant", "content": turn.reply})
        _show_turn(console, turn)
    _show_learned(console, backend.poll())
    _show_self_play(console, backend, shown)


def _show_self_play(console: Console, backend: ChatBackend, shown: dict[int, str]) -> None:
    """Print each background self-play run once when it starts and once when it stops.

    `shown` maps run number → the last state printed (updated in place).
    """
    status = getattr(backend, "self_play", lambda: None)()
    for run in (status or {}).get("runs", []):
        number, state = int(run["run"]), str(run["state"])
        if shown.get(number) == state or (state == "running" and number in shown):
            continue
        shown[number] = state
        if state == "stopped":
            console.print(
                f"[cyan]◦ background self-play run {number} stopped:[/] {run['cycles']} "
                f"cycle(s), {run['passed']} passed · {escape(str(run['stop_reason']))}",
                highlight=False,
            )
            for line in run.get("recent", [])[-3:]:
                console.print(f"[dim]  {escape(str(line))}[/]", highlight=False)
        else:
            console.print(
                f"[cyan]◦ background self-play run {number} is on[/] (your next message stops it)",
                highlight=False,
            )


def _show_turn(console: Console, turn: TurnView) -> None:
    correction = turn.correction
    if correction:
        console.print(
            f"[magenta]↺ correction:[/] the previous turn {correction['trajectory_id'][:12]} "
            f"is marked failed (overlap {correction['jaccard']:.2f}); "
            f"{correction['lessons_retracted']} lesson(s) retracted"
            + (
                "; learning from it in the background" if correction["reflection_scheduled"] else ""
            ),
            highlight=False,
        )
    console.print(f"[bold green]agent>[/] {escape(turn.reply)}", highlight=False)
    notes = []
    if turn.lessons_shown:
        notes.append(f"lessons used: {', '.join(turn.lessons_shown)}")
    if turn.tool_calls:
        notes.append(
            "tools: " + ", ".join(n + (" (error)" if e else "") for n, e in turn.tool_calls)
        )
    if turn.outcome == "failed":
        notes.append("judged failed by the verifier")
    if notes:
        console.print(f"[dim]{escape(' · '.join(notes))}[/]", highlight=False)


def _show_learned(console: Console, results: list[LearnedView]) -> None:
    for result in results:
        source = result.trajectory_id[:12]
        if result.status == "ok" and result.lesson_id:
            line = f"[green]✓ learned lesson {result.lesson_id}[/] from turn {source}: "
        elif result.status == "failed":
            line = f"[red]✗ reflection on turn {source} failed:[/] "
        else:
            line = f"[yellow]· no lesson from turn {source}:[/] "
        console.print(line + escape(result.detail[:160]), highlight=False)
