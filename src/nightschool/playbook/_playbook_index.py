"""`PlaybookIndex`: the vector and lexical indices over the playbook's rows, kept in sync.

One in-memory `VectorIndex` per kind (lessons and skills never compete for the
same vector candidates) mirrors the embedding BLOBs of the `lessons` table; the
lexical side (SQLite FTS5 BM25, or Postgres full-text search) lives in the
database and is kept in sync by triggers, so only the vectors need mirroring.
`lesson_index_state.generation` counts changes to the set of vectors: when it
moved behind our back (another `SkillMemory`, another process), the next use
reloads the vectors, re-embedding rows written by another model first.
"""

from __future__ import annotations

import collections
import concurrent.futures
import contextlib
import json
import sqlite3
from collections.abc import Iterable, Iterator
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from nightschool.playbook._embed import Embedder
from nightschool.playbook._index import VectorIndex
from nightschool.playbook._lexical import LexicalIndex
from nightschool.playbook._lexical_pg import PgLexicalIndex
from nightschool.playbook._model import KINDS, Kind, MemoryConfig
from nightschool.playbook._rows import entry_text, from_blob, to_blob
from nightschool.store import Store

QUERY_CACHE_SIZE = 256
"""Query vectors kept by `embed_query` (an agent retrying a task asks the same request)."""

REEMBED_BATCH = 256
"""Entries embedded per call when vectors of another model are refreshed."""


class Entry(NamedTuple):
    """What the index remembers of one row besides its vector."""

    id: str
    domains: frozenset[str]
    kind: str


class Candidates(NamedTuple):
    """What `PlaybookIndex.search` found for one query."""

    query_vector: npt.NDArray[np.float32]
    """The query's embedding, shape `(dim,)`."""
    vector_keys: list[int]
    """Rowids of the kind asked for, best cosine first."""
    lexical: dict[int, float]
    """rowid -> lexical score (BM25, or `ts_rank` on Postgres), best first; may hold
    rows of the other kind unless the search was restricted to one kind."""


