from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime

import numpy as np
import pytest

from nightschool.playbook import (
    PLAYBOOK_HEADER,
    Embedder,
    HashingEmbedder,
    Lesson,
    RetrievedLesson,
    format_playbook,
)
from nightschool.playbook._index import VectorIndex


def _unit(rows: np.ndarray) -> np.ndarray:
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


def test_hashing_embedder_is_deterministic_and_normalised() -> None:
    emb = HashingEmbedder()
    assert isinstance(emb, Embedder)
    texts = ["When sorting rows by score", "", "!!!", "sorting sorted sorts"]
    a, b = emb.embed(texts), HashingEmbedder().embed(texts)
    assert a.shape == (4, 512) and a.dtype == np.float32
    assert np.array_equal(a, b)
    assert np.linalg.norm(a[0]) == pytest.approx(1.0, abs=1e-6)
    assert not a[1].any() and not a[2].any()
    assert float(a[0] @ a[3]) > 0.2  # trigrams tie morphological variants together
    assert emb.embed([]).shape == (0, 512)


def test_index_search_add_remove_and_ties() -> None:
    index = VectorIndex(4, exact_max=1000)
    vecs = _unit(np.array([[1, 0, 0, 0], [1, 0, 0, 0], [0, 1, 0, 0], [1, 1, 0, 0]], float))
    for key, vec in zip([30, 10, 20, 40], vecs, strict=True):
        index.add(key, vec)
    keys, scores = index.search(vecs[0], 3)
    assert keys.tolist() == [10, 30, 40]  # equal scores: the smaller key first
    assert scores[0] == pytest.approx(1.0)
    index.remove([10, 999])
    assert 10 not in index and len(index) == 3
    assert index.search(vecs[0], 1)[0].tolist() == [30]
    assert index.scores(vecs[2], [20, 10]) == {20: pytest.approx(1.0)}
    index.add(30, vecs[2])  # replace
    assert index.search(vecs[2], 2)[0].tolist() == [20, 30]
    assert VectorIndex(4).search(vecs[0], 3)[0].size == 0


def test_prefilter_agrees_with_exact_search() -> None:
    rng = np.random.default_rng(0)
    centers = rng.normal(size=(50, 64))
    data = _unit(centers[rng.integers(0, 50, 20_000)] + 0.6 * rng.normal(size=(20_000, 64)))
    exact = VectorIndex(64, exact_max=10**9)
    approx = VectorIndex(64, exact_max=1_000, shortlist=2_000)
    exact.reset(range(len(data)), data)
    for key, vec in enumerate(data):
        approx.add(key, vec)
    overlap = []
    for q in _unit(centers[:20] + 0.6 * rng.normal(size=(20, 64))):
        want = set(exact.search(q, 10)[0].tolist())
        got = set(approx.search(q, 10)[0].tolist())
        overlap.append(len(want & got) / 10)
    assert np.mean(overlap) >= 0.9
    approx.remove(range(0, 20_000, 2))
    keys, _ = approx.search(data[1], 5)
    assert keys[0] == 1 and all(k % 2 == 1 for k in keys)


def _retrieved(**kw: object) -> RetrievedLesson:
    now = datetime.now(UTC)
    fields: dict[str, object] = {
        "id": "L-3f2a9c1d0000",
        "trigger": "When joining tables",
        "anti_pattern": "Filtering the right table in WHERE",
        "correct_pattern": "Put the condition in ON.",
        "domains": ["sql"],
        "confidence": 0.5,
        "source": "manual",
        "created_at": now,
        "updated_at": now,
    }
    fields.update(kw)
    lesson = Lesson(**fields)  # type: ignore[arg-type]
    return RetrievedLesson(lesson=lesson, score=1.0, bm25_score=1.0, vector_score=0.5, rank=1)


def test_format_playbook() -> None:
    assert format_playbook([]) == ""
    text = format_playbook(
        [
            _retrieved(),
            _retrieved(
                id="L-000000000001",
                trigger="sorting by two keys",
                anti_pattern="",
                code_example="rows.sort(key=lambda r: (-r.score, r.name))",
            ),
        ]
    )
    lines = text.splitlines()
    assert lines[0] == PLAYBOOK_HEADER == "### SKILL PLAYBOOK"
    assert lines[1] == (
        "[L-3f2a9c1d0000] When joining tables: avoid filtering the right table in WHERE; "
        "instead put the condition in ON."
    )
    assert lines[2].startswith("[L-000000000001] When sorting by two keys: instead put")
    assert lines[3].startswith("    e.g. `rows.sort(")


def test_format_playbook_is_compact() -> None:
    long = " ".join(["word"] * 400)
    text = format_playbook(
        [_retrieved(trigger=long, anti_pattern=long, correct_pattern=long, code_example=long)]
    )
    assert len(text.split()) <= 3 + 130
    assert "..." in text


def test_import_loads_no_model() -> None:
    code = (
        "import sys, nightschool.playbook as m; "
        "heavy = [x for x in ('onnxruntime', 'tokenizers', 'torch', 'llama_cpp') "
        "if x in sys.modules]; print(heavy)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
