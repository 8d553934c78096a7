import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from nightschool.gate import holm_adjusted


def test_holm_steps_down_and_keeps_the_input_order() -> None:
    adjusted = holm_adjusted([0.01, 0.04, 0.03, 0.005])
    assert adjusted == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert holm_adjusted([]) == []
    assert holm_adjusted([0.3]) == [0.3]
    assert holm_adjusted([0.6, 0.7]) == [1.0, 1.0]  # capped at 1


@given(st.lists(st.floats(min_value=0.0, max_value=1.0), min_size=1, max_size=12))
def test_holm_lies_between_the_raw_p_and_bonferroni(ps: list[float]) -> None:
    adjusted = holm_adjusted(ps)
    m = len(ps)
    for raw, adj in zip(ps, adjusted, strict=True):
        assert raw <= adj + 1e-12
        assert adj <= min(1.0, m * raw) + 1e-12
    # a smaller raw p never gets a larger adjusted one
    for i in range(m):
        for j in range(m):
            if ps[i] < ps[j]:
                assert adjusted[i] <= adjusted[j] + 1e-12


def test_a_p_value_outside_the_unit_interval_is_refused() -> None:
    with pytest.raises(ValueError, match="outside"):
        holm_adjusted([0.2, 1.5])
    with pytest.raises(ValueError, match="outside"):
        holm_adjusted([math.nan])
