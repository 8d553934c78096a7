"""`Retriever`: hybrid retrieval over one kind of playbook entry, behind a relevance floor."""

from __future__ import annotations

import itertools
from collections.abc import Collection, Sequence

from nightschool.playbook._model import Audience, Kind, Lesson, MemoryConfig, RetrievedLesson
from nightschool.playbook._playbook_index import PlaybookIndex
from nightschool.playbook._records import PlaybookRecords, check_kind
from nightschool.playbook._rows import SAME_CODE_CHALLENGES
from nightschool.playbook._tuning import relevance_floor, vector_weight

READ_CHUNK = 16
"""Rows read at once past the first `k` when some are skipped (not shown to the
audience, or sharing code with the task at hand)."""

FILTER_IN_PYTHON_MAX = 1000
"""Up to this many rows of the other kind, BM25 asks for that many more rows and
drops them in Python; above it (or when this kind is the smaller one) SQL filters
by kind. Measured at 10k lessons with 44 skills: lesson retrieval 1.9 ms p50 with
the Python filter against 4.6-5.1 ms with a SQL join (query embedding cached)."""


def _as_set(values: Collection[str] | str) -> frozenset[str]:
    """Non-empty strings of `values` (a lone string counts as one value)."""
    items = (values,) if isinstance(values, str) else values
    return frozenset(str(v) for v in items if str(v).strip())


Scored = tuple[float, str, int, float]
"""(score with the cluster boost, id, rowid, fused score) of one candidate."""


