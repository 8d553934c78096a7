"""Settings and the nightschool home directory.

Every setting can come from the environment with the `NIGHTSCHOOL_` prefix
(`NIGHTSCHOOL_HOME`, `NIGHTSCHOOL_BASE_URL`, ...). Nothing is read, created or
printed at import time: call `Settings()` and `Settings.home_dir()`.
"""

from __future__ import annotations

from pathlib import Path

import platformdirs
from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from nightschool.errors import UserError

EMBEDDED_MODEL = "embedded"
"""Alias of `DEFAULT_EMBEDDED_MODEL`, kept for the `--model embedded` of earlier versions."""

DEFAULT_EMBEDDED_MODEL = "qwen2.5-coder-1.5b"
"""Catalog name of the embedded model used when no `--model` is given
(see `nightschool.llm.catalog`). Chosen on learning per hour: on the starter
tier the 1.5B passes more held-out items from the start and per dream hour than
the 0.5B, at about the same seconds per item (README, "Does it learn?")."""


class Settings(BaseSettings):
    """User-level configuration, resolved from `NIGHTSCHOOL_*` environment variables."""

    model_config = SettingsConfigDict(env_prefix="NIGHTSCHOOL_", extra="ignore")

    home: Path | None = Field(
        default=None,
        description="Data directory; default is the platform user data dir "
        "(~/.local/share/nightschool on Linux).",
    )
    model: str = Field(
        default=EMBEDDED_MODEL,
        description="Without `base_url`: an embedded model of the catalog "
        "(`nightschool models`; `embedded` is the default, qwen2.5-coder-1.5b). "
        "With `base_url`: the model name sent to the OpenAI-compatible server.",
    )
    model_path: Path | None = Field(
        default=None,
        description="A local GGUF file to load in-process instead of a catalog model "
        "(NIGHTSCHOOL_MODEL_PATH); cannot be combined with `base_url`.",
    )
    base_url: str | None = Field(
        default=None,
        description="OpenAI-compatible server root, e.g. http://127.0.0.1:8080/v1.",
    )
    model_api_key: str | None = Field(
        default=None,
        description="Bearer token for the model server, if it needs one "
        "(NIGHTSCHOOL_MODEL_API_KEY).",
    )
    api_key: str | None = Field(
        default=None,
        description="Bearer token clients must send to `nightschool serve` (NIGHTSCHOOL_API_KEY); "
        "without one the server only listens on loopback.",
    )
    request_timeout_s: float = Field(
        default=120.0, description="Per-request timeout for the model server, seconds."
    )
    max_tokens: int = Field(
        default=512, description="Completion cap sent with every model request, tokens."
    )
    temperature: float = Field(default=0.2, description="Sampling temperature for the solver.")
    threads: int | None = Field(
        default=None,
        gt=0,
        description="CPU threads of the embedded model (NIGHTSCHOOL_THREADS); unset: chosen "
        "before each call, the usable CPUs nothing else is running on, at least 1.",
    )
    reuse_prefix: bool = Field(
        default=True,
        description="Keep the embedded model's KV cache of the previous prompt and decode only "
        "what differs (NIGHTSCHOOL_REUSE_PREFIX; 0 turns it off), cut to a multiple of 32 "
        "tokens so that the rest is decoded in a fresh decode's kernel tiles: the same logits "
        "bit for bit, the same replies (41 dream calls, on vs off: every call with the same "
        "prompt gave the same reply); earlier prompts' KV states are saved and restored "
        "(up to 8). Dream cycles per hour 55.8 -> 68.7, 48% fewer prompt tokens decoded, 88% "
        "fewer re-read (bench/bench_throughput.py, 8 cycles).",
    )
    database_url: str | None = Field(
        default=None,
        description="A PostgreSQL database to use instead of the home's SQLite file "
        "(NIGHTSCHOOL_DATABASE_URL=postgresql://user:password@host:5432/dbname), shared by "
        "several `serve`/`dream` processes on different machines.",
    )
    idle_scale: float = Field(
        default=1.0,
        gt=0,
        description="Multiplies every idle window, cooldown and pause of the idle watchdog "
        "(NIGHTSCHOOL_IDLE_SCALE; 0.01 turns a 10-minute window into 6 s, for tests and demos).",
    )

    playbook_max_entries: int | None = Field(
        default=None,
        description="Size cap of the playbook per kind, lessons and skills counted apart "
        "(NIGHTSCHOOL_PLAYBOOK_MAX_ENTRIES, at least 1); above it the least useful "
        "unverified entries are archived, never a verified one. Unset: the playbook's "
        "default, `nightschool.playbook.DEFAULT_MAX_ENTRIES` (5,000).",
    )

    exemplars: int = Field(
        default=0,
        description="Worked examples of the agent's own verified solutions from other tasks of "
        "the same cluster, shown to a practice task that retrieves no skill of its own template "
        "(NIGHTSCHOOL_EXEMPLARS, 0-5; 0: off). Not the nearest ones: the oldest that retrieval "
        "does not rank as related (`nightschool.lessons.skills.exemplars`).",
    )

    verify_share: float = Field(
        default=0.25,
        description="The largest share of a dream's wall-clock time its verification may take "
        "(NIGHTSCHOOL_VERIFY_SHARE, in (0, 1]; `dream --verify-share`; also the idle "
        "watchdog's and `serve`'s self-play cycles): a candidate whose comparison does not fit "
        "waits for a later cycle or a later dream, skills before lessons "
        "(`nightschool.dream.budget`, `nightschool.dream.queue`). 0.25 is issue 27's target "
        "(measured 24% and 1.17x cycles per hour over 24 curriculum cycles); 1 verifies every "
        "candidate at once.",
    )

    self_play_verify_k: int = Field(
        default=6,
        description="Fresh renderings per arm when `serve`'s background self-play loop "
        "verifies a new lesson or skill (NIGHTSCHOOL_SELF_PLAY_VERIFY_K, at least 0; 0: no "
        "verification there, so no lesson extraction and skills stay unverified, as with "
        "`dream --verify-k 0`). 6 is dream's default.",
    )

    @field_validator("self_play_verify_k")
    @classmethod
    def _verify_k_not_negative(cls, value: int) -> int:
        """Refuse a negative count with a `UserError` naming the variable (exit 2 in the CLI)."""
        if value < 0:
            raise UserError(
                f"NIGHTSCHOOL_SELF_PLAY_VERIFY_K must be at least 0, got {value}",
                hint="0 leaves verification to dream; 6 is the default",
            )
        return value

    @field_validator("verify_share")
    @classmethod
    def _share_in_range(cls, value: float) -> float:
        """Refuse a share outside (0, 1] with a `UserError` naming the variable (exit 2)."""
        if not 0.0 < value <= 1.0:
            raise UserError(
                f"NIGHTSCHOOL_VERIFY_SHARE must be above 0 and at most 1, got {value:g}",
                hint="0.25 (the default) holds verification to a quarter of the dream; 1 "
                "verifies every candidate at once",
            )
        return value

    @field_validator("exemplars")
    @classmethod
    def _exemplars_in_range(cls, value: int) -> int:
        """Refuse a count outside 0-5 with a `UserError` naming the variable (exit 2 in the CLI)."""
        if not 0 <= value <= 5:
            raise UserError(
                f"NIGHTSCHOOL_EXEMPLARS must be between 0 and 5, got {value}",
                hint="0 turns exemplars off; 2 is what the MBPP stream's fixed arm measured",
            )
        return value

    @field_validator("playbook_max_entries")
    @classmethod
    def _cap_at_least_one(cls, value: int | None) -> int | None:
        """Refuse a cap below 1 with a `UserError` naming the variable (exit 2 in the CLI)."""
        if value is not None and value < 1:
            raise UserError(
                f"NIGHTSCHOOL_PLAYBOOK_MAX_ENTRIES must be at least 1, got {value}",
                hint="unset it for the default (5,000 entries per kind)",
            )
        return value

    def home_dir(self) -> Path:
        """Return the home directory (not created).

        Returns:
            `NIGHTSCHOOL_HOME` if set, else the platform user data dir.
        """
        if self.home is not None:
            return self.home.expanduser()
        return Path(platformdirs.user_data_dir("nightschool", appauthor=False))

    def models_dir(self) -> Path:
        """Return the directory where split embedded models are assembled (not created)."""
        return self.home_dir() / "models"

    def database_path(self) -> Path:
        """Return the path of the SQLite database inside the home directory."""
        return self.home_dir() / "nightschool.db"

    def database_label(self) -> str:
        """Where the store is, for messages: the SQLite path or the Postgres URL, no password."""
        if self.database_url:
            # function-local: CLI start-up time (the store loads redact's patterns, ~100 ms)
            from nightschool.store import redact_url

            return redact_url(self.database_url)
        return str(self.database_path())

    def database_exists(self) -> bool:
        """Whether there is a store to read: the SQLite file exists, or a Postgres URL is set."""
        return bool(self.database_url) or self.database_path().exists()
