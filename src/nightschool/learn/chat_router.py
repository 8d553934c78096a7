"""The chat router: answer a chat request directly, or run the whole agent loop.

The solver's router (`router.py`) reads practice features (cluster, tier) a
chat request does not have, so chat turns get their own, on the request's
text. Two ways to answer:

- `direct`: one model call, no tools offered, no verifier call - the cheap arm;
- `full`: the agent loop (tool rounds up to `AgentConfig.max_steps`, then the
  verifier) - today's behaviour, and what the router answers whenever it is
  unsure (an unfamiliar request, a broken checkpoint: escalation is the
  fail-safe). A chat user always gets a reply, so the solver's `stop` class has
  no chat counterpart.

The model is k-nearest neighbours over request embeddings (the playbook's
embedder) of the agent's own past requests whose outcome is known under both
arms: `p_direct` and `p_full` are Laplace-smoothed pass rates of the k most
similar ones (a tuned kNN router matches learned routers, arXiv 2505.12601).
`direct` when the nearest neighbour is at least `min_similarity` alike,
`p_direct >= direct_at` and `p_direct + margin >= p_full`; else `full`.

Both outcomes of a request come from two eval runs of the same suite, one
forced `--route direct` and one `--route full` (`evals.chat_pairs`), so the offline
judgment is exact: each held-out request (grouped k-fold cross-validation)
gets the measured outcome and tokens of the arm the router picks, against
always-`full`, through the promotion gate in non-inferiority-and-cheaper mode
plus the issue's bar of at least 30% fewer tokens. A checkpoint is written
only when both hold. The always-`direct` arm is reported beside it: the
cheap baseline a router must beat to be worth its lookup.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, Field

from nightschool.gate import GateConfig, PairedResult, promotion_gate
from nightschool.learn._checkpoint import CheckpointError
from nightschool.learn.prm import NotEnoughDataError
from nightschool.learn.router import MIN_SAVINGS, save_if_promoted
from nightschool.strategies.archive import write_json_atomic

__all__ = [
    "CHAT_ROUTER_SCHEMA",
    "ChatDecision",
    "ChatPair",
    "ChatRoute",
    "ChatRouter",
    "ChatRouterConfig",
    "ChatRouterParams",
    "ChatRouterReport",
    "chat_router_path",
    "learn_chat_router",
    "load_chat_router",
    "save_chat_router",
    "train_chat_router",
]

CHAT_ROUTER_SCHEMA = "nightschool.chat-router/1"
"""Schema name of a chat-router checkpoint."""

ChatDecision = Literal["direct", "full"]
ROUTES: tuple[ChatDecision, ...] = ("direct", "full")
"""The two ways to answer, cheap first."""

FloatArray = npt.NDArray[np.float32]
logger = logging.getLogger(__name__)


def chat_router_path(home: Path) -> Path:
    """Where a home's chat-router checkpoint lives (`<home>/learners/chat_router.json`)."""
    return home / "learners" / "chat_router.json"


@dataclass(frozen=True)
class ChatRoute:
    """How one chat turn is answered, recorded as the trajectory's `extra["router"]`.

    Attributes:
        decision: `direct` or `full`.
        reason: why (forced, no router, unfamiliar request, the probabilities).
        p_direct, p_full: the router's estimates (None when it did not decide).
        version: the checkpoint's version (0: no checkpoint decided).
    """

    decision: ChatDecision
    reason: str
    p_direct: float | None = None
    p_full: float | None = None
    version: int = 0

    def as_record(self) -> dict[str, Any]:
        """JSON-safe dict, probabilities rounded to 4 places."""
        record = asdict(self)
        for key in ("p_direct", "p_full"):
            if record[key] is not None:
                record[key] = round(record[key], 4)
        return record


class ChatRouterConfig(BaseModel):
    """Settings of chat-router training and its decisions."""

    k: int = Field(default=7, ge=1, le=50, description="Neighbours per decision.")
    direct_at: float = Field(default=0.75, gt=0, le=1, description="p_direct for `direct`.")
    margin: float = Field(default=0.05, ge=0, le=1, description="p_full - p_direct allowed.")
    min_similarity: float = Field(
        default=0.5, ge=-1, le=1, description="Cosine of the nearest neighbour, else `full`."
    )
    folds: int = Field(default=5, ge=2, le=20, description="Cross-validation folds.")
    min_pairs: int = Field(default=20, ge=2, description="Fewest requests with both outcomes.")


