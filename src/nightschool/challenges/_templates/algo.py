"""Cluster `algo`: interval merging, top-k with ties, shortest paths."""

from __future__ import annotations

import heapq
import random
from collections import defaultdict
from functools import partial

from nightschool.challenges._templates._kit import (
    WORDS,
    Parts,
    RenderError,
    TemplateBase,
    differs,
    files_setup,
    near_miss,
    prompt,
    select,
    stdout_validator,
    twists,
)
from nightschool.challenges._templates.starters import algo as starters

# --------------------------------------------------------------------------- merge_intervals

_MERGE_SOLUTION = """
    intervals = []
    with open("intervals.txt") as handle:
        for line in handle:
            line = line.strip()
            if not line or line.startswith("#"):  #+t2
                continue  #+t2
            parts = line.split()
            if len(parts) != 2:  #+t2
                continue  #+t2
            try:  #+t2
                a, b = int(parts[0]), int(parts[1])  #+t2
            except ValueError:  #+t2
                continue  #+t2
            a, b = int(parts[0]), int(parts[1])  #-t2
            if a > b:  #+t1
                a, b = b, a  #+t1
            intervals.append((a, b))
    intervals.sort()
    merged = []
    for a, b in intervals:
        if merged and a <= merged[-1][1]:  #-bug
        if merged and a < merged[-1][1]:  #+bug
            merged[-1][1] = max(merged[-1][1], b)
        else:
            merged.append([a, b])
    for a, b in merged:
        print(a, b)
    print("total", sum(b - a for a, b in merged))  #+t3
    print("total", sum(b - a + 1 for a, b in merged))  #+t3bug
"""


def _merge(intervals: list[tuple[int, int]], features: set[str]) -> list[str]:
    merged: list[list[int]] = []
    for a, b in sorted(intervals):
        overlap = merged and (a < merged[-1][1] if "bug" in features else a <= merged[-1][1])
        if overlap:
            merged[-1][1] = max(merged[-1][1], b)
        else:
            merged.append([a, b])
    lines = [f"{a} {b}" for a, b in merged]
    if "t3" in features:
        lines.append(f"total {sum(b - a for a, b in merged)}")
    return lines


class MergeIntervals(TemplateBase):
    """Merge closed integer intervals; twists: reversed lines, junk lines, total length."""

    name = "algo.merge_intervals"
    cluster = "algo"

    def build_starter(self, rng: random.Random) -> Parts:
        """See `TemplateBase.build_starter`."""
        return starters.merge_intervals(rng)

    def build(self, level: int, rng: random.Random) -> Parts:
        """See `TemplateBase.build`."""
        blocks = (3, 5, 7, 9)[level]
        pos = rng.randint(0, 9)
        touch = rng.randrange(blocks - 1)  # block `touch` ends where the next one starts
        pieces: list[tuple[int, int]] = []
        first_pieces: list[int] = []
        for index in range(blocks):
            start, end = pos, pos + rng.randint(5, 18)
            cuts = sorted(rng.sample(range(start + 1, end), rng.randint(1, 2)))
            points = [start, *cuts]
            first_pieces.append(len(pieces))
            for i, point in enumerate(points):
                stop = end if i == len(points) - 1 else min(points[i + 1] + rng.randint(1, 3), end)
                pieces.append((point, stop))
            if end - start > 4 and rng.random() < 0.5:
                inner = rng.randint(start + 1, end - 3)
                pieces.append((inner, inner + rng.randint(1, 2)))
            pos = end if index == touch else end + rng.randint(2, 9)
        lines = [f"{a} {b}" for a, b in pieces]
        if level >= 1:  # write some intervals backwards, always one that starts a block
            forced = {first_pieces[rng.randrange(blocks)]}
            for i, (a, b) in enumerate(pieces):
                if i in forced or rng.random() < 0.25:
                    lines[i] = f"{b} {a}"
        rng.shuffle(lines)
        if level >= 2:
            junk = ["", "# exported by the scheduler", f"{rng.randint(1, 50)} x", "1 2 3", "none"]
            for item in junk:
                lines.insert(rng.randrange(len(lines) + 1), item)
            lines.insert(0, "# intervals")
        ref = twists(level)
        wrong = {"t1", "t2", "t3bug"} if level == 3 else near_miss(level)
        expected = _merge(pieces, ref)
        task = """
            Merge overlapping intervals. Two closed intervals overlap when they share at least
            one point, so intervals that only touch (like `1 3` and `3 5`) also merge into one
            (`1 5`).
        """
        inputs = """
            `intervals.txt`, one interval per line: two integers `START END` separated by a
            space, with START <= END.
        """
        output = """
            print the merged intervals to standard output, one per line as `START END`, sorted
            by START. Example: lines `5 8`, `1 3`, `2 4`, `8 9` give `1 4` and `5 9`.
        """
        rules = [
            "Some lines are written backwards (`END START`, the first number is larger): treat "
            "them as the interval from the smaller to the larger number.",
            "Skip blank lines, comment lines starting with `#`, and malformed lines that are not "
            "exactly two integers (for example `7 x` or `1 2 3`).",
            "After the intervals print one more line `total N`, where N is the total length "
            "covered: the sum of `END - START` over the merged intervals.",
        ]
        return Parts(
            prompt=prompt(task, inputs, output, rules, level),
            setup_script=files_setup({"intervals.txt": "\n".join(lines) + "\n"}),
            validation_script=stdout_validator(expected),
            reference_solution=select(_MERGE_SOLUTION, ref),
            wrong_solution=select(_MERGE_SOLUTION, wrong),
        )


