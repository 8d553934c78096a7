"""Where the next challenge comes from: template bank, journal mining, generated challenges.

Seed 000's source routing, after the frontier tracker picked a cluster. The
template bank has nothing left to teach (`exhausted`) when no brittle cluster
is open, unless the pick is a random exploration roll (seed 000: "and the
caller isn't rolling the 35% random-exploration dice") or a cluster never
practised yet (the cold start: nothing is known about it, so it is not aced):

1. **Journal mining** with probability 0.25, or 0.75 when exhausted: the newest
   failed chat turn not yet mined becomes a challenge through the generator's
   gates; an unsafe turn (destructive shell or SQL, network, credentials) is
   refused and the reason recorded.
2. **Template bank** at the frontier's pick while a brittle cluster is open
   (or the pick is a roll or a cold start).
3. When exhausted, the **20/80 coin**: 20% a template at the pick (the
   trackers never pick a saturated cluster while another is open, so this is
   seed 000's "template from a non-saturated cluster, any when none is"), 80%
   a generated challenge: half the time one already accepted and still in
   rotation (solve rate strictly between 0 and 1), else a new one written with
   the diversity injection (the clusters generated least so far, and "not
   another <most generated cluster> task").

A source that yields nothing falls through to the next, and finally to the
template bank, so a cycle always has a challenge. Generated challenges are
never part of a held-out set (those render bank templates at seeds above
`DREAM_SEED_LIMIT`).
"""

from __future__ import annotations

import logging
import random
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

from nightschool.challenges import GENERATED_CLUSTERS, Challenge
from nightschool.challenges.generated import ChallengeBank, ChallengeGenerator, GenerationRequest
from nightschool.challenges.journal import brief_for, find_candidates, unsafe_reason
from nightschool.dream.frontier import FrontierTracker, SeedPick
from nightschool.llm import ChatModel
from nightschool.sandbox import Sandbox
from nightschool.store import Store

logger = logging.getLogger("nightschool.dream")

JOURNAL_PROBABILITY = 0.25
"""Chance of trying journal mining first (seed 000)."""
JOURNAL_PROBABILITY_SATURATED = 0.75
"""Its chance when no brittle cluster is open (seed 000: every brittle candidate saturated)."""
TEMPLATE_WHEN_ACED = 0.20
"""When no brittle cluster is open: chance of a template from a non-saturated
cluster instead of a generated challenge (seed 000's 20/80 coin)."""
REUSE_PROBABILITY = 0.5
"""Chance of replaying a generated challenge still in rotation instead of writing a new one."""


@dataclass(frozen=True)
class Sourced:
    """A challenge and where it came from.

    Attributes:
        challenge: the challenge, or None: use the template bank at the pick.
        source: `template`, `journal`, `generated` or `rotation`.
        reason: one readable line (recorded on the trajectory).
    """

    challenge: Challenge | None
    source: str
    reason: str


