"""kill -9 soak of concurrent writers: nothing lost, nothing doubled, no lock left held.

Target (issue 29, part 5): 8 writers, 1,000 kills, on SQLite and on Postgres:
0 lost, 0 doubled, no advisory lock left held.

The parent imports nightschool, then forks `--writers` writer processes (a
restart costs no import time). Writer `w` opens its own `Store` and appends
trajectories with deterministic ids (`uuid5(f"{w}:{n}")`, n = 0, 1, 2, ...),
one durable transaction each (`Store.append_trajectory`); after each append
returns it appends `n` to its own journal file and fsyncs it: the journal says
"committed". A restarted writer resumes at the journal's last n + 1. When the
kill landed between the commit and the journal write, the store already holds
that id and the append raises `StoreError`: the writer checks that the row is
there, journals it as `n present` and goes on. Those are counted and printed as
"commit then killed": the interesting case.

The parent's killer loop sleeps a random 0-`--max-pause-ms` ms, SIGKILLs a
random writer, reaps it and forks a replacement, until `--kills` kills. Then it
stops the writers (SIGTERM: each finishes its append and journal line) and
checks:

- lost: journaled ids missing from the store (must be 0);
- doubled: an id stored twice, or a (writer, n) stored under two ids (must be 0);
- gaps: each writer's stored n's are 0..max, at most one beyond its journal;
- Postgres: no advisory lock in `pg_locks` for the database and no writer
  backend left in `pg_stat_activity` (the server is given up to 10 s to notice
  the dead connections); the writers connect with `application_name=nightschool-soak`;
- SQLite: `PRAGMA integrity_check` is `ok`.

SQLite as shipped (WAL, `synchronous=FULL`) in a temp directory; Postgres on a
throw-away local server with `fsync` on (`tests/_postgres.py`,
`postgres_server(durable=True)`), as a real server runs. Progress on stderr
every 100 kills; Ctrl-C stops the writers and still checks what was written.
Exit 1 if any check fails.

Measured (2 shared cores, load average near 6 from a model benchmark beside it;
`python bench/bench_kill_soak.py --backend both --writers 8 --kills 1000`):
SQLite 1,000 kills, 8,418 rows, 205 writes/s, 0 lost, 0 doubled, 0 gaps, 12
commit-then-killed, integrity ok, 41.9 s; Postgres (fsync on) 1,000 kills,
4,170 rows, 83 writes/s, 0 lost, 0 doubled, 0 gaps, 76 commit-then-killed,
0 advisory locks and 0 writer backends left, 51.1 s.

Usage: `python bench/bench_kill_soak.py [--backend sqlite|postgres|both]
[--writers 8] [--kills 1000] [--max-pause-ms 50] [--seed 0]`.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import signal
import sys
import tempfile
import time
import traceback
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from nightschool.errors import StoreError
from nightschool.redact import redact
from nightschool.store import Store
from nightschool.trajectory import Outcome, Trajectory

APPLICATION_NAME = "nightschool-soak"
"""`application_name` of the writers' Postgres connections (to find their backends)."""

ID_NAMESPACE = uuid.UUID("6e736b6c-736f-616b-0000-000000000000")
"""uuid5 namespace of the writers' trajectory ids."""

PG_SETTLE_S = 10.0
"""How long the Postgres server is given to notice the killed writers' connections."""

STOP_TIMEOUT_S = 60.0
"""How long a writer has to finish its append after SIGTERM before it is SIGKILLed."""


def trajectory_id(writer: int, n: int) -> str:
    """The id writer `writer` gives its `n`-th trajectory (32 hex, as `Trajectory.id`)."""
    return uuid.uuid5(ID_NAMESPACE, f"{writer}:{n}").hex


def record(writer: int, n: int) -> Trajectory:
    """Writer `writer`'s `n`-th trajectory: about 1 KB, redacted on append as in production."""
    return Trajectory(
        id=trajectory_id(writer, n),
        session_id=f"soak-{writer}",
        task_kind="selfplay",
        cluster="soak",
        tier="basic",
        model="soak-model",
        user_request=f"writer {writer} record {n}: sort the rows by score then name. " * 8,
        outcome=Outcome.FAILED,
        failure_reason="validator rejected all 1 attempts",
        extra={"writer": writer, "n": n},
        final_response="def solve(rows):\n    return sorted(rows)\n" * 8,
    )


# -- the writer (a forked child) ---------------------------------------------------


def _journal_path(workdir: Path, writer: int) -> Path:
    return workdir / f"writer-{writer}.journal"