# --------------------------------------------------------------------------- top_k

_TOPK_SOLUTION = """
    K = {k}
    totals = {{}}
    with open("scores.csv") as handle:
        for line in handle:
            if not line.strip():
                continue
            name, points = line.strip().split(",")
            name = name.lower()  #+t2
            totals[name] = totals.get(name, 0) + int(points)  #-bug
            totals[name] = int(points)  #+bug
    ranked = sorted(totals.items(), key=lambda item: (-item[1], item[0]))  #+t1
    ranked = sorted(totals.items(), key=lambda item: -item[1])  #-t1
    for name, total in ranked[:K]:  #-t3bug
    for position, (name, total) in enumerate(ranked[:K]):  #+t3bug
        print(name, total)  #-t3|t3bug
        rank = 1 + sum(1 for _, other in ranked if other > total)  #+t3
        print(rank, name, total)  #+t3
        print(position + 1, name, total)  #+t3bug
"""


def _top_k(entries: list[tuple[str, int]], k: int, features: set[str]) -> list[str]:
    totals: dict[str, int] = {}
    for raw, points in entries:
        name = raw.lower() if "t2" in features else raw
        totals[name] = points if "bug" in features else totals.get(name, 0) + points
    if "t1" in features:
        ranked = sorted(totals.items(), key=lambda item: (-item[1], item[0]))
    else:
        ranked = sorted(totals.items(), key=lambda item: -item[1])
    lines = []
    for position, (name, total) in enumerate(ranked[:k]):
        if "t3" in features:
            lines.append(f"{1 + sum(1 for _, o in ranked if o > total)} {name} {total}")
        elif "t3bug" in features:
            lines.append(f"{position + 1} {name} {total}")
        else:
            lines.append(f"{name} {total}")
    return lines


def _case_variant(rng: random.Random, name: str) -> str:
    return rng.choice([name.capitalize(), name.upper(), name, name.capitalize()])


