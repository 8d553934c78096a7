"""BM25 candidates from the `lessons_fts` FTS5 index, with a bounded cost per query.

FTS5 scores every row that matches any OR-ed query term before it can sort by
`bm25()`: measured about 0.85 microseconds per matching row, so one word that
occurs in 70% of 100k lessons costs 60 ms. Above `prune_min_rows` lessons the
query keeps its rarest terms while their summed document frequency stays within
`posting_budget` (a term that common adds little BM25 signal: its IDF is near
zero). Document frequencies come from an `fts5vocab` snapshot, refreshed when
the playbook size drifts by more than 10%; query words are stemmed by FTS5
itself (a scratch FTS5 table in the connection's `temp` schema), so the lookup
uses exactly the index's porter stems.

On Postgres the same contract is kept by `PgLexicalIndex` (`_lexical_pg`):
full-text search over `lessons.fts`, ranked by IDF-weighted `ts_rank`;
`lexical_index` picks the class for the store's dialect.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from nightschool.playbook._text import MAX_QUERY_TOKENS, content_tokens
from nightschool.store import BUSY_TIMEOUT_MS, Store

BM25_WEIGHTS = (4.0, 1.0, 2.0, 0.5)
"""FTS5 `bm25()` column weights: trigger, anti_pattern, correct_pattern, domains.
The trigger says when a lesson applies, which is what a request resembles most.
Measured on the labelled set: BM25-only recall@1 0.568 (equal weights 0.547),
recall@5 the same (0.649); other weightings moved hybrid recall@5 by at most 0.015."""

_BM25_SQL = (
    "SELECT rowid, -bm25(lessons_fts, {w}) FROM lessons_fts WHERE lessons_fts MATCH ? "
    "ORDER BY bm25(lessons_fts, {w}), rowid LIMIT ?"
).format(w=", ".join(str(x) for x in BM25_WEIGHTS))

_BM25_KIND_SQL = (
    "SELECT rowid, -bm25(lessons_fts, {w}) FROM lessons_fts WHERE lessons_fts MATCH ? "
    "AND +rowid IN (SELECT rowid FROM lessons WHERE kind = ?) "
    "ORDER BY bm25(lessons_fts, {w}), rowid LIMIT ?"
).format(w=", ".join(str(x) for x in BM25_WEIGHTS))
"""BM25 restricted to one kind of row. The kind's rowids are read once per query
from the `(kind, code_hash)` index into a temporary set (the `+` keeps SQLite
from handing the IN list to FTS5, which would run the MATCH once per rowid:
measured 0.5 s per query for 10k lessons). Measured on 10k lessons, all query
words kept: 0.35 ms p50 for 44 skills and 0.97 ms for 3,044 (a JOIN on `lessons`:
1.6 / 2.3 ms, it reads each matching row past its embedding BLOB); for the 10k
lessons themselves 2.6 ms against 1.2 ms unfiltered, which is why `SkillMemory`
filters a large kind in Python when the other kind is small."""

STEM_CACHE_SIZE = 50_000
"""Words whose porter stems are remembered (cleared when full)."""

_SETUP = (
    "CREATE VIRTUAL TABLE IF NOT EXISTS temp.nightschool_lessons_vocab "
    "USING fts5vocab(main, lessons_fts, row)",
    "CREATE VIRTUAL TABLE IF NOT EXISTS temp.nightschool_query_tokens "
    "USING fts5(t, tokenize='porter unicode61')",
    "CREATE VIRTUAL TABLE IF NOT EXISTS temp.nightschool_query_terms "
    "USING fts5vocab(temp, nightschool_query_tokens, instance)",
)


Query = Callable[[str, Sequence[Any]], list[tuple[Any, ...]]]
"""Runs one SQL statement and returns all rows (`Store.query` or a reader connection's)."""


class LexicalIndex:
    """Budgeted BM25 search over `lessons_fts`.

    `search` runs on the store's connection, or on a separate read-only
    connection (`open_reader`) so that it can run on a worker thread without
    taking the store's lock. Not thread-safe: one search at a time.

    Args:
        store: the store holding `lessons_fts`.
        posting_budget: most matching rows one query may make FTS5 score.
        prune_min_rows: below this many lessons every query term is kept.
    """

    def __init__(self, store: Store, *, posting_budget: int, prune_min_rows: int) -> None:
        self.store = store
        self.posting_budget = posting_budget
        self.prune_min_rows = prune_min_rows
        self._ready: set[int] = set()
        self._df: dict[str, int] = {}
        self._df_rows = -1
        self._stem_cache: dict[str, tuple[str, ...]] = {}
        self._reader: sqlite3.Connection | None = None

    def open_reader(self) -> Query | None:
        """A read-only connection's `Query` for a file database (None for `:memory:`)."""
        if self._reader is None:
            if str(self.store.path) == ":memory:":
                return None
            uri = Path(self.store.path).resolve().as_uri() + "?mode=ro"
            try:
                self._reader = sqlite3.connect(
                    uri, uri=True, check_same_thread=False, timeout=BUSY_TIMEOUT_MS / 1000
                )
            except sqlite3.Error:
                return None
        reader = self._reader
        return lambda sql, params: reader.execute(sql, params).fetchall()

    def close(self) -> None:
        """Close the read-only connection, if open."""
        if self._reader is not None:
            self._reader.close()
            self._ready.discard(id(self._reader))
            self._reader = None

    def search(
        self,
        text: str,
        n: int,
        total_rows: int,
        query: Query | None = None,
        kind: str | None = None,
    ) -> dict[int, float]:
        """Top `n` rowids by BM25 (higher is better), best first; {} if nothing matches.

        Args:
            text: the raw query; sanitised into an OR of quoted tokens.
            n: how many candidates.
            total_rows: current number of rows of all kinds (decides pruning and refresh).
            query: where to run SQL; None means the store's connection.
            kind: only rows of this kind (`lessons.kind`); None: every row.
        """
        run = query or self.store.query
        words = content_tokens(text)[:MAX_QUERY_TOKENS]
        if total_rows >= self.prune_min_rows and words:
            self._setup(run, 0 if query is None else id(self._reader))
            words = self._within_budget(words, total_rows, run)
        if not words:
            return {}
        return self._ranked(words, n, kind, run)

    def _ranked(self, words: list[str], n: int, kind: str | None, run: Query) -> dict[int, float]:
        """The top `n` rows matching any of `words` (`search`'s result)."""
        match = " OR ".join(f'"{word}"' for word in words)
        if kind is None:
            return {int(r): float(s) for r, s in run(_BM25_SQL, (match, n))}
        return {int(r): float(s) for r, s in run(_BM25_KIND_SQL, (match, kind, n))}

    def _vocabulary(self, run: Query) -> dict[str, int]:
        """Document frequency of every index term (a full snapshot)."""
        return dict(run("SELECT term, doc FROM temp.nightschool_lessons_vocab", ()))

    def _within_budget(self, words: list[str], total_rows: int, run: Query) -> list[str]:
        self._refresh(total_rows, run)
        freq = self._frequencies(words, run)
        kept, spent = [], 0
        for index in sorted(range(len(words)), key=lambda i: (freq[i], i)):
            if spent + freq[index] > self.posting_budget:
                break
            kept.append(index)
            spent += freq[index]
        return [words[i] for i in sorted(kept)]

    def _refresh(self, total_rows: int, run: Query) -> None:
        """Re-read the document frequencies when the row count drifted by more than 10%."""
        if abs(total_rows - self._df_rows) > 0.1 * max(self._df_rows, 1):
            self._df = self._vocabulary(run)
            self._df_rows = total_rows

    def _frequencies(self, words: list[str], run: Query) -> list[int]:
        """Document frequency of each word (its most frequent stem) in the last snapshot."""
        stems = self._stems(words, run)
        return [max((self._df.get(term, 0) for term in stems[word]), default=0) for word in words]

    def _stems(self, words: list[str], run: Query) -> dict[str, tuple[str, ...]]:
        """The index terms of each word, as the FTS5 porter tokenizer stems it (cached)."""
        missing = [word for word in words if word not in self._stem_cache]
        if missing:
            if len(self._stem_cache) > STEM_CACHE_SIZE:
                self._stem_cache.clear()
            found = self._lookup_stems(missing, run)
            self._stem_cache.update((word, tuple(terms)) for word, terms in found.items())
        return {word: self._stem_cache[word] for word in words}

    def _lookup_stems(self, missing: list[str], run: Query) -> dict[str, list[str]]:
        """The index terms of each of `missing` (distinct words), from the index's tokenizer."""
        run("DELETE FROM temp.nightschool_query_tokens", ())
        run(
            "INSERT INTO temp.nightschool_query_tokens(rowid, t) "
            "SELECT key + 1, value FROM json_each(?)",
            (json.dumps(missing),),
        )
        found: dict[str, list[str]] = {word: [] for word in missing}
        for doc, term in run("SELECT doc, term FROM temp.nightschool_query_terms", ()):
            found[missing[int(doc) - 1]].append(str(term))
        return found

    def _setup(self, run: Query, key: int) -> None:
        """Create the temp tables once per connection (`key`: 0 for the store's)."""
        if key not in self._ready:
            for statement in _SETUP:
                run(statement, ())
            self._ready.add(key)