class CurriculumSources:
    """Routes each cycle to a source; see the module docstring.

    Args:
        store: the database (journal, generated challenges, frontier).
        model: writes new challenges (the solver's model).
        sandbox: runs the generator's gates.
        rng: the dream loop's random source.
        generator_attempts: generator attempts per new challenge (repair loop).
    """

    def __init__(
        self,
        store: Store,
        model: ChatModel,
        sandbox: Sandbox,
        *,
        rng: random.Random,
        generator_attempts: int = 3,
    ) -> None:
        self.store = store
        self.model = model
        self.rng = rng
        self.bank = ChallengeBank(store)
        self.generator = ChallengeGenerator(model, sandbox, max_attempts=generator_attempts)

    def choose(
        self,
        pick: SeedPick,
        tracker: FrontierTracker,
        *,
        on_event: Callable[[str], None] | None = None,
    ) -> Sourced:
        """Decide the next challenge for `pick` (None challenge: render a bank template).

        See the module docstring: while a brittle cluster is open, or the pick
        is a cold start or a random exploration roll, journal mining (25%) or
        the template bank at the pick; otherwise journal mining (75%), then
        the 20/80 coin between the template bank and generated challenges.

        Returns:
            The challenge and its source; never None (a source that yields
            nothing falls through, finally to the template bank).

        Raises:
            InfrastructureError: the model or sandbox failed while generating.
            Preempted: a user turn started (idle work).
        """
        notify = on_event or (lambda _m: None)
        states = {s.cluster: s for s in tracker.states()}
        saturated = {c for c, s in states.items() if s.saturated}
        brittle_open = [s for s in states.values() if s.brittle and not s.saturated]
        picked = states.get(pick.cluster)
        cold_start = picked is not None and picked.runs == 0
        roll = pick.mode == "exploration" and pick.cluster not in saturated
        exhausted = not brittle_open and not cold_start and not roll
        p_journal = JOURNAL_PROBABILITY_SATURATED if exhausted else JOURNAL_PROBABILITY
        if self.rng.random() < p_journal:
            mined = self._journal(pick, notify)
            if mined is not None:
                return mined
        if not exhausted:
            return Sourced(None, "template", pick.reason)
        # no brittle cluster is open: the 20/80 coin (seed 000)
        if self.rng.random() < TEMPLATE_WHEN_ACED:
            return Sourced(None, "template", "no brittle cluster open; template rotation (20%)")
        if self.rng.random() < REUSE_PROBABILITY:
            rotation = self.bank.in_rotation()
            if rotation:
                chosen = self.rng.choice(rotation)
                return Sourced(
                    chosen,
                    "rotation",
                    "no brittle cluster open; a generated challenge still in rotation",
                )
        return self._generate(pick, notify)

    def _journal(self, pick: SeedPick, notify: Callable[[str], None]) -> Sourced | None:
        for candidate in find_candidates(self.store, limit=5):
            cluster = candidate.cluster_hint or pick.cluster
            if cluster not in GENERATED_CLUSTERS:  # web_automation: no model-written challenges
                continue
            tier = pick.tier if cluster == pick.cluster else "starter"
            reason = unsafe_reason(f"{candidate.request}\n{candidate.failure}")
            if reason is not None:
                self.bank.reject(
                    cluster=cluster,
                    tier=tier,
                    source="journal",
                    kind="unsafe",
                    detail=reason,
                    source_trajectory_id=candidate.trajectory_id,
                )
                notify(f"journal turn {candidate.trajectory_id[:12]} refused: {reason}")
                continue
            notify(f"mining journal turn {candidate.trajectory_id[:12]} into a challenge")
            request = GenerationRequest(
                cluster=cluster,
                tier=tier,
                source="journal",
                brief=brief_for(candidate),
                source_trajectory_id=candidate.trajectory_id,
            )
            outcome = self.generator.generate(request, on_event=notify)
            self.bank.record_rejections(request, outcome)
            if outcome.challenge is None:
                return None
            self.bank.add(outcome.challenge, outcome, request, self.model.name)
            return Sourced(
                outcome.challenge, "journal", f"mined from chat turn {candidate.trajectory_id}"
            )
        return None

    def _generate(self, pick: SeedPick, notify: Callable[[str], None]) -> Sourced:
        made = Counter(
            row[0] for row in self.store.query("SELECT cluster FROM generated_challenges")
        )
        needed = tuple(sorted(GENERATED_CLUSTERS, key=lambda c: (made[c], c))[:4])
        cluster = self.rng.choice(needed)
        forbidden: tuple[str, ...] = ()
        if made:
            top, count = made.most_common(1)[0]
            if count >= 2:
                forbidden = (f"another {top.replace('_', ' ')} task",)
        notify(f"writing a new {cluster} challenge")
        request = GenerationRequest(
            cluster=cluster,
            tier=pick.tier,
            needed_clusters=needed,
            forbidden_shapes=forbidden,
        )
        outcome = self.generator.generate(request, on_event=notify)
        self.bank.record_rejections(request, outcome)
        if outcome.challenge is None:
            kinds = ", ".join(sorted({r.kind for r in outcome.rejections})) or "none"
            return Sourced(None, "template", f"generation rejected ({kinds}); template instead")
        self.bank.add(outcome.challenge, outcome, request, self.model.name)
        return Sourced(outcome.challenge, "generated", "no brittle cluster open; a new challenge")
