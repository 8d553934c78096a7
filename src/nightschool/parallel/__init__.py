"""Run episodes in parallel: one backend interface, a local and a Ray implementation.

An **episode** is one unit of work that needs a model and a sandbox and
touches no database: an eval task, a tournament game of `evolve`, a held-out
item of the learning curve, an extra sample of `dream --samples`. A backend
maps a picklable episode function `fn(context, item) -> result` over work
items and yields the results back to the driver **in submission order**; the
driver is the only process that writes to the database (or the evolve
checkpoint), so results are written in the same order as the local backend
writes them.

- `LocalBackend`: in this process, one item after the other (today's
  behaviour; the default of every command).
- `RayBackend`: one Ray task per episode (`pip install 'nightschool[ray]'`),
  on a local Ray instance it starts on loopback or an existing cluster.
- `LocalResources` / `SettingsResources`: how an episode gets its model and
  sandbox (live objects of this process, or rebuilt once per worker process
  from picklable settings).
- `derive_id`: deterministic record ids, so a result written twice is
  recognised as the same row (idempotent driver writes).

Importing this package imports no Ray and starts nothing.
"""

from nightschool.parallel._backend import (
    BACKENDS,
    Backend,
    EpisodeFn,
    LocalBackend,
    make_backend,
    open_backend,
)
from nightschool.parallel._ray import OBJECT_STORE_BYTES, RayBackend
from nightschool.parallel._resources import (
    LocalResources,
    Resources,
    SettingsResources,
    derive_id,
)

__all__ = [
    "BACKENDS",
    "OBJECT_STORE_BYTES",
    "Backend",
    "EpisodeFn",
    "LocalBackend",
    "LocalResources",
    "RayBackend",
    "Resources",
    "SettingsResources",
    "derive_id",
    "make_backend",
    "open_backend",
]
