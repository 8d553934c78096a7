"""Self-play through the registered strategy champion: a `Solver` that plays a strategy.

`ChampionSolver` wraps the self-play `Solver`. At every `solve` it looks up the
current champion (`nightschool.strategies.champions.current`, one query), so a
promotion or a rollback takes effect at the next cycle of a running loop:

* a champion is current: its strategy is played exactly as `nightschool evolve`
  played it (`play_strategy` in the sandbox, a metered `Harness` at the budget
  it was promoted at), the returned code is judged once more by the validator
  (never trusting the strategy), and the episode becomes a trajectory with the
  `Solver`'s fields: one `run_solution` tool call per `run_tests` the strategy
  made and one for the final judgement, outcome, tokens, `model_calls`;
* none is current (or its source no longer passes the contract lint): the
  default `Solver` solves, unchanged.

Either way `trajectory.extra["strategy"]` says who solved:
`{"champion_id": int, "name": str, ...}` for a champion, `{"champion_id": None,
"name": "solver"}` for the default solver.

The playbook lessons and worked examples the dream loop recalls go into the
harness's system prompt (the same sections the `Solver` shows), and their ids
are recorded as shown. Lesson and skill *verification* still runs on the
default solver's single-attempt arm (`Solver.single_attempt`, inherited): a
verified lesson means "helps a pass@1 attempt", whichever strategy is in use.

The code is judged as `evolve` judged it when the champion was promoted: no
top-level test code is stripped at the starter tier (the `Solver` does that).

`SolveResult.attempts` is the strategy's model calls, within 1..3 (the
frontier's attempt scale, `selfplay.frontier.MAX_ATTEMPTS`); the raw counts
are in `extra["model_calls"]` and `extra["test_runs"]`. `tool_errors` is 1
when the final judgement found no code or the validator timed out, else 0.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from nightschool.challenges import Challenge, evaluate, validator_crash
from nightschool.dream.frontier import MAX_ATTEMPTS
from nightschool.errors import ChallengeFaultError, InfrastructureError
from nightschool.llm import ChatModel, Completion, Message, ToolSpec
from nightschool.solver.attempts import call_seed, prose
from nightschool.solver.core import SYSTEM_PROMPT, Solver, SolveResult
from nightschool.strategies.champions import ChampionEntry, current
from nightschool.strategies.contract import lint_strategy
from nightschool.strategies.harness import PASSED, Harness, task_view
from nightschool.strategies.runner import STEP_TIMEOUT_S, PlayResult, play_strategy
from nightschool.trajectory import Outcome, ToolCall, Trajectory

if TYPE_CHECKING:
    from nightschool.playbook import RetrievedLesson
    from nightschool.store import Store

__all__ = ["DEFAULT_STRATEGY", "ChampionSolver"]

DEFAULT_STRATEGY = "solver"
"""`extra["strategy"]["name"]` of an episode the default `Solver` solved."""


class _MeteredModel:
    """A `ChatModel` that forwards to `inner` and keeps every completion and temperature."""

    def __init__(self, inner: ChatModel, notify: Callable[[str], None], budget: int) -> None:
        self.inner = inner
        self.notify = notify
        self.budget = budget
        self.completions: list[Completion] = []
        self.temperatures: list[float] = []

    @property
    def name(self) -> str:
        return self.inner.name

    def complete(
        self,
        messages: Sequence[Message],
        *,
        temperature: float = 0.2,
        max_tokens: int = 512,
        seed: int | None = None,
        grammar: str | None = None,
        tools: Sequence[ToolSpec] | None = None,
    ) -> Completion:
        call = len(self.completions) + 1
        self.notify(
            f"champion call {call}/{self.budget}: asking {self.name} (temperature {temperature:g})"
        )
        completion = self.inner.complete(
            messages,
            temperature=temperature,
            max_tokens=max_tokens,
            seed=seed,
            grammar=grammar,
            tools=tools,
        )
        self.completions.append(completion)
        self.temperatures.append(temperature)
        return completion


@dataclass
class _RecordingHarness(Harness):
    """A `Harness` that records each `run_tests` as a `run_solution` tool call."""

    runs: list[ToolCall] = field(default_factory=list)

    def run_tests(self, code: str) -> str:
        started = time.perf_counter()
        answer = super().run_tests(code)
        passed = answer == PASSED
        self.runs.append(
            ToolCall(
                name="run_solution",
                arguments={
                    "attempt": len(self.runs) + 1,
                    "file": self.challenge.solution_file,
                    "code": str(code),
                    "via": "run_tests",
                },
                result="passed" if passed else "failed",
                error=None if passed else answer.removeprefix("FAILED: "),
                duration_s=round(time.perf_counter() - started, 4),
            )
        )
        return answer


@dataclass
class _Judged:
    """The final judgement of the code a strategy returned."""

    call: ToolCall
    passed: bool
    feedback: str
    tool_error: bool
    fault: ChallengeFaultError | None = None


def _judge(solver: Solver, challenge: Challenge, played: PlayResult, attempt: int) -> _Judged:
    """Run the validator on the returned code (not metered); a missing answer is a failure.

    Raises:
        InfrastructureError: the sandbox failed or the challenge's setup is broken.
    """
    file = challenge.solution_file
    arguments: dict[str, object] = {"attempt": attempt, "file": file, "via": "final"}
    if not played.code.strip():
        why = "the strategy returned no code"
        if played.status != "ok":
            why = f"strategy {played.status}: {played.detail.strip()[-300:]}"
        return _Judged(
            ToolCall(name="run_solution", arguments=arguments, error=why), False, why, True
        )
    arguments["code"] = played.code
    started = time.perf_counter()
    evaluation = evaluate(solver.sandbox, challenge, played.code)
    feedback = evaluation.feedback[-solver.config.feedback_chars :]
    call = ToolCall(
        name="run_solution",
        arguments=arguments,
        result="passed" if evaluation.passed else "failed",
        error=None if evaluation.passed else feedback,
        duration_s=round(time.perf_counter() - started, 4),
    )
    fault = None
    if not evaluation.passed and challenge.source != "template":
        crash = validator_crash(evaluation.validation, file)
        if crash is not None:
            fault = ChallengeFaultError(f"validator of {challenge.template} crashed: {crash}")
    return _Judged(call, evaluation.passed, feedback, evaluation.validation.timed_out, fault)


def _tagged(result: SolveResult, strategy: dict[str, Any]) -> SolveResult:
    trajectory = result.trajectory.model_copy(
        update={"extra": {**result.trajectory.extra, "strategy": strategy}}
    )
    return dataclasses.replace(result, trajectory=trajectory)


class ChampionSolver(Solver):
    """Solves through the current strategy champion, or as the wrapped `Solver` when none.

    Args:
        solver: the default solver; its model, sandbox, config and playbook are
            shared (the config's `max_tokens`, `temperature`, `seed`,
            `lessons_k` and `feedback_chars` apply to champion episodes too;
            `max_attempts` is the budget when the champion recorded none).
        store: where the registry is read, at every `solve`.
        step_timeout_s: most seconds of strategy compute between two harness calls.
    """

    def __init__(
        self, solver: Solver, store: Store, *, step_timeout_s: float = STEP_TIMEOUT_S
    ) -> None:
        super().__init__(
            solver.model,
            solver.sandbox,
            solver.config,
            playbook=solver.playbook,
            search=solver.search,
            router=solver.router,
        )
        self.store = store
        self.step_timeout_s = step_timeout_s

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
        """Solve `challenge` with the current champion, else with the default solver.

        Arguments and result as `Solver.solve`; `trajectory.extra["strategy"]`
        names who solved (see the module docstring).

        Raises:
            ValueError: `skill_ids` is given without any `skills` section.
            StoreError: the registry cannot be read.
        """
        champion = current(self.store)
        skipped = None
        if champion is not None:
            violations = lint_strategy(champion.source)
            if not violations:
                return self.solve_with(
                    champion,
                    challenge,
                    session_id=session_id,
                    on_event=on_event,
                    system_prompt=system_prompt,
                    lessons=lessons,
                    skills=skills,
                    skill_ids=skill_ids,
                )
            skipped = f"champion {champion.id} fails the contract lint: {violations[0]}"
        result = super().solve(
            challenge,
            session_id=session_id,
            on_event=on_event,
            system_prompt=system_prompt,
            lessons=lessons,
            skills=skills,
            skill_ids=skill_ids,
        )
        strategy: dict[str, Any] = {"champion_id": None, "name": DEFAULT_STRATEGY}
        if skipped is not None:
            strategy["champion_skipped"] = skipped
        return _tagged(result, strategy)

    def solve_with(
        self,
        champion: ChampionEntry,
        challenge: Challenge,
        *,
        session_id: str = "",
        on_event: Callable[[str], None] | None = None,
        system_prompt: str = SYSTEM_PROMPT,
        lessons: Sequence[RetrievedLesson] | None = None,
        skills: Sequence[str] = (),
        skill_ids: Sequence[str] = (),
    ) -> SolveResult:
        """Play `champion`'s strategy on `challenge` and record the episode.

        Returns:
            `SolveResult`; model, sandbox and broken-challenge faults are
            captured in it (outcome `unknown`, `extra["infrastructure_error"]`),
            not raised. A strategy that crashes, loops or overspends is a failed
            episode (`extra["strategy"]["status"]`).

        Raises:
            ValueError: `skill_ids` is given without any `skills` section.
        """
        notify = on_event or (lambda _msg: None)
        cfg = self.config
        system_prompt, shown = self.compose_prompt(
            challenge, system_prompt, lessons, skills, skill_ids
        )
        budget = champion.budget or cfg.max_attempts
        model = _MeteredModel(self.model, notify, budget)
        harness = _RecordingHarness(
            model,
            self.sandbox,
            challenge,
            budget=budget,
            max_tokens=cfg.max_tokens,
            temperature=cfg.temperature,
            seed=call_seed(cfg.seed, challenge.challenge_hash, 1, 0),
            system_prompt=system_prompt,
        )
        task_id = f"{challenge.template}/{challenge.tier}/{challenge.seed}"
        notify(f"solving with strategy champion {champion.id} ({champion.name})")
        started = time.perf_counter()
        played: PlayResult | None = None
        judged: _Judged | None = None
        infra: InfrastructureError | None = None
        try:
            played = play_strategy(
                self.sandbox,
                champion.source,
                harness,
                task_view(challenge, task_id),
                step_timeout_s=self.step_timeout_s,
            )
            notify("judging the strategy's answer in the sandbox")
            judged = _judge(self, challenge, played, len(harness.runs) + 1)
            infra = judged.fault
        except InfrastructureError as exc:
            infra = exc
        calls = list(harness.runs) + ([judged.call] if judged is not None else [])
        passed = judged is not None and judged.passed and infra is None
        replies = [c.text for c in model.completions]
        tool_errors = int(judged is not None and judged.tool_error)
        attempts = min(MAX_ATTEMPTS, max(1, harness.model_calls))
        if infra is not None:
            outcome, reason = Outcome.UNKNOWN, None
        elif passed:
            outcome, reason = Outcome.PASSED, None
        else:
            text = judged.feedback.strip() if judged is not None else ""
            first_line = text.splitlines()[0] if text else "no output"
            reason = f"strategy champion {champion.id} ({champion.name}) failed: {first_line[:300]}"
            outcome = Outcome.FAILED
        strategy: dict[str, Any] = {
            "champion_id": champion.id,
            "name": champion.name,
            "budget": budget,
            "status": played.status if played is not None else "infrastructure",
            "detail": played.detail.strip()[-300:] if played is not None else "",
        }
        extra: dict[str, Any] = {
            "template": challenge.template,
            "seed": challenge.seed,
            "challenge_hash": challenge.challenge_hash,
            "attempts": attempts,
            "tool_errors": tool_errors,
            "sandboxed": self.sandbox.isolated,
            "lessons_shown": [item.lesson.id for item in shown],
            "lesson_scores": [round(item.score, 6) for item in shown],
            "skills_shown": list(skill_ids),
            "model_calls": harness.model_calls,
            "test_runs": harness.test_runs,
            "temperatures": list(model.temperatures),
            "strategy": strategy,
        }
        if infra is not None:
            extra["infrastructure_error"] = f"{type(infra).__name__}: {infra.message}"
        trajectory = Trajectory(
            session_id=session_id,
            task_kind="selfplay",
            cluster=challenge.cluster,
            tier=challenge.tier,
            model=self.model.name,
            temperature=cfg.temperature,
            system_prompt=system_prompt,
            user_request=challenge.prompt,
            planning_output=prose(replies[0]) if replies else "",
            tool_calls=calls,
            n_steps=len(replies),
            tokens_in=sum(c.tokens_in for c in model.completions),
            tokens_out=sum(c.tokens_out for c in model.completions),
            duration_s=round(time.perf_counter() - started, 4),
            outcome=outcome,
            failure_reason=reason,
            validator_signal=None
            if infra is not None or not calls
            else ("pass" if passed else "fail"),
            extra=extra,
            final_response=replies[-1] if replies else "",
        )
        return SolveResult(
            trajectory, attempts, passed, tool_errors, infra, model_calls=harness.model_calls
        )