def read_journal(path: Path) -> list[tuple[int, bool]]:
    """The journal's entries: (n, present) per complete line, oldest first.

    `present` marks an n whose append found the id already stored (the previous
    writer was killed between its commit and its journal line).
    """
    if not path.exists():
        return []
    entries = []
    for line in path.read_bytes().split(b"\n"):
        parts = line.split()
        if parts:
            entries.append((int(parts[0]), len(parts) > 1 and parts[1] == b"present"))
    return entries


def _resume(path: Path) -> tuple[int, int]:
    """Open the journal for appending (a torn last line cut off); return (fd, next n)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    data = path.read_bytes()
    if data and not data.endswith(b"\n"):
        os.ftruncate(fd, data.rfind(b"\n") + 1)
        os.fsync(fd)
    entries = read_journal(path)
    return fd, (entries[-1][0] + 1 if entries else 0)


def _open(target: str) -> Store:
    if target.startswith("postgresql://") or target.startswith("postgres://"):
        return Store.open_url(target)
    return Store.open(Path(target))


def _write_forever(writer: int, target: str, workdir: Path, parent: int) -> None:
    """Append this writer's records until SIGTERM/SIGINT or the parent's death."""
    stop = False

    def request_stop(signum: int, frame: object) -> None:
        nonlocal stop
        stop = True

    signal.signal(signal.SIGTERM, request_stop)
    signal.signal(signal.SIGINT, request_stop)
    fd, n = _resume(_journal_path(workdir, writer))
    with _open(target) as store:
        while not stop and os.getppid() == parent:
            trajectory = record(writer, n)
            tag = b""
            try:
                store.append_trajectory(trajectory)
            except StoreError:
                rows = store.query("SELECT 1 FROM trajectories WHERE id = ?", (trajectory.id,))
                if not rows:
                    raise
                tag = b" present"  # committed by the writer killed before journaling it
            os.write(fd, b"%d%s\n" % (n, tag))
            os.fsync(fd)
            n += 1


def _spawn(writer: int, target: str, workdir: Path) -> int:
    """Fork writer `writer`; the child never returns (exit 0 when stopped, 3 on an error)."""
    parent = os.getpid()
    pid = os.fork()
    if pid:
        return pid
    code = 0
    try:
        _write_forever(writer, target, workdir, parent)
    except BaseException:
        code = 3
        with (
            contextlib.suppress(BaseException),
            (workdir / f"writer-{writer}.errors").open("a") as log,
        ):
            log.write(traceback.format_exc() + "\n")
    finally:
        os._exit(code)


# -- the soak (the parent) ---------------------------------------------------------


@dataclass
class SoakResult:
    """What one soak did and what the checks found."""

    backend: str
    """`sqlite` or `postgres`."""
    writers: int
    kills: int = 0
    """SIGKILLs delivered."""
    rows: int = 0
    """Trajectories in the store at the end."""
    soak_s: float = 0.0
    """Seconds from the first fork to the last writer stopped."""
    wall_s: float = 0.0
    """Seconds for the whole soak, checks included."""
    committed_then_killed: int = 0
    """Appends found already stored on retry: the kill fell between commit and journal line."""
    lost: list[str] = field(default_factory=list)
    """Journaled ids missing from the store."""
    doubled: list[str] = field(default_factory=list)
    """Ids stored twice, or (writer, n) stored under two ids."""
    gaps: list[str] = field(default_factory=list)
    """Per writer: stored n's not contiguous, beyond the journal by more than one, or a bad journal."""
    writer_errors: list[str] = field(default_factory=list)
    """Writers that exited on their own with an error (the last lines of each traceback)."""
    advisory_locks: int | None = None
    """Postgres: advisory locks held in the database after the writers are gone."""
    leftover_backends: int | None = None
    """Postgres: writer backends still in `pg_stat_activity` after the writers are gone."""
    integrity: str | None = None
    """SQLite: `PRAGMA integrity_check`."""
    interrupted: bool = False
    """Ctrl-C stopped the killer loop early."""

    @property
    def writes_per_s(self) -> float:
        return self.rows / self.soak_s if self.soak_s else 0.0

    @property
    def ok(self) -> bool:
        """Nothing lost, doubled or missing, no lock or backend left, integrity ok."""
        return (
            not self.lost
            and not self.doubled
            and not self.gaps
            and self.advisory_locks in (None, 0)
            and self.leftover_backends in (None, 0)
            and self.integrity in (None, "ok")
        )


