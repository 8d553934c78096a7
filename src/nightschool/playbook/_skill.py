"""`SkillMemory`: the playbook of lessons and skills, a facade over its four parts.

`SkillMemory` holds, and delegates to:

- `records` (`PlaybookRecords`, `_records`): the rows in the store, the
  feedback counters and the readers;
- `index` (`PlaybookIndex`, `_playbook_index`): the per-kind vectors and the
  lexical index over those rows, kept in sync with the database;
- `retriever` (`Retriever`, `_retrieval`): hybrid ranking behind the
  relevance floor, with the excluded-challenge and same-code guards;
- `writer` (`PlaybookWriter`, `_writer`): learning (the duplicate rules of
  `_dedup`, the size cap), bulk restore and retraction.

Each part takes its collaborators in its constructor and can be built and
tested alone; the methods below keep the names, signatures and behaviour the
rest of nightschool uses, and the parts' docstrings hold the detailed rules.
"""

from __future__ import annotations

import builtins
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from typing import Any

from nightschool.playbook._default import default_embedder
from nightschool.playbook._embed import Embedder
from nightschool.playbook._lexical import LexicalIndex
from nightschool.playbook._model import (
    RETIRE_MARGIN,
    Audience,
    Kind,
    LearnResult,
    Lesson,
    MemoryConfig,
    RetrievedLesson,
)
from nightschool.playbook._playbook_index import PlaybookIndex
from nightschool.playbook._records import PlaybookRecords
from nightschool.playbook._retrieval import Retriever
from nightschool.playbook._writer import PlaybookWriter
from nightschool.store import Store


