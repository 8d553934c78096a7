"""What a chat turn is shown: `lessons.skills.recall_request` with the agent's k's.

The decision itself (verified entries only, never a harmful one, the relevance
floor, the budgets) lives in `lessons.skills`, beside `recall`, which decides
for self-play; this module only maps `AgentConfig` onto it.
"""

from __future__ import annotations

from nightschool.agent._types import AgentConfig
from nightschool.lessons.skills import Recall, recall_request
from nightschool.playbook import SkillMemory

__all__ = ["shown_for_request"]


def shown_for_request(memory: SkillMemory | None, config: AgentConfig, request: str) -> Recall:
    """The `Recall` a turn on `request` is shown (nothing without a `memory`).

    `config.playbook_k` lessons within `PLAYBOOK_TOKEN_BUDGET`, then
    `config.skills_k` skills within `config.skills_token_budget`, for the
    `chat` audience. Reads the playbook only (no exposure is recorded).
    """
    return recall_request(
        memory,
        request,
        lessons_k=config.playbook_k,
        skills_k=config.skills_k,
        token_budget=config.skills_token_budget,
    )
