"""The in-process eval agent, detached from the database, for a parallel worker.

`DetachedPipeline` is a `ChatPipeline` whose reads of the database come from
a snapshot the driver took (the lessons and skills retrieved for the prompt,
the `### WHO I AM` section, the strategy record) and whose record step keeps
the trajectory in memory for the driver to write. Everything else (prompt
assembly, the agent loop, sandboxed tools, outcome heuristics) is the
pipeline's own code, so a turn in a worker is the turn the local backend runs.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nightschool.agent import AgentConfig, ChatPipeline
from nightschool.errors import IncoherentRecordError
from nightschool.llm import ChatModel
from nightschool.playbook import RetrievedLesson
from nightschool.sandbox import Sandbox
from nightschool.store import Store
from nightschool.trajectory import Trajectory

if TYPE_CHECKING:
    from nightschool.learn.chat_router import ChatRouter

_scratch: list[Store] = []
_scratch_lock = threading.Lock()


def scratch_store() -> Store:
    """A private in-memory store of this process (satisfies the pipeline; never written).

    One per worker process: the detached pipeline reads and writes nothing
    through it (every store step is overridden); it is not the database.
    """
    with _scratch_lock:
        if not _scratch:
            _scratch.append(Store.open(Path(":memory:")))
        return _scratch[0]


class DetachedPipeline(ChatPipeline):
    """A `ChatPipeline` that reads a snapshot and records into `recorded` (no database).

    Args:
        model: the agent's model.
        sandbox: runs the agent's tools.
        workspace_root: session workspaces live under it.
        config: the agent settings (the eval's: no verifier, no reflection).
        lessons: the lessons the driver retrieved for the prompt (shown as is).
        skills: the skills the driver retrieved for the prompt.
        who_i_am: the `### WHO I AM` section the driver computed ("" for none).
        strategy: `extra["strategy"]` as the driver computed it.

    Attributes:
        recorded: trajectories of finished turns, in order (unredacted; the
            driver's store redacts on write).
    """

    def __init__(
        self,
        *,
        model: ChatModel,
        sandbox: Sandbox,
        workspace_root: Path,
        config: AgentConfig,
        lessons: Sequence[RetrievedLesson] = (),
        skills: Sequence[RetrievedLesson] = (),
        who_i_am: str = "",
        strategy: dict[str, Any] | None = None,
        router: ChatRouter | None = None,
    ) -> None:
        super().__init__(
            model=model,
            store=scratch_store(),
            sandbox=sandbox,
            memory=None,
            reflector=None,
            workspace_root=workspace_root,
            config=config,
            router=router,
        )
        self._lessons = list(lessons)
        self._skills = list(skills)
        self._who = who_i_am
        self._strategy_record = dict(strategy or {})
        self.recorded: list[Trajectory] = []
        self._recorded_lock = threading.Lock()

    def _who_i_am(self) -> str:
        return self._who

    def _strategy(self) -> dict[str, Any]:
        return dict(self._strategy_record)

    def _retrieve(self, request: str) -> tuple[list[RetrievedLesson], list[RetrievedLesson]]:
        return list(self._lessons), list(self._skills)

    def _record(
        self, trajectory: Trajectory, *shown: Sequence[RetrievedLesson], expose: bool
    ) -> Trajectory:
        problem = trajectory.coherence_problem()
        if problem:
            raise IncoherentRecordError(f"trajectory {trajectory.id} refused: {problem}")
        with self._recorded_lock:
            self.recorded.append(trajectory)
        return trajectory
