"""Template `algo.top_k`: a family of leaderboard tasks.

A seed draws one task (see `_kit.variant`) from four axes:

- the score of a player (`WHAT`): `sum` the total of their points, `best`
  their best single game, `avg` their mean points per game (one decimal);
- the direction (`DIR`): `high` the k highest scores, highest first, or `low`
  the k lowest, lowest first;
- the input (`SHAPE`): `plain` `scores.csv` lines `NAME,POINTS` without a
  header, or `dated` `scores.csv` with a `date,player,points` header;
- the output (`OUT`): `spaced` `NAME SCORE` lines or `commas` `NAME,SCORE`.

Every player plays two to four games with unequal points, so the three scores
differ; the players outnumber twice k, so the two directions print different
players; the two inputs have different column counts.
"""

from __future__ import annotations

import random
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

WHAT = ("sum", "best", "avg")
"""A player's score: total points, best single game, or average per game."""
DIR = ("high", "low")
"""The k highest scores or the k lowest."""
SHAPE = ("plain", "dated")
"""`scores.csv` as `NAME,POINTS` lines, or with a `date,player,points` header."""
OUT = ("spaced", "commas")
"""Output lines with spaces or with commas between the fields."""

_SOLUTION = """
    K = {k}
    games = {{}}
    with open("scores.csv") as handle:
        next(handle)  #+dated
        for line in handle:
            if not line.strip():
                continue
            name, points = line.strip().split(",")  #+plain
            _date, name, points = line.strip().split(",")  #+dated
            name = name.lower()  #+t2
            games.setdefault(name, []).append(int(points))  #-bug
            games[name] = [int(points)]  #+bug
    scores = {{name: sum(points) for name, points in games.items()}}  #+sum
    scores = {{name: max(points) for name, points in games.items()}}  #+best
    scores = {{name: sum(points) / len(points) for name, points in games.items()}}  #+avg
    ranked = sorted(scores.items(), key=lambda item: (-item[1], item[0]))  #=t1&high
    ranked = sorted(scores.items(), key=lambda item: -item[1])  #=!t1&high
    ranked = sorted(scores.items(), key=lambda item: (item[1], item[0]))  #=t1&low
    ranked = sorted(scores.items(), key=lambda item: item[1])  #=!t1&low
    for name, score in ranked[:K]:  #-t3bug
    for position, (name, score) in enumerate(ranked[:K]):  #+t3bug
        shown = f"{{score:.1f}}"  #+avg
        shown = str(score)  #-avg
        fields = [name, shown]  #-t3|t3bug
        fields = [str(1 + sum(1 for _, other in ranked if other > score)), name, shown]  #=t3&high
        fields = [str(1 + sum(1 for _, other in ranked if other < score)), name, shown]  #=t3&low
        fields = [str(position + 1), name, shown]  #+t3bug
        print(" ".join(fields))  #+spaced
        print(",".join(fields))  #+commas
"""


def emulate(entries: list[tuple[str, int]], k: int, features: set[str]) -> list[str]:
    """The stdout lines a solution with `features` prints for the games `entries`."""
    games: dict[str, list[int]] = {}
    for raw, points in entries:
        name = raw.lower() if "t2" in features else raw
        if "bug" in features:
            games[name] = [points]
        else:
            games.setdefault(name, []).append(points)
    scores = {name: _score(points, features) for name, points in games.items()}
    sign = 1 if "low" in features else -1
    if "t1" in features:
        ranked = sorted(scores.items(), key=lambda item: (sign * item[1], item[0]))
    else:
        ranked = sorted(scores.items(), key=lambda item: sign * item[1])
    lines = []
    for position, (name, score) in enumerate(ranked[:k]):
        fields = [name, f"{score:.1f}" if "avg" in features else str(score)]
        if "t3" in features:
            better = sum(1 for _, other in ranked if sign * other < sign * score)
            fields.insert(0, str(1 + better))
        elif "t3bug" in features:
            fields.insert(0, str(position + 1))
        lines.append(("," if "commas" in features else " ").join(fields))
    return lines


def _score(points: list[int], features: set[str]) -> float:
    if "best" in features:
        return max(points)
    if "avg" in features:
        return sum(points) / len(points)
    return sum(points)


def _case_variant(rng: random.Random, name: str) -> str:
    return rng.choice([name.capitalize(), name.upper(), name, name.capitalize()])


