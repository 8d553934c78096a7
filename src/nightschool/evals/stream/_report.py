"""A stream's figures: pass@1 per arm, halves, the paired gate, CSV and PNG.

Every task is a different benchmark problem (no two share a template), so
each task is one independent pair: the gate's exact McNemar test on the
paired pass/fail results is valid as it stands (DESIGN "held out"). The
memory arm is the candidate, the no-memory arm the incumbent; superiority at
alpha 5% (`GateConfig()`). The memory arm is also gated against the placebo
arm (as many unrelated entries shown): a lift that the placebo shares comes
from showing something, not from what was learned. The first and second
halves of the stream are reported apart: memory can only help where earlier
tasks taught something.
"""

from __future__ import annotations

import csv
import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from nightschool.evals.stream._run import ALL_ARMS, SECOND_CHANCE_ARMS, StreamRow
from nightschool.gate import GateConfig, PairedResult, Verdict, holm_adjusted, promotion_gate


@dataclass(frozen=True)
class ArmFigures:
    """One arm on one slice of the stream.

    Attributes:
        passed: tasks whose hidden tests all passed.
        total: tasks answered.
        tokens: mean prompt + completion tokens per task.
        added_tokens: mean tokens the memory added to the prompt per task.
        model_calls: model calls in all (answers and lesson extraction).
    """

    passed: int
    total: int
    tokens: float
    added_tokens: float
    model_calls: int

    @property
    def pass_at_1(self) -> float:
        """Passed / total (0 for an empty slice)."""
        return self.passed / self.total if self.total else 0.0


@dataclass(frozen=True)
class SliceReport:
    """Both arms on one slice (`all`, `first half`, `second half`) and the gate's verdict.

    Attributes:
        name: the slice.
        arms: arm name -> figures, on the tasks both the no-memory and the
            memory arm answered (`placebo` too when it answered all of them).
        wins: tasks the memory arm passed and the no-memory arm failed.
        losses: the reverse.
        verdict: the promotion gate, memory vs no memory.
        placebo_verdict: the promotion gate, memory vs placebo, on the tasks all
            three arms answered (None without placebo rows).
        placebo_wins: tasks the memory arm passed and the placebo failed.
        placebo_losses: the reverse.
    """

    name: str
    arms: dict[str, ArmFigures]
    wins: int
    losses: int
    verdict: Verdict
    placebo_verdict: Verdict | None = None
    placebo_wins: int = 0
    placebo_losses: int = 0


def paired_rows(
    rows: Sequence[StreamRow], base: str = "no_memory", candidate: str = "memory"
) -> list[tuple[StreamRow, StreamRow]]:
    """(`base` row, `candidate` row) per task both arms answered, in stream order."""
    by_arm: dict[str, dict[str, StreamRow]] = {arm: {} for arm in ALL_ARMS}
    for row in rows:
        by_arm.setdefault(row.arm, {})[row.task_id] = row
    pairs = [
        (row, by_arm[candidate][task_id])
        for task_id, row in by_arm[base].items()
        if task_id in by_arm[candidate]
    ]
    return sorted(pairs, key=lambda pair: pair[0].position)


def _figures(rows: Sequence[StreamRow]) -> ArmFigures:
    n = len(rows)
    return ArmFigures(
        passed=sum(row.passed for row in rows),
        total=n,
        tokens=sum(row.tokens for row in rows) / n if n else 0.0,
        added_tokens=sum(row.added_tokens for row in rows) / n if n else 0.0,
        model_calls=sum(row.model_calls for row in rows),
    )


def _gate(pairs: Sequence[tuple[StreamRow, StreamRow]]) -> Verdict:
    return promotion_gate(
        [
            PairedResult(
                task_id=base.task_id,
                incumbent_score=float(base.passed),
                candidate_score=float(cand.passed),
                incumbent_cost=base.tokens,
                candidate_cost=cand.tokens,
            )
            for base, cand in pairs
        ],
        GateConfig(),
    )


