"""Dashboard load times with 100,000 trajectories, through a real HTTP server.

Target (issue 12): the overview loads in under 1 s with 100,000 trajectories.

Builds a temporary store through the real Store API (`bench/data/dashboard_history.py`:
100,000 trajectories appended in batches of 1,000, a frontier run per self-play
trajectory, corrections, lessons with exposures, eval runs, phase runs, diary,
a strategy champion), serves `nightschool.server.dashboard.standalone_app` with
uvicorn on a background thread, and times with httpx (bearer key, as a script
would; a browser's cookie is checked the same way):

- the first overview load of a fresh app (aggregates not yet computed), and
  its two plots;
- 20 loads of: the overview HTML; the overview with its two SVG plots (fetched
  one after another, an upper bound on a browser that fetches them in parallel);
  the trajectory list, page 1, unfiltered and filtered; its page 200 (keyset
  cursor); a lesson lineage page;
- 20 overview loads while the agent writes: 50 new trajectories appended
  before each load (incremental refresh and plot re-render every time);
- the start-up warm-up of `nightschool dashboard` (`warm=True`).

Prints median and p95 per row against the 1 s target.
Usage: `python bench/bench_dashboard.py [--trajectories N] [--keep DIR] [--loads 20]`.
"""

from __future__ import annotations

import argparse
import html
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import httpx
from bench.data.dashboard_history import populate

from nightschool.playbook import HashingEmbedder, SkillMemory
from nightschool.server import serve_in_thread
from nightschool.server.dashboard import DashboardConfig, standalone_app
from nightschool.store import Store
from nightschool.trajectory import Outcome, ToolCall, Trajectory

TARGET_S = 1.0
OLDER = re.compile(r'rel="next" href="(/dashboard/trajectories\?[^"]+)"')
KEY = "bench-key-0123456789"


def build(path: Path, trajectories: int) -> tuple[Store, SkillMemory, list[str]]:
    fresh = not path.exists()
    store = Store.open(path, synchronous="NORMAL")
    memory = SkillMemory(store, embedder=HashingEmbedder())
    if fresh:
        start = time.perf_counter()
        history = populate(
            store,
            memory,
            trajectories=trajectories,
            days=90,
            lessons=40,
            evolve_dir=path.parent / "evolve",
        )
        print(
            f"built {trajectories:,} trajectories in {time.perf_counter() - start:.0f} s "
            f"({path.stat().st_size / 1e6:.0f} MB)"
        )
        lessons = history.lesson_ids
    else:
        lessons = [row[0] for row in store.query("SELECT id FROM lessons LIMIT 5")]
    print("store:", store.counts())
    return store, memory, lessons


def timed(
    fetch: Callable[[], None], loads: int, before: Callable[[], None] | None = None
) -> list[float]:
    out = []
    for _ in range(loads):
        if before is not None:
            before()
        start = time.perf_counter()
        fetch()
        out.append(time.perf_counter() - start)
    return out


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def report(label: str, values: list[float]) -> None:
    median = statistics.median(values)
    worst = p95(values)
    verdict = "ok" if worst < TARGET_S else "OVER"
    print(f"  {label:<58} median {median * 1000:7.1f} ms   p95 {worst * 1000:7.1f} ms   {verdict}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trajectories", type=int, default=100_000)
    parser.add_argument("--loads", type=int, default=20)
    parser.add_argument("--keep", type=Path, help="build (or reuse) the store in this directory")
    args = parser.parse_args()
    if args.keep is not None:
        args.keep.mkdir(parents=True, exist_ok=True)
        run(args, args.keep)
        return
    with tempfile.TemporaryDirectory(prefix="bench-dashboard-") as directory:
        run(args, Path(directory))


def run(args: argparse.Namespace, directory: Path) -> None:
    store, memory, lessons = build(directory / "nightschool.db", args.trajectories)
    app = standalone_app(
        store,
        memory=memory,
        api_key=KEY,
        config=DashboardConfig(evolve_dirs=(directory / "evolve",)),
    )
    headers = {"Authorization": f"Bearer {KEY}"}
    with (
        serve_in_thread(app) as url,
        httpx.Client(base_url=url, headers=headers, timeout=60) as http,
    ):

        def get(path: str) -> httpx.Response:
            response = http.get(path)
            response.raise_for_status()
            return response

        def overview_with_plots() -> None:
            get("/dashboard/")
            get("/dashboard/plots/kinds.svg")
            get("/dashboard/plots/clusters.svg")

        print(f"dashboard at {url}/dashboard/ (target: overview under {TARGET_S:.0f} s)")
        start = time.perf_counter()
        get("/dashboard/")
        first_html = time.perf_counter() - start
        start = time.perf_counter()
        get("/dashboard/plots/kinds.svg")
        get("/dashboard/plots/clusters.svg")
        first_plots = time.perf_counter() - start
        print(
            f"  first overview of a fresh app: HTML {first_html * 1000:.0f} ms "
            f"(aggregates computed), plots {first_plots * 1000:.0f} ms (drawn)"
        )
        deep, depth = "/dashboard/trajectories", 1
        while depth < 200:
            found = OLDER.search(get(deep).text)
            if found is None:
                break
            deep, depth = html.unescape(found.group(1)), depth + 1
        rows: list[tuple[str, Callable[[], object]]] = [
            ("overview HTML", lambda: get("/dashboard/")),
            ("overview HTML + its 2 plots", overview_with_plots),
            ("trajectories, page 1", lambda: get("/dashboard/trajectories")),
            (
                "trajectories, page 1, failed self-play in sql",
                lambda: get("/dashboard/trajectories?kind=selfplay&outcome=failed&cluster=sql"),
            ),
            (f"trajectories, page {depth} (keyset cursor)", lambda: get(deep)),
            ("lesson lineage", lambda: get(f"/dashboard/lessons/{lessons[0]}")),
        ]
        print(f"{args.loads} loads each:")
        for label, fetch in rows:
            report(label, timed(lambda fetch=fetch: fetch() and None, args.loads))

        def write_fifty() -> None:
            store.append_trajectories(
                [
                    Trajectory(
                        task_kind="selfplay",
                        cluster="sql",
                        tier="basic",
                        session_id="bench-live",
                        user_request="a new challenge",
                        tool_calls=[ToolCall(name="run_solution", result="ok")],
                        outcome=Outcome.PASSED,
                    )
                    for _ in range(50)
                ]
            )

        report(
            "overview HTML + plots, 50 new trajectories before each",
            timed(overview_with_plots, args.loads, before=write_fifty),
        )
    start = time.perf_counter()
    standalone_app(store, memory=memory, api_key=KEY, warm=True)
    print(
        f"  `nightschool dashboard` warms up before it listens: {time.perf_counter() - start:.2f} s "
        "(aggregates and frontier computed; its first overview is then a warm one)"
    )
    memory.close()
    store.close()


if __name__ == "__main__":
    main()
