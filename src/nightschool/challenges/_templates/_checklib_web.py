"""Checker library of web challenges: the second part of their validation scripts.

nightschool never imports this module. Its source text follows `_checklib`'s in
every web validation script (`_web_kit.web_validator`), which runs inside the
sandbox through `challenges._webrun.BOOT`: standard library only, Python 3.11.
The bridge's descriptors are in `NS_BRIDGE_FDS` and the site's start page in
`NS_PAGE_URL`; what the script prints goes to stderr (the bridge owns stdout).
Validators include the text after the script-part marker; `fail` and `_show`
come from `_checklib`, and a starter's validator also holds `_checklib_starter`
(whose child harness `check_web_calls` runs with the bridge).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # in a validator these names come from the two libraries above it
    from nightschool.challenges._templates._checklib import _show, fail
    from nightschool.challenges._templates._checklib_starter import (
        _HARNESS,
        _check_records,
        _records,
        _text,
    )

# --- script part: validators include the text from here on ---

import contextlib
import itertools
import json
import os
import signal
import subprocess
import sys
import tempfile

WEB_SOLUTION_TIMEOUT_S = 12.0
_BRIDGE_IN, _BRIDGE_OUT = (int(p) for p in os.environ.get("NS_BRIDGE_FDS", "0,1").split(","))
_IDS = itertools.count(1)
_PENDING = [b""]

PRELUDE = """
import os as _os, sys as _sys
if _os.getcwd() not in _sys.path:
    _sys.path.insert(0, _os.getcwd())
from playwright.sync_api import Page as _Page
page = _Page()
page.goto(_os.environ["NS_PAGE_URL"])
"""
"""Run before each starter call, in its scope: a fresh page at the site's start (`page`)."""


def bridge(op: str, **args: Any) -> Any:
    """Send one request to the host; its result (fails the check on an error reply)."""
    ident = f"v{next(_IDS)}"
    # the leading newline ends any half line a killed solution left on the bridge
    os.write(_BRIDGE_OUT, b"\n" + json.dumps({"id": ident, "op": op, **args}).encode() + b"\n")
    while True:
        while b"\n" not in _PENDING[0]:
            chunk = os.read(_BRIDGE_IN, 65536)
            if not chunk:
                fail("the browser bridge closed")
            _PENDING[0] += chunk
        line, _, _PENDING[0] = _PENDING[0].partition(b"\n")
        reply = json.loads(line)
        if reply.get("id") == ident:
            break
    if "error" in reply:
        fail(f"the browser refused {op}: {reply['error']}")
    return reply.get("result")


def _run(argv: list[str], what: str, timeout_s: float) -> str:
    """Run `argv` with the bridge; its stdout (fails on a time-out or a non-zero exit)."""
    proc = subprocess.Popen(
        argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        pass_fds=(_BRIDGE_IN, _BRIDGE_OUT),
        start_new_session=True,
        env=dict(os.environ, MALLOC_ARENA_MAX="2"),
    )
    try:
        out, err = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        _kill(proc)
        fail(f"{what} did not finish within {timeout_s:g} s")
    finally:
        _kill(proc)
    text = out.decode("utf-8", "replace")
    if proc.returncode != 0:
        tail = err.decode("utf-8", "replace").strip()[-800:] or "(nothing on stderr)"
        fail(f"{what} exited with status {proc.returncode}; the end of its stderr:\n{tail}")
    return text


def _kill(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)  # the solution's whole session: it may fork
    proc.wait()


def run_web_solution(solution_file: str, timeout_s: float = WEB_SOLUTION_TIMEOUT_S) -> str:
    """Run the solution program with the browser bridge; return its stdout."""
    if not os.path.isfile(solution_file):
        fail(f"{solution_file} was not found in the working directory")
    return _run([sys.executable, solution_file], solution_file, timeout_s)


def check_web_calls(
    solution_file: str, spec: dict[str, Any], timeout_s: float = WEB_SOLUTION_TIMEOUT_S
) -> None:
    """`_checklib_starter.check_calls` with the browser bridge; returns instead of passing.

    Each call gets a fresh page at `NS_PAGE_URL` (`PRELUDE`) as `page`; fails
    at the first wrong case with `check_calls`' messages.
    """
    if not os.path.isfile(solution_file):
        fail(f"{solution_file} was not found in the working directory")
    cases = spec["cases"]
    payload = {
        "module": solution_file,
        "func": spec["func"],
        "prelude": PRELUDE,
        "calls": [case["call"] for case in cases],
        "checks": [[expr for expr, _note in case.get("checks", [])] for case in cases],
    }
    # The harness imports the solution with the workspace off sys.path (so it cannot
    # shadow the standard library); a solution's own `from playwright.sync_api import
    # Page` must still find the workspace's shim, so the shim alone goes on the path.
    shim = tempfile.mkdtemp(prefix="ns-playwright-")
    os.symlink(os.path.abspath("playwright"), os.path.join(shim, "playwright"))
    proc = subprocess.Popen(
        [sys.executable, "-c", _HARNESS],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        pass_fds=(_BRIDGE_IN, _BRIDGE_OUT),
        start_new_session=True,
        env=dict(os.environ, MALLOC_ARENA_MAX="2", PYTHONPATH=shim),
    )
    timed_out = False
    try:
        out, err = proc.communicate(json.dumps(payload).encode(), timeout=timeout_s)
    except subprocess.TimeoutExpired:
        timed_out = True
        _kill(proc)
        out, err = proc.communicate()
    finally:
        _kill(proc)
    late = (
        f"{timeout_s:g} s (all the calls together; waiting for an element that never came?)"
        if timed_out
        else ""
    )
    _check_records(_records(_text(out)), spec, solution_file, _text(err), late)


def site_record() -> list[dict[str, Any]]:
    """Every request the site answered, in order: method, path, query, form, authed, status."""
    record = bridge("record")
    return record if isinstance(record, list) else []


def posts(record: list[dict[str, Any]], path: str | None = None) -> list[dict[str, Any]]:
    """The form posts of `record` (to `path` only, when given), in order."""
    return [h for h in record if h["method"] == "POST" and (path is None or h["path"] == path)]


def describe_hits(record: list[dict[str, Any]], limit: int = 8) -> str:
    """The requests of `record` in one line each (`GET /path?q`, `POST /path {fields}`)."""
    lines = []
    for hit in record[:limit]:
        target = hit["path"] + (f"?{hit['query']}" if hit["query"] else "")
        fields = f" {dict(hit['form'])}" if hit["method"] == "POST" else ""
        lines.append(f"{hit['method']} {target}{fields}")
    more = f"\n... and {len(record) - limit} more" if len(record) > limit else ""
    return "\n".join(lines) + more if lines else "(no requests)"


def check_fields(hit: dict[str, Any], expected: dict[str, str], what: str) -> None:
    """The post `hit` sent exactly the fields `expected` (name -> value), nothing else."""
    got: dict[str, str] = {}
    for name, value in hit["form"]:
        if name in got:
            fail(f"{what}: the field {name!r} was sent twice")
        got[name] = value
    for name, value in expected.items():
        if name not in got:
            fail(f"{what}: the field {name!r} was not sent (sent: {sorted(got)})")
        if got[name] != value:
            fail(f"{what}: the field {name!r} was {_show(got[name])}, expected {_show(value)}")
    extra = sorted(set(got) - set(expected))
    if extra:
        fail(f"{what}: unexpected field {extra[0]!r} = {_show(got[extra[0]])}")
