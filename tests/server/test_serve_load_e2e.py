"""`nightschool serve` under concurrent chat sessions while its self-play loop practises
(issue 29, part 6), small: the real bench code path (`bench/bench_serve_load.py`), 3
sessions x 1 turn.

Real parts: the `nightschool serve` CLI in a subprocess, the embedded model (the suite's
smollm2-135m), bubblewrap, SQLite, httpx over real sockets. The full run (8 sessions)
is the bench itself.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from bench.bench_serve_load import report, run_load

pytestmark = pytest.mark.e2e

GENEROUS_DELAY_S = 5.0
"""The bench's target is 1 s; a shared CI machine gets slack."""


def test_serve_answers_every_session_stores_every_turn_and_preempts_the_loop(
    tmp_path: Path,
) -> None:
    result = run_load(
        sessions=3,
        turns=1,
        think_s=(0.0, 0.0),
        stagger_s=0.0,
        max_tokens=96,
        lead_s=1.0,
        workdir=tmp_path,
    )
    figures = result.figures()
    shown = report(result) + "\n" + (tmp_path / "serve.log").read_text()[-3000:]
    assert figures["server_exit"] == 0, shown
    assert figures["status_counts"] == {"200": 3}, shown
    assert figures["server_5xx"] == 0 and figures["no_answer"] == 0, shown
    assert figures["sent"] == figures["stored"] == 3 and figures["lost"] == [], shown
    assert figures["extra_rows"] == 0, shown
    assert figures["preemptions"] >= 1, shown  # the first request stopped the practising loop
    first = result.preemptions[0]
    assert first["gave_way_in"] in ("model call", "before a model call", "cool-off"), shown
    assert first["trigger"] is not None, shown
    assert 0.0 <= first["client_delay_s"] < GENEROUS_DELAY_S, shown
    assert first["server_delay_s"] is not None, shown
    # the server counts from the turn's start, after the request's send (a 50 ms race margin)
    assert 0.0 <= first["server_delay_s"] <= first["client_delay_s"] + 0.05, shown
    assert result.runs[0]["running_at"] is not None
    assert "next message" in result.runs[0]["stop_reason"], shown
