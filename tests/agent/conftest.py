"""Fixtures the agent tests share: one real sandbox per module, pipelines and self-play tools.

Every file used to build its own `ChatPipeline` (and `SelfPlayTools`) factory
with the same teardown; each now asks for these and says only what differs
(`functools.partial` with its defaults: a call's own keywords still win).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import nightschool.practice
from nightschool.agent import AgentConfig, ChatPipeline
from nightschool.agent.self_play import SelfPlayTools
from nightschool.llm import ScriptedModel
from nightschool.llm.preempt import Foreground
from nightschool.sandbox import Sandbox
from nightschool.store import Store


@pytest.fixture(scope="module")
def sandbox() -> Sandbox:
    """The real bubblewrap sandbox, one per test module."""
    return Sandbox()


@pytest.fixture
def foreground() -> Foreground:
    return Foreground()


@pytest.fixture
def make_pipeline(
    store: Store, sandbox: Sandbox, tmp_path: Path
) -> Iterator[Callable[..., ChatPipeline]]:
    """`make_pipeline(model, memory=None, *, reflector=None, workspace="workspaces", **rest)`.

    `rest` goes to `ChatPipeline` when it names one of its parameters
    (`wake_up`, `practice`, `router`, `browser`), to `AgentConfig` otherwise.
    The pipeline runs on the test's store and the module's real sandbox, its
    workspaces under `tmp_path / workspace`; every pipeline made is closed at
    teardown, waiting for its background work, and one whose workspace root
    was unusable must have removed the temporary one it fell back to.
    """
    made: list[ChatPipeline] = []
    pipeline_keys = {"wake_up", "practice", "router", "browser"}

    def make(
        model: ScriptedModel,
        memory: Any = None,
        *,
        reflector: Any = None,
        workspace: str = "workspaces",
        **rest: Any,
    ) -> ChatPipeline:
        extra = {k: v for k, v in rest.items() if k in pipeline_keys}
        config = {k: v for k, v in rest.items() if k not in pipeline_keys}
        pipe = ChatPipeline(
            model=model,
            store=store,
            sandbox=sandbox,
            memory=memory,
            reflector=reflector,
            workspace_root=tmp_path / workspace,
            config=AgentConfig(**config),
            **extra,
        )
        made.append(pipe)
        return pipe

    yield make
    for pipe in made:
        pipe.close(wait=True, timeout_s=30)
        if pipe.workspace_root.parent != tmp_path:
            assert not pipe.workspace_root.exists()  # the temporary fallback is removed


@pytest.fixture
def make_self_play_tools(
    store: Store, sandbox: Sandbox, foreground: Foreground
) -> Iterator[Callable[..., SelfPlayTools]]:
    """`make_self_play_tools(model, **options)`: chat's self-play tools, stopped at teardown.

    Defaults: no verification (`verify_k=0`), cooldowns at 1% of their length,
    the package's own practice folder; `options` override any of them or add
    `SelfPlayTools` keywords (`playbook`, `home`, ...).
    """
    made: list[SelfPlayTools] = []

    def make(model: ScriptedModel, **options: Any) -> SelfPlayTools:
        settings: dict[str, Any] = {
            "verify_k": 0,
            "cooldown_scale": 0.01,
            "practice_root": nightschool.practice,
            **options,
        }
        tools = SelfPlayTools(store, model, sandbox, foreground=foreground, **settings)
        made.append(tools)
        return tools

    yield make
    for tools in made:
        assert tools.stop(timeout_s=30)
