"""Lexical candidates on Postgres: full-text search over `lessons.fts`, ranked by `ts_rank`.

The Postgres schema has no FTS5 table: `lessons.fts` is a stored, generated
`tsvector` (config `english`) with weight A for the trigger, B the correct
pattern, C the anti-pattern and D the domains, under a GIN index
(`nightschool.store._pg_migrations`). `PgLexicalIndex` keeps the contract of
`LexicalIndex.search` and its query shape (an OR of the request's content
words, each a quoted tsquery literal, so no user text is tsquery syntax) and
differs where Postgres differs:

- Ranking: for each query word, `ts_rank` of the row against that word alone
  times the word's BM25 IDF (FTS5's formula, `bm25_idf`, over the document
  frequencies below), summed over the words, times `TS_RANK_SCALE`; column
  weights are the `BM25_WEIGHTS` after BM25's saturation (`_ts_rank_weights`).
  It is not BM25: ts_rank has its own term-frequency damping and no
  document-length normalisation, and ties are more frequent (broken by rowid,
  as on SQLite). Plain `ts_rank` over the OR of the words (no IDF, raw weight
  ratios) was measured first: lexical-only recall@5 0.547, and behind the
  hashing embedder's floor no scale kept both (0.912 of unrelated requests
  rejected at recall@5 0.507; SQLite: 0.887 at 0.628).
- Measured on the labelled set (74 lessons, 600 synthetic distractors, 148
  requests; `bench/bench_retrieval.py`'s set), Postgres against SQLite. MiniLM
  (the default), hybrid: recall@1 0.736 / 0.743, recall@5 0.831 / 0.831; with
  the relevance floor recall@5 0.824 / 0.824 and unrelated requests rejected
  0.912 / 0.912. Hashing embedder: lexical only recall@1 0.541 / 0.568,
  recall@5 0.628 / 0.649; hybrid with its floor recall@5 0.588 / 0.628,
  unrelated rejected 0.912 / 0.887.
- Tokens: English Snowball stems and English stopwords (SQLite: porter stems,
  every word indexed), so a request made only of stopwords finds nothing here.
- Posting budget: kept. Above `prune_min_rows` the rarest query words are kept
  while their summed document frequency fits `posting_budget`; document
  frequencies come from a `ts_stat` snapshot (one scan of every `lessons.fts`,
  refreshed when the playbook size drifts by more than 10%), stems from
  `to_tsvector('english', word)`. Without IDF, dropping the most common words
  is also what keeps them from dominating the rank.
- No reader connection: the ranking query runs inline on the store's
  connection, after the query embedding instead of beside it. A second
  psycopg connection on the worker thread (as SQLite's read-only one) was
  measured: no gain with a local server on 2 cores (MiniLM, 10k lessons:
  13.7 ms p50 both ways; the server and onnxruntime share the cores); it may
  pay off with a remote server, at one more connection per playbook.
- The GIN index must not carry a long pending list: until it is merged (by
  autovacuum, `VACUUM`, or an insert past `gin_pending_list_limit`), every
  search scans the fresh inserts linearly (measured at 10k freshly restored
  lessons: the ranking query 10.4 ms, 3.0 ms after `VACUUM ANALYZE lessons`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from nightschool.playbook._lexical import BM25_WEIGHTS, LexicalIndex, Query
from nightschool.playbook._text import MAX_QUERY_TOKENS, content_tokens
from nightschool.store._pg_migrations import FTS_WEIGHTS

TS_RANK_SCALE = 2.5
"""Multiplier taking the IDF-weighted `ts_rank` to FTS5 BM25's magnitude, so that the
fusion (`b / (b + bm25_half)`) and the relevance floors keep their meaning. Measured on
the labelled set: the median top score of its 148 requests is 16.1 with FTS5 and 5.8
here unscaled (ratio 2.8); with MiniLM recall and rejection are the same at 2, 2.5,
2.8 and 4; with the hashing embedder 2.5 keeps the rejection of unrelated requests
(0.912; 0.825 at 2.8) for recall@5 0.588 (0.601)."""

TS_RANK_NORMALIZATION = 0
"""`ts_rank` normalisation flags: 0, none. Dividing by 1 + log(length) (flag 1) was
measured no better (hashing embedder: lexical recall@5 0.628 both, hybrid 0.615)."""

BM25_K1 = 1.2
"""FTS5's BM25 term-frequency saturation constant `k1`."""

_FTS5_COLUMNS = ("trigger", "anti_pattern", "correct_pattern", "domains")
"""Column order of `lessons_fts` (SQLite), which `BM25_WEIGHTS` follows."""


def _ts_rank_weights() -> str:
    """`ts_rank`'s weight array `{D, C, B, A}`: each column's BM25 weight, saturated.

    FTS5 multiplies a column's term frequency by its weight before BM25's
    saturation `tf * (k1 + 1) / (tf + k1)`, so one occurrence counts
    `w * 2.2 / (w + 1.2)`: 1.69 in the trigger (weight 4), 1.38 in the correct
    pattern (2), 1.0 in the anti-pattern (1), 0.65 in the domains (0.5).
    `ts_rank` weighs an occurrence by its column's weight directly, so it gets
    these (the largest scaled to 1: ts_rank takes weights in 0..1). Measured on
    the labelled set (hashing embedder, 674 lessons): BM25-only recall@5 0.628
    against 0.595 with the raw ratios (1, 0.5, 0.25, 0.125); FTS5 0.649.
    """
    by_column = dict(zip(_FTS5_COLUMNS, BM25_WEIGHTS, strict=True))
    saturated = {
        FTS_WEIGHTS[column]: w * (BM25_K1 + 1) / (w + BM25_K1) for column, w in by_column.items()
    }
    top = max(saturated.values())
    return "{" + ", ".join(f"{saturated[letter] / top:.4f}" for letter in "DCBA") + "}"


