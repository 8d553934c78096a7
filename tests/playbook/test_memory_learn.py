from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from nightschool.playbook import DOMAINS, HashingEmbedder, LearnResult, MemoryConfig, SkillMemory
from nightschool.store import Store

Learn = Callable[..., LearnResult]


def test_domains_are_the_taxonomy() -> None:
    assert DOMAINS == (
        "data_analysis",
        "regex_parse",
        "sql",
        "concurrency",
        "algo",
        "bash",
        "python_general",
        "web_automation",
    )


def test_learn_writes_a_lesson_with_provenance(memory: SkillMemory) -> None:
    result = memory.learn(
        trigger="When parsing dates from a CSV export",
        anti_pattern="one strptime format for every row",
        correct_pattern="try an explicit list of formats in order",
        code_example="for fmt in FORMATS: ...",
        domains=["data_analysis", "regex_parse"],
        source="selfplay",
        confidence=0.4,
        source_trajectory_id="traj-1",
        challenge_hash="abc123",
        extra={"cluster": "data_analysis"},
    )
    assert result.status == "written" and result.reason
    assert result.lesson_id is not None and result.lesson_id.startswith("L-")
    lesson = memory.get(result.lesson_id)
    assert lesson is not None
    assert lesson.trigger == "When parsing dates from a CSV export"
    assert lesson.domains == ["data_analysis", "regex_parse"]
    assert (lesson.source, lesson.source_trajectory_id) == ("selfplay", "traj-1")
    assert lesson.challenge_hash == "abc123"
    assert lesson.confidence == pytest.approx(0.4)
    assert not lesson.verified
    assert lesson.extra == {"cluster": "data_analysis"}
    assert (lesson.times_shown, lesson.reinforcements) == (0, 0)
    assert lesson.created_at.tzinfo is not None
    assert memory.count() == 1


@pytest.mark.parametrize(
    ("overrides", "reason"),
    [
        ({"trigger": "   "}, "trigger is empty"),
        ({"correct_pattern": ""}, "correct_pattern is empty"),
        ({"domains": []}, "domains must be a non-empty list"),
        ({"domains": "sql"}, "domains must be a non-empty list"),
        ({"domains": ["sql", "cooking"]}, "unknown domains ['cooking']"),
        ({"source": "rumour"}, "unknown source 'rumour'"),
        ({"confidence": 1.5}, "confidence must be a number within 0..1"),
        ({"confidence": math.nan}, "confidence must be a number within 0..1"),
        ({"trigger": "x" * 5000}, "trigger is longer than 4000 characters"),
        ({"extra": {"when": object()}}, "extra is not JSON-serialisable"),
    ],
)
def test_invalid_lessons_are_rejected_not_raised(
    memory: SkillMemory, overrides: dict[str, Any], reason: str
) -> None:
    args: dict[str, Any] = {
        "trigger": "When joining tables",
        "anti_pattern": "",
        "correct_pattern": "use LEFT JOIN",
        "domains": ["sql"],
        "source": "manual",
    }
    args.update(overrides)
    result = memory.learn(**args)
    assert result.status == "rejected"
    assert result.lesson_id is None
    assert reason in result.reason
    assert memory.count() == 0


def test_same_normalised_trigger_reinforces(memory: SkillMemory, learn: Learn) -> None:
    first = learn(
        "When reading a CSV file with quoted commas", confidence=0.5, source_trajectory_id="t-1"
    )
    again = memory.learn(
        trigger="  when READING a csv file, with quoted commas!  ",
        anti_pattern="something else",
        correct_pattern="a different wording of the fix",
        domains=["data_analysis"],
        source="selfplay",
        source_trajectory_id="t-2",
    )
    assert again.status == "reinforced"
    assert again.lesson_id == first.lesson_id
    assert "same trigger" in again.reason
    assert memory.count() == 1
    lesson = memory.get(first.lesson_id or "")
    assert lesson is not None
    assert lesson.reinforcements == 1
    assert lesson.confidence == pytest.approx(0.5 + 0.2 * 0.5)
    assert lesson.source_trajectory_id == "t-1"  # original provenance kept
    assert lesson.source == "reflection"
    assert lesson.correct_pattern == "do the right thing"
    assert [r["trajectory_id"] for r in lesson.extra["reinforced_by"]] == ["t-2"]


def test_confidence_only_climbs_toward_one(memory: SkillMemory, learn: Learn) -> None:
    lesson_id = learn("When sorting by two keys", confidence=0.9).lesson_id or ""
    values = []
    for i in range(6):
        memory.learn(
            trigger="when sorting by two keys",
            anti_pattern="",
            correct_pattern="x",
            domains=["algo"],
            source="selfplay",
            source_trajectory_id=f"t{i}",
        )
        lesson = memory.get(lesson_id)
        assert lesson is not None
        values.append(lesson.confidence)
    assert values == sorted(values)
    assert 0.9 < values[-1] <= 1.0


