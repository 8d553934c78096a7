"""Each arm as the first draw of the three-draw policy: the bar at equal draws.

The `resample2` arm answers plainly, runs the request's public test, and on a
failure asks the very same request again, up to three draws (the no-memory
answer N, the resample draw R, the third draw R2). A mechanism that shows the
model something (memory, placebo, static, ...) has to beat that policy at the
same number of draws, not one plain answer. So its answer is read as the first
draw; where its public test failed, the no-memory answer (a plain draw); where
that failed too, the resample arm's (a hotter plain draw): at most three draws,
as `resample2`. Every one of those requests is fixed before any outcome is
known (same prompt, seed and temperature whatever came before), so the rows
give the policy exactly, without a model call.

Measured (Qwen2.5-Coder-1.5B, order 0, `bench/bench_stream.py RUN`): MBPP, 200
tasks (`bench/results/stream-mbpp-order0-n200`): resample2 145; memory first
148 (9 wins / 6 losses, exact p = 0.30), placebo first 148 (8/5), static first
145 (8/8), fixed 143, curated 142; HumanEval-164
(`bench/results/stream-humaneval-order0`): resample2 114, memory first 119
(9/4, p = 0.13). At equal draws nothing shown is promoted over three plain
draws. Read with a fourth draw (the arm first, then all three plain draws),
the same arms looked better (placebo 8 wins / 0 losses): that was the extra
draw, which is why the policy here stops at three.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from nightschool.evals.stream._report import ArmComparison, _holm_family, compare_arms
from nightschool.evals.stream._run import ALL_ARMS, SECOND_CHANCE_ARMS, StreamRow

__all__ = ["FirstDrawLine", "first_draw"]


@dataclass(frozen=True)
class FirstDrawLine:
    """One arm as the first of at most three draws, against `resample2`.

    Attributes:
        arm: the arm whose answer is the first draw.
        redrawn: tasks where its public test failed (a plain draw followed).
        versus_resample2: the policy against the `resample2` arm on the tasks
            both have (figures under `arm` are the policy's: its model calls
            count every draw made, its tokens every draw's).
        holm_p: the exact p-value against `resample2`, Holm-adjusted over the
            lines of this table.
        promoted: the gate promotes it against `resample2` and `holm_p` < alpha.
    """

    arm: str
    redrawn: int
    versus_resample2: ArmComparison
    holm_p: float | None
    promoted: bool


def _policy_rows(
    by_arm: Mapping[str, Mapping[str, StreamRow]], arm: str
) -> tuple[list[StreamRow], int]:
    """(`arm` first, then the no-memory answer, then the resample draw; tasks redrawn).

    `by_arm`: arm -> task id -> row, every arm of the run.
    """
    first, plain, resample = by_arm.get(arm, {}), by_arm["no_memory"], by_arm["resample"]
    third = by_arm["resample2"]
    out, redrawn = [], 0
    for task_id, mine in first.items():
        if task_id not in plain or task_id not in resample or task_id not in third:
            continue
        n, r = plain[task_id], resample[task_id]
        if mine.reused:
            # shown nothing: its request was the no-memory one, so its draws are resample2's
            redrawn += not mine.public_passed
            out.append(dataclasses.replace(third[task_id], arm=arm))
            continue
        if mine.public_passed:
            out.append(mine)
            continue
        redrawn += 1
        if n.public_passed:
            # R was never drawn here: the resample arm reused N, and so does the policy
            chosen, calls, tokens = n, n.model_calls, n.tokens
        else:
            # the resample row's calls and tokens already include N's
            chosen, calls, tokens = r, r.model_calls, r.tokens
        out.append(
            dataclasses.replace(
                chosen,
                arm=arm,
                model_calls=mine.model_calls + calls,
                tokens=mine.tokens + tokens,
                added_tokens=mine.added_tokens,
            )
        )
    return out, redrawn


def first_draw(rows: Sequence[StreamRow]) -> list[FirstDrawLine]:
    """Every arm that answers every task, read as the first of at most three draws.

    One line per arm in `ALL_ARMS` order: not the no-memory arm (the first
    draw of `resample2` itself) and not the arms that answer only after a
    failure (`SECOND_CHANCE_ARMS`). Empty without the `resample` and
    `resample2` arms; an arm that shares no task with `resample2` is left out.
    Verdicts as `ablation`'s (the gate's exact McNemar, alpha 5%), Holm-adjusted
    over this table's lines.
    """
    by_arm: dict[str, dict[str, StreamRow]] = {}
    for row in rows:
        by_arm.setdefault(row.arm, {})[row.task_id] = row
    if not {"no_memory", "resample", "resample2"} <= by_arm.keys():
        return []
    theirs = list(by_arm["resample2"].values())
    found: list[tuple[str, int, ArmComparison]] = []
    for arm in ALL_ARMS:
        if arm == "no_memory" or arm in SECOND_CHANCE_ARMS or arm not in by_arm:
            continue
        mine, redrawn = _policy_rows(by_arm, arm)
        c = compare_arms([*theirs, *mine], arm, "resample2")
        if c is not None:
            found.append((arm, redrawn, c))
    family = _holm_family([c for _, _, c in found])
    return [
        FirstDrawLine(arm, redrawn, c, holm, promoted)
        for (arm, redrawn, c), (holm, promoted) in zip(found, family, strict=True)
    ]
