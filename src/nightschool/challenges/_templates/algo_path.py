"""Template `algo.shortest_path`: a family of route-finding tasks on a road map.

A seed draws one task (see `_kit.variant`) from four axes:

- what to answer per query (`WHAT`): `dist` the length of the shortest route
  (Dijkstra), `hops` the fewest roads (breadth-first search), `count` how many
  different routes have the shortest length (path counting);
- the roads (`DIR`): `two` two-way or `one` one-way (`A B 7` runs from A to B);
- the road file (`SHAPE`): `txt` `roads.txt` with `A B LENGTH` lines, `csv`
  `roads.csv` with a `from,to,length` header.

`build` keeps only data on which every other task of the same road file gives
a different output, so a seed's reference fails the other seeds' validators
whenever their tasks differ.
"""

from __future__ import annotations

import heapq
import itertools
import random
from collections import defaultdict
from functools import partial

from nightschool.challenges._templates._kit import (
    WORDS,
    Parts,
    RenderError,
    differs,
    files_setup,
    near_miss,
    prompt,
    select,
    stdout_validator,
    twists,
    variant,
)

WHAT = ("dist", "hops", "count")
"""Per query: shortest length, fewest roads, or number of shortest routes."""
DIR = ("two", "one")
"""Two-way roads, or one-way roads from the first town to the second."""
SHAPE = ("txt", "csv")
"""`roads.txt` with `A B LENGTH` lines, or `roads.csv` with a `from,to,length` header."""
QUERY = ("pairs", "source")
"""`queries.txt` with `FROM TO` lines, or one start town in `start.txt` and every other town."""

Edge = tuple[str, str, int]

_SOLUTION = """
    import heapq

    graph = {}
    towns = set()  #+source
    closed = set()  #+t2
    for line in open("closed.txt"):  #+t2
        if line.split():  #+t2
            closed.add(frozenset(line.split()))  #+t2
    with open("roads.txt") as handle:  #+txt
    with open("roads.csv") as handle:  #+csv
        next(handle)  #+csv
        for line in handle:
            if not line.strip():
                continue
            a, b, length = line.split()  #+txt
            a, b, length = line.strip().split(",")  #+csv
            towns.update((a, b))  #+source
            if frozenset((a, b)) in closed:  #+t2
                continue  #+t2
            weight = int(length)  #-hops
            weight = 1  #+hops
            graph.setdefault(a, []).append((b, weight))
            graph.setdefault(b, []).append((a, weight))  #=two&!bug
            graph.setdefault(b, []).append((a, weight))  #=one&bug


    def search(start):
        best = {start: 0}
        ways = {start: 1}  #+count
        previous = {}  #=!count&t3
        queue = [(0, start)]
        done = set()
        while queue:
            dist, town = heapq.heappop(queue)
            if town in done:
                continue
            done.add(town)
            for other, weight in graph.get(town, []):
                new = dist + weight
                if new < best.get(other, float("inf")):
                    best[other] = new
                    ways[other] = ways[town]  #+count
                    previous[other] = town  #=!count&t3
                    heapq.heappush(queue, (new, other))
                elif new == best[other]:  #+count
                    ways[other] += ways[town]  #+count
        return best, ways  #+count
        return best, previous  #=!count&t3
        return best, None  #=!count&!t3


    queries = [line.split() for line in open("queries.txt") if line.split()]  #+pairs
    start = open("start.txt").read().strip()  #+source
    queries = [(start, town) for town in sorted(towns - {start})]  #+source
    for start, goal in queries:
        best, info = search(start)
        head = []  #+pairs
        head = [goal]  #+source
        if goal not in best:  #+t1
            print(*head, "unreachable")  #+t1
            continue  #+t1
        print(*head, best[goal])  #=!count&!t3
        print(*head, info[goal])  #=count&!t3
        print(*head, best[goal], info[goal])  #=count&t3
        path = [goal]  #=!count&t3
        while path[-1] != start:  #=!count&t3
            path.append(info[path[-1]])  #=!count&t3
        print(*head, best[goal], "-".join(reversed(path)))  #=!count&t3
"""


def _search(
    edges: list[Edge], start: str, directed: bool, hops: bool
) -> tuple[dict[str, int], dict[str, int], dict[str, str]]:
    """Return (distance, number of shortest routes, predecessor) from `start`."""
    graph: dict[str, list[tuple[str, int]]] = defaultdict(list)
    for a, b, w in edges:
        graph[a].append((b, 1 if hops else w))
        if not directed:
            graph[b].append((a, 1 if hops else w))
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


