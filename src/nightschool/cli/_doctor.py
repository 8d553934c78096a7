"""`nightschool doctor`: is this machine ready? Sandbox, model, browser, database, telemetry, disk.

Each check is cheap (about a second in all) and says how to fix what it finds:

- sandbox (`_doctor_sandbox`): one run of a hostile probe through the real `Sandbox.run`; it tries
  to connect to a listener on the host's loopback and on the host's own
  non-loopback address, to write a file into a host directory outside its
  workspace, and reads a secret planted in the parent's environment. The
  listeners' accept queues and the file system are inspected from the host,
  so a probe that lies cannot pass; it also reports its uid and rlimits. The
  line names the bound on a whole run in force (cgroup2, cgroup1 or the
  fallback's host-side watch: memory and tasks per run) and the tmpfs inode bound.
- model: the files of the model the settings select are present (packaged,
  assembled, or every part installed with the right total size) and start with
  a valid GGUF header whose `general.name` is the catalog's. Nothing is loaded
  or hashed. A `--base-url` server gets its `GET /models` preflight, under the
  egress guard.
- llama.cpp (embedded models): the instruction sets llama-cpp-python was built
  with against this CPU's (`llm._cpu`): sets left out are a warning, sets the CPU
  lacks a failure.
- browser: Chromium and Playwright for the `browser` tool and the
  `web_automation` cluster: a real headless start that opens a page served on
  loopback (`browser.probe_browser`, about 2-4 s, the slowest check). Missing
  is a warning (both are optional: dream then leaves the cluster out);
  installed but not starting is a failure.
- database: opened read-only; `PRAGMA integrity_check`; migrations current.
- telemetry: the opt-outs of `privacy.TELEMETRY_OPT_OUTS` are in force.
- disk: free space where the home directory and sandbox workspaces live.

Exit codes (`nightschool.errors.EXIT_CODES`): 0 nothing failed (warnings
allowed); 1 telemetry or disk failed; 3 the sandbox, the model, llama.cpp's build or an
installed browser is unusable;
4 the database is unusable; several failures: the highest of their codes.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import tempfile
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from nightschool.cli._common import (
    NO_MODEL_CHOICE,
    ModelChoice,
    with_model_options,
)
from nightschool.cli._doctor_sandbox import Check, check_sandbox
from nightschool.config import Settings
from nightschool.errors import EXIT_CODES, NightschoolError, UserError
from nightschool.privacy import no_external_network, telemetry_report

if TYPE_CHECKING:
    from nightschool.llm._gguf import GgufHeader


MIN_FREE_HOME_BYTES = 1 << 30
"""Free space the home directory needs besides a model still to be assembled (1 GiB)."""

MIN_FREE_TEMP_BYTES = 256 << 20
"""Free space where sandbox workspaces are created (256 MiB, one run's write bound)."""


# -- model ----------------------------------------------------------------------------------


def check_model(settings: Settings) -> tuple[Check, int]:
    """Check the selected model's files (or server) without loading anything.

    Returns:
        The `model` line, and the bytes a first use would still write to the
        model cache (a split model not yet assembled), for the disk check.
    """
    # function-local: CLI start-up time (llm loads httpx, ~60 modules, ~100 ms)
    from nightschool.llm import catalog
    from nightschool.llm._gguf import read_gguf_header, read_head

    infra = EXIT_CODES["infrastructure"]
    if settings.base_url is not None:
        return _check_server(settings), 0
    try:
        if settings.model_path is not None:
            path = settings.model_path.expanduser()
            header = read_gguf_header(read_head([path]))
            return Check("model", "ok", f"{path}: {_describe(header)}; {_decoding(settings)}"), 0
        entry = catalog.lookup_model(settings.model)
        state, target, files = catalog.model_files(entry, settings.models_dir())
        pending = entry.size_bytes if state == "installed" else 0
        if state == "installed":
            where = f"{len(files)} parts installed, assembled into {target} on first use"
        elif isinstance(entry.source, catalog.PackagedFile):
            where = f"{target} (packaged)"
        else:
            where = f"{target} (assembled)"
        total = sum(path.stat().st_size for path in files)
        if total != entry.size_bytes:
            raise ValueError(f"{total} bytes on disk, the catalog says {entry.size_bytes}")
        header = read_gguf_header(read_head(files))
    except UserError as exc:
        return Check("model", "fail", exc.message, exc.hint, infra), 0
    except (OSError, ValueError) as exc:
        fix = "reinstall its packages: `pip install --force-reinstall` (`nightschool models`)"
        if settings.model_path is not None:
            fix = "give --model-path a llama.cpp GGUF file (version 2 or 3)"
        return Check(
            "model", "fail", f"{settings.model_path or settings.model}: {exc}", fix, infra
        ), 0
    if header.name is not None and header.name != entry.metadata_name:
        return Check(
            "model",
            "fail",
            f"{entry.name}: the file says it is {header.name!r}, not {entry.metadata_name!r}",
            "reinstall the model's packages at the versions nightschool pins",
            infra,
        ), 0
    detail = f"{entry.name}: {where}; {_describe(header)}; {_decoding(settings)}"
    return Check("model", "ok", detail), pending


def _decoding(settings: Settings) -> str:
    """How the embedded model will decode: threads chosen now and why, prefix reuse."""
    # function-local: CLI start-up time (llm loads httpx, ~60 modules, ~100 ms)
    from nightschool.llm._prefix import PREFIX_STATES, PREFIX_STATES_BYTES
    from nightschool.llm._threads import choose_threads

    choice = choose_threads(settings.threads)
    how = "fixed" if settings.threads else "chosen per call (NIGHTSCHOOL_THREADS fixes it)"
    reuse = "off (NIGHTSCHOOL_REUSE_PREFIX=0)"
    if settings.reuse_prefix:
        reuse = (
            f"on, saved states of up to {PREFIX_STATES} prompts in {PREFIX_STATES_BYTES >> 20} MiB"
        )
    return f"threads {how}, now {choice.reason}; KV prefix reuse {reuse}"


def _describe(header: GgufHeader) -> str:
    name = f"{header.name!r}, " if header.name else ""
    return f"GGUF v{header.version}, {name}{header.tensors} tensors"


def _check_server(settings: Settings) -> Check:
    """`GET /models` on the configured server, under the egress guard."""
    # function-local: CLI start-up time (llm loads httpx, ~60 modules, ~100 ms)
    from nightschool.llm import check_model as preflight
    from nightschool.llm import make_model

    try:
        with no_external_network():
            preflight(make_model(settings))
    except NightschoolError as exc:
        return Check("model", "fail", exc.message, exc.hint, EXIT_CODES["infrastructure"])
    return Check("model", "ok", f"{settings.model} on {settings.base_url} answers")


def check_llama_build() -> Check:
    """The instruction sets llama.cpp was built with against this CPU's (`llm._cpu`).

    Loads llama-cpp-python's library (no model). A build leaving out sets the CPU
    has is a warning (slower: prompt reading 1.9x, measured for AVX-512); one using
    sets the CPU lacks is a failure (it may crash mid-decode).
    """
    # function-local: CLI start-up time (loading llama.cpp's library)
    from nightschool.llm._cpu import FALLBACK_MARKER, check_installed, failed_cpu_build

    fix = "bash scripts/install.sh (it rebuilds llama-cpp-python for this CPU)"
    try:
        result = check_installed()
    except (ImportError, OSError, RuntimeError) as exc:  # llama_cpp: RuntimeError, no library
        return Check(
            "llama.cpp", "fail", f"llama-cpp-python does not load: {exc}", fix,
            EXIT_CODES["infrastructure"],
        )  # fmt: skip
    if result is None:
        return Check("llama.cpp", "ok", "this CPU's instruction sets are unknown (no cpuinfo)")
    if result.foreign:
        return Check(
            "llama.cpp", "fail",
            f"built with {', '.join(result.foreign)}, which this CPU lacks: it may crash",
            fix, EXIT_CODES["infrastructure"],
        )  # fmt: skip
    if result.unused:
        detail = f"built without {', '.join(result.unused)}, which this CPU has: slower than it"
        detail += " could be (prompt reading up to 1.9x)"
        if failed_cpu_build() is not None:
            detail += "; the build for this CPU failed its decode test at install"
            fix = f"rm .venv/{FALLBACK_MARKER} && bash scripts/install.sh (tries it again)"
        return Check("llama.cpp", "warn", detail, fix)
    return Check("llama.cpp", "ok", "built for this CPU's instruction sets (AMX never)")


# -- browser --------------------------------------------------------------------------------


def check_browser() -> Check:
    """Start Chromium under Playwright and open a loopback page (`browser.probe_browser`)."""
    # function-local: CLI start-up time (the probe starts Playwright and Chromium)
    from nightschool.browser import (
        BrowserUnavailableError,
        check_playwright,
        find_chromium,
        probe_browser,
    )

    try:
        find_chromium()
        check_playwright()
    except BrowserUnavailableError as exc:
        detail = f"{exc.message}: `serve/chat --browser` cannot run and dream leaves out the "
        return Check("browser", "warn", detail + "web_automation cluster", exc.hint)
    try:
        probe = probe_browser()
    except BrowserUnavailableError as exc:
        return Check("browser", "fail", exc.message, exc.hint, EXIT_CODES["infrastructure"])
    return Check(
        "browser",
        "ok",
        f"{probe.executable} with Playwright {probe.playwright}: started headless and opened a "
        f"page on loopback in {probe.seconds:.1f} s (the browser tool and web_automation run)",
    )


# -- database, telemetry, disk --------------------------------------------------------------


def _newer_migrations(label: str, applied: list[str], hint: str) -> Check | None:
    """A failed check when the database at `label` has migrations this version does not know."""
    # function-local: CLI start-up time (the store compiles redact's patterns, ~70 ms)
    from nightschool.store import MIGRATIONS

    unknown = sorted(set(applied) - {name for name, _ in MIGRATIONS})
    if not unknown:
        return None
    return Check(
        "database",
        "fail",
        f"{label} was written by a newer nightschool (unknown migrations: {', '.join(unknown)})",
        hint,
        EXIT_CODES["store"],
    )


def _check_postgres(settings: Settings) -> Check:
    """Connect to NIGHTSCHOOL_DATABASE_URL; compare its migrations with this version's."""
    # function-local: CLI start-up time (psycopg, ~220 ms; Postgres only)
    from nightschool.store import MIGRATIONS, redact_url
    from nightschool.store._pg import PgConnection

    label = redact_url(settings.database_url or "")
    store_code = EXIT_CODES["store"]
    try:
        conn = PgConnection(settings.database_url or "")
    except sqlite3.Error as exc:
        return Check(
            "database",
            "fail",
            f"cannot reach the Postgres database {label}: {exc}",
            "check NIGHTSCHOOL_DATABASE_URL and that the server is running",
            store_code,
        )
    try:
        exists = conn.execute("SELECT to_regclass('schema_migrations')").fetchone()
        if not exists or exists[0] is None:
            return Check("database", "ok", f"{label} is empty; migrated on first use")
        applied = [row[0] for row in conn.execute("SELECT name FROM schema_migrations")]
    except sqlite3.Error as exc:
        return Check("database", "fail", f"{label} is not readable: {exc}", None, store_code)
    finally:
        conn.close()
    newer = _newer_migrations(label, applied, "upgrade nightschool (`pip install -U nightschool`)")
    if newer is not None:
        return newer
    pending = len([name for name, _ in MIGRATIONS if name not in applied])
    return Check(
        "database", "ok", f"Postgres {label}: {len(applied)} migrations, {pending} pending"
    )


def check_database(settings: Settings) -> Check:
    """Open the database read-only: integrity check, then migrations against this version's."""
    # function-local: CLI start-up time (the store compiles redact's patterns, ~70 ms)
    from nightschool.store import MIGRATIONS

    if settings.database_url:
        return _check_postgres(settings)
    path = settings.database_path()
    store_code = EXIT_CODES["store"]
    aside = f"move {path} aside (nightschool starts a new one) or restore it from a backup"
    if not path.exists():
        return Check("database", "ok", f"none yet at {path}; created on first use")
    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=10)
    except sqlite3.Error as exc:
        return Check("database", "fail", f"cannot open {path}: {exc}", aside, store_code)
    try:
        problems = [str(row[0]) for row in conn.execute("PRAGMA integrity_check(5)")]
        if problems != ["ok"]:
            return Check(
                "database", "fail", f"{path} is damaged: {'; '.join(problems)}", aside, store_code
            )
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
        if "schema_migrations" not in tables:
            if tables:
                return Check(
                    "database", "fail", f"{path} is not a nightschool database", aside, store_code
                )
            return Check("database", "ok", f"{path} is empty; migrated on first use")
        applied = [row[0] for row in conn.execute("SELECT name FROM schema_migrations")]
    except sqlite3.Error as exc:
        return Check("database", "fail", f"{path} is not readable: {exc}", aside, store_code)
    finally:
        conn.close()
    newer = _newer_migrations(
        str(path),
        applied,
        "upgrade nightschool (`pip install -U nightschool`) or set NIGHTSCHOOL_HOME elsewhere",
    )
    if newer is not None:
        return newer
    known = [name for name, _ in MIGRATIONS]
    pending = [name for name in known if name not in applied]
    size = path.stat().st_size / 1e6
    if pending:
        return Check(
            "database",
            "warn",
            f"{path} ({size:.1f} MB, integrity ok) lacks {len(pending)} migration(s): "
            f"{', '.join(pending)}",
            "any nightschool command that opens it applies them, e.g. `nightschool status`",
        )
    return Check(
        "database",
        "ok",
        f"{path}: {size:.1f} MB, integrity ok, all {len(known)} migrations applied",
    )


