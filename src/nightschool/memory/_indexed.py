"""The vector side of the playbook: per-kind indices, writes, retraction, restore.

`IndexedPlaybook` keeps one in-memory `VectorIndex` per kind (lessons and skills
never compete for the same vector candidates) mirroring the embedding BLOBs of
the `lessons` table, and owns everything that changes the set of vectors:
inserts, the archive (retraction, size cap), bulk restore and re-embedding.
`SkillMemory` adds learning and retrieval on top.
"""

from __future__ import annotations

import collections
import concurrent.futures
import contextlib
import json
import sqlite3
from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from nightschool.errors import UserError
from nightschool.memory._default import default_embedder
from nightschool.memory._embed import Embedder
from nightschool.memory._index import VectorIndex
from nightschool.memory._lexical import LexicalIndex
from nightschool.memory._lexical_pg import PgLexicalIndex
from nightschool.memory._model import KINDS, Kind, MemoryConfig
from nightschool.memory._records import PlaybookRecords
from nightschool.memory._rows import (
    ARCHIVE_COPY_COLUMNS,
    MAX_REINFORCED_BY,
    RESTORE_COLUMNS,
    RESTORE_INDEX,
    any_of,
    entry_text,
    epoch_now,
    from_blob,
    new_lesson_id,
    restore_values,
    to_blob,
)
from nightschool.store import Store

DEFAULT_DUPLICATE_THRESHOLD = 0.92
"""Near-duplicate cosine for an embedder without its own `duplicate_threshold`."""

DEFAULT_VECTOR_WEIGHT = 0.9
"""Fusion weight of the vector side for an embedder without its own `vector_weight`."""

DEFAULT_RELEVANCE_FLOOR = 0.26
"""Relevance floor for an embedder without its own `relevance_floor`: the value
calibrated for all-MiniLM-L6-v2 (`MiniLMEmbedder.relevance_floor`, where the
measured figures are), a common scale for sentence-embedding cosines. Measure
another model with `bench/bench_retrieval.py --floors-only` and set
`MemoryConfig.min_score` (or a `relevance_floor` attribute on the embedder)."""

QUERY_CACHE_SIZE = 256
"""Query vectors kept by `retrieve` (an agent retrying a task asks the same request)."""

REEMBED_BATCH = 256
"""Entries embedded per call when vectors of another model are refreshed."""


class Entry(NamedTuple):
    """What the index remembers of one row besides its vector."""

    id: str
    domains: frozenset[str]
    kind: str


