"""What a parallel worker rebuilds its model from: no secrets, one decode thread by default."""

from __future__ import annotations

from pathlib import Path

from nightschool.cli._parallel import remote_resources
from nightschool.config import Settings
from nightschool.sandbox import SandboxConfig


def test_workers_decode_with_one_thread_unless_the_user_set_a_count(tmp_path: Path) -> None:
    base = Settings(home=tmp_path, database_url="postgresql://u:secret@h/db", api_key="k")
    pinned = remote_resources(base, SandboxConfig()).settings
    assert pinned.threads == 1  # the per-call choice could race between workers
    assert pinned.database_url is None and pinned.api_key is None
    assert pinned.home == tmp_path
    assert base.threads is None  # the driver's own choice stays per call
    chosen = remote_resources(base.model_copy(update={"threads": 3}), SandboxConfig()).settings
    assert chosen.threads == 3
