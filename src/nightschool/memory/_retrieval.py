"""Hybrid retrieval over one kind of playbook entry, behind a relevance floor."""

from __future__ import annotations

import itertools
from collections.abc import Collection, Sequence

from nightschool.memory._indexed import IndexedPlaybook
from nightschool.memory._model import Kind, Lesson, RetrievedLesson
from nightschool.memory._records import check_kind
from nightschool.memory._rows import SELECT_LESSON, any_of, to_lesson

FILTER_IN_PYTHON_MAX = 1000
"""Up to this many rows of the other kind, BM25 asks for that many more rows and
drops them in Python; above it (or when this kind is the smaller one) SQL filters
by kind. Measured at 10k lessons with 44 skills: lesson retrieval 1.9 ms p50 with
the Python filter against 4.6-5.1 ms with a SQL join (query embedding cached)."""

SAME_CODE_CHALLENGES = "same_code_challenges"
"""`extra` key of a skill: other challenges whose passing code was this skill's code."""


def _as_set(values: Collection[str] | str) -> frozenset[str]:
    """Non-empty strings of `values` (a lone string counts as one value)."""
    items = (values,) if isinstance(values, str) else values
    return frozenset(str(v) for v in items if str(v).strip())


class RetrievingPlaybook(IndexedPlaybook):
    """Adds `retrieve` to `IndexedPlaybook`; see `SkillMemory` for the constructor."""

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
            self._sync_index()
            index = self._indices[kind]
            if len(index) == 0:
                return []
            excluded = self._excluded(kind, hashes, templates)
            n = self.config.candidates + len(excluded)
            others = len(self._meta) - len(index)
            # Both kinds share the FTS index. When the other kind is small, BM25
            # returns that many more rows and they are dropped here (exact, and
            # nearly free); otherwise SQL keeps only this kind (`_lexical`).
            sql_kind = kind if others > min(len(index), FILTER_IN_PYTHON_MAX) else None
            args = (query, n + (others if sql_kind is None else 0), len(self._meta))
            reader = None if self.store.connection.in_transaction else self._lexical.open_reader()
            lexical = (
                self._worker().submit(self._lexical.search, *args, reader, sql_kind)
                if reader is not None
                else None
            )
            try:
                qvec = self._embed_query(query)
                found, _ = index.search(qvec, n)
            finally:
                hits = (
                    lexical.result()
                    if lexical is not None
                    else self._lexical.search(*args, None, sql_kind)
                )
            vec_keys = [int(key) for key in found if int(key) not in excluded]
            mine = ((key, s) for key, s in hits.items() if key in index and key not in excluded)
            bm25 = dict(itertools.islice(mine, n))
            candidates = list(dict.fromkeys([*vec_keys, *bm25]))
            cosine = index.scores(qvec, candidates)
            fused = self._fuse(vec_keys, bm25, cosine)
            scored = []
            for rowid in candidates:
                entry = self._meta.get(rowid)
                base = fused.get(rowid, 0.0)
                if entry is None or entry.kind != kind or base < floor:
                    continue
                boost = self.config.cluster_boost if cluster and cluster in entry.domains else 0.0
                scored.append((base + boost, entry.id, rowid, base))
            scored.sort(key=lambda item: (-item[0], item[1]))
            top, lessons = self._read_top(scored, k, hashes)
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

    def _excluded(self, kind: Kind, hashes: frozenset[str], templates: frozenset[str]) -> set[int]:
        """Rowids of `kind` made from an excluded challenge or template."""
        if not hashes and not templates:
            return set()
        in_hashes, hash_list = any_of(self.store.dialect, sorted(hashes))
        in_templates, template_list = any_of(self.store.dialect, sorted(templates))
        rows = self.store.query(
            f"SELECT rowid FROM lessons WHERE kind = ? AND (challenge_hash {in_hashes} OR "
            f"template {in_templates})",
            (kind, hash_list, template_list),
        )
        return {int(row[0]) for row in rows}

    def _read_top(
        self, scored: Sequence[tuple[float, str, int, float]], k: int, hashes: frozenset[str]
    ) -> tuple[list[tuple[float, str, int, float]], dict[int, Lesson]]:
        """The first `k` scored rows that still exist (and share no code with `hashes`)."""
        wanted = scored if hashes else scored[:k]
        lessons = self._lessons_by_rowid([item[2] for item in wanted])
        top = []
        for item in wanted:
            lesson = lessons.get(item[2])
            if lesson is None or hashes & set(lesson.extra.get(SAME_CODE_CHALLENGES, ())):
                continue
            top.append(item)
            if len(top) == k:
                break
        return top, lessons

    def _fuse(
        self, vec_keys: Sequence[int], bm25: dict[int, float], cosine: dict[int, float]
    ) -> dict[int, float]:
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

    def _lessons_by_rowid(self, rowids: Sequence[int]) -> dict[int, Lesson]:
        if not rowids:
            return {}
        in_rowids, rowid_list = any_of(self.store.dialect, rowids)
        rows = self.store.query(
            f"SELECT rowid, {SELECT_LESSON} FROM lessons WHERE rowid {in_rowids}", (rowid_list,)
        )
        return {int(row[0]): to_lesson(row[1:]) for row in rows}
