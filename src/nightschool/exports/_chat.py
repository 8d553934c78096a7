"""`openai-chat`: OpenAI chat fine-tuning examples from passing trajectories.

One JSON object per line, in the shape of OpenAI's chat fine-tuning files
(https://platform.openai.com/docs/guides/supervised-fine-tuning):

    {"messages": [{"role": "system", "content": <system prompt as the model saw it>},
                  {"role": "user", "content": <the request>},
                  {"role": "assistant", "content": <the final solution>}]}

No other keys (the provenance stays in the store; `--format hf` keeps it).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator
from typing import Any

from nightschool.exports._select import (
    Exclusions,
    Tally,
    clean,
    code_key,
    fence,
    judged_runs,
)
from nightschool.trajectory import Outcome, Trajectory


def _digest(*parts: str) -> str:
    return hashlib.sha256("\x00".join(parts).encode("utf-8")).hexdigest()


def solution_text(trajectory: Trajectory) -> tuple[str | None, str]:
    """The assistant turn a passing trajectory teaches, or None and why not.

    - a trajectory with judged runs (self-play): its last program, which the
      verdict that counts accepted, fenced as the solver is asked to reply
      (the program as it ran: at the starter tier, test code the model added
      against the instructions was already stripped before the run);
    - a chat turn that called no tools: its final response;
    - anything else: None. A chat turn that used tools answers from tool
      results this three-message shape leaves out, so training on its reply
      would teach answering without looking.

    Returns:
        (text or None, a dedup key for the text or the skip reason).
    """
    runs = judged_runs(trajectory)
    if runs:
        last = runs[-1]
        if not last.passed:
            return None, "passing trajectories without a passing program"
        return fence(last), "code:" + code_key(last)
    if trajectory.task_kind == "chat":
        if trajectory.tool_calls:
            return None, "chat turns that used tools"
        answer = trajectory.final_response.strip()
        if not answer:
            return None, "chat turns without a final response"
        return clean(answer), "text:" + _digest(" ".join(answer.split()))
    return None, f"{trajectory.task_kind} trajectories without a solution"


def openai_chat_records(
    trajectories: Iterable[Trajectory],
    *,
    exclusions: Exclusions | None = None,
    tally: Tally | None = None,
) -> Iterator[dict[str, Any]]:
    """Yield one OpenAI chat fine-tuning example per usable passing trajectory.

    Args:
        trajectories: any trajectories (corrections overlaid); not mutated.
        exclusions: measured items to leave out (None: only the measurement
            kinds themselves, `eval` and `verification`, are left out).
        tally: counts what was written and what was skipped, per reason.

    Yields:
        `{"messages": [system, user, assistant]}`, every `content` a non-empty,
        redacted string, in input order. A trajectory is used when its
        effective outcome is `passed`, it is not excluded, its system prompt and
        request are not empty, `solution_text` gives an answer, and no earlier
        example had the same system prompt, request and answer (programs
        compared with `normalise_code`).
    """
    exclusions = exclusions or Exclusions()
    tally = tally if tally is not None else Tally()
    tally.unit = "chat examples"
    seen: set[str] = set()
    for trajectory in trajectories:
        why = exclusions.reason(trajectory)
        if why is not None:
            tally.skip(why)
            continue
        if trajectory.outcome != Outcome.PASSED:
            tally.skip(f"{trajectory.outcome.value} (not passed)")
            continue
        system, request = trajectory.system_prompt.strip(), trajectory.user_request.strip()
        if not system or not request:
            tally.skip("without a system prompt or request")
            continue
        answer, key = solution_text(trajectory)
        if answer is None:
            tally.skip(key)
            continue
        identity = _digest(" ".join(system.split()), " ".join(request.split()), key)
        if identity in seen:
            tally.skip("duplicate examples")
            continue
        seen.add(identity)
        tally.written += 1
        yield {
            "messages": [
                {"role": "system", "content": clean(system)},
                {"role": "user", "content": clean(request)},
                {"role": "assistant", "content": answer},
            ]
        }
