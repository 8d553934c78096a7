"""The challenge record and the template contract. Side-effect free."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

CLUSTERS: tuple[str, ...] = (
    "algo",
    "bash",
    "concurrency",
    "data_analysis",
    "python_general",
    "regex_parse",
    "sql",
    "web_automation",
)
"""Skill clusters of the template bank, in a fixed order."""

TIERS: tuple[str, ...] = ("starter", "basic", "intermediate", "advanced", "expert")
"""Difficulty tiers, easiest first.

`starter` is a function-sized version of the `basic` task: the solver writes
one function with a given signature (a one-pipeline script for shell
templates) that the validator calls on hidden cases. `basic` is a whole
program reading input files; each tier above it adds one stated twist.
"""

STARTER = "starter"
"""The function-sized tier below `basic` (`TIERS[0]`)."""


def tier_level(tier: str) -> int:
    """Return the 0-based index of `tier` in `TIERS`: starter 0, basic 1 ... expert 4.

    The twist count of a whole-program tier (what `TemplateBase.build` takes as
    `level`: basic 0 ... expert 3) is `tier_level(tier) - 1`.

    Raises:
        ValueError: if `tier` is not one of `TIERS`.
    """
    try:
        return TIERS.index(tier)
    except ValueError:
        raise ValueError(f"unknown tier {tier!r}; known tiers: {', '.join(TIERS)}") from None


@dataclass(frozen=True)
class Challenge:
    """One rendered coding challenge.

    Attributes:
        template: template id, `cluster.name` (e.g. `algo.merge_intervals`).
        cluster: one of `CLUSTERS`.
        tier: one of `TIERS`.
        seed: the seed it was rendered from.
        prompt: everything the solver sees: the task, the input files, the exact
            output format, the solution file name and every twist of the tier.
        setup_script: Python source run first, as `python3 -` with the source on
            stdin, in the empty workspace; it creates the input files.
        validation_script: Python source run as `python3 -` (stdin) after the
            solution file is written. It runs the solution itself (at `starter`:
            imports it in a child process and calls the function), exits 0 on
            pass and non-zero on fail with a short diagnostic on stdout; it never
            prints its own source or the hidden cases.
        reference_solution: a correct solution (the text of `solution_file`).
        wrong_solution: a plausible near-miss the validator rejects (for tests;
            never shown to a solver).
        solution_file: the file the solver writes: `solution.py`, or
            `solution.sh` (run with bash) for shell templates.
        source: where it came from: `template` (the bank), `llm` (written by
            the model and accepted by the quality gates) or `journal` (mined
            from a failed chat turn). Only template challenges enter held-out
            sets.
    """

    template: str
    cluster: str
    tier: str
    seed: int
    prompt: str
    setup_script: str
    validation_script: str
    reference_solution: str
    wrong_solution: str
    solution_file: str = "solution.py"
    source: str = "template"

    @property
    def challenge_hash(self) -> str:
        """First 16 hex digits of sha256 over `prompt + setup_script + validation_script`."""
        text = self.prompt + self.setup_script + self.validation_script
        return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


@runtime_checkable
class Template(Protocol):
    """A parametrised challenge that renders at any tier from any seed.

    Contract:
        - `name` is `cluster.short_name` and `cluster` is one of `CLUSTERS`.
        - `render` is deterministic: the same `(tier, seed)` gives an identical
          `Challenge` in any process (randomness comes from
          `random.Random(f"{name}:{tier}:{seed}")`); different seeds give
          different data.
        - `starter` asks for one function with a stated signature, spec and
          worked examples (shell templates: a one-pipeline script with the
          input shown); its validator calls it on hidden cases.
        - Tiers above `basic` use larger data and add one twist each
          (cumulative), every twist stated in the prompt.
    """

    name: str
    cluster: str

    def render(self, tier: str, seed: int) -> Challenge:
        """Render the challenge for `tier` and `seed`.

        Raises:
            ValueError: if `tier` is not one of `TIERS`.
        """
        ...
