"""`nightschool eval stream` as a user runs it: the console script, the real sandbox."""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from tests.evals._cli import SCRIPT, start_until

from nightschool.evals._humaneval import load_problems

needs_bwrap = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap not installed")
REFERENCE = {p.task_id: p for p in load_problems()}


def nightschool(*args: str, home: Path, timeout: float = 900) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NIGHTSCHOOL_HOME": str(home), "COLUMNS": "200"}
    env.setdefault("NIGHTSCHOOL_MAX_TOKENS", "192")  # a function fits; SmolLM2 rambles to any cap
    return subprocess.run(
        [str(SCRIPT), *args], capture_output=True, text=True, env=env, timeout=timeout
    )


def _reference_reply(messages: list[dict[str, Any]]) -> str:
    """The canonical HumanEval solution of the task in the request (a stub model that knows)."""
    text = messages[-1]["content"]
    if "TRIGGER" in text:
        return "TRIGGER: x\nCORRECT PATTERN: y\nDOMAINS: python_general\nCONFIDENCE: 0.5\n"
    if "Write ONE general strategy" in text:
        return "TITLE: Edges first\nWHEN: a list of numbers is given\nDO: handle the empty list\n"
    for problem in REFERENCE.values():
        if problem.prompt.strip() in text:
            return f"```python\n{problem.prompt}{problem.canonical_solution}```"
    return "I cannot."


def test_help_and_misuse(tmp_path: Path) -> None:
    home = Path("unused")
    shown = nightschool("eval", "stream", "--help", home=home)
    assert shown.returncode == 0 and "--order-seed" in shown.stdout and "--resume" in shown.stdout
    bad = nightschool("eval", "stream", "--suite", "nope", home=home)
    assert bad.returncode == 2 and "unknown stream suite" in bad.stderr
    arms = nightschool("eval", "stream", "--arms", "memory,bogus", "--out", str(tmp_path / "a"),
                       home=tmp_path / "empty")  # fmt: skip
    assert arms.returncode == 2 and "bad --arms" in arms.stderr
    no_home = nightschool("eval", "stream", "--suite", "humaneval", "--memory-from-home",
                          "--out", str(tmp_path / "r"), home=tmp_path / "empty")  # fmt: skip
    assert no_home.returncode == 2 and "nightschool dream" in no_home.stderr


@needs_bwrap
def test_stream_writes_table_csv_png_and_resumes(
    tmp_path: Path, openai_stub: Callable[..., Any]
) -> None:
    home, out = tmp_path / "home", tmp_path / "run"
    args = ["eval", "stream", "--suite", "humaneval", "--limit", "3", "--out", str(out)]
    with openai_stub(_reference_reply) as url:
        first = nightschool(*args, "--base-url", url, home=home)
        assert first.returncode == 0, first.stderr
        assert "no-memory" in first.stdout and "memory" in first.stdout and "gate" in first.stdout
        rows = list(csv.DictReader((out / "stream.csv").open()))
        assert len(rows) == 9 and {r["arm"] for r in rows} == {"no_memory", "placebo", "memory"}
        assert all(r["passed"] == "1" for r in rows)  # reference answers pass every hidden test
        assert (out / "stream.png").stat().st_size > 1000
        summary = json.loads((out / "report.json").read_text())
        assert summary["slices"][0]["arms"]["memory"]["passed"] == 3
        again = nightschool(*args, "--base-url", url, home=home)
        assert again.returncode == 2 and "--resume" in again.stderr
        resumed = nightschool(*args, "--base-url", url, "--resume", home=home)
        assert resumed.returncode == 0, resumed.stderr
        assert "0 answers to go" in resumed.stderr
        other = nightschool(*args[:-2], "--out", str(out), "--order-seed", "5", "--resume",
                            "--base-url", url, home=home)  # fmt: skip
        assert other.returncode == 2 and "other settings" in other.stderr
        # the curated arm over the finished run: only its answers are asked
        curated = nightschool(*args, "--base-url", url, "--resume", "--arms", "curated", home=home)
        assert curated.returncode == 0, curated.stderr
        assert "3 answers to go" in curated.stderr and "curated vs no_memory" in curated.stderr
        rows = list(csv.DictReader((out / "stream.csv").open()))
        assert len(rows) == 12 and sum(r["arm"] == "curated" for r in rows) == 3
        summary = json.loads((out / "report.json").read_text())
        assert [c["base"] for c in summary["curated"]] == ["no_memory", "placebo", "memory"]
        # the resample arm: every public test passed, so no second draw is asked
        resample = nightschool(*args, "--base-url", url, "--resume", "--arms", "resample",
                               home=home)  # fmt: skip
        assert resample.returncode == 0, resample.stderr
        summary = json.loads((out / "report.json").read_text())
        lines = {line["arm"]: line for line in summary["second_chance"]}
        assert list(lines) == ["placebo", "memory", "curated", "resample"]
        assert all(line["second_answers"] == 0 and line["wins"] == 0 for line in lines.values())
        assert lines["resample"]["model_calls"] == 3 and not lines["resample"]["derived"]
        assert summary["first_draw"] == []  # no resample2 arm yet: nothing to compare with
        # resample2 over the same run: each arm as the first of three draws, against it
        third = nightschool(*args, "--base-url", url, "--resume", "--arms", "resample2",
                            home=home)  # fmt: skip
        assert third.returncode == 0, third.stderr
        summary = json.loads((out / "report.json").read_text())
        first = {line["arm"]: line for line in summary["first_draw"]}
        assert list(first) == ["placebo", "memory", "curated"]
        assert all(line["base"] == "resample2" and line["resample2_passed"] == 3
                   for line in first.values())  # fmt: skip
        assert all(line["passed"] == 3 and line["redrawn"] == 0 for line in first.values())
        # the facts, abstain and strategy arms over the finished run
        more = nightschool(*args, "--base-url", url, "--resume", "--arms",
                           "facts,abstain,strategy", home=home)  # fmt: skip
        assert more.returncode == 0, more.stderr
        assert "9 answers to go" in more.stderr and (out / "strategy.db").exists()
        rows = [json.loads(line) for line in (out / "rows.jsonl").read_text().splitlines()]
        by_arm = {arm: [r for r in rows if r["arm"] == arm] for arm in ("facts", "abstain")}
        # every public test passed: no fact is admitted, no entry earned; both take the answer
        assert all(r["reused"] and r["passed"] for arm in by_arm.values() for r in arm)
        mine = [r for r in rows if r["arm"] == "strategy"]
        assert len(mine) == 3 and all(r["passed"] and r["model_calls"] == 2 for r in mine)
        assert mine[0]["learned"] == "strategy:written"


