"""`RayBackend`: one Ray task per episode, results back in submission order.

Ray (`pip install 'nightschool[ray]'`) is imported when a `RayBackend` is
built, never at import time. The backend either joins a cluster that is
already running (`address`, or a `ray.init` made by the caller) or starts a
local instance bound to 127.0.0.1 with `workers` CPUs, no dashboard and an
object store capped at `OBJECT_STORE_BYTES`; it shuts down only an instance it
started.

Per episode: one task (`num_cpus=1`) that runs the episode function and
returns its result, or the exception it raised as a value (so the driver can
re-raise it with its type and Ray does not retry a deterministic failure).
System failures (the worker process died: OOM killer, a SIGKILL, a lost node)
are retried up to `max_retries` times by Ray; the driver receives one result
per item either way and writes it once. At most `2 * workers` tasks are in
flight (submitted but not yet yielded), which bounds the object store and the
lookahead of the driver's item iterator.

Cancellation: when the driver stops consuming (Ctrl-C, an exception, an early
break) every task still in flight is force-cancelled: Ray kills its worker
process. The sandboxed programs an episode started die with it: bubblewrap runs
them with `--die-with-parent` in a pid namespace whose init takes every
process of the run down when it exits (`tests/parallel/test_parallel_eval.py`
checks that no sandbox process survives a killed worker). Unsandboxed runs have
no such guarantee, so commands refuse `--backend ray` with `--unsandboxed`.
"""

from __future__ import annotations

import collections
import contextlib
import importlib
import logging
import pickle
import time
from collections.abc import Callable, Generator, Iterable
from dataclasses import dataclass
from typing import Any, TypeVar

from nightschool.errors import InfrastructureError, UserError
from nightschool.privacy import no_external_network

C = TypeVar("C")
T = TypeVar("T")
R = TypeVar("R")

OBJECT_STORE_BYTES = 256 * 1024 * 1024
"""Object store of a local Ray instance, bytes (256 MiB). Episodes exchange
small records (a trajectory is tens of KiB); the cap keeps Ray from reserving
its default 30% of RAM on a machine that also runs the model."""

MAX_RETRIES = 3
"""Times Ray re-runs an episode whose worker died (Ray's own default for tasks)."""

INSTALL_HINT = "pip install 'nightschool[ray]'"
"""How to get the optional Ray extra."""


def import_ray() -> Any:
    """The `ray` module.

    Raises:
        UserError: Ray is not installed (hint: `pip install 'nightschool[ray]'`).
    """
    try:
        return importlib.import_module("ray")
    except ImportError as exc:
        raise UserError(
            "--backend ray needs Ray, which is not installed", hint=INSTALL_HINT
        ) from exc


@dataclass(frozen=True)
class _Raised:
    """An exception an episode raised, carried back as a value."""

    error: BaseException


def _portable(exc: Exception) -> BaseException:
    """`exc` if it pickles, else a RuntimeError naming it (the traceback stays in the worker)."""
    try:
        pickle.dumps(exc)
    except Exception:
        return RuntimeError(f"{type(exc).__name__}: {exc}")
    return exc


def run_episode(fn: Callable[[C, T], R], context: C, item: T, local_only: bool) -> R | _Raised:
    """Body of every Ray task: `fn(context, item)`, under the egress guard when `local_only`.

    Returns the result, or `_Raised(exc)` for an `Exception` (not retried by Ray).
    """
    try:
        if local_only:
            with no_external_network():
                return fn(context, item)
        return fn(context, item)
    except Exception as exc:
        return _Raised(_portable(exc))


CANCEL_WAIT_S = 10.0
"""How long the driver keeps cancelling tasks that have not ended, seconds."""


