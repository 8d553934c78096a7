"""nightschool: self-improvement for local LLM agents without touching weights.

The public surface is re-exported here; implementation lives in submodules.
Importing this package has no side effects: no files are created and nothing
is printed.
"""

from nightschool.errors import (
    InfrastructureError,
    ModelUnavailableError,
    NightschoolError,
    SandboxUnavailableError,
    StoreError,
    UserError,
)

__version__ = "0.1.0"

__all__ = [
    "InfrastructureError",
    "ModelUnavailableError",
    "NightschoolError",
    "SandboxUnavailableError",
    "StoreError",
    "UserError",
    "__version__",
]
