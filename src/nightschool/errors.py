"""Exception hierarchy.

One root (`NightschoolError`) with structured fields. `UserError` is misuse
(bad flag, bad input file). `InfrastructureError` is a fault of something the
agent depends on (model server down, sandbox broken): it is never recorded as
an agent failure. `StoreError` covers an unusable database.

The CLI maps these to exit codes at the command boundary (see `EXIT_CODES`).
"""

from __future__ import annotations


class NightschoolError(Exception):
    """Root of every error nightschool raises on purpose.

    Attributes:
        message: one human-readable sentence saying what went wrong.
        hint: optional next step for the user (a command to run, a package to
            install).
    """

    exit_code = 1

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return self.message if not self.hint else f"{self.message}\nhint: {self.hint}"


class UserError(NightschoolError):
    """The caller asked for something that cannot be done (bad flag, bad file)."""

    exit_code = 2


class InfrastructureError(NightschoolError):
    """A dependency of the agent failed; not the agent's fault."""

    exit_code = 3


class ModelUnavailableError(InfrastructureError):
    """The model server could not be reached or kept failing after retries.

    Attributes:
        status_code: the last HTTP status seen, or None for connection errors.
    """

    def __init__(
        self, message: str, *, hint: str | None = None, status_code: int | None = None
    ) -> None:
        super().__init__(message, hint=hint)
        self.status_code = status_code


class ModelResponseError(InfrastructureError):
    """The model server answered, but not with a usable chat completion (4xx, bad JSON)."""


class SandboxUnavailableError(InfrastructureError):
    """The sandbox cannot run at all (bubblewrap missing or refusing to start)."""


class SandboxFaultError(InfrastructureError):
    """One sandboxed run failed for a reason outside the program it ran."""


class ChallengeFaultError(InfrastructureError):
    """A rendered challenge is broken (its setup script failed), not the solver."""


class StoreError(NightschoolError):
    """The database cannot be used as it is."""

    exit_code = 4


class DatabaseCorruptError(StoreError):
    """The database file is not a readable SQLite database."""


class SchemaTooNewError(StoreError):
    """The database was migrated by a newer nightschool than this one."""


class IncoherentRecordError(StoreError):
    """A record contradicts itself (for example `passed` with a failure reason)."""


EXIT_CODES = {
    "ok": 0,
    "error": 1,
    "usage": 2,
    "infrastructure": 3,
    "store": 4,
    "interrupted": 130,
}
"""Exit codes of the `nightschool` command: 0 success, 1 unexpected error,
2 misuse, 3 model server or sandbox unavailable, 4 unusable database,
130 interrupted by Ctrl-C."""
