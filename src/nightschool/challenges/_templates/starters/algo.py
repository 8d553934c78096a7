"""Starter tier of cluster `algo`: merge intervals, top-k totals, shortest distance."""

from __future__ import annotations

import random
from functools import partial

from nightschool.challenges._templates._kit import (
    WORDS,
    Case,
    Parts,
    RenderError,
    call,
    differs,
    function_parts,
    shown_example,
)

# --------------------------------------------------------------------------- merge_intervals

_MERGE_SOURCE = """
    def merge_intervals(intervals):
        merged = []
        for start, end in sorted(intervals):
            if merged and start <= merged[-1][1]:  #-bug
            if merged and start < merged[-1][1]:  #+bug
                merged[-1][1] = max(merged[-1][1], end)
            else:
                merged.append([start, end])
        return merged
"""


def _merged(intervals: list[list[int]], bug: bool = False) -> list[list[int]]:
    out: list[list[int]] = []
    for a, b in sorted(intervals):
        if out and (a < out[-1][1] if bug else a <= out[-1][1]):
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return out


def _blocks(rng: random.Random, count: int) -> list[list[int]]:
    """Intervals forming `count` separate blocks, two of them touching, shuffled."""
    pos, pieces = rng.randint(0, 9), []
    touch = rng.randrange(max(1, count - 1))
    for index in range(count):
        end = pos + rng.randint(3, 9)
        pieces.append([pos, rng.randint(pos + 1, end)])
        if rng.random() < 0.6:
            pieces.append([rng.randint(pos, end - 1), end])
        else:
            pieces[-1][1] = end
        pos = end if index == touch else end + rng.randint(1, 5)
    rng.shuffle(pieces)
    return pieces


def merge_intervals(rng: random.Random) -> Parts:
    """Starter of `algo.merge_intervals`."""
    func = "merge_intervals"
    a = rng.randint(0, 20)
    b, c = a + rng.randint(1, 5), a + rng.randint(6, 12)
    inputs = [
        [],
        [[a, b]],
        [[b, c], [a, b]],
        [[a, c], [a + 1, b]],
        _blocks(rng, 2),
        _blocks(rng, 3),
        _blocks(rng, 3),
    ]
    cases = [Case(call(func, x), _merged(x)) for x in inputs]
    if not differs(
        lambda: [_merged(x) for x in inputs], lambda: [_merged(x, bug=True) for x in inputs]
    ):
        raise RenderError("algo.merge_intervals: starter cases do not separate the near-miss")
    example = _blocks(rng, 2)
    return function_parts(
        func=func,
        signature="def merge_intervals(intervals: list[list[int]]) -> list[list[int]]:",
        spec="""
            Merge overlapping closed intervals [start, end] (start <= end, given in any
            order) and return the merged intervals sorted by start. Intervals that share
            a point overlap, so touching intervals merge too.
        """,
        examples=[
            Case(call(func, example), _merged(example)),
            Case(call(func, [[1, 3], [3, 5]]), [[1, 5]]),
        ],
        cases=cases,
        source=_MERGE_SOURCE,
    )


# --------------------------------------------------------------------------- top_k

_TOPK_SOURCE = """
    def top_k(games, k):
        totals = {}
        for name, points in games:
            totals[name] = totals.get(name, 0) + points  #-bug
            totals[name] = points  #+bug
        ranked = sorted(totals.items(), key=lambda item: item[1], reverse=True)
        return ranked[:k]
"""


def _top(games: list[tuple[str, int]], k: int, bug: bool = False) -> list[tuple[str, int]]:
    totals: dict[str, int] = {}
    for name, points in games:
        totals[name] = points if bug else totals.get(name, 0) + points
    return sorted(totals.items(), key=lambda item: -item[1])[:k]


def _games(rng: random.Random, players: int) -> list[tuple[str, int]]:
    """Games of `players` players with distinct totals, most players on 2-3 lines."""
    games: list[tuple[str, int]] = []
    for name, total in zip(
        rng.sample(WORDS, players), rng.sample(range(6, 60), players), strict=True
    ):
        cuts = sorted(rng.sample(range(1, total), rng.choice((1, 1, 2, 3)) - 1))
        games += [(name, hi - lo) for lo, hi in zip([0, *cuts], [*cuts, total], strict=True)]
    rng.shuffle(games)
    return games


def _top_all(
    args: list[tuple[list[tuple[str, int]], int]], bug: bool
) -> list[list[tuple[str, int]]]:
    return [_top(games, k, bug) for games, k in args]


def _top_example(rng: random.Random) -> Case:
    """3-4 players with small distinct totals; the leader's points come from two games."""
    players = rng.randint(3, 4)
    totals = sorted(rng.sample(range(3, 16), players), reverse=True)
    names = rng.sample(WORDS, players)
    first = rng.randint(1, totals[0] - 1)
    games = [(names[0], first), (names[0], totals[0] - first)]
    games += list(zip(names[1:], totals[1:], strict=True))
    rng.shuffle(games)
    k = rng.randint(2, players - 1)
    return Case(call("top_k", games, k), _top(games, k))


