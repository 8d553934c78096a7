"""`nightschool models` and the `--model` / `--model-path` flags at the command line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from nightschool.cli import app
from nightschool.llm import CATALOG


def invoke(*args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args), env={"COLUMNS": "160", **(env or {})})
    return result.exit_code, result.stdout, result.stderr


def test_models_table_lists_every_model_and_the_default(tmp_path: Path) -> None:
    code, out, _ = invoke("models")
    assert code == 0
    for entry in CATALOG:
        assert entry.name in out and entry.metadata_name in out
    assert "qwen2.5-coder-1.5b *" in out and "* the default" in out
    assert "qwen2.5-coder-0.5b *" not in out
    assert "1117 MB" in out and "491 MB" in out and "Q4_K_M" in out
    assert not (tmp_path / "home" / "models").exists()  # listing assembles nothing


def test_models_json(tmp_path: Path) -> None:
    code, out, _ = invoke("models", "--json")
    assert code == 0
    rows = json.loads(out)
    assert [row["name"] for row in rows] == [entry.name for entry in CATALOG]
    default = [row for row in rows if row["default"]]
    assert len(default) == 1 and default[0]["name"] == "qwen2.5-coder-1.5b"
    assert default[0]["size_bytes"] == 1_117_320_768
    assert default[0]["path"] == str(tmp_path / "home" / "models" / CATALOG[2].source.filename)
    assert {row["state"] for row in rows} <= {"ready", "installed", "missing"}
    for row in rows:
        assert (row["state"] == "missing") == (row["hint"] is not None)


def test_model_path_to_a_missing_file_is_misuse(tmp_path: Path) -> None:
    code, _, err = invoke("dream", "--model-path", str(tmp_path / "nope.gguf"))
    flat = "".join(err.split())  # Rich wraps a long path where the terminal ends
    assert code == 2
    assert "nosuchfile" in flat and "nope.gguf" in flat


def test_model_path_from_the_environment(tmp_path: Path) -> None:
    env = {"NIGHTSCHOOL_MODEL_PATH": str(tmp_path / "gone.gguf")}
    code, _, err = invoke("dream", env=env)
    assert code == 2 and "gone.gguf" in "".join(err.split())


def test_unknown_embedded_model_name_is_misuse() -> None:
    code, _, err = invoke("dream", "--model", "llama3")
    assert code == 2
    assert "not an embedded model" in err and "qwen2.5-coder-1.5b" in err


@pytest.mark.parametrize("command", ["dream", "evolve", "serve", "chat", "reflect"])
def test_every_model_command_takes_model_path(command: str) -> None:
    code, out, _ = invoke(command, "--help")
    assert code == 0 and "--model-path" in out


def test_eval_commands_take_model_path() -> None:
    for sub in ("run", "freeze", "compare"):
        code, out, _ = invoke("eval", sub, "--help")
        assert code == 0 and "--model-path" in out, sub
