"""The store's two backends side by side: trajectory appends/s and playbook retrieval latency.

Appends: `Store.append_trajectory` (one transaction per record) and
`Store.append_trajectories` (`--batch` records per transaction) of the 4 KB
records of `bench_store.py`, redaction included. SQLite as shipped (WAL,
`synchronous=FULL`, the file under the current directory); Postgres through
`Store.open_url` on a throw-away local server (`tests/_postgres.py`, loopback
TCP) or the server of `--database-url`. The throw-away server keeps `fsync`
on (`postgres_server(durable=True)`), so both backends' commits are durable;
the table prints the server's `fsync` and `synchronous_commit` next to
SQLite's `synchronous`.

Retrieval: what a chat turn asks of the playbook (`agent.retrieve_shown`:
`retrieve(request, k=3)` for lessons, then `k=2` for skills), p50 / p95 over
`--queries` requests after one warm-up call (it loads the vector index and, on
Postgres, the `ts_stat` document frequencies; printed apart). The playbook:
the 74 labelled lessons plus synthetic ones up to `--lessons` and the skills
of the template bank, built with `bench_retrieval.py`'s generator and its
on-disk embedding cache, restored into each backend. Also printed: recall@1/@5
of the 148 labelled requests at that size, and how often both backends return
the same top 3 lessons. After the build, Postgres gets `VACUUM ANALYZE lessons`
(statistics, the state autovacuum reaches). The GIN index is built with
`fastupdate = off`: with a pending list of fresh inserts, every search also
scanned it (measured at 10k lessons: the ranking query 10.4 ms instead of 3.0 ms).

Embedder: `hashing` by default (no model; embedding 100k lessons with the
MiniLM model takes about 20 minutes on 2 cores unless `bench_retrieval.py`
cached them); `--embedder default` times the packaged model, as the agent runs.

Usage: `python bench/bench_backends.py [--lessons 100000] [--queries 200]
[--records 2000] [--batch 32] [--embedder hashing|default]
[--database-url postgresql://user@host/db] [--skip-appends] [--skip-retrieval]`.
With `--database-url`, the bench creates (and drops) its own databases
`nightschool_bench_*` on that server, so the role needs CREATEDB.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for tests._postgres

import numpy as np
import psycopg
from tests._postgres import postgres_server

from bench_retrieval import (
    CACHE_DIR,
    GENERATOR_VERSION,
    CachedEmbedder,
    labelled_records,
    latency_queries,
    ranks_of,
    recall,
    synthetic_lessons,
)
from bench_store import record
from data.skill_evalset import skill_candidates
from nightschool.agent import AgentConfig
from nightschool.agent.pipeline import retrieve_shown
from nightschool.playbook import (
    Embedder,
    HashingEmbedder,
    Lesson,
    SkillMemory,
    default_embedder,
)
from nightschool.store import Store

StoreFactory = Callable[[str], contextlib.AbstractContextManager[Store]]
"""Opens a fresh, empty store named by the argument (one database per measurement)."""


@dataclass
class Results:
    """One backend's figures (None: not measured)."""

    settings: str = ""
    single: float | None = None
    batched: float | None = None
    build_s: float | None = None
    first_ms: float | None = None
    p50_ms: float | None = None
    p95_ms: float | None = None
    recall1: float | None = None
    recall5: float | None = None
    top3: list[list[str]] = field(default_factory=list)


# -- backends ---------------------------------------------------------------------------------


@contextlib.contextmanager
def sqlite_stores(directory: Path) -> Iterator[StoreFactory]:
    @contextlib.contextmanager
    def open_one(name: str) -> Iterator[Store]:
        with Store.open(directory / f"{name}.db") as store:  # synchronous=FULL, as shipped
            yield store

    yield open_one