class TopK(TemplateBase):
    """Top-k players by summed score; twists: name tie-break, case folding, shared ranks."""

    name = "algo.top_k"
    cluster = "algo"

    def build_starter(self, rng: random.Random) -> Parts:
        """See `TemplateBase.build_starter`."""
        return starters.top_k(rng)

    def build(self, level: int, rng: random.Random) -> Parts:
        """See `TemplateBase.build`."""
        players, k = (6, 10, 14, 18)[level], (3, 4, 5, 5)[level]
        ref = twists(level)
        wrong = {"t1", "t2", "t3bug"} if level == 3 else near_miss(level)
        for _attempt in range(200):
            names = rng.sample(WORDS, players)
            values = rng.sample(range(20, 300), players)
            if level >= 1:  # a tie among the leaders, another one further down
                values.sort(reverse=True)
                values[2] = values[1]
                values[k] = values[k - 1] if level >= 2 else values[k]
            entries: list[tuple[str, int]] = []
            for name, total in zip(names, values, strict=True):
                parts = rng.randint(2, 4)
                cuts = sorted(rng.sample(range(1, total), parts - 1))
                for i, (low, high) in enumerate(zip([0, *cuts], [*cuts, total], strict=True)):
                    shown = name
                    if level >= 2:  # never only in lowercase
                        shown = name.capitalize() if i == 0 else _case_variant(rng, name)
                    entries.append((shown, high - low))
            rng.shuffle(entries)
            if differs(partial(_top_k, entries, k, ref), partial(_top_k, entries, k, wrong)):
                break
        else:
            raise RenderError(f"{self.name}: no separating data at level {level}")
        expected = _top_k(entries, k, ref)
        task = f"""
            Find the {k} players with the highest total score. A player's total is the sum of
            the points on all of their lines.
        """
        inputs = """
            `scores.csv`, one line per game as `NAME,POINTS` (no header; POINTS is a
            non-negative integer; a name appears on several lines).
        """
        output = f"""
            print the top {k} players to standard output, highest total first, one per line as
            `NAME TOTAL` (for example `maple 140`).
        """
        rules = [
            "Players with equal totals are ordered by name, alphabetically.",
            "Names are case-insensitive: `Maple`, `maple` and `MAPLE` are the same player. "
            "Print names in lowercase.",
            "Print a rank first on each line: `RANK NAME TOTAL`. Players with equal totals share "
            "a rank and the next rank is skipped (ranks like 1, 2, 2, 4).",
        ]
        return Parts(
            prompt=prompt(task, inputs, output, rules, level),
            setup_script=files_setup({"scores.csv": "".join(f"{n},{p}\n" for n, p in entries)}),
            validation_script=stdout_validator(expected),
            reference_solution=select(_TOPK_SOLUTION.format(k=k), ref),
            wrong_solution=select(_TOPK_SOLUTION.format(k=k), wrong),
        )


# --------------------------------------------------------------------------- shortest_path

_PATH_SOLUTION = """
    import heapq

    graph = {}
    closed = set()  #+t2
    for line in open("closed.txt"):  #+t2
        if line.split():  #+t2
            closed.add(frozenset(line.split()))  #+t2
    for line in open("roads.txt"):
        if not line.split():
            continue
        a, b, length = line.split()
        if frozenset((a, b)) in closed:  #+t2
            continue  #+t2
        graph.setdefault(a, []).append((b, int(length)))
        graph.setdefault(b, []).append((a, int(length)))  #-bug


    def route(start, goal):
        best = {start: 0}
        previous = {}
        queue = [(0, start)]
        while queue:
            dist, town = heapq.heappop(queue)
            if dist > best[town]:
                continue
            for other, length in graph.get(town, []):
                if dist + length < best.get(other, float("inf")):
                    best[other] = dist + length
                    previous[other] = town
                    heapq.heappush(queue, (dist + length, other))
        if goal not in best:
            return None, []
        path = [goal]
        while path[-1] != start:
            path.append(previous[path[-1]])
        return best[goal], path[::-1]


    for line in open("queries.txt"):
        if not line.split():
            continue
        start, goal = line.split()
        dist, path = route(start, goal)
        if dist is None:  #+t1
            print("unreachable")  #+t1
            continue  #+t1
        print(dist, "-".join(path))  #+t3
        print(dist)  #-t3
"""


def _dijkstra(
    edges: list[tuple[str, str, int]], start: str, directed: bool
) -> tuple[dict[str, int], dict[str, int], dict[str, str]]:
    """Return (distance, number of shortest paths, predecessor) from `start`."""
    graph: dict[str, list[tuple[str, int]]] = defaultdict(list)
    for a, b, w in edges:
        graph[a].append((b, w))
        if not directed:
            graph[b].append((a, w))
    dist, count, prev = {start: 0}, {start: 1}, {}
    queue, done = [(0, start)], set()
    while queue:
        d, town = heapq.heappop(queue)
        if town in done:
            continue
        done.add(town)
        for other, w in graph[town]:
            if d + w < dist.get(other, 1 << 60):
                dist[other], count[other], prev[other] = d + w, count[town], town
                heapq.heappush(queue, (d + w, other))
            elif d + w == dist[other]:
                count[other] += count[town]
    return dist, count, prev


def _routes(
    edges: list[tuple[str, str, int]], queries: list[tuple[str, str]], features: set[str]
) -> list[str]:
    lines = []
    for start, goal in queries:
        dist, _count, prev = _dijkstra(edges, start, "bug" in features)
        if goal not in dist:
            if "t1" not in features:
                raise KeyError(goal)
            lines.append("unreachable")
            continue
        path = [goal]
        while path[-1] != start:
            path.append(prev[path[-1]])
        lines.append(
            f"{dist[goal]} {'-'.join(path[::-1])}" if "t3" in features else str(dist[goal])
        )
    return lines


