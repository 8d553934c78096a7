"""The budget router against always-the-full-budget, on held-out replays.

Issue 11 part 3: judged with the non-inferiority-and-cheaper gate, at least
30% fewer model tokens at no significant loss of pass rate. Trains with the
real code (`nightschool.learn.train_router`: grouped cross-validation, a
challenge's renders in one fold) on the trajectories of one or more stores
and replays every held-out full-budget self-play episode cut to the routed
budget (the solver's attempt k depends only on its seed and the attempts
before it, so a cut episode is what the smaller budget would have done).
Prints, per threshold pair, the decisions, both arms' pass rates and tokens,
the saving and the gate's verdict, side by side.

Usage: `python bench/bench_router.py --glob '/tmp/*/nightschool.db'`.
"""

from __future__ import annotations

import argparse

from _stores import load_trajectories, store_paths
from nightschool.learn import RouterConfig, train_router

THRESHOLDS = ((0.8, 0.05), (0.9, 0.02), (0.7, 0.15), (0.99, 0.3))
"""(direct_at, stop_at) pairs: the default first, then a cautious and two bolder ones."""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--glob", required=True, help="stores to learn from and replay")
    parser.add_argument("--min-trajectories", type=int, default=30)
    args = parser.parse_args()
    trajectories = load_trajectories(store_paths(args.glob))
    print(f"{len(trajectories)} trajectories")
    header = (
        f"{'direct_at':>9}{'stop_at':>8}  {'direct/retry/stop':<18}{'pass full':>10}"
        f"{'pass routed':>12}{'tokens full':>12}{'routed':>8}{'saved':>7}  gate"
    )
    print(header)
    for direct_at, stop_at in THRESHOLDS:
        cfg = RouterConfig(
            direct_at=direct_at, stop_at=stop_at, min_trajectories=args.min_trajectories
        )
        _, r = train_router(trajectories, cfg)
        d = r.decisions
        split = f"{d['direct']}/{d['retry']}/{d['stop']}"
        verdict = "PROMOTE" if r.promote else "keep full budget"
        print(
            f"{direct_at:>9}{stop_at:>8}  {split:<18}{r.pass_full:>10.3f}{r.pass_routed:>12.3f}"
            f"{r.tokens_full:>12.0f}{r.tokens_routed:>8.0f}{r.savings:>7.1%}  {verdict}"
        )
        print(f"{'':>19}{r.verdict}")
    print(
        f"episodes replayed: {r.episodes}; p_first also learned from {r.first_only} single attempts"
    )


if __name__ == "__main__":
    main()
