"""A learning curve's run directory, so one curve can span sessions (`--resume`).

A curve on the default model takes hours (163 min for two 45-minute
checkpoints on two cores), longer than a laptop stays awake. The run directory
holds `meta.json` (the settings that define the curve) and `journal.jsonl`,
one fsynced line per event:

- `item`: one held-out item measured in one arm at one checkpoint (its
  `ItemResult`);
- `cycle`: one finished dream cycle of a checkpoint's chunk (template, verdict,
  wall seconds);
- `chunk`: a checkpoint's dream chunk reached its cycles or minutes.

Resuming skips every journalled item, finishes a dream chunk's remaining
cycles or minutes (the seconds of a cycle cut by the interruption are not
counted; what it stored is in the home's database as any interrupted cycle's
is) and goes on. What the dream learned lives in the home's database, so a
resumed curve must use the same home (`meta.json` records it).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from nightschool.dream.loop import CycleResult
from nightschool.errors import UserError
from nightschool.evals._curve_items import ItemResult
from nightschool.evals._jsonl import append_line, read_lines

__all__ = ["CURVE_FORMAT_VERSION", "CurveJournal", "DreamChunk"]

CURVE_FORMAT_VERSION = 1
"""Written into `meta.json`; a directory of another version is refused."""


@dataclass(frozen=True)
class DreamChunk:
    """What a checkpoint's dream chunk has done so far.

    Attributes:
        cycles: cycles finished in this chunk.
        seconds: wall seconds of those cycles.
        done: the chunk reached its cycles or minutes.
    """

    cycles: int = 0
    seconds: float = 0.0
    done: bool = False


class CurveJournal:
    """The journal of one learning-curve run in `directory`.

    Args:
        directory: the run's directory (created if missing).
        params: the settings that define the curve (tiers, per-cell, seed,
            checkpoints, cycles or minutes, ablation, model, home ...), JSON
            values only; written on first use, compared on resume.
        resume: go on with a journal already in `directory`.

    Raises:
        UserError: `directory` holds a curve and `resume` is false; it holds
            one with other settings; `resume` is true and there is nothing to
            resume; or its files are unreadable.
    """

    def __init__(self, directory: Path, params: Mapping[str, Any], *, resume: bool) -> None:
        self.directory = directory
        self.meta_path = directory / "meta.json"
        self.path = directory / "journal.jsonl"
        mine = {"format_version": CURVE_FORMAT_VERSION, **params}
        if self.meta_path.exists():
            if not resume:
                raise UserError(
                    f"{directory} already holds a learning-curve run",
                    hint="pass --resume to go on with it, or give another --out",
                )
            try:
                theirs = json.loads(self.meta_path.read_text(encoding="utf-8"))
            except (OSError, ValueError) as exc:
                raise UserError(f"{self.meta_path} is unreadable ({exc})") from exc
            if theirs != json.loads(json.dumps(mine)):
                diff = sorted(k for k in {**mine, **theirs} if theirs.get(k) != mine.get(k))
                raise UserError(
                    f"{directory} holds a learning curve with other settings ({', '.join(diff)})",
                    hint="resume with the same options and NIGHTSCHOOL_HOME, or give another --out",
                )
        elif resume:
            raise UserError(f"nothing to resume in {directory} (no meta.json)")
        else:
            directory.mkdir(parents=True, exist_ok=True)
            self.meta_path.write_text(json.dumps(mine, indent=1) + "\n", encoding="utf-8")
        self._items: dict[tuple[int, str], dict[str, ItemResult]] = {}
        self._chunks: dict[int, DreamChunk] = {}
        for number, record in enumerate(read_lines(self.path), start=1):
            self._load(number, record)

    def _load(self, number: int, record: dict[str, Any]) -> None:
        try:
            self._apply(record)
        except (KeyError, TypeError, ValueError) as exc:
            raise UserError(f"{self.path} line {number} is not a curve event ({exc})") from exc

    def _apply(self, record: dict[str, Any]) -> None:
        """Update the state by one event (the one place events are read, loaded or new)."""
        event, checkpoint = record["event"], int(record["checkpoint"])
        chunk = self.chunk(checkpoint)
        if event == "item":
            result = ItemResult(**record["result"])
            self._items.setdefault((checkpoint, record["arm"]), {})[result.task_id] = result
        elif event == "cycle":
            seconds = chunk.seconds + float(record["seconds"])
            self._chunks[checkpoint] = DreamChunk(chunk.cycles + 1, seconds)
        elif event == "chunk":
            self._chunks[checkpoint] = DreamChunk(chunk.cycles, chunk.seconds, done=True)
        else:
            raise ValueError(f"unknown event {event!r}")

    def _record(self, record: dict[str, Any]) -> None:
        self._apply(record)
        append_line(self.path, record)

    @property
    def started(self) -> bool:
        """Whether anything was journalled (a resumed run, not a new one)."""
        return bool(self._items or self._chunks)

    def items(self, checkpoint: int, arm: str) -> dict[str, ItemResult]:
        """Task id -> result of every item journalled for `arm` at `checkpoint`."""
        return dict(self._items.get((checkpoint, arm), {}))

    def chunk(self, checkpoint: int) -> DreamChunk:
        """The dream chunk before `checkpoint`'s measurement, as journalled."""
        return self._chunks.get(checkpoint, DreamChunk())

    def cycles_done(self) -> int:
        """Dream cycles finished over every chunk."""
        return sum(chunk.cycles for chunk in self._chunks.values())

    def record_item(self, checkpoint: int, arm: str, result: ItemResult) -> None:
        """Journal one measured item (fsynced)."""
        self._record(
            {"event": "item", "checkpoint": checkpoint, "arm": arm, "result": asdict(result)}
        )

    def record_cycle(self, checkpoint: int, cycle: CycleResult, seconds: float) -> None:
        """Journal one finished dream cycle of `checkpoint`'s chunk (fsynced)."""
        self._record(
            {
                "event": "cycle",
                "checkpoint": checkpoint,
                "template": cycle.template,
                "tier": cycle.tier,
                "passed": cycle.passed,
                "seconds": round(seconds, 3),
            }
        )

    def record_chunk_done(self, checkpoint: int) -> None:
        """Journal that `checkpoint`'s dream chunk is finished (fsynced)."""
        self._record({"event": "chunk", "checkpoint": checkpoint})
