"""Starter tier of cluster `concurrency`: a thread pool, a queue pipeline, a locked ledger.

One module per template (`concurrency_pool`, `concurrency_pipeline`,
`concurrency_bank`), each drawing the seed's task from a family with
`_kit.variant`. The function gets a slow callable (or a slow ledger) built by
the validator's prelude, which records how many calls overlapped and in which
threads, so the checks do not depend on timing; the sleeps keep each case well
under a second.
"""

from __future__ import annotations

from nightschool.challenges._templates.starters.concurrency_bank import bank_transfers
from nightschool.challenges._templates.starters.concurrency_pipeline import pipeline
from nightschool.challenges._templates.starters.concurrency_pool import thread_pool

__all__ = ["bank_transfers", "pipeline", "thread_pool"]
