"""A stream's figures: pass@1 per arm, halves, the paired gate, CSV and PNG.

Every task is a different benchmark problem (no two share a template), so
each task is one independent pair: the gate's exact McNemar test on the
paired pass/fail results is valid as it stands (DESIGN "held out"). The
memory arm is the candidate, the no-memory arm the incumbent; superiority at
alpha 5% (`GateConfig()`). The first and second halves of the stream are
reported apart: memory can only help where earlier tasks taught something.
"""

from __future__ import annotations

import csv
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from nightschool.evals.stream._run import ARMS, StreamRow
from nightschool.evolution.gate import GateConfig, PairedResult, Verdict, promotion_gate


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
        arms: arm name -> figures, on the tasks both arms answered.
        wins: tasks the memory arm passed and the no-memory arm failed.
        losses: the reverse.
        verdict: the promotion gate on the paired results.
    """

    name: str
    arms: dict[str, ArmFigures]
    wins: int
    losses: int
    verdict: Verdict


def paired_rows(rows: Sequence[StreamRow]) -> list[tuple[StreamRow, StreamRow]]:
    """(no-memory row, memory row) per task both arms answered, in stream order."""
    by_arm: dict[str, dict[str, StreamRow]] = {arm: {} for arm in ARMS}
    for row in rows:
        by_arm.setdefault(row.arm, {})[row.task_id] = row
    pairs = [
        (row, by_arm["memory"][task_id])
        for task_id, row in by_arm["no_memory"].items()
        if task_id in by_arm["memory"]
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


def slice_report(name: str, pairs: Sequence[tuple[StreamRow, StreamRow]]) -> SliceReport:
    """Both arms' figures and the gate's verdict on `pairs`."""
    gate_pairs = [
        PairedResult(
            task_id=base.task_id,
            incumbent_score=float(base.passed),
            candidate_score=float(mem.passed),
            incumbent_cost=base.tokens,
            candidate_cost=mem.tokens,
        )
        for base, mem in pairs
    ]
    return SliceReport(
        name=name,
        arms={
            "no_memory": _figures([base for base, _ in pairs]),
            "memory": _figures([mem for _, mem in pairs]),
        },
        wins=sum(mem.passed and not base.passed for base, mem in pairs),
        losses=sum(base.passed and not mem.passed for base, mem in pairs),
        verdict=promotion_gate(gate_pairs, GateConfig()),
    )


def report(rows: Sequence[StreamRow]) -> list[SliceReport]:
    """The whole stream, its first half and its second half (by stream position)."""
    pairs = paired_rows(rows)
    half = len(pairs) // 2
    return [
        slice_report("all", pairs),
        slice_report("first half", pairs[:half]),
        slice_report("second half", pairs[half:]),
    ]


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
        for row in sorted(rows, key=lambda r: (r.position, ARMS.index(r.arm))):
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
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    pairs = paired_rows(rows)
    fig, ax = plt.subplots(figsize=(7, 4.2), dpi=120)
    for index, (arm, style) in enumerate((("no_memory", "--"), ("memory", "-"))):
        xs, ys, passed = [], [], 0
        for n, pair in enumerate(pairs, start=1):
            passed += pair[index].passed
            xs.append(n)
            ys.append(passed / n)
        ax.plot(xs, ys, style, label=f"{arm.replace('_', '-')} ({passed}/{len(pairs)})")
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
