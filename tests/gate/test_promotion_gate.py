import math

import numpy as np
import pytest

from nightschool.gate import (
    GateConfig,
    PairedResult,
    SequentialGate,
    Verdict,
    promotion_gate,
)


def _continuous(
    n: int, lift: float, seed: int, sd: float = 0.1, inc_cost: float = 0, cand_cost: float = 0
) -> list[PairedResult]:
    rng = np.random.default_rng(seed)
    base = rng.uniform(0.2, 0.6, n)
    inc = np.clip(base + rng.normal(0, sd, n), 0, 1)
    cand = np.clip(base + lift + rng.normal(0, sd, n), 0, 1)
    return [
        PairedResult(f"t{i}", float(a), float(b), inc_cost, cand_cost)
        for i, (a, b) in enumerate(zip(inc, cand, strict=True))
    ]


def _binary(n: int, p_inc: float, p_cand: float, seed: int) -> list[PairedResult]:
    rng = np.random.default_rng(seed)
    inc = rng.random(n) < p_inc
    cand = rng.random(n) < p_cand
    return [
        PairedResult(f"t{i}", float(a), float(b))
        for i, (a, b) in enumerate(zip(inc, cand, strict=True))
    ]


def test_deterministic_given_seed() -> None:
    pairs = _continuous(40, 0.03, seed=1)
    cfg = GateConfig(seed=7)
    assert promotion_gate(pairs, cfg) == promotion_gate(pairs, cfg)


def test_floor_refuses_small_samples() -> None:
    v = promotion_gate(_continuous(5, 0.5, seed=2))
    assert not v.promote
    assert v.test == "floor"
    assert "minimum-evidence floor" in v.reason
    assert v.n == 5


def test_obvious_win_promotes_on_every_path() -> None:
    binary = promotion_gate(_binary(40, 0.2, 0.9, seed=3))
    large = promotion_gate(_continuous(60, 0.3, seed=3))
    assert binary.promote and binary.test == "mcnemar-exact"
    assert large.promote and large.test == "betting"
    assert large.ci_low > 0
    assert large.lift == pytest.approx(0.3, abs=0.05)


def test_small_continuous_sample_cannot_promote_a_moderate_lift() -> None:
    # Ten deltas near +0.3: a mean-0 null with atoms at 0 and 0.65 (x-scale) yields
    # ten values >= 0.65 w.p. 0.77**10 = 0.073 > alpha, so no valid test may promote.
    v = promotion_gate(_continuous(10, 0.3, seed=3))
    assert not v.promote and v.test == "betting"
    assert v.p_value is not None and v.p_value > 0.05


def test_obvious_loss_does_not_promote() -> None:
    for n in (10, 60):
        v = promotion_gate(_continuous(n, -0.3, seed=4))
        assert not v.promote
        assert v.lift < 0


def test_ties_only_refused_as_zero_width() -> None:
    pairs = [PairedResult(f"t{i}", 0.5, 0.5) for i in range(30)]
    v = promotion_gate(pairs)
    assert not v.promote
    assert v.test == "zero-width"
    assert "zero-width interval" in v.reason


def test_binary_path_uses_exact_mcnemar() -> None:
    v = promotion_gate(_binary(40, 0.2, 0.9, seed=5))
    assert v.test == "mcnemar-exact"
    assert v.promote
    assert v.p_value is not None and v.p_value < 0.001
    assert v.ci_low <= v.lift <= v.ci_high
    no = promotion_gate(_binary(40, 0.5, 0.5, seed=6))
    assert no.test in ("mcnemar-exact", "zero-width")


def test_mcnemar_p_value_matches_binomial_tail() -> None:
    # 8 candidate-only wins, 1 incumbent-only win, 11 concordant pairs.
    pairs = [PairedResult(f"b{i}", 0, 1) for i in range(8)]
    pairs += [PairedResult("c0", 1, 0)]
    pairs += [PairedResult(f"s{i}", 1, 1) for i in range(11)]
    v = promotion_gate(pairs)
    assert v.p_value == pytest.approx(10 / 512)
    assert v.promote


def test_noninferiority_cheaper() -> None:
    cfg = GateConfig(mode="noninferiority_cheaper", tolerance=0.1)
    cheaper = _continuous(60, 0.0, seed=8, sd=0.005, inc_cost=1000, cand_cost=600)
    pricier = _continuous(60, 0.0, seed=8, sd=0.005, inc_cost=600, cand_cost=1000)
    v = promotion_gate(cheaper, cfg)
    assert v.promote, v.summary()
    assert v.test == "betting"
    assert v.cost_savings == 400
    w = promotion_gate(pricier, cfg)
    assert not w.promote
    assert "cheaper not shown" in w.reason
    # Superiority would refuse the equal candidate.
    assert not promotion_gate(cheaper).promote


def test_noninferiority_small_n_is_refused_and_cost_uses_the_sign_test() -> None:
    # Eight near-ties cannot show non-inferiority within 0.02 for bounded scores:
    # a null of mean -0.02 yields eight ties w.p. about 0.98**8 = 0.85.
    cfg = GateConfig(mode="noninferiority_cheaper")
    rng = np.random.default_rng(9)
    pairs = [
        PairedResult(f"t{i}", 0.5, 0.5 + float(rng.normal(0, 0.002)), 500 + i, 300 + 2 * i)
        for i in range(8)
    ]
    v = promotion_gate(pairs, cfg)
    assert v.test == "betting"
    assert not v.promote
    assert "non-inferiority not shown" in v.reason
    assert v.cost_ci_low > 0  # the exact median bounds on the savings still exist


