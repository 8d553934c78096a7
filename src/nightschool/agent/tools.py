"""Sandboxed tools of the chat agent, confined to one per-session workspace.

Five tools: `run_python(code)`, `run_shell(command)`, `read_file(path)`,
`write_file(path, content)` and `list_files(path=".")`. Python and shell run in
the bubblewrap sandbox with the workspace bound at `/workspace`
(`Sandbox.run_in`); the file tools work on the host side but only inside the
workspace: absolute paths, `..` and symlinks that resolve outside it are refused.

Three more when the pipeline has a `PracticeTools` (the server and `nightschool
chat` do): `self_play`, `self_play_loop(max_cycles?)` and `stop_self_play`
(`nightschool.agent.self_play`). One more, off unless asked for (`serve
--browser`), when the workspace has a `BrowserSession`: `browser(op, ...)`, a
headless Chromium on loopback pages (`nightschool.browser`); its screenshots
are kept in `SessionWorkspace.screenshots` for the turn's trajectory.

A tool that fails (bad path, program error, timeout) returns its error as data
(`ToolOutcome.error`), which the model sees; only a broken sandbox
(`SandboxUnavailableError`, `SandboxFaultError`) raises, because that is an
infrastructure fault, not the agent's.
"""

from __future__ import annotations

import json
import logging
import os
import re
import stat
import tempfile
import textwrap
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, Protocol

from nightschool.browser import (
    BROWSER_TOOL_NAME,
    BROWSER_TOOL_SCHEMA,
    BROWSER_USAGE,
    BrowserSession,
    screenshot_record,
)
from nightschool.sandbox import ExecResult, Sandbox, python_argv
from nightschool.trajectory import ToolCall

logger = logging.getLogger("nightschool.agent")

MAX_OUTPUT_CHARS = 4000
"""Default cap on one tool result (characters; head and tail kept). About 1,000
tokens, so a few tool rounds still fit the embedded model's 4k context."""

MAX_WRITE_BYTES = 1_000_000
"""Largest file `write_file` accepts (bytes of UTF-8)."""

MAX_LIST_ENTRIES = 200
"""Entries `list_files` reports at most."""

EMPTY_DIRECTORY = "(empty: no files here)"
"""What `list_files` returns for a directory without entries."""

SILENT_PYTHON_NOTE = "(the code printed nothing: print() the values you want to see)"
"""Added to a successful `run_python` result without output (a bare expression prints nothing)."""

NO_STDIN_NOTE = (
    "(the code got no standard input here: to try a program that reads input, give "
    "sample input as `stdin`; the user's real input will be there when they run it)"
)
"""Added to a `run_python` result whose code reads standard input (`READS_STDIN`)
and was given no `stdin` (or a blank one), unless it died of another error than
`EOFError`. Why (`bench/bench_tool_leak.py`, Qwen2.5-Coder-1.5B): asked
for a program that reads its input, the agent ran it on nothing, met `EOFError`, and
answered the user as if they had the error ("To handle the EOFError ...", a program
that prints None), or reported the empty run ("The number of words in the input is
0") instead of the program."""

READS_STDIN = re.compile(r"\binput\s*\(|\bsys\s*\.\s*stdin\b|\bfileinput\b|\bopen\s*\(\s*0\b")
"""Code that reads standard input: `input(`, `sys.stdin`, `fileinput`, `open(0`."""

MAX_ARGV_CODE_BYTES = 100_000
"""Longest code `run_python` passes as `python3 -c` when `stdin` is given, bytes
(Linux caps one argument at 128 KiB, `MAX_ARG_STRLEN`); longer code is refused with
a message saying how to run it (a file and `run_shell`)."""

TOOL_SPECS: Mapping[str, str] = {
    "run_python": '{"code": "<python source>", "stdin": "<optional input>"}: run Python 3 '
    "code; its standard input is empty unless you give stdin; returns exit code and output.",
    "run_shell": '{"command": "<bash command>"}: run a bash command; returns exit code and output.',
    "read_file": '{"path": "<relative path>"}: return the text of a workspace file.',
    "write_file": '{"path": "<relative path>", "content": "<text>"}: write a workspace file.',
    "list_files": '{"path": "."}: list the files under a workspace directory.',
}
"""Tool name → one-line description with its JSON arguments (shown in the system prompt)."""

