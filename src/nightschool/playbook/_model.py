"""Records of the skill playbook: `Lesson`, `LearnResult`, `RetrievedLesson`, config."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

if TYPE_CHECKING:
    from nightschool.config import Settings

DOMAINS: tuple[str, ...] = (
    "data_analysis",
    "regex_parse",
    "sql",
    "concurrency",
    "algo",
    "bash",
    "python_general",
    "web_automation",
)
"""The lesson taxonomy (PRIOR-ART.md) and the bank's `web_automation` cluster; a lesson's
domains are a non-empty subset."""

SOURCES: tuple[str, ...] = (
    "reflection",
    "selfplay",
    "user_correction",
    "manual",
    "chat",
    "stream",
)
"""Where a lesson or skill can come from (`chat`: a passing live chat turn; `stream`:
the memory arm of `eval stream`, kept in that run's own database)."""

FORMAT_VERSION = 2
"""Version of the JSON records written by `SkillMemory.export`.

1: lessons only. 2: adds `kind`, `template` and `tier` (skills); version-1
records restore as lessons."""

LearnStatus = Literal["written", "reinforced", "rejected"]

Kind = Literal["lesson", "skill"]
"""What a playbook entry is: a lesson (advice from a failure) or a skill (verified code)."""

KINDS: tuple[Kind, ...] = ("lesson", "skill")

Audience = Literal["practice", "chat"]
"""Who is shown a retrieval: self-play and evals (`practice`), or a user's turn (`chat`)."""

RETIRE_MARGIN = 2
"""An entry is retired (archived, reason `harmful`) once its paired harmful count
exceeds its helpful count by this much. Paired outcomes are rare (a verification
solves 2-6 renderings), so one unlucky rendering never retires an entry; two net
losses are as much evidence as the gate's smallest promotion in the other direction
(ACE, Zhang et al. 2025, keeps helpful/harmful counters per playbook bullet and
prunes by them)."""


class Lesson(BaseModel):
    """One playbook entry: a lesson, or a skill (`kind`).

    A lesson says when it applies, what goes wrong and what to do instead. A
    skill (Voyager's skill library, Wang et al. 2023) is a short task summary,
    kept in `trigger`, and the verified code of a passing trajectory, kept in
    `code_example`; its `anti_pattern` and `correct_pattern` are "" (the
    `summary` and `code` properties name them). Both kinds share provenance,
    counters, verification, retraction and the archive.

    Counters are maintained by `SkillMemory` (`record_exposure`,
    `record_outcome`, paired outcomes of `set_verified` and `record_paired`,
    `mark_helpful`, near-duplicate `learn`/`learn_skill` calls); callers never
    set them. Text fields are stored redacted.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    """`L-` followed by 12 lowercase hex digits."""
    kind: Kind = "lesson"
    """`lesson` or `skill`."""
    trigger: str
    """The situation in which the lesson applies ("When ..."); a skill's task summary."""
    anti_pattern: str
    """What went wrong, or what not to do; may be empty."""
    correct_pattern: str
    """What to do instead."""
    code_example: str = ""
    """Optional short code snippet; a skill's verified code (never empty for a skill)."""
    domains: list[str]
    """Non-empty subset of `DOMAINS`."""
    confidence: float = Field(ge=0.0, le=1.0)
    """Belief that the lesson is right and useful, 0..1; reinforcement nudges it up."""
    verified: bool = False
    """True once a held-out comparison showed that the lesson helps (`set_verified`)."""
    source: str
    """One of `SOURCES`."""
    source_trajectory_id: str = ""
    """Trajectory the lesson came from; "" for lessons with no provenance."""
    challenge_hash: str = ""
    """Hash of the self-play challenge the lesson came from, if any."""
    template: str = ""
    """Challenge template (`cluster.name`) a self-play skill came from; "" otherwise."""
    tier: str = ""
    """Difficulty tier of that challenge (`basic` ... `expert`); "" otherwise."""
    times_shown: int = 0
    """Times retrieved into a prompt (`record_exposure`)."""
    times_helpful: int = 0
    """Paired outcomes where the entry helped: a rendering solved with it and failed
    without it (`set_verified`, `record_paired`), plus `mark_helpful` calls."""
    times_harmful: int = 0
    """Paired outcomes where the entry hurt: failed with it, solved without it."""
    times_followed_by_pass: int = 0
    """Exposed trajectories that then passed (`record_outcome`)."""
    times_followed_by_failure: int = 0
    """Exposed trajectories that then failed (`record_outcome`)."""
    reinforcements: int = 0
    """Near-duplicate lessons merged into this one by `learn`."""
    created_at: datetime
    """When first written (UTC)."""
    updated_at: datetime
    """Last change of text, flags, confidence or counters (UTC)."""
    extra: dict[str, Any] = Field(default_factory=dict)
    """Free-form JSON: `reinforced_by`, `verification`, `archive` (archived copies);
    for skills also `solution_file` (decides the code fence language),
    `same_code_challenges` (other challenges the same code passed) and
    `code_replaced` (provenance of code that `learn_skill` swapped out)."""

    @property
    def summary(self) -> str:
        """A skill's task summary (the `trigger` column)."""
        return self.trigger

    @property
    def code(self) -> str:
        """A skill's code (the `code_example` column)."""
        return self.code_example

    @property
    def harmful(self) -> bool:
        """True when paired outcomes say it hurt more often than it helped."""
        return self.times_harmful > self.times_helpful

    @property
    def rejected(self) -> bool:
        """True when a verification ran to a verdict and the gate did not promote it.

        A comparison stopped by an infrastructure fault is no verdict: not rejected.
        """
        record = self.extra.get("verification")
        if not isinstance(record, dict) or record.get("verified"):
            return False
        comparison = record.get("comparison") or {}
        return not (isinstance(comparison, dict) and comparison.get("infrastructure_error"))

    def shown_to(self, audience: Audience) -> bool:
        """Whether this entry may be shown to `audience` at all (before relevance).

        Never a harmful entry. A user's chat turn (`chat`) is shown verified
        entries only: the paired gate said they help. Self-play and evals
        (`practice`) may also see entries not verified yet (verification itself
        shows them) and entries the gate did not promote.
        """
        if self.harmful:
            return False
        return self.verified if audience == "chat" else True


class LearnResult(BaseModel):
    """What `SkillMemory.learn` did with a candidate lesson."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    status: LearnStatus
    """`written` (new entry), `reinforced` (merged into a near-duplicate) or `rejected`."""
    lesson_id: str | None = None
    """The new or reinforced lesson or skill; None when rejected."""
    reason: str = ""
    """Why: the validation failure, or the near-duplicate rule that matched."""


class RetrievedLesson(BaseModel):
    """A lesson or skill returned by `SkillMemory.retrieve`, with its scores."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    lesson: Lesson
    score: float
    """Fused score (higher is better), cluster boost included; comparable within one call."""
    bm25_score: float
    """SQLite FTS5 BM25 relevance, sign flipped so higher is better; 0 if not a BM25 candidate."""
    vector_score: float
    """Cosine similarity of query and lesson embeddings, -1..1."""
    rank: int
    """1 for the best lesson."""
    fused_score: float = 0.0
    """`score` without the cluster boost: what the relevance floor compares."""


DEFAULT_MAX_ENTRIES = 5_000
"""Default size cap of the playbook, per kind (`MemoryConfig.max_lessons`).

Growth measured so far: the MBPP stream's memory arm learned 141 skills and 32
lessons in 200 tasks (README, "Does it transfer?"), so 5,000 skills is about
7,000 tasks of practice before the cap archives anything. Retrieval was measured
at these sizes: recall@5 0.831 among 674 entries, 0.764 among 10,000 and 0.676
among 100,000 (`MemoryConfig.fusion`, `fts_posting_budget`): entries that are
never verified dilute what a request is shown, so the cap stays well below
10,000, and below `exact_search_max` (25,000), where vector search stops being
exact. The cap archives only unverified entries (the archive keeps them), never
a verified one."""


class MemoryConfig(BaseModel):
    """Tuning of `SkillMemory`. Defaults were measured by `bench/bench_retrieval.py`."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    duplicate_threshold: float | None = Field(default=None, gt=0.0, le=1.0)
    """Cosine at or above which a new lesson reinforces the closest existing one.
    None uses the embedder's `duplicate_threshold` attribute, else 0.92."""
    reinforce_step: float = Field(default=0.2, gt=0.0, le=1.0)
    """Reinforcement moves confidence this fraction of the way to 1."""
    fusion: Literal["mix", "rrf"] = "mix"
    """`mix`: vector_weight * max(cosine, 0) + (1 - vector_weight) * b / (b + bm25_half)
    for BM25 score b; `rrf`: weighted reciprocal-rank fusion (Cormack et al., 2009).
    Measured with all-MiniLM-L6-v2 (`bench/bench_retrieval.py`, 148 labelled queries,
    recall@5): among 674 lessons mix 0.831, vectors alone 0.858, RRF k=60 with equal
    weights 0.736, BM25 alone 0.649; among 100k lessons mix 0.676, vectors alone 0.628,
    BM25 alone 0.541. Rank-based RRF gives BM25's top hit full weight even when it
    is a weak match, which cost recall on paraphrased requests."""
    vector_weight: float | None = Field(default=None, ge=0.0, le=1.0)
    """Weight of the vector side (BM25 gets 1 - this). None uses the embedder's
    `vector_weight` attribute, else 0.9 (measured best for all-MiniLM-L6-v2; heavier
    BM25 weights lowered recall on paraphrased requests: 0.5 gave 0.770 recall@5)."""
    bm25_half: float = Field(default=10.0, gt=0.0)
    """BM25 score that `mix` maps to 0.5. Typical top scores here: 3-60 (median 5)."""
    rrf_k: int = Field(default=60, ge=1)
    """RRF constant k in 1/(k + rank); 60 is the value of the original paper."""
    candidates: int = Field(default=50, ge=1)
    """Candidates taken from each retriever before fusion."""
    cluster_boost: float = Field(default=0.05, ge=0.0)
    """Added to the fused score (which lies in 0..1) when `cluster` is in the lesson's
    domains. Kept small because the cluster may be a router's guess: 0.05 lifted
    recall@5 from 0.831 to 0.851 with the right cluster on the labelled set."""
    min_score: float | None = Field(default=None, ge=0.0)
    """Relevance floor for lessons: a lesson whose fused score (cluster boost excluded)
    is below it is never returned, so an unrelated request gets no lessons. None uses
    the embedder's `relevance_floor` attribute (calibrated for `mix` fusion at the
    embedder's own vector weight by `bench/bench_retrieval.py`), else
    `DEFAULT_RELEVANCE_FLOOR`; with `fusion="rrf"` None means no floor (rank-based
    scores say nothing about absolute relevance). 0 turns the floor off."""
    min_skill_score: float | None = Field(default=None, ge=0.0)
    """Relevance floor for skills, as `min_score`; None uses the embedder's
    `skill_relevance_floor` attribute, else its `relevance_floor`, else the default."""
    chat_recall_score: float = Field(default=0.75, ge=0.0)
    """Embedding cosine from which a user's turn may be shown an entry not verified
    yet (never a rejected or harmful one): the request is then nearly the task the
    entry was made from, and showing a model its own earlier answer to the same task
    is the one lift measured so far (recall), while unverified neighbours hurt. From
    the first learning curve (MiniLM, fused = 0.9 x cosine + 0.1 x lexical): a skill
    on its own template scored 0.79 fused (cosine about 0.85) and turned a failure
    into a pass; on a neighbouring template 0.52-0.53 (about 0.55) and turned two
    passes into failures. Above 1 turns it off: verified entries only."""
    max_lessons: int | None = Field(default=DEFAULT_MAX_ENTRIES, ge=1)
    """Size cap per kind (lessons and skills are counted apart); above it the least
    useful unverified entries of that kind are archived (reason `size_cap`; verified
    entries and the entry just written are never archived, so verified entries may
    exceed it). Default `DEFAULT_MAX_ENTRIES`; users set it with
    `NIGHTSCHOOL_PLAYBOOK_MAX_ENTRIES` or `dream --playbook-max-entries`
    (`from_settings`). None: no cap."""
    exemplars_k: int = Field(default=0, ge=0, le=5)
    """Exemplars a practice task is shown when no skill of its own template is
    retrieved (`lessons.skills.exemplars`: verified solutions of other tasks of its
    cluster that retrieval does not rank as related); 0: none. Users set it with
    `NIGHTSCHOOL_EXEMPLARS` or `dream --exemplars` (`from_settings`)."""
    exact_search_max: int = Field(default=25_000, ge=1)
    """Up to this many lessons, vector search scores every row exactly; above it a
    sign-bit (Hamming) prefilter shortlists rows that are then scored exactly."""
    prefilter_shortlist: int = Field(default=2_000, ge=1)
    """Rows kept by the Hamming prefilter for exact rescoring."""
    fts_posting_budget: int = Field(default=2_000, ge=1)
    """Most FTS5 postings (summed document frequencies of the query words) one query
    may make FTS5 score, at about 1 us each; the most common words are dropped to fit.
    Measured recall@5 at 10k / 100k lessons: 0.764 / 0.682 with 2,000, 0.757 / 0.676
    with 5,000 (common words add noise, not signal)."""
    fts_prune_min_rows: int = Field(default=0, ge=0)
    """Below this many lessons every query word is kept (0: the budget always applies)."""

    @classmethod
    def from_settings(cls, settings: Settings | None = None) -> MemoryConfig:
        """The default tuning with the user's playbook settings applied.

        Args:
            settings: resolved settings; None reads them from the environment now
                (`NIGHTSCHOOL_PLAYBOOK_MAX_ENTRIES`, `NIGHTSCHOOL_EXEMPLARS`). Nothing
                is read at import.

        Returns:
            `MemoryConfig()` with `max_lessons` from `settings.playbook_max_entries`
            when that is set, else `DEFAULT_MAX_ENTRIES`, and `exemplars_k` from
            `settings.exemplars`.

        Raises:
            UserError: the environment holds an out-of-range cap or exemplar count
                (from `Settings`).
        """
        if settings is None:
            # function-local: start-up time (config loads pydantic-settings, ~40-70 ms)
            from nightschool.config import Settings

            settings = Settings()
        cap = settings.playbook_max_entries
        return cls(
            max_lessons=DEFAULT_MAX_ENTRIES if cap is None else cap,
            exemplars_k=settings.exemplars,
        )
