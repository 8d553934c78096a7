from __future__ import annotations

from tests.exports._factory import BAD, GOOD, WORSE, measured, selfplay

from nightschool.dream.loop import DREAM_SEED_LIMIT
from nightschool.exports import Exclusions, Tally, judged_runs
from nightschool.exports._select import HELD_OUT
from nightschool.trajectory import Correction, Outcome, apply_correction

REGRESSION_INSTRUCTION = (
    "Solve this task. Reply with the complete contents of the requested file in exactly one "
    "fenced code block.\n\n"
)


def test_judged_runs_keep_only_programs_that_ran() -> None:
    trajectory = selfplay([(None, None), (BAD, "failed"), (BAD, None), (GOOD, "passed")])
    runs = judged_runs(trajectory)
    assert [(r.code, r.passed) for r in runs] == [(BAD, False), (GOOD, True)]
    assert all(r.file == "solution.py" for r in runs)


def test_a_correction_decides_the_last_verdict_only() -> None:
    passed = selfplay([(BAD, "failed"), (GOOD, "passed")])
    overruled = apply_correction(
        passed, Correction(trajectory_id=passed.id, outcome=Outcome.FAILED, source="user")
    )
    assert [r.passed for r in judged_runs(overruled)] == [False, False]
    failed = selfplay([(BAD, "failed"), (WORSE, "failed")])
    accepted = apply_correction(
        failed,
        Correction(
            trajectory_id=failed.id, outcome=Outcome.PASSED, source="user", authority="human"
        ),
    )
    assert [r.passed for r in judged_runs(accepted)] == [False, True]
    unknown = selfplay([(BAD, "failed")], outcome=Outcome.UNKNOWN)
    assert [r.passed for r in judged_runs(unknown)] == [False]


def test_exclusions_cover_every_measured_item_and_nothing_else() -> None:
    exclusions = Exclusions.from_trajectories(
        [
            measured("eval", challenge="evalhash"),
            measured("eval", prompt=REGRESSION_INSTRUCTION + "Write mul(a, b) in solution.py."),
            measured("eval", template="algo.unseen", curve_set="b", prompt="Other text."),
            measured("verification", challenge="verifyhash", prompt="Verify text."),
            selfplay([(GOOD, "passed")], challenge="practised"),  # not a measurement: ignored
        ]
    )
    assert exclusions.hashes == {"evalhash", "verifyhash"}
    assert "algo.unseen" in exclusions.templates
    assert exclusions.reason(measured("eval")) == HELD_OUT
    assert exclusions.reason(measured("verification")) == HELD_OUT
    assert exclusions.reason(selfplay([(GOOD, "passed")], challenge="evalhash")) == HELD_OUT
    assert exclusions.reason(selfplay([(GOOD, "passed")], challenge="verifyhash")) == HELD_OUT
    # the same task text as an eval turn, behind the suite's instruction paragraph
    same_text = selfplay([(GOOD, "passed")], prompt="Write  mul(a, b)\nin solution.py.")
    assert exclusions.reason(same_text) == HELD_OUT
    unseen = selfplay([(GOOD, "passed")], template="algo.unseen")
    assert exclusions.reason(unseen) == "trajectories of a held-out template"
    far = selfplay([(GOOD, "passed")], seed=DREAM_SEED_LIMIT)
    assert exclusions.reason(far) == "renderings at a measurement seed"
    generated = selfplay(
        [(GOOD, "passed")], seed=DREAM_SEED_LIMIT, extra={"challenge_source": "generated"}
    )
    assert exclusions.reason(generated) is None
    # the control: an unrelated practised challenge stays
    assert exclusions.reason(selfplay([(GOOD, "passed")], challenge="practised")) is None
    assert exclusions.reason(selfplay([(GOOD, "passed")], seed=DREAM_SEED_LIMIT - 1)) is None


def test_empty_exclusions_still_refuse_measurement_kinds() -> None:
    assert Exclusions().reason(measured("eval")) == HELD_OUT
    assert Exclusions().reason(selfplay([(GOOD, "passed")])) is None


def test_tally_summary() -> None:
    tally = Tally(unit="pairs")
    assert tally.summary() == "wrote 0 pairs"
    tally.written = 3
    tally.skip("duplicate pairs")
    tally.skip("unknown outcome", 4)
    tally.skip("nothing", 0)
    assert tally.summary("out.jsonl") == (
        "wrote 3 pairs to out.jsonl; skipped 5: 4 unknown outcome, 1 duplicate pairs"
    )
