"""How an episode gets its model and sandbox, and deterministic record ids.

`LocalResources` hands out the live objects of this process (the local
backend: the model already loaded by the command). `SettingsResources` is
picklable: a Ray worker rebuilds the model and the sandbox from it, once per
worker process (a worker runs many episodes one after another; rebuilding the
embedded model per episode would cost seconds each), and never sees a
database path it would use.
"""

from __future__ import annotations

import hashlib
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from nightschool.config import Settings
    from nightschool.llm import ChatModel
    from nightschool.sandbox import Sandbox, SandboxConfig


@runtime_checkable
class Resources(Protocol):
    """The model and the sandbox of an episode.

    Contract: `model()` and `sandbox()` return the same objects on every call
    within one process; neither opens the database.
    """

    def model(self) -> ChatModel:
        """The episode's model."""
        ...

    def sandbox(self) -> Sandbox:
        """The episode's sandbox."""
        ...


@dataclass(frozen=True)
class LocalResources:
    """Live objects of this process (not picklable: for the local backend only).

    Args:
        live_model: the model the command loaded.
        live_sandbox: the command's sandbox.
    """

    live_model: ChatModel
    live_sandbox: Sandbox

    def model(self) -> ChatModel:
        """The live model."""
        return self.live_model

    def sandbox(self) -> Sandbox:
        """The live sandbox."""
        return self.live_sandbox

    def __reduce__(self) -> Any:
        raise TypeError(
            "LocalResources hold live objects of the driver; a remote backend needs "
            "SettingsResources(settings, sandbox_config)"
        )


_cache: dict[tuple[str, str], Any] = {}
_cache_lock = threading.Lock()


@dataclass(frozen=True)
class SettingsResources:
    """Picklable model and sandbox settings; objects are built on first use per process.

    Args:
        settings: the model settings (`make_model(settings)`); pin `home` so a
            worker resolves the same models directory as the driver.
        sandbox_config: limits of the sandbox (`Sandbox(sandbox_config)`).

    Raises (on first use):
        UserError, InfrastructureError: as `make_model` / `Sandbox`.
    """

    settings: Settings
    sandbox_config: SandboxConfig

    def model(self) -> ChatModel:
        """`make_model(settings)`, built once per process and settings."""
        key = ("model", self.settings.model_dump_json())
        with _cache_lock:
            if key not in _cache:
                # function-local: start-up time (nightschool.llm, ~400 ms; built once per worker)
                from nightschool.llm import make_model

                _cache[key] = make_model(self.settings)
            model: ChatModel = _cache[key]
        return model

    def sandbox(self) -> Sandbox:
        """`Sandbox(sandbox_config)`, built once per process and config."""
        key = ("sandbox", self.sandbox_config.model_dump_json())
        with _cache_lock:
            if key not in _cache:
                from nightschool.sandbox import Sandbox  # function-local: start-up time

                _cache[key] = Sandbox(self.sandbox_config)
            sandbox: Sandbox = _cache[key]
        return sandbox


def derive_id(*parts: object) -> str:
    """A record id (32 lowercase hex digits) fixed by `parts`, e.g. (run id, task id).

    The same parts always give the same id, so a result that reaches the driver
    twice maps to one row; distinct parts collide with probability ~2^-128
    (first 128 bits of SHA-256 over the parts joined by the unit separator, U+001F).
    """
    text = "\x1f".join(str(part) for part in parts)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]
