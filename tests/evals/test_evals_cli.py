"""`nightschool eval ...`: exit codes through Typer's runner, and end to end on real parts."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from typer.testing import CliRunner

from nightschool.cli import app
from nightschool.evals import TaskResult
from nightschool.evals._storage import add_result, create_run, finish_run
from nightschool.store import Store

SCRIPT = Path(sys.executable).with_name("nightschool")


def stored_run(
    home: Path, outcomes: list[bool], *, model: str = "m", suite: str = "humaneval"
) -> str:
    with Store.open(home / "nightschool.db") as store:
        run_id = create_run(
            store, suite=suite, runner="inprocess", model=model, seed=0, version="0.1.0", config={}
        )
        for k, ok in enumerate(outcomes):
            add_result(store, run_id, TaskResult(f"HumanEval/{k}", ok, float(ok), 3, 4, 0.5))
        finish_run(store, run_id, "completed")
    return run_id


def invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args), env={"COLUMNS": "200"})
    return result.exit_code, result.output


def test_help_everywhere() -> None:
    for args in (
        ["eval"],
        ["eval", "run"],
        ["eval", "freeze"],
        ["eval", "compare"],
        ["eval", "runs"],
    ):
        code, out = invoke(*args, "--help")
        assert code == 0 and "Usage" in out, out


def test_freeze_and_compare_exit_codes(_isolated_home: Path, tmp_path: Path) -> None:
    home = _isolated_home
    base_id = stored_run(home, [True] * 8 + [False] * 2)
    same_id = stored_run(home, [True] * 8 + [False] * 2)
    worse_id = stored_run(home, [False] * 7 + [True] + [False] * 2)
    other_model = stored_run(home, [True] * 10, model="other")
    other_suite = stored_run(home, [True] * 10, suite="regression")
    baseline = tmp_path / "baseline.json"

    code, out = invoke("eval", "freeze", "--run", base_id[:8], "--output", str(baseline))
    assert code == 0, out
    assert json.loads(baseline.read_text())["provenance"]["run_id"] == base_id

    code, out = invoke("eval", "compare", "--baseline", str(baseline), "--run", same_id)
    assert code == 0 and "no regression" in out, out
    code, out = invoke("eval", "compare", "--baseline", str(baseline), "--run", worse_id)
    assert code == 1 and "REGRESSION" in out and "mcnemar-exact" in out, out
    code, out = invoke(
        "eval", "compare", "--baseline", str(baseline), "--run", worse_id, "--tolerance", "0.9"
    )
    assert code == 0, out
    code, out = invoke("eval", "compare", "--baseline", str(baseline), "--run", other_model)
    assert code == 2 and "model mismatch" in out, out
    code, out = invoke("eval", "compare", "--baseline", str(baseline), "--run", other_suite)
    assert code == 2 and "suite mismatch" in out, out

    corrupt = tmp_path / "corrupt.json"
    corrupt.write_text('{"kind": "nightschool-eval-baseline", "format_version": 1, "provenan')
    code, out = invoke("eval", "compare", "--baseline", str(corrupt), "--run", same_id)
    assert code == 2 and "not valid JSON" in out, out
    code, out = invoke("eval", "compare", "--baseline", str(tmp_path / "none.json"))
    assert code == 2 and "cannot read" in out, out

    code, out = invoke("eval", "runs")
    assert code == 0 and base_id[:12] in out


def test_compare_refuses_another_model_before_running(_isolated_home: Path, tmp_path: Path) -> None:
    if shutil.which("bwrap") is None:
        pytest.skip("bubblewrap not installed")
    pytest.importorskip("llama_cpp")
    baseline = tmp_path / "b.json"
    run_id = stored_run(_isolated_home, [True, False], model="some-other-model")
    assert invoke("eval", "freeze", "--run", run_id, "-o", str(baseline))[0] == 0
    code, out = invoke("eval", "compare", "--baseline", str(baseline))
    assert code == 2 and "model mismatch" in out and "would use" in out, out
    with Store.open(_isolated_home / "nightschool.db") as store:
        assert len(store.query("SELECT id FROM eval_runs")) == 1  # nothing was run


def test_misuse_exits_2() -> None:
    code, out = invoke("eval", "run", "--suite", "nope")
    assert code == 2 and "known suites" in out
    code, out = invoke("eval", "freeze", "--output", "x.json")
    assert code == 2 and "exactly one of" in out
    code, out = invoke("eval", "run", "--suite", "humaneval", "--runner", "http")
    assert code == 2 and "--server" in out
    code, out = invoke(
        "eval", "run", "--suite", "humaneval", "--runner", "http", "--server", "http://10.1.2.3:80"
    )
    assert code == 2 and "loopback" in out
    code, out = invoke("eval", "run", "--suite", "humaneval", "--route", "stop")
    assert code == 2 and "--route must be one of" in out
    code, out = invoke("eval", "run", "--suite", "humaneval", "--route", "auto", "--backend", "ray")
    assert code == 2 and "--route auto runs in-process only" in out
    code, out = invoke(
        "eval", "run", "--suite", "humaneval", "--runner", "http", "--server",
        "http://127.0.0.1:9", "--route", "direct",
    )  # fmt: skip
    assert code == 2 and "the server decides it" in out


def test_unreachable_server_exits_3(_isolated_home: Path) -> None:
    if shutil.which("bwrap") is None:
        pytest.skip("bubblewrap not installed")
    code, out = invoke(
        "eval",
        "run",
        "--suite",
        "post_learning",
        "--runner",
        "http",
        "--server",
        "http://127.0.0.1:9",
    )
    assert code == 3 and "unreachable" in out, out


def test_model_down_exits_3_and_remote_model_is_refused_with_2() -> None:
    if shutil.which("bwrap") is None:
        pytest.skip("bubblewrap not installed")
    down = ("--base-url", "http://127.0.0.1:9/v1", "--model", "x")
    code, out = invoke("eval", "run", "--suite", "humaneval", "--limit", "1", *down)
    assert code == 3, out
    remote = ("--base-url", "http://192.0.2.7:8080/v1", "--model", "x")  # TEST-NET-1
    code, out = invoke("eval", "run", "--suite", "humaneval", "--limit", "1", *remote)
    assert code == 2 and "network egress blocked" in out and "local-only" in out, out


# -- end to end: the installed command, the embedded model, bubblewrap, SQLite -----


def nightschool(*args: str, home: Path, timeout: float = 900) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NIGHTSCHOOL_HOME": str(home), "COLUMNS": "200"}
    env.setdefault("NIGHTSCHOOL_MAX_TOKENS", "192")  # a function fits; SmolLM2 rambles to any cap
    env.pop("NIGHTSCHOOL_BASE_URL", None)
    return subprocess.run(
        [str(SCRIPT), *args], capture_output=True, text=True, env=env, timeout=timeout
    )


@pytest.mark.e2e
def test_e2e_humaneval_run_freeze_compare_with_the_embedded_model(tmp_path: Path) -> None:
    if shutil.which("bwrap") is None:
        pytest.skip("bubblewrap not installed")
    pytest.importorskip("llama_cpp")
    home = tmp_path / "home"
    run = nightschool(
        "eval", "run", "--suite", "humaneval", "--limit", "2", "--timeout", "300", home=home
    )
    assert run.returncode == 0, run.stderr
    assert "pass@1" in run.stdout and "Wilson" in run.stdout
    conn = sqlite3.connect(home / "nightschool.db")
    try:
        [(run_id, status, n, model)] = conn.execute(
            "SELECT id, status, n, model FROM eval_runs"
        ).fetchall()
        results = conn.execute(
            "SELECT task_id, trajectory_id, tokens_out FROM eval_results WHERE run_id = ? "
            "ORDER BY id",
            (run_id,),
        ).fetchall()
        kinds = conn.execute("SELECT DISTINCT task_kind FROM trajectories").fetchall()
    finally:
        conn.close()
    assert status == "completed" and n == 2 and model == "smollm2-135m"
    assert [r[0] for r in results] == ["HumanEval/0", "HumanEval/1"]
    assert all(r[1] for r in results) and all(r[2] > 0 for r in results)
    assert kinds == [("eval",)]

    baseline = tmp_path / "humaneval.json"
    frozen = nightschool("eval", "freeze", "--run", run_id, "--output", str(baseline), home=home)
    assert frozen.returncode == 0, frozen.stderr
    assert json.loads(baseline.read_text())["provenance"]["model"] == model
    again = nightschool(
        "eval", "compare", "--baseline", str(baseline), "--timeout", "300", home=home
    )
    assert again.returncode == 0, again.stdout + again.stderr  # 2 tasks can never be significant
    assert "paired tasks 2" in again.stdout


class _SlowAfterTwo(BaseHTTPRequestHandler):
    """Answers two chat requests at once, then hangs (until the client gives up)."""

    answered = 0

    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        self._send({"object": "list", "data": []})

    def do_PUT(self) -> None:  # seeding a session's workspace files
        files = json.loads(self.rfile.read(int(self.headers["Content-Length"])))["files"]
        self._send({"written": sorted(files)})

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        type(self).answered += 1
        if type(self).answered > 2:
            time.sleep(30)
        self._send(
            {
                "object": "chat.completion",
                "model": "stub",
                "choices": [{"message": {"role": "assistant", "content": "I list files."}}],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1},
            }
        )

    def _send(self, body: dict[str, object]) -> None:
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        with contextlib.suppress(OSError):
            self.wfile.write(data)


def test_ctrl_c_in_the_real_command_keeps_results(
    tmp_path: Path, interrupt: Callable[..., str]
) -> None:
    if shutil.which("bwrap") is None:
        pytest.skip("bubblewrap not installed")
    server = ThreadingHTTPServer(("127.0.0.1", 0), _SlowAfterTwo)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    home = tmp_path / "home"
    env = {**os.environ, "NIGHTSCHOOL_HOME": str(home), "COLUMNS": "200"}
    url = f"http://127.0.0.1:{server.server_address[1]}"
    proc = subprocess.Popen(
        [
            str(SCRIPT),
            "eval",
            "run",
            "--suite",
            "post_learning",
            "--runner",
            "http",
            "--server",
            url,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        deadline = time.monotonic() + 60
        while _SlowAfterTwo.answered < 3 and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(0.5)
        stderr = interrupt(proc)
    finally:
        if proc.poll() is None:
            proc.kill()
        server.shutdown()
        server.server_close()
    assert proc.returncode == 130, stderr
    assert "stored as interrupted with its 2 finished result(s)" in stderr
    conn = sqlite3.connect(home / "nightschool.db")
    try:
        [(status, n, finished)] = conn.execute(
            "SELECT status, n, finished_at FROM eval_runs"
        ).fetchall()
        rows = conn.execute("SELECT COUNT(*) FROM eval_results").fetchone()[0]
    finally:
        conn.close()
    assert (status, n, rows) == ("interrupted", 2, 2) and finished


@pytest.mark.e2e
def test_e2e_http_runner_against_nightschool_serve(tmp_path: Path) -> None:
    """`eval run --runner http` against a real `nightschool serve` (embedded model)."""
    if shutil.which("bwrap") is None:
        pytest.skip("bubblewrap not installed")
    pytest.importorskip("llama_cpp")
    home = tmp_path / "home"
    env = {**os.environ, "NIGHTSCHOOL_HOME": str(home), "COLUMNS": "200"}
    env.pop("NIGHTSCHOOL_API_KEY", None)
    serve = subprocess.Popen(
        [str(SCRIPT), "serve", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
    )
    try:
        assert serve.stdout is not None
        url = None
        deadline = time.monotonic() + 120
        while url is None and time.monotonic() < deadline:
            line = serve.stdout.readline()
            found = re.search(r"listening on (http://127\.0\.0\.1:\d+)", line)
            url = found.group(1) if found else None
        assert url, "server did not start"
        run = nightschool(
            "eval",
            "run",
            "--suite",
            "post_learning",
            "--limit",
            "1",
            "--runner",
            "http",
            "--server",
            url,
            home=home,
        )
    finally:
        serve.send_signal(signal.SIGINT)
        try:
            serve.wait(timeout=90)
        except subprocess.TimeoutExpired:
            serve.kill()
    assert run.returncode == 0, run.stdout + run.stderr
    conn = sqlite3.connect(home / "nightschool.db")
    try:
        [(runner, status)] = conn.execute("SELECT runner, status FROM eval_runs").fetchall()
        [(trajectory_id, detail)] = conn.execute(
            "SELECT trajectory_id, detail FROM eval_results"
        ).fetchall()
        kinds = conn.execute(
            "SELECT task_kind FROM trajectories WHERE id = ?", (trajectory_id,)
        ).fetchall()
    finally:
        conn.close()
    assert (runner, status) == ("http", "completed")
    assert json.loads(detail)["judged_by"] == "tool calls"  # the extension was read
    assert kinds == [("eval",)]


def test_tables_print_names_from_servers_literally(_isolated_home: Path, tmp_path: Path) -> None:
    """A model name (reported by a server) is data, not Rich markup."""
    run_id = stored_run(_isolated_home, [True, False], model="llama [/INST] [bold]q")
    code, out = invoke("eval", "runs")
    assert code == 0 and "[/INST] [bold]q" in out, out
    code, out = invoke("eval", "freeze", "--run", run_id, "-o", str(tmp_path / "b.json"))
    assert code == 0 and "[/INST] [bold]q" in out, out
