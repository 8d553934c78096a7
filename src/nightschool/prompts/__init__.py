"""Prompt optimisation: a versioned prompt registry, and GEPA behind the promotion gate.

- `registry`: the live prompt of each slot (`solver`, `reflection`,
  `planning`), append-only, with rollback (`nightschool prompts ...`).
- `optimise.optimise_prompt`: GEPA (the `gepa` package) on the solver's
  system prompt over a private training tier; the best candidate is
  registered only when the promotion gate says it beats the live prompt on a
  held-out set.
- `live.with_live_prompt`: self-play solves with the live solver prompt.
- the idle phase that runs one optimisation is `watchdog.prompt_phase`.

Importing this package does not import `gepa` (`optimise` and `adapter` do).
"""

from nightschool.prompts import registry
from nightschool.prompts.live import LivePromptSolver, with_live_prompt
from nightschool.prompts.registry import (
    SLOTS,
    PromptEntry,
    PromptError,
    StalePromptError,
    live_prompt,
)

__all__ = [
    "SLOTS",
    "LivePromptSolver",
    "PromptEntry",
    "PromptError",
    "StalePromptError",
    "live_prompt",
    "registry",
    "with_live_prompt",
]
