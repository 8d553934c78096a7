"""The verification queue: candidates waiting for their comparison, kept across runs.

A dream with a verification budget (`nightschool.dream.budget`) lets a
candidate whose comparison does not fit wait. Waiting costs the candidate
nothing but time:

- a waiting **skill** is what every new skill is before its comparison: a
  stored skill, unverified, with no `verification` record (the idle
  watchdog's skills phase verifies the same ones);
- a waiting **lesson** is not written to the playbook (an unverified
  self-play lesson would be shown to practice) but kept in the store's
  `pending_lessons` table from the moment it waits until its comparison has
  finished, so a run that ends, is stopped or crashes loses none.

`VerificationQueue.load` starts a run with what earlier runs left: each
unverified bank skill without a verification record and each pending lesson,
except those of excluded (held-out) templates, which are never rendered.
Skills go first, then lessons, each oldest first (`WAIT_ORDER`).
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Collection, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from nightschool.challenges import Challenge, render
from nightschool.redact import redact_text
from nightschool.trajectory import new_id

if TYPE_CHECKING:
    from nightschool.lessons.extraction import CandidateLesson
    from nightschool.playbook import SkillMemory
    from nightschool.solver.core import SolveResult
    from nightschool.store import Store

__all__ = ["PENDING_LESSONS_CAP", "WAIT_ORDER", "PendingLesson", "VerificationQueue", "Waiting"]

WAIT_ORDER = ("skill", "lesson")
"""Which waiting candidates are verified first: skills, then lessons (each oldest first).
Measured promotion rates: skills 1 of 10 comparisons, lessons 0 of about 28
(`bench/results/curve-varied-1.5b`: 1 of 5 skills, 0 of about 10 lessons; the
24-cycle curriculum run of `bench/results/throughput/`, measured twice on the same
cycles and counted once: 0 of 5 skills, 0 of 18 lessons). Thin evidence (Fisher's
exact p = 0.26), with a reason behind it: a skill is a passing solution of the very
template its renderings come from, a lesson is advice."""

PENDING_LESSONS_CAP = 32
"""Pending lessons a run starts with at most; older ones are dropped by `load`.
At a 25% share the 24-cycle curriculum dream settled 12 of its 18 lesson candidates
(`bench/results/throughput/dream-curriculum24-share25-qwen2.5-coder-1.5b.json`), so
the backlog grows by about 6 an hour of dreaming: 32 is about five hours of it.
A lesson older than that was drawn from a playbook that has changed since."""


@dataclass(frozen=True)
class PendingLesson:
    """A guarded lesson candidate whose comparison has not run yet.

    Attributes:
        id: its row in `pending_lessons`.
        challenge: the cycle's challenge (its renderings are excluded).
        candidate: the lesson.
        passed, attempts: the cycle's outcome (kept in the comparison record).
        trajectory_id: the cycle's trajectory (the lesson's source).
    """

    id: str
    challenge: Challenge
    candidate: CandidateLesson
    passed: bool
    attempts: int
    trajectory_id: str

    @classmethod
    def of(
        cls, challenge: Challenge, candidate: CandidateLesson, result: SolveResult
    ) -> PendingLesson:
        """The candidate of a finished cycle (`result`), with a new id."""
        return cls(
            new_id(), challenge, candidate, result.passed, result.attempts, result.trajectory.id
        )


@dataclass(frozen=True)
class Waiting:
    """A candidate in the queue.

    Attributes:
        kind: `skill` or `lesson`.
        template: the template its comparison renders.
        skill_id: the stored skill, for `skill`.
        exclude_prompt: the skill's own challenge prompt, never rendered for it
            ("" for a skill loaded from the store: its challenge hash is
            excluded all the same).
        lesson: the pending lesson, for `lesson`.
        earlier: left by an earlier run (`VerificationQueue.load`).
    """

    kind: str
    template: str
    skill_id: str | None = None
    exclude_prompt: str = ""
    lesson: PendingLesson | None = None
    earlier: bool = False


class VerificationQueue:
    """Candidates waiting for a comparison; lessons persisted in `pending_lessons`.

    Args:
        store: the database (`pending_lessons`, migration m014).
        exclude_templates: templates never rendered (a held-out set's); their
            candidates are not loaded.
    """

    def __init__(
        self,
        store: Store,
        *,
        exclude_templates: Collection[str] = (),
    ) -> None:
        self.store = store
        self.exclude_templates = frozenset(exclude_templates)
        self.items: list[Waiting] = []
        """What waits, in the order it came."""

    def __len__(self) -> int:
        return len(self.items)

    def __iter__(self) -> Iterator[Waiting]:
        return iter(list(self.items))

    def load(self, memory: SkillMemory | None, *, lessons: bool = True) -> tuple[int, int]:
        """Add what earlier runs left waiting; return (loaded, old lessons dropped).

        Drops all but the newest `PENDING_LESSONS_CAP` pending lessons first.
        A row whose template is no longer in the bank or whose candidate does
        not parse is dropped too. Nothing already queued is added twice.

        Args:
            memory: the playbook whose skills awaiting verification are loaded
                (None, for a run that verifies no skills: none).
            lessons: load pending lessons (a run that extracts lessons); a run
                that does not leaves them in the table, untouched.
        """
        # function-local: start-up time (lessons.extraction and lessons.skills load the
        # playbook's numpy, ~300 ms)
        from nightschool.lessons.extraction import CandidateLesson
        from nightschool.lessons.skills import skills_awaiting_verification

        dropped = self._trim() if lessons else 0
        known = {w.skill_id for w in self.items} | {w.lesson.id for w in self.items if w.lesson}
        found: list[Waiting] = []
        if memory is not None:
            for skill in skills_awaiting_verification(
                memory, exclude_templates=self.exclude_templates
            ):
                if skill.id not in known:
                    found.append(
                        Waiting("skill", str(skill.template), skill_id=skill.id, earlier=True)
                    )
        rows = (
            self.store.query(
                "SELECT id, template, tier, seed, passed, attempts, trajectory_id, candidate "
                "FROM pending_lessons ORDER BY created_at, id"
            )
            if lessons
            else []
        )
        for row_id, template, tier, seed, passed, attempts, trajectory_id, candidate in rows:
            if row_id in known or template in self.exclude_templates:
                continue
            try:
                challenge = render(template, tier, int(seed))
                lesson = CandidateLesson(**json.loads(candidate))
            except (KeyError, ValueError, TypeError):
                self._delete(row_id)  # a template gone from the bank, or a bad row
                dropped += 1
                continue
            pending = PendingLesson(
                row_id, challenge, lesson, bool(passed), int(attempts), trajectory_id
            )
            found.append(Waiting("lesson", template, lesson=pending, earlier=True))
        self.items = found + self.items
        return len(found), dropped

    def add_skill(self, skill_id: str, challenge: Challenge) -> Waiting:
        """Queue a stored, unverified skill learned from `challenge`."""
        item = Waiting(
            "skill", challenge.template, skill_id=skill_id, exclude_prompt=challenge.prompt
        )
        self.items.append(item)
        return item

    def add_lesson(self, pending: PendingLesson) -> Waiting:
        """Queue a lesson candidate and write it to `pending_lessons`."""
        challenge, candidate = pending.challenge, pending.candidate
        with self.store.transaction() as conn:
            conn.execute(
                "INSERT INTO pending_lessons (id, created_at, template, tier, seed, passed, "
                "attempts, trajectory_id, candidate) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    pending.id, time.time(), challenge.template, challenge.tier, challenge.seed,
                    int(pending.passed), pending.attempts, pending.trajectory_id,
                    json.dumps(_redacted(candidate)),
                ),
            )  # fmt: skip
        item = Waiting("lesson", challenge.template, lesson=pending)
        self.items.append(item)
        return item

    def next(self) -> Waiting | None:
        """The candidate to compare next: skills first, then lessons, each oldest first."""
        if not self.items:
            return None
        return min(self.items, key=lambda w: WAIT_ORDER.index(w.kind))

    def ahead_of(self, kind: str) -> bool:
        """Whether a candidate goes before a new one of `kind` (its kind or a higher one)."""
        rank = WAIT_ORDER.index(kind)
        return any(WAIT_ORDER.index(w.kind) <= rank for w in self.items)

    def done(self, item: Waiting) -> None:
        """Take a candidate whose comparison finished off the queue (and its row)."""
        self.items.remove(item)
        if item.lesson is not None:
            self._delete(item.lesson.id)

    def count(self, kind: str) -> int:
        """Candidates of `kind` waiting."""
        return sum(w.kind == kind for w in self.items)

    def _delete(self, row_id: str) -> None:
        with self.store.transaction() as conn:
            conn.execute("DELETE FROM pending_lessons WHERE id = ?", (row_id,))

    def _trim(self) -> int:
        """Delete all but the newest `PENDING_LESSONS_CAP` pending lessons; return how many."""
        [(total,)] = self.store.query("SELECT COUNT(*) FROM pending_lessons")
        excess = int(total) - PENDING_LESSONS_CAP
        if excess <= 0:
            return 0
        old = self.store.query(
            "SELECT id FROM pending_lessons ORDER BY created_at, id LIMIT ?", (excess,)
        )
        for (row_id,) in old:
            self._delete(row_id)
        return len(old)


def _redacted(candidate: CandidateLesson) -> dict[str, object]:
    """The candidate's fields with its text redacted: what `pending_lessons` stores.

    At rest as in the playbook, where `SkillMemory.learn` redacts the same fields.
    """
    fields = dataclasses.asdict(candidate)
    for name in ("trigger", "anti_pattern", "correct_pattern"):
        fields[name] = redact_text(str(fields[name]))
    return fields
