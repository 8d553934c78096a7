"""Skills from successes, and what a solver is shown before it starts.

A passing self-play solution becomes a **skill**: the task's first sentence
plus the verified code, with provenance (the passing trajectory's id), the
challenge hash, template and tier (seed 002 `skills_auto`; Voyager's skill
library, Wang et al. 2023; Agent Workflow Memory, Wang et al. 2024: verified
code retrieved by description helps small models more than prose advice).

What anyone is shown from the playbook is decided here, in two functions
that end in the same `shown_recall`: `recall` for a challenge (the dream loop,
controlled verification, the learning curve, the streams: lessons under
`### SKILL PLAYBOOK` and skills under `### WORKED EXAMPLES`, each behind the
playbook's relevance floor and within a token budget, never a skill made from
the very challenge at hand, never anything from a held-out template) and
`recall_request` for a user's request (chat, `serve`, the HTTP eval runner:
verified entries, unverified ones only for nearly their own task). Neither
ever shows a harmful entry (`Lesson.shown_to`), so what is measured is what is
used.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from nightschool.challenges import Challenge, templates
from nightschool.lessons._task_key import prompt_sha as prompt_sha
from nightschool.lessons.guard import task_summary
from nightschool.playbook import (
    PLAYBOOK_TOKEN_BUDGET,
    Audience,
    Kind,
    LearnResult,
    Lesson,
    RetrievedLesson,
    SkillMemory,
    fit_to_budget,
    format_worked_examples,
)
from nightschool.trajectory import ToolCall

if TYPE_CHECKING:
    from nightschool.lessons.verify import PairedVerifier, Verification

SKILL_CONFIDENCE = 0.5
"""Starting confidence of a skill: its code passed the validator once, unverified."""

SKILL_SUMMARY_WORDS = 40
"""Words of the task's first sentence kept as the skill's summary."""

WORKED_EXAMPLES_TOKENS = 700
"""Token budget of the `### WORKED EXAMPLES` section (about two starter-sized
solutions; estimated as characters / 4 by `format_worked_examples`)."""


RELATED_K = 10
"""Skills retrieval ranks highest for a task that are never its exemplars (they are
what retrieval would show, the nearest; the placebo arms exclude the same top 10)."""


def related_ids(
    memory: SkillMemory, prompt: str, *, kinds: Sequence[Kind] = ("skill",)
) -> set[str]:
    """Ids retrieval ranks as related to `prompt`: its top `RELATED_K` of each of `kinds`."""
    return {
        item.lesson.id for kind in kinds for item in memory.retrieve(prompt, k=RELATED_K, kind=kind)
    }


def exemplars(
    memory: SkillMemory | None,
    challenge: Challenge,
    *,
    k: int,
    verified_only: bool = False,
    exclude_ids: Collection[str] = (),
    exclude_templates: Collection[str] = (),
    audience: Audience = "practice",
) -> list[Lesson]:
    """The first `k` skills learned on *other* tasks of the challenge's cluster: format exemplars.

    Not the nearest skills (what `recall` retrieves) but the oldest ones that
    retrieval does *not* rank as related (outside its top `RELATED_K`), the
    same for every task they are not related to. Measured on the MBPP stream
    (Qwen2.5-Coder-1.5B, 200 tasks, order 0): showing unrelated solved
    functions beat showing none (placebo arm, 15 wins / 4 losses, exact
    p = 0.0096) while the nearest ones did less (memory arm, 15 / 9); the
    stream's `fixed` arm is this function.

    Args:
        memory: the playbook; None shows nothing.
        challenge: the task at hand: never a skill of its own challenge, of its
            very task text, of its template, or of another cluster.
        k: exemplars at most (0: none).
        verified_only: only skills the paired gate verified (dream practice).
        exclude_ids: skills never chosen (a stream's skills learned at or after
            the task's position).
        exclude_templates: templates whose skills are never chosen (held-out sets).
        audience: who is shown them (`Lesson.shown_to`: never a harmful one).

    Returns:
        Up to `k` skills, oldest first.
    """
    if memory is None or k <= 0:
        return []
    related = related_ids(memory, challenge.prompt)
    own = prompt_sha(challenge.prompt)
    skipped = set(exclude_ids) | related
    chosen: list[Lesson] = []
    for skill in memory.list(kind="skill", verified=True if verified_only else None):
        if (
            skill.id in skipped
            or not skill.shown_to(audience)
            or challenge.cluster not in skill.domains
            or skill.challenge_hash == challenge.challenge_hash
            or skill.extra.get("prompt_sha") == own
            or (skill.template and skill.template == challenge.template)
            or skill.template in exclude_templates
        ):
            continue
        chosen.append(skill)
        if len(chosen) == k:
            break
    return chosen


@dataclass(frozen=True)
class Recall:
    """What a solver is shown for one challenge.

    Attributes:
        lessons: retrieved lessons, best first (shown under `### SKILL PLAYBOOK`).
        skills: retrieved skills, best first (shown under `### WORKED EXAMPLES`).
        skill_sections: the rendered `### WORKED EXAMPLES` section as a
            one-element list, or [] when no skill fits.
    """

    lessons: list[RetrievedLesson] = field(default_factory=list)
    skills: list[RetrievedLesson] = field(default_factory=list)
    skill_sections: list[str] = field(default_factory=list)

    @property
    def skill_ids(self) -> list[str]:
        """Ids of the skills shown."""
        return [item.lesson.id for item in self.skills]


def recall(
    memory: SkillMemory | None,
    challenge: Challenge,
    *,
    lessons_k: int = 3,
    skills_k: int = 2,
    exclude_templates: Collection[str] = (),
    token_budget: int = WORKED_EXAMPLES_TOKENS,
    same_template: bool = True,
    exemplars_k: int = 0,
    exemplars_verified: bool = True,
) -> Recall:
    """Retrieve the lessons and skills a solver sees for `challenge`.

    Args:
        memory: the playbook; None (or both k's 0) shows nothing.
        challenge: the task at hand; skills made from it (same `challenge_hash`)
            or from a rendering with the very same task text (`prompt_sha`) are
            never shown: never an exact copy of the task at hand.
        lessons_k: lessons at most (0: none).
        skills_k: skills at most (0: none).
        exclude_templates: templates whose skills must never be shown (a
            held-out set's templates).
        token_budget: budget of the worked-examples section, tokens.
        same_template: show only skills made from renderings of the challenge's
            own template. A skill's verification (the gate on fresh renderings
            of its template) is evidence about that template alone, and a
            worked example of a neighbouring task misleads a small model: in
            the first learning curve (Qwen2.5-Coder-0.5B) the one skill learned,
            `sql.customer_totals`, passed the relevance floor (scores 0.52-0.53)
            for both items of the unseen `sql.top_product` and turned both
            passes into failures, while on its own template (score 0.79) it
            turned a failure into a pass.
        exemplars_k: when no skill is retrieved, show up to this many
            `exemplars` instead (0, or `skills_k` 0: none).
        exemplars_verified: exemplars only among verified skills.

    Returns:
        The `Recall`; an unrelated challenge gets nothing (the playbook's
        relevance floor).
    """
    if memory is None:
        return Recall()
    lessons = (
        memory.retrieve(
            challenge.prompt, k=lessons_k, cluster=challenge.cluster, audience="practice"
        )
        if lessons_k > 0
        else []
    )
    skills: list[RetrievedLesson] = []
    if skills_k > 0:
        own = prompt_sha(challenge.prompt)
        found = memory.retrieve(
            challenge.prompt,
            k=skills_k + SAME_PROMPT_SLACK,
            cluster=challenge.cluster,
            kind="skill",
            exclude_challenge_hashes=(challenge.challenge_hash,),
            exclude_templates=tuple(exclude_templates),
            audience="practice",
        )
        # a skill made from the very same task text is an exact copy of the task at hand
        skills = [item for item in found if item.lesson.extra.get("prompt_sha") != own]
        if same_template:
            skills = [item for item in skills if item.lesson.template == challenge.template]
        skills = skills[:skills_k]
    if not skills and skills_k > 0 and exemplars_k > 0:
        skills = unranked(
            exemplars(
                memory,
                challenge,
                k=exemplars_k,
                verified_only=exemplars_verified,
                exclude_templates=exclude_templates,
            )
        )
    return shown_recall(lessons, skills, token_budget=token_budget)


def recall_request(
    memory: SkillMemory | None,
    request: str,
    *,
    lessons_k: int = 3,
    skills_k: int = 2,
    token_budget: int = WORKED_EXAMPLES_TOKENS,
    cluster: str | None = None,
    audience: Audience = "chat",
) -> Recall:
    """What a user's request is shown: verified lessons and skills behind the floor.

    Args:
        memory: the playbook; None (or both k's 0) shows nothing.
        request: the user's message (any text).
        lessons_k: lessons at most (0: none).
        skills_k: skills at most (0: none).
        token_budget: budget of the worked-examples section, tokens.
        cluster: the request's domain when known (a small boost, never the floor).
        audience: `chat` (default): entries the paired gate verified, and an
            entry not verified yet only when the request is nearly the task it
            was made from (`MemoryConfig.chat_recall_score`: recall, the one
            lift measured); never a rejected or harmful one. Unverified
            neighbours at similarity 0.52-0.53 turned passing items into
            failures on the 0.5B model (first learning curve).

    Returns:
        The `Recall`; an unrelated request, an empty playbook or one without
        verified entries gives nothing.
    """
    if memory is None:
        return Recall()
    lessons = (
        memory.retrieve(request, k=lessons_k, cluster=cluster, audience=audience)
        if lessons_k > 0
        else []
    )
    skills = (
        memory.retrieve(request, k=skills_k, cluster=cluster, kind="skill", audience=audience)
        if skills_k > 0
        else []
    )
    return shown_recall(lessons, skills, token_budget=token_budget)


def shown_recall(
    lessons: Sequence[RetrievedLesson],
    skills: Sequence[RetrievedLesson],
    *,
    token_budget: int = WORKED_EXAMPLES_TOKENS,
) -> Recall:
    """The `Recall` of chosen entries: cut to the sections' budgets, skills rendered.

    Records only what the prompt will show: lessons within
    `PLAYBOOK_TOKEN_BUDGET`, skills within `token_budget` (tokens), in the
    order given; the `### WORKED EXAMPLES` section is rendered from the
    skills kept. `recall` and the placebo arms (learning curve, stream) end here.
    """
    kept_lessons = fit_to_budget(list(lessons), PLAYBOOK_TOKEN_BUDGET, kind="lesson")
    kept_skills = fit_to_budget(list(skills), token_budget, kind="skill")
    section = format_worked_examples(kept_skills, token_budget=None) if kept_skills else ""
    return Recall(kept_lessons, kept_skills, [section] if section else [])


def unranked(entries: Sequence[Lesson]) -> list[RetrievedLesson]:
    """`entries` as shown items without a retrieval score (score 0, ranks 1..n in order)."""
    return [
        RetrievedLesson(lesson=e, score=0.0, bm25_score=0.0, vector_score=0.0, rank=k)
        for k, e in enumerate(entries, start=1)
    ]


SAME_PROMPT_SLACK = 3
"""Extra skills retrieved so that dropping same-task skills still leaves `skills_k`."""


_SIGNATURE = re.compile(r"^\s*def\s+\w+\s*\(.*$", re.MULTILINE)


def skill_summary(challenge: Challenge) -> str:
    """The skill's description (at most 40 words of prose, plus a signature).

    A function-sized task (a `def` line in the prompt, as in the `starter`
    tier) is described by its signature and the first sentence of its
    docstring; any other task by the prompt's first sentence.
    """
    prompt = challenge.prompt
    signature = _SIGNATURE.search(prompt)
    if signature is not None:
        rest = prompt[signature.end() :].strip().lstrip('"').lstrip("'").strip()
        doc = task_summary(rest, max_words=SKILL_SUMMARY_WORDS)
        return f"{signature.group(0).strip()} {doc}".strip()
    return task_summary(prompt, max_words=SKILL_SUMMARY_WORDS) or challenge.template


def learn_skill(
    memory: SkillMemory,
    challenge: Challenge,
    code: str,
    *,
    source_trajectory_id: str,
) -> LearnResult:
    """Store the passing `code` for `challenge` as an (unverified) skill.

    Args:
        memory: the playbook.
        challenge: the challenge the code passed.
        code: the solution file's text that the validator accepted.
        source_trajectory_id: the passing trajectory (provenance; retracting
            it archives the skill).

    Returns:
        The playbook's verdict: `written`, `reinforced` (the same code or a
        near-duplicate skill of the same template was already there) or
        `rejected`.
    """
    return memory.learn_skill(
        summary=skill_summary(challenge),
        code=code,
        domains=[challenge.cluster],
        source_trajectory_id=source_trajectory_id,
        challenge_hash=challenge.challenge_hash,
        template=challenge.template,
        tier=challenge.tier,
        confidence=SKILL_CONFIDENCE,
        extra={
            "solution_file": challenge.solution_file,
            "seed": challenge.seed,
            "prompt_sha": prompt_sha(challenge.prompt),
        },
    )


def skills_awaiting_verification(
    memory: SkillMemory, *, exclude_templates: Collection[str] = ()
) -> list[Lesson]:
    """Stored skills whose comparison has not run yet, in the playbook's listing order.

    A skill qualifies when it is unverified, carries no `verification` record
    (a refused or faulted comparison stores one) and has a tier and a template
    of the bank outside `exclude_templates` (its renderings are what
    `verify_skill` compares on). The idle watchdog's skills phase and the
    dream's verification queue (`nightschool.dream.queue`) pick the same ones.
    """
    bank = {t.name for t in templates()} - set(exclude_templates)
    return [
        skill
        for skill in memory.list(kind="skill", verified=False)
        if "verification" not in (skill.extra or {}) and skill.template in bank and skill.tier
    ]


def verify_skill(
    verifier: PairedVerifier,
    skill: Lesson,
    *,
    exclude_prompt: str = "",
    on_event: Callable[[str], None] | None = None,
) -> Verification:
    """Solve fresh renderings of `skill`'s template with and without it, through the gate.

    The skill is shown alone as a `### WORKED EXAMPLES` section (no token
    budget cut); its own challenge (`skill.challenge_hash`, and `exclude_prompt`
    when given) is never one of the renderings. The caller stores the verdict
    (`SkillMemory.set_verified`).

    Args:
        verifier: the paired comparison (its `k` renderings per arm).
        skill: a skill row with `template` and `tier` from the template bank.
        exclude_prompt: the source challenge's prompt, also excluded.
        on_event: progress lines.

    Returns:
        The `Verification` (`helps`, `record()`, `infrastructure_error`).

    Raises:
        ValueError: the skill's template is not in the bank.
    """
    item = RetrievedLesson(lesson=skill, score=1.0, bm25_score=0.0, vector_score=0.0, rank=1)
    section = format_worked_examples([item], token_budget=10_000)
    return verifier.compare(
        skill.template,
        skill.tier,
        skills=[section] if section else [],
        skill_ids=[skill.id],
        exclude_hash=skill.challenge_hash,
        exclude_prompt=exclude_prompt,
        on_event=on_event,
    )


def passing_code(calls: Sequence[ToolCall]) -> str | None:
    """The code of the last `run_solution` call that passed, or None.

    Args:
        calls: a trajectory's `tool_calls`.
    """
    for call in reversed(calls):
        code = call.arguments.get("code")
        if call.name == "run_solution" and call.result == "passed" and code:
            return str(code)
    return None
