"""What happened in a period: `PhaseFacts`, gathered from the store by `facts_since`.

Facts are counts and names only (clusters, templates, phase names): never the
text of a user request, a lesson or a reply, so the diary built from them cannot
quote private content. The one free-text field, a failed phase's `detail`, is
redacted and cut to `DETAIL_CHARS`.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from nightschool.redact import redact_text
from nightschool.store import Store

FACTS_VERSION = 1
"""Version of the `PhaseFacts.to_record` layout (stored in diary records)."""

DETAIL_CHARS = 120
"""Characters kept of a failed phase's `detail` (an error message)."""

EVICTION_REASON = "size_cap"
"""`lessons_archive.archive_reason` of entries dropped by the playbook's size cap
(`memory._writer.PlaybookWriter`); every other reason counts as a retraction."""


@dataclass(frozen=True)
class ClusterPractice:
    """Self-play runs of one cluster in the period.

    Attributes:
        cluster: the cluster (`algo`, `sql`, ...).
        runs: runs recorded (`frontier_runs` rows), >= 1.
        passes: how many of them passed, 0..runs.
    """

    cluster: str
    runs: int
    passes: int


@dataclass(frozen=True)
class TemplateStruggle:
    """A template that failed at least once in the period.

    Attributes:
        template: the template (`cluster.name`).
        failures: failed runs of it in the period, >= 1.
        attempts: solver attempts spent on those failed runs.
        solved: its latest run in the period passed (cracked after failing).
    """

    template: str
    failures: int
    attempts: int
    solved: bool = False


@dataclass(frozen=True)
class PhaseProblem:
    """A phase that did not finish well (a `phase_runs` row).

    Attributes:
        phase: the phase's name (`dream`, `reflect`, ...).
        status: `failed` or `interrupted`.
        detail: redacted error text, at most `DETAIL_CHARS` characters.
    """

    phase: str
    status: str
    detail: str = ""


@dataclass(frozen=True)
class PhaseFacts:
    """What happened between `since` and `until` (epoch seconds, half-open).

    Every count is over rows whose timestamp falls in the period. Lessons and
    skills count when created in it; `*_verified` says how many of those carry
    the verified flag when the facts were gathered.

    Attributes:
        since: start of the period, epoch seconds (inclusive).
        until: end of the period, epoch seconds (exclusive).
        practice: self-play runs per cluster, in cluster order.
        struggles: templates that failed, unsolved first, then most failures.
        lessons_new: lessons written.
        lessons_verified: of those, verified.
        skills_new: skills kept.
        skills_verified: of those, verified.
        verified_skill_templates: templates of the verified skills (sorted).
        retracted: playbook entries retracted (archived for a reason other
            than the size cap).
        evicted: playbook entries dropped by the size cap.
        chat_turns: chat trajectories recorded.
        chat_failed: of those, failed (corrections overlaid).
        challenges_accepted: generated challenges that passed every gate.
        challenges_rejected: generator attempts or journal turns refused.
        phase_problems: phases that failed or were interrupted, oldest first.
        notes: extra first-person sentences from the caller, kept as written
            (redacted when the entry is written).
    """

    since: float = 0.0
    until: float = 0.0
    practice: tuple[ClusterPractice, ...] = ()
    struggles: tuple[TemplateStruggle, ...] = ()
    lessons_new: int = 0
    lessons_verified: int = 0
    skills_new: int = 0
    skills_verified: int = 0
    verified_skill_templates: tuple[str, ...] = ()
    retracted: int = 0
    evicted: int = 0
    chat_turns: int = 0
    chat_failed: int = 0
    challenges_accepted: int = 0
    challenges_rejected: int = 0
    phase_problems: tuple[PhaseProblem, ...] = ()
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def runs(self) -> int:
        """Self-play runs in the period, all clusters."""
        return sum(p.runs for p in self.practice)

    @property
    def passes(self) -> int:
        """Passing self-play runs in the period, all clusters."""
        return sum(p.passes for p in self.practice)

    @property
    def empty(self) -> bool:
        """Nothing to report: no count above zero, no struggle, problem or note."""
        record = self.to_record()
        return not any(value for key, value in record.items() if key not in _NOT_NEWS)

    def to_record(self) -> dict[str, Any]:
        """The facts as a JSON-ready dict (nested items as dicts, tuples as lists)."""
        data = asdict(self)
        return {
            key: list(value) if isinstance(value, tuple) else value for key, value in data.items()
        }

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> PhaseFacts:
        """Rebuild facts from `to_record` output (or a hand-written subset of it).

        Missing keys take their defaults; nested items may be dicts or the
        dataclasses themselves.

        Raises:
            ValueError: an unknown key, or a value of the wrong shape.
        """
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(record) - known)
        if unknown:
            raise ValueError(f"unknown phase fact(s): {', '.join(unknown)}")
        values: dict[str, Any] = dict(record)
        try:
            for key, item_type in _NESTED.items():
                if key in values:
                    values[key] = tuple(_item(item_type, v) for v in values[key])
            for key in ("verified_skill_templates", "notes"):
                if key in values:
                    values[key] = tuple(str(v) for v in values[key])
            for key in ("since", "until"):
                if key in values:
                    values[key] = float(values[key])
            return cls(**values)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"malformed phase facts: {exc}") from exc