@dataclass(frozen=True)
class ChatPair:
    """One request answered both ways (two eval runs of one suite)."""

    task_id: str
    request: str
    direct_passed: bool
    direct_tokens: float
    full_passed: bool
    full_tokens: float


@dataclass(frozen=True)
class ChatRouterParams:
    """A fitted chat router: the known requests' vectors and outcomes, and thresholds."""

    embedder: str
    vectors: FloatArray
    direct_passed: FloatArray
    full_passed: FloatArray
    config: ChatRouterConfig
    version: int = 0
    report: dict[str, Any] = field(default_factory=dict)

    def decide(self, vector: Sequence[float] | FloatArray) -> ChatRoute:
        """The route for a request whose unit embedding is `vector` (shape `(dim,)`).

        Raises:
            ValueError: `vector` has another width than the checkpoint's.
        """
        query = np.asarray(vector, dtype=np.float32)
        if query.shape != (self.vectors.shape[1],):
            raise ValueError(f"vector of shape {query.shape}, expected ({self.vectors.shape[1]},)")
        query = np.nan_to_num(query, nan=0.0, posinf=0.0, neginf=0.0)
        similarity = self.vectors @ query
        k = min(self.config.k, similarity.shape[0])
        nearest = np.argsort(-similarity, kind="stable")[:k]
        p_direct = (float(self.direct_passed[nearest].sum()) + 1) / (k + 2)
        p_full = (float(self.full_passed[nearest].sum()) + 1) / (k + 2)
        best = float(similarity[nearest[0]])
        cfg = self.config
        if best < cfg.min_similarity:
            reason = f"unfamiliar request (nearest cosine {best:.2f} < {cfg.min_similarity})"
            return ChatRoute("full", reason, p_direct, p_full, self.version)
        if p_direct >= cfg.direct_at and p_direct + cfg.margin >= p_full:
            reason = f"p_direct {p_direct:.2f} >= {cfg.direct_at}, p_full {p_full:.2f}"
            return ChatRoute("direct", reason, p_direct, p_full, self.version)
        reason = f"p_direct {p_direct:.2f}, p_full {p_full:.2f}: escalate"
        return ChatRoute("full", reason, p_direct, p_full, self.version)


@dataclass(frozen=True)
class ChatRouterReport:
    """Held-out requests replayed three ways: always `full`, always `direct`, routed.

    Attributes:
        requests: held-out requests (each with both outcomes measured).
        decisions: how many the router sent each way.
        pass_full, pass_direct, pass_routed: pass rates of the three arms.
        tokens_full, tokens_direct, tokens_routed: mean model tokens per request.
        savings: 1 - tokens_routed / tokens_full.
        verdict: the gate's summary, routed vs always-`full` (non-inferior and cheaper).
        direct_verdict: the same for always-`direct` (the cheap baseline).
        promote: the gate promoted the router and `savings >= MIN_SAVINGS`.
        saved, reason, version, path: what `learn_chat_router` did.
    """

    requests: int
    decisions: dict[str, int]
    pass_full: float
    pass_direct: float
    pass_routed: float
    tokens_full: float
    tokens_direct: float
    tokens_routed: float
    savings: float
    verdict: str
    direct_verdict: str
    promote: bool
    saved: bool = False
    reason: str = ""
    version: int = 0
    path: str = ""

    def to_json(self) -> dict[str, Any]:
        """JSON-safe dict."""
        return asdict(self)


class ChatRouter:
    """Routes chat requests: a forced route, a checkpoint with its embedder, or `full`.

    `route` never raises: no checkpoint, an unusable one or any error while
    deciding gives `full` (escalation is the fail-safe) with the reason.

    Args:
        params: a loaded checkpoint, or None.
        embedder: embeds requests for `params` (the playbook's); None with no params.
        forced: answer every request this way (`eval run --route direct|full`).
        why_none: the reason recorded when `params` is None.
    """

    def __init__(
        self,
        params: ChatRouterParams | None = None,
        embedder: Any | None = None,
        *,
        forced: ChatDecision | None = None,
        why_none: str = "no chat router saved",
    ) -> None:
        if forced is not None and forced not in ROUTES:
            raise ValueError(f"route must be one of {', '.join(ROUTES)}, got {forced!r}")
        self.params = params if embedder is not None else None
        self.embedder = embedder
        self.forced = forced
        self.why_none = why_none if params is None or embedder is not None else "no embedder"

    @classmethod
    def from_home(cls, home: Path, embedder: Any | None) -> ChatRouter:
        """The home's saved chat router, or one that always answers `full` (with why)."""
        path = chat_router_path(home)
        if not path.exists():
            return cls()
        if embedder is None:
            return cls(why_none="a chat router is saved, but no embedder is loaded")
        try:
            return cls(load_chat_router(path, str(embedder.name)), embedder)
        except CheckpointError as exc:
            logger.warning("chat router not used: %s", exc.message)
            return cls(why_none=f"chat router unusable: {exc.message}")

    def route(self, request: str) -> ChatRoute:
        """How to answer `request` (see the module docstring)."""
        if self.forced is not None:
            return ChatRoute(self.forced, f"forced ({self.forced})")
        if self.params is None or self.embedder is None:
            return ChatRoute("full", self.why_none)
        try:
            vector = np.asarray(self.embedder.embed([request]), dtype=np.float32)[0]
            return self.params.decide(vector)
        except Exception as exc:  # any fault escalates; the turn must not fail for it
            logger.warning("chat router failed, escalating: %s", exc)
            return ChatRoute("full", f"router error: {type(exc).__name__}: {exc}"[:200])