def slice_report(
    name: str,
    pairs: Sequence[tuple[StreamRow, StreamRow]],
    placebo: Sequence[tuple[StreamRow, StreamRow]] = (),
) -> SliceReport:
    """Figures and verdicts: `pairs` are (no memory, memory), `placebo` (placebo, memory)."""
    arms = {
        "no_memory": _figures([base for base, _ in pairs]),
        "memory": _figures([mem for _, mem in pairs]),
    }
    if placebo:
        arms["placebo"] = _figures([p for p, _ in placebo])
    return SliceReport(
        name=name,
        arms=arms,
        wins=sum(mem.passed and not base.passed for base, mem in pairs),
        losses=sum(base.passed and not mem.passed for base, mem in pairs),
        verdict=_gate(pairs),
        placebo_verdict=_gate(placebo) if placebo else None,
        placebo_wins=sum(mem.passed and not p.passed for p, mem in placebo),
        placebo_losses=sum(p.passed and not mem.passed for p, mem in placebo),
    )


@dataclass(frozen=True)
class ArmComparison:
    """One arm against another on the tasks both answered.

    Attributes:
        candidate, base: the arms.
        figures: arm name -> figures on those tasks.
        wins: tasks the candidate passed and the base failed.
        losses: the reverse.
        verdict: the promotion gate (exact McNemar), candidate vs base.
    """

    candidate: str
    base: str
    figures: dict[str, ArmFigures]
    wins: int
    losses: int
    verdict: Verdict


def compare_arms(
    rows: Sequence[StreamRow], candidate: str, base: str = "no_memory"
) -> ArmComparison | None:
    """`candidate` vs `base` through the gate on their common tasks; None when they share none."""
    pairs = paired_rows(rows, base, candidate)
    if not pairs:
        return None
    return ArmComparison(
        candidate=candidate,
        base=base,
        figures={
            base: _figures([b for b, _ in pairs]),
            candidate: _figures([c for _, c in pairs]),
        },
        wins=sum(c.passed and not b.passed for b, c in pairs),
        losses=sum(b.passed and not c.passed for b, c in pairs),
        verdict=_gate(pairs),
    )


@dataclass(frozen=True)
class AblationLine:
    """One arm of the ablation table: against no memory, and against the placebo.

    Attributes:
        arm: the arm.
        versus_none: the arm against the no-memory arm on their common tasks.
        holm_p: the exact p-value against no memory, Holm-adjusted over every
            arm of the table (the family: each arm is a separate try at beating
            the same baseline); None when the gate gave no p-value.
        promoted: the gate promotes the arm against no memory *and* its
            Holm-adjusted p-value is below the gate's alpha.
        versus_placebo: the arm against the placebo on their common tasks (None
            for the placebo itself, or without placebo rows).
    """

    arm: str
    versus_none: ArmComparison
    holm_p: float | None
    promoted: bool
    versus_placebo: ArmComparison | None


def _holm_family(comparisons: Sequence[ArmComparison]) -> list[tuple[float | None, bool]]:
    """(Holm-adjusted p, promoted) per comparison, the family being all of them.

    Promoted: the gate promotes the candidate *and* its adjusted p is below the
    gate's alpha. A comparison without a p-value gets (None, False).
    """
    alpha = GateConfig().alpha
    raw = [c.verdict.p_value for c in comparisons]
    adjusted = iter(holm_adjusted([p for p in raw if p is not None]))
    out = []
    for c, p in zip(comparisons, raw, strict=True):
        holm = next(adjusted) if p is not None else None
        out.append((holm, c.verdict.promote and holm is not None and holm < alpha))
    return out


