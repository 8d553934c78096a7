"""User turns first: background model work gives way the moment a user turn starts.

`Foreground` counts the user turns in flight (the server and the chat agent
wrap each turn in `foreground.turn()`). `PreemptibleModel` wraps the model the
idle work uses (dream cycles, reflections, the diary): before and after every
call it checks whether a user turn is in flight and raises `Preempted` if so;
during a call on the embedded llama.cpp model it installs llama.cpp's abort
callback, so a decode in progress stops at the next graph node and the model's
lock is free for the user's call.

Measured on Qwen2.5-Coder-1.5B, 2 cores: an abort requested mid-decode ends
the call 10 ms later; the callback costs nothing measurable per token
(7.96 s vs 8.07 s for the same 60 tokens). A model behind an
OpenAI-compatible server cannot be aborted mid-call (the server queues or
batches the user's request beside it); there the background work stops at
its next call.

`Preempted` derives from `BaseException`, like `KeyboardInterrupt` and
`asyncio.CancelledError`, so no `except Exception` in the learning code
mistakes it for a fault and records it: it unwinds to the watchdog, which
records the phase as `interrupted`. Store transactions roll back on it.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from nightschool.llm._protocol import ChatModel, Completion, Message, ToolSpec, accepts_abort

REMEMBERED_STARTS = 256
"""Start times of the latest user turns `Foreground.started_at` can answer for."""


class Preempted(BaseException):
    """Background work stopped because a user turn started; not a fault of anything."""


class Foreground:
    """User turns in flight, and when the last one was seen.

    Thread-safe. `clock` (default `time.time`, seconds since the epoch) is
    injectable for tests.
    """

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self._clock = clock
        self._cond = threading.Condition()
        self._active = 0
        self._closing = False
        self._last: float | None = None
        self.preemptions = 0
        """Background calls stopped by a user turn since start."""
        self.turns = 0
        """User turns started since start (a later value means a newer turn began)."""
        self._starts: deque[float] = deque(maxlen=REMEMBERED_STARTS)

    @contextlib.contextmanager
    def turn(self) -> Iterator[None]:
        """Mark a user turn in flight for the duration of the block."""
        with self._cond:
            self._active += 1
            self.turns += 1
            self._last = self._clock()
            self._starts.append(self._last)
            self._cond.notify_all()
        try:
            yield
        finally:
            with self._cond:
                self._active -= 1
                self._last = self._clock()
                self._cond.notify_all()

    @property
    def busy(self) -> bool:
        """True while at least one user turn is in flight, or after `close`."""
        return self._active > 0 or self._closing

    @property
    def closed(self) -> bool:
        """True after `close`."""
        return self._closing

    def close(self) -> None:
        """Shutting down: from now on background work gives way as if a turn were in flight."""
        with self._cond:
            self._closing = True
            self._cond.notify_all()

    def started_at(self, turn: int) -> float | None:
        """Epoch seconds when turn number `turn` (1: the first, as counted by `turns`) started.

        None when it has not started yet or is older than the latest
        `REMEMBERED_STARTS` turns.
        """
        with self._cond:
            index = turn - (self.turns - len(self._starts)) - 1
            return self._starts[index] if 0 <= index < len(self._starts) else None

    def last_seen(self) -> float | None:
        """Epoch seconds of the latest turn start or end in this process; None if none."""
        with self._cond:
            return self._last


class PreemptibleModel:
    """A `ChatModel` for background work that yields to user turns.

    Args:
        inner: the model shared with the foreground (the same object, so they
            share the embedded model's lock and weights).
        foreground: the user-turn signal.
        stop: a second reason to give way, polled like a user turn (e.g. the
            chat agent's `stop_self_play` from the admin API); None: none.
        on_preempted: told where a call gave way the moment it raises
            `Preempted`, before the unwinding through the caller's code:
            `before a model call` (already yielding: no call was made) or
            `model call` (an embedded decode aborted, or the reply was
            dropped); None: nobody is told.

    `complete` raises `Preempted` when a user turn is in flight before the
    call, starts during it (the embedded model aborts its decode), or is in
    flight when it returns (the reply is dropped: the work it belonged to is
    being abandoned); likewise when `stop()` is True. Everything else behaves
    as `inner`.
    """

    def __init__(
        self,
        inner: ChatModel,
        foreground: Foreground,
        *,
        stop: Callable[[], bool] | None = None,
        on_preempted: Callable[[str], None] | None = None,
    ) -> None:
        self.inner = inner
        self.foreground = foreground
        self.stop = stop or (lambda: False)
        self.on_preempted = on_preempted

    @property
    def name(self) -> str:
        """The inner model's name."""
        return self.inner.name

    def __getattr__(self, attribute: str) -> Any:
        return getattr(self.inner, attribute)

    def _yielding(self) -> bool:
        return self.foreground.busy or self.stop()

    def _check(self) -> None:
        if self.foreground.busy:
            self.foreground.preemptions += 1
            raise Preempted("a user turn started; background work gives way")
        if self.stop():
            raise Preempted("background work was told to stop")

    def complete(
        self,
        messages: Sequence[Message],
        *,
        temperature: float = 0.2,
        max_tokens: int = 512,
        seed: int | None = None,
        grammar: str | None = None,
        tools: Sequence[ToolSpec] | None = None,
    ) -> Completion:
        """Call the inner model unless a user turn is in flight; see the class.

        Raises:
            Preempted: a user turn is (or became) in flight, or `stop()` is True.
            ModelUnavailableError, ModelResponseError: as the inner model.
        """
        already = self._yielding()
        try:
            self._check()
            kwargs: dict[str, Any] = {
                "temperature": temperature,
                "max_tokens": max_tokens,
                "seed": seed,
                "grammar": grammar,
            }
            if tools is not None:
                kwargs["tools"] = tools
            if accepts_abort(self.inner):
                completion = self.inner.complete(messages, abort=self._yielding, **kwargs)
            else:
                completion = self.inner.complete(messages, **kwargs)
            self._check()
        except Preempted:
            if self.on_preempted is not None:
                self.on_preempted("before a model call" if already else "model call")
            raise
        return completion
