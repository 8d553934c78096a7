"""A real local Ray instance on loopback, shared by the tests of this folder."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

if os.environ.get("NIGHTSCHOOL_REQUIRE_RAY") == "1":  # set by .ci/run: never skip there
    import ray
else:
    ray = pytest.importorskip("ray", reason="ray is not installed (pip install 'nightschool[ray]')")


@pytest.fixture(scope="session")
def ray_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """`ray.init(num_cpus=2)` on 127.0.0.1, no dashboard; shut down after the session.

    Workers inherit the environment of this moment: NIGHTSCHOOL_HOME points at a
    scratch directory so no worker could touch a real home (they are handed
    settings with the home pinned anyway).
    """
    saved = os.environ.get("NIGHTSCHOOL_HOME")
    os.environ["NIGHTSCHOOL_HOME"] = str(tmp_path_factory.mktemp("ray-home"))
    try:
        ray.init(
            num_cpus=2,
            include_dashboard=False,
            log_to_driver=False,
            object_store_memory=128 * 1024 * 1024,
            _node_ip_address="127.0.0.1",
        )
    finally:
        if saved is None:
            os.environ.pop("NIGHTSCHOOL_HOME", None)
        else:
            os.environ["NIGHTSCHOOL_HOME"] = saved
    yield ray
    ray.shutdown()
