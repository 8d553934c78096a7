"""Where each cluster picker sends practice: frontier weighting vs the brittle picker.

Issue 11 part 4. The deciding ablation is learning speed (held-out lift per
hour of dreaming): two learning curves from the same start, one per picker,

    NIGHTSCHOOL_HOME=/tmp/a nightschool eval learning-curve --frontier brittle ...
    NIGHTSCHOOL_HOME=/tmp/b nightschool eval learning-curve --frontier prm ...

(copy a trained `learners/prm.json` into /tmp/b first). This bench is the
cheap, model-free part: on a real store and a PRM trained in-process on the
given stores (`learners.train_prm`, used whether or not it passed its save
rule - the output says which), it draws `--picks` cluster picks with
`FrontierTracker.pick_seed` and with `PrmFrontierTracker.pick_seed` (the real
code, 20% floor included) and prints, side by side, how often each cluster is
picked, each cluster's PRM uncertainty, rarity and weight, and the entropy of
the two pick distributions (bits; uniform over 7 clusters is 2.81).

Usage: `python bench/bench_frontier.py --db HOME/nightschool.db --train-glob '/tmp/*/nightschool.db'`.
"""

from __future__ import annotations

import argparse
import math
import random
from collections import Counter
from pathlib import Path

from _stores import load_trajectories, store_paths
from nightschool.dream.frontier import FrontierTracker
from nightschool.learn import LivePrm, PrmConfig, train_prm
from nightschool.learn.frontier import PrmFrontierTracker, cluster_weights
from nightschool.store import Store


def entropy(counts: Counter[str]) -> float:
    total = sum(counts.values())
    return -sum(n / total * math.log2(n / total) for n in counts.values() if n)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", type=Path, required=True, help="the store practice reads")
    parser.add_argument("--train-glob", required=True, help="stores the PRM is trained on")
    parser.add_argument("--picks", type=int, default=2000)
    args = parser.parse_args()
    params, report = train_prm(load_trajectories(store_paths(args.train_glob)), PrmConfig())
    print(
        f"PRM on {report.trajectories} trajectories; open-state AUC {report.auc_open} vs "
        f"request-only {report.baseline_auc_open}; passes its save rule: {report.beats_baseline()}"
    )
    with Store.open(args.db) as store:
        legacy = FrontierTracker(store)
        live = LivePrm(Path("/nonexistent/prm.json"), params)
        frontier = PrmFrontierTracker(store, live)
        weights = cluster_weights(store, params, legacy)
        rng_a, rng_b = random.Random(0), random.Random(0)
        brittle = Counter(legacy.pick_seed(rng_a).cluster for _ in range(args.picks))
        picks = [frontier.pick_seed(rng_b) for _ in range(args.picks)]
    weighted = Counter(p.cluster for p in picks)
    engaged = sum(p.mode == "frontier" for p in picks) / args.picks
    print(f"\n{'cluster':<16}{'uncertainty':>12}{'rarity':>8}{'weight':>8}{'brittle':>9}{'prm':>7}")
    for cluster, (weight, uncertainty, rarity) in weights.items():
        print(
            f"{cluster:<16}{uncertainty:>12.3f}{rarity:>8.3f}{weight:>8.3f}"
            f"{brittle[cluster] / args.picks:>9.1%}{weighted[cluster] / args.picks:>7.1%}"
        )
    print(
        f"\nentropy (bits): brittle {entropy(brittle):.2f}, prm {entropy(weighted):.2f}; "
        f"frontier-weighted picks {engaged:.0%} (the rest: 20% floor or fallback)"
    )


if __name__ == "__main__":
    main()
