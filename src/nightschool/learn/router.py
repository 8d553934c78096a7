"""The difficulty router: how much budget a request gets, learned from own outcomes.

Before the solver spends its attempts, the router reads the request (cluster,
tier, task kind, prompt size, lessons and skills shown: `steps.REQUEST_FEATURES`)
and decides:

- `direct`: one attempt (the first attempt is very likely to pass, or retries
  very unlikely to help);
- `retry`: the full budget (retry at rising temperature) - also what the
  router answers whenever it is unsure (escalation is the fail-safe);
- `stop`: no attempt (the request is very likely unsolvable at this budget).

Two logistic regressions (scikit-learn) give `p_first`, the chance the first
attempt passes (learned from every solver episode), and `p_any`, the chance
the full budget passes (from full-budget episodes only). `direct` when
`p_first >= direct_at`; `stop` when `p_any <= stop_at`; else `retry`.

It is judged offline by replaying held-out episodes (grouped cross-
validation, a challenge's renders in one fold): the solver's attempt k is
fixed by its seed and the attempts before it, so an episode cut to a smaller
budget is what that budget would have produced. Each held-out episode gives
a pair (always-full-budget vs routed: passed, tokens), and the project's
promotion gate in non-inferiority-and-cheaper mode decides; the issue's bar
is at least 30% fewer tokens at no significant loss of pass rate. Tokens per
attempt are the episode's tokens split evenly over its model calls (the
record keeps totals only). A checkpoint is written only when both hold.
Routers in the field: a tuned kNN router matches learned routers (arXiv
2505.12601); cascades with escalation (FrugalGPT, AutoMix) are the strong
simple baseline this mirrors.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, TypeVar, cast

import numpy as np
from pydantic import BaseModel, Field

from nightschool.gate import GateConfig, PairedResult, promotion_gate
from nightschool.learn._checkpoint import CheckpointError
from nightschool.learn.prm import NotEnoughDataError
from nightschool.learn.steps import REQUEST_FEATURES, request_features
from nightschool.store import Store
from nightschool.strategies.archive import write_json_atomic
from nightschool.trajectory import Outcome, Trajectory

__all__ = [
    "ROUTER_SCHEMA",
    "Decision",
    "RouterConfig",
    "RouterParams",
    "RouterReport",
    "learn_router",
    "load_router",
    "router_path",
    "train_router",
]

ROUTER_SCHEMA = "nightschool.router/1"
"""Schema name of a router checkpoint."""

MIN_SAVINGS = 0.30
"""The issue's bar: the routed arm spends at least 30% fewer tokens."""

Decision = Literal["direct", "retry", "stop"]


def router_path(home: Path) -> Path:
    """Where a home's router checkpoint lives (`<home>/learners/router.json`)."""
    return home / "learners" / "router.json"


class RouterConfig(BaseModel):
    """Settings of router training and its decisions."""

    direct_at: float = Field(default=0.8, gt=0, le=1, description="p_first for `direct`.")
    stop_at: float = Field(default=0.05, ge=0, lt=1, description="p_any for `stop`.")
    full_budget: int = Field(default=3, ge=2, le=8, description="Attempts of `retry`.")
    folds: int = Field(default=5, ge=2, le=20, description="Grouped cross-validation folds.")
    min_trajectories: int = Field(default=30, ge=4, description="Fewest solver episodes.")
    c: float = Field(default=1.0, gt=0, description="Inverse L2 regularisation.")


@dataclass(frozen=True)
class _Logit:
    weights: tuple[float, ...]
    bias: float

    def p(self, x: Sequence[float]) -> float:
        z = self.bias + sum(w * v for w, v in zip(self.weights, x, strict=True))
        return 1.0 / (1.0 + math.exp(-max(-60.0, min(60.0, z))))