def _fit(
    pairs: Sequence[ChatPair], vectors: FloatArray, embedder: str, cfg: ChatRouterConfig
) -> ChatRouterParams:
    return ChatRouterParams(
        embedder,
        vectors,
        np.array([p.direct_passed for p in pairs], dtype=np.float32),
        np.array([p.full_passed for p in pairs], dtype=np.float32),
        cfg,
    )


def _require(pairs: Sequence[ChatPair], cfg: ChatRouterConfig) -> None:
    if len(pairs) < cfg.min_pairs:
        raise NotEnoughDataError(
            f"a chat router needs at least {cfg.min_pairs} requests answered both ways; "
            f"this store has {len(pairs)}",
            hint="run the same suite twice: `nightschool eval run --route direct` and "
            "`--route full`, then train again",
        )


def train_chat_router(
    pairs: Sequence[ChatPair],
    vectors: FloatArray,
    embedder: str,
    config: ChatRouterConfig | None = None,
) -> tuple[ChatRouterParams, ChatRouterReport]:
    """Fit the chat router and judge it on held-out requests (k-fold, one request per group).

    Args:
        pairs: requests with both outcomes (`chat_pairs`).
        vectors: their unit embeddings, shape `(len(pairs), dim)`.
        embedder: the embedder's name (stored; a checkpoint is only used with it).
        config: settings; None means `ChatRouterConfig()`.

    Raises:
        NotEnoughDataError: fewer than `min_pairs` pairs.
        ValueError: `vectors` does not match `pairs`.
    """
    from sklearn.model_selection import KFold  # function-local: start-up time (sklearn, ~1.2 s)

    cfg = config or ChatRouterConfig()
    _require(pairs, cfg)
    if vectors.shape[0] != len(pairs):
        raise ValueError(f"{vectors.shape[0]} vectors for {len(pairs)} pairs")
    routed: list[PairedResult] = []
    direct: list[PairedResult] = []
    decisions: dict[str, int] = dict.fromkeys(ROUTES, 0)
    folds = KFold(n_splits=min(cfg.folds, len(pairs)), shuffle=True, random_state=0)
    for train, test in folds.split(np.arange(len(pairs))):
        params = _fit([pairs[i] for i in train], vectors[train], embedder, cfg)
        for i in test:
            pair = pairs[i]
            route = params.decide(vectors[i]).decision
            decisions[route] += 1
            passed, tokens = (
                (pair.direct_passed, pair.direct_tokens)
                if route == "direct"
                else (pair.full_passed, pair.full_tokens)
            )
            full = (float(pair.full_passed), pair.full_tokens)
            routed.append(PairedResult(pair.task_id, full[0], float(passed), full[1], tokens))
            direct.append(
                PairedResult(
                    pair.task_id, full[0], float(pair.direct_passed), full[1], pair.direct_tokens
                )
            )
    gate = GateConfig(mode="noninferiority_cheaper")
    verdict, direct_verdict = promotion_gate(routed, gate), promotion_gate(direct, gate)
    n = len(routed)

    def mean(values: Sequence[float]) -> float:
        return sum(values) / n

    tokens_full = mean([p.incumbent_cost for p in routed])
    tokens_routed = mean([p.candidate_cost for p in routed])
    savings = 1 - tokens_routed / tokens_full if tokens_full else 0.0
    report = ChatRouterReport(
        requests=n,
        decisions=decisions,
        pass_full=round(mean([p.incumbent_score for p in routed]), 4),
        pass_direct=round(mean([p.candidate_score for p in direct]), 4),
        pass_routed=round(mean([p.candidate_score for p in routed]), 4),
        tokens_full=round(tokens_full, 1),
        tokens_direct=round(mean([p.candidate_cost for p in direct]), 1),
        tokens_routed=round(tokens_routed, 1),
        savings=round(savings, 4),
        verdict=verdict.summary(),
        direct_verdict=direct_verdict.summary(),
        promote=verdict.promote and savings >= MIN_SAVINGS,
    )
    return _fit(pairs, vectors, embedder, cfg), report