def check_telemetry() -> Check:
    """The telemetry opt-outs, as `privacy.telemetry_report` finds them in this process."""
    flags = telemetry_report()
    bad = [flag for flag in flags if not flag.ok]
    if not bad:
        names = ", ".join(f"{flag.name}={flag.wanted}" for flag in flags)
        return Check("telemetry", "ok", f"opted out: {names}")
    detail = "; ".join(f"{flag.name} {flag.detail}" for flag in bad)
    exports = " ".join(f"{flag.name}={flag.wanted}" for flag in bad)
    return Check(
        "telemetry",
        "fail",
        detail,
        f"run nightschool through its `nightschool` command (it sets them at start-up), or "
        f"export {exports} before Python starts",
    )


def _free_bytes(path: Path) -> tuple[Path, int]:
    """Free bytes on the file system of `path`, or of its nearest existing ancestor."""
    probe = path.expanduser().absolute()
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    return probe, shutil.disk_usage(probe).free


def check_disk(settings: Settings, pending_model_bytes: int = 0) -> Check:
    """Free space for the home directory (and a model still to assemble) and for workspaces."""
    home, home_free = _free_bytes(settings.home_dir())
    temp, temp_free = _free_bytes(Path(tempfile.gettempdir()))
    need_home = MIN_FREE_HOME_BYTES + pending_model_bytes
    short = []
    if home_free < need_home:
        reason = " (a model still to assemble included)" if pending_model_bytes else ""
        short.append(
            f"{home} has {home_free / 1e9:.2f} GB free, needs {need_home / 1e9:.2f}{reason}"
        )
    if temp_free < MIN_FREE_TEMP_BYTES:
        short.append(
            f"{temp} (sandbox workspaces) has {temp_free / 1e6:.0f} MB free, "
            f"needs {MIN_FREE_TEMP_BYTES / 1e6:.0f}"
        )
    if short:
        return Check(
            "disk",
            "fail",
            "; ".join(short),
            "free some space, or point NIGHTSCHOOL_HOME / TMPDIR at a roomier disk",
        )
    where = f"{home}: {home_free / 1e9:.1f} GB free"
    if temp != home:
        where += f"; {temp} (sandbox workspaces): {temp_free / 1e9:.1f} GB free"
    return Check("disk", "ok", where)


