"""The default embedded model for real: assemble Qwen2.5-Coder-0.5B from its six packages,
load it once, check its provenance and get a trivial answer."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from nightschool.llm import EmbeddedConfig, EmbeddedModel
from nightschool.llm.catalog import QWEN_CODER_05B, SplitFile, resolve_model_file

assert isinstance(QWEN_CODER_05B.source, SplitFile)
PACKAGES = [part.package for part in QWEN_CODER_05B.source.parts]
MISSING = [name for name in PACKAGES if importlib.util.find_spec(name) is None]

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(
        importlib.util.find_spec("llama_cpp") is None, reason="llama_cpp is not importable"
    ),
    pytest.mark.skipif(bool(MISSING), reason=f"not installed: {', '.join(MISSING)}"),
]


def test_default_model_assembles_loads_and_answers(tmp_path: Path) -> None:
    models = tmp_path / "models"
    notes: list[str] = []
    model = EmbeddedModel(EmbeddedConfig(models_dir=models, n_ctx=1024), on_progress=notes.append)
    assert model.name == "qwen2.5-coder-0.5b"
    with model:
        reply = model.complete(
            [{"role": "user", "content": "What is 2 + 2? Answer with the number only."}],
            temperature=0.0,
            max_tokens=16,
        )
        assert model.model_file is not None
        target = model.model_file
        assert target == (models / QWEN_CODER_05B.source.filename).resolve()
        assert target.stat().st_size == 491_400_064
        assert model.metadata_name == "Qwen2.5 Coder 0.5B Instruct AWQ"
    assert notes == [f"assembling qwen2.5-coder-0.5b (491 MB) into {target}"]
    sidecar = target.with_name(target.name + ".sha256").read_text().split()
    assert sidecar[0] == QWEN_CODER_05B.sha256
    assert not any(name in sys.modules for name in PACKAGES)  # located, never imported
    assert "4" in reply.text and reply.model == "qwen2.5-coder-0.5b"
    assert 0 < reply.tokens_out <= 16 and reply.finish_reason in {"stop", "length"}

    # Later loads only look at the cached file: no note, no second assembly.
    again: list[str] = []
    assert resolve_model_file(QWEN_CODER_05B, models, on_progress=again.append) == target
    assert again == []
