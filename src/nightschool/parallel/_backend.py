"""The backend contract and the local (in-process, sequential) backend. Side-effect free."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Generator, Iterable, Iterator
from typing import Protocol, TypeVar, runtime_checkable

from nightschool.errors import UserError
from nightschool.parallel._ray import RayBackend

C = TypeVar("C")
T = TypeVar("T")
R = TypeVar("R")

EpisodeFn = Callable[[C, T], R]
"""`fn(context, item) -> result`: one episode. For a remote backend `fn` must be a
module-level function (pickled by reference) and `context`, `item` and the result
picklable; it must not open the database."""

BACKENDS: dict[str, str] = {
    "local": "in this process, one episode after the other (the default)",
    "ray": "one Ray task per episode (pip install 'nightschool[ray]')",
}
"""Backend name -> one-line description."""


@runtime_checkable
class Backend(Protocol):
    """Maps an episode function over work items; results come back in submission order.

    Contract:
        - `map(fn, context, items)` yields exactly one result per item, in the
          order of `items`, whatever order the episodes finish in. `items` is
          consumed lazily (a bounded number ahead of the result being yielded),
          so the driver may compute an item from the results written so far.
        - `context` is shared by every item (sent to workers once); neither it
          nor the items are mutated.
        - An exception raised by `fn` is re-raised from `map` with its type
          (after the results of earlier items were yielded); nothing after it is
          yielded, and episodes still running are cancelled.
        - Closing the iterator early (the driver stopped, an exception, Ctrl-C)
          cancels the episodes still running; their results are never yielded,
          so the driver cannot write half of them.
        - A worker that dies mid-episode is retried by the backend; the driver
          still receives exactly one result for the item.

    Raises (from `map`):
        InfrastructureError: the backend lost an episode for good (a worker died
            more often than the retry limit).
        Exception: whatever `fn` raised.
    """

    name: str
    """`local` or `ray`."""

    workers: int
    """Episodes that may run at the same time (1 for `local`)."""

    def map(
        self, fn: Callable[[C, T], R], context: C, items: Iterable[T]
    ) -> Generator[R, None, None]:
        """Yield `fn(context, item)` for each item, in submission order."""
        ...

    def close(self) -> None:
        """Release what the backend holds (a Ray instance it started); idempotent."""
        ...


class LocalBackend:
    """Runs each episode in this process, one after the other (today's behaviour).

    `map` is lazy: item k is pulled from `items` only after result k - 1 was
    consumed, so the driver writes each result before the next episode starts,
    exactly as a plain loop would.
    """

    name = "local"
    workers = 1

    def map(
        self, fn: Callable[[C, T], R], context: C, items: Iterable[T]
    ) -> Generator[R, None, None]:
        """Yield `fn(context, item)` for each item in order; exceptions propagate as raised."""
        for item in items:
            yield fn(context, item)

    def close(self) -> None:
        """Nothing to release."""


def make_backend(
    kind: str,
    *,
    workers: int = 1,
    address: str | None = None,
    local_only: bool = True,
) -> Backend:
    """Build the backend named `kind` (`local` or `ray`).

    Args:
        kind: `local` or `ray`.
        workers: episodes at once (ray: the CPUs of a local instance it starts,
            and the bound on tasks in flight); >= 1.
        address: ray only: an existing cluster (`auto`, `ray://host:10001`,
            `host:6379`); None starts a local instance on loopback.
        local_only: ray only: each episode runs under
            `privacy.no_external_network()` in its worker.

    Raises:
        UserError: unknown `kind`, `workers` < 1, `--ray-address` without ray,
            or ray is not installed (hint: `pip install 'nightschool[ray]'`).
        InfrastructureError: the Ray cluster could not be started or reached.
    """
    if workers < 1:
        raise UserError(f"--workers must be at least 1, got {workers}")
    if kind == "local":
        if address is not None:
            raise UserError("--ray-address needs --backend ray")
        return LocalBackend()
    if kind == "ray":
        return RayBackend(workers=workers, address=address, local_only=local_only)
    raise UserError(f"--backend must be one of {', '.join(BACKENDS)}, not {kind!r}")


@contextlib.contextmanager
def open_backend(
    kind: str,
    *,
    workers: int = 1,
    address: str | None = None,
    local_only: bool = True,
) -> Iterator[Backend]:
    """`make_backend(...)` as a context manager that closes the backend on exit (Ctrl-C too).

    Start it *before* entering `privacy.no_external_network()`: a local Ray
    instance cannot start under the guard (its helper processes inherit it);
    the episodes are guarded in their workers instead (`local_only`).

    Raises:
        UserError, InfrastructureError: as `make_backend`.
    """
    backend = make_backend(kind, workers=workers, address=address, local_only=local_only)
    try:
        yield backend
    finally:
        backend.close()
