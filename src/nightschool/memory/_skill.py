"""`SkillMemory`: the playbook of lessons, with hybrid retrieval and retraction."""

from __future__ import annotations

import collections
import concurrent.futures
import contextlib
import json
import sqlite3
from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import numpy as np
import numpy.typing as npt

from nightschool.errors import UserError
from nightschool.memory._default import default_embedder
from nightschool.memory._embed import Embedder
from nightschool.memory._index import VectorIndex
from nightschool.memory._lexical import LexicalIndex
from nightschool.memory._model import (
    LearnResult,
    Lesson,
    MemoryConfig,
    RetrievedLesson,
)
from nightschool.memory._records import PlaybookRecords
from nightschool.memory._rows import (
    ARCHIVE_COPY_COLUMNS,
    MAX_REINFORCED_BY,
    RESTORE_COLUMNS,
    SELECT_LESSON,
    embedding_text,
    epoch_now,
    from_blob,
    new_lesson_id,
    restore_values,
    to_blob,
    to_lesson,
    validation_problem,
)
from nightschool.memory._text import normalise, tokens
from nightschool.redact import redact, redact_text
from nightschool.store import Store

DEFAULT_DUPLICATE_THRESHOLD = 0.92
"""Near-duplicate cosine for an embedder without its own `duplicate_threshold`."""

DEFAULT_VECTOR_WEIGHT = 0.9
"""Fusion weight of the vector side for an embedder without its own `vector_weight`."""

QUERY_CACHE_SIZE = 256
"""Query vectors kept by `retrieve` (an agent retrying a task asks the same request)."""

REEMBED_BATCH = 256
"""Lessons embedded per call when vectors of another model are refreshed."""