def top_k(rng: random.Random) -> Parts:
    """Starter of `algo.top_k`."""
    func = "top_k"
    for _attempt in range(100):
        args: list[tuple[list[tuple[str, int]], int]] = [([], 2), (_games(rng, 2), 3)]
        args.append((_games(rng, 1), 1))
        args += [(_games(rng, rng.randint(3, 5)), rng.randint(1, 3)) for _ in range(4)]
        if differs(partial(_top_all, args, False), partial(_top_all, args, True)):
            break
    else:
        raise RenderError("algo.top_k: starter cases do not separate the near-miss")
    hidden = [Case(call(func, g, k), _top(g, k)) for g, k in args]
    return function_parts(
        func=func,
        signature="def top_k(games: list[tuple[str, int]], k: int) -> list[tuple[str, int]]:",
        spec="""
            Each game is (player, points); a player's total is the sum of their points.
            Return the k players with the highest totals as (player, total) pairs, highest
            first (no two totals are equal). With fewer than k players, return them all.
        """,
        examples=[shown_example(rng, _top_example, hidden)],
        cases=hidden,
        source=_TOPK_SOURCE,
    )


# --------------------------------------------------------------------------- shortest_path

_PATH_SOURCE = """
    import heapq


    def shortest_distance(roads, start, goal):
        graph = {}
        for a, b, length in roads:
            graph.setdefault(a, []).append((b, length))
            graph.setdefault(b, []).append((a, length))  #-bug
        best = {start: 0}
        queue = [(0, start)]
        while queue:
            dist, town = heapq.heappop(queue)
            if town == goal:
                return dist
            if dist > best[town]:
                continue
            for other, length in graph.get(town, []):
                if dist + length < best.get(other, float("inf")):
                    best[other] = dist + length
                    heapq.heappush(queue, (dist + length, other))
        return -1
"""


def _distance(roads: list[tuple[str, str, int]], start: str, goal: str, bug: bool = False) -> int:
    """Bellman-Ford over the tiny map (independent of the reference's Dijkstra); -1: unreachable."""
    dist = {start: 0}
    arcs = [(a, b, w) for a, b, w in roads] + ([] if bug else [(b, a, w) for a, b, w in roads])
    for _ in range(len(roads) + 1):
        for a, b, w in arcs:
            if a in dist and dist[a] + w < dist.get(b, 1 << 30):
                dist[b] = dist[a] + w
    return dist.get(goal, -1)


def _roads(rng: random.Random, towns: list[str]) -> list[tuple[str, str, int]]:
    pairs = {(towns[rng.randrange(i)], towns[i]) for i in range(1, len(towns))}
    while len(pairs) < len(towns) + 1:
        a, b = rng.sample(towns, 2)
        if (b, a) not in pairs:
            pairs.add((a, b))
    roads = [(a, b, rng.randint(1, 9)) for a, b in sorted(pairs)]
    rng.shuffle(roads)
    return roads


def _two(rng: random.Random, towns: list[str]) -> tuple[str, str]:
    start, goal = rng.sample(towns, 2)
    return start, goal


def _distance_all(args: list[tuple[list[tuple[str, str, int]], str, str]], bug: bool) -> list[int]:
    return [_distance(roads, start, goal, bug) for roads, start, goal in args]


def _path_example(rng: random.Random) -> Case:
    """A triangle of towns a-b-c, asked from c back to a (so roads run both ways)."""
    a, b, c = (w.capitalize() for w in rng.sample(WORDS, 3))
    x, y = rng.randint(1, 6), rng.randint(1, 6)
    roads = [(a, b, x), (b, c, y), (a, c, x + y + rng.choice((-1, 1, 2)))]
    rng.shuffle(roads)
    return Case(call("shortest_distance", roads, c, a), _distance(roads, c, a))


def shortest_path(rng: random.Random) -> Parts:
    """Starter of `algo.shortest_path`."""
    func = "shortest_distance"
    for _attempt in range(100):
        args: list[tuple[list[tuple[str, str, int]], str, str]] = []
        for size in (4, 5):
            towns = [w.capitalize() for w in rng.sample(WORDS, size)]
            roads = _roads(rng, towns)
            pairs = [(towns[0], towns[0]) if size == 4 else _two(rng, towns)]
            pairs += [_two(rng, towns) for _ in range(3)]
            args += [(roads, start, goal) for start, goal in pairs]
        if differs(partial(_distance_all, args, False), partial(_distance_all, args, True)):
            break
    else:
        raise RenderError("algo.shortest_path: starter cases do not separate the near-miss")
    hidden = [Case(call(func, *a), _distance(*a)) for a in args]
    return function_parts(
        func=func,
        signature=(
            "def shortest_distance(roads: list[tuple[str, str, int]], start: str, goal: str)"
            " -> int:"
        ),
        spec="""
            Each road (a, b, length) joins towns a and b and can be driven both ways.
            Return the length of the shortest route from start to goal (0 when start ==
            goal). goal can always be reached.
        """,
        examples=[shown_example(rng, _path_example, hidden)],
        cases=hidden,
        source=_PATH_SOURCE,
    )