def _unique_paths(edges: list[tuple[str, str, int]], queries: list[tuple[str, str]]) -> bool:
    for start, goal in queries:
        _dist, count, _prev = _dijkstra(edges, start, False)
        if count.get(goal, 1) != 1:
            return False
    return True


class ShortestPath(TemplateBase):
    """Dijkstra over an undirected road map; twists: unreachable, closed roads, print the route."""

    name = "algo.shortest_path"
    cluster = "algo"

    def build_starter(self, rng: random.Random) -> Parts:
        """See `TemplateBase.build_starter`."""
        return starters.shortest_path(rng)

    def build(self, level: int, rng: random.Random) -> Parts:
        """See `TemplateBase.build`."""
        towns_n, queries_n = (6, 9, 12, 14)[level], (3, 5, 6, 6)[level]
        ref, wrong = twists(level), near_miss(level)
        for _attempt in range(300):
            towns = [w.capitalize() for w in rng.sample(WORDS, towns_n + 3)]
            main, island = towns[:towns_n], towns[towns_n:]
            pairs: set[tuple[str, str]] = set()
            for i in range(1, towns_n):  # a random spanning tree, then shortcuts
                pairs.add((main[rng.randrange(i)], main[i]))
            while len(pairs) < towns_n + towns_n // 2:
                a, b = rng.sample(main, 2)
                if (b, a) not in pairs:
                    pairs.add((a, b))
            if level >= 1:
                pairs |= {(island[0], island[1]), (island[1], island[2])}
            edges = [(a, b, rng.randint(1, 20)) for a, b in sorted(pairs)]
            rng.shuffle(edges)
            queries = [tuple(rng.sample(main, 2)) for _ in range(queries_n)]
            if level >= 1:
                queries[rng.randrange(queries_n)] = (rng.choice(main), rng.choice(island))
            closed: list[tuple[str, str]] = []
            if level >= 2:
                closed = [(a, b) for a, b, _w in rng.sample(edges, 3)]
            open_edges = [e for e in edges if (e[0], e[1]) not in closed]
            query_pairs = [(a, b) for a, b in queries]
            graph_ref = open_edges if level >= 2 else edges
            graph_wrong = edges if level == 2 else graph_ref
            if level == 3 and not _unique_paths(open_edges, query_pairs):
                continue
            if differs(
                partial(_routes, graph_ref, query_pairs, ref),
                partial(_routes, graph_wrong, query_pairs, wrong),
            ):
                break
        else:
            raise RenderError(f"{self.name}: no separating data at level {level}")
        expected = _routes(graph_ref, query_pairs, ref)
        files = {
            "roads.txt": "".join(f"{a} {b} {w}\n" for a, b, w in edges),
            "queries.txt": "".join(f"{a} {b}\n" for a, b in query_pairs),
        }
        if level >= 2:
            files["closed.txt"] = "".join(
                f"{a} {b}\n" if rng.random() < 0.5 else f"{b} {a}\n" for a, b in closed
            )
        task = """
            Find shortest road distances. Roads are two-way: a road `A B 7` can be driven from
            A to B and from B to A, and has length 7.
        """
        inputs = """
            `roads.txt`, one road per line as `TOWN TOWN LENGTH` (LENGTH a positive integer);
            `queries.txt`, one question per line as `FROM TO`.
        """
        output = """
            for each query, in order, print one line with the length of the shortest route from
            FROM to TO (an integer).
        """
        rules = [
            "Some towns cannot be reached from some others: for such a query print `unreachable`.",
            "`closed.txt` lists closed roads, one per line as `TOWN TOWN` (in either order): "
            "they cannot be used.",
            "After the length, print the route itself on the same line: the towns from FROM to "
            "TO joined by `-`, for example `12 Amber-Cobalt-Dune`. Every shortest route here is "
            "unique.",
        ]
        return Parts(
            prompt=prompt(task, inputs, output, rules, level),
            setup_script=files_setup(files),
            validation_script=stdout_validator(expected),
            reference_solution=select(_PATH_SOLUTION, ref),
            wrong_solution=select(_PATH_SOLUTION, wrong),
        )


TEMPLATES = (MergeIntervals(), TopK(), ShortestPath())
