"""Starter tier of `algo.shortest_path`: one route function from a family.

Axes (see `_kit.variant`): what the function returns (`dist` the shortest
length, `shortest_distance`; `hops` the fewest roads, `fewest_roads`; `count`
the number of shortest routes, `count_shortest_routes`), the roads (`two`
two-way, `one` one-way from the first town to the second) and the argument
shape (`tuples`: `(a, b, length)` tuples; `lines`: strings like
`"Amber Cobalt 7"`; `mapping`: a dict `{(a, b): length}`). The hidden cases always hold a query that the two road
conventions answer differently.
"""

from __future__ import annotations

import itertools
import random
import textwrap
from functools import partial
from typing import Any

from nightschool.challenges._templates._kit import (
    WORDS,
    Case,
    Parts,
    RenderError,
    call,
    differs,
    function_parts,
    pick,
    shown_example,
    variant,
)

WHAT = ("dist", "hops", "count")
"""What the function returns: shortest length, fewest roads, number of shortest routes."""
DIR = ("two", "one")
"""Two-way roads, or one-way roads from the first town to the second."""
SHAPE = ("tuples", "lines", "mapping")
"""Roads as `(a, b, length)` tuples, as `"A B LENGTH"` strings, or a dict `{(a, b): length}`."""

_FUNC = {"dist": "shortest_distance", "hops": "fewest_roads", "count": "count_shortest_routes"}

_SOURCE = """
    import heapq


    def {func}(roads, start, goal):
        graph = {}
        for road in roads:  #-mapping
            a, b, length = road  #+tuples
            a, b, length = road.split()  #+lines
        for (a, b), length in roads.items():  #+mapping
            length = int(length)  #+lines
            length = 1  #+hops
            graph.setdefault(a, []).append((b, length))
            graph.setdefault(b, []).append((a, length))  #=two&!bug
            graph.setdefault(b, []).append((a, length))  #=one&bug
        best = {start: 0}
        ways = {start: 1}  #+count
        queue = [(0, start)]
        done = set()
        while queue:
            dist, town = heapq.heappop(queue)
            if town in done:
                continue
            done.add(town)
            for other, length in graph.get(town, []):
                if dist + length < best.get(other, float("inf")):
                    best[other] = dist + length
                    ways[other] = ways[town]  #+count
                    heapq.heappush(queue, (dist + length, other))
                elif dist + length == best[other]:  #+count
                    ways[other] += ways[town]  #+count
        return best.get(goal, -1)  #-count
        return ways.get(goal, 0)  #+count
"""


def _answer(roads: list[tuple[str, str, int]], start: str, goal: str, tags: set[str]) -> int:
    """Bellman-Ford style relaxation, then route counting over the shortest-route arcs.

    Independent of the reference's Dijkstra; -1 (`count`: 0) when goal is unreachable.
    """
    directed = ("one" in tags) != ("bug" in tags)
    arcs = [(a, b, 1 if "hops" in tags else w) for a, b, w in roads]
    arcs += [] if directed else [(b, a, w) for a, b, w in arcs]
    dist = {start: 0}
    for _ in range(len(arcs) + 1):
        for a, b, w in arcs:
            if a in dist and dist[a] + w < dist.get(b, 1 << 30):
                dist[b] = dist[a] + w
    if "count" not in tags:
        return dist.get(goal, -1)
    ways = {start: 1}
    for town in sorted(dist, key=dist.__getitem__):
        if town != start:
            ways[town] = sum(
                ways[a] for a, b, w in arcs if b == town and dist.get(a, -99) + w == dist[town]
            )
    return ways.get(goal, 0)


def _roads(rng: random.Random, towns: list[str], top: int) -> list[tuple[str, str, int]]:
    pairs = {(towns[rng.randrange(i)], towns[i]) for i in range(1, len(towns))}
    while len(pairs) < len(towns) + 2:
        a, b = rng.sample(towns, 2)
        if (b, a) not in pairs:
            pairs.add((a, b))
    roads = [
        (a, b, rng.randint(1, top)) if rng.random() < 0.5 else (b, a, rng.randint(1, top))
        for a, b in sorted(pairs)
    ]
    rng.shuffle(roads)
    return roads