class IndexedPlaybook(PlaybookRecords):
    """Playbook rows plus their in-memory vector indices (one per kind).

    Args:
        store: an open `Store` (migrated to `m006_skills`).
        embedder: the embedding model; None means `default_embedder()`.
        config: tuning; None means `MemoryConfig()`.

    Raises:
        UserError: `embedder` is None and the packaged model is not installed.
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
        self._indices = {
            kind: VectorIndex(
                embedder.dim,
                exact_max=self.config.exact_search_max,
                shortlist=self.config.prefilter_shortlist,
            )
            for kind in KINDS
        }
        self._lexical = lexical_index(
            store,
            posting_budget=self.config.fts_posting_budget,
            prune_min_rows=self.config.fts_prune_min_rows,
        )
        self._generation: int | None = None
        self._executor: concurrent.futures.ThreadPoolExecutor | None = None
        self._query_cache: collections.OrderedDict[str, npt.NDArray[np.float32]] = (
            collections.OrderedDict()
        )
        self._meta: dict[int, Entry] = {}
        """rowid -> id, domains and kind of every row in the indices."""

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

    def relevance_floor(self, kind: Kind = "lesson") -> float:
        """The fused score below which `retrieve` drops an entry of `kind`.

        `config.min_score` / `config.min_skill_score` when set; otherwise the
        embedder's `relevance_floor` (`skill_relevance_floor` for skills, falling
        back to `relevance_floor`), else `DEFAULT_RELEVANCE_FLOOR`; 0 under
        `fusion="rrf"` with no explicit floor.
        """
        explicit = self.config.min_skill_score if kind == "skill" else self.config.min_score
        if explicit is not None:
            return explicit
        if self.config.fusion != "mix":
            return 0.0
        names = ("skill_relevance_floor", "relevance_floor") if kind == "skill" else ()
        for name in names or ("relevance_floor",):
            value = getattr(self.embedder, name, None)
            if isinstance(value, int | float):
                return float(value)
        return DEFAULT_RELEVANCE_FLOOR

    # -- writing ----------------------------------------------------------------

    def _insert(
        self,
        conn: sqlite3.Connection,
        values: Mapping[str, Any],
        vector: npt.NDArray[np.float32],
    ) -> tuple[str, int]:
        """Insert one row under a fresh id and mirror its vector; returns (id, rowid)."""
        now = epoch_now()
        row = {
            "created_at": now,
            "updated_at": now,
            **values,
            "embedding": to_blob(vector),
            "embedding_model": self.embedder.name,
        }
        columns = ", ".join(("id", *row))
        marks = ", ".join("?" * (len(row) + 1))
        for _ in range(5):
            lesson_id = new_lesson_id()
            try:
                cursor = conn.execute(
                    f"INSERT INTO lessons ({columns}) VALUES ({marks})", (lesson_id, *row.values())
                )
            except sqlite3.IntegrityError:  # id collision: draw another
                continue
            assert cursor.lastrowid is not None
            kind = str(row.get("kind", "lesson"))
            self._mirror(cursor.lastrowid, vector, lesson_id, str(row["domains"]), kind)
            return lesson_id, cursor.lastrowid
        raise RuntimeError("could not draw an unused lesson id in 5 tries")

    def _mirror(
        self, rowid: int, vector: npt.NDArray[np.float32], lesson_id: str, domains: str, kind: str
    ) -> None:
        self._indices[kind if kind in self._indices else "lesson"].add(rowid, vector)
        self._meta[rowid] = Entry(lesson_id, frozenset(json.loads(domains)), kind)

    def _reinforce(
        self,
        conn: sqlite3.Connection,
        rowid: int,
        trajectory_id: str,
        source: str,
        extra_update: Mapping[str, Any] | None = None,
    ) -> None:
        """Count a near-duplicate: +1 reinforcement, confidence nudged up, history kept."""
        confidence, extra_text = conn.execute(
            "SELECT confidence, extra FROM lessons WHERE rowid = ?", (rowid,)
        ).fetchone()
        extra = json.loads(extra_text)
        extra.update(extra_update or {})
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
                    self._mirror(
                        cursor.lastrowid,
                        np.asarray(vector, dtype=np.float32),
                        values[at["id"]],
                        values[at["domains"]],
                        values[at["kind"]],
                    )
                    inserted += 1
        return inserted

    # -- retraction and cap -----------------------------------------------------

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
        """Archive, then delete, one lesson or skill by id (one transaction). Idempotent.

        Returns:
            True when the entry existed and was removed.
        """
        with self._writing() as conn:
            rows = conn.execute("SELECT rowid FROM lessons WHERE id = ?", (lesson_id,)).fetchall()
            self._archive(conn, [int(r[0]) for r in rows], reason)
        return bool(rows)

    def _archive(self, conn: sqlite3.Connection, rowids: Sequence[int], reason: str) -> None:
        if not rowids:
            return
        in_rowids, ids = any_of(self.store.dialect, rowids)
        conn.execute(
            f"INSERT INTO lessons_archive ({ARCHIVE_COPY_COLUMNS}, archived_at, archive_reason) "
            f"SELECT {ARCHIVE_COPY_COLUMNS}, ?, ? FROM lessons "
            f"WHERE rowid {in_rowids} ORDER BY rowid",
            (epoch_now(), reason, ids),
        )
        conn.execute(f"DELETE FROM lessons WHERE rowid {in_rowids}", (ids,))
        for index in self._indices.values():
            index.remove(rowids)
        for rowid in rowids:
            self._meta.pop(rowid, None)

    def _enforce_cap(self, conn: sqlite3.Connection, *, keep_rowid: int, kind: Kind) -> None:
        """Archive the least useful unverified entries of `kind` while above `max_lessons`.

        Fires only when that kind has more entries than the cap, removes only the
        excess, never a verified entry and never the one just written. Utility
        order: (helpful + passes - failures), then confidence, then age.
        """
        cap = self.config.max_lessons
        if cap is None:
            return
        count = conn.execute("SELECT count(*) FROM lessons WHERE kind = ?", (kind,)).fetchone()
        excess = int(count[0]) - cap
        if excess <= 0:
            return
        victims = [
            int(r[0])
            for r in conn.execute(
                "SELECT rowid FROM lessons WHERE kind = ? AND verified = 0 AND rowid != ? "
                "ORDER BY times_helpful + times_followed_by_pass - times_followed_by_failure, "
                "confidence, updated_at, id LIMIT ?",
                (kind, keep_rowid, excess),
            )
        ]
        self._archive(conn, victims, "size_cap")

    # -- threads ----------------------------------------------------------------

    def _worker(self) -> concurrent.futures.ThreadPoolExecutor:
        """One worker thread that runs the BM25 query while the query is embedded.

        Both SQLite and onnxruntime release the GIL, so on two cores the FTS5
        query (1-2 ms at 10k lessons) hides behind the embedding (4-5 ms). The
        worker reads through its own read-only connection (WAL readers never
        wait for writers) and never takes the store's lock, so a caller that
        holds a store transaction cannot deadlock with it; inside a transaction,
        or for an in-memory database, the search runs inline instead, as it
        always does on Postgres (`PgLexicalIndex.open_reader`).
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
        """A write transaction whose vector changes are mirrored in the indices.

        The indices are synced first, inside the transaction (so no other writer
        can slip in); the caller mirrors its changes (`_insert`, `_archive`); on
        commit the indices adopt the new generation. Any exception marks them
        stale, so the next use reloads them from the database.
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
        """Reload the vector indices if the stored vectors changed behind our back."""
        with self._lock:
            current = int(
                self.store.query("SELECT generation FROM lesson_index_state WHERE id = 1")[0][0]
            )
            if current == self._generation:
                return
            self._reembed_foreign_vectors()
            with self.store.transaction() as conn:
                rows = conn.execute(
                    "SELECT rowid, embedding, id, domains, kind FROM lessons ORDER BY rowid"
                ).fetchall()
                generation = self._read_generation(conn)
            dim = self.embedder.dim
            self._meta = {}
            for kind, index in self._indices.items():
                mine = [row for row in rows if row[4] == kind]
                matrix = np.zeros((len(mine), dim), dtype=np.float32)
                for i, (rowid, blob, lesson_id, domains, _) in enumerate(mine):
                    vec = from_blob(blob, dim)
                    if vec is not None:
                        matrix[i] = vec
                    self._meta[int(rowid)] = Entry(lesson_id, frozenset(json.loads(domains)), kind)
                index.reset((int(r[0]) for r in mine), matrix)
            self._generation = generation

    def _reembed_foreign_vectors(self) -> None:
        """Re-embed entries whose stored vector came from another model (or none)."""
        name = self.embedder.name
        while True:
            rows = self.store.query(
                "SELECT rowid, kind, trigger, anti_pattern, correct_pattern FROM lessons "
                "WHERE embedding_model != ? OR embedding IS NULL OR length(embedding) != ? "
                "ORDER BY rowid LIMIT ?",
                (name, 4 * self.embedder.dim, REEMBED_BATCH),
            )
            if not rows:
                return
            vectors = self.embedder.embed([entry_text(*row[1:]) for row in rows])
            with self.store.transaction() as conn:
                conn.executemany(
                    "UPDATE lessons SET embedding = ?, embedding_model = ? WHERE rowid = ?",
                    [(to_blob(v), name, r[0]) for r, v in zip(rows, vectors, strict=True)],
                )


def lexical_index(store: Store, *, posting_budget: int, prune_min_rows: int) -> LexicalIndex:
    """The lexical index for `store.dialect`, with these arguments.

    Returns:
        `LexicalIndex` (SQLite FTS5 BM25) or `PgLexicalIndex` (Postgres
        full-text search ranked by `ts_rank`; see `_lexical_pg`).
    """
    if store.dialect == "postgres":
        return PgLexicalIndex(store, posting_budget=posting_budget, prune_min_rows=prune_min_rows)
    return LexicalIndex(store, posting_budget=posting_budget, prune_min_rows=prune_min_rows)
