"""`SkillMemory`: the playbook of lessons and skills, with hybrid retrieval and retraction."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import numpy as np
import numpy.typing as npt

from nightschool.memory._lexical_pg import TRIGGER_PHRASE_SQL, trigger_phrase
from nightschool.memory._model import LearnResult
from nightschool.memory._retrieval import SAME_CODE_CHALLENGES, RetrievingPlaybook
from nightschool.memory._rows import (
    MAX_REINFORCED_BY,
    code_hash,
    embedding_text,
    entry_text,
    epoch_now,
    normalise_code,
    skill_problem,
    validation_problem,
)
from nightschool.memory._text import normalise, tokens
from nightschool.redact import redact, redact_text


class SkillMemory(RetrievingPlaybook):
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
        config: tuning; None means `MemoryConfig()`.
    """

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
        try:
            extra_json = json.dumps(redact(dict(extra or {})), sort_keys=True)
        except (TypeError, ValueError) as exc:
            return LearnResult(status="rejected", reason=f"extra is not JSON-serialisable: {exc}")
        trigger = redact_text(trigger.strip())
        anti_pattern = redact_text(anti_pattern.strip())
        correct_pattern = redact_text(correct_pattern.strip())
        domain_list = sorted(set(domains), key=list(domains).index)
        vector = self._embed_one(embedding_text(trigger, anti_pattern, correct_pattern))
        with self._writing() as conn:
            duplicate = self._find_duplicate(conn, trigger, vector)
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

    def _find_duplicate(
        self, conn: sqlite3.Connection, trigger: str, vector: npt.NDArray[np.float32]
    ) -> tuple[int, str, str] | None:
        wanted = normalise(trigger)
        words = tokens(trigger, keep_stopwords=True)
        if words:
            for rowid, lesson_id, other in self._trigger_candidates(conn, trigger, words):
                if normalise(other) == wanted:
                    return rowid, lesson_id, f"same trigger as {lesson_id}"
        keys, sims = self._indices["lesson"].search(vector, 1)
        if len(keys) and float(sims[0]) >= self.duplicate_threshold:
            rowid = int(keys[0])
            found = conn.execute("SELECT id FROM lessons WHERE rowid = ?", (rowid,)).fetchone()
            if found is not None:
                return (
                    rowid,
                    found[0],
                    f"near-duplicate of {found[0]} (cosine {float(sims[0]):.3f} >= "
                    f"{self.duplicate_threshold:.2f})",
                )
        return None

    def _trigger_candidates(
        self, conn: sqlite3.Connection, trigger: str, words: Sequence[str]
    ) -> list[Any]:
        """Up to 50 (rowid, id, trigger) of lessons whose trigger holds `words` as a phrase.

        SQLite: FTS5 phrase on the trigger column, oldest first. Postgres: a
        tsquery phrase on weight A (stopwords drop out), a trigger equal to
        `trigger` (case aside) first.
        """
        if self.store.dialect == "postgres":
            return conn.execute(TRIGGER_PHRASE_SQL, (trigger_phrase(words), trigger)).fetchall()
        phrase = 'trigger : "' + " ".join(words) + '"'
        return conn.execute(
            "SELECT l.rowid, l.id, l.trigger FROM lessons_fts f JOIN lessons l "
            "ON l.rowid = f.rowid WHERE lessons_fts MATCH ? AND l.kind = 'lesson' "
            "ORDER BY l.rowid LIMIT 50",
            (phrase,),
        ).fetchall()

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
        try:
            extra_json = json.dumps(redact(dict(extra or {})), sort_keys=True)
        except (TypeError, ValueError) as exc:
            return LearnResult(status="rejected", reason=f"extra is not JSON-serialisable: {exc}")
        summary = redact_text(summary.strip())
        code = redact_text(code).strip("\n")
        trajectory_id = source_trajectory_id.strip()
        provenance = {
            "source_trajectory_id": trajectory_id,
            "challenge_hash": challenge_hash.strip(),
            "tier": tier.strip(),
        }
        digest = code_hash(code)
        vector = self._embed_one(entry_text("skill", summary, "", ""))
        with self._writing() as conn:
            same = conn.execute(
                "SELECT rowid, id FROM lessons WHERE kind = 'skill' AND code_hash = ? "
                "ORDER BY rowid LIMIT 1",
                (digest,),
            ).fetchone()
            if same is not None:
                update = self._same_code_update(conn, same[0], provenance["challenge_hash"])
                self._reinforce(conn, same[0], trajectory_id, source, update)
                return LearnResult(
                    status="reinforced", lesson_id=same[1], reason=f"same code as {same[1]}"
                )
            near = self._near_skill(conn, template.strip(), vector)
            if near is not None:
                rowid, lesson_id, why = near
                replaced = self._maybe_replace_code(conn, rowid, code, digest, provenance)
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

    @staticmethod
    def _same_code_update(
        conn: sqlite3.Connection, rowid: int, challenge_hash: str
    ) -> dict[str, Any] | None:
        """`extra` update recording that `challenge_hash` was also passed by this code."""
        own, extra_text = conn.execute(
            "SELECT challenge_hash, extra FROM lessons WHERE rowid = ?", (rowid,)
        ).fetchone()
        seen = list(json.loads(extra_text).get(SAME_CODE_CHALLENGES, []))
        if not challenge_hash or challenge_hash == own or challenge_hash in seen:
            return None
        return {SAME_CODE_CHALLENGES: [*seen, challenge_hash]}

    def _near_skill(
        self, conn: sqlite3.Connection, template: str, vector: npt.NDArray[np.float32]
    ) -> tuple[int, str, str] | None:
        """The closest skill of `template` at or above `duplicate_threshold`, if any."""
        if not template:
            return None
        rows = conn.execute(
            "SELECT rowid, id FROM lessons WHERE kind = 'skill' AND template = ? ORDER BY rowid",
            (template,),
        ).fetchall()
        sims = self._indices["skill"].scores(vector, [int(r[0]) for r in rows])
        best = max(rows, key=lambda r: (sims.get(int(r[0]), -2.0), -int(r[0])), default=None)
        if best is None or sims.get(int(best[0]), -2.0) < self.duplicate_threshold:
            return None
        cosine = sims[int(best[0])]
        return (
            int(best[0]),
            str(best[1]),
            f"near-duplicate of {best[1]} from template {template} (cosine {cosine:.3f} >= "
            f"{self.duplicate_threshold:.2f})",
        )

    @staticmethod
    def _maybe_replace_code(
        conn: sqlite3.Connection,
        rowid: int,
        code: str,
        digest: str,
        provenance: Mapping[str, str],
    ) -> dict[str, Any] | None:
        """Swap in `code` when the skill is unverified and `code` is shorter (normalised).

        Returns the `extra` update (the replaced code's provenance) or None.
        """
        row = conn.execute(
            "SELECT verified, code_example, code_hash, source_trajectory_id, challenge_hash, "
            "tier, extra FROM lessons WHERE rowid = ?",
            (rowid,),
        ).fetchone()
        verified, old_code, old_hash, old_trajectory, old_challenge, old_tier, extra_text = row
        if verified or len(normalise_code(code)) >= len(normalise_code(old_code)):
            return None
        conn.execute(
            "UPDATE lessons SET code_example = ?, code_hash = ?, source_trajectory_id = ?, "
            "challenge_hash = ?, tier = ?, updated_at = ? WHERE rowid = ?",
            (
                code,
                digest,
                provenance["source_trajectory_id"],
                provenance["challenge_hash"],
                provenance["tier"],
                epoch_now(),
                rowid,
            ),
        )
        history = list(json.loads(extra_text).get("code_replaced", []))
        history.append(
            {
                "code_hash": old_hash,
                "source_trajectory_id": old_trajectory,
                "challenge_hash": old_challenge,
                "tier": old_tier,
                "at": datetime.now(UTC).isoformat(),
            }
        )
        return {"code_replaced": history[-MAX_REINFORCED_BY:], SAME_CODE_CHALLENGES: []}