def _players(
    rng: random.Random, count: int, k: int, level: int, tags: set[str]
) -> dict[str, list[int]] | None:
    """Games of `count` players: distinct scores, except the ties the level needs.

    Level 1 on: the scores ranked 2 and 3 are tied; level 2 on: also those
    ranked k and k + 1. Returns None when the draw shows two different averages
    alike at one decimal (the caller draws again).
    """
    players = {
        name: [rng.randint(1, 60) for _ in range(rng.randint(2, 4))]
        for name in rng.sample(WORDS, count)
    }
    sign = 1 if "low" in tags else -1
    order = sorted(players, key=lambda n: sign * _score(players[n], tags))
    copies = [(1, 2)] if level >= 1 else []
    copies += [(k - 1, k)] if level >= 2 else []
    for source, target in copies:
        players[order[target]] = rng.sample(players[order[source]], len(players[order[source]]))
    shown = {f"{_score(p, tags):.1f}" for p in players.values()}
    exact = {_score(p, tags) for p in players.values()}
    if len(shown) != len(exact) or len(exact) != count - len(copies):
        return None
    if any(len(set(p)) == 1 for p in players.values()):
        return None
    return players


def build(level: int, rng: random.Random) -> Parts:
    """The program tiers of `algo.top_k` (`TemplateBase.build`).

    Raises:
        RenderError: if no drawn data separates the near-miss from the reference.
    """
    tags = variant(rng, WHAT, DIR, SHAPE, OUT)
    count, k = (6, 10, 14, 18)[level], (3, 4, 5, 5)[level]
    ref = tags | twists(level)
    wrong = tags | ({"t1", "t2", "t3bug"} if level == 3 else near_miss(level))
    for _attempt in range(300):
        players = _players(rng, count, k, level, tags)
        if players is None:
            continue
        entries: list[tuple[str, int]] = []
        for name, points in players.items():
            for i, value in enumerate(points):
                shown = name
                if level >= 2:  # never only in lowercase
                    shown = name.capitalize() if i == 0 else _case_variant(rng, name)
                entries.append((shown, value))
        rng.shuffle(entries)
        if differs(partial(emulate, entries, k, ref), partial(emulate, entries, k, wrong)):
            break
    else:
        raise RenderError(f"algo.top_k: no separating data at level {level}")
    return Parts(
        prompt=_prompt(tags, k, level),
        setup_script=files_setup({"scores.csv": _csv(rng, entries, tags)}),
        validation_script=stdout_validator(emulate(entries, k, ref)),
        reference_solution=select(_SOLUTION.format(k=k), ref),
        wrong_solution=select(_SOLUTION.format(k=k), wrong),
    )


def _csv(rng: random.Random, entries: list[tuple[str, int]], tags: set[str]) -> str:
    if "plain" in tags:
        return "".join(f"{name},{points}\n" for name, points in entries)
    days = sorted(rng.choices(range(1, 29), k=len(entries)))
    rows = [f"2024-03-{d:02d},{n},{p}\n" for d, (n, p) in zip(days, entries, strict=True)]
    return "date,player,points\n" + "".join(rows)


_SCORE = {
    "sum": "A player's score is their total: the sum of the points of all their games.",
    "best": "A player's score is their best game: the most points they scored in one game.",
    "avg": "A player's score is their average: their total points divided by the number of "
    "games they played.",
}


def _prompt(tags: set[str], k: int, level: int) -> str:
    high = "high" in tags
    sep = "," if "commas" in tags else " "
    (what,) = tags & set(WHAT)
    example = {"sum": "140", "best": "57", "avg": "23.5"}[what]
    task = f"Find the {k} players with the {'highest' if high else 'lowest'} scores. {_SCORE[what]}"
    if "avg" in tags:
        task += " Rank by the exact average; round it only when printing."
    inputs = (
        "`scores.csv`, one line per game as `NAME,POINTS` (no header; POINTS is a non-negative "
        "integer; a name appears on several lines)."
        if "plain" in tags
        else "`scores.csv`, a CSV file with the header line `date,player,points`, then one line "
        "per game such as `2024-03-07,maple,41` (points are non-negative integers; a player "
        "appears on several lines)."
    )
    shown = "with one decimal" if "avg" in tags else "as an integer"
    output = (
        f"print those {k} players to standard output, "
        f"{'highest' if high else 'lowest'} score first, one per line as `NAME{sep}SCORE` "
        f"(for example `maple{sep}{example}`), the score {shown}."
    )
    word = "higher" if high else "lower"
    rules = [
        "Players with equal scores are ordered by name, alphabetically.",
        "Names are case-insensitive: `Maple`, `maple` and `MAPLE` are the same player. "
        "Print names in lowercase.",
        f"Print a rank first on each line: `RANK{sep}NAME{sep}SCORE`. Rank 1 is the "
        f"{'highest' if high else 'lowest'} score; players with equal scores share a rank and "
        f"the next rank is skipped (ranks like 1, 2, 2, 4): a player's rank is 1 + the number "
        f"of players with a {word} score.",
    ]
    return prompt(task, inputs, output, rules, level)
