"""The chat router: kNN decisions, fail-safe escalation, checkpoints, held-out judging."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from nightschool.evals import TaskResult, chat_pairs
from nightschool.evals._storage import add_result, create_run, finish_run
from nightschool.learn import CheckpointError, NotEnoughDataError
from nightschool.learn.chat_router import (
    ChatPair,
    ChatRoute,
    ChatRouter,
    ChatRouterConfig,
    ChatRouterParams,
    chat_router_path,
    learn_chat_router,
    load_chat_router,
    save_chat_router,
    train_chat_router,
)
from nightschool.playbook import HashingEmbedder
from nightschool.store import Store
from nightschool.trajectory import Outcome, Trajectory


def unit(*values: float) -> np.ndarray:
    v = np.array(values, dtype=np.float32)
    return v / np.linalg.norm(v)


def params(
    vectors: list[np.ndarray], direct: list[int], full: list[int], **cfg: float
) -> ChatRouterParams:
    return ChatRouterParams(
        "test-embedder",
        np.stack(vectors).astype(np.float32),
        np.array(direct, dtype=np.float32),
        np.array(full, dtype=np.float32),
        ChatRouterConfig(**cfg),
    )


# Requests near (1, 0) are easy (direct passes); near (0, 1) only the loop passes.
EASY = [unit(1, 0.05 * i) for i in range(6)]
HARD = [unit(0.05 * i, 1) for i in range(6)]
KNOWN = params(EASY + HARD, [1] * 6 + [0] * 6, [1] * 6 + [1] * 6, k=5)


def test_decide_sends_easy_requests_direct_and_hard_ones_to_the_loop() -> None:
    easy = KNOWN.decide(unit(1, 0.1))
    assert easy.decision == "direct" and easy.p_direct == pytest.approx(6 / 7)
    hard = KNOWN.decide(unit(0.1, 1))
    assert hard.decision == "full" and hard.p_direct == pytest.approx(1 / 7)
    assert hard.p_full == pytest.approx(6 / 7) and "escalate" in hard.reason


def test_an_unfamiliar_request_escalates_to_the_loop() -> None:
    route = KNOWN.decide(unit(-1, -1))  # unlike anything seen
    assert route.decision == "full" and "unfamiliar" in route.reason


def test_direct_needs_the_loop_to_have_no_edge() -> None:
    # direct passes 4 of 5 neighbours, the loop all 5: 5/7 vs 6/7 > margin 0.05
    close = params(EASY[:5], [1, 1, 1, 1, 0], [1] * 5, k=5, direct_at=0.7)
    assert close.decide(unit(1, 0.1)).decision == "full"
    tied = params(EASY[:5], [1, 1, 1, 1, 0], [1, 1, 1, 1, 0], k=5, direct_at=0.7)
    assert tied.decide(unit(1, 0.1)).decision == "direct"


def test_decide_rejects_a_vector_of_another_width_and_neutralises_nan() -> None:
    with pytest.raises(ValueError, match="shape"):
        KNOWN.decide([1.0, 0.0, 0.0])
    assert KNOWN.decide([float("nan"), 1.0]).decision == "full"


class Boom:
    name = "test-embedder"

    def embed(self, texts: list[str]) -> np.ndarray:
        raise RuntimeError("embedder crashed")


class Fixed:
    """Embeds 'easy ...' near the easy cluster, anything else near the hard one."""

    name = "test-embedder"

    def embed(self, texts: list[str]) -> np.ndarray:
        return np.stack([unit(1, 0.1) if t.startswith("easy") else unit(0.1, 1) for t in texts])


def test_chat_router_is_fail_safe() -> None:
    assert ChatRouter().route("anything") == ChatRoute("full", "no chat router saved")
    assert ChatRouter(forced="direct").route("x").decision == "direct"
    broken = ChatRouter(KNOWN, Boom()).route("easy one")
    assert broken.decision == "full" and "embedder crashed" in broken.reason
    router = ChatRouter(KNOWN, Fixed())
    assert router.route("easy: add two numbers").decision == "direct"
    assert router.route("refactor this module").decision == "full"  # unrelated: not direct
    with pytest.raises(ValueError, match="route"):
        ChatRouter(forced="stop")  # type: ignore[arg-type]


def test_checkpoint_round_trip_and_rejections(tmp_path: Path) -> None:
    path = chat_router_path(tmp_path)
    path.parent.mkdir()
    save_chat_router(path, KNOWN)
    loaded = load_chat_router(path, "test-embedder")
    assert np.allclose(loaded.vectors, KNOWN.vectors, atol=1e-6)
    assert loaded.decide(unit(1, 0.1)) == KNOWN.decide(unit(1, 0.1))
    with pytest.raises(CheckpointError, match="built with"):
        load_chat_router(path, "another-embedder")
    data = json.loads(path.read_text())
    for broken in (
        {**data, "schema": "other"},
        {**data, "direct_passed": data["direct_passed"][:-1]},
        {**data, "vectors": [[float("nan"), 1.0]] * len(data["vectors"])},
        {**data, "config": {"k": -1}},
    ):
        path.write_text(json.dumps(broken))
        with pytest.raises(CheckpointError):
            load_chat_router(path)
    path.write_text("{not json")
    with pytest.raises(CheckpointError, match="unreadable"):
        load_chat_router(path)
    router = ChatRouter.from_home(tmp_path, Fixed())
    assert router.route("easy").decision == "full" and "unusable" in router.route("easy").reason
    assert ChatRouter.from_home(tmp_path / "none", Fixed()).route("x").reason == (
        "no chat router saved"
    )


def pairs_and_vectors(n: int, *, easy_direct: bool) -> tuple[list[ChatPair], np.ndarray]:
    rng = np.random.default_rng(0)
    pairs, vectors = [], []
    for i in range(n):
        easy = i % 2 == 0
        base = np.array([1.0, 0.0] if easy else [0.0, 1.0])
        vectors.append(unit(*(base + rng.normal(0, 0.05, 2))))
        direct = easy and easy_direct
        pairs.append(ChatPair(f"s/{i}", f"request {i}", direct, 100.0, True, 400.0))
    return pairs, np.stack(vectors)


def test_train_promotes_a_router_that_saves_tokens_without_losing_passes() -> None:
    # the gate's 2-point non-inferiority margin needs about 183 pairs without a lost pass
    pairs, vectors = pairs_and_vectors(200, easy_direct=True)
    _, report = train_chat_router(pairs, vectors, "test-embedder")
    assert report.requests == 200 and report.decisions == {"direct": 100, "full": 100}
    assert report.pass_full == report.pass_routed == 1.0 and report.pass_direct == 0.5
    assert report.savings == pytest.approx(1 - 250 / 400)
    assert report.promote and "PROMOTE" in report.verdict
    assert "keep incumbent" in report.direct_verdict  # always-direct loses half the passes
    few, few_vectors = pairs_and_vectors(80, easy_direct=True)
    _, small = train_chat_router(few, few_vectors, "test-embedder")
    assert small.savings == report.savings and small.pass_routed == 1.0
    assert not small.promote  # same savings, no lost pass, but 80 pairs cannot show it


def test_train_keeps_the_loop_when_direct_never_passes() -> None:
    pairs, vectors = pairs_and_vectors(40, easy_direct=False)
    _, report = train_chat_router(pairs, vectors, "test-embedder")
    assert report.decisions == {"direct": 0, "full": 40}
    assert report.savings == 0 and not report.promote


def test_train_needs_enough_pairs() -> None:
    pairs, vectors = pairs_and_vectors(6, easy_direct=True)
    with pytest.raises(NotEnoughDataError, match="answered both ways"):
        train_chat_router(pairs, vectors, "test-embedder")


def record_run(store: Store, route: str, outcomes: dict[str, bool], tokens: int) -> str:
    run_id = create_run(
        store,
        suite="humaneval",
        runner="inprocess",
        model="m",
        seed=0,
        version="0",
        config={"route": route},
    )
    for task_id, passed in outcomes.items():
        trajectory = store.append_trajectory(
            Trajectory(
                session_id=f"{route}-{task_id}",
                task_kind="eval",
                model="m",
                user_request=f"easy {task_id}" if passed else f"hard {task_id}",
                outcome=Outcome.PASSED if passed else Outcome.FAILED,
            )
        )
        add_result(
            store,
            run_id,
            TaskResult(
                task_id, passed, float(passed), tokens, 10, 1.0, trajectory_id=trajectory.id
            ),
        )
    finish_run(store, run_id, "completed")
    return run_id


def test_chat_pairs_and_learn_from_real_eval_runs(store: Store, tmp_path: Path) -> None:
    tasks = [f"T/{i}" for i in range(24)]
    record_run(store, "full", dict.fromkeys(tasks, True), 390)
    record_run(store, "direct", {t: i % 2 == 0 for i, t in enumerate(tasks)}, 90)
    record_run(store, "auto", dict.fromkeys(tasks, False), 5)  # not a forced arm: ignored
    pairs = chat_pairs(store)
    assert len(pairs) == 24 and all(p.full_passed and p.full_tokens == 400 for p in pairs)
    assert sum(p.direct_passed for p in pairs) == 12
    config = ChatRouterConfig(k=3)
    report = learn_chat_router(chat_pairs(store), tmp_path, Fixed(), config)
    assert report.decisions == {"direct": 12, "full": 12} and report.pass_routed == 1.0
    assert report.savings == pytest.approx(0.375)
    # no lost pass, 37.5% saved, but 24 pairs cannot show non-inferiority: not written
    assert not report.promote and not report.saved
    assert not chat_router_path(tmp_path).exists()
    forced = learn_chat_router(chat_pairs(store), tmp_path, Fixed(), config, force=True)
    assert forced.saved and forced.reason == "saved with --force" and forced.version == 1
    again = learn_chat_router(chat_pairs(store), tmp_path, HashingEmbedder(), config, force=True)
    assert again.version == 2
    router = ChatRouter.from_home(tmp_path, HashingEmbedder())
    assert router.route("easy T/0").decision == "direct"  # its own request: all neighbours
    learn_chat_router(chat_pairs(store), tmp_path, Fixed(), config, force=True)
    router = ChatRouter.from_home(tmp_path, Fixed())
    assert router.route("easy T/0").decision == "direct"
    assert router.route("hard T/1").decision == "full"
    assert ChatRouter.from_home(tmp_path, HashingEmbedder()).route("x").decision == "full"


def test_learn_without_pairs_needs_more_data(store: Store, tmp_path: Path) -> None:
    with pytest.raises(NotEnoughDataError):
        learn_chat_router(chat_pairs(store), tmp_path, Boom())  # the embedder is never called
