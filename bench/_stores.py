"""Shared by the learned-model benches: read trajectories from several stores."""

from __future__ import annotations

import glob
from collections.abc import Iterable
from pathlib import Path

from nightschool.errors import NightschoolError
from nightschool.store import Store
from nightschool.trajectory import Trajectory


def store_paths(pattern: str | None, paths: Iterable[Path] = ()) -> list[Path]:
    """`paths`, then every database matching the glob `pattern` (sorted)."""
    found = list(paths)
    if pattern:
        found += [Path(p) for p in sorted(glob.glob(pattern, recursive=True))]
    return found


def load_trajectories(
    paths: Iterable[Path], *, skip_hashes: frozenset[str] = frozenset()
) -> list[Trajectory]:
    """Every trajectory of `paths` (corrections applied), deduplicated by id.

    A file that is not a usable nightschool database is reported and skipped;
    trajectories whose `extra["challenge_hash"]` is in `skip_hashes` are left out.
    """
    seen: dict[str, Trajectory] = {}
    for path in paths:
        try:
            store = Store.open(path)
        except NightschoolError as exc:
            print(f"skipping {path}: {exc.message}")
            continue
        with store:
            for trajectory in store.iter_trajectories():
                if trajectory.extra.get("challenge_hash") not in skip_hashes:
                    seen[trajectory.id] = trajectory
    return list(seen.values())
