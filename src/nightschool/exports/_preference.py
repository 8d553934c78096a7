"""`preference`: (rejected, chosen) pairs for DPO-style trainers (seed 002 `pairwise_pass_fail`).

Shape: TRL's *standard* preference format (`trl.DPOTrainer`, also read by
OpenRLHF and axolotl), one JSON object per line:

    {"prompt": <the task>, "chosen": <fenced passing program>,
     "rejected": <fenced failing program>, "system": <system prompt>,
     "pair_kind": "retry" | "cross", "challenge_hash": ..., "cluster": ...,
     "tier": ..., "chosen_trajectory_id": ..., "rejected_trajectory_id": ...}

Trainers read `prompt`, `chosen` and `rejected` and drop the other columns.
The standard (string) form was chosen over TRL's conversational form because
every DPO trainer reads it; `prompt` is the task text alone and `system` holds
the system prompt of the chosen trajectory, so the conversational form is one
`map` away: `prompt=[{"role": "system", "content": system}, {"role": "user",
"content": prompt}]`, `chosen=[{"role": "assistant", "content": chosen}]`, and
the same for `rejected`.

Both programs answer the same task and the validator (or a correction, see
`judged_runs`) judged them; the prompt is the task as first posed, whichever
attempt wrote the program (a retry saw the checker's message, but its program
is still a solution of the task, right or wrong).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from nightschool.exports._select import (
    Exclusions,
    Run,
    Tally,
    clean,
    code_key,
    fence,
    judged_runs,
)
from nightschool.lessons.skills import prompt_sha
from nightschool.trajectory import Outcome, Trajectory


def _pair(
    kind: str, chosen: tuple[Trajectory, Run], rejected: tuple[Trajectory, Run]
) -> dict[str, Any]:
    winner, good = chosen
    loser, bad = rejected
    return {
        "prompt": clean(winner.user_request.strip()),
        "chosen": fence(good),
        "rejected": fence(bad),
        "system": clean(winner.system_prompt.strip()),
        "pair_kind": kind,
        "challenge_hash": winner.extra.get("challenge_hash"),
        "cluster": winner.cluster,
        "tier": winner.tier,
        "chosen_trajectory_id": winner.id,
        "rejected_trajectory_id": loser.id,
    }


def pairwise_pass_fail(
    trajectories: Iterable[Trajectory],
    *,
    exclusions: Exclusions | None = None,
    tally: Tally | None = None,
) -> list[dict[str, Any]]:
    """(rejected, chosen) pairs from failed and passed programs on the same task.

    Two sources, in this order:

    - `retry`: inside one trajectory whose effective outcome is `passed`,
      each failed program before the passing one is rejected against it;
    - `cross`: across trajectories on the same challenge (same
      `extra["challenge_hash"]`, e.g. `nightschool dream --samples N`), every
      failed program of a `failed` trajectory is rejected against the passing
      program of each `passed` one.

    `unknown` trajectories (infrastructure faults) give no pairs; neither do
    those without judged programs (chat turns). Pairs are deduplicated on
    (task text, chosen program, rejected program), programs compared with
    `normalise_code`; a pair whose two programs normalise the same (a flaky
    verdict) is dropped.

    Args:
        trajectories: any trajectories (corrections overlaid); read once, not
            mutated.
        exclusions: measured items to leave out (None: only the measurement
            kinds themselves).
        tally: counts pairs written and what gave none, per reason.

    Returns:
        Pairs in the shape of the module docstring, every string redacted.
    """
    exclusions = exclusions or Exclusions()
    tally = tally if tally is not None else Tally()
    tally.unit = "preference pairs"
    usable: list[tuple[Trajectory, list[Run]]] = []
    for trajectory in trajectories:
        why = exclusions.reason(trajectory)
        if why is None and trajectory.outcome == Outcome.UNKNOWN:
            why = "unknown outcome"
        runs = judged_runs(trajectory) if why is None else []
        if why is None and not runs:
            why = "without a judged program"
        if why is not None:
            tally.skip(why)
            continue
        usable.append((trajectory, runs))
    candidates: list[tuple[str, tuple[Trajectory, Run], tuple[Trajectory, Run]]] = []
    for trajectory, runs in usable:
        if trajectory.outcome == Outcome.PASSED and runs[-1].passed:
            candidates += [
                ("retry", (trajectory, runs[-1]), (trajectory, run))
                for run in runs[:-1]
                if not run.passed
            ]
    groups: dict[str, list[tuple[Trajectory, list[Run]]]] = {}
    for trajectory, runs in usable:
        challenge = trajectory.extra.get("challenge_hash")
        if challenge:
            groups.setdefault(str(challenge), []).append((trajectory, runs))
    for members in groups.values():
        winners = [(t, r[-1]) for t, r in members if t.outcome == Outcome.PASSED and r[-1].passed]
        failed = [(t, r) for t, r in members if t.outcome == Outcome.FAILED]
        losers = [(t, run) for t, r in failed for run in r if not run.passed]
        candidates += [("cross", winner, loser) for winner in winners for loser in losers]
    pairs: list[dict[str, Any]] = []
    seen: set[tuple[str, str, str]] = set()
    paired = {t.id for _, won, lost in candidates for t in (won[0], lost[0])}
    for kind, chosen, rejected in candidates:
        good, bad = code_key(chosen[1]), code_key(rejected[1])
        if good == bad:
            tally.skip("pairs of one program judged both ways")
            continue
        key = (prompt_sha(chosen[0].user_request), good, bad)
        if key in seen:
            tally.skip("duplicate pairs")
            continue
        seen.add(key)
        pairs.append(_pair(kind, chosen, rejected))
    tally.skip(
        "trajectories without a pass/fail contrast",
        sum(trajectory.id not in paired for trajectory, _ in usable),
    )
    tally.written = len(pairs)
    return pairs