_NOT_NEWS = frozenset({"since", "until"})
_NESTED: dict[str, type[Any]] = {
    "practice": ClusterPractice,
    "struggles": TemplateStruggle,
    "phase_problems": PhaseProblem,
}


def _item(item_type: type[Any], value: Any) -> Any:
    if isinstance(value, item_type):
        return value
    if not isinstance(value, Mapping):
        raise TypeError(f"{item_type.__name__} item must be a mapping, not {type(value).__name__}")
    return item_type(**value)


def merge_facts(periods: Sequence[PhaseFacts]) -> PhaseFacts:
    """Add up several periods (oldest first) into one spanning all of them.

    Counts are summed; practice is merged per cluster; a template's struggles
    are summed and `solved` is taken from the latest period that names it;
    problems and notes are concatenated. An empty sequence gives `PhaseFacts()`.
    """
    if not periods:
        return PhaseFacts()
    practice: dict[str, list[int]] = {}
    struggles: dict[str, TemplateStruggle] = {}
    for period in periods:
        for p in period.practice:
            runs, passes = practice.get(p.cluster, [0, 0])
            practice[p.cluster] = [runs + p.runs, passes + p.passes]
        for s in period.struggles:
            old = struggles.get(s.template)
            if old is not None:
                s = TemplateStruggle(
                    s.template, old.failures + s.failures, old.attempts + s.attempts, s.solved
                )
            struggles[s.template] = s

    def total(name: str) -> int:
        return sum(int(getattr(period, name)) for period in periods)

    return PhaseFacts(
        since=min(p.since for p in periods),
        until=max(p.until for p in periods),
        practice=tuple(ClusterPractice(c, r, s) for c, (r, s) in sorted(practice.items())),
        struggles=_ordered(struggles.values()),
        lessons_new=total("lessons_new"),
        lessons_verified=total("lessons_verified"),
        skills_new=total("skills_new"),
        skills_verified=total("skills_verified"),
        verified_skill_templates=tuple(
            sorted({t for p in periods for t in p.verified_skill_templates})
        ),
        retracted=total("retracted"),
        evicted=total("evicted"),
        chat_turns=total("chat_turns"),
        chat_failed=total("chat_failed"),
        challenges_accepted=total("challenges_accepted"),
        challenges_rejected=total("challenges_rejected"),
        phase_problems=tuple(x for p in periods for x in p.phase_problems),
        notes=tuple(x for p in periods for x in p.notes),
    )


def _ordered(struggles: Iterable[TemplateStruggle]) -> tuple[TemplateStruggle, ...]:
    return tuple(sorted(struggles, key=lambda s: (s.solved, -s.failures, s.template)))