def _started_with_two_rows(
    args: list[str], url: str, home: Path, out: Path
) -> tuple[subprocess.Popen[str], Path]:
    """The stream command started against `url`, once its first two rows are written."""
    rows = out / "rows.jsonl"
    return start_until([*args, "--base-url", url], home, rows, 2, 120), rows


@needs_bwrap
def test_ctrl_c_keeps_finished_answers_and_resume_finishes(
    tmp_path: Path, openai_stub: Callable[..., Any], interrupt: Callable[..., str]
) -> None:
    home, out = tmp_path / "home", tmp_path / "run"
    args = ["eval", "stream", "--suite", "humaneval", "--limit", "4", "--out", str(out)]
    with openai_stub(_reference_reply, delay_s=0.4) as url:
        proc, rows = _started_with_two_rows(args, url, home, out)
        try:
            stderr = interrupt(proc)
        finally:
            if proc.poll() is None:
                proc.kill()
        assert proc.returncode == 130, stderr
        assert "--resume" in stderr
        kept = rows.read_text().splitlines()
        assert 2 <= len(kept) < 12
        resumed = nightschool(*args, "--base-url", url, "--resume", home=home)
    assert resumed.returncode == 0, resumed.stderr
    final = [json.loads(line) for line in rows.read_text().splitlines()]
    assert len(final) == 12 and len({(r["task_id"], r["arm"]) for r in final}) == 12


@pytest.mark.e2e
@needs_bwrap
def test_e2e_stream_on_the_embedded_model(tmp_path: Path) -> None:
    pytest.importorskip("llama_cpp")
    home, out = tmp_path / "home", tmp_path / "run"
    done = nightschool(
        "eval", "stream", "--suite", "humaneval", "--limit", "2", "--out", str(out), home=home
    )
    assert done.returncode == 0, done.stderr
    rows = [json.loads(line) for line in (out / "rows.jsonl").read_text().splitlines()]
    assert len(rows) == 6 and all(r["tokens"] > 0 for r in rows)
    meta = json.loads((out / "meta.json").read_text())
    assert meta["model"] == "smollm2-135m" and meta["task_ids"] == [r["task_id"] for r in rows[::3]]
    assert (out / "stream.png").exists() and (out / "memory.db").exists()


@needs_bwrap
def test_sigterm_stops_like_ctrl_c(tmp_path: Path, openai_stub: Callable[..., Any]) -> None:
    import signal

    home, out = tmp_path / "home", tmp_path / "run"
    args = ["eval", "stream", "--suite", "humaneval", "--limit", "4", "--out", str(out)]
    with openai_stub(_reference_reply, delay_s=0.4) as url:
        proc, _ = _started_with_two_rows(args, url, home, out)
        try:
            proc.send_signal(signal.SIGTERM)
            _, stderr = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
    assert proc.returncode == 130, stderr
    assert "--resume" in stderr and (out / "report.json").exists()