def _arg(roads: list[tuple[str, str, int]], tags: set[str]) -> Any:
    if "mapping" in tags:
        return {(a, b): w for a, b, w in roads}
    return [f"{a} {b} {w}" for a, b, w in roads] if "lines" in tags else roads


def build_starter(rng: random.Random) -> Parts:
    """The starter of `algo.shortest_path` (`TemplateBase.build_starter`).

    Raises:
        RenderError: if no drawn cases separate the near-miss from the reference.
    """
    tags = variant(rng, WHAT, DIR, SHAPE)
    (what,) = tags & set(WHAT)
    func = _FUNC[what]
    top = 3 if what == "count" else 9
    for _attempt in range(200):
        args: list[tuple[list[tuple[str, str, int]], str, str]] = []
        for size in (4, 5):
            towns = [w.capitalize() for w in rng.sample(WORDS, size)]
            roads = _roads(rng, towns, top)
            reach = [
                (a, b)
                for a, b in itertools.permutations(towns, 2)
                if _answer(roads, a, b, tags - {"count"}) >= 0
            ]
            pairs = [(towns[0], towns[0])] if size == 4 else []
            pairs += rng.sample(reach, min(len(reach), 3 if size == 4 else 4))
            args += [(roads, start, goal) for start, goal in pairs]
        if len(args) < 7:
            continue
        values = [_answer(*a, tags) for a in args]
        if what == "count" and max(values) < 2:
            continue
        if differs(partial(_all, args, tags), partial(_all, args, tags | {"bug"})):
            break
    else:
        raise RenderError("algo.shortest_path: starter cases do not separate the near-miss")
    hidden = [Case(call(func, _arg(r, tags), s, g), _answer(r, s, g, tags)) for r, s, g in args]

    def draw(r: random.Random) -> Case:
        a, b, c = (w.capitalize() for w in r.sample(WORDS, 3))
        x, y = r.randint(1, 4), r.randint(1, 4)
        roads = [(a, b, x), (b, c, y), (a, c, x + y + r.choice((-1, 0, 1)))]
        r.shuffle(roads)
        return Case(call(func, _arg(roads, tags), a, c), _answer(roads, a, c, tags))

    road = {
        "lines": 'Each road "a b 7"',
        "tuples": "Each road (a, b, 7)",
        "mapping": "Each entry (a, b): 7 is a road that",
    }[pick(tags, SHAPE)]
    way = (
        "joins towns a and b and can be driven both ways"
        if "two" in tags
        else "runs from town a to town b only (one-way)"
    )
    spec = (
        f"{road} {way}; 7 is its length. "
        + {
            "dist": "Return the length of the shortest route from start to goal (0 when start ==",
            "hops": "Return the fewest roads on a route from start to goal, whatever their lengths "
            "(0 when start ==",
            "count": "Return how many different routes (town sequences) from start to goal have the "
            "shortest total length (1 when start ==",
        }[what]
    )
    spec += " goal). goal can always be reached."
    kind = {
        "lines": "list[str]",
        "tuples": "list[tuple[str, str, int]]",
        "mapping": "dict[tuple[str, str], int]",
    }[pick(tags, SHAPE)]
    return function_parts(
        func=func,
        signature=f"def {func}(roads: {kind}, start: str, goal: str) -> int:",
        spec=textwrap.fill(spec, 84),
        examples=[shown_example(rng, draw, hidden)],
        cases=hidden,
        source=_SOURCE.replace("{func}", func),
        features=tags,
    )


def _all(args: list[tuple[list[tuple[str, str, int]], str, str]], tags: set[str]) -> list[int]:
    return [_answer(roads, start, goal, tags) for roads, start, goal in args]
