"""The idle watchdog: what nightschool does while the user is away.

Idle means no user turn for a phase's window. Every tick the watchdog runs
the first phase, in the order of `PHASES`, whose window contains the current
idle time and whose cooldown has passed since its anchor (its latest row in
`phase_runs`, written before the phase runs and again when it ends, so
anchors survive restarts and a crashing phase does not re-fire every tick).

A user turn pre-empts idle work: the phases' model is a `PreemptibleModel`,
so the model call in progress aborts (embedded model: within milliseconds)
and the phase is recorded as `interrupted`; nothing half-written, because
the learning code writes each cycle in one transaction after its last model
call. Idle time restarts from the turn's end.

Windows and cooldowns are PRIOR-ART's (seconds): journal drain > 120 (60),
dream 600-3600 (30 min), reflection 900-3600 (40 min), skills 900-3600 (2 h),
retrain 900-3600 (3 h), diary 900-3600 (1 h), self-play > 3600. Ours: prompts
> 3600 (12 h: one GEPA run on the solver prompt, about 48 solves). PRIOR-ART
gives self-play "60 min adaptive": here its cool-off between cycles is the
adaptive one of seed 000 (`FrontierTracker.adaptive_cooldown`, 5-180 s), so
a night away is spent practising. `scale` (`NIGHTSCHOOL_IDLE_SCALE`)
multiplies every window, cooldown and pause (0.01: a 10-minute window is 6 s).

Runs inside `nightschool serve` (its chat turns are the foreground) and as
`nightschool watch` (no server: idle time counts from the latest chat turn in
the database; a `nightschool chat` in another process cannot abort a call in
progress, only stop the work at its next phase).
"""

from __future__ import annotations

from nightschool.watchdog._core import (
    PHASES,
    IdleWork,
    PhaseResult,
    PhaseSpec,
    PhaseStatus,
    Watchdog,
    phase_cooldown_s,
)
from nightschool.watchdog._log import PhaseLog, PhaseRow

__all__ = [
    "PHASES",
    "IdleWork",
    "PhaseLog",
    "PhaseResult",
    "PhaseRow",
    "PhaseSpec",
    "PhaseStatus",
    "Watchdog",
    "phase_cooldown_s",
]