def _cancel_all(ray: Any, refs: list[Any]) -> None:
    """Force-cancel `refs`, again while any has not ended (up to `CANCEL_WAIT_S`).

    A cancel that reaches a task while Ray is still handing it to a worker can
    be lost, and the task then runs to its end (seen under load: a sandboxed
    tool kept sleeping after Ctrl-C). Its result is never written (the driver
    has stopped reading), but its sandbox would live on; so the driver cancels
    until every task has ended or the wait runs out.
    """
    deadline = time.monotonic() + CANCEL_WAIT_S
    while refs:
        for ref in refs:
            with contextlib.suppress(Exception):
                ray.cancel(ref, force=True)
        if time.monotonic() >= deadline:
            return
        try:
            _, refs = ray.wait(refs, num_returns=len(refs), timeout=0.5)
        except Exception:
            return


class RayBackend:
    """Runs each episode as a Ray task (see the module docstring).

    Args:
        workers: episodes at once; the CPUs of a local instance this starts.
        address: an existing cluster (`auto`, `ray://host:10001`, ...); None
            joins the caller's `ray.init` if there is one, else starts a local
            instance on 127.0.0.1.
        local_only: run each episode under `privacy.no_external_network()`.
        max_retries: re-runs of an episode whose worker died.
        object_store_bytes: object store of a local instance this starts.

    Raises:
        UserError: Ray is not installed, or `workers` < 1.
        InfrastructureError: the instance could not be started or the cluster
            reached.
    """

    name = "ray"

    def __init__(
        self,
        *,
        workers: int = 1,
        address: str | None = None,
        local_only: bool = True,
        max_retries: int = MAX_RETRIES,
        object_store_bytes: int = OBJECT_STORE_BYTES,
    ) -> None:
        if workers < 1:
            raise UserError(f"--workers must be at least 1, got {workers}")
        self._ray = import_ray()
        self.workers = workers
        self.local_only = local_only
        self.max_in_flight = 2 * workers
        self._started = False
        if not self._ray.is_initialized():
            options: dict[str, Any] = {
                "include_dashboard": False,
                "log_to_driver": False,
                "logging_level": logging.WARNING,
                "namespace": "nightschool",
            }
            if address is None:
                options |= {
                    "num_cpus": workers,
                    "object_store_memory": object_store_bytes,
                    "_node_ip_address": "127.0.0.1",
                }
            else:
                options["address"] = address
            try:
                self._ray.init(**options)
            except Exception as exc:
                where = f"the Ray cluster at {address}" if address else "a local Ray instance"
                raise InfrastructureError(
                    f"could not start or reach {where}: {type(exc).__name__}: {exc}"[:500],
                    hint="check `ray status`, or drop --ray-address to start a local one",
                ) from exc
            self._started = True
        self._task = self._ray.remote(run_episode).options(
            num_cpus=1, max_retries=max_retries, retry_exceptions=False
        )

    @property
    def started(self) -> bool:
        """Whether this backend started the Ray instance (and will shut it down)."""
        return self._started

    def map(
        self, fn: Callable[[C, T], R], context: C, items: Iterable[T]
    ) -> Generator[R, None, None]:
        """Yield `fn(context, item)` per item in submission order (see `Backend`).

        Raises:
            InfrastructureError: an episode was lost for good (its worker died
                more than `max_retries` times, or Ray failed).
            Exception: what `fn` raised, re-raised with its type.
        """
        ray = self._ray
        context_ref = ray.put(context)
        source = iter(items)
        pending: collections.deque[Any] = collections.deque()

        def submit() -> bool:
            for item in source:
                pending.append(self._task.remote(fn, context_ref, item, self.local_only))
                return True
            return False

        try:
            while len(pending) < self.max_in_flight and submit():
                pass
            while pending:
                try:
                    out = ray.get(pending[0])
                except ray.exceptions.RayError as exc:
                    raise InfrastructureError(
                        f"a Ray episode was lost: {type(exc).__name__}: {exc}"[:500],
                        hint="see the Ray logs (/tmp/ray/session_latest/logs)",
                    ) from exc
                pending.popleft()
                if isinstance(out, _Raised):
                    raise out.error
                submit()
                yield out
        finally:
            _cancel_all(ray, list(pending))  # nothing in flight outlives the map
            pending.clear()

    def close(self) -> None:
        """Shut down the Ray instance if this backend started it; idempotent."""
        if self._started:
            self._started = False
            with contextlib.suppress(Exception):
                self._ray.shutdown()
