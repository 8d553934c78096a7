"""Train the process reward model (PRM) on the agent's own trajectories.

The PRM estimates, for the state after a step, the discounted chance that
the episode ends in a pass (`learners.steps`: per-step features, labels
`V_i = 0.9 ** (N - i - 1) * terminal`). It is a logistic regression
(scikit-learn) on standardised features, fitted to the soft labels by
duplicating each state as a positive with weight `V_i` and a negative with
weight `1 - V_i`; the scaler is folded into the weights so a checkpoint is
one weight vector and a bias.

The report is measured on held-out trajectories only: grouped K-fold
cross-validation (a challenge's renders stay in one fold), so every score in
it comes from a model that never saw that trajectory. Two AUCs, both against
"the trajectory eventually passed":

- prefix AUC over every state (a state whose own step passed is decided, so
  this one is easy once the model reads the verdict);
- open-state AUC over states whose step did not pass and after which the
  episode went on (will a later attempt recover?) - the one search needs,
  and the one the checkpoint is gated on. A failed episode's last failure
  is left out: nothing followed it, so "stays failed" there says only that
  the attempt budget ran out.

Each is reported beside the cheap baseline the prior system amounted to: the
same learner on the request features alone (PRIOR-ART.md: a PRM that saw one
state per turn reached prefix AUC 0.59-0.66). A checkpoint is written only
when the PRM's open-state AUC beats that baseline's with 95% confidence: the
lower end of a one-sided 95% paired bootstrap interval of the AUC gain
(2,000 resamples of whole challenges, Efron & Tibshirani 1993) is above zero
(`force` overrides).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, Field
from scipy.stats import rankdata

from nightschool.errors import UserError
from nightschool.learn._checkpoint import (
    CheckpointError,
    PrmParams,
    load_checkpoint,
    prm_path,
    save_checkpoint,
)
from nightschool.learn.steps import (
    FEATURE_NAMES,
    GAMMA,
    REQUEST_FEATURES,
    TRAINING_KINDS,
    LabelledStates,
    label_states,
    step_states,
)
from nightschool.store import Store
from nightschool.trajectory import Trajectory

__all__ = ["NotEnoughDataError", "PrmConfig", "PrmReport", "learn_prm", "train_prm"]


class NotEnoughDataError(UserError):
    """Too few labelled trajectories, or only one outcome, to train or measure a PRM.

    A `UserError` (exit code 2), not a `CheckpointError`: nothing is wrong with a
    checkpoint; every `except CheckpointError` guards a checkpoint load only.
    """


class PrmConfig(BaseModel):
    """Settings of PRM training."""

    gamma: float = Field(default=GAMMA, gt=0, le=1, description="Label discount (PRIOR-ART).")
    folds: int = Field(default=5, ge=2, le=20, description="Grouped cross-validation folds.")
    min_trajectories: int = Field(
        default=20, ge=2, description="Fewest labelled trajectories to train on."
    )
    c: float = Field(
        default=1.0, gt=0, description="Inverse L2 regularisation of the logistic regression."
    )
    kinds: tuple[str, ...] = Field(
        default=TRAINING_KINDS, description="Task kinds learned from (never `eval`)."
    )
    timing_rows: int = Field(
        default=2000, ge=1, description="States scored one by one to time single scoring."
    )


@dataclass(frozen=True)
class PrmReport:
    """What one training run measured and did.

    Attributes:
        trajectories: labelled trajectories trained on (passed + failed).
        passed, failed: of those, by outcome.
        by_kind: labelled trajectories per task kind.
        skipped_unknown: trajectories left out for outcome `unknown`.
        skipped_empty: trajectories left out for having no step.
        states: labelled states (steps).
        open_states: states whose step did not pass and that a later step
            followed; `open_positive` of them belong to trajectories that
            later passed.
        folds: cross-validation folds used.
        auc_prefix, auc_open: held-out AUCs of the PRM (None: one class only).
        baseline_auc_prefix, baseline_auc_open: the same for the request-only
            baseline.
        open_gain_low: lower end of the one-sided 95% bootstrap interval of
            `auc_open - baseline_auc_open` (None: not measurable).
        score_us_batch: microseconds per state, scoring all states in one call.
        score_us_single: microseconds per state, one `score` call per state.
        features_us: microseconds per state to compute features from a trajectory.
        saved: whether a checkpoint was written.
        reason: why it was or was not.
        version: the checkpoint's training counter (0 when not saved).
        path: where the checkpoint is (or would be).
    """

    trajectories: int
    passed: int
    failed: int
    by_kind: dict[str, int]
    skipped_unknown: int
    skipped_empty: int
    states: int
    open_states: int
    open_positive: int
    folds: int
    auc_prefix: float | None
    auc_open: float | None
    baseline_auc_prefix: float | None
    baseline_auc_open: float | None
    open_gain_low: float | None
    score_us_batch: float
    score_us_single: float
    features_us: float
    saved: bool = False
    reason: str = ""
    version: int = 0
    path: str = ""
    weights: dict[str, float] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The report as a JSON-safe dict (the checkpoint's `report`)."""
        return asdict(self)

    def beats_baseline(self) -> bool:
        """The PRM's held-out open-state AUC beats the baseline's with 95% confidence."""
        return self.open_gain_low is not None and self.open_gain_low > 0


