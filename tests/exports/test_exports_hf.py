from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.exports._factory import BAD, GOOD, chat, measured, selfplay

from nightschool.errors import UserError
from nightschool.exports import DATA_FILE, Exclusions, Tally, write_hf_dataset
from nightschool.trajectory import Outcome


def load(directory: Path, tmp_path: Path):  # type: ignore[no-untyped-def]
    import datasets

    return datasets.load_dataset(str(directory), cache_dir=str(tmp_path / "cache"))


def sample_items() -> list:  # type: ignore[type-arg]
    return [
        selfplay([(BAD, "failed"), (GOOD, "passed")], challenge="a", model="qwen-a"),
        selfplay([(BAD, "failed")], challenge="b", cluster="sql", minutes=30, model="qwen-b"),
        chat(minutes=90),
        selfplay([(GOOD, "passed")], challenge="evalhash", minutes=100),
        measured("eval", challenge="evalhash", minutes=110),
    ]


def test_directory_round_trips_through_load_dataset(tmp_path: Path) -> None:
    items = sample_items()
    exclusions = Exclusions.from_trajectories([items[4]])
    tally = Tally()
    target = tmp_path / "export"
    facts = write_hf_dataset(
        items, target, exclusions=exclusions, tally=tally, selection={"cluster": "any"}
    )
    assert (target / DATA_FILE).is_file() and (target / "README.md").is_file()
    assert facts.rows == tally.written == 3
    dataset = load(target, tmp_path)
    assert list(dataset) == ["train"]
    train = dataset["train"]
    assert train.num_rows == 3
    assert train["id"] == [items[0].id, items[1].id, items[2].id]  # the eval-hash one is out
    assert train["outcome"] == ["passed", "failed", "passed"]
    assert train["task_kind"] == ["selfplay", "selfplay", "chat"]
    assert train["challenge_hash"] == ["a", "b", None]
    assert train["attempts"] == [2, 1, None]
    first = train[0]
    assert first["response"] == f"```python\n{GOOD.strip()}\n```"
    assert [m["role"] for m in first["messages"]] == ["system", "user", "assistant"]
    assert first["messages"][2]["content"] == first["response"]
    assert [c["result"] for c in json.loads(first["tool_calls"])] == ["failed", "passed"]
    assert train[2]["response"] == items[2].final_response
    assert str(train.features["timestamp"].dtype).startswith("timestamp[us")


def test_the_card_reports_counts_models_dates_and_redaction(tmp_path: Path) -> None:
    items = sample_items()
    target = tmp_path / "export"
    write_hf_dataset(items, target, exclusions=Exclusions.from_trajectories([items[4]]))
    card = (target / "README.md").read_text("utf-8")
    header, body = card.split("---\n", 2)[1:]
    assert "configs:" in header and "path: data/train-*" in header
    assert '- "n<1K"' in header
    assert "- rows: 3" in body
    assert "| passed | 2 |" in body and "| failed | 1 |" in body
    assert "| selfplay | 2 |" in body and "| chat | 1 |" in body
    assert "| qwen-a | 1 |" in body and "| qwen-b | 1 |" in body and "| qwen-test | 1 |" in body
    assert "- date range: 2025-03-01 12:00 to 2025-03-01 13:30 UTC" in body
    assert "- 2 eval, verification or held-out item" in body
    assert "## Redaction" in body and "<REDACTED_API_KEY>" in body


def test_rows_are_redacted_at_export(tmp_path: Path) -> None:
    key = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    leaky = selfplay([(f'TOKEN = "{key}"\n' + GOOD, "passed")], prompt=f"Use token {key}.")
    write_hf_dataset([leaky], tmp_path / "out")
    train = load(tmp_path / "out", tmp_path)["train"]
    row = json.dumps(train[0], default=str)
    assert key not in row and "<REDACTED_API_KEY>" in train[0]["response"]


def test_the_directory_appears_whole_or_not_at_all(tmp_path: Path) -> None:
    taken = tmp_path / "taken"
    taken.mkdir()
    (taken / "keep.txt").write_text("mine")
    with pytest.raises(UserError, match="not an empty directory"):
        write_hf_dataset(sample_items(), taken)
    assert [p.name for p in taken.iterdir()] == ["keep.txt"]
    with pytest.raises(UserError, match="does not exist"):
        write_hf_dataset(sample_items(), tmp_path / "missing" / "out")
    with pytest.raises(UserError, match="no trajectories to export"):
        write_hf_dataset([measured("eval")], tmp_path / "nothing")
    assert not (tmp_path / "nothing").exists()
    empty = tmp_path / "empty"
    empty.mkdir()
    write_hf_dataset([chat()], empty)
    assert (empty / DATA_FILE).is_file()
    leftovers = [p.name for p in tmp_path.iterdir() if ".partial-" in p.name]
    assert leftovers == []


def test_failed_and_unknown_rows_keep_their_outcome(tmp_path: Path) -> None:
    unknown = selfplay([(BAD, "failed")], outcome=Outcome.UNKNOWN, extra={"sample_of": "x1"})
    write_hf_dataset([unknown], tmp_path / "out")
    [row] = load(tmp_path / "out", tmp_path)["train"]
    assert row["outcome"] == "unknown" and row["sample_of"] == "x1"
