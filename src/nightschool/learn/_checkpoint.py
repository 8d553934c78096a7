"""The process reward model's checkpoint and its scorer.

A checkpoint is versioned JSON (PRIOR-ART.md): schema name, feature names,
weights, bias, the training means (a non-finite input is replaced by its
mean, so it adds nothing to the logit), a training counter and the training
report. It is written to a temporary file and renamed, so a reader never sees
half of one. Loading rejects another schema, other feature names, lengths
that disagree and non-finite numbers.

Scoring is a logistic model over standardised features folded into one weight
vector: `sigmoid(x . w + b)`. `LivePrm` holds the current parameters behind
one reference, so a retrain can swap them while other threads score: each
call reads the reference once and scores with one consistent model.
"""

from __future__ import annotations

import json
import math
import operator
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from nightschool.errors import UserError
from nightschool.learn.steps import FEATURE_NAMES
from nightschool.strategies.archive import write_json_atomic

__all__ = [
    "CHECKPOINT_SCHEMA",
    "CheckpointError",
    "LivePrm",
    "PrmParams",
    "load_checkpoint",
    "prm_path",
    "save_checkpoint",
]

CHECKPOINT_SCHEMA = "nightschool.prm/1"
"""Schema name every PRM checkpoint carries; another one is refused."""


class CheckpointError(UserError):
    """A PRM checkpoint that cannot be used (missing fields, mismatch, non-finite)."""


def prm_path(home: Path) -> Path:
    """Where the PRM checkpoint of a nightschool home lives (`<home>/learners/prm.json`)."""
    return home / "learners" / "prm.json"


@dataclass(frozen=True)
class PrmParams:
    """A trained PRM's parameters (immutable; shared between threads).

    Attributes:
        weights: one per feature, `FEATURE_NAMES` order (float64, shape (d,)).
        bias: the logit's intercept.
        means: training means per feature (non-finite inputs become these).
        version: training counter (1 for the first checkpoint of a home).
        created: ISO-8601 time of training.
        report: the training report (JSON-safe mapping).
    """

    weights: np.ndarray
    bias: float
    means: np.ndarray
    version: int = 1
    created: str = ""
    report: Mapping[str, Any] = field(default_factory=dict)

    def score_batch(self, rows: np.ndarray) -> np.ndarray:
        """Values in (0, 1) of an `(n, d)` feature matrix; NaN/inf entries neutralised.

        Raises:
            ValueError: `rows` does not have `d` columns.
        """
        x = np.asarray(rows, dtype=np.float64)
        if x.ndim != 2 or x.shape[1] != self.weights.shape[0]:
            raise ValueError(f"expected (n, {self.weights.shape[0]}) features, got {x.shape}")
        bad = ~np.isfinite(x)
        if bad.any():
            x = np.where(bad, self.means, x)
        logits = x @ self.weights + self.bias
        values: np.ndarray = 1.0 / (1.0 + np.exp(-np.clip(logits, -60.0, 60.0)))
        return values

    def __post_init__(self) -> None:
        # Plain-float copies: one state is scored faster in Python than through numpy.
        object.__setattr__(self, "_weight_list", [float(w) for w in self.weights])
        object.__setattr__(self, "_mean_list", [float(m) for m in self.means])

    def score(self, features: Sequence[float]) -> float:
        """Value in (0, 1) of one state's feature vector (`len(FEATURE_NAMES)` floats).

        About 3 us per call (bench/bench_prm.py); NaN/inf entries neutralised.

        Raises:
            ValueError: `features` has the wrong length.
        """
        weights: list[float] = self.__dict__["_weight_list"]
        if len(features) != len(weights):
            raise ValueError(f"expected {len(weights)} features, got {len(features)}")
        total = self.bias + sum(map(operator.mul, features, weights))
        if not math.isfinite(total):
            means: list[float] = self.__dict__["_mean_list"]
            total = self.bias + sum(
                w * (v if math.isfinite(v) else m)
                for v, w, m in zip(features, weights, means, strict=True)
            )
        return 1.0 / (1.0 + math.exp(-max(-60.0, min(60.0, total))))


