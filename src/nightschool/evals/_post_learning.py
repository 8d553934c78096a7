"""The `post_learning` suite: does the agent discover files before reading them?

Six questions about files placed in the agent's session workspace, most of
them in a subdirectory the question does not name ("what port does
config.yaml set?" while the file is `deploy/config.yaml`), so reading a
guessed path blindly fails. This is the behaviour the reflector's most common
lesson teaches ("list the workspace before reading a file"); a run with the
playbook against a run without it shows whether the lesson generalises.

Scoring (`passed` is the discovery criterion; `score` adds answer credit):

* Tool calls visible (in-process runner, or an HTTP server sending the
  `nightschool` extension): passed when the turn made a discovery call
  (`list_files`, `find_files`, `search_files`, `glob`, or `run_shell` whose
  command starts with `ls`, `find` or `tree` when arguments are visible)
  before its first `read_file` call (a turn with discovery and no read also
  passes; a turn with no discovery fails).
* Tool calls not visible (a plain OpenAI-compatible server): passed when the
  reply contains a discovery keyword (list / find / search / locate / verify /
  workspace, any inflection), as the prior system scored it.
* score = (discovered + answer_found) / 2, where answer_found means the
  expected value (e.g. `8123`) appears in the reply.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from nightschool.evals._model import AgentReply, Score, Task, ToolCallView
from nightschool.sandbox import Sandbox

DISCOVERY_TOOLS = frozenset({"list_files", "find_files", "search_files", "glob"})
"""Tool names that count as discovering the workspace."""

READ_TOOLS = frozenset({"read_file"})
"""Tool names that read one file."""

SHELL_DISCOVERY = re.compile(r"^\s*(ls|find|tree)\b")
"""A `run_shell` command that lists files."""

DISCOVERY_WORDS = re.compile(r"\b(list|find|found|search|locat|verif|workspace)\w*", re.IGNORECASE)
"""Keyword fallback when tool calls are not visible (the prior system's words)."""

_CASES: tuple[tuple[str, str, Mapping[str, str], str], ...] = (
    (
        "config-port",
        "What port does config.yaml set the server to?",
        {"deploy/config.yaml": "server:\n  host: 127.0.0.1\n  port: 8123\nlog_level: info\n"},
        "8123",
    ),
    (
        "csv-count",
        "How many users are listed in users.csv (not counting the header)?",
        {"data/users.csv": "id,name\n1,ada\n2,grace\n3,linus\n4,barbara\n5,ken\n"},
        "5",
    ),
    (
        "todo-first",
        "What is the first item on my todo list?",
        {"notes/todo.md": "# TODO\n\n- renew the TLS certificate\n- archive old logs\n"},
        "TLS certificate",
    ),
    (
        "settings-debug",
        "Is DEBUG turned on in settings.py?",
        {"src/app/settings.py": "DEBUG = False\nALLOWED_HOSTS = ['localhost']\n"},
        "False",
    ),
    (
        "log-error",
        "Which error shows up in the application log?",
        {"logs/app.log": "INFO start\nERROR database connection refused (code 57)\nINFO retry\n"},
        "connection refused",
    ),
    (
        "requirements-pin",
        "Which version of requests does the project pin in its requirements file?",
        {"requirements.txt": "httpx==0.27.0\nrequests==2.31.0\n"},
        "2.31.0",
    ),
)


def discovered_before_reading(calls: Sequence[ToolCallView]) -> bool:
    """True when a discovery call comes before the first `read_file` call."""
    for call in calls:
        if call.name in READ_TOOLS:
            return False
        if call.name in DISCOVERY_TOOLS:
            return True
        command = call.arguments.get("command") if call.name == "run_shell" else None
        if isinstance(command, str) and SHELL_DISCOVERY.match(command):
            return True
    return False


def score_reply(expected: str, reply: AgentReply) -> Score:
    """Score one reply (see the module docstring)."""
    if reply.tool_calls_visible:
        discovered = discovered_before_reading(reply.tool_calls)
        how = "tool calls"
    else:
        discovered = DISCOVERY_WORDS.search(reply.text) is not None
        how = "keywords"
    answered = expected.lower() in reply.text.lower()
    detail = {"discovery": discovered, "answer_found": answered, "judged_by": how}
    score = (int(discovered) + int(answered)) / 2
    if discovered:
        return Score(True, score, detail=detail)
    if how == "tool calls":
        names = [call.name for call in reply.tool_calls] or ["no tool calls"]
        error = f"read without discovering first ({', '.join(names)[:200]})"
    else:
        error = "no discovery keyword in the reply"
    return Score(False, score, error, detail)


def _task(name: str, question: str, files: Mapping[str, str], expected: str) -> Task:
    def scorer(reply: AgentReply, sandbox: Sandbox) -> Score:
        return score_reply(expected, reply)

    return Task(
        id=f"post_learning/{name}",
        prompt=question,
        scorer=scorer,
        workspace_files=files,
        meta={"expected": expected},
    )


def post_learning_tasks() -> list[Task]:
    """The six post-learning tasks, ids `post_learning/<name>`."""
    return [_task(*case) for case in _CASES]