def _rank_sql(by_kind: bool) -> str:
    """One GIN lookup per query word, summed per row: sum(IDF * weighted ts_rank) * scale.

    Parameters: quoted words (text[]), their IDFs (float8[]), [kind,] limit.
    """
    rank = f"ts_rank('{_ts_rank_weights()}', l.fts, t.q, {TS_RANK_NORMALIZATION})"
    return (
        f"SELECT l.rowid, sum({rank} * t.idf) * {TS_RANK_SCALE} AS score FROM "
        "(SELECT to_tsquery('english', u.word) AS q, u.idf "
        "FROM unnest(?::text[], ?::float8[]) AS u(word, idf)) AS t "
        "JOIN lessons l ON l.fts @@ t.q "
        + ("WHERE l.kind = ? " if by_kind else "")
        + "GROUP BY l.rowid ORDER BY score DESC, l.rowid LIMIT ?"
    )


_RANK_SQL = _rank_sql(by_kind=False)
_RANK_KIND_SQL = _rank_sql(by_kind=True)


TRIGGER_PHRASE_SQL = (
    "SELECT rowid, id, trigger FROM lessons WHERE fts @@ to_tsquery('english', ?) "
    "AND kind = 'lesson' ORDER BY lower(trigger) = lower(?) DESC, rowid LIMIT 50"
)
"""Lessons whose trigger holds a phrase (parameters: `trigger_phrase(words)`, the
trigger): same-trigger candidates for `learn`, an exactly equal trigger first."""


def bm25_idf(rows: int, freq: int) -> float:
    """FTS5's BM25 IDF of a term in `freq` of `rows` documents: log((N - n + 0.5) / (n + 0.5)).

    Floored at 1e-6, as FTS5 does, for terms in more than half the documents (and
    when a stale snapshot counts more documents than there are rows now).
    """
    ratio = (rows - freq + 0.5) / (freq + 0.5)
    return max(math.log(max(ratio, 1.0)), 1e-6)


def tsquery_literal(word: str) -> str:
    """`word` quoted for `to_tsquery`: `'word'`, stemmed there and never read as syntax.

    Words are runs of letters and digits (`_text.tokens`), so they hold no quote.
    """
    return f"'{word}'"


def trigger_phrase(words: Sequence[str]) -> str:
    """A tsquery matching `words` as a phrase in the trigger (weight A): `'w1':A <-> ...`.

    Stopwords drop out (Postgres keeps their distance in the phrase).
    """
    return " <-> ".join(f"{tsquery_literal(word)}:{FTS_WEIGHTS['trigger']}" for word in words)


class PgLexicalIndex(LexicalIndex):
    """`LexicalIndex` over the Postgres `lessons.fts` column (see the module docstring).

    Same arguments and `search` contract as `LexicalIndex`; scores are scaled
    `ts_rank` values (higher is better), not BM25.
    """

    def open_reader(self) -> Query | None:
        """None: on Postgres the search runs on the store's connection (module docstring)."""
        return None

    def search(
        self,
        text: str,
        n: int,
        total_rows: int,
        query: Query | None = None,
        kind: str | None = None,
    ) -> dict[int, float]:
        """Top `n` rowids by IDF-weighted `ts_rank` (higher is better), best first.

        Arguments as `LexicalIndex.search`. The document-frequency snapshot is
        read even below `prune_min_rows` (the IDF needs it).
        """
        run = query or self.store.query
        words = content_tokens(text)[:MAX_QUERY_TOKENS]
        if not words:
            return {}
        self._refresh(total_rows, run)
        if total_rows >= self.prune_min_rows:
            words = self._within_budget(words, total_rows, run)
        if not words:
            return {}
        idf = [bm25_idf(total_rows, freq) for freq in self._frequencies(words, run)]
        literals = [tsquery_literal(word) for word in words]
        if kind is None:
            rows = run(_RANK_SQL, (literals, idf, n))
        else:
            rows = run(_RANK_KIND_SQL, (literals, idf, kind, n))
        return {int(r): float(s) for r, s in rows}

    def _vocabulary(self, run: Query) -> dict[str, int]:
        return {
            str(word): int(ndoc)
            for word, ndoc in run("SELECT word, ndoc FROM ts_stat('SELECT fts FROM lessons')", ())
        }

    def _lookup_stems(self, missing: list[str], run: Query) -> dict[str, list[str]]:
        rows = run(
            "SELECT word, tsvector_to_array(to_tsvector('english', word)) "
            "FROM unnest(?::text[]) AS word",
            (missing,),
        )
        return {str(word): [str(term) for term in terms] for word, terms in rows}
