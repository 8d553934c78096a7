"""Journal mining: failed chat turns as seeds for new practice challenges.

Issue 10: failed chat turns (user corrections, heuristic or verifier failures)
become challenges, redacted, run through the same quality gates as
model-written ones, and refused when unsafe, with the reason recorded.
This module is what feeds the challenge generator:

- `find_candidates` picks the failed chat turns not yet mined, newest first;
- `unsafe_reason` names why a text must not be replayed (PRIOR-ART.md: a
  journal-mined challenge once replayed a user's destructive SQL);
- `brief_for` writes the generator's brief for one candidate.

The caller records the outcome: a refused or rejected turn goes into
`challenge_rejections` (source `journal`), an accepted challenge into
`generated_challenges`, each with `source_trajectory_id`, and either row marks
the turn as mined. Read-only against the store.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from nightschool.challenges._model import CLUSTERS
from nightschool.challenges._unsafe import unsafe_reason
from nightschool.redact import redact_text
from nightschool.store import Store
from nightschool.trajectory import FORMAT_VERSION, Correction, Trajectory, apply_correction

__all__ = [
    "BRIEF_MAX_CHARS",
    "FAILURE_MAX_CHARS",
    "TAIL_MAX_CHARS",
    "JournalCandidate",
    "brief_for",
    "cluster_hint",
    "find_candidates",
    "unsafe_reason",
]

BRIEF_MAX_CHARS = 1_500
"""Upper bound on `brief_for`'s text, characters: enough for a request and its
failure, small enough for a 1.5B generator's context beside its instructions."""

FAILURE_MAX_CHARS = 800
"""Upper bound on `JournalCandidate.failure`, characters."""

TAIL_MAX_CHARS = 300
"""Characters kept from the end of the final response or the last tool error."""

_PAGE = 100
"""Rows read per query while filtering candidates."""

_LAST_RESORT_CLUSTER = "python_general"


@dataclass(frozen=True)
class JournalCandidate:
    """One failed chat turn that may seed a challenge; every text is redacted.

    Attributes:
        trajectory_id: id of the chat turn (`trajectories.id`).
        timestamp: when the turn was recorded (timezone-aware UTC).
        request: the user's request, redacted (`redact_text`), untruncated.
        failure: why the turn failed, redacted, at most `FAILURE_MAX_CHARS`:
            the effective failure reason, the user's follow-up message for a
            user correction, and a tail (`TAIL_MAX_CHARS`) of the last tool
            error or else of the final response.
        cluster_hint: best-guess cluster from `CLUSTERS` (`cluster_hint` of
            the request; of the failure text when no keyword in the request
            matches).
        signal: what failed the turn: the source of the correction that counts
            (`user_correction`, `validator`, ...), else the turn's own
            `extra["failure_source"]` (`heuristic`, `verifier`), else `recorded`.
    """

    trajectory_id: str
    timestamp: datetime
    request: str
    failure: str
    cluster_hint: str | None
    signal: str

    def refusal(self) -> str | None:
        """`unsafe_reason` of the request and the failure text together, or None."""
        return unsafe_reason(f"{self.request}\n{self.failure}")


# -- candidate selection --------------------------------------------------------

_CANDIDATES_SQL = """
    SELECT t.id, t.record, t.correction, t.session_id, t.timestamp
    FROM trajectories_effective t
    WHERE t.task_kind = 'chat' AND t.outcome = 'failed'
      AND NOT EXISTS (SELECT 1 FROM generated_challenges g
                      WHERE g.source_trajectory_id = t.id)
      AND NOT EXISTS (SELECT 1 FROM challenge_rejections r
                      WHERE r.source_trajectory_id = t.id)
    ORDER BY t.timestamp DESC, t.id DESC
    LIMIT ? OFFSET ?"""

_FOLLOW_UP_SQL = """
    SELECT json_extract(record, '$.user_request') FROM trajectories
    WHERE session_id = ? AND task_kind = 'chat' AND timestamp > ?
    ORDER BY timestamp, id LIMIT 1"""


def find_candidates(
    store: Store, *, limit: int = 20, exclude_ids: Collection[str] = ()
) -> list[JournalCandidate]:
    """Failed chat turns not yet mined, newest first.

    A turn qualifies when its task kind is `chat`, its effective outcome (after
    corrections, view `trajectories_effective`) is `failed`, its id is neither
    in `exclude_ids` nor any row's `source_trajectory_id` in
    `generated_challenges` or `challenge_rejections`, and its request is not
    blank. Safety is not judged here: call `JournalCandidate.refusal` (or
    `unsafe_reason`) before generating, and record a refusal as a
    `challenge_rejections` row so the turn is not offered again.

    Args:
        store: the open store; only read.
        limit: at most this many candidates; 0 or less gives `[]`.
        exclude_ids: trajectory ids to skip (e.g. in flight in this run).

    Returns:
        Up to `limit` candidates, newest first (ties by id, descending).

    Raises:
        StoreError: from the store, when the database cannot be read.
    """
    if limit <= 0:
        return []
    excluded = set(exclude_ids)
    found: list[JournalCandidate] = []
    offset = 0
    while len(found) < limit:
        rows = store.query(_CANDIDATES_SQL, (_PAGE, offset))
        offset += len(rows)
        for traj_id, record, correction, session_id, epoch in rows:
            if traj_id in excluded:
                continue
            excluded.add(traj_id)  # a row appended meanwhile shifts pages: no repeats
            candidate = _candidate(store, record, correction, session_id, epoch)
            if candidate is not None:
                found.append(candidate)
                if len(found) == limit:
                    break
        if len(rows) < _PAGE:
            break
    return found


