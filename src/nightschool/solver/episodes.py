"""One solve of one challenge as a parallel episode (learning-curve items, `dream --samples`).

`solve_once` builds a plain `Solver` on the episode's model and sandbox with
the job's own `SolverConfig` and solves the job's challenge with exactly what
the job says to show (a system prompt, lessons, skill sections): the caller
retrieved them from the playbook beforehand, so the episode never reads the
database. The trajectory comes back under the job's `trajectory_id` (derived
by the caller from the work item, so writing it is idempotent) and is stored
by the driver.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from nightschool.challenges import Challenge
from nightschool.errors import InfrastructureError
from nightschool.parallel import Resources
from nightschool.solver.core import SYSTEM_PROMPT, Solver, SolverConfig
from nightschool.trajectory import Trajectory

if TYPE_CHECKING:
    from nightschool.playbook import RetrievedLesson

__all__ = ["SolveJob", "Solved", "solve_once"]


@dataclass(frozen=True)
class SolveJob:
    """One solve to run (picklable).

    Attributes:
        challenge: the rendered challenge.
        config: the solver settings of this solve (attempts, temperature, seed salt).
        session_id: recorded on the trajectory.
        trajectory_id: the id the trajectory is returned under.
        system_prompt: the solver's system prompt before the playbook sections.
        lessons: lessons shown under `### SKILL PLAYBOOK` (never retrieved here).
        skills: pre-formatted skill sections appended after the playbook.
        skill_ids: ids of `skills`.
    """

    challenge: Challenge
    config: SolverConfig
    session_id: str
    trajectory_id: str
    system_prompt: str = SYSTEM_PROMPT
    lessons: tuple[RetrievedLesson, ...] = ()
    skills: tuple[str, ...] = ()
    skill_ids: tuple[str, ...] = ()


@dataclass(frozen=True)
class Solved:
    """What `solve_once` returns.

    Attributes:
        trajectory: the episode record (id = the job's `trajectory_id`), not stored.
        passed: the validator accepted an attempt.
        infrastructure_error: the fault that ended the solve early, if any (the
            caller decides whether it stops the run).
    """

    trajectory: Trajectory
    passed: bool
    infrastructure_error: InfrastructureError | None = None


def solve_once(resources: Resources, job: SolveJob) -> Solved:
    """Solve `job.challenge` with `Solver(model, sandbox, job.config)` (runs in a worker).

    Returns:
        `Solved`; infrastructure faults are captured in it, not raised.

    Raises:
        ValueError: `job.skill_ids` without any `job.skills` section.
    """
    solver = Solver(resources.model(), resources.sandbox(), job.config)
    result = solver.solve(
        job.challenge,
        session_id=job.session_id,
        system_prompt=job.system_prompt,
        lessons=list(job.lessons),
        skills=list(job.skills),
        skill_ids=list(job.skill_ids),
    )
    trajectory = result.trajectory.model_copy(update={"id": job.trajectory_id})
    return Solved(trajectory, result.passed, result.infrastructure_error)