class Retriever:
    """Ranks playbook entries for a request: candidates, fusion, floor, guards.

    Reads rows through `records` and candidates through `index`; writes nothing.
    Thread-safe: a retrieval holds the store's re-entrant lock.

    Args:
        records: the playbook's rows.
        index: the vector and lexical indices over those rows.
        config: tuning (`candidates`, `fusion`, `bm25_half`, `rrf_k`,
            `cluster_boost`, the floors and the vector weight).
    """

    def __init__(
        self, records: PlaybookRecords, index: PlaybookIndex, config: MemoryConfig
    ) -> None:
        self.records = records
        self.index = index
        self.config = config
        self._lock = records.store.lock

    @property
    def vector_weight(self) -> float:
        """Weight (0..1) of the vector side in fusion (BM25 gets 1 - this); see `_tuning`."""
        return vector_weight(self.config, self.index.embedder)

    def relevance_floor(self, kind: Kind = "lesson") -> float:
        """The fused score (0..1) below which `retrieve` drops an entry of `kind`.

        `config.min_score` / `config.min_skill_score` when set; otherwise the
        embedder's `relevance_floor` (`skill_relevance_floor` for skills, falling
        back to `relevance_floor`), else `DEFAULT_RELEVANCE_FLOOR`; 0 under
        `fusion="rrf"` with no explicit floor.
        """
        return relevance_floor(self.config, self.index.embedder, kind)

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
    ) -> list[RetrievedLesson]:
        """The `k` entries of `kind` that best match `query`, best first.

        Hybrid ranking: the top `config.candidates` entries of `kind` by FTS5
        BM25 (the query sanitised into an OR of quoted tokens, so no user text
        is FTS syntax; the most common words dropped to fit
        `config.fts_posting_budget`; on Postgres IDF-weighted `ts_rank`
        instead of BM25, see `_lexical_pg`) and by embedding cosine are fused
        (`config.fusion`: a weighted mix of cosine and saturated BM25 by
        default) into a score in 0..1. Entries whose fused score is below the
        relevance floor are dropped, so an unrelated request gets []; then
        `config.cluster_boost` is added when `cluster` is one of the entry's
        domains (the floor never sees the boost). Ties break by id, so equal
        inputs give equal outputs. Lessons never come back from a skill query
        and skills never from a lesson query.

        Args:
            query: the request text (any string; may be empty).
            k: how many entries at most; <= 0 returns [].
            cluster: the task's domain, if known (e.g. `sql`).
            kind: `lesson` (default) or `skill`.
            exclude_challenge_hashes: never return an entry made from one of
                these challenges (the task at hand: a skill must never be an
                exact copy of its solution); a skill whose same code also passed
                one of them (`extra["same_code_challenges"]`) is excluded too.
            exclude_templates: never return an entry made from one of these
                templates (held-out templates).
            min_score: relevance floor for this call; None uses
                `relevance_floor(kind)`, 0 turns it off.
            audience: `practice` (self-play, evals) or `chat` (a user's turn:
                verified entries, and unverified ones only for nearly their own
                task, `config.chat_recall_score`); harmful entries reach neither
                (`Lesson.shown_to`). Entries skipped here leave their place to
                the next ones above the floor.

        Returns:
            Up to `k` `RetrievedLesson`s with ranks 1..k; [] for an empty playbook
            or when nothing clears the floor.

        Raises:
            UserError: unknown `kind`.
        """
        check_kind(kind)
        if k <= 0:
            return []
        floor = self.relevance_floor(kind) if min_score is None else float(min_score)
        hashes, templates = _as_set(exclude_challenge_hashes), _as_set(exclude_templates)
        with self._lock:
            self.index.sync()
            vectors = self.index.vectors[kind]
            if len(vectors) == 0:
                return []
            excluded = self.records.made_from(kind, hashes, templates)
            n = self.config.candidates + len(excluded)
            others = len(self.index.entries) - len(vectors)
            # Both kinds share the FTS index. When the other kind is small, BM25
            # returns that many more rows and they are dropped here (exact, and
            # nearly free); otherwise SQL keeps only this kind (`_lexical`).
            sql_kind = kind if others > min(len(vectors), FILTER_IN_PYTHON_MAX) else None
            lexical_n = n + (others if sql_kind is None else 0)
            found = self.index.search(query, kind, n, lexical_n=lexical_n, lexical_kind=sql_kind)
            vec_keys = [key for key in found.vector_keys if key not in excluded]
            mine = (
                (key, s)
                for key, s in found.lexical.items()
                if key in vectors and key not in excluded
            )
            bm25 = dict(itertools.islice(mine, n))
            candidates = list(dict.fromkeys([*vec_keys, *bm25]))
            cosine = vectors.scores(found.query_vector, candidates)
            fused = self._fuse(vec_keys, bm25, cosine)
            scored: list[Scored] = []
            for rowid in candidates:
                entry = self.index.entries.get(rowid)
                base = fused.get(rowid, 0.0)
                if entry is None or entry.kind != kind or base < floor:
                    continue
                boost = self.config.cluster_boost if cluster and cluster in entry.domains else 0.0
                scored.append((base + boost, entry.id, rowid, base))
            scored.sort(key=lambda item: (-item[0], item[1]))
            top, lessons = self._read_top(scored, k, hashes, audience, cosine)
        return [
            RetrievedLesson(
                lesson=lessons[rowid],
                score=score,
                fused_score=base,
                bm25_score=bm25.get(rowid, 0.0),
                vector_score=cosine.get(rowid, 0.0),
                rank=rank,
            )
            for rank, (score, _, rowid, base) in enumerate(top, start=1)
        ]

    def _read_top(
        self,
        scored: Sequence[Scored],
        k: int,
        hashes: frozenset[str],
        audience: Audience,
        cosine: dict[int, float],
    ) -> tuple[list[Scored], dict[int, Lesson]]:
        """The first `k` scored rows that exist, may be shown and share no code with `hashes`.

        Shown: `_may_show`. The same-code guard: a skill whose
        code also passed one of `hashes` (`extra["same_code_challenges"]`) is
        the task's solution under another id, so it is skipped like the
        entries made from those challenges. Rows are read `k` at a time (at
        least `READ_CHUNK`), so the common case (nothing skipped) reads `k`
        rows once.
        """
        lessons: dict[int, Lesson] = {}
        top: list[Scored] = []
        chunk = max(k, READ_CHUNK) if hashes else k
        start = 0
        while start < len(scored) and len(top) < k:
            wanted = scored[start : start + chunk]
            start += len(wanted)
            chunk = max(k, READ_CHUNK)
            read = self.records.by_rowid([item[2] for item in wanted])
            lessons.update(read)
            for item in wanted:
                lesson = read.get(item[2])
                if lesson is None or not self._may_show(lesson, audience, cosine.get(item[2], 0.0)):
                    continue
                if hashes & set(lesson.extra.get(SAME_CODE_CHALLENGES, ())):
                    continue
                top.append(item)
                if len(top) == k:
                    break
        return top, lessons

    def _may_show(self, lesson: Lesson, audience: Audience, cosine: float) -> bool:
        """`Lesson.shown_to(audience)`, or for chat an unverified entry for nearly its own task.

        A user's turn sees verified entries; an entry not verified yet, and
        neither rejected nor harmful, only when the request's embedding cosine
        with it reaches `config.chat_recall_score` (the request is nearly the
        task it was made from: recall, not transfer).
        """
        if lesson.shown_to(audience):
            return True
        return (
            audience == "chat"
            and not lesson.harmful
            and not lesson.rejected
            and cosine >= self.config.chat_recall_score
        )

    def _fuse(
        self, vec_keys: Sequence[int], bm25: dict[int, float], cosine: dict[int, float]
    ) -> dict[int, float]:
        """Fused scores (0..1) per rowid: `config.fusion` of the vector and lexical sides."""
        cfg = self.config
        wv = self.vector_weight
        wb = 1.0 - wv
        fused: dict[int, float] = {}
        if cfg.fusion == "rrf":
            top = (wv + wb) / (cfg.rrf_k + 1)
            for rank, key in enumerate(vec_keys, start=1):
                fused[key] = wv / (cfg.rrf_k + rank) / top
            for rank, key in enumerate(bm25, start=1):
                fused[key] = fused.get(key, 0.0) + wb / (cfg.rrf_k + rank) / top
            return fused
        half = cfg.bm25_half
        for key in {*vec_keys, *bm25}:
            lexical = bm25.get(key, 0.0)
            fused[key] = wv * max(cosine.get(key, 0.0), 0.0) + wb * lexical / (lexical + half)
        return fused
