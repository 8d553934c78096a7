"""Lesson extraction from self-play: extract, guard, verify, then learn.

After a failed cycle, or one won only after retries, one model call turns the
episode into a structured lesson. The candidate must pass the generalization
guard, then prove itself in a controlled comparison (`PairedVerifier`): fresh
renderings of the same template are solved with the lesson shown under
`### SKILL PLAYBOOK` and without it, and the lesson is kept (verified) only
when the promotion gate says the paired results improved. (Seed 000's
`_verify_lesson_helpful` re-ran the same challenge once with no control arm,
which cannot tell a helpful lesson from sampling luck.) Every comparison is
recorded: on the lesson when kept, in the `ExtractionOutcome` otherwise.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from typing import Any

from nightschool.challenges import Challenge
from nightschool.errors import InfrastructureError
from nightschool.lessons.guard import generalization_problem
from nightschool.lessons.verify import PairedVerifier, evidence
from nightschool.llm import ChatModel
from nightschool.playbook import DOMAINS, LearnResult, Lesson, RetrievedLesson, SkillMemory
from nightschool.solver.core import Solver, SolveResult
from nightschool.trajectory import utc_now

EXTRACTION_PROMPT = """You just practised a coding task. {how}
Write ONE general lesson that would help with SIMILAR tasks in future. Do not repeat
this task's file names, data values or wording; describe the kind of task and the fix.

TASK:
{task}

