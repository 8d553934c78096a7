"""Playbook retrieval: latency at 1k / 10k / 100k lessons, and recall on a labelled set.

Latency: `SkillMemory.retrieve(query, k=3)` end to end (query embedding, FTS5
BM25, vector search, fusion, reading the lessons), p50 / p95 over 200 queries
per size, after one warm-up call (the first call loads the vector index; its
time is printed separately). Targets: p95 <= 10 ms at 10k and <= 25 ms at 100k.
Each playbook holds the 74 labelled lessons plus synthetic ones, and the
labelled queries' recall@5 is reported per size for BM25 alone, vectors alone
and the default hybrid (without and with its relevance floor), with the share of
unrelated requests that the default rejects.

Quality: the 74 labelled lessons of `bench/data/retrieval_evalset.py` mixed into
600 synthetic distractors; 74 paraphrased and 74 keyword-bearing queries must
find their lesson. Recall@1/@5 for BM25 alone, vectors alone and several
fusions (RRF, score mix), with and without the cluster boost; plus the
embedding-text ablation and the near-duplicate cosine calibration.

Relevance floor: recall@5 of the 148 labelled queries and the rejection rate of
the 80 unrelated requests of `bench/data/unrelated_requests.py` (top fused score
below the floor, so retrieval returns nothing) for a grid of floors, for lessons
and for skills (`bench/data/skill_evalset.py`: every template x tier of the bank
learned as skills at seed 1, the prompts of seed 2 as queries), and the floor chosen:
the middle of the range that keeps recall@5 within 2 points of no floor and
rejects at least 90% of unrelated requests. Only that part:
`python bench/bench_retrieval.py --floors-only [--embedder hashing]`.

Synthetic lessons come from a seeded template generator (7 domains x 70,560
combinations). Their vectors are cached by text hash in one .npz per embedder
under `/tmp/nightschool-bench/`: the first run embeds ~100k texts (measured 23
minutes on a shared 2-core machine), later runs take under a minute.

Usage: `python bench/bench_retrieval.py [--sizes 1000,10000,100000] [--queries 200]
[--embedder default|hashing] [--skip-quality] [--skip-latency] [--floors-only]`
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import os
import random
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from data.retrieval_evalset import LESSONS
from data.retrieval_reworded import REWORDED
from data.skill_evalset import skill_candidates, skill_queries
from data.synthetic_slots import SLOT_TEXT
from data.unrelated_requests import UNRELATED_REQUESTS
from nightschool.playbook import (
    DOMAINS,
    Embedder,
    HashingEmbedder,
    MemoryConfig,
    SkillMemory,
    default_embedder,
)
from nightschool.playbook._rows import embedding_text
from nightschool.store import Store

CACHE_DIR = Path("/tmp/nightschool-bench")
TARGET_P95_MS = {10_000: 10.0, 100_000: 25.0}
GENERATOR_VERSION = 1

# -- synthetic lessons -------------------------------------------------------------------

_FIELDS = ("actions", "objects", "contexts", "pitfalls", "fixes")


def _slots() -> dict[str, dict[str, list[str]]]:
    out: dict[str, dict[str, list[str]]] = {}
    for block in SLOT_TEXT.strip().split("\n\n"):
        domain, *lines = block.splitlines()
        out[domain] = {
            k: [w.strip() for w in v.split(",")] for k, _, v in (ln.partition(":") for ln in lines)
        }
        assert set(out[domain]) == set(_FIELDS), domain
    return out


_SLOTS = _slots()


_TAILS = (
    "then verify the {o} {c}",
    "and add a test for {o} {c}",
    "so the {o} stay correct {c}",
    "before {a} more {o}",
    "and document why for the next reader",
    "and log what was skipped",
)


def synthetic_lessons(n: int, seed: int) -> list[dict[str, Any]]:
    """`n` distinct synthetic lessons as `export()`-style records (deterministic).

    Each domain has 12 actions x 12 objects x 10 contexts x 7 pitfalls x 7 fixes
    (70,560 combinations); lessons are drawn without replacement, domains interleaved.
    """
    rng = random.Random(seed)
    per_domain = -(-n // len(DOMAINS))
    combos: list[tuple[str, int]] = []
    for domain in DOMAINS:
        sizes = [len(_SLOTS[domain][f]) for f in _FIELDS]
        space = int(np.prod(sizes))
        combos.extend((domain, pick) for pick in rng.sample(range(space), min(space, per_domain)))
    rng.shuffle(combos)
    out: list[dict[str, Any]] = []
    for domain, pick in combos[:n]:
        slot = _SLOTS[domain]
        chosen = {}
        for field in _FIELDS:
            pick, chosen[field] = divmod(pick, len(slot[field]))
        act, obj, ctx, pit, fix = (slot[f][chosen[f]] for f in _FIELDS)
        tail = _TAILS[(chosen["actions"] + chosen["contexts"]) % len(_TAILS)]
        second = DOMAINS[(chosen["actions"] * 7 + chosen["objects"]) % len(DOMAINS)]
        out.append(
            {
                "trigger": f"When {act} {obj} {ctx}",
                "anti_pattern": f"{pit} while {act} the {obj}",
                "correct_pattern": f"{fix}, {tail.format(a=act, o=obj, c=ctx)}",
                "domains": list(dict.fromkeys([domain, second]))[: 1 + chosen["objects"] % 2],
                "source": "selfplay",
                "confidence": 0.5,
                "source_trajectory_id": f"synthetic-{seed}-{len(out)}",
            }
        )
    return out


def labelled_records() -> list[dict[str, Any]]:
    return [
        {
            "id": f"L-label-{item.key}",
            "trigger": item.trigger,
            "anti_pattern": item.anti_pattern,
            "correct_pattern": item.correct_pattern,
            "domains": list(item.domains),
            "source": "manual",
        }
        for item in LESSONS
    ]


# -- cached embeddings -----------------------------------------------------------------------


class CachedEmbedder:
    """Wraps an embedder with an on-disk cache keyed by text hash (bench only)."""

    def __init__(self, inner: Embedder, path: Path) -> None:
        self.inner, self.path = inner, path
        self.name, self.dim = inner.name, inner.dim
        for name in ("duplicate_threshold", "vector_weight", "relevance_floor"):
            setattr(self, name, getattr(inner, name, None))
        self._rows: dict[str, np.ndarray] = {}
        self.misses = 0
        if path.exists():
            data = np.load(path)
            self._rows = dict(zip(data["keys"].tolist(), data["vectors"], strict=True))

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        keys = [hashlib.sha1(t.encode()).hexdigest() for t in texts]
        missing = [i for i, k in enumerate(keys) if k not in self._rows]
        if missing:
            self.misses += len(missing)
            vectors = self.inner.embed([texts[i] for i in missing])
            for i, v in zip(missing, vectors, strict=True):
                self._rows[keys[i]] = v
        return np.stack([self._rows[k] for k in keys]).astype(np.float32)

    def __len__(self) -> int:
        return len(self._rows)

    def save(self) -> None:
        if not self.misses:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        keys = np.array(list(self._rows), dtype="U40")
        tmp = self.path.with_suffix(".tmp.npz")
        np.savez(tmp, keys=keys, vectors=np.stack(list(self._rows.values())))
        tmp.replace(self.path)


# -- helpers ---------------------------------------------------------------------------------


def pct(values: Sequence[float], q: float) -> float:
    return float(np.percentile(np.asarray(values) * 1000.0, q))


def build(path: Path, embedder: Embedder, records: list[dict[str, Any]]) -> float:
    start = time.perf_counter()
    with Store.open(path, synchronous="NORMAL") as store:
        SkillMemory(store, embedder).restore(records, batch_size=512)
    return time.perf_counter() - start


def ranks_of(memory: SkillMemory, *, k: int, cluster: bool) -> dict[str, list[int | None]]:
    """Rank (1..k) of the right lesson for every labelled query, None when not in the top k.

    Keyed by query kind: `paraphrase` (Q) and `keyword` (K). A lesson that
    neither retriever returned scores 0 (or only the cluster boost); it can fill
    a top-k slot by id order, which must not count as found.
    """
    boost = memory.config.cluster_boost
    out: dict[str, list[int | None]] = {"paraphrase": [], "keyword": []}
    for item in LESSONS:
        domain = item.domains[0] if cluster else None
        for kind, queries in (("paraphrase", item.queries), ("keyword", item.keyword_queries)):
            for query in queries:
                found = None
                for r in memory.retrieve(query, k=k, cluster=domain):
                    floor = boost if domain in r.lesson.domains else 0.0
                    if r.lesson.id == f"L-label-{item.key}" and r.score > floor + 1e-9:
                        found = r.rank
                out[kind].append(found)
    return out


def recall(ranks: Sequence[int | None], k: int) -> float:
    return sum(1 for r in ranks if r is not None and r <= k) / len(ranks)


# -- quality ---------------------------------------------------------------------------------


QUALITY_VARIANTS = [
    ("BM25 only", MemoryConfig(vector_weight=0.0, min_score=0.0)),
    ("vectors only", MemoryConfig(vector_weight=1.0, min_score=0.0)),
    ("RRF k=60, equal weights", MemoryConfig(fusion="rrf", vector_weight=0.5)),
    ("RRF k=60, vector weight 0.85", MemoryConfig(fusion="rrf", vector_weight=0.85)),
    ("RRF k=10, vector weight 0.85", MemoryConfig(fusion="rrf", rrf_k=10, vector_weight=0.85)),
    ("mix, equal weights", MemoryConfig(vector_weight=0.5, min_score=0.0)),
    ("mix, vector weight 0.7", MemoryConfig(vector_weight=0.7, min_score=0.0)),
    ("mix, vector weight 0.9", MemoryConfig(vector_weight=0.9, min_score=0.0)),
    ("default weights, no relevance floor", MemoryConfig(min_score=0.0)),
    ("default (MemoryConfig(): embedder's weight and floor)", MemoryConfig()),
]
"""Ranking variants; all but the last with the relevance floor off (RRF has none)."""


def quality(
    embedder: Embedder, bulk: CachedEmbedder, distractors: list[dict[str, Any]], workdir: Path
) -> None:
    records = labelled_records() + distractors
    path = workdir / "quality.db"
    secs = build(path, bulk, records)
    print(
        f"\n## Quality: {len(LESSONS)} labelled lessons + {len(distractors)} distractors; "
        f"{len(LESSONS)} paraphrase + {len(LESSONS)} keyword queries (built in {secs:.1f} s)\n"
    )
    print(
        "| ranking | paraphrase R@1 | paraphrase R@5 | keyword R@1 | keyword R@5 | all R@1 "
        "| **all R@5** | all R@5, cluster boost |"
    )
    print("|---|---|---|---|---|---|---|---|")
    with Store.open(path) as store:
        for label, config in QUALITY_VARIANTS:
            memory = SkillMemory(store, embedder, config)
            plain = ranks_of(memory, k=5, cluster=False)
            boosted = ranks_of(memory, k=5, cluster=True)
            both = plain["paraphrase"] + plain["keyword"]
            cells = [
                recall(plain["paraphrase"], 1),
                recall(plain["paraphrase"], 5),
                recall(plain["keyword"], 1),
                recall(plain["keyword"], 5),
                recall(both, 1),
                recall(both, 5),
                recall(boosted["paraphrase"] + boosted["keyword"], 5),
            ]
            print(f"| {label} | " + " | ".join(f"{c:.3f}" for c in cells) + " |")
    ablation(bulk, distractors)
    calibration(bulk, distractors)
    floors(embedder, path)
    bulk.save()


def ablation(embedder: Embedder, distractors: list[dict[str, Any]]) -> None:
    """Vector-only recall@1 / @5 for choices of the text that represents a lesson."""
    docs = labelled_records() + distractors
    queries = [(i, q) for i, item in enumerate(LESSONS) for q in item.queries]
    qv = embedder.embed([q for _, q in queries])
    print("\n| lesson text embedded | vector recall@1 | vector recall@5 |\n|---|---|---|")
    variants: list[tuple[str, Any]] = [
        ("trigger", lambda d: d["trigger"]),
        ("trigger + correct pattern", lambda d: f"{d['trigger']} {d['correct_pattern']}"),
        ("trigger + anti-pattern", lambda d: f"{d['trigger']} {d['anti_pattern']}"),
        (
            "trigger + anti + correct, joined",
            lambda d: " ".join((d["trigger"], d["anti_pattern"], d["correct_pattern"])),
        ),
        (
            "`T. Mistake: A. Fix: C` (used)",
            lambda d: embedding_text(d["trigger"], d["anti_pattern"], d["correct_pattern"]),
        ),
    ]
    for label, make in variants:
        ranks = np.argsort(-(qv @ embedder.embed([make(d) for d in docs]).T), axis=1)
        at1 = np.mean([gold == row[0] for (gold, _), row in zip(queries, ranks, strict=True)])
        at5 = np.mean([gold in row[:5] for (gold, _), row in zip(queries, ranks, strict=True)])
        print(f"| {label} | {at1:.3f} | {at5:.3f} |")


def _texts(items: Sequence[Any]) -> list[str]:
    def get(x: Any, k: str) -> str:
        return str(x[k] if isinstance(x, dict) else getattr(x, k))

    return [
        embedding_text(get(x, "trigger"), get(x, "anti_pattern"), get(x, "correct_pattern"))
        for x in items
    ]


def calibration(embedder: Embedder, distractors: list[dict[str, Any]]) -> None:
    """Cosine of reworded duplicates vs distinct lessons: where the threshold must sit.

    Distinct pairs: each hand-written lesson against its nearest other
    hand-written lesson, and each synthetic lesson against its nearest other
    synthetic one (templated, so much closer to each other than real lessons).
    """
    base = {item.key: item for item in LESSONS}
    dup = np.sum(
        embedder.embed(_texts([base[r.key] for r in REWORDED])) * embedder.embed(_texts(REWORDED)),
        axis=1,
    )
    print(f"\nNear-duplicate calibration ({embedder.name}):")
    nearest: dict[str, np.ndarray] = {}
    print(
        f"- reworded duplicates ({len(dup)}): cosine min {dup.min():.3f}, "
        f"median {np.median(dup):.3f}, max {dup.max():.3f}"
    )
    for label, items in (("hand-written", LESSONS), ("synthetic", distractors)):
        mat = embedder.embed(_texts(items))
        sims = mat @ mat.T
        np.fill_diagonal(sims, -1.0)
        near = sims.max(axis=1)
        print(
            f"- {label} lessons ({len(items)}), nearest distinct lesson: cosine median "
            f"{np.median(near):.3f}, p95 {np.percentile(near, 95):.3f}, max {near.max():.3f}"
        )
        nearest[label] = near
    print(f"- threshold in use: {getattr(embedder, 'duplicate_threshold', None)}")
    for t in (0.8, 0.85, 0.88, 0.9, 0.92, 0.95):
        print(
            f"  - at {t}: merges {np.mean(dup >= t):.0%} of reworded duplicates; "
            f"{np.mean(nearest['hand-written'] >= t):.0%} of hand-written and "
            f"{np.mean(nearest['synthetic'] >= t):.1%} of synthetic lessons have a distinct "
            "lesson at or above it"
        )


# -- relevance floor -------------------------------------------------------------------------

FLOOR_TABLE = (0.0, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6)
RECALL_SLACK = 0.02
MIN_REJECTION = 0.9


def floors(embedder: Embedder, path: Path) -> None:
    """Relevance floors: labelled recall@5 against rejection of unrelated requests.

    Scores are fused scores without the cluster boost (`RetrievedLesson.fused_score`),
    read with the floor off. A labelled query counts as found at floor f when its
    lesson is in the top 5 and scores >= f (a floor only removes entries, so this is
    what `retrieve` returns with that floor); an unrelated request is rejected when
    its best score is below f. Skills are learned into the same database.
    """
    off = MemoryConfig(min_score=0.0, min_skill_score=0.0)
    with Store.open(path) as store:
        memory = SkillMemory(store, embedder, off)
        for candidate in skill_candidates():
            memory.learn_skill(**candidate)
        lesson_hits = []
        for item in LESSONS:
            for query in (*item.queries, *item.keyword_queries):
                got = memory.retrieve(query, k=5)
                target = [r.fused_score for r in got if r.lesson.id == f"L-label-{item.key}"]
                lesson_hits.append(target[0] if target else None)
        skill_hits = []
        for query, template in skill_queries():
            got = memory.retrieve(query, k=5, kind="skill")
            target = [r.fused_score for r in got if r.lesson.template == template]
            skill_hits.append(target[0] if target else None)
        unrelated = {
            kind: [
                max((r.fused_score for r in memory.retrieve(q, k=1, kind=kind)), default=0.0)
                for q in UNRELATED_REQUESTS
            ]
            for kind in ("lesson", "skill")
        }
        n_skills = memory.count(kind="skill")
        current = SkillMemory(store, embedder)
        in_use = (current.relevance_floor("lesson"), current.relevance_floor("skill"))
    print(
        f"\n## Relevance floor ({embedder.name}): {len(lesson_hits)} labelled lesson queries, "
        f"{len(skill_hits)} challenge prompts against {n_skills} skills, "
        f"{len(UNRELATED_REQUESTS)} unrelated requests\n"
    )
    print(
        "| floor | lessons R@5 | lessons: unrelated rejected | skills R@5 "
        "| skills: unrelated rejected |"
    )
    print("|---|---|---|---|---|")
    for f in FLOOR_TABLE:
        cells = (
            _found(lesson_hits, f),
            _rejected(unrelated["lesson"], f),
            _found(skill_hits, f),
            _rejected(unrelated["skill"], f),
        )
        print(f"| {f:.2f} | " + " | ".join(f"{c:.3f}" for c in cells) + " |")
    for kind, hits, used in (
        ("lesson", lesson_hits, in_use[0]),
        ("skill", skill_hits, in_use[1]),
    ):
        _choose(kind, hits, unrelated[kind], used)


def _found(hits: Sequence[float | None], floor: float) -> float:
    return sum(1 for h in hits if h is not None and h > 0 and h >= floor) / len(hits)


def _rejected(tops: Sequence[float], floor: float) -> float:
    return sum(1 for t in tops if t < floor or t <= 0) / len(tops)


def _choose(kind: str, hits: Sequence[float | None], tops: Sequence[float], used: float) -> None:
    """Print the feasible floor range and its middle (rounded to 0.01)."""
    base = _found(hits, 0.0)
    grid = [round(0.005 * i, 3) for i in range(0, 201)]
    ok = [
        f
        for f in grid
        if _found(hits, f) >= base - RECALL_SLACK - 1e-9 and _rejected(tops, f) >= MIN_REJECTION
    ]
    if ok:
        pick = round((ok[0] + ok[-1]) / 2, 2)
        verdict = f"feasible {ok[0]:.3f}..{ok[-1]:.3f}, middle {pick:.2f}"
    else:
        keep = [f for f in grid if _found(hits, f) >= base - RECALL_SLACK - 1e-9]
        pick = round(keep[-1], 2)
        verdict = f"NO floor meets both; highest keeping recall: {pick:.2f}"
    print(
        f"- {kind}s: R@5 without floor {base:.3f}; {verdict}: R@5 {_found(hits, pick):.3f}, "
        f"unrelated rejected {_rejected(tops, pick):.3f}; in use {used:.2f}: "
        f"R@5 {_found(hits, used):.3f}, rejected {_rejected(tops, used):.3f}"
    )


# -- latency ---------------------------------------------------------------------------------


def latency_queries(n: int, seed: int = 11) -> list[str]:
    rng = random.Random(seed)
    labelled = [q for item in LESSONS for q in item.queries]
    extra = [
        r["trigger"].replace("When ", "how do I ").lower() + "?"
        for r in synthetic_lessons(n, seed=seed + 1)
    ]
    mixed = [*labelled, *extra]
    rng.shuffle(mixed)
    return list(itertools.islice(itertools.cycle(mixed), n))


def latency(
    embedder: Embedder,
    cached: CachedEmbedder,
    pool: list[dict[str, Any]],
    sizes: Sequence[int],
    n_queries: int,
    workdir: Path,
) -> None:
    """Each size: the labelled lessons plus the first `size - 74` synthetic ones.

    Timed: `retrieve(query, k=3)` alone (it embeds the query itself); the query
    embedding is also timed separately, on its own, to show its share.
    """
    print("\n## Latency of retrieve(query, k=3), query embedding included\n")
    queries = latency_queries(n_queries)
    rows, recalls = [], []
    for size in sizes:
        records = labelled_records() + pool[: size - len(LESSONS)]
        misses = cached.misses
        path = workdir / f"latency-{size}.db"
        secs = build(path, cached, records)
        cached.save()
        print(
            f"built {size:,} lessons in {secs:.1f} s ({cached.misses - misses:,} texts "
            "embedded now, the rest from the cache)",
            flush=True,
        )
        with Store.open(path) as store:
            memory = SkillMemory(store, embedder)
            start = time.perf_counter()
            memory.retrieve("warm up the index", k=3)
            cold = time.perf_counter() - start
            embed_times, times = [], []
            for query in queries:
                t0 = time.perf_counter()
                memory.retrieve(query, k=3)
                t1 = time.perf_counter()
                embedder.embed([query])
                t2 = time.perf_counter()
                times.append(t1 - t0)
                embed_times.append(t2 - t1)
            cells = []
            for config in (
                MemoryConfig(vector_weight=0.0, min_score=0.0),
                MemoryConfig(vector_weight=1.0, min_score=0.0),
                MemoryConfig(min_score=0.0),
                None,
            ):
                found = ranks_of(SkillMemory(store, embedder, config), k=5, cluster=False)
                cells.append(recall(found["paraphrase"] + found["keyword"], 5))
            cells.append(np.mean([memory.retrieve(q, k=3) == [] for q in UNRELATED_REQUESTS]))
            recalls.append((size, *cells))
        p95 = pct(times, 95)
        target = TARGET_P95_MS.get(size)
        verdict = "-" if target is None else ("PASS" if p95 <= target else "FAIL")
        verdict += "" if target is None else f" (<= {target:g} ms)"
        rows.append((size, pct(times, 50), p95, pct(embed_times, 50), cold * 1000, verdict))
    print(f"\n{len(queries)} queries per size; load average {os.getloadavg()[0]:.2f} at the end\n")
    print(
        "| lessons | p50 ms | p95 ms | query embedding alone, p50 ms "
        "| first call (index load) ms | p95 target |"
    )
    print("|---|---|---|---|---|---|")
    for size, p50, p95, emb, cold, verdict in rows:
        print(f"| {size:,} | {p50:.2f} | {p95:.2f} | {emb:.2f} | {cold:.0f} | {verdict} |")
    print(
        "\n| lessons | BM25 only R@5 | vectors only R@5 | hybrid, no floor R@5 "
        "| hybrid (default, with floor) R@5 | unrelated requests rejected (default) |"
    )
    print("|---|---|---|---|---|---|")
    for size, *cells in recalls:
        print(f"| {size:,} | " + " | ".join(f"{c:.3f}" for c in cells) + " |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--embedder", choices=("default", "hashing"), default="default")
    parser.add_argument("--skip-quality", action="store_true")
    parser.add_argument("--skip-latency", action="store_true")
    parser.add_argument("--floors-only", action="store_true", help="only the relevance floor")
    args = parser.parse_args()
    # One onnxruntime thread: on this 2-core machine it was faster than two both for
    # single queries and for bulk embedding (75 vs 54 texts/s with one other process).
    embedder: Embedder = default_embedder() if args.embedder == "default" else HashingEmbedder()
    bulk = CachedEmbedder(
        embedder, CACHE_DIR / f"{embedder.name.replace('/', '_')}-v{GENERATOR_VERSION}.npz"
    )
    start = time.perf_counter()
    embedder.embed(["load the model"])
    print(
        f"embedder: {embedder.name} (dim {embedder.dim}), loaded in "
        f"{time.perf_counter() - start:.2f} s; {len(bulk)} cached vectors"
    )
    sizes = [int(s) for s in args.sizes.split(",") if s]
    pool = synthetic_lessons(max([*sizes, 600 + len(LESSONS)]), seed=1)
    with tempfile.TemporaryDirectory(prefix="nightschool-bench-") as tmp:
        if args.floors_only:
            path = Path(tmp) / "floors.db"
            build(path, bulk, labelled_records() + pool[:600])
            floors(embedder, path)
            bulk.save()
            return
        if not args.skip_quality:
            quality(embedder, bulk, pool[:600], Path(tmp))
        if not args.skip_latency:
            latency(embedder, bulk, pool, sizes, args.queries, Path(tmp))


if __name__ == "__main__":
    main()