def _finite_list(data: Mapping[str, Any], key: str, n: int, path: Path) -> np.ndarray:
    values = data.get(key)
    if not isinstance(values, list) or len(values) != n:
        got = len(values) if isinstance(values, list) else type(values).__name__
        raise CheckpointError(f"PRM checkpoint {path}: {key!r} must hold {n} numbers, got {got}")
    try:
        array = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise CheckpointError(f"PRM checkpoint {path}: {key!r} is not numeric") from exc
    if not np.isfinite(array).all():
        raise CheckpointError(f"PRM checkpoint {path}: {key!r} holds a non-finite number")
    return array


def load_checkpoint(path: Path) -> PrmParams:
    """Read and validate a PRM checkpoint.

    Raises:
        CheckpointError: the file is missing, not JSON, of another schema,
            trained on other features, of inconsistent lengths, or holds a
            non-finite weight, mean or bias.
    """
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise CheckpointError(
            f"no PRM checkpoint at {path}", hint="train one with `nightschool learn prm`"
        ) from exc
    except (OSError, ValueError) as exc:
        raise CheckpointError(f"PRM checkpoint {path} is unreadable: {exc}") from exc
    if not isinstance(data, dict) or data.get("schema") != CHECKPOINT_SCHEMA:
        schema = data.get("schema") if isinstance(data, dict) else None
        raise CheckpointError(
            f"PRM checkpoint {path} has schema {schema!r}, not {CHECKPOINT_SCHEMA}"
        )
    names = data.get("feature_names")
    if names != list(FEATURE_NAMES):
        raise CheckpointError(
            f"PRM checkpoint {path} was trained on other features; retrain it",
            hint="nightschool learn prm",
        )
    n = len(FEATURE_NAMES)
    weights = _finite_list(data, "weights", n, path)
    means = _finite_list(data, "means", n, path)
    bias = data.get("bias")
    if not isinstance(bias, (int, float)) or not math.isfinite(bias):
        raise CheckpointError(f"PRM checkpoint {path}: bias must be a finite number")
    version = data.get("version")
    report = data.get("report")
    return PrmParams(
        weights=weights,
        bias=float(bias),
        means=means,
        version=int(version) if isinstance(version, int) else 0,
        created=str(data.get("created", "")),
        report=report if isinstance(report, dict) else {},
    )


def save_checkpoint(path: Path, params: PrmParams) -> None:
    """Write `params` to `path` atomically (temp file, fsync, rename).

    Raises:
        CheckpointError: a weight, mean or the bias is not finite (nothing written).
    """
    arrays = (params.weights, params.means)
    if not all(np.isfinite(a).all() for a in arrays) or not math.isfinite(params.bias):
        raise CheckpointError("refusing to save a PRM with non-finite parameters")
    write_json_atomic(
        path,
        {
            "schema": CHECKPOINT_SCHEMA,
            "version": params.version,
            "created": params.created,
            "feature_names": list(FEATURE_NAMES),
            "weights": [float(w) for w in params.weights],
            "bias": float(params.bias),
            "means": [float(m) for m in params.means],
            "report": dict(params.report),
        },
    )


class LivePrm:
    """The PRM a running process scores with, swappable while others score.

    Args:
        path: the checkpoint file (`prm_path(home)`).
        params: parameters already loaded, or None to read `path` lazily.
    """

    def __init__(self, path: Path, params: PrmParams | None = None) -> None:
        self.path = path
        self._params = params
        self._mtime = path.stat().st_mtime_ns if params is not None and path.exists() else None
        self._lock = threading.Lock()

    @property
    def params(self) -> PrmParams | None:
        """The current parameters, re-read when the file changed (None: no checkpoint).

        A checkpoint that fails to load leaves the previous parameters in use.
        """
        self.refresh()
        return self._params

    def refresh(self) -> bool:
        """Re-read the checkpoint if its file changed; return whether a new one was loaded."""
        try:
            mtime = self.path.stat().st_mtime_ns
        except OSError:
            return False
        if mtime == self._mtime:
            return False
        with self._lock:
            if mtime == self._mtime:
                return False
            try:
                params = load_checkpoint(self.path)
            except CheckpointError:
                self._mtime = mtime
                return False
            self._params, self._mtime = params, mtime
            return True

    def swap(self, params: PrmParams) -> None:
        """Use `params` from the next score on (in-process hot swap)."""
        self._params = params

    def score(self, features: Sequence[float]) -> float | None:
        """Value of one state, or None when no PRM is loaded."""
        params = self.params
        return None if params is None else params.score(features)