def ablation(rows: Sequence[StreamRow]) -> list[AblationLine]:
    """Every arm with rows (but no memory) against no memory and the placebo, family-corrected.

    One line per arm in `ALL_ARMS` order; an arm that shares no task with the
    no-memory arm is left out. Each arm's own verdict is the promotion gate's
    (exact McNemar, one-sided, alpha 5%); `promoted` also asks that the verdict
    survive Holm's adjustment over the arms of the table, since five arms tried
    against one baseline find a lucky one about one time in four.
    """
    found = [c for arm in ALL_ARMS if arm != "no_memory" for c in [compare_arms(rows, arm)] if c]
    return [
        AblationLine(
            arm=c.candidate,
            versus_none=c,
            holm_p=holm,
            promoted=promoted,
            versus_placebo=None
            if c.candidate == "placebo"
            else compare_arms(rows, c.candidate, "placebo"),
        )
        for c, (holm, promoted) in zip(found, _holm_family(found), strict=True)
    ]


@dataclass(frozen=True)
class SecondChanceLine:
    """One arm as the second answer to a task whose no-memory answer failed its public test.

    The product's question behind "retrieval that abstains": answer unaided,
    run the request's own example, and only when it fails answer again, shown
    something. Every arm's request is fixed before that outcome is known (same
    prompt, seed and temperature whatever the no-memory answer did), so an arm
    that answered every task gives this policy's result exactly: its own answer
    where the no-memory answer failed its public test, the no-memory answer
    elsewhere (`derived`). The `retry`, `resample` and `resample2` arms run that way.

    Attributes:
        arm: the arm whose answer is the second one.
        derived: read from an arm that answered every task (False: `retry`,
            `resample`, `resample2`, which answer again only after a failure).
        second: tasks where a second answer was taken.
        versus_none: the policy against the no-memory arm (its model calls
            count both answers where there were two).
        holm_p: the exact p-value against no memory, Holm-adjusted over the
            lines of this table.
        promoted: the gate promotes it against no memory and `holm_p` < alpha.
        versus_resample: the policy against the resample arm's plain second
            draw on their common tasks (None for the resample arm or without it):
            what showing something adds to a second call.
    """

    arm: str
    derived: bool
    second: int
    versus_none: ArmComparison
    holm_p: float | None
    promoted: bool
    versus_resample: ArmComparison | None


def _second_chance_rows(rows: Sequence[StreamRow], arm: str) -> list[StreamRow]:
    """`arm` read as the answer after a failed public test (`SecondChanceLine`)."""
    if arm in SECOND_CHANCE_ARMS:
        return [row for row in rows if row.arm == arm]
    out = []
    for base, cand in paired_rows(rows, "no_memory", arm):
        if base.public_passed:
            out.append(dataclasses.replace(base, arm=arm))
        else:
            out.append(
                dataclasses.replace(
                    cand,
                    model_calls=base.model_calls + cand.model_calls,
                    tokens=base.tokens + cand.tokens,
                )
            )
    return out


def second_chance(rows: Sequence[StreamRow]) -> list[SecondChanceLine]:
    """Every arm with rows, read as a second answer after a failed public test.

    One line per arm in `ALL_ARMS` order (but no memory); an arm that shares no
    task with the no-memory arm is left out. Verdicts as `ablation`'s (exact
    McNemar, alpha 5%), Holm-adjusted over this table's lines. The hidden tests
    include the public one, so a no-memory answer that failed its public test
    failed the task, and every other answer is kept: no line can lose a task
    the no-memory arm passed (losses are 0 by construction); the question is
    only how many failures a second answer turns into passes, and whether
    showing something beats a plain second draw (`versus_resample`).
    """
    base_rows = [row for row in rows if row.arm == "no_memory"]
    resample = _second_chance_rows(rows, "resample")
    found = []
    for arm in ALL_ARMS:
        if arm == "no_memory":
            continue
        mine = _second_chance_rows(rows, arm)
        c = compare_arms([*base_rows, *mine], arm)
        if c is None:
            continue
        second = sum(
            not b.public_passed for b, _ in paired_rows([*base_rows, *mine], "no_memory", arm)
        )
        versus = None
        if arm != "resample" and resample:
            versus = compare_arms([*resample, *mine], arm, "resample")
        found.append((arm, c, second, versus))
    family = _holm_family([c for _, c, _, _ in found])
    return [
        SecondChanceLine(
            arm=arm,
            derived=arm not in SECOND_CHANCE_ARMS,
            second=second,
            versus_none=c,
            holm_p=holm,
            promoted=promoted,
            versus_resample=versus,
        )
        for (arm, c, second, versus), (holm, promoted) in zip(found, family, strict=True)
    ]