class SkillMemory(PlaybookRecords):
    """The playbook: learn lessons, retrieve them for a request, retract them.

    Lessons live in the store's `lessons` table (FTS5 index `lessons_fts` kept
    in sync by triggers); their embeddings are BLOBs in the same rows and an
    in-memory `VectorIndex` mirrors them. The index is loaded on first use and
    reloaded when `lesson_index_state.generation` shows that another writer
    (another `SkillMemory`, another process) changed the set of vectors.

    Thread-safe: one re-entrant lock serialises calls on this object, and
    writes run inside `store.transaction()`.

    Args:
        store: an open `Store` (migrated to `m004_lesson_memory`).
        embedder: the embedding model; None means `default_embedder()` (the
            packaged model), which raises `UserError` if it is not installed.
        config: tuning; None means `MemoryConfig()`.
    """

    def __init__(
        self,
        store: Store,
        embedder: Embedder | None = None,
        config: MemoryConfig | None = None,
    ) -> None:
        if embedder is None:
            embedder = default_embedder()
        super().__init__(store)
        self.embedder = embedder
        self.config = config or MemoryConfig()
        self._index = VectorIndex(
            embedder.dim,
            exact_max=self.config.exact_search_max,
            shortlist=self.config.prefilter_shortlist,
        )
        self._lexical = LexicalIndex(
            store,
            posting_budget=self.config.fts_posting_budget,
            prune_min_rows=self.config.fts_prune_min_rows,
        )
        self._generation: int | None = None
        self._executor: concurrent.futures.ThreadPoolExecutor | None = None
        self._query_cache: collections.OrderedDict[str, npt.NDArray[np.float32]] = (
            collections.OrderedDict()
        )
        self._meta: dict[int, tuple[str, frozenset[str]]] = {}
        """rowid -> (lesson id, domains) for every lesson in the index."""

    @property
    def duplicate_threshold(self) -> float:
        """Cosine at or above which `learn` reinforces instead of writing."""
        if self.config.duplicate_threshold is not None:
            return self.config.duplicate_threshold
        value = getattr(self.embedder, "duplicate_threshold", None)
        return float(value) if isinstance(value, int | float) else DEFAULT_DUPLICATE_THRESHOLD

    @property
    def vector_weight(self) -> float:
        """Weight of the vector side in fusion (BM25 gets 1 - this)."""
        if self.config.vector_weight is not None:
            return self.config.vector_weight
        value = getattr(self.embedder, "vector_weight", None)
        return float(value) if isinstance(value, int | float) else DEFAULT_VECTOR_WEIGHT

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
        """Add a lesson, or reinforce the near-duplicate already in the playbook.

        Text is redacted before anything else. A near-duplicate is a lesson
        with the same normalised trigger (case, punctuation and whitespace
        ignored), or whose embedding has cosine >= `duplicate_threshold` with
        this one. Reinforcing adds 1 to `reinforcements`, moves confidence
        `config.reinforce_step` of the way to 1, keeps the original provenance
        and appends `{trajectory_id, source, at}` to `extra["reinforced_by"]`.

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
        code_example = redact_text(code_example)
        domain_list = sorted(set(domains), key=list(domains).index)
        vector = self._embed_one(embedding_text(trigger, anti_pattern, correct_pattern))
        with self._writing() as conn:
            duplicate = self._find_duplicate(conn, trigger, vector)
            if duplicate is not None:
                rowid, lesson_id, why = duplicate
                self._reinforce(conn, rowid, source_trajectory_id.strip(), source)
                return LearnResult(status="reinforced", lesson_id=lesson_id, reason=why)
            lesson_id, rowid = self._insert(
                conn,
                (
                    trigger,
                    anti_pattern,
                    correct_pattern,
                    code_example,
                    json.dumps(domain_list),
                    float(confidence),
                    int(bool(verified)),
                    source,
                    source_trajectory_id.strip(),
                    challenge_hash,
                    to_blob(vector),
                    self.embedder.name,
                    extra_json,
                ),
            )
            self._index.add(rowid, vector)
            self._meta[rowid] = (lesson_id, frozenset(domain_list))
            self._enforce_cap(conn, keep_rowid=rowid)
        return LearnResult(status="written", lesson_id=lesson_id, reason="new lesson")

    def _insert(self, conn: sqlite3.Connection, values: tuple[Any, ...]) -> tuple[str, int]:
        now = epoch_now()
        for _ in range(5):
            lesson_id = new_lesson_id()
            try:
                cursor = conn.execute(
                    "INSERT INTO lessons (id, created_at, updated_at, trigger, anti_pattern, "
                    "correct_pattern, code_example, domains, confidence, verified, source, "
                    "source_trajectory_id, challenge_hash, embedding, embedding_model, extra) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (lesson_id, now, now, *values),
                )
            except sqlite3.IntegrityError:  # id collision: draw another
                continue
            assert cursor.lastrowid is not None
            return lesson_id, cursor.lastrowid
        raise RuntimeError("could not draw an unused lesson id in 5 tries")

    def _find_duplicate(
        self, conn: sqlite3.Connection, trigger: str, vector: npt.NDArray[np.float32]
    ) -> tuple[int, str, str] | None:
        wanted = normalise(trigger)
        words = tokens(trigger, keep_stopwords=True)
        if words:
            phrase = 'trigger : "' + " ".join(words) + '"'
            rows = conn.execute(
                "SELECT l.rowid, l.id, l.trigger FROM lessons_fts f JOIN lessons l "
                "ON l.rowid = f.rowid WHERE lessons_fts MATCH ? ORDER BY l.rowid LIMIT 50",
                (phrase,),
            ).fetchall()
            for rowid, lesson_id, other in rows:
                if normalise(other) == wanted:
                    return rowid, lesson_id, f"same trigger as {lesson_id}"
        keys, sims = self._index.search(vector, 1)
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

    def _reinforce(
        self, conn: sqlite3.Connection, rowid: int, trajectory_id: str, source: str
    ) -> None:
        confidence, extra_text = conn.execute(
            "SELECT confidence, extra FROM lessons WHERE rowid = ?", (rowid,)
        ).fetchone()
        extra = json.loads(extra_text)
        history = list(extra.get("reinforced_by", []))
        history.append(
            {
                "trajectory_id": trajectory_id,
                "source": source,
                "at": datetime.now(UTC).isoformat(),
            }
        )
        extra["reinforced_by"] = history[-MAX_REINFORCED_BY:]
        step = self.config.reinforce_step
        conn.execute(
            "UPDATE lessons SET reinforcements = reinforcements + 1, confidence = ?, "
            "extra = ?, updated_at = ? WHERE rowid = ?",
            (
                min(1.0, confidence + step * (1.0 - confidence)),
                json.dumps(extra, sort_keys=True),
                epoch_now(),
                rowid,
            ),
        )

    # -- retrieval --------------------------------------------------------------

    def retrieve(self, query: str, k: int = 3, cluster: str | None = None) -> list[RetrievedLesson]:
        """The `k` lessons that best match `query`, best first.

        Hybrid ranking: the top `config.candidates` lessons by FTS5 BM25 (the
        query sanitised into an OR of quoted tokens, so no user text is FTS
        syntax; the most common words dropped to fit `config.fts_posting_budget`)
        and by embedding cosine are fused (`config.fusion`: a weighted mix of
        cosine and saturated BM25 by default) into a score in 0..1, plus
        `config.cluster_boost` when `cluster` is one of the lesson's domains.
        Ties break by lesson id, so equal inputs give equal outputs.

        Args:
            query: the request text (any string; may be empty).
            k: how many lessons at most; <= 0 returns [].
            cluster: the task's domain, if known (e.g. `sql`).

        Returns:
            Up to `k` `RetrievedLesson`s with ranks 1..k; [] for an empty playbook.
        """
        if k <= 0:
            return []
        with self._lock:
            self._sync_index()
            if len(self._index) == 0:
                return []
            cfg = self.config
            total = len(self._index)
            reader = None if self.store.connection.in_transaction else self._lexical.open_reader()
            lexical = (
                self._worker().submit(self._lexical.search, query, cfg.candidates, total, reader)
                if reader is not None
                else None
            )
            try:
                qvec = self._embed_query(query)
                vec_keys, _ = self._index.search(qvec, cfg.candidates)
            finally:
                bm25 = (
                    lexical.result()
                    if lexical is not None
                    else self._lexical.search(query, cfg.candidates, total)
                )
            candidates = list(dict.fromkeys([*map(int, vec_keys), *bm25]))
            cosine = self._index.scores(qvec, candidates)
            fused = self._fuse(vec_keys, bm25, cosine)
            meta = self._meta
            scored = []
            for rowid in candidates:
                if rowid not in meta:
                    continue
                lesson_id, domains = meta[rowid]
                boost = cfg.cluster_boost if cluster and cluster in domains else 0.0
                scored.append((fused.get(rowid, 0.0) + boost, lesson_id, rowid))
            scored.sort(key=lambda item: (-item[0], item[1]))
            top = scored[:k]
            lessons = self._lessons_by_rowid([rowid for _, _, rowid in top])
        kept = [(score, rowid) for score, _, rowid in top if rowid in lessons]
        return [
            RetrievedLesson(
                lesson=lessons[rowid],
                score=score,
                bm25_score=bm25.get(rowid, 0.0),
                vector_score=cosine.get(rowid, 0.0),
                rank=rank,
            )
            for rank, (score, rowid) in enumerate(kept, start=1)
        ]

    def _fuse(
        self, vec_keys: npt.NDArray[np.int64], bm25: dict[int, float], cosine: dict[int, float]
    ) -> dict[int, float]:
        cfg = self.config
        wv = self.vector_weight
        wb = 1.0 - wv
        fused: dict[int, float] = {}
        if cfg.fusion == "rrf":
            top = (wv + wb) / (cfg.rrf_k + 1)
            for rank, key in enumerate(vec_keys, start=1):
                fused[int(key)] = wv / (cfg.rrf_k + rank) / top
            for rank, key in enumerate(bm25, start=1):
                fused[key] = fused.get(key, 0.0) + wb / (cfg.rrf_k + rank) / top
            return fused
        half = cfg.bm25_half
        for key in {*map(int, vec_keys), *bm25}:
            lexical = bm25.get(key, 0.0)
            fused[key] = wv * max(cosine.get(key, 0.0), 0.0) + wb * lexical / (lexical + half)
        return fused

    def _lessons_by_rowid(self, rowids: Sequence[int]) -> dict[int, Lesson]:
        rows = self.store.query(
            f"SELECT rowid, {SELECT_LESSON} FROM lessons WHERE rowid IN "
            "(SELECT value FROM json_each(?))",
            (json.dumps(list(rowids)),),
        )
        return {int(row[0]): to_lesson(row[1:]) for row in rows}

    def restore(self, records: Iterable[Mapping[str, Any]], *, batch_size: int = 256) -> int:
        """Insert lessons from `export()` records as they are (no near-duplicate check).

        For backups and bulk loads: ids, times, counters and provenance are
        kept; text is redacted; embeddings are computed in batches of
        `batch_size`, each batch in one transaction. Records whose id is already
        in the playbook are skipped.

        Returns:
            How many lessons were inserted.

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
        texts = [embedding_text(v[3], v[4], v[5]) for v in batch]
        vectors = self.embedder.embed(texts)
        columns = ", ".join(RESTORE_COLUMNS)
        marks = ", ".join("?" * len(RESTORE_COLUMNS))
        inserted = 0
        with self._writing() as conn:
            for values, vector in zip(batch, vectors, strict=True):
                cursor = conn.execute(
                    f"INSERT OR IGNORE INTO lessons ({columns}) VALUES ({marks})",
                    (*values, to_blob(vector), self.embedder.name),
                )
                if cursor.rowcount == 1 and cursor.lastrowid is not None:
                    self._index.add(cursor.lastrowid, np.asarray(vector, dtype=np.float32))
                    self._meta[cursor.lastrowid] = (values[0], frozenset(json.loads(values[7])))
                    inserted += 1
        return inserted

    # -- retraction and cap -----------------------------------------------------

    def retract_from_trajectory(self, trajectory_id: str, reason: str = "retracted") -> int:
        """Archive, then delete, every lesson whose provenance is `trajectory_id`.

        Archive and delete run in one transaction: a lesson is never lost.
        Idempotent. An empty or whitespace id retracts nothing (legacy lessons
        without provenance have `source_trajectory_id == ""` and must never be
        bulk-removed by a caller bug).

        Returns:
            How many lessons were removed.
        """
        if not isinstance(trajectory_id, str) or not trajectory_id.strip():
            return 0
        with self._writing() as conn:
            rowids = [
                int(r[0])
                for r in conn.execute(
                    "SELECT rowid FROM lessons WHERE source_trajectory_id = ? ORDER BY rowid",
                    (trajectory_id.strip(),),
                )
            ]
            self._archive(conn, rowids, reason)
        return len(rowids)

    def retract(self, lesson_id: str, reason: str = "retracted") -> bool:
        """Archive, then delete, one lesson by id (one transaction). Idempotent.

        Returns:
            True when the lesson existed and was removed.
        """
        with self._writing() as conn:
            rows = conn.execute("SELECT rowid FROM lessons WHERE id = ?", (lesson_id,)).fetchall()
            self._archive(conn, [int(r[0]) for r in rows], reason)
        return bool(rows)

    def _archive(self, conn: sqlite3.Connection, rowids: Sequence[int], reason: str) -> None:
        if not rowids:
            return
        ids = json.dumps(list(rowids))
        conn.execute(
            f"INSERT INTO lessons_archive ({ARCHIVE_COPY_COLUMNS}, archived_at, archive_reason) "
            f"SELECT {ARCHIVE_COPY_COLUMNS}, ?, ? FROM lessons "
            "WHERE rowid IN (SELECT value FROM json_each(?)) ORDER BY rowid",
            (epoch_now(), reason, ids),
        )
        conn.execute("DELETE FROM lessons WHERE rowid IN (SELECT value FROM json_each(?))", (ids,))
        self._index.remove(rowids)
        for rowid in rowids:
            self._meta.pop(rowid, None)

    def _enforce_cap(self, conn: sqlite3.Connection, *, keep_rowid: int) -> None:
        """Archive the least useful unverified lessons while above `max_lessons`.

        Fires only when the playbook is larger than the cap, removes only the
        excess, never a verified lesson and never the one just written. Utility
        order: (helpful + passes - failures), then confidence, then age.
        """
        cap = self.config.max_lessons
        if cap is None:
            return
        excess = int(conn.execute("SELECT count(*) FROM lessons").fetchone()[0]) - cap
        if excess <= 0:
            return
        victims = [
            int(r[0])
            for r in conn.execute(
                "SELECT rowid FROM lessons WHERE verified = 0 AND rowid != ? ORDER BY "
                "times_helpful + times_followed_by_pass - times_followed_by_failure, "
                "confidence, updated_at, id LIMIT ?",
                (keep_rowid, excess),
            )
        ]
        self._archive(conn, victims, "size_cap")

    def _worker(self) -> concurrent.futures.ThreadPoolExecutor:
        """One worker thread that runs the BM25 query while the query is embedded.

        Both SQLite and onnxruntime release the GIL, so on two cores the FTS5
        query (1-2 ms at 10k lessons) hides behind the embedding (4-5 ms). The
        worker reads through its own read-only connection (WAL readers never
        wait for writers) and never takes the store's lock, so a caller that
        holds a store transaction cannot deadlock with it; inside a transaction,
        or for an in-memory database, the search runs inline instead.
        """
        if self._executor is None:
            self._executor = concurrent.futures.ThreadPoolExecutor(
                max_workers=1, thread_name_prefix="nightschool-bm25"
            )
        return self._executor

    def close(self) -> None:
        """Stop the worker thread and close its read-only connection (optional).

        Does not wait for a query still running on the worker (an interrupted
        `retrieve` may leave one): exit must never hang on it.
        """
        with self._lock:
            if self._executor is not None:
                self._executor.shutdown(wait=False, cancel_futures=True)
                self._executor = None
            self._lexical.close()

    # -- vector index -----------------------------------------------------------

    def _embed_query(self, text: str) -> npt.NDArray[np.float32]:
        """The query's vector, from a small LRU cache (retries repeat their request)."""
        vector = self._query_cache.pop(text, None)
        if vector is None:
            vector = self._embed_one(text)
        self._query_cache[text] = vector
        while len(self._query_cache) > QUERY_CACHE_SIZE:
            self._query_cache.popitem(last=False)
        return vector

    def _embed_one(self, text: str) -> npt.NDArray[np.float32]:
        out = self.embedder.embed([text])
        return np.asarray(out[0], dtype=np.float32)

    def _read_generation(self, conn: sqlite3.Connection) -> int:
        return int(
            conn.execute("SELECT generation FROM lesson_index_state WHERE id = 1").fetchone()[0]
        )

    @contextlib.contextmanager
    def _writing(self) -> Iterator[sqlite3.Connection]:
        """A write transaction whose vector changes are mirrored in the index.

        The index is synced first, inside the transaction (so no other writer
        can slip in); the caller mirrors its changes with `self._index`; on
        commit the index adopts the new generation. Any exception marks the
        index stale, so the next use reloads it from the database.
        """
        with self._lock:
            try:
                with self.store.transaction() as conn:
                    self._sync_index()
                    yield conn
                    self._generation = self._read_generation(conn)
            except BaseException:
                self._generation = None
                raise

    def _sync_index(self) -> None:
        """Reload the vector index if the stored vectors changed behind our back."""
        with self._lock:
            current = int(
                self.store.query("SELECT generation FROM lesson_index_state WHERE id = 1")[0][0]
            )
            if current == self._generation:
                return
            self._reembed_foreign_vectors()
            with self.store.transaction() as conn:
                rows = conn.execute(
                    "SELECT rowid, embedding, id, domains FROM lessons ORDER BY rowid"
                ).fetchall()
                generation = self._read_generation(conn)
            dim = self.embedder.dim
            matrix = np.zeros((len(rows), dim), dtype=np.float32)
            self._meta = {}
            for i, (rowid, blob, lesson_id, domains) in enumerate(rows):
                vec = from_blob(blob, dim)
                if vec is not None:
                    matrix[i] = vec
                self._meta[int(rowid)] = (lesson_id, frozenset(json.loads(domains)))
            self._index.reset((int(r[0]) for r in rows), matrix)
            self._generation = generation

    def _reembed_foreign_vectors(self) -> None:
        """Re-embed lessons whose stored vector came from another model (or none)."""
        name = self.embedder.name
        while True:
            rows = self.store.query(
                "SELECT rowid, trigger, anti_pattern, correct_pattern FROM lessons "
                "WHERE embedding_model != ? OR embedding IS NULL OR length(embedding) != ? "
                "ORDER BY rowid LIMIT ?",
                (name, 4 * self.embedder.dim, REEMBED_BATCH),
            )
            if not rows:
                return
            vectors = self.embedder.embed([embedding_text(t, a, c) for _, t, a, c in rows])
            with self.store.transaction() as conn:
                conn.executemany(
                    "UPDATE lessons SET embedding = ?, embedding_model = ? WHERE rowid = ?",
                    [(to_blob(v), name, r[0]) for r, v in zip(rows, vectors, strict=True)],
                )
