"""A user turn frees the real embedded model within 1 s of arriving (issue 10, part 5)."""

from __future__ import annotations

import threading
import time

import pytest

from nightschool.config import Settings
from nightschool.llm import EmbeddedModel
from nightschool.llm.factory import make_model
from nightschool.llm.preempt import Foreground, Preempted, PreemptibleModel

pytestmark = pytest.mark.e2e

LONG = [{"role": "user", "content": "Write a very long story about a lighthouse keeper. " * 8}]


def test_user_turn_aborts_a_background_decode_within_one_second() -> None:
    model = make_model(Settings())  # the suite's embedded model (smollm2-135m)
    assert isinstance(model, EmbeddedModel)
    model.complete([{"role": "user", "content": "hi"}], max_tokens=1)  # load it first
    foreground = Foreground()
    background = PreemptibleModel(model, foreground)
    outcome: dict[str, object] = {}
    started = threading.Event()

    def dream() -> None:
        started.set()
        try:
            outcome["reply"] = background.complete(LONG, max_tokens=2000, temperature=0.8)
        except Preempted as exc:
            outcome["preempted_at"] = time.perf_counter()
            outcome["error"] = exc

    thread = threading.Thread(target=dream)
    thread.start()
    assert started.wait(5)
    time.sleep(1.5)  # well into the decode
    assert thread.is_alive(), "the background call finished before the user arrived"
    arrived = time.perf_counter()
    with foreground.turn():
        reply = model.complete([{"role": "user", "content": "Say hello."}], max_tokens=8)
        answered = time.perf_counter()
    thread.join(30)
    assert isinstance(outcome.get("error"), Preempted)
    freed_after = float(outcome["preempted_at"]) - arrived  # type: ignore[arg-type]
    assert freed_after < 1.0, f"the model was freed {freed_after:.3f} s after the turn arrived"
    assert reply.tokens_out >= 1
    assert answered - arrived < 30
    # the model still works for background calls once the turn is over
    assert background.complete([{"role": "user", "content": "hi"}], max_tokens=4).tokens_out >= 1


def test_a_stop_request_aborts_a_background_decode_too() -> None:
    """`stop_self_play` from the admin API: no user turn, the decode still stops at once."""
    model = make_model(Settings())
    model.complete([{"role": "user", "content": "hi"}], max_tokens=1)
    stop = threading.Event()
    background = PreemptibleModel(model, Foreground(), stop=stop.is_set)
    stopped_at: list[float] = []

    def dream() -> None:
        try:
            background.complete(LONG, max_tokens=2000, temperature=0.8)
        except Preempted:
            stopped_at.append(time.perf_counter())

    thread = threading.Thread(target=dream)
    thread.start()
    time.sleep(1.5)
    assert thread.is_alive(), "the background call finished before the stop"
    asked = time.perf_counter()
    stop.set()
    thread.join(30)
    assert stopped_at and stopped_at[0] - asked < 1.0, stopped_at