def report(rows: Sequence[StreamRow]) -> list[SliceReport]:
    """The whole stream, its first half and its second half (by stream position)."""
    pairs = paired_rows(rows)
    placebo = {p.task_id: (p, m) for p, m in paired_rows(rows, "placebo", "memory")}
    half = len(pairs) // 2
    slices = [("all", pairs), ("first half", pairs[:half]), ("second half", pairs[half:])]
    out = []
    for name, part in slices:
        mine = [placebo[b.task_id] for b, _ in part if b.task_id in placebo]
        out.append(slice_report(name, part, mine if len(mine) == len(part) else ()))
    return out


CSV_FIELDS = (
    "position",
    "task_id",
    "arm",
    "passed",
    "public_passed",
    "cumulative_pass_at_1",
    "tokens",
    "added_tokens",
    "lessons_shown",
    "skills_shown",
    "learned",
    "learned_id",
    "learned_note",
    "model_calls",
    "reused",
    "duration_s",
    "hidden_error",
)


def write_csv(rows: Sequence[StreamRow], path: Path) -> Path:
    """One line per task and arm, in stream order, with each arm's cumulative pass@1."""
    running: dict[str, list[int]] = {}
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=CSV_FIELDS)
        writer.writeheader()
        for row in sorted(rows, key=lambda r: (r.position, ALL_ARMS.index(r.arm))):
            seen = running.setdefault(row.arm, [0, 0])
            seen[0] += row.passed
            seen[1] += 1
            writer.writerow(
                {
                    "position": row.position,
                    "task_id": row.task_id,
                    "arm": row.arm,
                    "passed": int(row.passed),
                    "public_passed": int(row.public_passed),
                    "cumulative_pass_at_1": round(seen[0] / seen[1], 4),
                    "tokens": row.tokens,
                    "added_tokens": row.added_tokens,
                    "lessons_shown": " ".join(row.lessons_shown),
                    "skills_shown": " ".join(row.skills_shown),
                    "learned": row.learned,
                    "learned_id": row.learned_id,
                    "learned_note": row.learned_note,
                    "model_calls": row.model_calls,
                    "reused": int(row.reused),
                    "duration_s": row.duration_s,
                    "hidden_error": row.hidden_error,
                }
            )
    return path


def plot(rows: Sequence[StreamRow], path: Path, title: str) -> Path | None:
    """Cumulative pass@1 of both arms against stream position (paired tasks only).

    Returns:
        `path`, or None when matplotlib is not installed.
    """
    try:  # function-local: start-up time (matplotlib.pyplot, ~0.5 s); without it, no plot
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    pairs = paired_rows(rows)
    placebo = {p.task_id: p for p, _ in paired_rows(rows, "placebo", "memory")}
    fig, ax = plt.subplots(figsize=(7, 4.2), dpi=120)
    for arm, style in (("no_memory", "--"), ("placebo", ":"), ("memory", "-")):
        xs, ys, passed = [], [], 0
        for n, (base, mem) in enumerate(pairs, start=1):
            row = {"no_memory": base, "memory": mem}.get(arm) or placebo.get(base.task_id)
            if row is None:
                break
            passed += row.passed
            xs.append(n)
            ys.append(passed / n)
        if xs:
            ax.plot(xs, ys, style, label=f"{arm.replace('_', '-')} ({passed}/{len(xs)})")
    if pairs:
        ax.axvline(len(pairs) // 2 + 0.5, color="grey", alpha=0.4, linewidth=1)
    ax.set_xlabel("tasks answered (stream order)")
    ax.set_ylabel("cumulative pass@1 (hidden tests)")
    ax.set_ylim(0, 1)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    ax.set_title(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path