WHAT WENT WRONG:
{feedback}
{winner}
Answer in exactly this format:
TRIGGER: <when this lesson applies, one sentence>
ANTI-PATTERN: <the mistake to avoid, one sentence>
CORRECT PATTERN: <what to do instead, one or two sentences>
DOMAINS: <comma-separated, from: {domains}>
CONFIDENCE: <a number from 0 to 1>
"""

EXTRACTION_GRAMMAR = r"""
root ::= head tail
head ::= "TRIGGER: " line "\nANTI-PATTERN: " line "\nCORRECT PATTERN: " line
tail ::= "\nDOMAINS: " domain domains? "\nCONFIDENCE: 0." [0-9] "\n"
domains ::= ", " domain
line ::= [A-Za-z] [^\n]{10,160}
domain ::= "algo" | "bash" | "concurrency" | "data_analysis" | domain2
domain2 ::= "python_general" | "regex_parse" | "sql" | "web_automation"
"""
"""GBNF for the extraction reply, enforced where the backend supports grammars
(the embedded model; a 135M model does not follow the format otherwise)."""

_FIELD = re.compile(
    r"^\W*(trigger|anti[- ]?pattern|correct[- ]?pattern|domains?|confidence)\W*\s*[:\-]\s*(.*)$",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class CandidateLesson:
    """A parsed, not yet accepted lesson."""

    trigger: str
    anti_pattern: str
    correct_pattern: str
    domains: list[str]
    confidence: float


@dataclass(frozen=True)
class ExtractionOutcome:
    """What lesson extraction did for one cycle.

    Attributes:
        status: `skipped` (first-try win, nothing to learn), `unparseable`,
            `rejected` (guard or verification said no), `written` or
            `reinforced`; `proposed` from `LessonExtractor.propose` alone (a
            guarded candidate, neither verified nor written).
        reason: one readable sentence.
        lesson_id: the playbook lesson written or reinforced, if any.
        candidate: the parsed candidate, if any.
        comparison: original vs with-lesson outcome, when verification ran.
    """

    status: str
    reason: str
    lesson_id: str | None = None
    candidate: CandidateLesson | None = None
    comparison: dict[str, Any] = field(default_factory=dict)


def parse_lesson(text: str) -> CandidateLesson | None:
    """Parse the extraction reply leniently (any case, bullets, bold, `-` or `:`).

    Returns None when trigger or correct pattern is missing. Domains are
    lower-cased and kept even if off-taxonomy (the guard judges them);
    confidence defaults to 0.5 and is clamped to [0, 1].
    """
    found: dict[str, str] = {}
    for line in text.splitlines():
        match = _FIELD.match(line.strip().replace("**", ""))
        if match:
            key = match.group(1).lower().replace("-", "").replace(" ", "")
            key = {"domain": "domains"}.get(key, key)
            found.setdefault(key, match.group(2).strip())
    trigger, correct = found.get("trigger", ""), found.get("correctpattern", "")
    if not trigger or not correct:
        return None
    domains = [d.strip().lower() for d in re.split(r"[,;/]| and ", found.get("domains", ""))]
    try:
        confidence = float(re.findall(r"\d*\.?\d+", found.get("confidence", "0.5"))[0])
    except (IndexError, ValueError):
        confidence = 0.5
    return CandidateLesson(
        trigger=trigger,
        anti_pattern=found.get("antipattern", ""),
        correct_pattern=correct,
        domains=[d for d in domains if d],
        confidence=min(1.0, max(0.0, confidence)),
    )


class LessonExtractor:
    """Extracts, guards and verifies lessons from self-play cycles.

    Args:
        model: the model that writes the lesson (usually the solver's).
        memory: the playbook lessons are written to.
        solver: the cycle's solver (its model and sandbox run the verification).
        verifier: the controlled comparison; None builds a `PairedVerifier`
            over `solver` that records nothing.
        max_tokens: completion cap for the extraction call, tokens; with three
            160-character lines it leaves room for SmolLM2's token-hungry output
            (a 300 cap truncated a grammar-constrained reply before its last field).
    """

    def __init__(
        self,
        model: ChatModel,
        memory: SkillMemory,
        solver: Solver,
        *,
        verifier: PairedVerifier | None = None,
        max_tokens: int = 450,
    ) -> None:
        self.model = model
        self.memory = memory
        self.solver = solver
        self.verifier = verifier or PairedVerifier(solver)
        self.max_tokens = max_tokens

    def extraction_prompt(self, challenge: Challenge, result: SolveResult) -> str:
        """The prompt asking for a lesson about `result` on `challenge`."""
        traj = result.trajectory
        failures = [call.error for call in traj.tool_calls if call.error]
        winner = ""
        if result.passed and traj.tool_calls:
            code = str(traj.tool_calls[-1].arguments.get("code", ""))
            winner = f"\nTHE SOLUTION THAT FINALLY PASSED:\n{code[:1200]}\n"
        how = (
            f"You needed {result.attempts} attempts to pass."
            if result.passed
            else f"You failed all {result.attempts} attempts."
        )
        return EXTRACTION_PROMPT.format(
            how=how,
            task=challenge.prompt[:1500],
            feedback="\n---\n".join(f[-400:] for f in failures[-2:]) or "(no output)",
            winner=winner,
            domains=", ".join(DOMAINS),
        )

    def propose(self, challenge: Challenge, result: SolveResult) -> ExtractionOutcome:
        """Ask for a lesson about `result` and guard it; verify nothing, write nothing.

        Returns:
            `proposed` with the candidate when it passed the generalization
            guard; `skipped` (the cycle ended on an infrastructure error),
            `unparseable`, or `rejected` (the guard, with the candidate) otherwise.

        Raises:
            InfrastructureError: the model failed.
        """
        if result.infrastructure_error is not None:
            return ExtractionOutcome("skipped", "the cycle ended on an infrastructure error")
        reply = self.model.complete(
            [{"role": "user", "content": self.extraction_prompt(challenge, result)}],
            temperature=0.2,
            max_tokens=self.max_tokens,
            grammar=EXTRACTION_GRAMMAR,
        )
        candidate = parse_lesson(reply.text)
        if candidate is None:
            return ExtractionOutcome("unparseable", "the model's reply had no TRIGGER/PATTERN")
        problem = generalization_problem(
            trigger=candidate.trigger,
            anti_pattern=candidate.anti_pattern,
            correct_pattern=candidate.correct_pattern,
            domains=candidate.domains,
            sources=(challenge.prompt, challenge.setup_script, challenge.validation_script),
        )
        if problem:
            return ExtractionOutcome(
                "rejected", f"generalization guard: {problem}", None, candidate
            )
        return ExtractionOutcome("proposed", "passed the generalization guard", None, candidate)

    def write(
        self,
        candidate: CandidateLesson,
        *,
        source: str,
        source_trajectory_id: str,
        challenge_hash: str,
        verified: bool,
        extra: dict[str, Any] | None = None,
    ) -> LearnResult:
        """Write `candidate` to the playbook (`SkillMemory.learn`: redacted, de-duplicated).

        Args:
            candidate: a guarded candidate (`propose`).
            source: one of `memory.SOURCES` (`selfplay`, `stream`, ...).
            source_trajectory_id: the trajectory it was learned from (provenance).
            challenge_hash: the challenge it was learned on.
            verified: whether a controlled comparison promoted it.
            extra: stored with the lesson (the verification record).

        Returns:
            The playbook's verdict (`written`, `reinforced` or `rejected`).
        """
        return self.memory.learn(
            trigger=candidate.trigger,
            anti_pattern=candidate.anti_pattern,
            correct_pattern=candidate.correct_pattern,
            domains=candidate.domains,
            source=source,
            confidence=candidate.confidence,
            source_trajectory_id=source_trajectory_id,
            challenge_hash=challenge_hash,
            verified=verified,
            extra=extra,
        )

    def extract(
        self, challenge: Challenge, result: SolveResult, *, session_id: str = ""
    ) -> ExtractionOutcome:
        """Run the whole pipeline for one finished cycle.

        Raises:
            InfrastructureError: the model or sandbox failed during extraction or
                verification (nothing is written).
        """
        if result.passed and result.attempts == 1:
            return ExtractionOutcome("skipped", "first-try win: nothing to learn")
        proposed = self.propose(challenge, result)
        if proposed.status != "proposed" or proposed.candidate is None:
            return proposed
        return self.settle(
            challenge,
            proposed.candidate,
            passed=result.passed,
            attempts=result.attempts,
            trajectory_id=result.trajectory.id,
        )

    def settle(
        self,
        challenge: Challenge,
        candidate: CandidateLesson,
        *,
        passed: bool,
        attempts: int,
        trajectory_id: str,
    ) -> ExtractionOutcome:
        """Verify a guarded candidate (`propose`) on fresh renderings; write it when it helps.

        Args:
            challenge: the cycle's challenge (never one of the renderings).
            candidate: the guarded lesson.
            passed: whether the cycle passed (kept in the comparison record).
            attempts: the cycle's attempts (kept there too).
            trajectory_id: the cycle's trajectory, the lesson's source.

        Returns:
            `written` or `reinforced` (verified), or `rejected` with the
            comparison when the gate did not promote it.

        Raises:
            InfrastructureError: the model or sandbox failed during verification
                (nothing is written).
        """
        # the id is shown in the candidate arm's prompt: a digest of the lesson, not a
        # random id, so the same lesson gives the same prompt (reproducible arms)
        text = "\x00".join((candidate.trigger, candidate.anti_pattern, candidate.correct_pattern))
        provisional = Lesson(
            id=f"candidate-{hashlib.sha256(text.encode()).hexdigest()[:8]}",
            trigger=candidate.trigger,
            anti_pattern=candidate.anti_pattern,
            correct_pattern=candidate.correct_pattern,
            domains=candidate.domains,
            confidence=candidate.confidence,
            verified=False,
            source="selfplay",
            created_at=utc_now(),
            updated_at=utc_now(),
        )
        shown = RetrievedLesson(
            lesson=provisional, score=1.0, bm25_score=0.0, vector_score=0.0, rank=1
        )
        verification = self.verifier.compare(
            challenge.template,
            challenge.tier,
            lessons=[shown],
            exclude_hash=challenge.challenge_hash,
        )
        comparison = verification.record()
        comparison["challenge_hash"] = challenge.challenge_hash
        comparison["original"] = {"passed": passed, "attempts": attempts}
        if verification.infrastructure_error is not None:
            raise InfrastructureError(
                f"lesson verification stopped: {verification.infrastructure_error}"
            )
        if not verification.helps:
            test = f"; {comparison['test']}" if comparison.get("test") else ""
            return ExtractionOutcome(
                "rejected",
                f"verification: the gate did not promote the lesson ({evidence(comparison)}{test})",
                None,
                candidate,
                comparison,
            )
        learned = self.write(
            candidate,
            source="selfplay",
            source_trajectory_id=trajectory_id,
            challenge_hash=challenge.challenge_hash,
            verified=True,
            extra={"verification": comparison},
        )
        if learned.status == "reinforced" and learned.lesson_id:
            self.memory.set_verified(learned.lesson_id, True, comparison)
        return ExtractionOutcome(
            learned.status, learned.reason, learned.lesson_id, candidate, comparison
        )
