"""A real local Ray instance on loopback, shared by the tests of this folder."""

from __future__ import annotations

import os
import time
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


@pytest.fixture(autouse=True)
def _no_sandbox_left_from_an_earlier_test() -> Iterator[None]:
    """Start each test with no agent sandbox running on the shared Ray instance.

    The instance is shared by the whole session, so an episode an earlier test
    cancelled (its tool sleeps up to 60 s; the sandbox's own time limit ends it
    in any case) could still be finishing and would be counted by the next
    test's "no sandbox left" checks. Each test checks its own episodes; this
    only waits, up to 90 s, for the earlier ones to end, and fails if one never does.
    """
    from tests.parallel._support import sandboxed_tool_runs

    deadline = time.monotonic() + 90
    while (left := sandboxed_tool_runs()) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not left, f"sandboxed tool runs of an earlier test never ended: {left}"
    yield
