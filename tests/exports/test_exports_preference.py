from __future__ import annotations

import json
from pathlib import Path

from tests.exports._factory import BAD, GOOD, WORSE, measured, selfplay

from nightschool.cli._records import write_jsonl
from nightschool.exports import Exclusions, Tally, pairwise_pass_fail
from nightschool.trajectory import Correction, Outcome, apply_correction


def fenced(code: str) -> str:
    return f"```python\n{code.strip()}\n```"


def test_retry_pairs_inside_one_passed_trajectory() -> None:
    trajectory = selfplay([(BAD, "failed"), (WORSE, "failed"), (GOOD, "passed")])
    tally = Tally()
    pairs = pairwise_pass_fail([trajectory], tally=tally)
    assert [(p["chosen"], p["rejected"]) for p in pairs] == [
        (fenced(GOOD), fenced(BAD)),
        (fenced(GOOD), fenced(WORSE)),
    ]
    assert {p["pair_kind"] for p in pairs} == {"retry"}
    assert pairs[0]["prompt"] == trajectory.user_request
    assert pairs[0]["system"] == trajectory.system_prompt
    assert pairs[0]["chosen_trajectory_id"] == pairs[0]["rejected_trajectory_id"] == trajectory.id
    assert tally.written == 2 and not tally.skipped


def test_cross_pairs_need_the_same_challenge() -> None:
    passed = selfplay([(GOOD, "passed")], challenge="same")
    failed = selfplay([(BAD, "failed"), (WORSE, "failed")], challenge="same", minutes=1)
    unrelated = selfplay([(BAD, "failed")], challenge="other", prompt="Other task.", minutes=2)
    tally = Tally()
    pairs = pairwise_pass_fail([passed, failed, unrelated], tally=tally)
    assert [(p["pair_kind"], p["rejected"]) for p in pairs] == [
        ("cross", fenced(BAD)),
        ("cross", fenced(WORSE)),
    ]
    assert all(p["chosen_trajectory_id"] == passed.id for p in pairs)
    assert all(p["rejected_trajectory_id"] == failed.id for p in pairs)
    assert tally.skipped == {"trajectories without a pass/fail contrast": 1}


def test_duplicates_flaky_verdicts_and_unknowns_give_no_extra_pairs() -> None:
    items = [
        selfplay([(GOOD, "passed")]),
        selfplay([(BAD, "failed")], minutes=1),
        selfplay([("def add(a, b):\n    # again\n    return a - b\n", "failed")], minutes=2),
        selfplay([(GOOD + "\n\n", "failed")], minutes=3),  # the passing program, rejected
        selfplay([(WORSE, "failed")], outcome=Outcome.UNKNOWN, minutes=4),
    ]
    tally = Tally()
    pairs = pairwise_pass_fail(items, tally=tally)
    assert [p["rejected"] for p in pairs] == [fenced(BAD)]
    assert tally.skipped == {
        "duplicate pairs": 1,
        "pairs of one program judged both ways": 1,
        "unknown outcome": 1,
    }


def test_a_correction_to_failed_turns_the_passing_program_into_a_rejected_one() -> None:
    passed = selfplay([(GOOD, "passed")])
    other = selfplay([(WORSE, "passed")], minutes=1)
    overruled = apply_correction(
        passed, Correction(trajectory_id=passed.id, outcome=Outcome.FAILED, source="user")
    )
    [pair] = pairwise_pass_fail([overruled, other])
    assert (pair["chosen"], pair["rejected"]) == (fenced(WORSE), fenced(GOOD))


def test_measured_challenges_never_pair() -> None:
    evaluated = measured("eval", challenge="c0ffee", outcome=Outcome.FAILED)
    items = [selfplay([(GOOD, "passed")]), selfplay([(BAD, "failed")], minutes=1), evaluated]
    assert len(pairwise_pass_fail(items)) == 1  # the control: without the exclusions
    tally = Tally()
    exclusions = Exclusions.from_trajectories([evaluated])
    assert pairwise_pass_fail(items, exclusions=exclusions, tally=tally) == []
    assert tally.skipped == {"eval, verification or held-out item": 3}


def test_round_trip_through_datasets_json(tmp_path: Path) -> None:
    import datasets

    items = [
        selfplay([(BAD, "failed"), (GOOD, "passed")], challenge="a"),
        selfplay([(GOOD, "passed")], challenge="b", prompt="Task b."),
        selfplay([(WORSE, "failed")], challenge="b", prompt="Task b.", minutes=1),
    ]
    path = tmp_path / "pairs.jsonl"
    written = write_jsonl(pairwise_pass_fail(items), path)
    assert written == 2
    loaded = datasets.load_dataset(
        "json", data_files=str(path), split="train", cache_dir=str(tmp_path / "cache")
    )
    assert loaded.num_rows == 2
    assert {"prompt", "chosen", "rejected"} <= set(loaded.column_names)
    for row in loaded:
        assert all(isinstance(row[c], str) and row[c] for c in ("prompt", "chosen", "rejected"))
        assert row["chosen"] != row["rejected"]
    assert loaded["prompt"] == [items[0].user_request, "Task b."]
    assert loaded["chosen"] == [fenced(GOOD), fenced(GOOD)]
    assert loaded["rejected"] == [fenced(BAD), fenced(WORSE)]
    assert [json.loads(line)["pair_kind"] for line in path.read_text().splitlines()] == [
        "retry",
        "cross",
    ]