SELF_PLAY_TOOL_SPECS: Mapping[str, str] = {
    "self_play": "{}: practise one self-play challenge now (solved and checked in the "
    "sandbox) and report it; only when the user asks you to practise.",
    "self_play_loop": '{"max_cycles": "<optional number>"}: keep practising in the '
    "background until the user's next message or stop_self_play; only when the user asks.",
    "stop_self_play": "{}: stop background practice and report what it did.",
}
"""The self-play tools (offered only with a `PracticeTools`), like `TOOL_SPECS`."""

BROWSER_TOOL_SPECS: Mapping[str, str] = {
    BROWSER_TOOL_NAME: f"{BROWSER_USAGE}: a headless browser for pages served on 127.0.0.1 "
    "(goto a URL; interact: sub-actions in order; read the page's or an element's text; "
    "screenshot).",
}
"""The browser tool (offered only with a `BrowserSession`), like `TOOL_SPECS`."""

AGENT_TOOL_NAMES: frozenset[str] = (
    frozenset(TOOL_SPECS) | frozenset(SELF_PLAY_TOOL_SPECS) | frozenset(BROWSER_TOOL_SPECS)
)
"""Every tool name the agent may have: a call naming one is read as a call, and
a workspace without it answers that it is not available."""

LEAK_CHECKED_NAMES: frozenset[str] = frozenset(TOOL_SPECS) | frozenset(SELF_PLAY_TOOL_SPECS)
"""The tool names a reply's code is checked for when the browser tool is off
(`agent._leak`): `browser` is an everyday variable in Playwright and Selenium
code, and a model never shown the tool has no reason to mean it."""

MAX_SCREENSHOTS_PER_TURN = 4
"""Screenshots one turn keeps (`SessionWorkspace.screenshots`); later ones are
described but not stored (each is up to `BrowserConfig.max_screenshot_bytes`)."""


_REQUIRED: Mapping[str, tuple[str, ...]] = {
    "run_python": ("code",),
    "run_shell": ("command",),
    "read_file": ("path",),
    "write_file": ("path", "content"),
    "list_files": (),
    "self_play": (),
    "self_play_loop": (),
    "stop_self_play": (),
    BROWSER_TOOL_NAME: ("op",),
}
_OPTIONAL: Mapping[str, tuple[str, ...]] = {
    "run_python": ("stdin",),
    "list_files": ("path",),
    "self_play_loop": ("max_cycles",),
    BROWSER_TOOL_NAME: ("url", "actions", "stop_on_error", "selector"),
}


def _function_tool(name: str, description: str, **properties: str) -> dict[str, Any]:
    """An OpenAI function tool whose parameters are strings, required unless `_OPTIONAL`.

    An empty `required` list is left out: Qwen2.5-Coder-0.5B copied it into its
    arguments (`{"path": ".", "required": []}`, measured).
    """
    parameters: dict[str, Any] = {
        "type": "object",
        "properties": {
            key: {"type": "string", "description": text} for key, text in properties.items()
        },
    }
    if _REQUIRED[name]:
        parameters["required"] = list(_REQUIRED[name])
    return {
        "type": "function",
        "function": {"name": name, "description": description, "parameters": parameters},
    }


TOOL_SCHEMAS: tuple[dict[str, Any], ...] = (
    _function_tool(
        "run_python",
        "Run Python 3 code in the workspace; returns the exit code and output "
        "(print what you want to see). Its standard input is empty unless you give stdin.",
        code="Python source",
        stdin="text for the code to read on standard input (optional)",
    ),
    _function_tool(
        "run_shell",
        "Run a bash command in the workspace; returns the exit code and output.",
        command="bash command",
    ),
    _function_tool(
        "read_file", "Return the text of a workspace file.", path="workspace-relative path"
    ),
    _function_tool(
        "write_file",
        "Write a text file in the workspace.",
        path="workspace-relative path",
        content="the file's text",
    ),
    _function_tool(
        "list_files",
        "List the files under a workspace directory.",
        path="workspace-relative directory (default .)",
    ),
)
"""The same tools as OpenAI function tools (`ToolSpec`s), for native tool calling."""

