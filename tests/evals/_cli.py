"""The console script started in a subprocess, as the CLI tests of long runs need it."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

SCRIPT = Path(sys.executable).with_name("nightschool")


def start_until(
    args: list[str], home: Path, watched: Path, lines: int, timeout_s: float
) -> subprocess.Popen[str]:
    """`nightschool *args` in a fresh process (`NIGHTSCHOOL_HOME=home`, 200 columns).

    Returns once `watched` holds at least `lines` lines, the process has ended,
    or `timeout_s` seconds have passed; the caller interrupts or waits for it.
    """
    env = {**os.environ, "NIGHTSCHOOL_HOME": str(home), "COLUMNS": "200"}
    proc = subprocess.Popen(
        [str(SCRIPT), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and proc.poll() is None:
        if watched.exists() and len(watched.read_text().splitlines()) >= lines:
            break
        time.sleep(0.1)
    return proc