def test_invalid_input_raises() -> None:
    with pytest.raises(ValueError, match="duplicate"):
        promotion_gate([PairedResult("a", 0, 1), PairedResult("a", 0, 1)])
    with pytest.raises(ValueError, match="non-finite"):
        promotion_gate([PairedResult("a", 0, math.nan)])
    with pytest.raises(ValueError, match="outside"):
        promotion_gate([PairedResult("a", 0, 1.5)])


def test_verdict_ignores_the_order_of_the_pairs() -> None:
    pairs = _continuous(50, 0.15, seed=12)
    assert promotion_gate(pairs) == promotion_gate(list(reversed(pairs)))


def test_summary_is_one_line() -> None:
    v = promotion_gate(_continuous(30, 0.2, seed=10))
    assert isinstance(v, Verdict)
    line = v.summary()
    assert "\n" not in line and "n=30" in line and "PROMOTE" in line


def test_sequential_stops_early_on_strong_effect() -> None:
    gate = SequentialGate()
    verdict = None
    for pair in _continuous(200, 0.3, seed=11):
        verdict = gate.update(pair)
        if verdict is not None:
            break
    assert verdict is not None and verdict.promote
    assert 6 <= verdict.n < 40
    assert verdict.p_value is not None and verdict.p_value <= 0.05


def test_sequential_never_promotes_on_zero_deltas() -> None:
    gate = SequentialGate()
    for i in range(300):
        assert gate.update(PairedResult(f"t{i}", 0.4, 0.4)) is None


def test_sequential_rejects_bad_input() -> None:
    with pytest.raises(ValueError):
        SequentialGate(GateConfig(mode="noninferiority_cheaper"))
    gate = SequentialGate()
    with pytest.raises(ValueError, match="outside"):
        gate.update(PairedResult("a", 0, 2))


@pytest.mark.parametrize("kind", ["binary", "continuous"])
def test_null_false_promotion_rate_small_simulation(kind: str) -> None:
    cfg = GateConfig(n_resamples=200)
    promoted = 0
    sims = 300
    for s in range(sims):
        pairs = _binary(10, 0.5, 0.5, seed=s) if kind == "binary" else _continuous(10, 0.0, seed=s)
        promoted += promotion_gate(pairs, cfg).promote
    assert promoted / sims <= 0.05 + 0.03


def test_noninferiority_with_no_discordant_pair_is_tested_exactly() -> None:
    cfg = GateConfig(mode="noninferiority_cheaper")
    few = promotion_gate([PairedResult(f"t{i}", 1, 1, 100, 50) for i in range(20)], cfg)
    assert few.test == "mcnemar-exact" and not few.promote  # 20 pairs cannot bound a 2% loss
    assert few.ci_low == pytest.approx(-(1 - 0.025 ** (1 / 20)))
    many = [PairedResult(f"t{i}", float(i % 2), float(i % 2), 100, 50) for i in range(200)]
    verdict = promotion_gate(many, cfg)
    assert verdict.test == "mcnemar-exact" and verdict.promote
    assert -0.02 < verdict.ci_low < 0
    not_cheaper = [PairedResult(f"t{i}", 1, 1, 100, 100) for i in range(200)]
    assert not promotion_gate(not_cheaper, cfg).promote


def test_binary_all_concordant_refused_but_all_wins_tested_exactly() -> None:
    ties = promotion_gate([PairedResult(f"t{i}", 1, 1) for i in range(20)])
    assert ties.test == "zero-width" and not ties.promote
    wins = promotion_gate([PairedResult(f"t{i}", 0, 1) for i in range(10)])
    assert wins.test == "mcnemar-exact" and wins.promote
    assert wins.p_value == pytest.approx(2**-10)


def test_betting_interval_brackets_the_lift_and_matches_the_decision() -> None:
    for seed, lift in ((3, 0.05), (4, 0.12), (5, -0.05)):
        pairs = _continuous(80, lift, seed=seed, sd=0.15)
        v = promotion_gate(pairs)
        assert v.test == "betting"
        assert -1.0 <= v.ci_low <= v.lift <= v.ci_high <= 1.0
        assert v.promote == (v.ci_low > 0.0)


def test_sequential_with_max_pairs_stops_for_futility_or_at_the_maximum() -> None:
    gate = SequentialGate(GateConfig(max_pairs=60))
    verdict = None
    for pair in _continuous(60, -0.1, seed=13):
        verdict = gate.update(pair)
        if verdict is not None:
            break
    assert verdict is not None and not verdict.promote
    assert verdict.n < 60 and "futility" in verdict.reason
    assert gate.conclude() is verdict
    capped = SequentialGate(GateConfig(max_pairs=8))
    for i in range(8):
        out = capped.update(PairedResult(f"t{i}", 0.5, 0.5))
    assert out is not None and not out.promote and "max_pairs=8" in out.reason
