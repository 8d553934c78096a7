"""The learning curve's verdict pairs templates, not items."""

from __future__ import annotations

from dataclasses import dataclass

from nightschool.evals._curve_gate import clustered_verdict, item_verdict, template_of


@dataclass(frozen=True)
class R:
    task_id: str
    set_name: str
    passed: bool
    tokens: int = 10


def _items(template: str, n: int, passed: bool, set_name: str = "b") -> list[R]:
    return [R(f"{set_name}:{template}:starter:{k}", set_name, passed) for k in range(n)]


def test_template_of_reads_the_item_id() -> None:
    assert template_of("b:sql.top_product:basic:1000000007") == "sql.top_product"


def test_many_items_of_few_templates_are_not_many_pieces_of_evidence() -> None:
    # 3 templates x 5 items each flip from fail to pass: 15 items, but 3 pieces of evidence
    start = [r for t in ("x.a", "x.b", "x.c") for r in _items(t, 5, False)]
    later = [r for t in ("x.a", "x.b", "x.c") for r in _items(t, 5, True)]
    items = item_verdict(start, later, "b")
    clustered = clustered_verdict(start, later, "b")
    assert items.promote and items.n == 15  # what the old item-level test concluded
    assert not clustered.promote and clustered.n == 3  # the floor: too few templates


def test_one_item_per_template_is_exact_mcnemar_on_templates() -> None:
    start = [r for k in range(12) for r in _items(f"x.t{k}", 1, False)]
    later = [r for k in range(12) for r in _items(f"x.t{k}", 1, k < 10)]
    verdict = clustered_verdict(start, later, "b")
    assert verdict.promote and verdict.test == "mcnemar-exact" and verdict.n == 12


def test_fractional_template_scores_use_the_betting_test_and_other_sets_are_ignored() -> None:
    start = [r for k in range(30) for r in _items(f"x.t{k}", 2, False)]
    start += _items("x.other", 2, False, set_name="a")
    later = []
    for k in range(30):  # 10 templates pass both items, 10 one of two, 10 none
        first, second = _items(f"x.t{k}", 2, k < 20)
        later += [first, R(second.task_id, "b", k < 10)]
    later += _items("x.other", 2, True, set_name="a")
    verdict = clustered_verdict(start, later, "b")
    assert verdict.n == 30 and verdict.test.startswith("betting")
    assert abs(verdict.lift - 0.5) < 1e-9 and verdict.promote
