"""A stream's run directory: its settings, its rows (one fsynced line each), its memory.

A run lives in one directory: `meta.json` (suite, order, model, settings),
`rows.jsonl` (one line per task and arm, appended and fsynced as each
finishes) and `memory.db` (the memory arm's own database: its trajectories
and playbook; the user's database is never touched). A resumed run must have
the same settings; a line cut by a crash mid-write is asked again.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable
from dataclasses import MISSING, asdict, dataclass, field, fields
from pathlib import Path

from nightschool.errors import UserError
from nightschool.evals._jsonl import append_line, read_lines

FORMAT_VERSION = 1
"""Version of `meta.json` and of the rows."""


@dataclass(frozen=True)
class StreamSettings:
    """What a stream run is; a resumed run must match it.

    Attributes:
        suite: `mbpp` or `humaneval`.
        order_seed: seed of the fixed order (`_tasks.ordered`).
        task_ids: the tasks in stream order (after `--limit`).
        model: the model's name.
        lessons_k: lessons shown at most per task (memory arm).
        skills_k: skills shown at most per task (memory arm).
        learn_lessons: whether failed public tests are turned into lessons.
        learn: whether the memory arm learns from the stream at all (off: it
            only uses the memory it started with, e.g. a dream's playbook).
        memory_from: where the memory arm's starting memory came from: "" (empty),
            or the database it was copied from (`start_memory_from`).
    """

    suite: str
    order_seed: int
    task_ids: tuple[str, ...]
    model: str
    lessons_k: int = 3
    skills_k: int = 2
    learn_lessons: bool = True
    learn: bool = True
    memory_from: str = ""


@dataclass(frozen=True)
class StreamRow:
    """One arm's answer to one task.

    Attributes:
        position: the task's 0-based place in the stream.
        task_id: the benchmark's id.
        arm: one of `ALL_ARMS`.
        passed: every hidden test passed (the score).
        public_passed: the public test passed (what learning saw).
        hidden_error: the hidden run's last error line ("" on a pass).
        tokens: prompt + completion tokens of the answer.
        added_tokens: estimated tokens the memory sections added to the prompt.
        lessons_shown: ids of the lessons shown.
        skills_shown: ids of the skills shown.
        learned: what this answer added to the memory: `skill:<status>`,
            `lesson:<status>`, or "" (no-memory arm, nothing).
        learned_id: the skill or lesson written or reinforced, if any.
        learned_note: why nothing was learned, or how (the playbook's or the
            guard's reason, at most 200 characters).
        model_calls: model calls of this row (answer + lesson extraction; a
            reused answer counts the calls it took once).
        reused: the memory arm was shown nothing and took the no-memory
            arm's identical answer (see `answer`).
        duration_s: wall time of the row, seconds.
    """

    position: int
    task_id: str
    arm: str
    passed: bool
    public_passed: bool
    hidden_error: str
    tokens: int
    added_tokens: int
    lessons_shown: list[str] = field(default_factory=list)
    skills_shown: list[str] = field(default_factory=list)
    learned: str = ""
    learned_id: str = ""
    learned_note: str = ""
    model_calls: int = 1
    reused: bool = False
    duration_s: float = 0.0


def written_since(rows: Iterable[StreamRow], arm: str, position: int) -> set[str]:
    """Ids of the entries `arm` wrote at `position` or later (`learned` ending in `:written`).

    What an arm that draws from another arm's memory "as it was before this task"
    must leave out on a resumed run, where the memory already holds later entries.
    An entry written earlier and only reinforced later existed before: not in it.
    """
    return {
        r.learned_id
        for r in rows
        if r.arm == arm and r.position >= position and r.learned.endswith(":written")
    } - {""}


class StreamRun:
    """A stream's run directory: settings, rows, the memory arm's database.

    Args:
        directory: the run's directory (created if missing).
        settings: the run's settings; written on first use, compared on resume.

    Raises:
        UserError: the directory holds a run with other settings, or its files
            are unreadable.
    """

    def __init__(self, directory: Path, settings: StreamSettings) -> None:
        self.directory = directory
        self.settings = settings
        directory.mkdir(parents=True, exist_ok=True)
        meta = directory / "meta.json"
        mine = {"format_version": FORMAT_VERSION, **asdict(settings)}
        mine["task_ids"] = list(settings.task_ids)
        if meta.exists():
            try:
                theirs = json.loads(meta.read_text(encoding="utf-8"))
            except (OSError, ValueError) as exc:
                raise UserError(f"{meta} is unreadable ({exc})") from exc
            # a key an older run did not write holds its default
            defaults = {
                f.name: f.default for f in fields(StreamSettings) if f.default is not MISSING
            }
            theirs = {**{k: v for k, v in defaults.items() if k not in theirs}, **theirs}
            if theirs != mine:
                diff = sorted(k for k in mine if theirs.get(k) != mine.get(k))
                raise UserError(
                    f"{directory} holds a stream run with other settings ({', '.join(diff)})",
                    hint="resume with the same --suite, --order-seed, --limit and model, "
                    "or give another --out",
                )
        else:
            meta.write_text(json.dumps(mine, indent=1) + "\n", encoding="utf-8")
        self.rows_path = directory / "rows.jsonl"
        self.rows: list[StreamRow] = self._read_rows()

    @property
    def database(self) -> Path:
        """The memory arm's SQLite database."""
        return self.directory / "memory.db"

    def _read_rows(self) -> list[StreamRow]:
        rows: list[StreamRow] = []
        for number, record in enumerate(read_lines(self.rows_path), start=1):
            try:
                rows.append(StreamRow(**record))
            except TypeError as exc:
                raise UserError(
                    f"{self.rows_path} row {number} is not a stream row ({exc})"
                ) from exc
        return rows

    def done(self) -> set[tuple[str, str]]:
        """(task id, arm) pairs that have a row."""
        return {(row.task_id, row.arm) for row in self.rows}

    def append(self, row: StreamRow) -> None:
        """Write `row` as one line and fsync it; a crash loses at most the row being written."""
        self.rows.append(row)
        append_line(self.rows_path, asdict(row))


def start_memory_from(run: StreamRun, source: Path) -> None:
    """Start the memory arm from a copy of the SQLite database at `source` (dream, then stream).

    The copy is taken with SQLite's online backup (consistent while another
    process writes), once: a run that already has its database keeps it.

    Raises:
        UserError: `source` is missing or not a SQLite database.
    """
    if run.database.exists():
        return
    if not source.is_file():
        raise UserError(f"no database at {source} to start the memory from")
    try:
        with sqlite3.connect(f"file:{source}?mode=ro", uri=True) as origin:
            target = sqlite3.connect(run.database)
            try:
                origin.backup(target)
            finally:
                target.close()
    except sqlite3.DatabaseError as exc:
        run.database.unlink(missing_ok=True)
        raise UserError(f"{source} is not a readable SQLite database ({exc})") from exc


__all__ = ["FORMAT_VERSION", "StreamRow", "StreamRun", "StreamSettings", "start_memory_from"]
