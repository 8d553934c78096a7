"""Helpers of the parallel tests: /proc walking and scripted HumanEval answers."""

from __future__ import annotations

import json
import os
import shutil
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from nightschool.evals._humaneval import load_problems

needs_bwrap = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap not installed")

Reply = Callable[[list[dict[str, Any]]], str]


def _stat(pid: int) -> list[str] | None:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None


def alive(pid: int) -> bool:
    """`pid` exists and is not a zombie."""
    fields = _stat(pid)
    return fields is not None and fields[0] != "Z"


def cmdline(pid: int) -> str:
    """The command line of `pid` ("" when gone)."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode().strip()
    except OSError:
        return ""


def under_a_ray_worker(pid: int) -> bool:
    """Whether a live `ray::...` process is among `pid`'s ancestors (any cluster's)."""
    fields = _stat(pid)
    while fields is not None and int(fields[1]) > 1:
        parent = int(fields[1])
        if cmdline(parent).startswith("ray::"):
            return True
        fields = _stat(parent)
    return False


def launched_elsewhere(pid: int, since: float) -> bool:
    """Whether `pid`'s parent is a live non-Ray process running since before `since`.

    Such a run belongs to something else on the machine (a benchmark, another
    test's pipeline), not to an episode begun after `since`: an orphan of a
    killed worker is re-parented to init or a Ray subreaper, never to it.
    `since` is seconds since boot (`clock_gettime(CLOCK_BOOTTIME)`).
    """
    fields = _stat(pid)
    parent = int(fields[1]) if fields is not None else 1
    line = cmdline(parent)
    ray = line.startswith("ray::") or "/ray/" in line.split(" ", 1)[0]
    return parent > 1 and alive(parent) and not ray and started_at(parent) < since


def descendants(pid: int) -> list[int]:
    """Every live descendant of `pid`, from /proc."""
    parents: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (fields := _stat(int(entry.name))) and fields[0] != "Z":
            parents.setdefault(int(fields[1]), []).append(int(entry.name))
    found: list[int] = []
    stack = [pid]
    while stack:
        for child in parents.get(stack.pop(), []):
            found.append(child)
            stack.append(child)
    return found


def ray_workers() -> list[int]:
    """Pids of this process's Ray workers (`ray::...` titles, descendants of this process).

    Only the cluster this test process started (`ray.init` spawns its raylet, which
    spawns the workers): under pytest-xdist the other test worker may run a Ray
    cluster of its own, whose workers a test must never pick as its victim.
    """
    mine = set(descendants(os.getpid()))
    return [
        int(entry.name)
        for entry in Path("/proc").iterdir()
        if entry.name.isdigit()
        and int(entry.name) in mine
        and cmdline(int(entry.name)).startswith("ray::")
    ]


def tool_call(code: str) -> str:
    """A fenced-protocol `run_python` call."""
    return "```tool\n" + json.dumps({"name": "run_python", "arguments": {"code": code}}) + "\n```"


class HumanEvalScript:
    """Scripted answers to HumanEval prompts, from a real loopback chat server.

    Problems in `good` get the canonical body, the others `return None`. A
    problem in `tools` first makes a `run_python` call (`tools[index]` is its
    code) and answers once the tool result is back (only in its first turn when
    `once`). `requests[index]` counts the first model calls of each problem's
    turns (a retried episode counts twice).
    """

    def __init__(
        self, good: set[int], tools: dict[int, str] | None = None, *, once: bool = False
    ) -> None:
        self.problems = load_problems()
        self.good = good
        self.tools = tools or {}
        self.once = once
        self.requests: dict[int, int] = {}
        self.lock = threading.Lock()
        self.first_call = threading.Event()

    def index(self, messages: list[dict[str, Any]]) -> int:
        text = "\n".join(str(m.get("content") or "") for m in messages if m["role"] == "user")
        for index, problem in enumerate(self.problems[:20]):
            if problem.prompt in text:
                return index
        raise AssertionError("unknown prompt")

    def __call__(self, messages: list[dict[str, Any]]) -> str:
        index = self.index(messages)
        opening = not any(m["role"] == "assistant" for m in messages)
        if opening:
            with self.lock:
                self.requests[index] = self.requests.get(index, 0) + 1
                count = self.requests[index]
            if index in self.tools and (count == 1 or not self.once):
                self.first_call.set()
                return tool_call(self.tools[index])
        body = (
            self.problems[index].canonical_solution if index in self.good else "    return None\n"
        )
        return f"```python\n{body}```"


def sandboxed_tool_runs() -> list[int]:
    """Pids of bubblewrap processes running an agent's `run_python` (argv ends `python3 -`)."""
    return [
        int(entry.name)
        for entry in Path("/proc").iterdir()
        if entry.name.isdigit()
        and alive(int(entry.name))
        and "bwrap" in (line := cmdline(int(entry.name))).split(" ", 1)[0]
        and line.endswith("python3 -")
    ]


def started_at(pid: int) -> float:
    """When `pid` started, seconds since boot (as `clock_gettime(CLOCK_BOOTTIME)`); inf if gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return float("inf")
    ticks = int(stat.rsplit(")", 1)[1].split()[19])  # field 22: starttime, in clock ticks
    return ticks / os.sysconf("SC_CLK_TCK")