def _candidate(
    store: Store, record: str, correction: str | None, session_id: str, epoch: float
) -> JournalCandidate | None:
    trajectory = Trajectory.model_validate_json(record)
    if trajectory.format_version > FORMAT_VERSION:
        return None  # written by a newer nightschool; not ours to interpret
    trajectory = apply_correction(
        trajectory, Correction.model_validate_json(correction) if correction else None
    )
    request = redact_text(trajectory.user_request).strip()
    if not request:
        return None
    signal = _signal(trajectory)
    follow_up = None
    if signal == "user_correction" and session_id:
        rows = store.query(_FOLLOW_UP_SQL, (session_id, epoch))
        follow_up = rows[0][0] if rows and rows[0][0] else None
    failure = _failure_text(trajectory, follow_up)
    return JournalCandidate(
        trajectory_id=trajectory.id,
        timestamp=trajectory.timestamp,
        request=request,
        failure=failure,
        cluster_hint=_keyword_cluster(request) or cluster_hint(failure),
        signal=signal,
    )


def _signal(trajectory: Trajectory) -> str:
    correction: Any = trajectory.extra.get("correction")
    if isinstance(correction, dict) and correction.get("source"):
        return str(correction["source"])
    source = trajectory.extra.get("failure_source")
    return str(source) if source else "recorded"


def _failure_text(trajectory: Trajectory, follow_up: str | None) -> str:
    parts = [f"Failure: {trajectory.failure_reason or 'marked failed'}"]
    if follow_up:
        parts.append(f"User's follow-up: {_clip(follow_up.strip(), TAIL_MAX_CHARS)}")
    errors = [call for call in trajectory.tool_calls if call.error]
    if errors:
        last = errors[-1]
        parts.append(f"Last tool error ({last.name}): {_tail(last.error or '', TAIL_MAX_CHARS)}")
    elif trajectory.final_response.strip():
        parts.append(f"Reply ended: {_tail(trajectory.final_response.strip(), TAIL_MAX_CHARS)}")
    return _clip(redact_text("\n".join(parts)), FAILURE_MAX_CHARS)


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: max(limit - 1, 0)].rstrip() + "…"


def _tail(text: str, limit: int) -> str:
    return text if len(text) <= limit else "…" + text[-(limit - 1) :].lstrip()


# -- cluster hints --------------------------------------------------------------

