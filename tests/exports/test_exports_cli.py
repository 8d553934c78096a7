"""`nightschool trajectories export --format ...` end to end: the real app, a real store."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import Result
from tests.exports._factory import BAD, GOOD, chat, measured, selfplay
from tests.exports.test_exports_chat import assert_openai_chat_example
from typer.testing import CliRunner

from nightschool.cli import app
from nightschool.config import Settings
from nightschool.store import Store
from nightschool.trajectory import Correction, Outcome

runner = CliRunner()


def export(*args: str) -> Result:
    return runner.invoke(app, ["trajectories", "export", *args], env={"COLUMNS": "300"})


@pytest.fixture
def ids() -> dict[str, str]:
    """A home database with practice, chat, an eval item and practice on the eval's challenge."""
    Settings().home_dir().mkdir(parents=True, exist_ok=True)
    items = {
        "retry": selfplay([(BAD, "failed"), (GOOD, "passed")], challenge="h1"),
        "first_try": selfplay([(GOOD, "passed")], challenge="h2", prompt="Task two.", minutes=1),
        "failed": selfplay([(BAD, "failed")], challenge="h2", prompt="Task two.", minutes=2),
        "sql": selfplay(
            [(GOOD, "passed")], challenge="h3", prompt="SQL task.", cluster="sql", minutes=3
        ),
        "chat": chat(minutes=4),
        "eval": measured("eval", challenge="h9", prompt="Benchmark task.", minutes=5),
        "on_eval": selfplay(
            [(GOOD, "passed")], challenge="h9", prompt="Benchmark task.", minutes=6
        ),
        "verify": measured("verification", challenge="h8", prompt="Verify task.", minutes=7),
        "overruled": selfplay(
            [(GOOD, "passed")], challenge="h4", prompt="Overruled task.", minutes=8
        ),
    }
    with Store.open(Settings().database_path()) as store:
        store.append_trajectories(list(items.values()))
        store.add_correction(
            Correction(
                trajectory_id=items["overruled"].id,
                outcome=Outcome.FAILED,
                source="user_correction",
                authority="human",
            )
        )
    return {name: item.id for name, item in items.items()}


def test_openai_chat_export_leaves_measurements_out(ids: dict[str, str], tmp_path: Path) -> None:
    out = tmp_path / "chat.jsonl"
    result = export("--format", "openai-chat", "-o", str(out))
    assert result.exit_code == 0, result.output
    examples = [json.loads(line) for line in out.read_text("utf-8").splitlines()]
    for example in examples:
        assert_openai_chat_example(example)
    users = [e["messages"][1]["content"] for e in examples]
    assert users == [
        "Write add(a, b) in solution.py.",
        "Task two.",
        "SQL task.",
        chat().user_request,
    ]
    assert "Benchmark task." not in out.read_text() and "Verify task." not in out.read_text()
    assert "wrote 4 chat examples to" in result.stderr
    assert "3 eval, verification or held-out item" in result.stderr
    assert "2 failed (not passed)" in result.stderr  # `failed` and the overruled one


def test_filters(ids: dict[str, str], tmp_path: Path) -> None:
    out = tmp_path / "sql.jsonl"
    assert export("--format", "openai-chat", "--cluster", "sql", "-o", str(out)).exit_code == 0
    [only] = [json.loads(line) for line in out.read_text().splitlines()]
    assert only["messages"][1]["content"] == "SQL task."
    kinds = export("--format", "openai-chat", "--task-kind", "chat")
    assert kinds.exit_code == 0 and [json.loads(x) for x in kinds.stdout.splitlines()] == [
        {
            "messages": [
                {"role": "system", "content": chat().system_prompt},
                {"role": "user", "content": chat().user_request},
                {"role": "assistant", "content": chat().final_response},
            ]
        }
    ]
    late = export("--format", "jsonl", "--since", "2025-03-01T12:05:00")
    assert late.exit_code == 0
    assert [json.loads(x)["id"] for x in late.stdout.splitlines()] == [
        ids["eval"], ids["on_eval"], ids["verify"], ids["overruled"]
    ]  # fmt: skip
    failed = export("--format", "jsonl", "--outcome", "failed")
    assert {json.loads(x)["id"] for x in failed.stdout.splitlines()} == {
        ids["failed"],
        ids["overruled"],
    }


def test_preference_export(ids: dict[str, str], tmp_path: Path) -> None:
    out = tmp_path / "pairs.jsonl"
    result = export("--format", "preference", "-o", str(out))
    assert result.exit_code == 0, result.output
    pairs = [json.loads(line) for line in out.read_text().splitlines()]
    sides = [
        (p["pair_kind"], p["chosen_trajectory_id"], p["rejected_trajectory_id"]) for p in pairs
    ]
    assert sides == [
        ("retry", ids["retry"], ids["retry"]),
        ("cross", ids["first_try"], ids["failed"]),
    ]
    assert "wrote 2 preference pairs" in result.stderr
    only_passed = export("--format", "preference", "--outcome", "passed")
    assert [json.loads(x)["pair_kind"] for x in only_passed.stdout.splitlines()] == ["retry"]


def test_hf_export(ids: dict[str, str], tmp_path: Path) -> None:
    import datasets

    target = tmp_path / "dataset"
    result = export("--format", "hf", "-o", str(target), "--since", "2025-03-01")
    assert result.exit_code == 0, result.output
    train = datasets.load_dataset(str(target), split="train", cache_dir=str(tmp_path / "c"))
    assert set(train["id"]) == {
        ids[name] for name in ("retry", "first_try", "failed", "sql", "chat", "overruled")
    }
    assert train.filter(lambda row: row["id"] == ids["overruled"])[0]["outcome"] == "failed"
    assert "wrote 6 trajectories to" in result.stderr
    card = (target / "README.md").read_text()
    assert "- rows: 6" in card and "- filters: since = 2025-03-01" in card
    again = export("--format", "hf", "-o", str(target))
    assert again.exit_code == 2 and "not an empty directory" in again.stderr
    nothing = export("--format", "hf", "-o", str(tmp_path / "none"), "--since", "2999-01-01")
    assert nothing.exit_code == 2 and "no trajectories to export" in nothing.stderr
    assert not (tmp_path / "none").exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--format", "hf"], "--output/-o"),
        (["--format", "csv"], "unknown format"),
        (["--format", "openai-chat", "--task-kind", "eval"], "never go into a fine-tuning"),
        (["--format", "preference", "--task-kind", "verification"], "never go into"),
        (["--task-kind", "dreams"], "unknown task kind"),
        (["--outcome", "maybe"], "unknown outcome"),
        (["--cluster", "astrology"], "unknown cluster"),
        (["--since", "soon"], "not a date"),
        (["--format", "preference", "-o", "/nonexistent/dir/pairs.jsonl"], "does not exist"),
    ],
)
def test_misuse_is_a_clear_usage_error(ids: dict[str, str], args: list[str], message: str) -> None:
    result = export(*args)
    assert result.exit_code == 2 and message in result.stderr


def test_no_database_yet() -> None:
    result = export("--format", "openai-chat")
    assert result.exit_code == 2 and "no database" in result.stderr
