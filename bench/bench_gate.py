"""Promotion-gate calibration, power and sequential savings, measured on the real gates.

Usage:
    .venv/bin/python bench/bench_gate.py [--reps 1000] [--quick] [--seed 0]

Every decision comes from `nightschool.strategies.promotion_gate` or
`nightschool.strategies.SequentialGate` themselves (default `GateConfig`,
one-sided alpha = 0.05, floor 6), called once per simulated comparison.

Nulls (mean paired delta d = candidate - incumbent exactly 0, scores in [0, 1]):
  binary       difficulty p ~ U(0.2, 0.8); incumbent, candidate ~ Bernoulli(p).
  continuous   base ~ U(0.2, 0.6); score = clip(base + N(0, 0.15), 0, 1), both sides.
  skewed+      d = +0.02 w.p. 0.98, -0.98 w.p. 0.02 (the "Trust" issue's null: a hair
               better almost always, catastrophically worse now and then).
  skewed-      d = -0.02 w.p. 0.98, +0.98 w.p. 0.02 (its mirror).
  pareto-loss  d = mu - Y, Y = min(1, 0.01 X), X ~ Pareto(1.2) (x_m = 1); mu = E[Y]
               exactly: a power-law tail of losses, clipped at 1.
  beta-loss    incumbent ~ Beta(0.2, 0.8) (mean 0.2, mass near 0, rare near 1),
               candidate = 0.2: usually about +0.2, now and then -0.8.
  (skewed and heavy shapes play incumbent = 0.5 - d/2, candidate = 0.5 + d/2.)
Alternatives: binary (candidate Bernoulli(p + lift)), continuous (candidate base + lift).

Targets (the "Trust" issue): false promotion <= alpha + 2 Monte-Carlo se at every n
and null; power >= 85% binary lift 0.20 at n = 200, >= 70% continuous lift 0.10 at
n = 100; sequential gate (max_pairs = N) >= 30% fewer expected pairs than the fixed-n
gate at equal power (the fixed gate sized for 80% on a grid) for lifts 0.10 and 0.20.
"""

from __future__ import annotations

import argparse
import itertools
import math
import time
from collections.abc import Callable

import numpy as np

from nightschool.gate import GateConfig, PairedResult, SequentialGate, promotion_gate

ALPHA = 0.05
NS = (6, 10, 20, 40, 100, 200)
NULLS = ("binary", "continuous", "skewed+", "skewed-", "pareto-loss", "beta-loss")
Draw = Callable[[int, np.random.Generator], tuple[np.ndarray, np.ndarray]]


def _pareto_mean(a: float = 1.2, c: float = 0.01) -> float:
    """E[min(1, c X)] for X ~ Pareto(a), x_m = 1."""
    k = 1 / c
    return c * a / (a - 1) * (1 - k ** (1 - a)) + k**-a


PARETO_MU = _pareto_mean()