def test_cosine_near_duplicate_reinforces(store: Store) -> None:
    memory = SkillMemory(store, HashingEmbedder(), MemoryConfig(duplicate_threshold=0.8))
    first = memory.learn(
        trigger="When several threads increment a shared counter",
        anti_pattern="unsynchronised counter += 1",
        correct_pattern="guard the increment with a threading.Lock",
        domains=["concurrency"],
        source="reflection",
    )
    near = memory.learn(
        trigger="When several threads increment one shared counter variable",
        anti_pattern="counter += 1 without a lock",
        correct_pattern="guard each increment with a threading.Lock",
        domains=["concurrency"],
        source="selfplay",
        source_trajectory_id="t-9",
    )
    far = memory.learn(
        trigger="When a bash script must stop on errors",
        anti_pattern="",
        correct_pattern="set -euo pipefail",
        domains=["bash"],
        source="selfplay",
    )
    assert near.status == "reinforced" and near.lesson_id == first.lesson_id
    assert "cosine" in near.reason
    assert far.status == "written"
    assert memory.count() == 2


def test_text_and_extra_are_redacted_on_write(memory: SkillMemory) -> None:
    secret = "sk-proj-" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4"
    result = memory.learn(
        trigger=f"When the client reads api_key={secret} from the environment",
        anti_pattern="hard-coding password: hunter2hunter2 in the script",
        correct_pattern="read it with os.environ and mail ops@example.com",
        code_example=f'client = Client(token="{secret}")',
        domains=["python_general"],
        source="user_correction",
        extra={"note": f"seen {secret}", "api_key": "plain-value-123"},
    )
    lesson = memory.get(result.lesson_id or "")
    assert lesson is not None
    dumped = json.dumps(lesson.model_dump(mode="json"))
    assert secret not in dumped
    assert "hunter2hunter2" not in dumped
    assert "ops@example.com" not in dumped
    assert "plain-value-123" not in dumped
    assert "<REDACTED" in lesson.trigger and "<REDACTED" in lesson.code_example
    row = memory.store.query("SELECT trigger, code_example, extra FROM lessons")[0]
    assert all(secret not in str(value) for value in row)
    if memory.store.dialect == "postgres":
        sql, quote = "SELECT count(*) FROM lessons WHERE fts @@ to_tsquery('english', ?)", "'"
    else:
        sql, quote = "SELECT count(*) FROM lessons_fts WHERE lessons_fts MATCH ?", '"'
    assert memory.store.query(sql, (f"{quote}hunter2hunter2{quote}",))[0][0] == 0
    assert memory.store.query(sql, (f"{quote}script{quote}",))[0][0] == 1  # the index works


def test_persistence_across_reopen(tmp_path: Path) -> None:
    path = tmp_path / "playbook.db"
    with Store.open(path) as store:
        memory = SkillMemory(store, HashingEmbedder())
        lesson_id = memory.learn(
            trigger="When deleting files by pattern in a directory tree",
            anti_pattern="parsing ls output",
            correct_pattern="find DIR -name '*.log' -delete",
            domains=["bash"],
            source="selfplay",
            source_trajectory_id="t-1",
        ).lesson_id
        memory.record_exposure([lesson_id or ""], "t-5")
    with Store.open(path) as store:
        # About persistence, not relevance: with one lesson BM25 adds nothing (FTS5
        # clamps the IDF of a word in every row), so this paraphrase (hashing cosine
        # 0.44) sits below the hashing embedder's floor; the floor is off here.
        memory = SkillMemory(store, HashingEmbedder(), MemoryConfig(min_score=0.0))
        assert memory.count() == 1
        got = memory.retrieve("delete all the log files in nested directories", k=1)
        assert [r.lesson.id for r in got] == [lesson_id]
        assert got[0].lesson.times_shown == 1
        assert memory.retract_from_trajectory("t-1") == 1
    with Store.open(path) as store:
        memory = SkillMemory(store, HashingEmbedder())
        assert memory.count() == 0
        assert [lesson.id for lesson in memory.archived("t-1")] == [lesson_id]


def test_list_count_and_export(memory: SkillMemory, learn: Learn) -> None:
    ids = [
        learn(f"When handling {noun}", f"check the {noun} first").lesson_id
        for noun in ("invoices", "sockets", "glaciers")
    ]
    assert memory.set_verified(ids[1] or "", True, {"pass_rate_with": 0.8})
    assert [lesson.id for lesson in memory.list()] == ids
    assert [lesson.id for lesson in memory.list(limit=2)] == ids[:2]
    assert [lesson.id for lesson in memory.list(verified=True)] == [ids[1]]
    assert memory.count() == 3
    records = list(memory.export())
    assert len(records) == 3
    assert all(r["format_version"] == 2 and r["kind"] == "lesson" for r in records)
    json.dumps(records)
    assert records[1]["extra"]["verification"]["comparison"] == {"pass_rate_with": 0.8}


def test_export_restore_round_trip(tmp_path: Path, memory: SkillMemory, learn: Learn) -> None:
    learn(
        "When parsing key=value pairs with quotes",
        source_trajectory_id="t-1",
        domains=["regex_parse"],
    )
    learn("When rounding half values", domains=["python_general", "data_analysis"])
    records = list(memory.export())
    with Store.open(tmp_path / "copy.db") as other:
        copy = SkillMemory(other, HashingEmbedder())
        assert copy.restore(records) == 2
        assert copy.restore(records) == 0  # ids already present
        assert [r["id"] for r in copy.export()] == [r["id"] for r in records]
        assert list(copy.export()) == records
        hit = copy.retrieve("parse key value pairs with quotes", k=1)
        assert hit[0].lesson.id == records[0]["id"]
