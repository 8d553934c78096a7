"""`ChatPipeline`: one chat turn from request to recorded trajectory, learning in real time.

Order of one `handle` call (seed 002, "real-time loop closure"):

1. Correction check: the previous assistant reply's fingerprint (md5 of its
   first 500 characters, whitespace collapsed, lower-cased) is looked up in a
   bounded LRU (`CORRECTION_CACHE_SIZE`) filled after each recorded turn. When
   the new message is a correction (`classify_correction`), a `Correction`
   (failed, source `user_correction`, authority `human`) is stored, lessons
   from that turn are retracted, the cache entry is dropped (one promotion per
   turn) and `reflect_one` is queued on a background worker — the reply does
   not wait for it.
2. Playbook retrieval: lessons → `### SKILL PLAYBOOK`, then skills (verified
   code from passing self-play solutions) → `### WORKED EXAMPLES`, in the
   system prompt; each behind the memory's relevance floor (an unrelated
   request gets none) and within its token budget, and only what fits is
   recorded as shown (`extra["lessons_shown"]`, `extra["skills_shown"]`).
   Ahead of them, the `### WHO I AM` wake-up section (`selfhood.wake_up_prefix`:
   the latest diary narrative and the self-state; absent on a fresh home).
3. The chat router (`learners.chat_router`, `extra["router"]`) picks `direct`
   (one model call, no tools) or `full`: the agent loop with sandboxed tools in
   the session's workspace: native tool calls when the model `supports_tools`,
   the fenced text protocol otherwise (`extra["tool_protocol"]`); tool-call
   blobs are never the answer (`extra["blob_replies"]`). A final reply whose
   code uses the agent's tool names is rewritten once (`agent._leak`,
   `extra["tool_leak"]`). A request to write code answered without code is
   asked once more for the code (`agent._missing_code`, `extra["missing_code"]`).
   Examples the request states are run against the
   reply's code; a failure buys up to two redraws of the request (the second
   only after the first failed too), one kept only when it passes
   (`agent._examples`, `extra["examples"]`).
4. Outcome heuristics (`unknown` → `failed` only), then the verifier when tools
   ran; a confident REFUTED fails the turn and retracts lessons the turn wrote.
5. Record: the redacted trajectory, lesson and skill exposures and outcome
   credit in one transaction; the reply's fingerprint goes into the cache.

A model or sandbox fault mid-turn records the turn as an infrastructure error
(outcome `unknown`, `extra["infrastructure_error"]`) and re-raises.
Thread-safe: any number of threads may call `handle` at once.
"""

from __future__ import annotations

import collections
import logging
import shutil
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nightschool.agent._background import BackgroundReflections
from nightschool.agent._examples import check_examples
from nightschool.agent._leak import repair_tool_leak
from nightschool.agent._missing_code import ask_for_missing_code
from nightschool.agent._request import (
    CORRECTION_CACHE_SIZE,
    previous_exchange,
    reply_fingerprint,
    session_dir_name,
    validate_messages,
)
from nightschool.agent._shown import shown_for_request
from nightschool.agent._types import AgentConfig, BackgroundResult, CorrectionEvent, TurnResult
from nightschool.agent.loop import (
    ToolProtocol,
    TurnRun,
    build_system_prompt,
    conversation_window,
    run_steps,
    uses_native_tools,
)
from nightschool.agent.tools import (
    PathRefusedError,
    PracticeTools,
    SessionWorkspace,
    leak_checked_names,
    tool_specs,
    usable_workspace_root,
)
from nightschool.agent.verifier import Verifier, VerifierVerdict, apply_verdict
from nightschool.errors import InfrastructureError, SandboxFaultError, UserError
from nightschool.feedback import apply_chat_outcome_heuristics, classify_correction
from nightschool.learn.chat_router import ChatRoute
from nightschool.lessons.reflection import Reflector
from nightschool.llm import ChatModel, Message
from nightschool.playbook import (
    RetrievedLesson,
    SkillMemory,
    format_playbook,
    format_worked_examples,
)
from nightschool.sandbox import Sandbox
from nightschool.selfhood import wake_up_prefix
from nightschool.store import Store
from nightschool.strategies.champions import chat_strategy
from nightschool.trajectory import Correction, Outcome, Trajectory, new_id

if TYPE_CHECKING:
    from nightschool.browser import BrowserSessions
    from nightschool.learn.chat_router import ChatRouter

logger = logging.getLogger("nightschool.agent")


