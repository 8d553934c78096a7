"""llama.cpp's instruction sets chosen from the CPU (`llm._cpu`); the installed build checked."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from nightschool.llm import _cpu

SCRIPT = Path(_cpu.__file__)

AVX512_CPU = """processor\t: 0
vendor_id\t: AuthenticAMD
flags\t\t: fpu sse4_2 avx avx2 fma f16c bmi2 avx_vnni avx512f avx512cd avx512vl avx512dq \
avx512bw avx512vbmi avx512_vnni avx512_bf16 amx_tile amx_int8 amx_bf16
"""
AVX2_CPU = "flags\t\t: fpu sse4_2 avx avx2 fma f16c bmi2\n"


def test_the_flags_line_is_read_and_absent_without_one() -> None:
    flags = _cpu.cpu_flags(AVX512_CPU)
    assert flags is not None and {"avx512f", "avx512_vnni", "amx_int8"} <= flags
    assert _cpu.cpu_flags("processor\t: 0\nmodel name\t: Apple M2\n") is None


def test_each_set_the_cpu_has_is_on_every_other_off_and_amx_never() -> None:
    args = _cpu.cmake_args(_cpu.cpu_flags(AVX512_CPU)).split()
    assert args[0] == "-DGGML_NATIVE=OFF"
    assert "-DGGML_AVX512=ON" in args and "-DGGML_AVX512_VNNI=ON" in args
    assert "-DGGML_AVX_VNNI=ON" in args
    assert {"-DGGML_AMX_TILE=OFF", "-DGGML_AMX_INT8=OFF", "-DGGML_AMX_BF16=OFF"} <= set(args)
    assert not any("AMX" in a and a.endswith("=ON") for a in args)
    plain = _cpu.cmake_args(_cpu.cpu_flags(AVX2_CPU)).split()
    assert "-DGGML_AVX2=ON" in plain and "-DGGML_AVX512=OFF" in plain
    assert "-DGGML_AVX512_VNNI=OFF" in plain and "-DGGML_AVX_VNNI=OFF" in plain
    # unknown CPU: ggml's defaults, as the install did before
    assert _cpu.cmake_args(None) == "-DGGML_NATIVE=OFF " + " ".join(
        f"-D{o}=OFF" for o in _cpu.ALWAYS_OFF
    )


def test_a_set_is_on_only_with_every_flag_and_the_sets_it_builds_on() -> None:
    partial = frozenset({"avx", "avx2", "avx512f", "avx512_vnni"})  # no avx512bw, cd, vl, dq
    chosen = _cpu.wanted(partial)
    assert chosen["GGML_AVX2"] and not chosen["GGML_AVX512"]
    assert not chosen["GGML_AVX512_VNNI"]  # needs GGML_AVX512
    assert not _cpu.wanted(frozenset({"avx_vnni"}))["GGML_AVX_VNNI"]  # needs AVX2


def test_a_build_is_compared_with_the_cpu_both_ways() -> None:
    avx2_build = "CPU : SSE3 = 1 | AVX = 1 | AVX2 = 1 | F16C = 1 | FMA = 1 | BMI2 = 1 | REPACK = 1"
    flags = _cpu.cpu_flags(AVX512_CPU)
    assert flags is not None
    slower = _cpu.compare(flags, avx2_build)
    assert slower.unused == ("AVX_VNNI", "AVX512", "AVX512_VBMI", "AVX512_VNNI", "AVX512_BF16")
    assert slower.foreign == () and not slower.matches
    full = avx2_build + " | AVX_VNNI = 1 | AVX512 = 1 | AVX512_VBMI = 1 | AVX512_VNNI = 1 |"
    assert _cpu.compare(flags, full + " AVX512_BF16 = 1 |").matches
    avx2_flags = _cpu.cpu_flags(AVX2_CPU)
    assert avx2_flags is not None
    crashes = _cpu.compare(avx2_flags, full + " AMX_INT8 = 1 |")
    assert crashes.foreign == ("AVX_VNNI", "AVX512", "AVX512_VBMI", "AVX512_VNNI", "AMX_INT8")
    assert crashes.unused == ()


def test_the_note_of_a_failed_cpu_build_is_read_back(tmp_path: Path) -> None:
    assert _cpu.failed_cpu_build(tmp_path) is None  # no note: the build for this CPU is in use
    args = _cpu.cmake_args(_cpu.cpu_flags(AVX512_CPU))
    (tmp_path / _cpu.FALLBACK_MARKER).write_text(args + "\n", encoding="utf-8")
    assert _cpu.failed_cpu_build(tmp_path) == args
    (tmp_path / _cpu.FALLBACK_MARKER).write_text("", encoding="utf-8")
    assert _cpu.failed_cpu_build(tmp_path) is None
    install = (SCRIPT.parents[3] / "scripts" / "install.sh").read_text(encoding="utf-8")
    assert f".venv/{_cpu.FALLBACK_MARKER}" in install  # the script writes the file read here


def test_the_installed_build_uses_this_cpus_sets_and_decodes() -> None:
    """e2e: the llama-cpp-python that scripts/install.sh built, on this machine's CPU."""
    result = _cpu.check_installed()
    assert result is None or result.matches, result  # None: no /proc/cpuinfo here
    # the script runs on the system's python before nightschool is installed (stdlib only)
    args = subprocess.run(
        ["python3", str(SCRIPT), "cmake-args"], capture_output=True, text=True, check=True
    ).stdout
    assert args.startswith("-DGGML_NATIVE=OFF") and "-DGGML_AMX_INT8=OFF" in args
    check = subprocess.run([sys.executable, str(SCRIPT), "check"], capture_output=True, text=True)
    assert check.returncode == 0, check.stdout
    smoke = subprocess.run(
        [sys.executable, "-m", "nightschool.llm._cpu", "smoke"], capture_output=True, text=True
    )
    assert smoke.returncode == 0 and smoke.stdout.strip().startswith("'"), smoke.stderr[-2000:]
    usage = subprocess.run([sys.executable, str(SCRIPT)], capture_output=True, text=True)
    assert usage.returncode == 2 and "cmake-args|check|smoke" in usage.stderr
