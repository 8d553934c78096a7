"""What a chat turn is shown from the playbook: lessons and skills, cut to their budgets."""

from __future__ import annotations

from nightschool.agent._types import AgentConfig
from nightschool.playbook import PLAYBOOK_TOKEN_BUDGET, RetrievedLesson, SkillMemory, fit_to_budget

__all__ = ["retrieve_shown"]


def retrieve_shown(
    memory: SkillMemory | None, config: AgentConfig, request: str
) -> tuple[list[RetrievedLesson], list[RetrievedLesson]]:
    """(lessons, skills) a turn on `request` is shown: retrieved, cut to their sections' budgets.

    `config.playbook_k` lessons within `PLAYBOOK_TOKEN_BUDGET`, then
    `config.skills_k` skills within `config.skills_token_budget`; both empty
    without a `memory`. Reads the playbook only (no exposure is recorded).
    """
    if memory is None:
        return [], []
    lessons = memory.retrieve(request, k=config.playbook_k) if config.playbook_k > 0 else []
    skills = (
        memory.retrieve(request, k=config.skills_k, kind="skill") if config.skills_k > 0 else []
    )
    return (
        fit_to_budget(lessons, PLAYBOOK_TOKEN_BUDGET),
        fit_to_budget(skills, config.skills_token_budget, kind="skill"),
    )
