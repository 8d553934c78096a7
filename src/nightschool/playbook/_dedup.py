"""The duplicate rules of `PlaybookWriter`: which existing row a new entry reinforces.

Each function reads (and `replace_code_if_shorter` updates) rows on the open
connection of the writer's transaction, so a decision and the write it leads
to see the same playbook. A match is `(rowid, id, reason)`, the reason a
sentence for `LearnResult.reason`.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import numpy as np
import numpy.typing as npt

from nightschool.playbook._index import VectorIndex
from nightschool.playbook._lexical_pg import TRIGGER_PHRASE_SQL, trigger_phrase
from nightschool.playbook._rows import (
    MAX_REINFORCED_BY,
    SAME_CODE_CHALLENGES,
    epoch_now,
    normalise_code,
)
from nightschool.playbook._text import normalise, tokens
from nightschool.store import Store

Match = tuple[int, str, str]
"""(rowid, id, reason) of the row a new entry duplicates."""


def duplicate_lesson(
    conn: sqlite3.Connection,
    store: Store,
    lessons: VectorIndex,
    trigger: str,
    vector: npt.NDArray[np.float32],
    threshold: float,
) -> Match | None:
    """The lesson that a new lesson with this trigger and vector duplicates, if any.

    First a lesson with the same normalised trigger (case, punctuation and
    whitespace ignored), found through the lexical index; else the lesson whose
    vector in `lessons` has cosine >= `threshold` (-1..1) with `vector`.
    """
    wanted = normalise(trigger)
    words = tokens(trigger, keep_stopwords=True)
    if words:
        for rowid, lesson_id, other in _trigger_candidates(conn, store, trigger, words):
            if normalise(other) == wanted:
                return rowid, lesson_id, f"same trigger as {lesson_id}"
    keys, sims = lessons.search(vector, 1)
    if len(keys) and float(sims[0]) >= threshold:
        rowid = int(keys[0])
        found = conn.execute("SELECT id FROM lessons WHERE rowid = ?", (rowid,)).fetchone()
        if found is not None:
            return (
                rowid,
                found[0],
                f"near-duplicate of {found[0]} (cosine {float(sims[0]):.3f} >= {threshold:.2f})",
            )
    return None


def _trigger_candidates(
    conn: sqlite3.Connection, store: Store, trigger: str, words: Sequence[str]
) -> list[Any]:
    """Up to 50 (rowid, id, trigger) of lessons whose trigger holds `words` as a phrase.

    SQLite: FTS5 phrase on the trigger column, oldest first. Postgres: a
    tsquery phrase on weight A (stopwords drop out), a trigger equal to
    `trigger` (case aside) first.
    """
    if store.dialect == "postgres":
        return conn.execute(TRIGGER_PHRASE_SQL, (trigger_phrase(words), trigger)).fetchall()
    phrase = 'trigger : "' + " ".join(words) + '"'
    return conn.execute(
        "SELECT l.rowid, l.id, l.trigger FROM lessons_fts f JOIN lessons l "
        "ON l.rowid = f.rowid WHERE lessons_fts MATCH ? AND l.kind = 'lesson' "
        "ORDER BY l.rowid LIMIT 50",
        (phrase,),
    ).fetchall()


def same_code_skill(conn: sqlite3.Connection, digest: str) -> tuple[int, str] | None:
    """(rowid, id) of the oldest skill whose `code_hash` is `digest`, if any."""
    row = conn.execute(
        "SELECT rowid, id FROM lessons WHERE kind = 'skill' AND code_hash = ? "
        "ORDER BY rowid LIMIT 1",
        (digest,),
    ).fetchone()
    return None if row is None else (int(row[0]), str(row[1]))


def same_code_update(
    conn: sqlite3.Connection, rowid: int, challenge_hash: str
) -> dict[str, Any] | None:
    """`extra` update recording that `challenge_hash` was also passed by this code.

    None when there is nothing new to record (no hash, the skill's own, or seen).
    """
    own, extra_text = conn.execute(
        "SELECT challenge_hash, extra FROM lessons WHERE rowid = ?", (rowid,)
    ).fetchone()
    seen = list(json.loads(extra_text).get(SAME_CODE_CHALLENGES, []))
    if not challenge_hash or challenge_hash == own or challenge_hash in seen:
        return None
    return {SAME_CODE_CHALLENGES: [*seen, challenge_hash]}


def near_skill(
    conn: sqlite3.Connection,
    skills: VectorIndex,
    template: str,
    vector: npt.NDArray[np.float32],
    threshold: float,
) -> Match | None:
    """The closest skill of `template` whose cosine with `vector` is >= `threshold`.

    None for an empty `template` (skills without one merge only on same code).
    Ties go to the oldest skill.
    """
    if not template:
        return None
    rows = conn.execute(
        "SELECT rowid, id FROM lessons WHERE kind = 'skill' AND template = ? ORDER BY rowid",
        (template,),
    ).fetchall()
    sims = skills.scores(vector, [int(r[0]) for r in rows])
    best = max(rows, key=lambda r: (sims.get(int(r[0]), -2.0), -int(r[0])), default=None)
    if best is None or sims.get(int(best[0]), -2.0) < threshold:
        return None
    cosine = sims[int(best[0])]
    return (
        int(best[0]),
        str(best[1]),
        f"near-duplicate of {best[1]} from template {template} (cosine {cosine:.3f} >= "
        f"{threshold:.2f})",
    )


def replace_code_if_shorter(
    conn: sqlite3.Connection,
    rowid: int,
    code: str,
    digest: str,
    provenance: Mapping[str, str],
) -> dict[str, Any] | None:
    """Swap in `code` when the skill is unverified and `code` is shorter (normalised).

    Provenance (`source_trajectory_id`, `challenge_hash`, `tier`) follows the code.

    Returns:
        The `extra` update (the replaced code's provenance appended to
        `code_replaced`, `same_code_challenges` emptied), or None if kept.
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
