"""The solver core: one challenge, distinct attempts at rising temperature, repairs, the trajectory.

Below learning and the dream loop: `Solver.solve` asks the model, extracts the
code (`extract_code`), judges it in the sandbox and repairs within its budget;
`episodes.solve_once` is one picklable solve for the parallel backends. It
imports challenges, llm, sandbox, parallel and trajectory, nothing above them.
"""

from nightschool.solver.config import SolverConfig
from nightschool.solver.core import SYSTEM_PROMPT, Solver, SolveResult, extract_code

__all__ = ["SYSTEM_PROMPT", "SolveResult", "Solver", "SolverConfig", "extract_code"]
