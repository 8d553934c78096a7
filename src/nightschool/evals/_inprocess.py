"""The eval's in-process agent: a `ChatPipeline` that answers and never learns.

`eval run` (runner `inprocess`) and the benches that measure the agent on a
suite (`bench_humaneval`, `bench_examples_check`, `bench_parallel`) all ask
through the same pipeline: no reflector (an eval must not learn from its own
test set), no verifier call (the suite's scorer judges), no reflection on
corrections, session workspaces in a fresh directory removed afterwards.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nightschool.evals._runners import InProcessRunner

if TYPE_CHECKING:
    from nightschool.llm import ChatModel
    from nightschool.sandbox import Sandbox
    from nightschool.store import Store


@contextmanager
def inprocess_runner(
    model: ChatModel,
    store: Store,
    sandbox: Sandbox,
    *,
    memory: Any = None,
    router: Any = None,
    temperature: float = 0.0,
    max_tokens: int | None = None,
    workspace_parent: Path | None = None,
) -> Iterator[InProcessRunner]:
    """An `InProcessRunner` over a fresh eval `ChatPipeline`; closed on exit.

    Args:
        model: the chat model under test (loaded and checked by the caller).
        store: where each turn's trajectory is recorded.
        sandbox: the sandbox the agent's tools and the example check run in.
        memory: a `SkillMemory` to show the playbook from, or None (no memory);
            the caller owns it and closes it.
        router: a `ChatRouter` (forced or learned), or None (the pipeline's
            default: every turn takes the full path).
        temperature: sampling temperature of the agent's calls.
        max_tokens: completion cap per model call, tokens; None keeps
            `AgentConfig`'s default (512).
        workspace_parent: directory under which the session workspaces' root
            is made (default: the system's temporary directory).

    Yields:
        The runner. On exit it waits for a straggling turn, closes the
        pipeline (waiting up to 30 s for its background work) and removes the
        workspaces, whatever happened inside.
    """
    # function-local: start-up time (the agent package, ~50 modules, ~200 ms beyond evals)
    from nightschool.agent import AgentConfig, ChatPipeline

    root = Path(tempfile.mkdtemp(prefix="nightschool-eval-", dir=workspace_parent))
    root.chmod(0o711)  # the sandbox user must reach the session workspaces
    config = AgentConfig(
        temperature=temperature,
        verify=False,  # the suite's scorer judges; the verifier would cost a model call
        reflect_on_correction=False,
    )
    if max_tokens is not None:
        config = replace(config, max_tokens=max_tokens)
    pipeline = ChatPipeline(
        model=model,
        store=store,
        sandbox=sandbox,
        memory=memory,
        reflector=None,  # an eval must not learn from its own test set
        workspace_root=root,
        config=config,
        router=router,
    )
    runner = InProcessRunner(pipeline, model_name=model.name)
    try:
        yield runner
    finally:
        runner.close()
        pipeline.close(wait=True, timeout_s=30)
        for path in {root, Path(pipeline.workspace_root)}:
            shutil.rmtree(path, ignore_errors=True)