_CLUSTER_RULES: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "sql",
        (
            r"\bsql\b",
            r"\bsqlite3?\b",
            r"\bpostgres(?:ql)?\b",
            r"\bmysql\b",
            r"\bselect\b[^;]{1,200}?\bfrom\b",
            r"\bgroup\s+by\b",
            r"\b(?:inner|left|right|outer|cross)\s+join\b",
            r"\binsert\s+into\b",
            r"\bcreate\s+table\b",
            r"\bprimary\s+key\b",
        ),
    ),
    (
        "bash",
        (
            r"\bbash\b",
            r"\bshell\b",
            r"\bawk\b",
            r"\bsed\b",
            r"\bgrep\b",
            r"\bxargs\b",
            r"\bcommand[- ]line\b",
            r"\bcron(?:tab)?\b",
            r"\w\.sh\b",
            r"\bpipe(?:line)?s?\b",
        ),
    ),
    (
        "regex_parse",
        (
            r"\bregex(?:es|p)?\b",
            r"\bregular\s+expressions?\b",
            r"\bre\.(?:match|search|sub|findall|finditer|compile|split|fullmatch)\b",
            r"\bpars(?:e|es|er|ing)\b",
            r"\blog\s+(?:lines?|files?)\b",
        ),
    ),
    (
        "concurrency",
        (
            r"\bconcurren(?:t|cy)\b",
            r"\bthread(?:s|ing|ed)?\b",
            r"\basync(?:io)?\b",
            r"\bawait\b",
            r"\bmultiprocessing\b",
            r"\bmutex(?:es)?\b",
            r"\brace\s+conditions?\b",
            r"\bdeadlocks?\b",
            r"\bsemaphores?\b",
            r"\bparallel\b",
            r"\blocks?\b",
        ),
    ),
    (
        "data_analysis",
        (
            r"\bcsv\b",
            r"\bpandas\b",
            r"\bdata\s*frames?\b",
            r"\bnumpy\b",
            r"\bgroupby\b",
            r"\baggregat(?:e|es|ed|ion)\b",
            r"\b(?:mean|median|average|std|percentiles?)\b",
            r"\bstatistics\b",
            r"\bdata\s+analysis\b",
            r"\bspreadsheet\b",
        ),
    ),
    (
        "algo",
        (
            r"\balgorithms?\b",
            r"\bsort(?:s|ed|ing)?\b",
            r"\bbinary\s+search\b",
            r"\bgraphs?\b",
            r"\b(?:dijkstra|bfs|dfs|knapsack|fibonacci|permutations?|primes?)\b",
            r"\bdynamic\s+programming\b",
            r"\brecursi(?:on|ve)\b",
            r"\bshortest\s+path\b",
            r"\b(?:binary\s+)?trees?\b",
            r"\bheaps?\b",
            r"\blinked\s+lists?\b",
            r"\bintervals?\b",
            r"\bcomplexity\b",
        ),
    ),
    (
        "web_automation",
        (
            r"\bplaywright\b",
            r"\bselenium\b",
            r"\b(?:headless\s+)?browser\b",
            r"\bweb\s*pages?\b",
            r"\bhtml\s+forms?\b",
            r"\bscrap(?:e|es|ed|ing|er)\b",
            r"\bclick(?:s|ed|ing)?\s+(?:on\s+)?(?:the\s+)?(?:button|link)\b",
            r"\bcss\s+selectors?\b",
            r"\blog\s*in\s+(?:form|page)\b",
        ),
    ),
)
"""Keyword rules per cluster, in tie-break order: the cluster with most distinct
rules matching wins, an earlier cluster wins a tie. Hand-picked from the
template bank's own vocabulary; no measured accuracy."""

_CLUSTER_PATTERNS = tuple(
    (name, tuple(re.compile(p, re.IGNORECASE) for p in patterns))
    for name, patterns in _CLUSTER_RULES
)


def cluster_hint(text: str) -> str | None:
    """Best-guess cluster of `text` by keyword rules (`_CLUSTER_RULES`).

    Args:
        text: a request or failure description, any length.

    Returns:
        The cluster (one of `CLUSTERS`) with the most distinct keyword rules
        matching, an earlier one in `sql, bash, regex_parse, concurrency,
        data_analysis, algo, web_automation` winning a tie; `python_general` when none
        matches and the text is not blank; None for blank text.
    """
    if not text.strip():
        return None
    return _keyword_cluster(text) or _LAST_RESORT_CLUSTER


def _keyword_cluster(text: str) -> str | None:
    """The keyword rules' winner, or None when no rule matches."""
    best, best_hits = None, 0
    for name, patterns in _CLUSTER_PATTERNS:
        hits = sum(1 for pattern in patterns if pattern.search(text))
        if hits > best_hits:
            best, best_hits = name, hits
    return best if best in CLUSTERS else None


# -- the generator's brief ------------------------------------------------------

_BRIEF_HEAD = (
    "A user's chat turn failed. Write a NEW practice challenge that exercises the "
    "same skill, so that this kind of request goes right next time."
)
_BRIEF_RULES = (
    "Rules: the task must be self-contained and offline: no network access, no real "
    "user data (invent small sample inputs), no credentials, no destructive "
    "operations (nothing deleted or overwritten outside the task's own workspace). "
    "Do not copy the request word for word; keep its skill and its difficulty."
)


def brief_for(candidate: JournalCandidate) -> str:
    """The brief the challenge generator receives for one candidate.

    Holds the redacted request, what went wrong, the cluster hint, and the
    instruction to practise the same skill in a self-contained offline task
    (no network, no real user data, no destructive operations). The request
    and failure are clipped (request first, about two thirds of the room) so
    the whole brief is at most `BRIEF_MAX_CHARS` characters.

    Args:
        candidate: from `find_candidates`; its texts are already redacted.

    Returns:
        Plain text, `len(result) <= BRIEF_MAX_CHARS`.
    """
    hint = f"\nSkill cluster (a guess): {candidate.cluster_hint}" if candidate.cluster_hint else ""
    frame = f"{_BRIEF_HEAD}\n\nThe request:\n\n\nWhat went wrong:\n{hint}\n\n{_BRIEF_RULES}"
    room = max(BRIEF_MAX_CHARS - len(frame), 0)
    failure_room = min(len(candidate.failure), room // 3)
    request = _clip(candidate.request, room - failure_room)
    failure = _clip(candidate.failure, room - len(request))
    brief = (
        f"{_BRIEF_HEAD}\n\nThe request:\n{request}\n\nWhat went wrong:\n{failure}{hint}"
        f"\n\n{_BRIEF_RULES}"
    )
    return brief[:BRIEF_MAX_CHARS]
