"""The self-play solver: an isolated agent that writes a solution and retries on feedback.

One challenge → one trajectory. Each attempt asks the model for the complete
solution file, runs setup, solution and validator in a fresh sandbox workspace,
and records one `run_solution` tool call. On failure the next attempt sees the
validator's output tail — never the validator's source (PRIOR-ART: showing the
source let a solver copy the answer key).

No attempt is wasted on a program already run: a reply whose code normalises
(`_attempts.normalise_code`) to an earlier attempt's is not run but resampled
from a fresh prompt at a higher temperature; attempt k samples at
`min(temperature + k * temperature_step, max_temperature)` with a seed derived
from (challenge, attempt, resample). By default every retry is such a fresh
prompt (task + failing code + checker message): small models copy their last
answer when it sits in the conversation (measured with Qwen2.5-Coder-0.5B:
attempts 2 and 3 byte-identical to attempt 1). A tool-call blob
(`{"name": ..., "arguments": ...}`) is never run as code. At the `starter`
tier, where the checker imports the file and calls one function, top-level
test code the model added anyway is stripped before the run
(`_sanitize.strip_test_code`; `strip_test_code=False` turns it off).

A model-server or sandbox fault ends the episode as an infrastructure error
(`outcome=unknown`, `extra["infrastructure_error"]`), never as the agent's
failure; so does a generated challenge (`source` not `template`) whose
validator crashes in its own code (`validator_crash`): a `ChallengeFaultError`
after that attempt, instead of more attempts on a broken validator.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from nightschool.browser import screenshot_record
from nightschool.challenges import Challenge, evaluate, validator_crash
from nightschool.errors import ChallengeFaultError, InfrastructureError
from nightschool.llm import ChatModel, Message
from nightschool.sandbox import Sandbox
from nightschool.solver.attempts import (
    NoCode,
    ReplyCode,
    attempt_temperature,
    call_seed,
    conversation_retry,
    no_code_note,
    normalise_code,
    prose,
    read_reply,
    retry_prompt,
)
from nightschool.solver.config import SolverConfig as SolverConfig
from nightschool.solver.repair import ROOT, BudgetRouter, RepairPolicy, ask_policy, ask_router
from nightschool.solver.sanitize import strip_test_code
from nightschool.trajectory import Outcome, ToolCall, Trajectory

if TYPE_CHECKING:
    from nightschool.playbook import RetrievedLesson, SkillMemory

SYSTEM_PROMPT = (
    "You are a careful programmer solving a small, self-contained coding task. "
    "Read the task, then reply with the complete contents of the requested file in "
    "exactly one fenced code block. Use only the standard library. Do not add tests, "
    "asserts or checks of your own, and do not explain at length."
)
"""The solver's system prompt. "No tests of your own": Qwen2.5-Coder-0.5B appended
its own asserts and example runs to starter solutions, which failed at import (a
wrong expected value of its own) or ran into the token cap mid-line (seen in 7 of
the first 11 held-out items of a learning-curve run before this sentence)."""

MAX_SCREENSHOTS = 4
"""Screenshots a web challenge's trajectory keeps (the last attempts' final pages), as the
chat agent keeps at most 4 per turn."""


@dataclass(frozen=True)
class SolveResult:
    """What one `Solver.solve` produced.

    Attributes:
        trajectory: the episode record (not yet stored).
        attempts: attempts used, wasted ones included (0 if the first model
            call failed).
        passed: the validator accepted an attempt.
        tool_errors: attempts whose reply held no code or whose run timed out.
        infrastructure_error: the fault that ended the episode early, if any.
        model_calls: every model call made, resamples included (the budget
            for equal-cost comparisons).
    """

    trajectory: Trajectory
    attempts: int
    passed: bool
    tool_errors: int
    infrastructure_error: InfrastructureError | None = None
    model_calls: int = 0


def extract_code(reply: str, solution_file: str) -> str | None:
    """Pull the solution source out of a model reply.

    Prefers a fenced block tagged with the file's language (`python`/`py` for
    `.py`, `bash`/`sh` for `.sh`), else the longest fenced block, else a source
    string inside a tool-call blob's arguments, else the whole reply when it has
    no fences and looks like source (for `.py`: it parses and is more than a
    bare name or data literal). A tool-call blob, a JSON object and prose are
    never returned as code. See `_attempts.read_reply`.

    Returns:
        The source, or None when nothing usable is there.
    """
    return read_reply(reply, solution_file).code


@dataclass
class _Episode:
    """Mutable state of one `solve` call."""

    challenge: Challenge
    system_prompt: str
    messages: list[Message]
    calls: list[ToolCall] = field(default_factory=list)
    replies: list[str] = field(default_factory=list)
    temperatures: list[float] = field(default_factory=list)
    seen: dict[str, int] = field(default_factory=dict)
    """Normalised program → the attempt that ran it."""
    tokens_in: int = 0
    tokens_out: int = 0
    tool_errors: int = 0
    duplicates_resampled: int = 0
    wasted: int = 0
    blob_replies: int = 0
    blob_corrected: int = 0
    stripped: int = 0
    """Attempts whose top-level test code was stripped before the run."""
    passed: bool = False
    feedback: str = ""
    """What the last attempt's failure was (checker message or a no-code note)."""
    last_run: tuple[str, str] | None = None
    """The last program the checker rejected, and its checker message."""
    no_code: NoCode | None = None
    duplicate_of: int | None = None
    failed_runs: dict[int, tuple[str, str]] = field(default_factory=dict)
    """Index in `calls` of each attempt that ran and failed -> (code, checker message)."""
    repairs: list[int] = field(default_factory=list)
    """The attempt each search-chosen retry repaired (indices into `calls`; ROOT: the task)."""
    parent: int = ROOT
    """What the next attempt's prompt builds on: a failed attempt's index, or ROOT (the task)."""
    switched: int = 0
    """Retries the search sent elsewhere than the latest failure."""
    routed: dict[str, object] | None = None
    """The router's decision, when a router is in use."""
    lesson_ids: list[str] = field(default_factory=list)
    skill_ids: list[str] = field(default_factory=list)
    screenshots: list[dict[str, object]] = field(default_factory=list)
    """A web challenge: the final page of each attempt (`browser.screenshot_record`)."""


