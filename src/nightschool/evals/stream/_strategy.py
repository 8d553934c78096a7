"""The stream's strategy arm: strategy items distilled from successes and failures.

ReasoningBank (Ouyang et al. 2025, arXiv 2509.25140; +8.3 points on WebArena)
keeps *strategies*, not solved tasks: after every task, the agent judges its
own trajectory and distils a short item (a title, when it applies, what to do)
from a success as well as from a failure, retrieves the top one for the next
task by similarity, and adds it to the system prompt. Issue 26 asks for it
because the memory arm's worked examples are copies of solved tasks, and its
lessons come from failures only.

The arm answers each task shown the `STRATEGY_K` strategy items nearest to it
(retrieval's relevance floor applies; never one distilled from this task),
then distils one item from its own answer, judged by the public test (a user
sees that; the hidden tests never reach it): one more model call under a
grammar, the generalization guard (no run of 6 tokens shared with the task or
its test), then the playbook's de-duplication. Its items live in their own
database (`RUN/strategy.db`), so no other arm is ever shown one.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass

from nightschool.evals.stream._tasks import StreamTask, challenge_for
from nightschool.lessons.guard import generalization_problem
from nightschool.lessons.skills import Recall, recall
from nightschool.llm import ChatModel
from nightschool.playbook import SkillMemory
from nightschool.solver import SolveResult

STRATEGY_ARM = "strategy"
"""The arm's name in the rows."""

STRATEGY_K = 1
"""Strategy items shown per task (ReasoningBank's default top-1 retrieval; more items
did not help there)."""

STRATEGY_MAX_TOKENS = 160
"""Completion cap of the distillation call (three short lines)."""

STRATEGY_PROMPT = """You just answered a coding task. {outcome}
Write ONE general strategy that would help with SIMILAR tasks in future: how to approach
them, not this task's answer. Do not repeat this task's function name, data values or wording.

TASK:
{task}

YOUR ANSWER:
{code}

Answer in exactly this format:
TITLE: <a few words naming the strategy>
WHEN: <one sentence that starts "A task that" and names the kind of task it applies to>
DO: <what to do, one or two sentences>
"""

STRATEGY_GRAMMAR = r"""
root ::= "TITLE: " short "\nWHEN: " line "\nDO: " line "\n"
short ::= [A-Za-z] [ -~]{3,60}
line ::= [A-Za-z] [ -~]{10,300}
"""
"""GBNF for the distillation reply, enforced where the backend takes grammars: printable
ASCII only (the first replies of the default model slid into Chinese mid-word, as its
lessons do: "use built-in函数"), a DO line of up to 300 characters (200 cut them off)."""

_LINE = re.compile(r"^\W*(title|when|do)\W*\s*:\s*(.+)$", re.IGNORECASE)


@dataclass(frozen=True)
class StrategyItem:
    """One distilled strategy (ReasoningBank's title, description, content)."""

    title: str
    when: str
    do: str


def parse_strategy(text: str) -> StrategyItem | None:
    """The item in a distillation reply (any case, bullets), or None without WHEN and DO."""
    found: dict[str, str] = {}
    for line in text.splitlines():
        match = _LINE.match(line.strip().replace("**", ""))
        if match:
            found.setdefault(match[1].lower(), match[2].strip())
    if not found.get("when") or not found.get("do"):
        return None
    return StrategyItem(found.get("title", ""), found["when"], found["do"])


def _outcome(result: SolveResult) -> str:
    if result.passed:
        return "It passed its example test. Say what made it work."
    errors = [call.error for call in result.trajectory.tool_calls if call.error]
    said = errors[-1][-300:] if errors else "no code was found in the answer"
    return f"It failed its example test ({said}). Say what to do so that it does not fail again."


def distill_strategy(
    model: ChatModel,
    strategies: SkillMemory,
    task: StreamTask,
    result: SolveResult,
    code: str | None,
    trajectory_id: str,
) -> tuple[str, str, str]:
    """Distil one strategy item from an answer and keep it if it generalises.

    Args:
        model: the model that answered (one more call, temperature 0.2).
        strategies: the arm's own playbook (`RUN/strategy.db`).
        task: the task answered.
        result: the answer's public-test result (pass or fail; both teach).
        code: the answer's program ("" shown when there was none).
        trajectory_id: the stored answer (the item's provenance).

    Returns:
        (`strategy:<status>`, the item's id or "", why): status `written`,
        `reinforced` (a near-duplicate exists), `rejected` (the guard or the
        playbook said no) or `unparseable`.

    Raises:
        InfrastructureError: the model failed.
    """
    challenge = challenge_for(task)
    prompt = STRATEGY_PROMPT.format(
        outcome=_outcome(result), task=challenge.prompt[:1500], code=(code or "")[:1200]
    )
    reply = model.complete(
        [{"role": "user", "content": prompt}],
        temperature=0.2,
        max_tokens=STRATEGY_MAX_TOKENS,
        grammar=STRATEGY_GRAMMAR,
    )
    item = parse_strategy(reply.text)
    if item is None:
        return "strategy:unparseable", "", "the reply had no WHEN and DO"
    problem = generalization_problem(
        trigger=f"{item.title} {item.when}",
        anti_pattern="",
        correct_pattern=item.do,
        domains=["python_general"],
        sources=(challenge.prompt, challenge.validation_script),
    )
    if problem:
        return "strategy:rejected", "", f"generalization guard: {problem}"
    learned = strategies.learn(
        trigger=item.when,
        anti_pattern="",
        correct_pattern=item.do,
        domains=["python_general"],
        source="stream",
        source_trajectory_id=trajectory_id,
        challenge_hash=challenge.challenge_hash,
        extra={"strategy": item.title, "from": "pass" if result.passed else "failure"},
    )
    return f"strategy:{learned.status}", learned.lesson_id or "", learned.reason


def strategy_recall(
    strategies: SkillMemory, task: StreamTask, k: int = STRATEGY_K, exclude: Collection[str] = ()
) -> Recall:
    """The `k` strategy items nearest to `task` (above the relevance floor), none from it.

    Args:
        strategies: the strategy arm's playbook.
        task: the task at hand.
        k: items shown at most.
        exclude: ids never shown (items learned at this position or later,
            for an arm that reads a finished strategy arm).
    """
    challenge = challenge_for(task)
    found = recall(
        strategies, challenge, lessons_k=k + len(exclude), skills_k=0, same_template=False
    )
    lessons = [
        x
        for x in found.lessons
        if x.lesson.challenge_hash != challenge.challenge_hash and x.lesson.id not in exclude
    ]
    return Recall(lessons[:k], [], [])
