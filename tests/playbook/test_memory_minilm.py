"""The packaged embedding model (all-MiniLM-L6-v2 int8 ONNX), end to end.

Skipped only when its packages are not installed (they are dependencies of
nightschool, so a normal install runs these tests).
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from bench.data.retrieval_evalset import LESSONS
from bench.data.retrieval_reworded import REWORDED
from bench.data.unrelated_requests import UNRELATED_REQUESTS

from nightschool.errors import UserError
from nightschool.playbook import (
    DEFAULT_EMBEDDER_NAME,
    Embedder,
    MiniLMEmbedder,
    SkillMemory,
    _minilm,
    default_embedder,
)
from nightschool.store import Store

MISSING = _minilm.missing_packages()
needs_model = pytest.mark.skipif(
    bool(MISSING), reason=f"embedding model packages not installed: {', '.join(MISSING)}"
)


@pytest.fixture(scope="module")
def minilm() -> Embedder:
    if MISSING:
        pytest.skip(f"embedding model packages not installed: {', '.join(MISSING)}")
    return default_embedder()


@needs_model
def test_vectors_are_unit_norm_and_deterministic(minilm: Embedder) -> None:
    assert isinstance(minilm, MiniLMEmbedder)
    assert (minilm.name, minilm.dim) == (DEFAULT_EMBEDDER_NAME, 384)
    texts = ["how do I rename files in bash", "", "When renaming many files in a shell"]
    a, b = minilm.embed(texts), minilm.embed(list(reversed(texts)))[::-1]
    assert a.shape == (3, 384) and a.dtype == np.float32
    assert np.allclose(np.linalg.norm(a, axis=1), 1.0, atol=1e-5)
    assert np.allclose(a, b, atol=1e-5)
    assert float(a[0] @ a[2]) > float(a[0] @ a[1])
    assert minilm.embed([]).shape == (0, 384)


@needs_model
def test_paraphrased_requests_find_their_lessons(store: Store, minilm: Embedder) -> None:
    memory = SkillMemory(store, minilm)
    for item in LESSONS:
        result = memory.learn(
            trigger=item.trigger,
            anti_pattern=item.anti_pattern,
            correct_pattern=item.correct_pattern,
            domains=list(item.domains),
            source="manual",
            source_trajectory_id=item.key,
        )
        assert result.status == "written", (item.key, result.reason)
    found = []
    for item in LESSONS:
        got = memory.retrieve(item.queries[0], k=5)
        found.append(item.key in [r.lesson.source_trajectory_id for r in got])
    # 0.68 with 600 synthetic distractors added (bench/bench_retrieval.py).
    assert np.mean(found) >= 0.7
    top = memory.retrieve("my script runs out of RAM on a 20 GB input", k=1)
    assert top[0].lesson.source_trajectory_id == "da-big-file"  # no shared content word


@needs_model
def test_unrelated_requests_get_nothing_with_the_real_model(store: Store, minilm: Embedder) -> None:
    memory = SkillMemory(store, minilm)  # production floors: the embedder's own
    for item in LESSONS:
        memory.learn(
            trigger=item.trigger,
            anti_pattern=item.anti_pattern,
            correct_pattern=item.correct_pattern,
            domains=list(item.domains),
            source="manual",
            source_trajectory_id=item.key,
        )
    for request in (
        "what's the capital of France",
        "write a haiku about rain",
        "how do I center a div in CSS",
        "explain the Rust borrow checker and lifetimes",
        "how do I train a convolutional neural network on images",
    ):
        assert memory.retrieve(request, k=3) == [], request
        assert memory.retrieve(request, k=3, cluster="python_general") == [], request
    rejected = [memory.retrieve(q, k=3) == [] for q in UNRELATED_REQUESTS]
    assert np.mean(rejected) >= 0.9  # measured 0.99 among these 74 lessons
    found = [
        item.key in [r.lesson.source_trajectory_id for r in memory.retrieve(q, k=5)]
        for item in LESSONS
        for q in (*item.queries, *item.keyword_queries)
    ]
    assert np.mean(found) >= 0.85  # measured 0.93
    got = memory.retrieve("my script runs out of RAM on a 20 GB input", k=1)
    assert [r.lesson.source_trajectory_id for r in got] == ["da-big-file"]

    for template, summary, code in (
        ("algo.merge_intervals", "Merge overlapping intervals.", "print('merged')"),
        ("sql.customer_totals", "Report how much each customer spent.", "print('totals')"),
        ("bash.word_freq", "Find the 5 most frequent words of a text.", "tr -cs a-z '\\n'"),
    ):
        result = memory.learn_skill(
            summary=summary,
            code=code,
            domains=[template.split(".")[0]],
            source_trajectory_id=f"t-{template}",
            challenge_hash=f"h-{template}",
            template=template,
        )
        assert result.status == "written"
    prompt = (
        "Merge overlapping intervals. Two closed intervals overlap when they share at "
        "least one point. Input: `intervals.txt`, one interval per line."
    )
    got = memory.retrieve(prompt, k=2, kind="skill")
    assert [r.lesson.template for r in got] == ["algo.merge_intervals"]
    assert (
        memory.retrieve(
            prompt, k=2, kind="skill", exclude_challenge_hashes=["h-algo.merge_intervals"]
        )
        == []
    )
    for request in ("what's the capital of France", "write a haiku about rain"):
        assert memory.retrieve(request, k=2, kind="skill") == [], request


@needs_model
def test_close_rewording_reinforces_and_distinct_lesson_is_written(
    store: Store, minilm: Embedder
) -> None:
    memory = SkillMemory(store, minilm)
    first = memory.learn(
        trigger="When several threads update a shared counter",
        anti_pattern="counter += 1 without synchronisation, which loses updates",
        correct_pattern="guard the read-modify-write with a threading.Lock",
        domains=["concurrency"],
        source="reflection",
        source_trajectory_id="t-1",
    )
    again = memory.learn(
        trigger="When several threads update one shared counter",
        anti_pattern="counter += 1 with no synchronisation, which loses updates",
        correct_pattern="guard the read-modify-write with a threading.Lock",
        domains=["concurrency"],
        source="selfplay",
        source_trajectory_id="t-2",
    )
    assert again.status == "reinforced" and again.lesson_id == first.lesson_id
    for reworded in REWORDED[:5]:
        other = memory.learn(
            trigger=reworded.trigger,
            anti_pattern=reworded.anti_pattern,
            correct_pattern=reworded.correct_pattern,
            domains=["python_general"],
            source="manual",
        )
        assert other.status == "written", reworded.key
    assert memory.count() == 6


@needs_model
def test_loading_writes_nothing_to_home(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    code = (
        "from nightschool.playbook import default_embedder; "
        "print(default_embedder().embed(['hello']).shape)"
    )
    env = {k: v for k, v in os.environ.items() if k != "ORT_DISABLE_TELEMETRY"}
    env.update(HOME=str(home), XDG_CACHE_HOME=str(home / ".cache"))
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    )
    assert out.stdout.strip() == "(1, 384)"
    assert out.stderr == ""
    assert list(home.rglob("*")) == []


def test_missing_package_is_a_user_error_with_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec

    def fake(name: str, *args: object) -> object:
        return None if name == "onnxruntime" else real(name, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(importlib.util, "find_spec", fake)
    with pytest.raises(UserError) as caught:
        default_embedder()
    assert "onnxruntime" in caught.value.message
    assert caught.value.hint is not None and "pip install" in caught.value.hint
    with pytest.raises(UserError):
        MiniLMEmbedder().embed(["x"])


def test_model_file_hash_is_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    if MISSING:
        pytest.skip(f"embedding model packages not installed: {', '.join(MISSING)}")
    _minilm._verified_model_path.cache_clear()
    monkeypatch.setattr(_minilm, "MODEL_SHA256", "0" * 64)
    try:
        with pytest.raises(UserError, match="not the expected model"):
            MiniLMEmbedder().embed(["x"])
    finally:
        _minilm._verified_model_path.cache_clear()