class Solver:
    """Solves a `Challenge` with a model in the sandbox, up to `max_attempts` times.

    Args:
        model: any `ChatModel`.
        sandbox: where setup, solution and validator run.
        config: attempts, sampling, resampling and feedback size.
        playbook: lesson memory for the `### SKILL PLAYBOOK` section, if any.
        search: which failure a retry repairs (None: the latest; see
            `RepairPolicy`, and `learners.search` for the PRM-guided one).
        router: decides each episode's budget from the request
            (`learners.router.RouterParams`: `direct` one attempt, `retry`
            `max_attempts`, `stop` none); None: always `max_attempts`.
    """

    def __init__(
        self,
        model: ChatModel,
        sandbox: Sandbox,
        config: SolverConfig | None = None,
        *,
        playbook: SkillMemory | None = None,
        search: RepairPolicy | None = None,
        router: BudgetRouter | None = None,
    ):
        self.model = model
        self.sandbox = sandbox
        self.config = config or SolverConfig()
        self.playbook = playbook
        self.search = search
        self.router = router

    def single_attempt(self) -> Solver:
        """This solver's model, sandbox and settings with one attempt and no playbook.

        A pass@1 arm (verification, the learning curve's held-out items): what
        it is shown is passed to `solve` explicitly, never retrieved.
        """
        config = self.config.model_copy(update={"max_attempts": 1})
        return Solver(self.model, self.sandbox, config)

    def lessons_for(self, challenge: Challenge) -> list[RetrievedLesson]:
        """Playbook lessons retrieved for `challenge` (empty without a playbook)."""
        if self.playbook is None or self.config.lessons_k == 0:
            return []
        return self.playbook.retrieve(
            challenge.prompt, k=self.config.lessons_k, cluster=challenge.cluster
        )

    def compose_prompt(
        self,
        challenge: Challenge,
        system_prompt: str,
        lessons: Sequence[RetrievedLesson] | None,
        skills: Sequence[str],
        skill_ids: Sequence[str],
    ) -> tuple[str, list[RetrievedLesson]]:
        """(system prompt + playbook section for `lessons` + `skills` sections, lessons shown).

        `lessons` None retrieves them for `challenge`. Raises ValueError when
        `skill_ids` come without any `skills` section.
        """
        if skill_ids and not skills:
            raise ValueError(f"{len(skill_ids)} skill ids but no skill section")
        shown = list(self.lessons_for(challenge) if lessons is None else lessons)
        if shown:
            # function-local: start-up time (the playbook package loads numpy, ~500 ms)
            from nightschool.playbook import format_playbook

            system_prompt = f"{system_prompt}\n\n{format_playbook(shown)}"
        for section in skills:
            system_prompt = f"{system_prompt}\n\n{section.strip()}"
        return system_prompt, shown

    def solve(
        self,
        challenge: Challenge,
        *,
        session_id: str = "",
        on_event: Callable[[str], None] | None = None,
        system_prompt: str = SYSTEM_PROMPT,
        lessons: Sequence[RetrievedLesson] | None = None,
        skills: Sequence[str] = (),
        skill_ids: Sequence[str] = (),
    ) -> SolveResult:
        """Run the attempt loop on one challenge.

        Args:
            challenge: the rendered challenge.
            session_id: recorded on the trajectory (the dream run's id).
            on_event: called with short progress strings ("attempt 2/3: asking model").
            system_prompt: the solver's system prompt.
            lessons: lessons to show under `### SKILL PLAYBOOK`; None retrieves them
                from the playbook (if any). Their ids are recorded in
                `extra["lessons_shown"]`.
            skills: pre-formatted prompt sections appended to the system prompt
                after the playbook, in order (no retrieval here).
            skill_ids: ids of `skills`, recorded in `extra["skills_shown"]`.

        Returns:
            `SolveResult`; infrastructure faults are captured in it, not raised.
            `trajectory.extra` records `model_calls`, `attempt_codes_distinct`
            (programs run), `duplicates_resampled`, `wasted_attempts`,
            `temperatures` (one per model call), `blob_replies` and
            `blob_corrected`.

        Raises:
            ValueError: `skill_ids` is given without any `skills` section.
        """
        notify = on_event or (lambda _msg: None)
        cfg = self.config
        system_prompt, shown = self.compose_prompt(
            challenge, system_prompt, lessons, skills, skill_ids
        )
        ep = _Episode(
            challenge=challenge,
            system_prompt=system_prompt,
            messages=[
                {"role": "system", "content": system_prompt},
                {"role": "user", "content": challenge.prompt},
            ],
            lesson_ids=[item.lesson.id for item in shown],
            skill_ids=list(skill_ids),
        )
        infra: InfrastructureError | None = None
        started = time.perf_counter()
        budget = self._route(ep, notify)
        for attempt in range(1, budget + 1):
            if attempt > 1 and cfg.retry_mode == "fresh":
                self._choose_repair(ep, notify)
            try:
                self._attempt(ep, attempt, notify)
            except InfrastructureError as exc:
                infra = exc
                break
            if ep.passed:
                break
            if cfg.retry_mode == "conversation" and attempt < cfg.max_attempts:
                retry = conversation_retry(ep.feedback, challenge.solution_file)
                ep.messages.append({"role": "user", "content": retry})
        trajectory = self._trajectory(
            ep, session_id, shown, list(skill_ids), infra, time.perf_counter() - started
        )
        return SolveResult(
            trajectory,
            len(ep.calls),
            ep.passed,
            ep.tool_errors,
            infra,
            model_calls=len(ep.replies),
        )

    def _route(self, ep: _Episode, notify: Callable[[str], None]) -> int:
        """The episode's attempt budget: the router's decision, or `max_attempts`."""
        if self.router is None:
            return self.config.max_attempts
        budget, ep.routed = ask_router(
            self.router,
            ep.challenge,
            self.config.max_attempts,
            shown=(ep.lesson_ids, ep.skill_ids),
            notify=notify,
        )
        return budget

    def _choose_repair(self, ep: _Episode, notify: Callable[[str], None]) -> None:
        """Let the search policy point the next retry at an earlier failure or the task."""
        tree = bool(getattr(self.search, "tree", False))
        if self.search is None or len(ep.failed_runs) < (1 if tree else 2):
            return
        if ep.no_code is not None or ep.duplicate_of is not None:
            return  # the retry answers the last reply's problem, not a checker message
        candidates = ([ROOT] if tree else []) + list(ep.failed_runs)
        pick = ask_policy(
            self.search,
            ep.challenge,
            ep.calls,
            candidates,
            shown=(ep.lesson_ids, ep.skill_ids),
            notify=notify,
        )
        if pick is None:
            return
        latest = candidates[-1]
        ep.last_run = ep.failed_runs.get(pick)
        ep.parent = pick
        ep.repairs.append(pick)
        if pick != latest:
            ep.switched += 1
            what = "a fresh sample of the task" if pick == ROOT else f"repairing attempt {pick + 1}"
            notify(f"search: {what} instead of repairing attempt {latest + 1}")

    def _fresh_messages(self, ep: _Episode) -> list[Message]:
        """System prompt + one user message: the task, and on a retry what went wrong."""
        challenge = ep.challenge
        if ep.last_run is None and ep.no_code is None and ep.duplicate_of is None:
            content = challenge.prompt
        else:
            code, checker = ep.last_run or (None, "")
            content = retry_prompt(
                challenge.prompt,
                challenge.solution_file,
                failed_code=code,
                checker=checker,
                no_code=ep.no_code,
                duplicate_of=ep.duplicate_of,
            )
        return [
            {"role": "system", "content": ep.system_prompt},
            {"role": "user", "content": content},
        ]

    def _strips(self, challenge: Challenge) -> bool:
        """Whether top-level test code is stripped: a starter-tier Python function task.

        Never for generated challenges (`source` other than `template`): they
        are whole programs at every tier.
        """
        return (
            self.config.strip_test_code
            and challenge.source == "template"
            and challenge.tier == "starter"
            and challenge.solution_file.endswith(".py")
        )

    def _attempt(self, ep: _Episode, attempt: int, notify: Callable[[str], None]) -> None:
        """One attempt: ask (resampling repeats), then run the code or record why not.

        Raises:
            InfrastructureError: the model or the sandbox failed.
        """
        cfg = self.config
        challenge = ep.challenge
        file = challenge.solution_file
        fresh = cfg.retry_mode == "fresh"
        messages = self._fresh_messages(ep) if fresh else list(ep.messages)
        reply = ReplyCode(None)
        text = ""
        temperature = cfg.temperature
        duplicate_of: int | None = None
        dropped = 0  # top-level statements stripped from the reply's code
        for resample in range(cfg.max_resamples + 1):
            temperature = attempt_temperature(
                cfg.temperature, cfg.temperature_step, cfg.max_temperature, attempt - 1 + resample
            )
            label = f"attempt {attempt}/{cfg.max_attempts}"
            notify(f"{label}: asking {self.model.name} (temperature {temperature:g})")
            completion = self.model.complete(
                messages,
                temperature=temperature,
                max_tokens=cfg.max_tokens,
                seed=call_seed(cfg.seed, challenge.challenge_hash, attempt, resample),
            )
            ep.tokens_in += completion.tokens_in
            ep.tokens_out += completion.tokens_out
            ep.replies.append(text := completion.text)
            ep.temperatures.append(temperature)
            reply = read_reply(text, file)
            dropped = 0
            if reply.code is not None and self._strips(challenge):
                code, dropped = strip_test_code(reply.code)
                reply = dataclasses.replace(reply, code=code)
            ep.blob_replies += int(reply.blob)
            duplicate_of = (
                None if reply.code is None else ep.seen.get(normalise_code(reply.code, file))
            )
            if duplicate_of is None or resample == cfg.max_resamples:
                break
            ep.duplicates_resampled += 1
            notify(f"{label}: reply repeats attempt {duplicate_of}; resampling")
            ep.duplicate_of = duplicate_of
            messages = self._fresh_messages(ep)
        if not fresh:
            ep.messages.append({"role": "assistant", "content": text})
        arguments: dict[str, object] = {"attempt": attempt, "file": file}
        if self.search is not None:
            arguments["parent"] = ep.parent  # the search tree, for tree policies and the record
        if reply.code is None:
            ep.tool_errors += 1
            ep.no_code = "blob" if reply.blob else "none"
            ep.duplicate_of = None
            ep.feedback = no_code_note(ep.no_code)
            arguments["temperature"] = temperature
            ep.calls.append(ToolCall(name="run_solution", arguments=arguments, error=ep.feedback))
            return
        arguments.update(code=reply.code, temperature=temperature)
        if dropped:
            ep.stripped += 1
            arguments["stripped_statements"] = dropped
        if reply.from_blob:
            ep.blob_corrected += 1
            arguments["blob_corrected"] = True
        ep.no_code = None
        if duplicate_of is not None:
            ep.wasted += 1
            ep.duplicate_of = duplicate_of
            error = f"duplicate of attempt {duplicate_of}; not run"
            ep.calls.append(ToolCall(name="run_solution", arguments=arguments, error=error))
            return
        ep.duplicate_of = None
        self._run(ep, attempt, reply.code, arguments, notify)

    def _run(
        self,
        ep: _Episode,
        attempt: int,
        code: str,
        arguments: dict[str, object],
        notify: Callable[[str], None],
    ) -> None:
        """Judge `code` in the sandbox and record the `run_solution` call.

        Raises:
            InfrastructureError: the sandbox failed or the challenge is broken.
            ChallengeFaultError: a generated challenge's validator crashed in its
                own code (`validator_crash`), after the call is recorded: no
                further attempt is spent on a broken validator.
        """
        cfg = self.config
        notify(f"attempt {attempt}/{cfg.max_attempts}: running in sandbox")
        run_start = time.perf_counter()
        evaluation = evaluate(self.sandbox, ep.challenge, code)
        ep.seen[normalise_code(code, ep.challenge.solution_file)] = attempt
        ep.passed = evaluation.passed
        ep.feedback = evaluation.feedback[-cfg.feedback_chars :]
        if evaluation.screenshot is not None:
            shot = screenshot_record(evaluation.screenshot, attempt)
            ep.screenshots = [*ep.screenshots, shot][-MAX_SCREENSHOTS:]
        if evaluation.validation.timed_out:
            ep.tool_errors += 1
        if not ep.passed:
            ep.last_run = (code, ep.feedback)
            ep.parent = len(ep.calls)
            ep.failed_runs[ep.parent] = ep.last_run
        ep.calls.append(
            ToolCall(
                name="run_solution",
                arguments=arguments,
                result="passed" if ep.passed else "failed",
                error=None if ep.passed else ep.feedback,
                duration_s=round(time.perf_counter() - run_start, 4),
            )
        )
        if not ep.passed and ep.challenge.source != "template":
            crash = validator_crash(evaluation.validation, ep.challenge.solution_file)
            if crash is not None:
                template = ep.challenge.template
                raise ChallengeFaultError(f"validator of {template} crashed: {crash}")

    def _trajectory(
        self,
        ep: _Episode,
        session_id: str,
        shown: list[RetrievedLesson],
        skill_ids: list[str],
        infra: InfrastructureError | None,
        duration_s: float,
    ) -> Trajectory:
        """The episode record (outcome, failure reason and the diversity counters)."""
        cfg = self.config
        challenge = ep.challenge
        attempts = len(ep.calls)
        if infra is not None:
            outcome, reason = Outcome.UNKNOWN, None
        elif not ep.calls and ep.routed is not None:
            outcome = Outcome.FAILED
            reason = "not attempted: the router predicted it unsolvable at this budget"
        elif ep.passed:
            outcome, reason = Outcome.PASSED, None
        else:
            text = ep.feedback.strip()
            first_line = text.splitlines()[0] if text else "no output"
            reason = f"validator rejected all {attempts} attempts; last: {first_line[:300]}"
            outcome = Outcome.FAILED
        extra: dict[str, object] = {
            "template": challenge.template,
            "seed": challenge.seed,
            "challenge_hash": challenge.challenge_hash,
            "attempts": attempts,
            "tool_errors": ep.tool_errors,
            "sandboxed": self.sandbox.isolated,
            "lessons_shown": [item.lesson.id for item in shown],
            "lesson_scores": [round(item.score, 6) for item in shown],
            "skills_shown": skill_ids,
            "retry_mode": cfg.retry_mode,
            "model_calls": len(ep.replies),
            "attempt_codes_distinct": len(ep.seen),
            "duplicates_resampled": ep.duplicates_resampled,
            "wasted_attempts": ep.wasted,
            "temperatures": list(ep.temperatures),
            "blob_replies": ep.blob_replies,
            "blob_corrected": ep.blob_corrected,
            "test_code_stripped": ep.stripped,
        }
        if ep.routed is not None:
            extra["router"] = ep.routed
        if self.search is not None:
            extra["search"] = {
                "policy": self.search.name,
                "repaired": list(ep.repairs),
                "switched": ep.switched,
                "fresh_samples": ep.repairs.count(ROOT),
            }
        if infra is not None:
            extra["infrastructure_error"] = f"{type(infra).__name__}: {infra.message}"
        if ep.screenshots:
            extra["screenshots"] = ep.screenshots
        return Trajectory(
            session_id=session_id,
            task_kind="selfplay",
            cluster=challenge.cluster,
            tier=challenge.tier,
            model=self.model.name,
            temperature=cfg.temperature,
            system_prompt=ep.system_prompt,
            user_request=challenge.prompt,
            planning_output=prose(ep.replies[0]) if ep.replies else "",
            tool_calls=ep.calls,
            n_steps=len(ep.replies),
            tokens_in=ep.tokens_in,
            tokens_out=ep.tokens_out,
            duration_s=round(duration_s, 4),
            outcome=outcome,
            failure_reason=reason,
            validator_signal=(None if not ep.calls or infra else ("pass" if ep.passed else "fail")),
            extra=extra,
            final_response=ep.replies[-1] if ep.replies else "",
        )
