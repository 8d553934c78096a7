"""The learning curve's verdicts: one pair per template (clustered), items as a side figure.

Two held-out items of one template are one piece of evidence, not two: a
seed of a template is the same task with new data (at commit 4a3794a a
seed's reference passed another seed's validator in 201 of 210 cases). An
item-level McNemar test over such items counts each template several times
and overstates significance. The verdict therefore pairs **templates**: each
template's score is the fraction of its items passed (all tiers and seeds
of it in the set), start vs checkpoint, through the promotion gate. Where
every template has one item the scores are 0/1 and the gate uses its exact
McNemar test; otherwise they are fractions and it uses its betting test,
which is valid for bounded paired differences of independent units.
The item-level verdict is kept beside it, labelled, never the decision.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Protocol

from nightschool.gate import GateConfig, PairedResult, Verdict, promotion_gate

SET_LABELS: dict[str, str] = {
    "a": "same family: new tasks of practised templates",
    "b": "held out: templates never practised",
}
"""What each held-out set measures. Set (a) draws new tasks from the families the
dream practised (a seed's reference passes another seed's validator in at most
20% of pairs, `challenges.cross_seed`; before the families it was 95.7%, recall),
never a headline; set (b) and the external streams (`eval stream`) are."""


class _Result(Protocol):
    """One held-out item's result (`curve.ItemResult`)."""

    @property
    def task_id(self) -> str: ...
    @property
    def set_name(self) -> str: ...
    @property
    def passed(self) -> bool: ...
    @property
    def tokens(self) -> int: ...


def template_of(task_id: str) -> str:
    """The template of a held-out item id `<set>:<template>:<tier>:<seed>`."""
    parts = task_id.split(":")
    return parts[1] if len(parts) >= 4 else task_id


def _pairs(
    start: Sequence[_Result], later: Sequence[_Result], set_name: str, *, clustered: bool
) -> list[PairedResult]:
    before = {r.task_id: r for r in start if r.set_name == set_name}
    groups: dict[str, list[tuple[_Result, _Result]]] = defaultdict(list)
    for r in later:
        if r.set_name == set_name and r.task_id in before:
            key = template_of(r.task_id) if clustered else r.task_id
            groups[key].append((before[r.task_id], r))
    return [
        PairedResult(
            task_id=key,
            incumbent_score=sum(b.passed for b, _ in pairs) / len(pairs),
            candidate_score=sum(c.passed for _, c in pairs) / len(pairs),
            incumbent_cost=sum(b.tokens for b, _ in pairs) / len(pairs),
            candidate_cost=sum(c.tokens for _, c in pairs) / len(pairs),
        )
        for key, pairs in sorted(groups.items())
    ]


def clustered_verdict(start: Sequence[_Result], later: Sequence[_Result], set_name: str) -> Verdict:
    """Gate `later` against `start` on one set, one pair per template (superiority, alpha 5%).

    Args:
        start: the start's item results.
        later: a checkpoint's item results (items missing from `start` are ignored).
        set_name: `a` or `b`.

    Returns:
        The gate's verdict; `n` counts templates.
    """
    return promotion_gate(_pairs(start, later, set_name, clustered=True), GateConfig())


def item_verdict(start: Sequence[_Result], later: Sequence[_Result], set_name: str) -> Verdict:
    """The item-level verdict (exact McNemar over items): a side figure, not a decision."""
    return promotion_gate(_pairs(start, later, set_name, clustered=False), GateConfig())
