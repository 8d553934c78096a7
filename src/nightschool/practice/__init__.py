"""The composition root of practice: what wires a dream loop to the solver, playbook and learners.

`open_practice` assembles a session (solver, playbook, verifier, extractor,
PRM frontier, search, live prompt, champion strategy) for `nightschool dream`,
the idle watchdog and the chat agent's self-play tools; it sits above every
package it wires, so none of them imports another upward.
"""

from nightschool.practice.session import (
    CONSOLIDATE_REFLECTIONS,
    FIRST_COOLDOWN_S,
    Practice,
    consolidate,
    next_cooldown,
    open_practice,
    run_loop,
)

__all__ = [
    "CONSOLIDATE_REFLECTIONS",
    "FIRST_COOLDOWN_S",
    "Practice",
    "consolidate",
    "next_cooldown",
    "open_practice",
    "run_loop",
]