SELF_PLAY_TOOL_SCHEMAS: tuple[dict[str, Any], ...] = (
    _function_tool(
        "self_play",
        "Practise one self-play challenge now (solved and checked in the sandbox) and "
        "report the result. Only when the user asks you to practise.",
    ),
    _function_tool(
        "self_play_loop",
        "Keep practising self-play challenges in the background until the user's next "
        "message or stop_self_play. Only when the user asks you to practise.",
        max_cycles="most cycles to run (optional; default: until stopped)",
    ),
    _function_tool("stop_self_play", "Stop background practice and report what it did."),
)
"""`SELF_PLAY_TOOL_SPECS` as OpenAI function tools."""


class PracticeTools(Protocol):
    """What runs the self-play tools (`nightschool.agent.self_play.SelfPlayTools`)."""

    def call(self, name: str, arguments: Mapping[str, Any]) -> ToolOutcome:
        """Run self-play tool `name` with the model's `arguments`.

        Raises:
            InfrastructureError: the model or the sandbox failed.
        """
        ...


def sandbox_can_reach(path: Path, sandbox: Sandbox) -> bool:
    """Whether the sandbox can bind `path` as its workspace.

    Run as root, the sandbox starts bubblewrap as uid 65534, which must be able
    to search every ancestor directory of the workspace (a root-owned 0o700
    home such as `/root` blocks it: bubblewrap then fails with "Can't find
    source path ... Permission denied").
    """
    if not sandbox.isolated or os.geteuid() != 0:
        return True
    for ancestor in [path.resolve(), *path.resolve().parents]:
        if not ancestor.exists():
            continue
        if not ancestor.stat().st_mode & stat.S_IXOTH:
            return False
    return True


def usable_workspace_root(root: Path, sandbox: Sandbox) -> Path:
    """`root` (created if absent) when the sandbox can reach it, else a private temp dir.

    The fallback is a fresh `mkdtemp` directory (mode 0o711) under the system
    temp dir, logged as a warning: session workspaces then last as long as the
    process that chose it.
    """
    root.mkdir(parents=True, exist_ok=True)
    if sandbox_can_reach(root, sandbox):
        return root
    fallback = Path(tempfile.mkdtemp(prefix="nightschool-workspaces-"))
    fallback.chmod(0o711)
    logger.warning(
        "workspace root %s is not reachable by the sandbox user (a parent is not "
        "world-searchable); using %s for this process",
        root,
        fallback,
    )
    return fallback


class PathRefusedError(ValueError):
    """A tool path would leave the workspace (or is not a usable relative path)."""


@dataclass(frozen=True)
class ToolOutcome:
    """What one tool call returned: text for the model, and an error when it failed.

    Attributes:
        result: output text (capped), or None when there is none.
        error: why the call failed (bad arguments, refused path, non-zero exit,
            timeout), or None on success.
    """

    result: str | None
    error: str | None = None

    def for_model(self) -> str:
        """The text shown to the model for this call."""
        if self.error and self.result:
            return f"ERROR: {self.error}\n{self.result}"
        if self.error:
            return f"ERROR: {self.error}"
        return self.result if self.result else "(no output)"