@dataclass(frozen=True)
class RouterParams:
    """A trained router: two logistic models over `REQUEST_FEATURES` and thresholds."""

    first: _Logit
    any_pass: _Logit
    direct_at: float
    stop_at: float
    full_budget: int
    version: int = 0
    report: dict[str, Any] = field(default_factory=dict)

    def decide(self, trajectory: Trajectory) -> tuple[Decision, float, float]:
        """(decision, p_first, p_any) for the request of `trajectory` (its calls are not read)."""
        x = request_features(trajectory)
        p_first, p_any = self.first.p(x), self.any_pass.p(x)
        if p_first >= self.direct_at:
            return "direct", p_first, p_any
        if p_any <= self.stop_at:
            return "stop", p_first, p_any
        return "retry", p_first, p_any

    def budget(self, decision: str) -> int:
        """Attempts a decision allows (`direct` 1, `retry` the full budget, `stop` 0).

        Raises:
            KeyError: an unknown decision.
        """
        return {"direct": 1, "retry": self.full_budget, "stop": 0}[decision]


@dataclass(frozen=True)
class RouterReport:
    """Offline replay of held-out episodes: always-full-budget vs routed.

    Attributes:
        episodes: held-out full-budget episodes replayed.
        first_only: single-attempt episodes that trained `p_first` only.
        decisions: how many got each decision.
        pass_full, pass_routed: pass rates of the two arms.
        tokens_full, tokens_routed: mean tokens per episode.
        savings: 1 - tokens_routed / tokens_full.
        verdict: the gate's one-line summary (non-inferiority and cheaper).
        promote: the gate promoted and `savings >= MIN_SAVINGS`.
        saved, reason, version, path: what `learn_router` did.
    """

    episodes: int
    first_only: int
    decisions: dict[str, int]
    pass_full: float
    pass_routed: float
    tokens_full: float
    tokens_routed: float
    savings: float
    verdict: str
    promote: bool
    saved: bool = False
    reason: str = ""
    version: int = 0
    path: str = ""

    def to_json(self) -> dict[str, Any]:
        """JSON-safe dict."""
        return asdict(self)


def _episodes(
    trajectories: Iterable[Trajectory], full_budget: int
) -> tuple[list[Trajectory], list[Trajectory]]:
    """(full-budget episodes, single-attempt episodes) of the plain solver, outcome known."""
    full, single = [], []
    for t in trajectories:
        if t.task_kind not in ("selfplay", "verification") or t.outcome == Outcome.UNKNOWN:
            continue
        if t.extra.get("sample_of") or (t.extra.get("strategy") or {}).get("champion_id"):
            continue
        runs = [c for c in t.tool_calls if c.name == "run_solution"]
        if not runs:
            continue
        if t.task_kind == "selfplay" and (len(runs) >= full_budget or t.outcome == Outcome.PASSED):
            full.append(t)
        elif len(runs) == 1:
            single.append(t)
    return full, single


def _first_passed(t: Trajectory) -> bool:
    return bool(t.tool_calls) and t.tool_calls[0].result == "passed"


def _fit(x: np.ndarray, y: np.ndarray, c: float) -> _Logit:
    # function-local: start-up time (sklearn, ~1.2 s), as in train_router
    from sklearn.linear_model import LogisticRegression
    from sklearn.preprocessing import StandardScaler

    if len(set(y.tolist())) < 2:
        prior = float(np.clip(y.mean(), 1e-3, 1 - 1e-3))
        return _Logit(tuple([0.0] * x.shape[1]), math.log(prior / (1 - prior)))
    scaler = StandardScaler().fit(x)
    model = LogisticRegression(C=c, max_iter=5000).fit(scaler.transform(x), y)
    coef = model.coef_[0] / scaler.scale_
    bias = float(model.intercept_[0] - np.sum(coef * scaler.mean_))
    return _Logit(tuple(float(w) for w in coef), bias)