def facts_since(store: Store, since: float, until: float | None = None) -> PhaseFacts:
    """Gather what happened in `[since, until)` from the store.

    Reads `frontier_runs`, `lessons`, `lessons_archive`, `trajectories_effective`
    (chat turns), `generated_challenges`, `challenge_rejections` and
    `phase_runs` (statuses `failed` / `interrupted`). Eight read queries; none
    is indexed on time except chat turns, so cost grows with the tables (meant
    for once per phase, not per chat turn).

    Args:
        store: the open database.
        since: start, epoch seconds (inclusive).
        until: end, epoch seconds (exclusive); None means no upper bound (the
            facts record the current time as `until`).

    Returns:
        The facts; `PhaseFacts.empty` when nothing happened.
    """
    end = time.time() if until is None else float(until)
    window = _Window(store, float(since), until)
    runs = window.rows(
        "SELECT cluster, template, passed, attempts FROM frontier_runs WHERE {t} ORDER BY id",
        "timestamp",
    )
    practice: dict[str, list[int]] = {}
    by_template: dict[str, list[tuple[bool, int]]] = {}
    for cluster, template, passed, attempts in runs:
        counts = practice.setdefault(cluster, [0, 0])
        counts[0] += 1
        counts[1] += int(bool(passed))
        by_template.setdefault(template, []).append((bool(passed), int(attempts)))
    struggles = [
        TemplateStruggle(
            template,
            failures=sum(not ok for ok, _ in history),
            attempts=sum(n for ok, n in history if not ok),
            solved=history[-1][0],
        )
        for template, history in by_template.items()
        if any(not ok for ok, _ in history)
    ]
    kinds = {
        kind: (int(n), int(v))
        for kind, n, v in window.rows(
            "SELECT kind, COUNT(*), COALESCE(SUM(verified), 0) FROM lessons WHERE {t} "
            "GROUP BY kind",
            "created_at",
        )
    }
    templates = [
        row[0]
        for row in window.rows(
            "SELECT DISTINCT template FROM lessons WHERE {t} AND kind = 'skill' "
            "AND verified = 1 AND template != '' ORDER BY template",
            "created_at",
        )
    ]
    archived = dict(
        window.rows(
            "SELECT archive_reason = ?, COUNT(DISTINCT id) FROM lessons_archive WHERE {t} "
            "GROUP BY 1",
            "archived_at",
            (EVICTION_REASON,),
        )
    )
    [(chat_turns, chat_failed)] = window.rows(
        "SELECT COUNT(*), COALESCE(SUM(outcome = 'failed'), 0) FROM trajectories_effective "
        "WHERE task_kind = 'chat' AND {t}",
        "timestamp",
    )
    [(accepted,)] = window.rows("SELECT COUNT(*) FROM generated_challenges WHERE {t}", "created_at")
    [(rejected,)] = window.rows(
        "SELECT COUNT(*) FROM challenge_rejections WHERE challenge_id IS NULL AND {t}",
        "created_at",
    )
    problems = [
        PhaseProblem(phase, status, redact_text(" ".join(str(detail).split()))[:DETAIL_CHARS])
        for phase, status, detail in window.rows(
            "SELECT phase, status, detail FROM phase_runs "
            "WHERE status IN ('failed', 'interrupted') AND {t} ORDER BY id",
            "timestamp",
        )
    ]
    return PhaseFacts(
        since=float(since),
        until=end,
        practice=tuple(ClusterPractice(c, r, p) for c, (r, p) in sorted(practice.items())),
        struggles=_ordered(struggles),
        lessons_new=kinds.get("lesson", (0, 0))[0],
        lessons_verified=kinds.get("lesson", (0, 0))[1],
        skills_new=kinds.get("skill", (0, 0))[0],
        skills_verified=kinds.get("skill", (0, 0))[1],
        verified_skill_templates=tuple(templates),
        retracted=int(archived.get(0, 0)),
        evicted=int(archived.get(1, 0)),
        chat_turns=int(chat_turns),
        chat_failed=int(chat_failed),
        challenges_accepted=int(accepted),
        challenges_rejected=int(rejected),
        phase_problems=tuple(problems),
    )


class _Window:
    """Runs queries restricted to one half-open time window."""

    def __init__(self, store: Store, since: float, until: float | None) -> None:
        self._store = store
        self._since = since
        self._until = until

    def rows(self, sql: str, column: str, before: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Run `sql` with `{t}` replaced by the window test on `column`.

        `before` are the parameters of placeholders ahead of `{t}` (none may follow it).
        """
        test = f"{column} >= ?"
        params: list[Any] = [*before, self._since]
        if self._until is not None:
            test += f" AND {column} < ?"
            params.append(self._until)
        return self._store.query(sql.format(t=test), params)