@contextlib.contextmanager
def postgres_stores(admin_url: str | None, home: Path) -> Iterator[StoreFactory]:
    """Fresh databases on `admin_url`'s server, or on a throw-away server when None."""
    with contextlib.ExitStack() as stack:
        url = admin_url or stack.enter_context(postgres_server(durable=True))
        created: list[str] = []

        @contextlib.contextmanager
        def open_one(name: str) -> Iterator[Store]:
            database = f"nightschool_bench_{name}"
            with psycopg.connect(url, autocommit=True) as admin:
                admin.execute(f'DROP DATABASE IF EXISTS "{database}"')
                admin.execute(f'CREATE DATABASE "{database}"')
            created.append(database)
            with Store.open_url(f"{url.rsplit('/', 1)[0]}/{database}", home=home) as store:
                yield store

        try:
            yield open_one
        finally:
            with psycopg.connect(url, autocommit=True) as admin:
                for database in created:
                    admin.execute(f'DROP DATABASE IF EXISTS "{database}"')


def settings(store: Store) -> str:
    """The durability settings a commit runs under."""
    if store.dialect == "sqlite":
        level = store.query("PRAGMA synchronous")[0][0]
        return f"synchronous={['OFF', 'NORMAL', 'FULL', 'EXTRA'][int(level)]}"
    fsync = store.query("SHOW fsync")[0][0]
    commit = store.query("SHOW synchronous_commit")[0][0]
    return f"fsync={fsync}, synchronous_commit={commit}"


# -- appends ----------------------------------------------------------------------------------


def appends(open_store: StoreFactory, n: int, batch: int, out: Results) -> None:
    """Appends/s, one record per transaction and `batch` per transaction (fresh stores)."""
    for label, size in (("single", 1), ("batched", batch)):
        records = [record(i) for i in range(n)]
        with open_store(f"appends_{label}") as store:
            out.settings = settings(store)
            start = time.perf_counter()
            if size == 1:
                for item in records:
                    store.append_trajectory(item)
            else:
                for i in range(0, n, size):
                    store.append_trajectories(records[i : i + size])
            rate = n / (time.perf_counter() - start)
            assert store.counts()["trajectories"] == n
        setattr(out, label, rate)
        print(f"  appends, {size} per transaction: {rate:,.0f}/s", flush=True)


# -- retrieval --------------------------------------------------------------------------------


def retrieval(
    open_store: StoreFactory,
    records: list[dict[str, object]],
    bulk: Embedder,
    embedder: Embedder,
    queries: Sequence[str],
    out: Results,
) -> None:
    """Build the playbook, then time `retrieve_shown` per query and score the labelled set."""
    config = AgentConfig()
    with open_store("lessons") as store:
        start = time.perf_counter()
        builder = SkillMemory(store, bulk)
        builder.restore(records, batch_size=512)
        for candidate in skill_candidates():
            builder.learn_skill(**candidate)
        builder.close()
        if store.dialect == "postgres":
            # The steady state autovacuum reaches: GIN pending list merged, statistics read.
            store.connection.execute("VACUUM ANALYZE lessons")
        out.build_s = time.perf_counter() - start
        print(f"  built {len(records):,} lessons in {out.build_s:.1f} s", flush=True)
        memory = SkillMemory(store, embedder)
        start = time.perf_counter()
        retrieve_shown(memory, config, "warm up the playbook index")
        out.first_ms = (time.perf_counter() - start) * 1000
        times = []
        for query in queries:
            start = time.perf_counter()
            lessons, _ = retrieve_shown(memory, config, query)
            times.append(time.perf_counter() - start)
            out.top3.append([_key(r.lesson) for r in lessons])
        out.p50_ms = float(np.percentile(times, 50) * 1000)
        out.p95_ms = float(np.percentile(times, 95) * 1000)
        ranks = ranks_of(memory, k=5, cluster=False)
        found = ranks["paraphrase"] + ranks["keyword"]
        out.recall1, out.recall5 = recall(found, 1), recall(found, 5)
        memory.close()
        print(f"  retrieval p50 {out.p50_ms:.2f} ms, p95 {out.p95_ms:.2f} ms", flush=True)