def cap_text(text: str, limit: int) -> str:
    """Cut `text` to about `limit` characters, keeping its head and its tail."""
    if len(text) <= limit:
        return text
    head = max(limit // 3, 1)
    tail = max(limit - head - 40, 1)
    cut = len(text) - head - tail
    return f"{text[:head]}\n... [{cut} characters cut] ...\n{text[-tail:]}"


def _describe(result: ExecResult, limit: int) -> ToolOutcome:
    parts = [f"exit code: {result.returncode}"]
    if result.stdout.strip():
        parts.append(f"stdout:\n{result.stdout.rstrip()}")
    if result.stderr.strip():
        parts.append(f"stderr:\n{result.stderr.rstrip()}")
    text = cap_text("\n".join(parts), limit)
    if result.timed_out:
        return ToolOutcome(text, f"timed out after {result.duration_s:.1f}s")
    if result.returncode != 0:
        lines = result.stderr.strip().splitlines() or result.stdout.strip().splitlines()
        last = lines[-1][:300] if lines else "no output"
        return ToolOutcome(text, f"exit code {result.returncode}: {last}")
    return ToolOutcome(text)


class SessionWorkspace:
    """One session's workspace directory and the tools that act in it.

    Args:
        path: the workspace directory; created (mode 0o777, so the sandbox's
            unprivileged uid can write) if absent.
        sandbox: runs `run_python` and `run_shell`.
        timeout_s: wall-clock limit per sandboxed run, seconds.
        max_output_chars: cap on each tool result, characters.
        practice: runs the self-play tools; None leaves them out.
        browser: the session's browser (`browser` tool); None leaves it out.
    """

    def __init__(
        self,
        path: Path,
        sandbox: Sandbox,
        *,
        timeout_s: float = 20.0,
        max_output_chars: int = MAX_OUTPUT_CHARS,
        practice: PracticeTools | None = None,
        browser: BrowserSession | None = None,
    ) -> None:
        path.mkdir(parents=True, exist_ok=True)
        path.chmod(0o777)
        self.path = path
        self.root = path.resolve()
        self.sandbox = sandbox
        self.timeout_s = timeout_s
        self.max_output_chars = max_output_chars
        self._tools: dict[str, Callable[..., ToolOutcome]] = {
            "run_python": self.run_python,
            "run_shell": self.run_shell,
            "read_file": self.read_file,
            "write_file": self.write_file,
            "list_files": self.list_files,
        }
        self.practice = practice
        self.browser = browser
        if browser is not None:
            self._tools[BROWSER_TOOL_NAME] = self.use_browser
        self.specs: dict[str, str] = tool_specs(
            practice=practice is not None, browser=browser is not None
        )
        """Tool name → one-line description (`TOOL_SPECS`, the self-play tools, the browser)."""
        self.names: tuple[str, ...] = tuple(self.specs)
        """Names of the tools, in prompt order."""
        self.schemas: tuple[dict[str, Any], ...] = (
            *TOOL_SCHEMAS,
            *(SELF_PLAY_TOOL_SCHEMAS if practice is not None else ()),
            *((BROWSER_TOOL_SCHEMA,) if browser is not None else ()),
        )
        """The tools as OpenAI function tools, in prompt order."""
        self.screenshots: list[dict[str, Any]] = []
        """The browser's screenshots of this workspace object's calls (one turn), as
        `screenshot_record`s, at most `MAX_SCREENSHOTS_PER_TURN`."""

    def resolve(self, path: str) -> Path:
        """Map a workspace-relative path to a host path inside the workspace.

        Raises:
            PathRefusedError: empty, absolute, containing `..` or a NUL byte, or
                resolving (through symlinks) outside the workspace.
        """
        if not isinstance(path, str) or not path.strip():
            raise PathRefusedError("path must be a non-empty relative path")
        if "\0" in path:
            raise PathRefusedError("path contains a NUL byte")
        pure = PurePosixPath(path.strip())
        if pure.is_absolute() or path.strip().startswith("~"):
            raise PathRefusedError(f"absolute paths are not allowed: {path!r}")
        if ".." in pure.parts:
            raise PathRefusedError(f"'..' is not allowed in paths: {path!r}")
        target = (self.root / pure).resolve()
        if target != self.root and self.root not in target.parents:
            raise PathRefusedError(f"path leaves the workspace (symlink?): {path!r}")
        return target

    # -- tools ------------------------------------------------------------------

    def run_python(self, code: str, stdin: str | None = None) -> ToolOutcome:
        """Run Python 3 `code` in the sandbox, working dir = the workspace.

        The code is dedented first (a model often indents the whole block,
        which Python refuses: `IndentationError: unexpected indent`, measured
        on Qwen2.5-Coder-1.5B). Without `stdin` the code is fed on the
        interpreter's standard input (`python3 -`), so the program itself reads
        nothing there: code that reads it (`READS_STDIN`) without `stdin`, or
        with a blank one, gets `NO_STDIN_NOTE` added to its result, unless it
        died of another error than `EOFError` (that error is the news: the
        note made the 1.5B blame the input for a `TypeError`). With `stdin`
        the code runs as `python3 -c` and reads `stdin` (code over
        `MAX_ARGV_CODE_BYTES` is refused with a message). A run that succeeds
        without any output gets `SILENT_PYTHON_NOTE` added.

        Raises:
            SandboxUnavailableError, SandboxFaultError: the sandbox itself failed.
        """
        code = textwrap.dedent(code)
        if stdin is None:
            argv, feed = python_argv("-"), code
        elif len(code.encode("utf-8", errors="replace")) > MAX_ARGV_CODE_BYTES or "\0" in code:
            return ToolOutcome(
                None,
                f"code too long (over {MAX_ARGV_CODE_BYTES} bytes) or holding a NUL byte, so it "
                "cannot run with stdin: write it to a file with write_file and run it with "
                "run_shell",
            )
        else:
            argv, feed = [*python_argv("-c"), code], stdin
        result = self.sandbox.run_in(self.path, argv, stdin=feed, timeout_s=self.timeout_s)
        outcome = _describe(result, self.max_output_chars)
        other_error = result.returncode != 0 and "EOFError" not in result.stderr
        if not (stdin or "").strip() and READS_STDIN.search(code) and not other_error:
            return ToolOutcome(f"{outcome.result}\n{NO_STDIN_NOTE}", outcome.error)
        if outcome.error is None and not result.stdout.strip() and not result.stderr.strip():
            # Measured: Qwen2.5-Coder-0.5B ran `2**100` and, seeing only the exit code,
            # ran it again until the steps ran out.
            return ToolOutcome(f"{outcome.result}\n{SILENT_PYTHON_NOTE}")
        return outcome

    def run_shell(self, command: str) -> ToolOutcome:
        """Run `bash -c command` in the sandbox, working dir = the workspace.

        Raises:
            SandboxUnavailableError, SandboxFaultError: the sandbox itself failed.
        """
        result = self.sandbox.run_in(self.path, ["bash", "-c", command], timeout_s=self.timeout_s)
        return _describe(result, self.max_output_chars)

    def read_file(self, path: str) -> ToolOutcome:
        """Return the text of a workspace file (capped; undecodable bytes replaced)."""
        target = self.resolve(path)
        if not target.exists():
            return ToolOutcome(None, f"no such file: {path}")
        if not target.is_file():
            return ToolOutcome(None, f"not a regular file: {path}")
        with target.open("rb") as handle:
            data = handle.read(self.max_output_chars * 4 + 1)
        return ToolOutcome(cap_text(data.decode("utf-8", errors="replace"), self.max_output_chars))

    def write_file(self, path: str, content: str) -> ToolOutcome:
        """Write `content` (UTF-8) to a workspace file, creating parent directories."""
        target = self.resolve(path)
        data = content.encode("utf-8")
        if len(data) > MAX_WRITE_BYTES:
            return ToolOutcome(None, f"content too large ({len(data)} bytes > {MAX_WRITE_BYTES})")
        if target.is_dir():
            return ToolOutcome(None, f"is a directory: {path}")
        parent = target.parent
        missing = [p for p in (parent, *parent.parents) if not p.exists()]
        parent.mkdir(parents=True, exist_ok=True)
        for made in missing:
            made.chmod(0o777)
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0)
        fd = os.open(target, flags, 0o666)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        target.chmod(0o666)
        return ToolOutcome(f"wrote {len(data)} bytes to {path}")

    def list_files(self, path: str = ".") -> ToolOutcome:
        """List files under a workspace directory (recursive, sorted, with sizes in bytes)."""
        target = self.resolve(path)
        if not target.exists():
            return ToolOutcome(None, f"no such directory: {path}")
        if target.is_file():
            return ToolOutcome(f"{path} ({target.stat().st_size} bytes)")
        entries: list[str] = []
        for found in sorted(target.rglob("*")):
            if len(entries) >= MAX_LIST_ENTRIES:
                entries.append(f"... (more than {MAX_LIST_ENTRIES} entries)")
                break
            rel = found.relative_to(target).as_posix()
            if found.is_symlink():
                entries.append(f"{rel} -> (symlink)")
            elif found.is_dir():
                entries.append(f"{rel}/")
            else:
                entries.append(f"{rel} ({found.stat().st_size} bytes)")
        return ToolOutcome("\n".join(entries) if entries else EMPTY_DIRECTORY)

    def use_browser(self, **arguments: Any) -> ToolOutcome:
        """Run one `browser` tool call (`BrowserSession.call`); keep its screenshot.

        Returns:
            The operation's text (capped) and error. A screenshot's PNG goes to
            `screenshots` (until `MAX_SCREENSHOTS_PER_TURN`), and the text says
            under which number.

        Raises:
            BrowserUnavailableError: Chromium or Playwright is missing or will not start.
        """
        if self.browser is None:
            return ToolOutcome(None, "the browser tool is not enabled")
        result = self.browser.call(arguments)
        text = result.text
        if result.screenshot is not None:
            if len(self.screenshots) >= MAX_SCREENSHOTS_PER_TURN:
                text += f"\n(not stored: {MAX_SCREENSHOTS_PER_TURN} screenshots per turn at most)"
            else:
                number = len(self.screenshots) + 1
                self.screenshots.append(screenshot_record(result.screenshot, number))
                text += f"\nstored with this turn's trajectory as screenshot {number}"
        return ToolOutcome(cap_text(text, self.max_output_chars) if text else None, result.error)

    # -- dispatch ---------------------------------------------------------------

    def call(self, name: str, arguments: Mapping[str, Any]) -> ToolCall:
        """Run one tool by name and return the record of the call.

        Unknown tools, bad arguments and refused paths become `ToolCall.error`.

        Raises:
            SandboxUnavailableError, SandboxFaultError: the sandbox itself failed.
        """
        start = time.perf_counter()
        outcome = self._dispatch(name, arguments)
        return ToolCall(
            name=name,
            arguments=_jsonable(arguments),
            result=outcome.result,
            error=outcome.error,
            duration_s=round(time.perf_counter() - start, 4),
        )

    def _dispatch(self, name: str, arguments: Mapping[str, Any]) -> ToolOutcome:
        if name not in self.specs:
            return ToolOutcome(None, f"unknown tool {name!r}; available: {', '.join(self.names)}")
        problem = _argument_problem(name, arguments)
        if problem:
            return ToolOutcome(None, problem)
        tool = self._tools.get(name)
        if tool is None:
            assert self.practice is not None
            return self.practice.call(name, arguments)
        try:
            return tool(**arguments)
        except PathRefusedError as exc:
            return ToolOutcome(None, str(exc))
        except (OSError, UnicodeError) as exc:
            return ToolOutcome(None, f"{type(exc).__name__}: {exc}")


