"""The split embedded models for real: assemble each from its packages, load it
once, check its provenance and get a trivial answer. The default
(Qwen2.5-Coder-1.5B, 22 packages) and the 0.5B (six packages)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from nightschool.config import DEFAULT_EMBEDDED_MODEL
from nightschool.llm import EmbeddedConfig, EmbeddedModel
from nightschool.llm.catalog import (
    QWEN_CODER_05B,
    QWEN_CODER_15B,
    CatalogEntry,
    SplitFile,
    resolve_model_file,
)


def _packages(entry: CatalogEntry) -> list[str]:
    assert isinstance(entry.source, SplitFile)
    return [part.package for part in entry.source.parts]


MISSING = [
    name
    for entry in (QWEN_CODER_15B, QWEN_CODER_05B)
    for name in _packages(entry)
    if importlib.util.find_spec(name) is None
]

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(
        importlib.util.find_spec("llama_cpp") is None, reason="llama_cpp is not importable"
    ),
    pytest.mark.skipif(bool(MISSING), reason=f"not installed: {', '.join(MISSING)}"),
]


@pytest.mark.parametrize(
    ("entry", "size", "metadata", "megabytes"),
    [
        (QWEN_CODER_15B, 1_117_320_768, "Qwen2.5 Coder 1.5B Instruct GGUF", 1117),
        (QWEN_CODER_05B, 491_400_064, "Qwen2.5 Coder 0.5B Instruct AWQ", 491),
    ],
    ids=["default-1.5b", "0.5b"],
)
def test_split_model_assembles_loads_and_answers(
    tmp_path: Path, entry: CatalogEntry, size: int, metadata: str, megabytes: int
) -> None:
    models = tmp_path / "models"
    notes: list[str] = []
    config = EmbeddedConfig(model=entry.name, models_dir=models, n_ctx=1024)
    if entry.name == DEFAULT_EMBEDDED_MODEL:
        config = EmbeddedConfig(models_dir=models, n_ctx=1024)  # no name: the default
    model = EmbeddedModel(config, on_progress=notes.append)
    assert model.name == entry.name
    with model:
        reply = model.complete(
            [{"role": "user", "content": "What is 2 + 2? Answer with the number only."}],
            temperature=0.0,
            max_tokens=16,
        )
        assert model.model_file is not None
        target = model.model_file
        assert isinstance(entry.source, SplitFile)
        assert target == (models / entry.source.filename).resolve()
        assert target.stat().st_size == size
        assert model.metadata_name == metadata
    assert notes == [f"assembling {entry.name} ({megabytes} MB) into {target}"]
    sidecar = target.with_name(target.name + ".sha256").read_text().split()
    assert sidecar[0] == entry.sha256
    assert not any(name in sys.modules for name in _packages(entry))  # located, never imported
    assert "4" in reply.text and reply.model == entry.name
    assert 0 < reply.tokens_out <= 16 and reply.finish_reason in {"stop", "length"}

    # Later loads only look at the cached file: no note, no second assembly.
    again: list[str] = []
    assert resolve_model_file(entry, models, on_progress=again.append) == target
    assert again == []
