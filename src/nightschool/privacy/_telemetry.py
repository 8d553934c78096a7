"""The telemetry opt-outs (`disable_telemetry`, `telemetry_report`); see the package docstring."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass

TELEMETRY_OPT_OUTS: Mapping[str, str] = {
    # huggingface_hub (installed with `tokenizers`) sends usage pings; it reads this
    # variable, DISABLE_TELEMETRY and DO_NOT_TRACK once, when it is first imported.
    "HF_HUB_DISABLE_TELEMETRY": "1",
    # nightschool loads every model from installed packages; a hub download is egress.
    "HF_HUB_OFFLINE": "1",
    # The cross-tool convention (https://donottrack.sh), honoured by huggingface_hub and others.
    "DO_NOT_TRACK": "1",
    # OpenTelemetry SDKs; FastAPI adds OTLP exporters from the environment unless this is set.
    "OTEL_SDK_DISABLED": "true",
    # chromadb's product telemetry (a vector store a user may pair with nightschool).
    "ANONYMIZED_TELEMETRY": "False",
}
"""Environment variables that turn telemetry off, with the value that does it."""


@dataclass(frozen=True)
class TelemetryFlag:
    """One telemetry opt-out as found by `telemetry_report`.

    Attributes:
        name: the environment variable.
        wanted: the value that opts out.
        value: its value in the environment, or None when unset.
        ok: True when the opt-out is in force (`value == wanted`, and a library
            that read it at import time saw it).
        detail: why not, when `ok` is False; else "".
    """

    name: str
    wanted: str
    value: str | None
    ok: bool
    detail: str = ""


def disable_telemetry(environ: MutableMapping[str, str] | None = None) -> dict[str, str]:
    """Set every `TELEMETRY_OPT_OUTS` variable to its opt-out value, overriding others.

    Local-only is a promise, not a preference: a `DO_NOT_TRACK=0` in the
    user's shell does not switch telemetry back on inside nightschool. Call it
    before the libraries it concerns are imported (the CLI does, at start-up).

    Args:
        environ: where to set them; default `os.environ` (children inherit them).

    Returns:
        The variables that changed, with the value each had before ("" if unset).
    """
    target = os.environ if environ is None else environ
    changed: dict[str, str] = {}
    for name, value in TELEMETRY_OPT_OUTS.items():
        if target.get(name) != value:
            changed[name] = target.get(name) or ""
            target[name] = value
    return changed


def _library_view(name: str) -> str:
    """Why a library already imported in this process ignores `name`; "" when none does."""
    hub = sys.modules.get("huggingface_hub.constants")
    if hub is None:
        return ""
    attribute = {
        "HF_HUB_DISABLE_TELEMETRY": "HF_HUB_DISABLE_TELEMETRY",
        "DO_NOT_TRACK": "HF_HUB_DISABLE_TELEMETRY",
        "HF_HUB_OFFLINE": "HF_HUB_OFFLINE",
    }.get(name)
    if attribute is not None and getattr(hub, attribute, True) is not True:
        return f"huggingface_hub was imported before it was set (its {attribute} is off)"
    return ""


def telemetry_report(environ: Mapping[str, str] | None = None) -> list[TelemetryFlag]:
    """Probe every telemetry opt-out: set to the right value, and seen by loaded libraries.

    Args:
        environ: the environment to read; default `os.environ`.

    Returns:
        One `TelemetryFlag` per `TELEMETRY_OPT_OUTS` entry, in its order.
    """
    source = os.environ if environ is None else environ
    flags = []
    for name, wanted in TELEMETRY_OPT_OUTS.items():
        value = source.get(name)
        if value != wanted:
            detail = "not set" if value is None else f"is {value!r}, not {wanted!r}"
        else:
            detail = _library_view(name)
        flags.append(TelemetryFlag(name, wanted, value, ok=not detail, detail=detail))
    return flags
