"""Cluster `concurrency`: a thread pool, a producer/consumer pipeline, lock-protected transfers.

One module per template (`concurrency_pool`, `concurrency_pipeline`,
`concurrency_bank`); each seed draws its task from the template's family with
`_kit.variant` (what to report, the input file's shape, the output's order or
destination), then the tier's twists apply on top. The helper modules the
setup writes (`jobs.py`, `lib.py`, `ledger.py`, from `_concurrency_libs`) check
the concurrency rules themselves (too many calls at once, out-of-order
handling) and write a report that the validator reads; their delays are
sleeps, so the time limits hold on a loaded 2-core machine.
"""

from __future__ import annotations

from nightschool.challenges._templates.concurrency_bank import BankTransfers
from nightschool.challenges._templates.concurrency_pipeline import Pipeline
from nightschool.challenges._templates.concurrency_pool import ThreadPool

TEMPLATES = (ThreadPool(), Pipeline(), BankTransfers())
"""The cluster's templates."""

__all__ = ["TEMPLATES", "BankTransfers", "Pipeline", "ThreadPool"]