def _key(lesson: Lesson) -> str:
    """What names a lesson on both backends (synthetic lessons get a random id each)."""
    return f"{lesson.trigger}\n{lesson.anti_pattern}\n{lesson.correct_pattern}"


# -- report -----------------------------------------------------------------------------------


def _cell(value: float | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def report(sqlite: Results, postgres: Results, args: argparse.Namespace, embedder: str) -> None:
    rows = [
        ("commit durability", sqlite.settings, postgres.settings, ""),
    ]
    figures: list[tuple[str, float | None, float | None, str]] = [
        ("trajectory appends/s, 1 per transaction", sqlite.single, postgres.single, ",.0f"),
        (
            f"trajectory appends/s, {args.batch} per transaction",
            sqlite.batched,
            postgres.batched,
            ",.0f",
        ),
        (f"build playbook of {args.lessons:,} lessons, s", sqlite.build_s, postgres.build_s, ".1f"),
        ("first retrieval (index load), ms", sqlite.first_ms, postgres.first_ms, ".0f"),
        ("retrieval p50, ms", sqlite.p50_ms, postgres.p50_ms, ".2f"),
        ("retrieval p95, ms", sqlite.p95_ms, postgres.p95_ms, ".2f"),
        ("labelled recall@1", sqlite.recall1, postgres.recall1, ".3f"),
        ("labelled recall@5", sqlite.recall5, postgres.recall5, ".3f"),
    ]
    for label, a, b, spec in figures:
        ratio = "-" if a is None or b is None or a == 0 else f"{b / a:.2f}"
        rows.append((label, _cell(a, spec), _cell(b, spec), ratio))
    print(
        f"\n## Backends: {args.records:,} trajectory records; {args.lessons:,} lessons, "
        f"{args.queries} requests (retrieve_shown: 3 lessons + 2 skills), embedder {embedder}; "
        f"load average {os.getloadavg()[0]:.2f}\n"
    )
    print("| measure | SQLite | Postgres | Postgres / SQLite |\n|---|---|---|---|")
    for row in rows:
        print("| " + " | ".join(row) + " |")
    if sqlite.top3 and postgres.top3:
        pairs = list(zip(sqlite.top3, postgres.top3, strict=True))
        same = np.mean([a == b for a, b in pairs])
        shared = np.mean([len(set(a) & set(b)) / max(len(a), len(b), 1) for a, b in pairs])
        print(
            f"\nSame lessons in the same order on both backends: {same:.1%} of requests; "
            f"share of the lessons shown that both show: {shared:.1%}."
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lessons", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--records", type=int, default=2000)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--embedder", choices=("hashing", "default"), default="hashing")
    parser.add_argument("--database-url", help="admin URL of an existing Postgres server")
    parser.add_argument("--skip-appends", action="store_true")
    parser.add_argument("--skip-retrieval", action="store_true")
    args = parser.parse_args()
    embedder: Embedder = HashingEmbedder() if args.embedder == "hashing" else default_embedder()
    bulk = CachedEmbedder(
        embedder, CACHE_DIR / f"{embedder.name.replace('/', '_')}-v{GENERATOR_VERSION}.npz"
    )
    records = labelled_records() + synthetic_lessons(max(args.lessons, 674), seed=1)
    records = records[: max(args.lessons, len(labelled_records()))]
    queries = latency_queries(args.queries)
    results = {"sqlite": Results(), "postgres": Results()}
    with tempfile.TemporaryDirectory(dir=Path.cwd(), prefix="bench-backends-") as tmp:
        backends = {
            "sqlite": sqlite_stores(Path(tmp)),
            "postgres": postgres_stores(args.database_url, Path(tmp)),
        }
        for name, backend in backends.items():
            print(f"{name}:", flush=True)
            with backend as open_store:
                if not args.skip_appends:
                    appends(open_store, args.records, args.batch, results[name])
                if not args.skip_retrieval:
                    retrieval(open_store, records, bulk, embedder, queries, results[name])
    bulk.save()
    report(results["sqlite"], results["postgres"], args, embedder.name)


if __name__ == "__main__":
    main()
