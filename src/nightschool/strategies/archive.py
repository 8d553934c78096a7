"""Evolution state: archive nodes, per-task results, champion policy, atomic checkpoints.

All state of a run lives in one JSON checkpoint in the run directory, written
atomically (temporary file in the same directory, fsync, `os.replace`), so an
interrupted run leaves either the previous checkpoint or the new one, never a
torn file.
"""

from __future__ import annotations

import gzip
import json
import os
import tempfile
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from nightschool.errors import NightschoolError, UserError

__all__ = [
    "CHECKPOINT_NAME",
    "AuthoringFailedError",
    "Node",
    "TaskResult",
    "gzip_size",
    "load_checkpoint",
    "select_champion",
    "write_json_atomic",
]

CHECKPOINT_NAME = "checkpoint.json"
"""File name of the checkpoint inside a run directory."""

ChampionPolicy = Literal["score", "costAware"]


class AuthoringFailedError(NightschoolError):
    """Every candidate of a generation failed to be authored; the run stops (exit code 1).

    Exit code 1 (`EXIT_CODES["error"]`): neither misuse (2) nor an
    infrastructure fault (3) — the author model answered, but not with a
    usable strategy. When every failure was an infrastructure fault the
    engine raises that `InfrastructureError` instead (exit 3).
    """


@dataclass(frozen=True)
class TaskResult:
    """One strategy on one task.

    Attributes:
        task_id: `template/tier/seed`.
        cluster: the template's cluster.
        passed: the harness's own re-verification of the returned code.
        tokens: tokens spent through the harness (the cost).
        model_calls: metered model calls.
        test_runs: `run_tests` calls.
        status: the play's status (`ok`, `error`, `budget`, `timeout`, `crash`).
        feedback: short validator feedback or strategy error ("" on pass).
        seconds: wall-clock seconds of the play (the strategy in the sandbox with
            its model calls and test runs; the re-verification excluded). Reported,
            never gating. 0.0 in checkpoints written before it was recorded.
        usage: the play's spend per role and model: dicts with `role` (`worker`
            for sample/refine, `analyst` for critique), `model`, `calls`,
            `tokens` and `seconds` (see `Harness.usage`).
    """

    task_id: str
    cluster: str
    passed: bool
    tokens: int
    model_calls: int
    test_runs: int
    status: str
    feedback: str = ""
    seconds: float = 0.0
    usage: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class Node:
    """One strategy in the archive.

    Attributes:
        name: unique name (`sample`, `g2c1`, ...).
        source: the strategy module (for `author_failed`: the rejected code, never
            run, or "" when no code came back).
        generation: where it was born (0 for baselines).
        parent: the incumbent it was authored from (None for baselines).
        status: `baseline`, `candidate` or `author_failed`.
        score: train pass rate at its latest measurement (None: never played).
        cost: mean tokens per train task at its latest measurement.
        seconds: mean play seconds per train task at its latest measurement
            (latency: reported, never used by the champion policy).
        gzip_bytes: gzip size of `source` (description length), bytes.
        detail: author failure reason, or "".
        author_tokens: tokens spent authoring it.
        results: per-task results of its latest measurement.
    """

    name: str
    source: str
    generation: int
    parent: str | None
    status: str
    score: float | None = None
    cost: float | None = None
    seconds: float | None = None
    gzip_bytes: int = 0
    detail: str = ""
    author_tokens: int = 0
    results: list[TaskResult] = field(default_factory=list)

    def measure(self, results: Sequence[TaskResult]) -> None:
        """Store a measurement: score = pass rate, cost = mean tokens, seconds = mean latency."""
        self.results = list(results)
        n = max(1, len(results))
        self.score = sum(r.passed for r in results) / n
        self.cost = sum(r.tokens for r in results) / n
        self.seconds = round(sum(r.seconds for r in results) / n, 4)

    def to_json(self) -> dict[str, Any]:
        """JSON-ready dict."""
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Node:
        """Inverse of `to_json`."""
        values = dict(data)
        values["results"] = [TaskResult(**r) for r in values.get("results", [])]
        return cls(**values)


def gzip_size(source: str) -> int:
    """Bytes of `source` gzipped at level 9 with a zero mtime (deterministic)."""
    return len(gzip.compress(source.encode("utf-8"), compresslevel=9, mtime=0))


def select_champion(
    contenders: Sequence[Node], policy: ChampionPolicy, epsilon: float = 1e-9
) -> Node:
    """Pick the champion among measured nodes.

    `score`: the highest score; ties within `epsilon` go to the earliest node
    (put the incumbent first so it keeps its place on a tie). `costAware`: among
    nodes within `epsilon` of the best score, the cheapest wins (PRIOR-ART: a
    scalar champion rule hid a Pareto-frontier strategy); equal costs go to the
    earliest node. When the best score is 0 nothing has shown it works, and a
    strategy that crashes before spending anything would be "cheapest": then
    `costAware` acts like `score` (the earliest node, i.e. the incumbent, stays).

    Raises:
        ValueError: no contender has been measured.
    """
    measured = [n for n in contenders if n.score is not None and n.cost is not None]
    if not measured:
        raise ValueError("no measured contender to choose a champion from")
    best = max(n.score for n in measured if n.score is not None)
    pool = [n for n in measured if n.score is not None and n.score >= best - epsilon]
    if policy == "score" or best <= 0.0:
        return pool[0]
    cheapest = min(n.cost for n in pool if n.cost is not None)
    return next(n for n in pool if n.cost is not None and n.cost <= cheapest)


def write_json_atomic(path: Path, data: Any) -> None:
    """Write `data` as JSON to `path` atomically (temp file + fsync + rename)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(data, handle, indent=1, sort_keys=False)
            handle.write("\n")
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def load_checkpoint(run_dir: Path) -> dict[str, Any]:
    """Read a run directory's checkpoint.

    Raises:
        UserError: no checkpoint there, or it is not valid JSON.
    """
    path = run_dir / CHECKPOINT_NAME
    if not path.is_file():
        raise UserError(f"no evolution checkpoint at {path}", hint="start a run with --run-dir")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise UserError(f"the checkpoint {path} is not valid JSON: {exc}") from exc
    if not isinstance(data, dict) or data.get("version") != 1:
        raise UserError(f"the checkpoint {path} is not a version-1 evolution checkpoint")
    return data
