"""Test builders of challenges."""

from __future__ import annotations

from nightschool.challenges import Challenge


def bare_challenge(
    template: str, prompt: str, *, cluster: str = "python_general", tier: str = "starter"
) -> Challenge:
    """A challenge that is only its prompt: no setup, validator or solutions.

    For tests of what memory shows or learns for a task (retrieval, exemplars,
    skills), where nothing is ever run.
    """
    return Challenge(
        template=template,
        cluster=cluster,
        tier=tier,
        seed=0,
        prompt=prompt,
        setup_script="",
        validation_script="",
        reference_solution="",
        wrong_solution="",
    )
