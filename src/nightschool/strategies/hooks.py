"""Runtime hooks around every tournament game: the watchdog and audit seam of `evolve`.

`Evolution` calls each hook's `before_play` when a game is submitted and its
`after_play` when the game's result comes back, for every game it plays:
generation 0, every authored generation (the incumbent's re-measurement
included) and the holdout. With the local backend the two calls bracket the
game itself (before, play, after); with Ray every game of a batch is submitted
first, so the `before_play` calls of a batch come first, the `after_play`
calls in submission order as results arrive. Hooks run in the driver, never in
a worker.

A hook that raises stops the run like an interrupt: the exception propagates
out of `Evolution.run`, the generation in progress is lost and the last
checkpoint stays intact (a watchdog's way to abort a run).
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Protocol, runtime_checkable

from nightschool.strategies.archive import TaskResult

__all__ = ["PlayEvent", "PlayHooks", "PlayLog"]


@dataclass(frozen=True)
class PlayEvent:
    """One game as the hooks see it.

    Attributes:
        phase: `train` (a generation's measurement) or `holdout`.
        generation: the generation being played (the holdout: the last
            completed generation).
        strategy: the archive name of the strategy played.
        task_id: `template/tier/seed`.
    """

    phase: str
    generation: int
    strategy: str
    task_id: str


@runtime_checkable
class PlayHooks(Protocol):
    """Called around every game an `Evolution` plays (see the module docstring).

    Contract: hooks observe; they must not mutate `result` (it is frozen) and
    get no handle on the run's state. Calls come in pairs per game, in
    submission order; an exception from a hook propagates and stops the run.
    """

    def before_play(self, event: PlayEvent) -> None:
        """The game `event` is submitted (local backend: about to run)."""
        ...

    def after_play(self, event: PlayEvent, result: TaskResult) -> None:
        """The game `event` came back with `result` (verified pass, tokens, seconds)."""
        ...


class PlayLog:
    """A `PlayHooks` that appends one JSON line per game to a file (`evolve --play-log`).

    Each line: `{"at": unix seconds, "event": {...PlayEvent}, "passed", "status",
    "tokens", "seconds"}`, written (and flushed) when the game comes back, so a
    reader tailing the file sees a run's progress and what each play cost.

    Args:
        path: the log file (created with its parent directories; appended to).

    Raises:
        OSError: the file cannot be opened (on construction).
    """

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._handle = path.open("a", encoding="utf-8")

    def before_play(self, event: PlayEvent) -> None:
        """Nothing: a line is written when the game comes back."""

    def after_play(self, event: PlayEvent, result: TaskResult) -> None:
        """Append the game's line."""
        line = {
            "at": round(time.time(), 3),
            "event": asdict(event),
            "passed": result.passed,
            "status": result.status,
            "tokens": result.tokens,
            "seconds": result.seconds,
        }
        self._handle.write(json.dumps(line) + "\n")
        self._handle.flush()

    def close(self) -> None:
        """Close the file."""
        self._handle.close()