def _reap(pid: int, result: SoakResult, writer: int, workdir: Path, *, block: bool) -> bool:
    """waitpid `pid`; record an exit that was not our SIGKILL/SIGTERM. True if it is gone."""
    done, status = os.waitpid(pid, 0 if block else os.WNOHANG)
    if not done:
        return False
    if os.WIFEXITED(status) and os.WEXITSTATUS(status) != 0:
        log = workdir / f"writer-{writer}.errors"
        tail = log.read_text().strip().splitlines()[-1:] if log.exists() else []
        result.writer_errors.append(
            f"writer {writer} exited {os.WEXITSTATUS(status)}: {' '.join(tail) or '?'}"
        )
    return True


def _stop(pids: dict[int, int], result: SoakResult, workdir: Path) -> None:
    """SIGTERM every writer, wait for each (SIGKILL after STOP_TIMEOUT_S)."""
    for pid in pids.values():
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + STOP_TIMEOUT_S
    waiting = dict(pids)
    while waiting:
        for writer, pid in list(waiting.items()):
            if _reap(pid, result, writer, workdir, block=False):
                del waiting[writer]
        if waiting and time.monotonic() > deadline:
            for pid in waiting.values():
                os.kill(pid, signal.SIGKILL)
            deadline = float("inf")
        time.sleep(0.01)


def _check_rows(store: Store, workdir: Path, result: SoakResult) -> None:
    rows = store.query("SELECT id, record FROM trajectories")
    result.rows = len(rows)
    ids = Counter(row[0] for row in rows)
    result.doubled += [f"id {i} stored {c} times" for i, c in ids.items() if c > 1]
    stored: dict[int, set[int]] = {w: set() for w in range(result.writers)}
    pairs: Counter[tuple[int, int]] = Counter()
    for row_id, text in rows:
        extra = json.loads(text)["extra"]
        writer, n = int(extra["writer"]), int(extra["n"])
        pairs[(writer, n)] += 1
        stored.setdefault(writer, set()).add(n)
        if row_id != trajectory_id(writer, n):
            result.doubled.append(f"writer {writer} n {n} stored under a foreign id {row_id}")
    result.doubled += [f"writer {w} n {n} stored {c} times" for (w, n), c in pairs.items() if c > 1]
    for writer, ns in sorted(stored.items()):
        entries = read_journal(_journal_path(workdir, writer))
        journaled = [n for n, _ in entries]
        result.committed_then_killed += sum(present for _, present in entries)
        if journaled != list(range(len(journaled))):
            result.gaps.append(f"writer {writer}: journal is not 0..{len(journaled) - 1}")
        result.lost += [trajectory_id(writer, n) for n in journaled if n not in ns]
        top = max(ns, default=-1)
        if sorted(ns) != list(range(top + 1)):
            result.gaps.append(f"writer {writer}: stored n's are not 0..{top}")
        if top > len(journaled):
            result.gaps.append(
                f"writer {writer}: stored up to {top}, journal to {len(journaled) - 1}"
            )


def _check_postgres(store: Store, result: SoakResult) -> None:
    deadline = time.monotonic() + PG_SETTLE_S
    while True:
        result.advisory_locks = store.query(
            "SELECT count(*) FROM pg_locks l JOIN pg_database d ON d.oid = l.database "
            "WHERE l.locktype = 'advisory' AND d.datname = current_database()"
        )[0][0]
        result.leftover_backends = store.query(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
            "AND application_name = ? AND pid <> pg_backend_pid()",
            (APPLICATION_NAME,),
        )[0][0]
        if (result.advisory_locks == 0 and result.leftover_backends == 0) or (
            time.monotonic() > deadline
        ):
            return
        time.sleep(0.1)


def _with_application_name(url: str) -> str:
    return f"{url}{'&' if '?' in url else '?'}application_name={APPLICATION_NAME}"