class ChatPipeline:
    """Handles chat turns: correction check, playbook, agent loop, checks, recording.

    Args:
        model: the agent's model (also the verifier's).
        store: the database; writes are serialised by it.
        sandbox: runs `run_python` / `run_shell`.
        memory: the playbook; None runs without retrieval and retraction.
        reflector: runs real-time reflections after a correction; None skips them.
        workspace_root: session workspaces are `workspace_root / <sanitised session id>`.
            When run as root and the sandbox user cannot reach it (a 0o700 parent),
            a private temp dir is used instead, with a warning (`workspace_root`
            attribute holds the one in use).
        config: settings; None means `AgentConfig()`.
        wake_up: put the `### WHO I AM` section (`selfhood.wake_up_prefix`, a
            few small queries per turn, no model call) in the system prompt.
        practice: runs the self-play tools (`self_play`, `self_play_loop`,
            `stop_self_play`; `nightschool.agent.self_play.SelfPlayTools`);
            None leaves them out of every session.
        router: the chat router (`learners.chat_router.ChatRouter`); None
            answers every turn with the full loop.
        browser: one browser per session for the `browser` tool (off by
            default: None leaves the tool out). The caller closes it; a turn's
            screenshots are stored in its trajectory's `extra["screenshots"]`.
    """

    def __init__(
        self,
        *,
        model: ChatModel,
        store: Store,
        sandbox: Sandbox,
        memory: SkillMemory | None,
        reflector: Reflector | None,
        workspace_root: Path,
        config: AgentConfig | None = None,
        wake_up: bool = True,
        practice: PracticeTools | None = None,
        router: ChatRouter | None = None,
        browser: BrowserSessions | None = None,
    ) -> None:
        self.model = model
        self.store = store
        self.sandbox = sandbox
        self.memory = memory
        self.reflector = reflector
        self.wake_up = wake_up
        self.practice = practice
        self.router = router
        self.browser = browser
        try:
            self.workspace_root = usable_workspace_root(workspace_root, sandbox)
        except OSError as exc:
            raise SandboxFaultError(
                f"cannot create the workspace root {workspace_root}: {exc}"
            ) from exc
        self._temporary_root = self.workspace_root != workspace_root
        self.config = config or AgentConfig()
        self.verifier = Verifier(model, max_tokens=self.config.verifier_max_tokens)
        self._cache: collections.OrderedDict[tuple[str, str], str] = collections.OrderedDict()
        self._cache_lock = threading.Lock()
        self._background = BackgroundReflections(reflector) if reflector is not None else None

    # -- public API -------------------------------------------------------------

    def handle(
        self,
        messages: Sequence[Message],
        *,
        session_id: str,
        task_kind: str = "chat",
        temperature: float | None = None,
        max_tokens: int | None = None,
    ) -> TurnResult:
        """Answer the last (user) message of `messages` and record the turn.

        Args:
            messages: the whole OpenAI-style conversation, oldest first; the
                last one is the user's new request. Not mutated.
            session_id: the conversation's id (workspace and correction scope).
            task_kind: recorded on the trajectory (`chat`, `eval`, ...).
            temperature: the client's sampling temperature (0..2) for the agent's
                calls; None uses `config.temperature`. Recorded on the trajectory.
            max_tokens: the client's completion cap per model call, tokens; never
                above `config.max_tokens` (the operator's cap); None uses it.

        Returns:
            The `TurnResult`.

        Raises:
            UserError: malformed `messages`.
            ModelUnavailableError, ModelResponseError, SandboxUnavailableError,
                SandboxFaultError: after recording the turn as an infrastructure
                error (outcome unknown, fault named).
        """
        validate_messages(messages)
        cfg = self.config
        if temperature is not None and not 0.0 <= temperature <= 2.0:
            raise UserError(f"temperature must be between 0 and 2, got {temperature}")
        if max_tokens is not None and max_tokens < 1:
            raise UserError(f"max_tokens must be at least 1, got {max_tokens}")
        temperature = cfg.temperature if temperature is None else temperature
        max_tokens = cfg.max_tokens if max_tokens is None else min(max_tokens, cfg.max_tokens)
        started = time.perf_counter()
        request = messages[-1]["content"]
        turn_id = new_id()
        timings: dict[str, float] = {}

        tick = time.perf_counter()
        correction = self._check_correction(messages, session_id, request)
        timings["correction_check"] = time.perf_counter() - tick

        tick = time.perf_counter()
        lessons, skills = self._retrieve(request)
        timings["retrieval"] = time.perf_counter() - tick
        tick = time.perf_counter()
        who_i_am = self._who_i_am()
        timings["wake_up"] = time.perf_counter() - tick
        tick = time.perf_counter()
        route = self._route(request)
        direct = route.decision == "direct"
        timings["router"] = time.perf_counter() - tick
        protocol: ToolProtocol = "native" if uses_native_tools(self.model) else "fenced"
        client_system = "\n".join(m["content"] for m in messages if m["role"] == "system")
        playbook = format_playbook(lessons, token_budget=None)
        system_prompt = build_system_prompt(
            "\n\n".join(section for section in (who_i_am, playbook) if section),
            client_system,
            worked_examples=format_worked_examples(skills, token_budget=None),
            protocol=protocol,
            tools={}
            if direct
            else tool_specs(practice=self.practice is not None, browser=self.browser is not None),
        )

        window = conversation_window(messages, self.config.history_chars)
        conversation = [Message(role="system", content=system_prompt), *window]
        leak: dict[str, Any] | None = None
        missing: dict[str, Any] | None = None
        examples: dict[str, Any] | None = None
        screenshots: list[dict[str, Any]] = []
        try:
            workspace = self._workspace(session_id)
        except SandboxFaultError as fault:
            run = TurnRun(infrastructure_error=fault, protocol=protocol)
        else:
            run = run_steps(
                self.model,
                workspace,
                conversation,
                max_steps=1 if direct else cfg.max_steps,
                max_tokens=max_tokens,
                temperature=temperature,
                max_tool_output_chars=cfg.max_tool_output_chars,
                protocol=protocol,
                offer_tools=not direct,
            )
            leak = repair_tool_leak(
                self.model,
                run,
                window,
                client_system=client_system,
                repair=cfg.repair_tool_leaks,
                temperature=temperature,
                max_tokens=max_tokens,
                names=leak_checked_names(browser=self.browser is not None),
            )
            missing = (
                ask_for_missing_code(
                    self.model,
                    run,
                    window,
                    client_system=client_system,
                    temperature=temperature,
                    max_tokens=max_tokens,
                )
                if cfg.ask_for_missing_code
                else None
            )
            tick = time.perf_counter()
            try:
                examples = check_examples(
                    self.model,
                    self.sandbox,
                    run,
                    window,
                    client_system=client_system,
                    redraws=cfg.example_redraws if cfg.check_examples else 0,
                    temperature=temperature,
                    max_tokens=max_tokens,
                )
            except SandboxFaultError as fault:
                # the sandbox's fault, never the reply's: recorded, the reply kept
                examples = {"skipped": f"sandbox fault: {fault.message}"[:300]}
            timings["examples"] = time.perf_counter() - tick
            screenshots = workspace.screenshots
        timings["model"], timings["tools"] = run.model_s, run.tools_s
        trajectory = self._assemble(
            turn_id, session_id, task_kind, request, system_prompt, run, temperature
        )
        shown = tuple(item.lesson.id for item in lessons)
        skills_shown = tuple(item.lesson.id for item in skills)
        extra: dict[str, Any] = {
            "lessons_shown": list(shown),
            "lesson_scores": [round(item.score, 6) for item in lessons],
            "skills_shown": list(skills_shown),
            "skill_scores": [round(item.score, 6) for item in skills],
            "workspace": session_dir_name(session_id),
            "tool_protocol": run.protocol,
            "blob_replies": run.blob_replies,
            "blob_answer": run.blob_answer,
            "finish_reasons": run.finish_reasons,
            "aborted": run.aborted,
            "verifier": None,
            "strategy": self._strategy(),
            "router": route.as_record(),
        }
        if correction is not None:
            extra["corrected_trajectory_id"] = correction.trajectory_id
        if leak is not None:
            extra["tool_leak"] = leak
        if missing is not None:
            extra["missing_code"] = missing
        if examples is not None:
            extra["examples"] = examples
        if screenshots:
            extra["screenshots"] = screenshots

        if run.infrastructure_error is not None:
            exc = run.infrastructure_error
            extra["infrastructure_error"] = f"{type(exc).__name__}: {exc.message}"
            extra["timings"] = _rounded(timings)
            duration = round(time.perf_counter() - started, 4)
            trajectory = trajectory.model_copy(update={"extra": extra, "duration_s": duration})
            self._record(trajectory, [*lessons, *skills], expose=False)
            logger.warning("chat turn %s ended by an infrastructure error: %s", turn_id, exc)
            raise exc

        trajectory = apply_chat_outcome_heuristics(trajectory.model_copy(update={"extra": extra}))
        tick = time.perf_counter()
        verdict = self._verify(trajectory, run)
        timings["verifier"] = time.perf_counter() - tick
        trajectory = apply_verdict(trajectory, verdict, self.memory)
        tokens_in = run.tokens_in + (
            verdict.tokens_in if isinstance(verdict, VerifierVerdict) else 0
        )
        tokens_out = run.tokens_out + (
            verdict.tokens_out if isinstance(verdict, VerifierVerdict) else 0
        )
        trajectory = trajectory.model_copy(
            update={
                "tokens_in": tokens_in,
                "tokens_out": tokens_out,
                "duration_s": round(time.perf_counter() - started, 4),
                "extra": {**trajectory.extra, "timings": _rounded(timings)},
            }
        )

        tick = time.perf_counter()
        stored = self._record(trajectory, lessons, skills, expose=True)
        self._remember(session_id, run.reply, stored.id)
        timings["record"] = time.perf_counter() - tick
        timings["total"] = time.perf_counter() - started
        return TurnResult(
            reply=run.reply,
            trajectory=stored,
            lessons_shown=shown,
            tool_calls=tuple(stored.tool_calls),
            correction=correction,
            tokens_in=tokens_in,
            tokens_out=tokens_out,
            timings=timings,
            skills_shown=skills_shown,
        )

    def background_results(self, since: int = 0) -> list[BackgroundResult]:
        """Finished real-time reflections from index `since` on, in the order they finished."""
        return self._background.results(since) if self._background is not None else []

    def pending_background(self) -> int:
        """Real-time reflections queued or running."""
        return self._background.pending() if self._background is not None else 0

    def wait_background(self, timeout_s: float | None = None) -> bool:
        """Wait for queued reflections; True when none is pending."""
        return self._background.wait(timeout_s) if self._background is not None else True

    def close(self, *, wait: bool = True, timeout_s: float | None = None) -> None:
        """Stop scheduling reflections; drain them (`wait`) or cancel queued ones.

        A temporary workspace root (the fallback chosen when `workspace_root` was
        unreachable by the sandbox user) is deleted with its session workspaces.
        """
        if self._background is not None:
            self._background.close(wait=wait, timeout_s=timeout_s)
        if self._temporary_root:
            shutil.rmtree(self.workspace_root, ignore_errors=True)

    # -- steps ------------------------------------------------------------------

    def _check_correction(
        self, messages: Sequence[Message], session_id: str, request: str
    ) -> CorrectionEvent | None:
        """Steps of the real-time path; never raises (a failure is logged, the turn goes on)."""
        exchange = previous_exchange(messages)
        if exchange is None:
            return None
        key = (session_id, reply_fingerprint(exchange[0]))
        with self._cache_lock:
            if key not in self._cache:
                return None
        verdict = classify_correction(exchange[1], request)
        if not verdict.is_correction:
            return None
        with self._cache_lock:
            trajectory_id = self._cache.pop(key, None)
        if trajectory_id is None:  # another thread promoted it meanwhile
            return None
        try:
            return self._promote(trajectory_id, verdict.jaccard, verdict.signals, verdict.reason)
        except Exception:
            logger.warning("user-correction promotion of %s failed", trajectory_id, exc_info=True)
            return None

    def _promote(
        self, trajectory_id: str, jaccard: float, signals: tuple[str, ...], reason: str
    ) -> CorrectionEvent:
        self.store.add_correction(
            Correction(
                trajectory_id=trajectory_id,
                outcome=Outcome.FAILED,
                failure_reason=reason,
                source="user_correction",
                authority="human",
                note=f"signals: {', '.join(signals)}",
            )
        )
        retracted = 0
        if self.memory is not None:
            try:
                retracted = self.memory.retract_from_trajectory(trajectory_id, "user correction")
                self.memory.record_outcome(trajectory_id, passed=False)
            except Exception:
                logger.warning("retraction after a user correction failed", exc_info=True)
        scheduled = False
        if self._background is not None and self.config.reflect_on_correction:
            source = self.store.get_trajectory(trajectory_id)
            if source is not None:
                scheduled = self._background.schedule(source)
        logger.info(
            "user correction of %s: %s; %d lesson(s) retracted; reflection %s",
            trajectory_id,
            reason,
            retracted,
            "scheduled" if scheduled else "not scheduled",
        )
        return CorrectionEvent(trajectory_id, jaccard, signals, retracted, scheduled)

    def place_files(self, session_id: str, files: Mapping[str, str]) -> list[str]:
        """Write files into a session's workspace before its first turn (eval set-up).

        Args:
            session_id: the session whose workspace receives the files.
            files: workspace-relative path -> UTF-8 text.

        Returns:
            The paths written, in order.

        Raises:
            UserError: a path is refused (absolute, `..`, leaves the workspace) or
                a file is too large; nothing after it is written.
            SandboxFaultError: the workspace cannot be created.
        """
        workspace = self._workspace(session_id)
        written: list[str] = []
        for name, text in files.items():
            try:
                outcome = workspace.write_file(name, text)
            except PathRefusedError as exc:
                raise UserError(f"cannot place {name!r}: {exc}") from exc
            if outcome.error is not None:
                raise UserError(f"cannot place {name!r}: {outcome.error}")
            written.append(name)
        return written

    def _who_i_am(self) -> str:
        """The `### WHO I AM` section of this turn ("" when `wake_up` is off or empty)."""
        return wake_up_prefix(self.store) if self.wake_up else ""

    def _strategy(self) -> dict[str, Any]:
        """`extra["strategy"]` of this turn (`evolution.champions.chat_strategy`)."""
        return chat_strategy(self.store)

    def _route(self, request: str) -> ChatRoute:
        """How this turn is answered: the router's route, or `full` without one."""
        if self.router is not None:
            return self.router.route(request)
        return ChatRoute("full", "no chat router")

    def _retrieve(self, request: str) -> tuple[list[RetrievedLesson], list[RetrievedLesson]]:
        """(lessons, skills) shown for `request` (`lessons.skills.recall_request`)."""
        shown = shown_for_request(self.memory, self.config, request)
        return shown.lessons, shown.skills

    def _workspace(self, session_id: str) -> SessionWorkspace:
        path = self.workspace_root / session_dir_name(session_id or "anonymous")
        try:
            return SessionWorkspace(
                path,
                self.sandbox,
                timeout_s=self.config.tool_timeout_s,
                max_output_chars=self.config.max_tool_output_chars,
                practice=self.practice,
                browser=self.browser.session(session_id or "anonymous")
                if self.browser is not None
                else None,
            )
        except OSError as exc:
            raise SandboxFaultError(f"cannot create the session workspace {path}: {exc}") from exc

    def _assemble(
        self,
        turn_id: str,
        session_id: str,
        task_kind: str,
        request: str,
        system_prompt: str,
        run: TurnRun,
        temperature: float,
    ) -> Trajectory:
        return Trajectory(
            id=turn_id,
            session_id=session_id,
            task_kind=task_kind,
            model=self.model.name,
            temperature=temperature,
            system_prompt=system_prompt,
            user_request=request,
            planning_output="\n".join(run.planning)[:2000],
            tool_calls=run.tool_calls,
            n_steps=run.n_steps,
            tokens_in=run.tokens_in,
            tokens_out=run.tokens_out,
            outcome=Outcome.UNKNOWN,
            final_response=run.final_response,
        )

    def _verify(self, trajectory: Trajectory, run: TurnRun) -> VerifierVerdict | str:
        """The verifier's verdict, or why it did not run / could not answer."""
        if not self.config.verify:
            return "disabled"
        if not run.tool_calls:
            return "no tool calls"
        if trajectory.outcome != Outcome.UNKNOWN:
            return f"turn already {trajectory.outcome.value}"
        try:
            return self.verifier.verify(trajectory.user_request, run.tool_calls, run.reply)
        except InfrastructureError as exc:
            # The reply exists; the user still gets it. The fault is named, not hidden.
            logger.warning("verifier unavailable for %s: %s", trajectory.id, exc)
            return f"unavailable: {type(exc).__name__}: {exc.message}"

    def _record(
        self, trajectory: Trajectory, *shown: Sequence[RetrievedLesson], expose: bool
    ) -> Trajectory:
        """Append the turn; exposures and outcome credit join the same transaction.

        Each of `shown` (the lessons, then the skills) is one ranked exposure list.
        """
        with self.store.transaction():
            stored = self.store.append_trajectory(trajectory)
            if self.memory is not None and expose and any(shown):
                for entries in shown:
                    if entries:
                        self.memory.record_exposure(
                            [item.lesson.id for item in entries],
                            stored.id,
                            [item.score for item in entries],
                        )
                if stored.outcome == Outcome.FAILED:
                    self.memory.record_outcome(stored.id, passed=False)
        return stored

    def _remember(self, session_id: str, reply: str, trajectory_id: str) -> None:
        with self._cache_lock:
            key = (session_id, reply_fingerprint(reply))
            self._cache[key] = trajectory_id
            self._cache.move_to_end(key)
            while len(self._cache) > CORRECTION_CACHE_SIZE:
                self._cache.popitem(last=False)


def _rounded(timings: dict[str, float]) -> dict[str, float]:
    return {name: round(value, 6) for name, value in timings.items()}
