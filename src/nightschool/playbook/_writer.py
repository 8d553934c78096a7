"""`PlaybookWriter`: every change to the set of playbook entries, and its rules.

Learning a lesson or a skill (validation, redaction, the duplicate rules of
`_dedup`, the size cap), bulk restore and retraction. Each write runs in one
`PlaybookIndex.writing()` transaction: rows change through `PlaybookRecords`
and the vector index is told of each insert and delete in the same breath.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from nightschool.errors import UserError
from nightschool.playbook._dedup import (
    duplicate_lesson,
    near_skill,
    replace_code_if_shorter,
    same_code_skill,
    same_code_update,
)
from nightschool.playbook._model import Kind, LearnResult, MemoryConfig
from nightschool.playbook._playbook_index import PlaybookIndex
from nightschool.playbook._records import PlaybookRecords
from nightschool.playbook._rows import (
    RESTORE_INDEX,
    code_hash,
    embedding_text,
    entry_text,
    restore_values,
    skill_problem,
    validation_problem,
)
from nightschool.playbook._tuning import duplicate_threshold
from nightschool.redact import redact, redact_text


class PlaybookWriter:
    """Learns, restores and retracts playbook entries, keeping rows and vectors in step.

    Thread-safe: every write holds the store's re-entrant lock for its whole
    transaction (`PlaybookIndex.writing`).

    Args:
        records: the playbook's rows.
        index: the vector and lexical indices over those rows.
        config: tuning (`reinforce_step`, `max_lessons`, `duplicate_threshold`).
    """

    def __init__(
        self, records: PlaybookRecords, index: PlaybookIndex, config: MemoryConfig
    ) -> None:
        self.records = records
        self.index = index
        self.config = config

    @property
    def duplicate_threshold(self) -> float:
        """Cosine (-1..1) at or above which `learn` reinforces instead of writing."""
        return duplicate_threshold(self.config, self.index.embedder)

    # -- lessons ----------------------------------------------------------------

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

        Text is redacted before anything else. A near-duplicate is a lesson
        with the same normalised trigger (case, punctuation and whitespace
        ignored), or whose embedding has cosine >= `duplicate_threshold` with
        this one (skills are never compared). Reinforcing adds 1 to
        `reinforcements`, moves confidence `config.reinforce_step` of the way
        to 1, keeps the original provenance and appends `{trajectory_id,
        source, at}` to `extra["reinforced_by"]`.

        Returns:
            `written` with the new id, `reinforced` with the existing id, or
            `rejected` with the reason (empty trigger or correct pattern,
            domains empty or outside `DOMAINS`, unknown source, confidence
            outside 0..1, text too long). Invalid input is never an exception.
        """
        problem = validation_problem(
            trigger=trigger,
            anti_pattern=anti_pattern,
            correct_pattern=correct_pattern,
            code_example=code_example,
            domains=domains,
            source=source,
            confidence=confidence,
        )
        if problem:
            return LearnResult(status="rejected", reason=problem)
        extra_json = _extra_json(extra)
        if isinstance(extra_json, LearnResult):
            return extra_json
        trigger = redact_text(trigger.strip())
        anti_pattern = redact_text(anti_pattern.strip())
        correct_pattern = redact_text(correct_pattern.strip())
        domain_list = sorted(set(domains), key=list(domains).index)
        vector = self.index.embed(embedding_text(trigger, anti_pattern, correct_pattern))
        with self.index.writing() as conn:
            duplicate = duplicate_lesson(
                conn,
                self.records.store,
                self.index.vectors["lesson"],
                trigger,
                vector,
                self.duplicate_threshold,
            )
            if duplicate is not None:
                rowid, lesson_id, why = duplicate
                self._reinforce(conn, rowid, source_trajectory_id.strip(), source)
                return LearnResult(status="reinforced", lesson_id=lesson_id, reason=why)
            values = {
                "kind": "lesson",
                "trigger": trigger,
                "anti_pattern": anti_pattern,
                "correct_pattern": correct_pattern,
                "code_example": redact_text(code_example),
                "domains": json.dumps(domain_list),
                "confidence": float(confidence),
                "verified": int(bool(verified)),
                "source": source,
                "source_trajectory_id": source_trajectory_id.strip(),
                "challenge_hash": challenge_hash,
                "extra": extra_json,
            }
            lesson_id, rowid = self._insert(conn, values, vector)
            self._enforce_cap(conn, keep_rowid=rowid, kind="lesson")
        return LearnResult(status="written", lesson_id=lesson_id, reason="new lesson")

    # -- skills -----------------------------------------------------------------

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

        Summary and code are redacted first. Deduplication is deterministic,
        in this order:

        1. Same code: a skill whose normalised code (`normalise_code`: layout
           only) equals this one is reinforced; this challenge is added to its
           `extra["same_code_challenges"]`, so excluding it at retrieval
           still hides that code.
        2. Same template, near-duplicate summary: when `template` is non-empty,
           the skill of the same template whose summary embedding is closest,
           if its cosine is >= `duplicate_threshold`, is reinforced. Its code
           is replaced by this code when it is not verified and this
           normalised code is shorter; provenance (`source_trajectory_id`,
           `challenge_hash`, `tier`) follows the code, and the replaced code's
           provenance goes to `extra["code_replaced"]`. Skills without a
           template are merged only by rule 1 (similar summaries of unrelated
           live tasks may need different code).

        Reinforcing adds 1 to `reinforcements`, nudges confidence up and appends
        to `extra["reinforced_by"]`, as for lessons. The skill is unverified
        until `set_verified`.

        Args:
            summary: what the task was, in a sentence (the retrieval key);
                at most 1,000 characters.
            code: the code that passed; at most `MAX_SKILL_CODE_CHARS` (4,000)
                characters.
            domains: non-empty subset of `DOMAINS`.
            source_trajectory_id: the passing trajectory (required: retracting
                it archives the skill).
            challenge_hash: the self-play challenge the code passed, if any.
            template: that challenge's template (`cluster.name`), if any.
            tier: that challenge's tier, if any.
            confidence: 0..1.
            extra: JSON-serialisable metadata (e.g. `solution_file`, which
                decides the code fence language of `format_worked_examples`).
            source: one of `SOURCES`; None means `selfplay` when a template or
                challenge hash is given, else `chat`.

        Returns:
            `written`, `reinforced` (with the rule that matched) or `rejected`
            (empty or too long summary or code, no provenance, bad domains,
            source or confidence, extra not JSON). Never raises on bad input.
        """
        source = source or ("selfplay" if template or challenge_hash else "chat")
        problem = skill_problem(
            summary=summary, code=code, domains=domains, source=source, confidence=confidence
        )
        if not problem and not str(source_trajectory_id).strip():
            problem = "source_trajectory_id is empty (a skill needs its passing trajectory)"
        if problem:
            return LearnResult(status="rejected", reason=problem)
        extra_json = _extra_json(extra)
        if isinstance(extra_json, LearnResult):
            return extra_json
        summary = redact_text(summary.strip())
        code = redact_text(code).strip("\n")
        trajectory_id = source_trajectory_id.strip()
        provenance = {
            "source_trajectory_id": trajectory_id,
            "challenge_hash": challenge_hash.strip(),
            "tier": tier.strip(),
        }
        digest = code_hash(code)
        vector = self.index.embed(entry_text("skill", summary, "", ""))
        with self.index.writing() as conn:
            same = same_code_skill(conn, digest)
            if same is not None:
                update = same_code_update(conn, same[0], provenance["challenge_hash"])
                self._reinforce(conn, same[0], trajectory_id, source, update)
                return LearnResult(
                    status="reinforced", lesson_id=same[1], reason=f"same code as {same[1]}"
                )
            near = near_skill(
                conn,
                self.index.vectors["skill"],
                template.strip(),
                vector,
                self.duplicate_threshold,
            )
            if near is not None:
                rowid, lesson_id, why = near
                replaced = replace_code_if_shorter(conn, rowid, code, digest, provenance)
                self._reinforce(conn, rowid, trajectory_id, source, replaced)
                why += "; code replaced by the shorter one" if replaced else ""
                return LearnResult(status="reinforced", lesson_id=lesson_id, reason=why)
            values = {
                "kind": "skill",
                "trigger": summary,
                "anti_pattern": "",
                "correct_pattern": "",
                "code_example": code,
                "code_hash": digest,
                "domains": json.dumps(sorted(set(domains), key=list(domains).index)),
                "confidence": float(confidence),
                "source": source,
                **provenance,
                "template": template.strip(),
                "extra": extra_json,
            }
            lesson_id, rowid = self._insert(conn, values, vector)
            self._enforce_cap(conn, keep_rowid=rowid, kind="skill")
        return LearnResult(status="written", lesson_id=lesson_id, reason="new skill")

    # -- rows and vectors together ----------------------------------------------

    def _insert(
        self, conn: sqlite3.Connection, values: Mapping[str, Any], vector: npt.NDArray[np.float32]
    ) -> tuple[str, int]:
        """Insert one row under a fresh id and mirror its vector; returns (id, rowid)."""
        lesson_id, rowid = self.records.insert(conn, values, vector, self.index.embedder.name)
        kind = str(values.get("kind", "lesson"))
        self.index.mirror(rowid, vector, lesson_id, str(values["domains"]), kind)
        return lesson_id, rowid

    def _reinforce(
        self,
        conn: sqlite3.Connection,
        rowid: int,
        trajectory_id: str,
        source: str,
        extra_update: Mapping[str, Any] | None = None,
    ) -> None:
        """Count a near-duplicate: +1 reinforcement, confidence nudged up, history kept."""
        self.records.reinforce(
            conn,
            rowid,
            trajectory_id=trajectory_id,
            source=source,
            step=self.config.reinforce_step,
            extra_update=extra_update,
        )

    def _archive(self, conn: sqlite3.Connection, rowids: Sequence[int], reason: str) -> None:
        """Archive and delete these rows, and drop their vectors."""
        if not rowids:
            return
        self.records.archive(conn, rowids, reason)
        self.index.forget(rowids)

    def _enforce_cap(self, conn: sqlite3.Connection, *, keep_rowid: int, kind: Kind) -> None:
        """Archive the least useful unverified entries of `kind` while above `max_lessons`.

        Fires only when that kind has more entries than the cap, removes only the
        excess, never a verified entry and never the one just written. Utility
        order: (helpful + passes - failures), then confidence, then age.
        """
        cap = self.config.max_lessons
        if cap is None:
            return
        victims = self.records.cap_victims(conn, kind=kind, keep_rowid=keep_rowid, cap=cap)
        self._archive(conn, victims, "size_cap")

    # -- restore and retraction -------------------------------------------------

    def restore(self, records: Iterable[Mapping[str, Any]], *, batch_size: int = 256) -> int:
        """Insert lessons and skills from `export()` records as they are (no duplicate check).

        For backups and bulk loads: ids, kinds, times, counters and provenance
        are kept; text is redacted; embeddings are computed in batches of
        `batch_size`, each batch in one transaction. Records whose id is already
        in the playbook are skipped.

        Returns:
            How many entries were inserted.

        Raises:
            UserError: a record is invalid or has a newer `format_version`
                (earlier batches stay committed).
        """
        inserted = 0
        batch: list[tuple[Any, ...]] = []
        for number, record in enumerate(records):
            try:
                batch.append(restore_values(record))
            except (ValueError, TypeError, KeyError) as exc:
                raise UserError(f"lesson record {number} cannot be restored: {exc}") from exc
            if len(batch) >= batch_size:
                inserted += self._restore_batch(batch)
                batch = []
        if batch:
            inserted += self._restore_batch(batch)
        return inserted

    def _restore_batch(self, batch: Sequence[tuple[Any, ...]]) -> int:
        at = RESTORE_INDEX
        texts = [
            entry_text(
                v[at["kind"]], v[at["trigger"]], v[at["anti_pattern"]], v[at["correct_pattern"]]
            )
            for v in batch
        ]
        vectors = self.index.embedder.embed(texts)
        model = self.index.embedder.name
        inserted = 0
        with self.index.writing() as conn:
            for values, vector in zip(batch, vectors, strict=True):
                rowid = self.records.insert_restored(conn, values, vector, model)
                if rowid is not None:
                    self.index.mirror(
                        rowid,
                        np.asarray(vector, dtype=np.float32),
                        values[at["id"]],
                        values[at["domains"]],
                        values[at["kind"]],
                    )
                    inserted += 1
        return inserted

    def retract_from_trajectory(self, trajectory_id: str, reason: str = "retracted") -> int:
        """Archive, then delete, every lesson and skill whose provenance is `trajectory_id`.

        Archive and delete run in one transaction: nothing is ever lost.
        Idempotent. An empty or whitespace id retracts nothing (legacy lessons
        without provenance have `source_trajectory_id == ""` and must never be
        bulk-removed by a caller bug).

        Returns:
            How many entries were removed.
        """
        if not isinstance(trajectory_id, str) or not trajectory_id.strip():
            return 0
        with self.index.writing() as conn:
            rowids = self.records.rowids_of(conn, trajectory_id=trajectory_id.strip())
            self._archive(conn, rowids, reason)
        return len(rowids)

    def retract(self, lesson_id: str, reason: str = "retracted") -> bool:
        """Archive, then delete, one lesson or skill by id (one transaction). Idempotent.

        Returns:
            True when the entry existed and was removed.
        """
        with self.index.writing() as conn:
            rowids = self.records.rowids_of(conn, lesson_id=lesson_id)
            self._archive(conn, rowids, reason)
        return bool(rowids)


def _extra_json(extra: Mapping[str, Any] | None) -> str | LearnResult:
    """An entry's `extra`, redacted, as sorted JSON; a `rejected` result when it cannot be."""
    try:
        return json.dumps(redact(dict(extra or {})), sort_keys=True)
    except (TypeError, ValueError) as exc:
        return LearnResult(status="rejected", reason=f"extra is not JSON-serialisable: {exc}")