class PlaybookIndex:
    """The vectors (one `VectorIndex` per kind) and the lexical index of the playbook.

    Not a store of record: every vector is a copy of a `lessons` row's BLOB. A
    writer changes rows inside `writing()` and reports each change (`mirror`,
    `forget`); a reader calls `sync()` (under the store's lock) before it reads.

    Args:
        store: an open `Store` (migrated to `m006_skills`).
        embedder: the embedding model (`dim`-wide unit vectors).
        config: tuning (`exact_search_max`, `prefilter_shortlist`,
            `fts_posting_budget`, `fts_prune_min_rows` are read here).
    """

    def __init__(self, store: Store, embedder: Embedder, config: MemoryConfig) -> None:
        self.store = store
        self.embedder = embedder
        self.config = config
        self._lock = store.lock
        self.vectors: dict[str, VectorIndex] = {
            kind: VectorIndex(
                embedder.dim,
                exact_max=config.exact_search_max,
                shortlist=config.prefilter_shortlist,
            )
            for kind in KINDS
        }
        """kind -> the vectors of that kind, keyed by rowid."""
        self.lexical = lexical_index(
            store,
            posting_budget=config.fts_posting_budget,
            prune_min_rows=config.fts_prune_min_rows,
        )
        self.entries: dict[int, Entry] = {}
        """rowid -> id, domains and kind of every row in the vector indices."""
        self._generation: int | None = None
        self._executor: concurrent.futures.ThreadPoolExecutor | None = None
        self._query_cache: collections.OrderedDict[str, npt.NDArray[np.float32]] = (
            collections.OrderedDict()
        )

    # -- embedding --------------------------------------------------------------

    def embed(self, text: str) -> npt.NDArray[np.float32]:
        """The embedding of `text`, shape `(dim,)`, float32 (no cache)."""
        out = self.embedder.embed([text])
        return np.asarray(out[0], dtype=np.float32)

    def embed_query(self, text: str) -> npt.NDArray[np.float32]:
        """As `embed`, from a small LRU cache (`QUERY_CACHE_SIZE`; retries repeat a request)."""
        vector = self._query_cache.pop(text, None)
        if vector is None:
            vector = self.embed(text)
        self._query_cache[text] = vector
        while len(self._query_cache) > QUERY_CACHE_SIZE:
            self._query_cache.popitem(last=False)
        return vector

    # -- keeping the vectors in step with the rows ---------------------------------

    def mirror(
        self,
        rowid: int,
        vector: npt.NDArray[np.float32],
        lesson_id: str,
        domains: str,
        kind: str,
    ) -> None:
        """Add (or replace) the vector of a row just written.

        Args:
            rowid: the row's rowid.
            vector: its embedding, shape `(dim,)`.
            lesson_id: its id.
            domains: its `domains` column (a JSON list).
            kind: `lesson` or `skill` (anything else is filed with lessons).
        """
        self.vectors[kind if kind in self.vectors else "lesson"].add(rowid, vector)
        self.entries[rowid] = Entry(lesson_id, frozenset(json.loads(domains)), kind)

    def forget(self, rowids: Iterable[int]) -> None:
        """Drop the vectors of rows just deleted (unknown rowids are ignored)."""
        rowids = list(rowids)
        for index in self.vectors.values():
            index.remove(rowids)
        for rowid in rowids:
            self.entries.pop(rowid, None)

    @contextlib.contextmanager
    def writing(self) -> Iterator[sqlite3.Connection]:
        """A write transaction (under the store's lock) whose vector changes are mirrored.

        The indices are synced first, inside the transaction (so no other writer
        can slip in); the caller reports its changes (`mirror`, `forget`); on
        commit the indices adopt the new generation. Any exception marks them
        stale, so the next use reloads them from the database.

        Yields:
            The transaction's connection.
        """
        with self._lock:
            try:
                with self.store.transaction() as conn:
                    self.sync()
                    yield conn
                    self._generation = self._read_generation(conn)
            except BaseException:
                self._generation = None
                raise

    def sync(self) -> None:
        """Reload the vectors if the stored ones changed behind our back (cheap when not)."""
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
            self.entries = {}
            for kind, index in self.vectors.items():
                mine = [row for row in rows if row[4] == kind]
                matrix = np.zeros((len(mine), dim), dtype=np.float32)
                for i, (rowid, blob, lesson_id, domains, _) in enumerate(mine):
                    vec = from_blob(blob, dim)
                    if vec is not None:
                        matrix[i] = vec
                    self.entries[int(rowid)] = Entry(
                        lesson_id, frozenset(json.loads(domains)), kind
                    )
                index.reset((int(r[0]) for r in mine), matrix)
            self._generation = generation

    @staticmethod
    def _read_generation(conn: sqlite3.Connection) -> int:
        return int(
            conn.execute("SELECT generation FROM lesson_index_state WHERE id = 1").fetchone()[0]
        )

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

    # -- searching --------------------------------------------------------------

    def search(
        self, query: str, kind: Kind, n: int, *, lexical_n: int, lexical_kind: Kind | None
    ) -> Candidates:
        """Vector top-`n` of `kind` and lexical top-`lexical_n`, the two run side by side.

        Call under the store's lock, after `sync()`. The lexical query runs on a
        worker thread (`_worker`) while the query is embedded, unless a store
        transaction is open or the database has no separate reader (in-memory
        SQLite, Postgres): then it runs inline, after the vector search.

        Args:
            query: the request text (any string).
            kind: the kind whose vectors are searched.
            n: vector candidates wanted.
            lexical_n: lexical candidates wanted.
            lexical_kind: restrict the lexical search to this kind in SQL; None
                searches both kinds (the caller drops the other kind).
        """
        args = (query, lexical_n, len(self.entries))
        reader = None if self.store.connection.in_transaction else self.lexical.open_reader()
        lexical = (
            self._worker().submit(self.lexical.search, *args, reader, lexical_kind)
            if reader is not None
            else None
        )
        try:
            qvec = self.embed_query(query)
            found, _ = self.vectors[kind].search(qvec, n)
        finally:
            hits = (
                lexical.result()
                if lexical is not None
                else self.lexical.search(*args, None, lexical_kind)
            )
        return Candidates(qvec, [int(key) for key in found], hits)

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
        """Stop the worker thread and close the lexical reader connection (optional).

        Does not wait for a query still running on the worker (an interrupted
        `search` may leave one): exit must never hang on it.
        """
        with self._lock:
            if self._executor is not None:
                self._executor.shutdown(wait=False, cancel_futures=True)
                self._executor = None
            self.lexical.close()


def lexical_index(store: Store, *, posting_budget: int, prune_min_rows: int) -> LexicalIndex:
    """The lexical index for `store.dialect`, with these arguments.

    Returns:
        `LexicalIndex` (SQLite FTS5 BM25) or `PgLexicalIndex` (Postgres
        full-text search ranked by `ts_rank`; see `_lexical_pg`).
    """
    if store.dialect == "postgres":
        return PgLexicalIndex(store, posting_budget=posting_budget, prune_min_rows=prune_min_rows)
    return LexicalIndex(store, posting_budget=posting_budget, prune_min_rows=prune_min_rows)
