"""What each idle phase does, on nightschool's real parts.

Every model call goes through the `PreemptibleModel` the caller passes, so a
user turn stops any phase (`Preempted`, recorded as `interrupted`).

Each phase imports what it runs inside its method: `nightschool serve` and
`watch` build this object while they start, and the phases' packages would add
0.1-2 s to that (the playbook's numpy, the gate's scipy, GEPA) for phases that
may never run.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nightschool.errors import InfrastructureError, UserError
from nightschool.lessons.reflection import Reflector
from nightschool.llm import ChatModel
from nightschool.sandbox import Sandbox
from nightschool.store import Store
from nightschool.watchdog import PhaseResult

if TYPE_CHECKING:
    from nightschool.playbook import Lesson, SkillMemory

logger = logging.getLogger("nightschool.watchdog")

DREAM_PHASE_CYCLES = 3
"""Self-play cycles of one dream phase (then one consolidation)."""
JOURNAL_DRAIN_LIMIT = 3
"""Failed chat turns reflected on per journal drain."""
REFLECTION_LIMIT = 5
"""Failed trajectories reflected on per reflection phase."""
SKILLS_LIMIT = 2
"""Unfinished skill verifications retried per skills phase."""
CHAT_LESSONS_LIMIT = 2
"""Chat lessons verified on their turn's examples per skills phase (12 model calls each,
`agent.verify_chat_lesson`)."""
SELFPLAY_ENTRY_GAP_S = 1800.0
"""Self-play writes a diary entry at most every this many seconds (times the
scale), or when interrupted: one line per 5-180 s cycle would drown the diary."""


class NightschoolWork:
    """The phases' work (`nightschool.watchdog.IdleWork`).

    Args:
        store: the database.
        model: a `PreemptibleModel` (or any model, for `nightschool watch`).
        sandbox: where generated code runs.
        playbook: the skill playbook to share (the server's); None opens one
            on first use and `close` closes it.
        temperature, max_tokens: the solver's settings.
        verify_k: fresh renderings per arm when verifying lessons and skills.
        scale: the watchdog's time scale (self-play's cool-off, diary gap).
        clock: epoch seconds.
        home: the nightschool home, where the retrain phase writes the
            process reward model's checkpoint (None: no retrain phase).
        verify_share: the dream phase's verification budget
            (`NIGHTSCHOOL_VERIFY_SHARE`; None: every candidate at once). What
            waits is kept for the next dream phase (`nightschool.dream.queue`).
    """

    def __init__(
        self,
        store: Store,
        model: ChatModel,
        sandbox: Sandbox,
        *,
        playbook: SkillMemory | None = None,
        temperature: float = 0.2,
        max_tokens: int = 512,
        verify_k: int = 6,
        scale: float = 1.0,
        clock: Any = time.time,
        home: Path | None = None,
        verify_share: float | None = None,
    ) -> None:
        self.verify_share = verify_share
        self.store = store
        self.model = model
        self.sandbox = sandbox
        self._playbook = playbook
        self._owned: SkillMemory | None = None
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.verify_k = verify_k
        self.scale = scale
        self.clock = clock
        self.home = home
        self._selfplay_cooldown = 5.0
        self._last_selfplay_entry = 0.0

    @property
    def playbook(self) -> SkillMemory:
        """The shared playbook, opened on first use."""
        if self._playbook is None:
            # function-local: start-up time (the playbook loads numpy, ~110 modules, ~300 ms)
            from nightschool.playbook import SkillMemory

            self._playbook = self._owned = SkillMemory(self.store)
        return self._playbook

    def close(self) -> None:
        """Close the playbook if this object opened it."""
        if self._owned is not None:
            self._owned.close()
            self._owned = self._playbook = None

    def unavailable(self, phase: str) -> str | None:
        """Why a phase cannot run here; `retrain` needs the home its checkpoint goes to."""
        if phase == "retrain" and self.home is None:
            return "no nightschool home to write the process reward model to"
        return None

    def run(self, phase: str) -> PhaseResult:
        """Run one phase (see `nightschool.watchdog.PHASES`).

        Raises:
            ValueError: unknown phase.
            Preempted: a user turn started.
        """
        handlers = {
            "journal": self._journal,
            "dream": self._dream,
            "reflection": self._reflection,
            "skills": self._skills,
            "diary": self._diary,
            "retrain": self._retrain,
            "prompts": self._prompts,
            "selfplay": self._selfplay,
        }
        if phase not in handlers:
            raise ValueError(f"no work for phase {phase!r}")
        return handlers[phase]()

    def after(self, phase: str, started_at: float, status: str) -> None:
        """Write the phase's diary entry (self-play: at most every `SELFPLAY_ENTRY_GAP_S`)."""
        if phase in ("diary", "retrain", "prompts") or status == "skipped":
            return
        now = self.clock()
        if phase == "selfplay":
            gap = SELFPLAY_ENTRY_GAP_S * self.scale
            if status != "interrupted" and now - self._last_selfplay_entry < gap:
                return
            since = self._last_selfplay_entry or started_at
            self._last_selfplay_entry = now
        else:
            since = started_at
        # function-local: start-up time (selfhood, ~30 modules, ~100 ms)
        from nightschool.selfhood import Diary, facts_since

        Diary(self.store).write_entry(phase, facts_since(self.store, since, now))

    # -- phases ------------------------------------------------------------------

    def _reflector(self) -> Any:
        # function-local: start-up time (lessons.sink loads the playbook's numpy, ~300 ms)
        from nightschool.lessons.sink import PlaybookSink

        return Reflector(self.store, self.model, sink=PlaybookSink(self.playbook))

    def _journal(self) -> PhaseResult:
        reflector = self._reflector()
        turns = [t for t in reflector.pending(50) if t.task_kind == "chat"][:JOURNAL_DRAIN_LIMIT]
        if not turns:
            return PhaseResult("skipped", "no failed chat turn waiting")
        outcomes = [reflector.reflect_one(t) for t in turns]
        learned = sum(o.status == "reflected" for o in outcomes)
        return PhaseResult(
            "ok",
            f"reflected on {learned} of {len(turns)} failed chat turn(s)",
            {"turns": len(turns), "reflected": learned},
        )

    def _practice(self) -> Any:
        # function-local: start-up time (the composition root, ~35 modules, ~110 ms, and what it
        # wires when called)
        from nightschool.practice import open_practice

        return open_practice(
            self.store,
            self.model,
            self.sandbox,
            temperature=self.temperature,
            max_tokens=self.max_tokens,
            verify_k=self.verify_k,
            playbook=self.playbook,
            session_id=f"idle-{int(self.clock())}",
            home=self.home,
            verify_share=self.verify_share,
        )

    def _dream(self) -> PhaseResult:
        from nightschool.practice import consolidate  # function-local: see _practice

        with self._practice() as practice:
            cycles = practice.loop.run(DREAM_PHASE_CYCLES)
            reflected = consolidate(practice)
        passed = sum(c.passed for c in cycles)
        skipped = sum(c.skipped is not None for c in cycles)  # not attempted: no verdict
        also = f", {skipped} skipped" if skipped else ""
        return PhaseResult(
            "ok",
            f"{len(cycles)} cycle(s), {passed} passed{also}; {reflected} reflection(s)",
            {"cycles": len(cycles), "passed": passed, "skipped": skipped, "reflected": reflected},
        )

    def _reflection(self) -> PhaseResult:
        reflector = self._reflector()
        if not reflector.pending(1):
            return PhaseResult("skipped", "no failed trajectory waiting")
        report = reflector.run(REFLECTION_LIMIT)
        return PhaseResult(
            "ok",
            f"reflected {report.reflected}, unparseable {report.unparseable}, "
            f"errors {report.errors}",
            {"reflected": report.reflected, "errors": report.errors},
        )

    def _skills(self) -> PhaseResult:
        """Verify waiting skills (fresh renderings), then chat lessons (their turn's examples)."""
        # function-local: start-up time (the agent and the gate load scipy, ~1.2 s)
        from nightschool.agent import chat_lesson_candidates

        if not self.verify_k:
            return PhaseResult("skipped", "verification is off (verify_k 0)")
        chats = chat_lesson_candidates(self.playbook, self.store)[:CHAT_LESSONS_LIMIT]
        checked, verified = self._verify_skills()
        if not checked and not chats:
            return PhaseResult("skipped", "no skill or chat lesson waiting for verification")
        chat_verified = sum(self._verify_chat(*found) for found in chats)
        return PhaseResult(
            "ok",
            f"verified {verified} of {checked} skill(s), {chat_verified} of {len(chats)} "
            "chat lesson(s)",
            {
                "checked": checked,
                "verified": verified,
                "chat_checked": len(chats),
                "chat_verified": chat_verified,
            },
        )

    def _verify_chat(self, lesson: Lesson, request: str, examples: list[str]) -> bool:
        """One chat lesson re-solved on its turn's request with and without it (stored)."""
        # function-local: as `_skills`' (start-up time)
        from nightschool.agent import verify_chat_lesson

        done = verify_chat_lesson(
            self.model,
            self.sandbox,
            self.playbook,
            lesson,
            request,
            examples,
            max_tokens=self.max_tokens,
        )
        return done.verified

    def _verify_skills(self) -> tuple[int, int]:
        """(skills checked, skills verified) of at most `SKILLS_LIMIT` waiting ones."""
        # function-local: start-up time (lessons.verify loads the gate's scipy, ~1.2 s)
        from nightschool.lessons.skills import skills_awaiting_verification, verify_skill
        from nightschool.lessons.verify import PairedVerifier
        from nightschool.solver.core import Solver, SolverConfig

        waiting = skills_awaiting_verification(self.playbook)[:SKILLS_LIMIT]
        if not waiting:
            return 0, 0
        solver = Solver(
            self.model,
            self.sandbox,
            SolverConfig(temperature=self.temperature, max_tokens=self.max_tokens),
        )
        solver.playbook = self.playbook
        verifier = PairedVerifier(solver, store=self.store, k=self.verify_k)
        verified = 0
        for skill in waiting:
            verification = verify_skill(verifier, skill)
            if verification.infrastructure_error is not None:
                raise InfrastructureError(
                    f"verifying skill {skill.id} stopped: {verification.infrastructure_error}"
                )
            self.playbook.set_verified(skill.id, verification.helps, verification.record())
            verified += int(verification.helps)
        return len(waiting), verified

    def _retrain(self) -> PhaseResult:
        """Retrain the PRM and the routers: `nightschool learn prm|router|chat-router`."""
        # function-local: start-up time (learn loads numpy and scipy, ~1.2 s)
        from nightschool.learn import NotEnoughDataError, learn_prm, learn_router

        if self.home is None:
            return PhaseResult("skipped", "no nightschool home")
        lines: list[str] = []
        record: dict[str, Any] = {}
        try:
            prm = learn_prm(self.store, self.home)
            mark = f"saved version {prm.version}" if prm.saved else "not saved"
            lines.append(
                f"PRM on {prm.trajectories} trajectories: held-out open-state AUC "
                f"{prm.auc_open} (baseline {prm.baseline_auc_open}); {mark}"
            )
            record["prm"] = {
                "trajectories": prm.trajectories,
                "auc_prefix": prm.auc_prefix,
                "auc_open": prm.auc_open,
                "baseline_auc_open": prm.baseline_auc_open,
                "saved": prm.saved,
                "version": prm.version,
            }
        except NotEnoughDataError as exc:
            lines.append(f"PRM: {exc.message}")
        try:
            routed = learn_router(self.store, self.home)
            mark = f"saved version {routed.version}" if routed.saved else "not saved"
            lines.append(
                f"router on {routed.episodes} episodes: pass {routed.pass_routed} vs "
                f"{routed.pass_full}, tokens saved {routed.savings:.0%}; {mark}"
            )
            record["router"] = {
                "episodes": routed.episodes,
                "savings": routed.savings,
                "promote": routed.promote,
                "saved": routed.saved,
                "version": routed.version,
            }
        except NotEnoughDataError as exc:
            lines.append(f"router: {exc.message}")
        lines.append(self._retrain_chat_router(record))
        status = "ok" if record else "skipped"
        return PhaseResult(status, "; ".join(lines), record)

    def _retrain_chat_router(self, record: dict[str, Any]) -> str:
        """`nightschool learn chat-router` (new pairs come only from eval runs the user ran)."""
        # function-local: start-up time (evals and learn load numpy and scipy, ~1.4 s)
        from nightschool.evals import chat_pairs
        from nightschool.learn.chat_router import learn_chat_router

        assert self.home is not None
        try:
            embedder = getattr(self.playbook, "embedder", None)
            if embedder is None:
                from nightschool.playbook import default_embedder  # function-local: see playbook

                embedder = default_embedder()
            chat = learn_chat_router(chat_pairs(self.store), self.home, embedder)
        except UserError as exc:  # not enough pairs, or no embedding model
            return f"chat router: {exc.message}"
        record["chat_router"] = {
            "requests": chat.requests,
            "savings": chat.savings,
            "promote": chat.promote,
            "saved": chat.saved,
            "version": chat.version,
        }
        mark = f"saved version {chat.version}" if chat.saved else "not saved"
        return (
            f"chat router on {chat.requests} requests: pass {chat.pass_routed} vs "
            f"{chat.pass_full}, tokens saved {chat.savings:.0%}; {mark}"
        )

    def _prompts(self) -> PhaseResult:
        """One GEPA run on the solver prompt, registered only if the gate promotes it."""
        # function-local: start-up time (prompt_phase loads GEPA and the gate, ~900 modules, ~1.3 s)
        from nightschool.watchdog.prompt_phase import optimise_prompt_phase

        return optimise_prompt_phase(
            self.store,
            self.model,
            self.sandbox,
            self.home,
            clock=self.clock,
            temperature=self.temperature,
            max_tokens=self.max_tokens,
        )

    def _diary(self) -> PhaseResult:
        from nightschool.selfhood import consolidate  # function-local: see after

        entry = consolidate(self.store, self.model)
        if entry is None:
            return PhaseResult("skipped", "nothing to tell yet")
        return PhaseResult("ok", entry.text[:160], {"diary_id": entry.id})

    def _selfplay(self) -> PhaseResult:
        from nightschool.practice import next_cooldown  # function-local: see _practice

        with self._practice() as practice:
            cycle = practice.loop.run_cycle()
            self._selfplay_cooldown = next_cooldown(
                practice.loop.tracker, cycle, self._selfplay_cooldown
            )
        record = {
            "trajectory_id": cycle.trajectory_id,
            "passed": cycle.passed,
            "source": cycle.source,
            "cooldown_s": self._selfplay_cooldown,
        }
        if cycle.skipped is not None:  # the router's stop: no attempt, not a failure
            record["skipped"] = cycle.skipped
            return PhaseResult(
                "skipped", f"{cycle.template} ({cycle.source}) skipped: {cycle.skipped}", record
            )
        mark = "passed" if cycle.passed else "failed"
        if cycle.infrastructure_error:
            mark = f"challenge fault: {cycle.infrastructure_error[:80]}"
        return PhaseResult(
            "ok",
            f"{cycle.template} ({cycle.source}) {mark} after {cycle.attempts} attempt(s)",
            record,
        )
