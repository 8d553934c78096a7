"""Fixtures of the eval-harness tests: a fake `ChatPipeline` and a sandbox."""

from __future__ import annotations

import shutil
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from nightschool.sandbox import Sandbox
from nightschool.trajectory import ToolCall, Trajectory

Answer = str | BaseException | tuple[str, list[ToolCall]]


class FakePipeline:
    """Answers `handle` from a function of the prompt; records calls; real `TurnResult`s."""

    def __init__(
        self,
        answer: Callable[[str], Answer],
        *,
        delay_s: float = 0.0,
        workspace_root: Path | None = None,
        model: str = "fake-model",
    ) -> None:
        self.answer = answer
        self.delay_s = delay_s
        self.workspace_root = workspace_root
        self.model = model
        self.calls: list[tuple[str, str, str]] = []
        self.lock = threading.Lock()

    def handle(
        self, messages: Sequence[Any], *, session_id: str, task_kind: str = "chat", **_: Any
    ) -> Any:
        from nightschool.agent import TurnResult

        prompt = messages[-1]["content"]
        with self.lock:
            self.calls.append((prompt, session_id, task_kind))
        if self.delay_s:
            time.sleep(self.delay_s)
        answer = self.answer(prompt)
        if isinstance(answer, BaseException):
            raise answer
        text, calls = answer if isinstance(answer, tuple) else (answer, [])
        trajectory = Trajectory(
            session_id=session_id, task_kind=task_kind, model=self.model, final_response=text
        )
        return TurnResult(
            reply=text,
            trajectory=trajectory,
            lessons_shown=("L1",),
            tool_calls=tuple(calls),
            correction=None,
            tokens_in=10,
            tokens_out=len(text.split()),
            timings={},
        )


@pytest.fixture
def fake_pipeline() -> type[FakePipeline]:
    return FakePipeline


@pytest.fixture(scope="session")
def sandbox() -> Sandbox:
    if shutil.which("bwrap") is None:
        pytest.skip("bubblewrap not installed")
    return Sandbox()