def soak(
    *,
    writers: int,
    kills: int,
    workdir: Path,
    url: str | None = None,
    seed: int = 0,
    max_pause_s: float = 0.05,
    progress: Callable[[str], None] | None = None,
) -> SoakResult:
    """Run the kill -9 soak and check the store; see the module docstring.

    Args:
        writers: concurrent writer processes.
        kills: SIGKILLs to deliver before stopping.
        workdir: an empty directory for the journals (and the SQLite database).
        url: a fresh Postgres database (migrated here before forking); None for
            SQLite at `workdir/soak.db`.
        seed: seeds the pauses and the choice of victim.
        max_pause_s: the killer sleeps uniformly 0..this between kills, seconds.
        progress: called with a line every 100 kills.

    Returns:
        The figures and the checks; `interrupted` if Ctrl-C cut the killer loop short.
    """
    started = time.perf_counter()
    result = SoakResult(backend="postgres" if url else "sqlite", writers=writers)
    target = _with_application_name(url) if url else str(workdir / "soak.db")
    _open(target).close()  # migrate once before the writers race to
    # Redaction compiles its detectors on first use (about 0.1-0.15 s): once here,
    # so no forked writer pays it (their lives last a few hundred ms).
    redact(record(0, 0).model_dump(mode="json"))
    rng = random.Random(seed)
    pids: dict[int, int] = {}
    soak_start = time.perf_counter()
    try:
        for writer in range(writers):
            pids[writer] = _spawn(writer, target, workdir)
        while result.kills < kills:
            time.sleep(rng.uniform(0.0, max_pause_s))
            for writer, pid in list(pids.items()):  # writers that died on their own
                if _reap(pid, result, writer, workdir, block=False):
                    pids[writer] = _spawn(writer, target, workdir)
            victim = rng.randrange(writers)
            os.kill(pids[victim], signal.SIGKILL)
            _reap(pids[victim], result, victim, workdir, block=True)
            result.kills += 1
            pids[victim] = _spawn(victim, target, workdir)
            if progress and result.kills % 100 == 0:
                progress(
                    f"{result.backend}: {result.kills}/{kills} kills, "
                    f"{time.perf_counter() - soak_start:.1f} s"
                )
    except KeyboardInterrupt:
        result.interrupted = True
    finally:
        _stop(pids, result, workdir)
    result.soak_s = time.perf_counter() - soak_start
    with _open(url or target) as store:
        _check_rows(store, workdir, result)
        if url:
            _check_postgres(store, result)
        else:
            result.integrity = "; ".join(r[0] for r in store.query("PRAGMA integrity_check"))
    result.wall_s = time.perf_counter() - started
    return result


# -- the command --------------------------------------------------------------------


def report(result: SoakResult) -> None:
    """Print one backend's figures and checks."""
    print(f"\n== {result.backend}: {result.writers} writers, kill -9 soak ==")
    lines = [
        ("kills", f"{result.kills}" + (" (interrupted)" if result.interrupted else "")),
        ("rows written", f"{result.rows}"),
        ("writes/s", f"{result.writes_per_s:.0f} (over {result.soak_s:.1f} s)"),
        ("lost", f"{len(result.lost)}"),
        ("doubled", f"{len(result.doubled)}"),
        ("gaps", f"{len(result.gaps)}"),
        ("commit then killed", f"{result.committed_then_killed}"),
        ("writer errors", f"{len(result.writer_errors)}"),
    ]
    if result.advisory_locks is not None:
        lines.append(
            (
                "lock check",
                f"{result.advisory_locks} advisory locks, "
                f"{result.leftover_backends} writer backends left",
            )
        )
    if result.integrity is not None:
        lines.append(("integrity", result.integrity))
    lines += [("wall time", f"{result.wall_s:.1f} s"), ("verdict", "OK" if result.ok else "FAIL")]
    for name, value in lines:
        print(f"  {name:<20} {value}")
    for problem in [*result.lost, *result.doubled, *result.gaps, *result.writer_errors][:20]:
        print(f"  ! {problem}")


@contextlib.contextmanager
def _postgres_database() -> Iterator[str]:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for tests._postgres
    from tests._postgres import fresh_database, postgres_server

    with postgres_server(durable=True) as admin_url:
        yield fresh_database(admin_url, "nightschool_soak")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=("sqlite", "postgres", "both"), default="both")
    parser.add_argument("--writers", type=int, default=8)
    parser.add_argument("--kills", type=int, default=1000)
    parser.add_argument("--max-pause-ms", type=float, default=50.0)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    backends = ["sqlite", "postgres"] if args.backend == "both" else [args.backend]

    def progress(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    results = []
    for backend in backends:
        with (
            tempfile.TemporaryDirectory(prefix="nightschool-soak-") as tmp,
            contextlib.ExitStack() as stack,
        ):
            url = stack.enter_context(_postgres_database()) if backend == "postgres" else None
            result = soak(
                writers=args.writers,
                kills=args.kills,
                workdir=Path(tmp),
                url=url,
                seed=args.seed,
                max_pause_s=args.max_pause_ms / 1000,
                progress=progress,
            )
        report(result)
        results.append(result)
        if result.interrupted:
            break
    sys.exit(0 if all(r.ok for r in results) else 1)


if __name__ == "__main__":
    main()
