"""Judging a solution for a challenge inside the sandbox."""

from __future__ import annotations

from dataclasses import dataclass

from nightschool.browser import Screenshot
from nightschool.challenges._model import Challenge
from nightschool.challenges._webrun import is_web, run_web_validation
from nightschool.errors import ChallengeFaultError
from nightschool.sandbox import ExecResult, Sandbox, python_argv

FEEDBACK_CHARS = 1500
"""Most characters of validator output returned as feedback."""


@dataclass(frozen=True)
class Evaluation:
    """Verdict on one solution.

    Attributes:
        passed: True when the validator exited 0 within its time limit.
        setup: the setup script's run.
        validation: the validator's run (it runs the solution itself).
        feedback: on failure, the tail of the validator's stdout and stderr (at
            most `FEEDBACK_CHARS` characters) to show the solver; "" on pass.
        screenshot: a web challenge: the page the browser showed when the
            validator finished (None for other challenges).
    """

    passed: bool
    setup: ExecResult
    validation: ExecResult
    feedback: str
    screenshot: Screenshot | None = None


def evaluate(sandbox: Sandbox, challenge: Challenge, solution_source: str) -> Evaluation:
    """Judge `solution_source` for `challenge` in a fresh sandbox workspace.

    Steps: run `setup_script` as `python3 -` (source on stdin); write the
    solution as `challenge.solution_file`; run `validation_script` as
    `python3 -`, so the validator's source is never a file the solution can
    read. Both runs use the sandbox's configured wall-clock limit. A web
    challenge (`_webrun`) is judged the same way, with the site its setup
    wrote served on loopback and a browser on the host answering the
    validator's and the solution's browser calls.

    Args:
        sandbox: where to run; its `config.timeout_s` bounds each step.
        challenge: the rendered challenge.
        solution_source: the text of the solution file.

    Returns:
        The `Evaluation`. A failing, crashing or hanging solution, and a
        validator that times out, are failed evaluations, not exceptions.

    Raises:
        ChallengeFaultError: the setup script failed: the challenge is broken,
            not the solver.
        SandboxFaultError: the sandbox itself failed to start a run.
        BrowserUnavailableError: a web challenge, and Chromium or Playwright is
            missing (an `InfrastructureError`).
    """
    with sandbox.workspace() as ws:
        setup = ws.run(python_argv("-"), stdin=challenge.setup_script)
        if not setup.ok:
            reason = "timed out" if setup.timed_out else f"exited {setup.returncode}"
            raise ChallengeFaultError(
                f"setup of challenge {challenge.template} ({challenge.tier}, seed "
                f"{challenge.seed}) {reason}: {setup.output_tail(500)}"
            )
        ws.write_file(
            challenge.solution_file,
            solution_source,
            executable=challenge.solution_file.endswith(".sh"),
        )
        shot = None
        if is_web(challenge.cluster):
            validation, shot = run_web_validation(sandbox, ws, challenge.validation_script)
        else:
            validation = ws.run(python_argv("-"), stdin=challenge.validation_script)
    passed = validation.ok
    return Evaluation(
        passed=passed,
        setup=setup,
        validation=validation,
        feedback="" if passed else _feedback(validation, sandbox.config.timeout_s),
        screenshot=shot,
    )


def _feedback(validation: ExecResult, limit_s: float) -> str:
    tail = validation.output_tail(FEEDBACK_CHARS)
    if validation.timed_out:
        note = f"the checker timed out after {limit_s:g} s (is the solution stuck or waiting?)"
        return (tail + "\n" + note).strip()[-FEEDBACK_CHARS:]
    return tail or f"the checker failed with exit status {validation.returncode} and no output"