class SkillMemory:
    """The playbook: learn lessons and skills, retrieve them for a request, retract them.

    Lessons (advice from failures) and skills (a task summary plus the verified
    code of a passing trajectory) live in the store's `lessons` table, told
    apart by its `kind` column (migration `m006_skills`); the FTS5 index
    `lessons_fts` is kept in sync by triggers (on Postgres: the generated
    `tsvector` column `lessons.fts`); embeddings are BLOBs (BYTEA) in the same
    rows and one in-memory `VectorIndex` per kind mirrors them (no pgvector).
    The indices are loaded on first use and reloaded when
    `lesson_index_state.generation` shows that another writer (another
    `SkillMemory`, another process) changed the set of vectors. Retraction by
    trajectory, the archive, the exposure and outcome counters and
    `set_verified` work the same for both kinds.
    `retrieve` returns one kind at a time and nothing below the relevance
    floor (`relevance_floor(kind)`), so an unrelated request gets [].

    Thread-safe: the store's re-entrant lock serialises calls on this object,
    and writes run inside `store.transaction()`.

    Args:
        store: an open `Store` (migrated to `m006_skills`).
        embedder: the embedding model; None means `default_embedder()` (the
            packaged model), which raises `UserError` if it is not installed.
        config: tuning; None means `MemoryConfig.from_settings()`: the defaults
            with the user's `NIGHTSCHOOL_PLAYBOOK_MAX_ENTRIES`, read now (`UserError`
            when it is below 1).

    Attributes:
        store: the store given.
        embedder: the embedding model in use.
        config: the tuning in use.
        records: the rows (`PlaybookRecords`).
        index: the vector and lexical indices (`PlaybookIndex`).
        retriever: the ranking (`Retriever`).
        writer: learning, restore and retraction (`PlaybookWriter`).
    """

    def __init__(
        self,
        store: Store,
        embedder: Embedder | None = None,
        config: MemoryConfig | None = None,
    ) -> None:
        if embedder is None:
            embedder = default_embedder()
        self.store = store
        self.embedder = embedder
        self.config = config or MemoryConfig.from_settings()
        self.records = PlaybookRecords(store)
        self.index = PlaybookIndex(store, embedder, self.config)
        self.retriever = Retriever(self.records, self.index, self.config)
        self.writer = PlaybookWriter(self.records, self.index, self.config)

    @property
    def _lexical(self) -> LexicalIndex:
        """The lexical index (`index.lexical`); kept for tests that query it directly."""
        return self.index.lexical

    # -- thresholds -------------------------------------------------------------

    @property
    def duplicate_threshold(self) -> float:
        """Cosine (-1..1) at or above which `learn` reinforces instead of writing."""
        return self.writer.duplicate_threshold

    @property
    def vector_weight(self) -> float:
        """Weight (0..1) of the vector side in fusion (BM25 gets 1 - this)."""
        return self.retriever.vector_weight

    def relevance_floor(self, kind: Kind = "lesson") -> float:
        """The fused score (0..1) below which `retrieve` drops an entry of `kind`.

        See `Retriever.relevance_floor` for where the value comes from.
        """
        return self.retriever.relevance_floor(kind)

    # -- learning ---------------------------------------------------------------

    def learn(
        self,
        *,
        trigger: str,
        anti_pattern: str,
        correct_pattern: str,
        domains: Sequence[str],
        source: str,
        code_example: str = "",
        confidence: float = 0.5,
        source_trajectory_id: str = "",
        challenge_hash: str = "",
        verified: bool = False,
        extra: Mapping[str, Any] | None = None,
    ) -> LearnResult:
        """Add a lesson, or reinforce the near-duplicate lesson already in the playbook.

        Text is redacted first; the duplicate rules are `PlaybookWriter.learn`'s.

        Returns:
            `written` with the new id, `reinforced` with the existing id, or
            `rejected` with the reason. Invalid input is never an exception.
        """
        return self.writer.learn(
            trigger=trigger,
            anti_pattern=anti_pattern,
            correct_pattern=correct_pattern,
            domains=domains,
            source=source,
            code_example=code_example,
            confidence=confidence,
            source_trajectory_id=source_trajectory_id,
            challenge_hash=challenge_hash,
            verified=verified,
            extra=extra,
        )

    def learn_skill(
        self,
        *,
        summary: str,
        code: str,
        domains: Sequence[str],
        source_trajectory_id: str,
        challenge_hash: str = "",
        template: str = "",
        tier: str = "",
        confidence: float = 0.5,
        extra: Mapping[str, Any] | None = None,
        source: str | None = None,
    ) -> LearnResult:
        """Add a skill (task summary + verified code), or reinforce its duplicate.

        Summary and code are redacted first; the arguments and the duplicate
        rules (same code, then same template with a near-duplicate summary) are
        documented on `PlaybookWriter.learn_skill`. The skill is unverified
        until `set_verified`.

        Returns:
            `written`, `reinforced` (with the rule that matched) or `rejected`
            (with the reason). Never raises on bad input.
        """
        return self.writer.learn_skill(
            summary=summary,
            code=code,
            domains=domains,
            source_trajectory_id=source_trajectory_id,
            challenge_hash=challenge_hash,
            template=template,
            tier=tier,
            confidence=confidence,
            extra=extra,
            source=source,
        )

    def restore(self, records: Iterable[Mapping[str, Any]], *, batch_size: int = 256) -> int:
        """Insert `export()` records as they are (ids, counters, provenance kept; no dedup).

        Text is redacted; `batch_size` records are embedded and committed at a
        time; records whose id is already present are skipped.

        Returns:
            How many entries were inserted.

        Raises:
            UserError: a record is invalid or has a newer `format_version`
                (earlier batches stay committed).
        """
        return self.writer.restore(records, batch_size=batch_size)

    # -- retraction -------------------------------------------------------------

    def retract_from_trajectory(self, trajectory_id: str, reason: str = "retracted") -> int:
        """Archive, then delete, every lesson and skill whose provenance is `trajectory_id`.

        One transaction, idempotent; an empty or whitespace id retracts nothing.

        Returns:
            How many entries were removed.
        """
        return self.writer.retract_from_trajectory(trajectory_id, reason)

    def retract(self, lesson_id: str, reason: str = "retracted") -> bool:
        """Archive, then delete, one lesson or skill by id (one transaction). Idempotent.

        Returns:
            True when the entry existed and was removed.
        """
        return self.writer.retract(lesson_id, reason)

    # -- retrieval --------------------------------------------------------------

    def retrieve(
        self,
        query: str,
        k: int = 3,
        cluster: str | None = None,
        *,
        kind: Kind = "lesson",
        exclude_challenge_hashes: Collection[str] = (),
        exclude_templates: Collection[str] = (),
        min_score: float | None = None,
        audience: Audience = "practice",
    ) -> builtins.list[RetrievedLesson]:
        """The `k` entries of `kind` that best match `query`, best first.

        Hybrid BM25 + embedding ranking behind the relevance floor, one kind at
        a time; the arguments and the ranking are documented on
        `Retriever.retrieve`.

        Returns:
            Up to `k` `RetrievedLesson`s with ranks 1..k; [] for an empty playbook
            or when nothing clears the floor.

        Raises:
            UserError: unknown `kind`.
        """
        return self.retriever.retrieve(
            query,
            k,
            cluster,
            kind=kind,
            exclude_challenge_hashes=exclude_challenge_hashes,
            exclude_templates=exclude_templates,
            min_score=min_score,
            audience=audience,
        )

    # -- feedback ---------------------------------------------------------------

    def record_exposure(
        self,
        lesson_ids: Sequence[str],
        trajectory_id: str,
        scores: Sequence[float] | None = None,
    ) -> int:
        """Record that these entries (best first) were shown to `trajectory_id`.

        Returns:
            How many exposures were recorded (unknown ids are skipped).

        Raises:
            ValueError: `scores` has a different length than `lesson_ids`.
        """
        return self.records.record_exposure(lesson_ids, trajectory_id, scores)

    def record_outcome(self, trajectory_id: str, passed: bool) -> int:
        """Credit the outcome of `trajectory_id` to the entries it was shown, once.

        Returns:
            How many entries were credited.
        """
        return self.records.record_outcome(trajectory_id, passed)

    def mark_helpful(self, lesson_id: str) -> bool:
        """Add 1 to `times_helpful`; False if no such entry."""
        return self.records.mark_helpful(lesson_id)

    def record_paired(self, lesson_id: str, helped: int, harmed: int) -> bool:
        """Credit paired outcomes: tasks solved only with the entry, and only without it.

        Adds `helped` to `times_helpful` and `harmed` to `times_harmful`, then
        retires the entry (archived, reason `harmful`) once its harmful count
        exceeds its helpful count by `RETIRE_MARGIN`.

        Returns:
            False if no such entry.

        Raises:
            ValueError: a negative count.
        """
        if not self.records.record_paired(lesson_id, helped, harmed):
            return False
        self._retire_if_harmful(lesson_id)
        return True

    def set_verified(self, lesson_id: str, verified: bool, comparison: Mapping[str, Any]) -> bool:
        """Set the verified flag and store `comparison` (redacted) in `extra["verification"]`.

        The comparison's pairs (`with` and `without`, one 0/1/None per
        rendering, as `Verification.record()` writes them) are credited as
        paired outcomes (`record_paired`), and a harmful entry is retired.

        Returns:
            False if no such entry.

        Raises:
            UserError: `comparison` is not JSON-serialisable.
        """
        if not self.records.set_verified(lesson_id, verified, comparison):
            return False
        self._retire_if_harmful(lesson_id)
        return True

    def _retire_if_harmful(self, lesson_id: str) -> None:
        entry = self.records.get(lesson_id)
        if entry is not None and entry.times_harmful - entry.times_helpful >= RETIRE_MARGIN:
            self.writer.retract(lesson_id, reason="harmful")

    # -- reading ----------------------------------------------------------------

    def get(self, lesson_id: str) -> Lesson | None:
        """The lesson or skill with this id, or None."""
        return self.records.get(lesson_id)

    def list(
        self,
        limit: int | None = None,
        verified: bool | None = None,
        *,
        kind: Kind | None = "lesson",
    ) -> builtins.list[Lesson]:
        """Entries of one kind (None: both), oldest first; optionally only (un)verified ones.

        Raises:
            UserError: unknown `kind`.
        """
        return self.records.list(limit, verified, kind=kind)

    def count(self, kind: Kind | None = "lesson") -> int:
        """Number of entries of `kind` (None: both) in the playbook, archived ones excluded.

        Raises:
            UserError: unknown `kind`.
        """
        return self.records.count(kind)

    def archived(
        self, trajectory_id: str | None = None, *, kind: Kind | None = None
    ) -> builtins.list[Lesson]:
        """Archived entries (oldest archive first), optionally of one trajectory or kind.

        Raises:
            UserError: unknown `kind`.
        """
        return self.records.archived(trajectory_id, kind=kind)

    def export(self) -> Iterator[dict[str, Any]]:
        """Every lesson and skill as a JSON-ready dict (`format_version: 2`), oldest first."""
        return self.records.export()

    def close(self) -> None:
        """Stop the retrieval worker thread and close its read-only connection (optional)."""
        self.index.close()