def _fit(x: np.ndarray, values: np.ndarray, c: float) -> tuple[np.ndarray, float, np.ndarray]:
    """Weights, bias and means of a soft-label logistic regression on raw features."""
    # function-local: start-up time (sklearn, ~1.2 s; every sklearn import here)
    from sklearn.linear_model import LogisticRegression
    from sklearn.preprocessing import StandardScaler

    means = x.mean(axis=0)
    n = len(values)
    rows = np.vstack([x, x])
    labels = np.concatenate([np.ones(n), np.zeros(n)])
    weights = np.concatenate([values, 1.0 - values])
    keep = weights > 0
    if len(set(labels[keep].tolist())) < 2:
        # One outcome only: a constant model at the (clipped) mean value.
        prior = float(np.clip(values.mean(), 1e-3, 1 - 1e-3))
        return np.zeros(x.shape[1]), float(np.log(prior / (1 - prior))), means
    scaler = StandardScaler().fit(x)
    model = LogisticRegression(C=c, max_iter=5000)
    model.fit(scaler.transform(rows[keep]), labels[keep], sample_weight=weights[keep])
    coef = model.coef_[0] / scaler.scale_
    bias = float(model.intercept_[0] - np.sum(coef * scaler.mean_))
    return coef, bias, means


def _auc(labels: np.ndarray, scores: np.ndarray) -> float | None:
    from sklearn.metrics import roc_auc_score  # function-local: start-up time (sklearn)

    if len(set(labels.tolist())) < 2:
        return None
    return round(float(roc_auc_score(labels, scores)), 4)