def _around_half(d: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return 0.5 - d / 2, 0.5 + d / 2


def sampler(kind: str, lift: float = 0.0) -> Draw:
    """(incumbent, candidate) scores of n tasks for one comparison."""

    def binary(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        p = rng.uniform(0.2, 0.8, n)
        inc = (rng.random(n) < p).astype(float)
        return inc, (rng.random(n) < p + lift).astype(float)

    def continuous(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        base = rng.uniform(0.2, 0.6, n)
        inc = np.clip(base + rng.normal(0, 0.15, n), 0, 1)
        return inc, np.clip(base + lift + rng.normal(0, 0.15, n), 0, 1)

    def skewed(sign: float) -> Draw:
        def draw(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
            return _around_half(sign * np.where(rng.random(n) < 0.98, 0.02, -0.98))

        return draw

    def pareto(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        y = np.minimum(1.0, 0.01 * (rng.pareto(1.2, n) + 1.0))
        return _around_half(PARETO_MU - y)

    def beta(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        return rng.beta(0.2, 0.8, n), np.full(n, 0.2)

    table: dict[str, Draw] = {
        "binary": binary,
        "continuous": continuous,
        "skewed+": skewed(1.0),
        "skewed-": skewed(-1.0),
        "pareto-loss": pareto,
        "beta-loss": beta,
    }
    return table[kind]


def _pairs(inc: np.ndarray, cand: np.ndarray) -> list[PairedResult]:
    return [
        PairedResult(f"t{i}", float(a), float(b))
        for i, (a, b) in enumerate(zip(inc, cand, strict=True))
    ]


def promotion_rate(draw: Draw, n: int, reps: int, rng: np.random.Generator) -> float:
    """Share of `reps` fixed-n comparisons that `promotion_gate` promotes."""
    return sum(promotion_gate(_pairs(*draw(n, rng))).promote for _ in range(reps)) / reps


def sequential_run(
    draw: Draw, max_pairs: int, reps: int, rng: np.random.Generator
) -> tuple[float, float]:
    """(promotion rate, mean pairs used) of `SequentialGate` with `max_pairs`."""
    config = GateConfig(max_pairs=max_pairs)
    promoted = 0
    used = 0
    for _ in range(reps):
        gate = SequentialGate(config)
        for pair in _pairs(*draw(max_pairs, rng)):
            if gate.update(pair) is not None:
                break
        verdict = gate.conclude()
        promoted += verdict.promote
        used += verdict.n
    return promoted / reps, used / reps


def calibration(ns: tuple[int, ...], reps: int, rng: np.random.Generator) -> None:
    se = math.sqrt(ALPHA * (1 - ALPHA) / reps)
    limit = ALPHA + 2 * se
    print(f"\n== False promotion under mean-0 nulls, {reps} comparisons per cell")
    print(f"target: <= alpha + 2 se = {100 * limit:.2f}%  ('!' marks a cell above it)")
    print(f"{'null':<12}" + "".join(f"{'n=' + str(n):>9}" for n in ns) + "   max  met")
    for kind in NULLS:
        rates = [promotion_rate(sampler(kind), n, reps, rng) for n in ns]
        cells = "".join(f"{100 * r:8.1f}%" + ("!" if r > limit else " ") for r in rates)
        worst = max(rates)
        print(f"{kind:<12}{cells}{100 * worst:5.1f}%  {'yes' if worst <= limit else 'NO'}")


def power(ns: tuple[int, ...], reps: int, rng: np.random.Generator) -> None:
    print(f"\n== Power (promotion rate under a true lift), {reps} comparisons per cell")
    print(f"{'alternative':<18}" + "".join(f"{'n=' + str(n):>8}" for n in ns) + "   target")
    for kind, lift, at, goal in (("binary", 0.20, 200, 0.85), ("continuous", 0.10, 100, 0.70)):
        rates = {n: promotion_rate(sampler(kind, lift), n, reps, rng) for n in ns}
        cells = "".join(f"{100 * rates[n]:7.1f}%" for n in ns)
        got = rates.get(at)
        verdict = "n/a" if got is None else ("met" if got >= goal else "NOT met")
        print(f"{kind + f' +{lift:.2f}':<18}{cells}   >= {100 * goal:.0f}% at n={at}: {verdict}")


def _at_80(points: list[tuple[float, float, float]]) -> tuple[float, float] | None:
    """Linear interpolation of (size, pairs) at power 0.8 in (size, power, pairs) points."""
    for (n0, p0, e0), (n1, p1, e1) in itertools.pairwise(points):
        if p0 < 0.8 <= p1:
            w = (0.8 - p0) / (p1 - p0)
            return n0 + w * (n1 - n0), e0 + w * (e1 - e0)
    return None


def sequential(reps: int, rng: np.random.Generator, quick: bool) -> None:
    grid = (6, 10, 15, 20, 25, 30, 35, 40, 50, 60, 70, 80, 90, 100, 120, 140, 160, 180, 200)
    grid += (240, 280, 320, 360, 400, 500)
    factors = (0.8, 1.0, 1.2, 1.4, 1.7, 2.0, 2.5, 3.0) if not quick else (0.8, 1.2, 1.7, 2.5)
    print(
        f"\n== Sequential gate (max_pairs = N) vs fixed-n gate at equal power 80%, {reps} "
        "comparisons/streams per cell"
    )
    print(
        "n_fixed: fixed-n gate's n at 80% power, interpolated on a grid; N and E[pairs]: "
        "sequential max_pairs and mean pairs used at 80% power, interpolated over "
        f"N = n_fixed x {factors}"
    )
    print(
        f"{'alternative':<17}{'n_fixed':>8}{'N':>7}{'E[pairs]':>10}{'ratio':>7}"
        "   target ratio <= 0.70"
    )
    for kind in ("binary", "continuous"):
        for lift in (0.10, 0.20):
            draw = sampler(kind, lift)
            fixed: list[tuple[float, float, float]] = [(0.0, 0.0, 0.0)]
            for n in grid:
                fixed.append((n, promotion_rate(draw, n, reps, rng), n))
                if fixed[-1][1] >= 0.8:
                    break
            label = f"{kind} +{lift:.2f}"
            at = _at_80(fixed)
            if at is None:
                print(f"{label:<17} fixed-n power < 80% on the whole grid")
                continue
            n_fixed = at[0]
            seq: list[tuple[float, float, float]] = [(0.0, 0.0, 0.0)]
            for factor in factors:
                big_n = max(2, round(factor * n_fixed))
                seq.append((big_n, *sequential_run(draw, big_n, reps, rng)))
                if seq[-1][1] >= 0.8:
                    break
            found = _at_80(seq)
            if found is None:
                print(f"{label:<17}{n_fixed:>8.1f}   sequential power < 80% on every N   NOT met")
                continue
            big_n_80, pairs = found
            ratio = pairs / n_fixed
            print(
                f"{label:<17}{n_fixed:>8.1f}{big_n_80:>7.1f}{pairs:>10.1f}{ratio:>7.2f}   "
                f"{'met' if ratio <= 0.70 else 'NOT met'}"
            )
    for kind in ("skewed+", "continuous", "binary"):
        rate, pairs = sequential_run(sampler(kind), 200, reps, rng)
        print(
            f"null {kind:<12} N=200: false promotion {100 * rate:.1f}% "
            f"(target <= {100 * (ALPHA + 2 * math.sqrt(ALPHA * (1 - ALPHA) / reps)):.2f}%), "
            f"E[pairs] {pairs:.1f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--reps", type=int, default=1000, help="comparisons per cell")
    parser.add_argument(
        "--quick", action="store_true", help="n in (10, 40, 200), fewer sequential N"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--skip-sequential", action="store_true")
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    ns = (10, 40, 200) if args.quick else NS
    t0 = time.perf_counter()
    calibration(ns, args.reps, rng)
    power(ns if not args.quick else (40, 100, 200), args.reps, rng)
    if not args.skip_sequential:
        sequential(args.reps, rng, args.quick)
    print(f"\n({time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