def _fit_router(
    full: list[Trajectory], single: list[Trajectory], cfg: RouterConfig
) -> RouterParams:
    firsts = full + single
    x1 = np.asarray([request_features(t) for t in firsts])
    y1 = np.asarray([float(_first_passed(t)) for t in firsts])
    x3 = np.asarray([request_features(t) for t in full])
    y3 = np.asarray([float(t.outcome == Outcome.PASSED) for t in full])
    return RouterParams(
        _fit(x1, y1, cfg.c), _fit(x3, y3, cfg.c), cfg.direct_at, cfg.stop_at, cfg.full_budget
    )


def replay(t: Trajectory, budget: int) -> tuple[bool, float]:
    """(passed, tokens) of episode `t` cut to `budget` attempts (tokens split evenly)."""
    calls = max(1, int(t.extra.get("model_calls") or len(t.tool_calls) or 1))
    per_call = (t.tokens_in + t.tokens_out) / calls
    used = t.tool_calls[:budget]
    passed = any(c.result == "passed" for c in used)
    if not used:
        return False, 0.0
    if len(used) == len(t.tool_calls):
        return passed, float(t.tokens_in + t.tokens_out)
    share = calls * len(used) / len(t.tool_calls)
    return passed, per_call * share


def train_router(
    trajectories: Iterable[Trajectory], config: RouterConfig | None = None
) -> tuple[RouterParams, RouterReport]:
    """Fit the router and replay held-out episodes against the full budget.

    Raises:
        NotEnoughDataError: fewer than `min_trajectories` full-budget episodes,
            or one outcome only.
    """
    from sklearn.model_selection import GroupKFold  # function-local: start-up time (sklearn)

    cfg = config or RouterConfig()
    full, single = _episodes(trajectories, cfg.full_budget)
    outcomes = {t.outcome for t in full}
    if len(full) < cfg.min_trajectories or len(outcomes) < 2:
        raise NotEnoughDataError(
            f"a router needs at least {cfg.min_trajectories} full-budget self-play episodes "
            f"with both outcomes; this store has {len(full)}",
            hint="let nightschool dream for a while, then train again",
        )
    groups = [str(t.extra.get("challenge_hash") or t.id) for t in full]
    folds = min(cfg.folds, len(set(groups)))
    pairs: list[PairedResult] = []
    decisions: dict[str, int] = {"direct": 0, "retry": 0, "stop": 0}
    for train, test in GroupKFold(n_splits=folds).split(full, groups=groups):
        held = {groups[i] for i in test}
        fold_single = [t for t in single if str(t.extra.get("challenge_hash") or t.id) not in held]
        params = _fit_router([full[i] for i in train], fold_single, cfg)
        for i in test:
            t = full[i]
            decision, _, _ = params.decide(t)
            decisions[decision] += 1
            base_pass, base_tokens = replay(t, cfg.full_budget)
            routed_pass, routed_tokens = replay(t, params.budget(decision))
            pairs.append(
                PairedResult(t.id, float(base_pass), float(routed_pass), base_tokens, routed_tokens)
            )
    verdict = promotion_gate(pairs, GateConfig(mode="noninferiority_cheaper"))
    n = len(pairs)
    tokens_full = sum(p.incumbent_cost for p in pairs) / n
    tokens_routed = sum(p.candidate_cost for p in pairs) / n
    savings = 1 - tokens_routed / tokens_full if tokens_full else 0.0
    report = RouterReport(
        episodes=n,
        first_only=len(single),
        decisions=decisions,
        pass_full=round(sum(p.incumbent_score for p in pairs) / n, 4),
        pass_routed=round(sum(p.candidate_score for p in pairs) / n, 4),
        tokens_full=round(tokens_full, 1),
        tokens_routed=round(tokens_routed, 1),
        savings=round(savings, 4),
        verdict=verdict.summary(),
        promote=verdict.promote and savings >= MIN_SAVINGS,
    )
    final = _fit_router(full, single, cfg)
    return final, report