def _rank_auc(labels: np.ndarray, scores: np.ndarray) -> float:
    """Mann-Whitney AUC with ties counted half (both classes must be present)."""
    ranks = rankdata(scores)
    positives = labels > 0
    n_pos = int(positives.sum())
    n_neg = len(labels) - n_pos
    return float((ranks[positives].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


BOOTSTRAP_RESAMPLES = 2000
"""Resamples of the paired bootstrap behind the save decision."""


def _gain_lower_bound(
    labels: np.ndarray, prm: np.ndarray, base: np.ndarray, groups: Sequence[str], seed: int = 0
) -> float | None:
    """5th percentile of the paired bootstrap of AUC(prm) - AUC(base), resampling groups."""
    if len(set(labels.tolist())) < 2:
        return None
    names = sorted(set(groups))
    index = {name: i for i, name in enumerate(names)}
    members: list[list[int]] = [[] for _ in names]
    for row, group in enumerate(groups):
        members[index[group]].append(row)
    rng = np.random.default_rng(seed)
    gains = []
    for _ in range(BOOTSTRAP_RESAMPLES):
        picked = rng.integers(0, len(names), len(names))
        rows = np.fromiter((r for g in picked for r in members[g]), dtype=np.int64)
        sample = labels[rows]
        if 0 < sample.sum() < len(sample):
            gains.append(_rank_auc(sample, prm[rows]) - _rank_auc(sample, base[rows]))
    if len(gains) < BOOTSTRAP_RESAMPLES // 2:
        return None
    return round(float(np.percentile(gains, 5)), 4)


def _out_of_fold(
    x: np.ndarray, values: np.ndarray, groups: Sequence[str], folds: int, c: float
) -> np.ndarray:
    """Held-out scores: each state scored by a model fitted without its group."""
    from sklearn.model_selection import GroupKFold  # function-local: start-up time (sklearn)

    scores = np.zeros(len(values))
    splitter = GroupKFold(n_splits=folds)
    for train, test in splitter.split(x, values, groups):
        w, b, means = _fit(x[train], values[train], c)
        scores[test] = PrmParams(w, b, means).score_batch(x[test])
    return scores


def _timings(
    params: PrmParams, x: np.ndarray, trajectories: Sequence[Trajectory], single_rows: int
) -> tuple[float, float, float]:
    """Microseconds per state: batch scoring, single scoring, feature computation."""
    repeats = max(1, 20000 // max(1, len(x)))
    start = time.perf_counter()
    for _ in range(repeats):
        params.score_batch(x)
    batch = (time.perf_counter() - start) / (repeats * len(x)) * 1e6
    rows = [tuple(row) for row in x[:single_rows].tolist()]
    start = time.perf_counter()
    for row in rows:
        params.score(row)
    single = (time.perf_counter() - start) / max(1, len(rows)) * 1e6
    start = time.perf_counter()
    n_states = sum(len(step_states(t)) for t in trajectories)
    features = (time.perf_counter() - start) / max(1, n_states) * 1e6
    return round(batch, 3), round(single, 3), round(features, 2)


def train_prm(
    trajectories: Iterable[Trajectory], config: PrmConfig | None = None
) -> tuple[PrmParams, PrmReport]:
    """Fit a PRM on `trajectories` and measure it on held-out folds.

    Args:
        trajectories: trajectories with corrections applied; `unknown`
            outcomes and ones without tool calls are skipped (counted).
        config: training settings.

    Returns:
        The parameters fitted on all labelled states (version 0, unsaved),
        and the report of the grouped cross-validation.

    Raises:
        NotEnoughDataError: fewer than `min_trajectories` labelled
            trajectories, only one outcome among them, or fewer groups than 2.
    """
    cfg = config or PrmConfig()
    items = [t for t in trajectories if t.task_kind in cfg.kinds]
    data: LabelledStates = label_states(items, cfg.gamma)
    ids = list(dict.fromkeys(s.trajectory_id for s in data.states))
    outcome_of = {s.trajectory_id: e for s, e in zip(data.states, data.eventual, strict=True)}
    passed = sum(1 for i in ids if outcome_of[i] > 0)
    failed = len(ids) - passed
    if len(ids) < cfg.min_trajectories or passed == 0 or failed == 0:
        raise NotEnoughDataError(
            f"a PRM needs at least {cfg.min_trajectories} labelled trajectories with both "
            f"outcomes; this store has {passed} passed and {failed} failed",
            hint="let nightschool dream for a while, then train again",
        )
    groups = [s.group for s in data.states]
    n_groups = len(set(groups))
    if n_groups < 2:
        raise NotEnoughDataError(
            "all labelled trajectories share one challenge; nothing to hold out"
        )
    folds = min(cfg.folds, n_groups)
    x = np.asarray([s.features for s in data.states], dtype=np.float64)
    values = np.asarray(data.values)
    eventual = np.asarray(data.eventual)
    open_mask = np.asarray([s.followed and not s.passed_here for s in data.states])
    request_cols = [FEATURE_NAMES.index(name) for name in REQUEST_FEATURES]
    held_out = _out_of_fold(x, values, groups, folds, cfg.c)
    baseline = _out_of_fold(x[:, request_cols], values, groups, folds, cfg.c)
    w, b, means = _fit(x, values, cfg.c)
    params = PrmParams(w, b, means, version=0, created=datetime.now(UTC).isoformat())
    used = [t for t in items if t.id in outcome_of]
    batch_us, single_us, features_us = _timings(params, x, used, cfg.timing_rows)
    kinds = Counter(t.task_kind for t in used)
    report = PrmReport(
        trajectories=len(ids),
        passed=passed,
        failed=failed,
        by_kind=dict(sorted(kinds.items())),
        skipped_unknown=data.skipped_unknown,
        skipped_empty=data.skipped_empty,
        states=len(data.states),
        open_states=int(open_mask.sum()),
        open_positive=int(eventual[open_mask].sum()),
        folds=folds,
        auc_prefix=_auc(eventual, held_out),
        auc_open=_auc(eventual[open_mask], held_out[open_mask]),
        baseline_auc_prefix=_auc(eventual, baseline),
        baseline_auc_open=_auc(eventual[open_mask], baseline[open_mask]),
        open_gain_low=_gain_lower_bound(
            eventual[open_mask],
            held_out[open_mask],
            baseline[open_mask],
            [g for g, keep in zip(groups, open_mask, strict=True) if keep],
        ),
        score_us_batch=batch_us,
        score_us_single=single_us,
        features_us=features_us,
        weights={name: round(float(v), 5) for name, v in zip(FEATURE_NAMES, w, strict=True)},
    )
    return params, report


def learn_prm(
    store: Store, home: Path, config: PrmConfig | None = None, *, force: bool = False
) -> PrmReport:
    """Train on the store's trajectories and write the checkpoint when it earns it.

    The same code serves `nightschool learn prm` and the idle `retrain` phase.

    Args:
        store: the database (corrections overlaid on read).
        home: the nightschool home; the checkpoint is `prm_path(home)`.
        config: training settings.
        force: write the checkpoint even when it does not beat the baseline.

    Returns:
        The report, with `saved`, `reason`, `version` and `path` filled in.

    Raises:
        NotEnoughDataError: see `train_prm`.
    """
    cfg = config or PrmConfig()
    trajectories = [t for kind in cfg.kinds for t in store.iter_trajectories(task_kind=kind)]
    params, report = train_prm(trajectories, cfg)
    path = prm_path(home)
    previous = 0
    if path.exists():
        try:
            previous = load_checkpoint(path).version
        except CheckpointError:
            previous = 0
    wins = report.beats_baseline()
    if not wins and not force:
        reason = (
            f"held-out open-state AUC {report.auc_open} does not beat the request-only "
            f"baseline's {report.baseline_auc_open} with 95% confidence "
            f"(gain lower bound {report.open_gain_low})"
        )
        return _with(report, saved=False, reason=reason, path=str(path))
    version = previous + 1
    reason = (
        f"beats the request-only baseline (gain lower bound {report.open_gain_low})"
        if wins
        else "saved with --force"
    )
    final = _with(report, saved=True, reason=reason, version=version, path=str(path))
    save_checkpoint(
        path,
        PrmParams(
            params.weights,
            params.bias,
            params.means,
            version=version,
            created=params.created,
            report=final.to_json(),
        ),
    )
    return final


def _with(report: PrmReport, **changes: Any) -> PrmReport:
    return replace(report, **changes)
