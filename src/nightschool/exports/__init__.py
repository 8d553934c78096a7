"""Exports for fine-tuning: trajectories as OpenAI chat, preference pairs or a HF dataset.

Pure functions over an iterable of trajectories (corrections overlaid, e.g.
`Store.iter_trajectories`); the CLI (`nightschool trajectories export`) wires
them to the store and to files:

- `openai_chat_records`: OpenAI chat fine-tuning examples from passing
  trajectories (`--format openai-chat`);
- `pairwise_pass_fail`: (rejected, chosen) pairs in TRL's standard DPO form
  (`--format preference`);
- `write_hf_dataset`: a `datasets.load_dataset`-loadable directory, Parquet
  plus a dataset card (`--format hf`).

None of them ever exports an eval, verification or held-out item
(`Exclusions`, built from the store's measurement trajectories), and every
text is redacted again at export.
"""

from nightschool.exports._chat import openai_chat_records, solution_text
from nightschool.exports._hf import (
    DATA_FILE,
    CardFacts,
    atomic_directory,
    dataset_card,
    hf_row,
    hf_rows,
    write_hf_dataset,
)
from nightschool.exports._preference import pairwise_pass_fail
from nightschool.exports._select import (
    MEASUREMENT_KINDS,
    TASK_KINDS,
    Exclusions,
    Run,
    Tally,
    judged_runs,
)

__all__ = [
    "DATA_FILE",
    "MEASUREMENT_KINDS",
    "TASK_KINDS",
    "CardFacts",
    "Exclusions",
    "Run",
    "Tally",
    "atomic_directory",
    "dataset_card",
    "hf_row",
    "hf_rows",
    "judged_runs",
    "openai_chat_records",
    "pairwise_pass_fail",
    "solution_text",
    "write_hf_dataset",
]