def save_router(path: Path, params: RouterParams) -> None:
    """Write a router checkpoint atomically."""
    write_json_atomic(
        path,
        {
            "schema": ROUTER_SCHEMA,
            "version": params.version,
            "created": datetime.now(UTC).isoformat(),
            "feature_names": list(REQUEST_FEATURES),
            "first": {"weights": list(params.first.weights), "bias": params.first.bias},
            "any_pass": {"weights": list(params.any_pass.weights), "bias": params.any_pass.bias},
            "direct_at": params.direct_at,
            "stop_at": params.stop_at,
            "full_budget": params.full_budget,
            "report": params.report,
        },
    )


def load_router(path: Path) -> RouterParams:
    """Read and validate a router checkpoint.

    Raises:
        CheckpointError: missing, unreadable, another schema or features, or
            non-finite numbers.
    """
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise CheckpointError(f"no router checkpoint at {path}") from exc
    except (OSError, ValueError) as exc:
        raise CheckpointError(f"router checkpoint {path} is unreadable: {exc}") from exc
    if not isinstance(data, dict) or data.get("schema") != ROUTER_SCHEMA:
        raise CheckpointError(f"router checkpoint {path} is not {ROUTER_SCHEMA}")
    if data.get("feature_names") != list(REQUEST_FEATURES):
        raise CheckpointError(f"router checkpoint {path} was trained on other features")
    models = []
    for key in ("first", "any_pass"):
        part = data.get(key) or {}
        weights, bias = part.get("weights"), part.get("bias")
        if (
            not isinstance(weights, list)
            or len(weights) != len(REQUEST_FEATURES)
            or not isinstance(bias, (int, float))
            or not all(isinstance(w, (int, float)) and math.isfinite(w) for w in weights)
            or not math.isfinite(bias)
        ):
            raise CheckpointError(f"router checkpoint {path}: {key!r} is malformed or non-finite")
        models.append(_Logit(tuple(float(w) for w in weights), float(bias)))
    return RouterParams(
        models[0],
        models[1],
        float(data["direct_at"]),
        float(data["stop_at"]),
        int(data["full_budget"]),
        int(data.get("version") or 0),
        data.get("report") or {},
    )


def learn_router(
    store: Store, home: Path, config: RouterConfig | None = None, *, force: bool = False
) -> RouterReport:
    """Train on the store, replay held-out episodes, save only what the gate promotes.

    Raises:
        NotEnoughDataError: see `train_router`.
    """
    cfg = config or RouterConfig()
    trajectories = [
        t for kind in ("selfplay", "verification") for t in store.iter_trajectories(task_kind=kind)
    ]
    params, report = train_router(trajectories, cfg)
    return save_if_promoted(
        report,
        router_path(home),
        force=force,
        version_of=lambda path: load_router(path).version,
        write=lambda path, final: save_router(
            path, replace(params, version=final.version, report=final.to_json())
        ),
    )


Report = TypeVar("Report")


def save_if_promoted(
    report: Report,
    path: Path,
    *,
    force: bool,
    version_of: Callable[[Path], int],
    write: Callable[[Path, Report], None],
) -> Report:
    """Write a router checkpoint only when `report.promote` (or `force`), one version up.

    Args:
        report: a router report (`promote`, `savings`, and `saved`, `reason`,
            `version`, `path` to fill in; a frozen dataclass).
        path: where the checkpoint goes.
        force: write even when the gate did not promote it.
        version_of: the version of the checkpoint at `path` (may raise `CheckpointError`).
        write: writes the checkpoint for the final report.

    Returns:
        The report with what was done.
    """
    measured: Any = report  # a RouterReport or a ChatRouterReport
    if not measured.promote and not force:
        why = f"the gate did not promote it, or savings {measured.savings:.0%} < 30%"
        return cast("Report", replace(measured, reason=why, path=str(path)))
    previous = 0
    if path.exists():
        try:
            previous = version_of(path)
        except CheckpointError:
            previous = 0
    final = replace(
        measured,
        saved=True,
        version=previous + 1,
        path=str(path),
        reason="the gate promoted it" if measured.promote else "saved with --force",
    )
    write(path, final)
    return cast("Report", final)
