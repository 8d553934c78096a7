"""The process reward model against its request-only baseline, and its scoring cost.

Targets (issue 11): held-out prefix AUC of at least 0.75 on nightschool's own
trajectories; scoring at most 10 µs per step. Trains with the real code
(`nightschool.learn.train_prm`: grouped 5-fold cross-validation, a
challenge's renders kept in one fold) on the trajectories of one or more
stores (deduplicated by id; eval items never used) and prints, side by side:

- held-out prefix AUC (every state) and open-state AUC (failed states that a
  later attempt followed: will it recover?) of the PRM and of the same
  learner on request features only (what the prior PRM amounted to);
- the lower end of the one-sided 95% bootstrap interval of the open-state
  gain (the checkpoint's save rule);
- scoring time per state (one at a time and batched) and feature time;
- the largest weights.

Usage: `python bench/bench_prm.py [--db PATH ...] [--glob PATTERN]`; with
neither, the database of `NIGHTSCHOOL_HOME` (or the platform default).
"""

from __future__ import annotations

import argparse
from collections import Counter
from pathlib import Path

from _stores import load_trajectories, store_paths
from nightschool.config import Settings
from nightschool.learn import PrmConfig, train_prm

PREFIX_AUC_TARGET = 0.75
SCORE_US_TARGET = 10.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", type=Path, action="append", default=[], help="a nightschool.db")
    parser.add_argument("--glob", help="add every database matching this pattern")
    parser.add_argument("--folds", type=int, default=5)
    args = parser.parse_args()
    paths = store_paths(args.glob, args.db) or [Settings().database_path()]
    trajectories = load_trajectories(paths)
    kinds = Counter(t.task_kind for t in trajectories)
    models = Counter(t.model for t in trajectories if t.task_kind != "eval")
    print(f"{len(paths)} database(s), {len(trajectories)} trajectories: {dict(kinds)}")
    print(f"models (non-eval): {dict(models.most_common())}")
    params, report = train_prm(trajectories, PrmConfig(folds=args.folds))
    print(
        f"labelled: {report.trajectories} trajectories ({report.by_kind}; {report.passed} passed, "
        f"{report.failed} failed), {report.states} states; open states {report.open_states} "
        f"({report.open_positive} recovered); {report.folds}-fold grouped CV"
    )
    print()
    print(f"{'held-out AUC':<34}{'PRM':>8}{'request-only':>14}{'ratio':>8}")
    for label, prm, base in (
        ("every prefix", report.auc_prefix, report.baseline_auc_prefix),
        ("open states (will it recover?)", report.auc_open, report.baseline_auc_open),
    ):
        ratio = f"{prm / base:.2f}" if prm and base else "n/a"
        print(f"{label:<34}{prm!s:>8}{base!s:>14}{ratio:>8}")
    print(f"open-state gain, 95% lower bound: {report.open_gain_low} (save rule: > 0)")
    print()
    print(
        f"scoring: {report.score_us_single:.2f} µs/state one at a time, "
        f"{report.score_us_batch:.3f} µs/state batched (target ≤ {SCORE_US_TARGET:g}); "
        f"features {report.features_us:.1f} µs/state"
    )
    prefix_ok = report.auc_prefix is not None and report.auc_prefix >= PREFIX_AUC_TARGET
    print(
        f"prefix AUC target ≥ {PREFIX_AUC_TARGET}: {'met' if prefix_ok else 'NOT met'}; "
        f"scoring target: {'met' if report.score_us_single <= SCORE_US_TARGET else 'NOT met'}; "
        f"beats the baseline on open states: {report.beats_baseline()}"
    )
    top = sorted(report.weights.items(), key=lambda kv: -abs(kv[1]))[:10]
    print("largest weights (per raw feature unit): " + ", ".join(f"{k} {v:+.2f}" for k, v in top))
    del params


if __name__ == "__main__":
    main()
