"""Starter tier of `algo.top_k`: one leaderboard function from a family.

Axes (see `_kit.variant`): a player's score (`sum` total points, `best` best
single game, `avg` points per game), the direction (`high` the k highest,
`low` the k lowest; the function is named after score and direction, e.g.
`bottom_averages`) and the argument shape (`tuples`: a list of
`(player, points)` games; `grouped`: a dict from player to their points).
Every player of a hidden case plays at least two unequal games, so the three
scores differ, and most cases hold more than twice k players, so the two
directions return different players.
"""

from __future__ import annotations

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
    shown_example,
    variant,
)

WHAT = ("sum", "best", "avg")
"""A player's score: total points, best single game, or average per game."""
DIR = ("high", "low")
"""The k highest scores, highest first, or the k lowest, lowest first."""
SHAPE = ("tuples", "grouped")
"""Games as `(player, points)` tuples, or a dict from player to a list of points."""

_FUNC = {
    ("sum", "high"): "top_totals",
    ("sum", "low"): "bottom_totals",
    ("best", "high"): "top_best_games",
    ("best", "low"): "bottom_best_games",
    ("avg", "high"): "top_averages",
    ("avg", "low"): "bottom_averages",
}
_NOUN = {"sum": "total", "best": "best", "avg": "average"}

_SOURCE = """
    def {func}(games, k):
        points = {}  #+tuples
        for name, score in games:  #+tuples
            points.setdefault(name, []).append(score)  #=tuples&!bug
            points[name] = [score]  #=tuples&bug
        points = games  #=grouped&!bug
        points = {name: scores[-1:] for name, scores in games.items()}  #=grouped&bug
        value = {name: sum(scores) for name, scores in points.items()}  #+sum
        value = {name: max(scores) for name, scores in points.items()}  #+best
        value = {name: sum(scores) / len(scores) for name, scores in points.items()}  #+avg
        ranked = sorted(value.items(), key=lambda item: item[1], reverse=True)  #+high
        ranked = sorted(value.items(), key=lambda item: item[1])  #+low
        return ranked[:k]
"""


def _answer(players: dict[str, list[int]], k: int, tags: set[str]) -> list[tuple[str, Any]]:
    """What the function with `tags` returns for `players` (player -> points in game order)."""
    value: dict[str, float] = {}
    for name, scores in players.items():
        used = scores[-1:] if "bug" in tags else scores
        if "best" in tags:
            value[name] = max(used)
        elif "avg" in tags:
            value[name] = sum(used) / len(used)
        else:
            value[name] = sum(used)
    sign = 1 if "low" in tags else -1
    return sorted(value.items(), key=lambda item: sign * item[1])[:k]


def _arg(players: dict[str, list[int]], rng: random.Random, tags: set[str]) -> Any:
    """The function's argument: shuffled games (keeping each player's order), or the dict."""
    if "grouped" in tags:
        return players
    slots = [name for name, scores in players.items() for _ in scores]
    rng.shuffle(slots)
    taken = dict.fromkeys(players, 0)
    games = []
    for name in slots:
        games.append((name, players[name][taken[name]]))
        taken[name] += 1
    return games


def _players(rng: random.Random, count: int, tags: set[str]) -> dict[str, list[int]]:
    """`count` players, 2-3 unequal games each, no two with the same score."""
    for _attempt in range(100):
        players = {
            name: rng.sample(range(1, 30), rng.randint(2, 3)) for name in rng.sample(WORDS, count)
        }
        values = [score for _, score in _answer(players, count, tags)]
        if len(set(values)) == count:
            return players
    raise RenderError("algo.top_k: no players with distinct scores")


def build_starter(rng: random.Random) -> Parts:
    """The starter of `algo.top_k` (`TemplateBase.build_starter`).

    Raises:
        RenderError: if no drawn cases separate the near-miss from the reference.
    """
    tags = variant(rng, WHAT, DIR, SHAPE)
    (what,) = tags & set(WHAT)
    high = "high" in tags
    func = _FUNC[what, "high" if high else "low"]
    for _attempt in range(100):
        args = [({}, 2), (_players(rng, 2, tags), 3), (_players(rng, 5, tags), 2)]
        args += [(_players(rng, rng.randint(5, 7), tags), rng.randint(1, 2)) for _ in range(3)]
        if differs(
            partial(lambda a, t: [_answer(p, k, t) for p, k in a], args, tags),
            partial(lambda a, t: [_answer(p, k, t) for p, k in a], args, tags | {"bug"}),
        ):
            break
    else:
        raise RenderError("algo.top_k: starter cases do not separate the near-miss")
    hidden = [Case(call(func, _arg(p, rng, tags), k), _answer(p, k, tags)) for p, k in args]

    def draw(r: random.Random) -> Case:
        players, k = _players(r, 3, tags), 2
        return Case(call(func, _arg(players, r, tags), k), _answer(players, k, tags))

    noun = _NOUN[what]
    games = (
        "Each game is (player, points)."
        if "tuples" in tags
        else "`games` maps each player to the points of their games."
    )
    score = {
        "sum": "the sum of their points",
        "best": "their most points in one game",
        "avg": "their points per game (total / number of games)",
    }[what]
    order = "highest" if high else "lowest"
    spec = (
        f"{games} A player's {noun} is {score}. Return the k players with the {order} "
        f"{noun}s as (player, {noun}) pairs, {order} first (no two are equal). With fewer "
        "than k players, return them all."
    )
    kind = "list[tuple[str, int]]" if "tuples" in tags else "dict[str, list[int]]"
    returns = f"list[tuple[str, {'float' if what == 'avg' else 'int'}]]"
    return function_parts(
        func=func,
        signature=f"def {func}(games: {kind}, k: int) -> {returns}:",
        spec=textwrap.fill(spec, 84),
        examples=[shown_example(rng, draw, hidden)],
        cases=hidden,
        source=_SOURCE.replace("{func}", func),
        features=tags,
    )