def emulate(edges: list[Edge], queries: list[tuple[str, str]], features: set[str]) -> list[str]:
    """The stdout lines a solution with `features` prints (`edges`: the roads it uses).

    Raises:
        KeyError: where the solution crashes (an unreachable town without `t1`).
    """
    directed = ("one" in features) != ("bug" in features)
    lines = []
    for start, goal in queries:
        dist, count, prev = _search(edges, start, directed, "hops" in features)
        if goal not in dist and "t1" in features:
            line = "unreachable"
        elif "count" in features:
            line = f"{dist[goal]} {count[goal]}" if "t3" in features else str(count[goal])
        elif "t3" in features:
            path = [goal]
            while path[-1] != start:
                path.append(prev[path[-1]])
            line = f"{dist[goal]} {'-'.join(reversed(path))}"
        else:
            line = str(dist[goal])
        lines.append(f"{goal} {line}" if "source" in features else line)
    return lines


def _map(
    rng: random.Random, size: int, level: int, tags: set[str]
) -> tuple[list[Edge], list[str], list[str]]:
    """Roads of a random connected map of `size` towns, plus an island of three (level 1 on)."""
    towns = [w.capitalize() for w in rng.sample(WORDS, size + 3)]
    main, island = towns[:size], towns[size:]
    pairs: set[tuple[str, str]] = set()
    for i in range(1, size):  # a random spanning tree, then shortcuts
        pairs.add((main[rng.randrange(i)], main[i]))
    while len(pairs) < size + size // 2 + ("one" in tags) * 2:
        a, b = rng.sample(main, 2)
        if (b, a) not in pairs:
            pairs.add((a, b))
    if level >= 1:
        pairs |= {(island[0], island[1]), (island[1], island[2])}
    top = 4 if "count" in tags else 20
    edges = []
    for a, b in sorted(pairs):
        edges.append(
            (a, b, rng.randint(1, top)) if rng.random() < 0.5 else (b, a, rng.randint(1, top))
        )
    rng.shuffle(edges)
    return edges, main, island


def _queries(
    rng: random.Random, edges: list[Edge], main: list[str], count: int, tags: set[str]
) -> list[tuple[str, str]]:
    """`count` queries between distinct towns of `main` that the reference can reach."""
    directed = "one" in tags
    reachable = [
        (a, b)
        for a, b in itertools.permutations(main, 2)
        if b in _search(edges, a, directed, False)[0]
    ]
    return rng.sample(reachable, min(count, len(reachable)))


def _from_one(
    rng: random.Random, edges: list[Edge], main: list[str], island: list[str], tags: set[str]
) -> list[tuple[str, str]]:
    """A start town that reaches every town of `main`, asked for every other town; [] if none."""
    directed = "one" in tags
    starts = [a for a in main if set(main) <= set(_search(edges, a, directed, False)[0])]
    if not starts:
        return []
    start = rng.choice(starts)
    return [(start, town) for town in sorted({*main, *island} - {start})]


def build(level: int, rng: random.Random) -> Parts:
    """The program tiers of `algo.shortest_path` (`TemplateBase.build`).

    Raises:
        RenderError: if no drawn data separates the near-miss and the family's other tasks.
    """
    tags = variant(rng, WHAT, DIR, SHAPE, QUERY)
    size, query_count = (6, 9, 12, 14)[level], (3, 5, 6, 6)[level]
    ref, wrong = tags | twists(level), tags | near_miss(level)
    fixed = tags & {*SHAPE, *QUERY}
    others = [
        {what, way} | fixed | twists(level)
        for what in WHAT
        for way in DIR
        if {what, way} != tags - fixed
    ]
    for _attempt in range(400):
        edges, main, island = _map(rng, size, level, tags)
        if "source" in tags:
            queries = _from_one(rng, edges, main, island if level >= 1 else [], tags)
        else:
            queries = _queries(rng, edges, main, query_count, tags)
            if len(queries) == query_count and level >= 1:
                queries[rng.randrange(query_count)] = (rng.choice(main), rng.choice(island))
        if not queries or ("pairs" in tags and len(queries) < query_count):
            continue
        closed = [(a, b) for a, b, _w in rng.sample(edges, 3)] if level >= 2 else []
        used = [e for e in edges if (e[0], e[1]) not in closed]
        try:
            expected = emulate(used, queries, ref)
        except KeyError:
            continue
        if not _fits(edges, used, queries, expected, level, tags):
            continue
        wrong_edges = edges if level == 2 else used
        rivals = [(wrong_edges, wrong), *((used, other) for other in others)]
        if all(
            differs(partial(list, expected), partial(emulate, roads, queries, features))
            for roads, features in rivals
        ):
            break
    else:
        raise RenderError(f"algo.shortest_path: no separating data at level {level}")
    name = "roads.txt" if "txt" in tags else "roads.csv"
    sep = " " if "txt" in tags else ","
    roads = "".join(f"{a}{sep}{b}{sep}{w}\n" for a, b, w in edges)
    files = {
        name: roads if "txt" in tags else "from,to,length\n" + roads,
    }
    if "source" in tags:
        files["start.txt"] = queries[0][0] + "\n"
    else:
        files["queries.txt"] = "".join(f"{a} {b}\n" for a, b in queries)
    if level >= 2:
        files["closed.txt"] = "".join(
            f"{a} {b}\n" if rng.random() < 0.5 else f"{b} {a}\n" for a, b in closed
        )
    return Parts(
        prompt=_prompt(tags, level),
        setup_script=files_setup(files),
        validation_script=stdout_validator(expected),
        reference_solution=select(_SOLUTION, ref),
        wrong_solution=select(_SOLUTION, wrong),
    )