def save_chat_router(path: Path, params: ChatRouterParams) -> None:
    """Write a chat-router checkpoint atomically (vectors as lists of floats)."""
    write_json_atomic(
        path,
        {
            "schema": CHAT_ROUTER_SCHEMA,
            "version": params.version,
            "created": datetime.now(UTC).isoformat(),
            "embedder": params.embedder,
            "vectors": [[round(float(v), 6) for v in row] for row in params.vectors],
            "direct_passed": [int(v) for v in params.direct_passed],
            "full_passed": [int(v) for v in params.full_passed],
            "config": params.config.model_dump(),
            "report": params.report,
        },
    )


def load_chat_router(path: Path, embedder: str | None = None) -> ChatRouterParams:
    """Read and validate a chat-router checkpoint.

    Args:
        path: the checkpoint.
        embedder: the embedder that will embed requests; another name is refused.

    Raises:
        CheckpointError: missing, unreadable, another schema or embedder, lengths
            that disagree, or non-finite numbers.
    """
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise CheckpointError(f"no chat-router checkpoint at {path}") from exc
    except (OSError, ValueError) as exc:
        raise CheckpointError(f"chat-router checkpoint {path} is unreadable: {exc}") from exc
    if not isinstance(data, dict) or data.get("schema") != CHAT_ROUTER_SCHEMA:
        raise CheckpointError(f"chat-router checkpoint {path} is not {CHAT_ROUTER_SCHEMA}")
    if embedder is not None and data.get("embedder") != embedder:
        raise CheckpointError(
            f"chat-router checkpoint {path} was built with {data.get('embedder')!r}, "
            f"not {embedder!r}"
        )
    try:
        vectors = np.array(data["vectors"], dtype=np.float32)
        direct = np.array(data["direct_passed"], dtype=np.float32)
        full = np.array(data["full_passed"], dtype=np.float32)
        config = ChatRouterConfig.model_validate(data["config"])
    except (KeyError, TypeError, ValueError) as exc:
        raise CheckpointError(f"chat-router checkpoint {path} is malformed: {exc}") from exc
    n = vectors.shape[0] if vectors.ndim == 2 else -1
    if n < 1 or direct.shape != (n,) or full.shape != (n,):
        raise CheckpointError(f"chat-router checkpoint {path}: lengths disagree")
    if not all(math.isfinite(float(v)) for v in vectors.ravel()):
        raise CheckpointError(f"chat-router checkpoint {path}: non-finite vectors")
    return ChatRouterParams(
        str(data["embedder"]),
        vectors,
        direct,
        full,
        config,
        int(data.get("version") or 0),
        data.get("report") or {},
    )


def learn_chat_router(
    pairs: Sequence[ChatPair],
    home: Path,
    embed: Any,
    config: ChatRouterConfig | None = None,
    *,
    force: bool = False,
) -> ChatRouterReport:
    """Train on paired eval runs; save only what the gate promotes.

    Args:
        pairs: requests answered both ways (`evals.chat_pairs` reads them from the
            store's forced-route eval runs).
        home: the checkpoint goes to `chat_router_path(home)`.
        embed: an `Embedder` (`name`, `embed(texts)` → unit rows).
        config: settings.
        force: save even when the gate does not promote it.

    Raises:
        NotEnoughDataError: see `train_chat_router`.
    """
    cfg = config or ChatRouterConfig()
    _require(pairs, cfg)  # before the embedder loads
    vectors = np.asarray(embed.embed([p.request for p in pairs]), dtype=np.float32)
    params, report = train_chat_router(pairs, vectors, str(embed.name), cfg)
    return save_if_promoted(
        report,
        chat_router_path(home),
        force=force,
        version_of=lambda path: load_chat_router(path).version,
        write=lambda path, final: save_chat_router(
            path, replace(params, version=final.version, report=final.to_json())
        ),
    )
