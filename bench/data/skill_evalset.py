"""A labelled skill set from the challenge template bank, for the skill relevance floor.

Skills: for every template and tier, the seed-1 challenge's first sentence (the
summary `nightschool.lessons.skills.skill_summary` stores: `task_summary(prompt,
40 words)`) with its reference solution as the code, learned through
`SkillMemory.learn_skill` (so same-template near-duplicates merge as in
production). Queries: the full prompts of the seed-2 challenges (what
`learning.skills.recall` retrieves with); the right answer is any skill of the
same template.
"""

from __future__ import annotations

from typing import Any

from nightschool.challenges import TIERS, Challenge, render, templates
from nightschool.lessons.guard import task_summary

SUMMARY_WORDS = 40
"""Words kept of a prompt's first sentence, as `learning.skills.SKILL_SUMMARY_WORDS`."""


def challenges(seed: int) -> list[Challenge]:
    """Every template x tier rendered at `seed`; tiers a template cannot render are skipped."""
    out = []
    for template in templates():
        for tier in TIERS:
            try:
                out.append(render(template.name, tier, seed))
            except NotImplementedError:
                continue
    return out


def skill_candidates(seed: int = 1) -> list[dict[str, Any]]:
    """`learn_skill` keyword arguments for every template x tier at `seed`."""
    return [
        {
            "summary": task_summary(challenge.prompt, max_words=SUMMARY_WORDS),
            "code": challenge.reference_solution,
            "domains": [challenge.cluster],
            "source_trajectory_id": f"bench-{challenge.challenge_hash}",
            "challenge_hash": challenge.challenge_hash,
            "template": challenge.template,
            "tier": challenge.tier,
            "extra": {"solution_file": challenge.solution_file},
        }
        for challenge in challenges(seed)
    ]


def skill_queries(seed: int = 2) -> list[tuple[str, str]]:
    """(full prompt, template) for every template x tier at `seed`."""
    return [(challenge.prompt, challenge.template) for challenge in challenges(seed)]
