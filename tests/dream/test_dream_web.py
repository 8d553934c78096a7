"""A dream cycle on `web_automation`, end to end: the real sandbox, the site on loopback,
the host's Chromium, the stored trajectory with its screenshots, the dashboard page."""

from __future__ import annotations

import random
import shutil
from collections.abc import Sequence
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from nightschool.challenges import WEB_CLUSTER, Challenge
from nightschool.dream import DreamLoop, FrontierTracker
from nightschool.llm import Message, ScriptedModel
from nightschool.sandbox import Sandbox, SandboxConfig
from nightschool.server.dashboard import standalone_app
from nightschool.solver import Solver, SolverConfig
from nightschool.store import Store
from nightschool.trajectory import Outcome

pytestmark = pytest.mark.skipif(
    shutil.which("bwrap") is None or shutil.which("chromium") is None,
    reason="needs bubblewrap and Debian's chromium (scripts/install.sh installs both)",
)


def test_a_web_cycle_is_recorded_with_its_screenshots(store: Store, tmp_path: Path) -> None:
    asked: list[Challenge] = []
    solver = Solver(
        ScriptedModel(["unused"]),
        Sandbox(SandboxConfig(timeout_s=40)),
        SolverConfig(max_attempts=2),
    )
    loop = DreamLoop(store, solver, FrontierTracker(store), rng=random.Random(5))
    original = loop.next_challenge

    def spy(pick):  # type: ignore[no-untyped-def]
        asked.append(original(pick))
        return asked[-1]

    calls: list[int] = []

    def reply(messages: Sequence[Message]) -> str:
        """The near-miss first, then the reference."""
        calls.append(1)
        challenge = asked[-1]
        code = challenge.wrong_solution if len(calls) == 1 else challenge.reference_solution
        return f"```python\n{code}\n```"

    loop.next_challenge = spy  # type: ignore[method-assign]
    solver.model = ScriptedModel(reply)
    cycle = loop.run_cycle(cluster=WEB_CLUSTER, tier="basic")
    assert asked[0].cluster == WEB_CLUSTER
    stored = store.get_trajectory(cycle.trajectory_id)
    assert stored is not None and stored.cluster == WEB_CLUSTER
    assert (cycle.passed, cycle.attempts, stored.outcome) == (True, 2, Outcome.PASSED)
    shots = stored.extra["screenshots"]
    assert [s["number"] for s in shots] == [1, 2], "one final page per attempt"
    assert all(s["png_base64"] and s["url"].startswith("http://127.0.0.1:") for s in shots)
    client = TestClient(
        standalone_app(store, memory=None, api_key=None), base_url="http://127.0.0.1"
    )
    page = client.get(f"/dashboard/trajectories/{stored.id}").text
    assert f"Screenshots <small>{len(shots)}</small>" in page
    png = client.get(f"/dashboard/trajectories/{stored.id}/screenshots/1.png")
    assert png.status_code == 200 and png.content.startswith(b"\x89PNG")