def _fits(
    edges: list[Edge],
    used: list[Edge],
    queries: list[tuple[str, str]],
    expected: list[str],
    level: int,
    tags: set[str],
) -> bool:
    """The data suits the task: unique routes to print, several shortest routes to count."""
    directed = "one" in tags
    counts = [
        _search(used, start, directed, "hops" in tags)[1].get(goal, 0) for start, goal in queries
    ]
    if "count" in tags:
        return max(counts) >= 2
    return level < 3 or max(counts) == 1


_TASK = {
    "dist": "Find the lengths of shortest routes.",
    "hops": "Find the fewest roads needed to get from town to town: road lengths do not matter "
    "here, every road counts as one step.",
    "count": "Count shortest routes: the number of different routes (as sequences of towns) "
    "whose total length is the smallest possible.",
}
_ROADS = {
    "two": "Roads are two-way: a road `{a}` can be driven from A to B and from B to A, and has "
    "length 7.",
    "one": "Roads are one-way: a road `{a}` can be driven from A to B only, not from B to A, and "
    "has length 7.",
}
_INPUT = {
    "txt": "`roads.txt`, one road per line as `TOWN TOWN LENGTH` (LENGTH a positive integer)",
    "csv": "`roads.csv`, a header line `from,to,length`, then one road per line as "
    "`FROM,TO,LENGTH` (LENGTH a positive integer)",
    "pairs": "`queries.txt`, one question per line as `FROM TO`.",
    "source": "`start.txt`, the name of one town: FROM.",
}
_VALUE = {
    "dist": ("the length of the shortest route from FROM to TO (an integer)", "12"),
    "hops": ("the smallest number of roads on a route from FROM to TO", "2"),
    "count": ("the number of different shortest routes from FROM to TO", "2"),
}
_ROUTE = {
    "dist": "After the length, print the route itself on the same line: the towns from FROM to "
    "TO joined by `-`, for example `{head}12 Amber-Cobalt-Dune`. Every shortest route here is "
    "unique.",
    "hops": "After the number of roads, print the route itself on the same line: the towns from "
    "FROM to TO joined by `-`, for example `{head}2 Amber-Cobalt-Dune`. Every route with the "
    "fewest roads here is unique.",
    "count": "Print the length of the shortest route before the count: `{label}LENGTH COUNT`, "
    "for example `{head}9 2`.",
}


def _prompt(tags: set[str], level: int) -> str:
    (what,) = tags & set(WHAT)
    (shape,) = tags & set(SHAPE)
    road = "A B 7" if shape == "txt" else "A,B,7"
    task = f"{_TASK[what]} {_ROADS['one' if 'one' in tags else 'two'].format(a=road)}"
    value, example = _VALUE[what]
    source = "source" in tags
    if source:
        output = (
            "for every other town TO named in the road file, sorted by name, print one line "
            f"`TO VALUE`, where VALUE is {value} (for example `Dune {example}`)."
        )
    else:
        output = f"for each query, in order, print one line with {value}."
    head, label = ("Dune ", "TO ") if source else ("", "")
    rules = [
        "Some towns cannot be reached from some others: for such a "
        + ("town print `TO unreachable`." if source else "query print `unreachable`."),
        "`closed.txt` lists closed roads, one per line as `TOWN TOWN` (the two towns in either "
        "order): they cannot be used.",
        _ROUTE[what].format(head=head, label=label),
    ]
    inputs = f"{_INPUT[shape]}; {_INPUT['source' if source else 'pairs']}"
    return prompt(task, inputs, output, rules, level)