# -- the command ----------------------------------------------------------------------------


def run_checks(settings: Settings) -> list[Check]:
    """Every check in report order: sandbox, model, llama.cpp (embedded only), browser, ..."""
    model, pending = check_model(settings)
    build = [] if settings.base_url is not None else [check_llama_build()]
    return [
        check_sandbox(),
        model,
        *build,
        check_browser(),
        check_database(settings),
        check_telemetry(),
        check_disk(settings, pending),
    ]


def exit_code_of(checks: Sequence[Check]) -> int:
    """0 when nothing failed, else the highest `exit_code` among the failed checks."""
    return max((c.exit_code for c in checks if c.status == "fail"), default=EXIT_CODES["ok"])


_STATUS = {"ok": "[green]ok[/]", "warn": "[yellow]warn[/]", "fail": "[bold red]FAIL[/]"}


@with_model_options
def doctor(
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the checks as one JSON object instead.")
    ] = False,
    model_choice: ModelChoice = NO_MODEL_CHOICE,
) -> None:
    """Check that this machine can run nightschool: sandbox, model, browser, database, disk.

    Runs one hostile probe in the sandbox, reads file headers and starts
    Chromium once on a loopback page; loads no model. Exit codes: 0 nothing
    failed (warnings allowed), 1 telemetry or disk, 3 sandbox, model or an
    installed browser that will not start, 4 database; several failures: the highest.
    """
    settings = model_choice.settings()
    checks = run_checks(settings)
    code = exit_code_of(checks)
    if as_json:
        rows = [
            {**asdict(c), "exit_code": c.exit_code if c.status == "fail" else 0} for c in checks
        ]
        body = {"ok": code == 0, "exit_code": code, "checks": rows}
        typer.echo(json.dumps(body, indent=2))
        raise typer.Exit(code)
    table = Table(title="nightschool doctor", title_justify="left")
    table.add_column("check", no_wrap=True)
    table.add_column("status", no_wrap=True)
    table.add_column("found", overflow="fold")
    for check in checks:
        table.add_row(check.name, _STATUS[check.status], escape(check.detail))
    console = Console()
    console.print(table)
    for check in checks:
        if check.fix and check.status != "ok":
            console.print(f"[bold]fix {check.name}[/]: {escape(check.fix)}", highlight=False)
    console.print(
        "[green]ready[/]" if code == 0 else f"[red]not ready[/] (exit {code})", highlight=False
    )
    raise typer.Exit(code)