def tool_specs(*, practice: bool = False, browser: bool = False) -> dict[str, str]:
    """Tool name → description: `TOOL_SPECS`, the self-play and the browser tools when asked."""
    return {
        **TOOL_SPECS,
        **(SELF_PLAY_TOOL_SPECS if practice else {}),
        **(BROWSER_TOOL_SPECS if browser else {}),
    }


def leak_checked_names(*, browser: bool) -> frozenset[str]:
    """`LEAK_CHECKED_NAMES`, plus `browser` when the turn offered it (`agent._leak`)."""
    return LEAK_CHECKED_NAMES | (frozenset(BROWSER_TOOL_SPECS) if browser else frozenset())


def _argument_problem(name: str, arguments: Mapping[str, Any]) -> str | None:
    required = _REQUIRED[name]
    allowed = set(required) | set(_OPTIONAL.get(name, ()))
    missing = [key for key in required if key not in arguments]
    usage = tool_specs(practice=True, browser=True)[name]
    if missing:
        return f"{name} needs argument(s) {', '.join(missing)}; usage: {name} {usage}"
    extra = sorted(set(arguments) - allowed)
    if extra:
        return f"{name} got unexpected argument(s) {', '.join(extra)}"
    if name in SELF_PLAY_TOOL_SPECS or name in BROWSER_TOOL_SPECS:
        return None  # numbers, lists, booleans or their JSON strings: the tool reads them
    wrong = [key for key, value in arguments.items() if not isinstance(value, str)]
    if wrong:
        return f"{name}: argument(s) {', '.join(wrong)} must be strings"
    return None


def _jsonable(arguments: Mapping[str, Any]) -> dict[str, Any]:
    """A JSON-safe copy of the arguments (non-serialisable values become their repr)."""
    try:
        return dict(json.loads(json.dumps(dict(arguments), default=repr)))
    except (TypeError, ValueError):
        return {str(k): repr(v) for k, v in arguments.items()}
