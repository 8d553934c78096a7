"""Outcome heuristics for chat turns: promote `unknown` to `failed`, never anything else.

Chat turns have no validator, so without these the Reflector is blind to
interactive sessions (seed 002, "outcome heuristics"). Signals, any one of
which promotes a just-assembled turn:

1. an abort marker (`[ATTEMPT_ABORTED...`, e.g. the agent loop's step-limit
   marker) in `final_response`;
2. a browser sequence aborted: a `browser` call whose result or error holds
   `SEQUENCE_ABORTED_BANNER` (a failed goto, a failed sub-action under
   `stop_on_error`, the time limit);
3. the same normalised (tool, error) pair at least `REPEATED_ERROR_THRESHOLD`
   times in one turn;
4. the same action (tool name and identical arguments) at least
   `REPEATED_ACTION_THRESHOLD` times in one turn;
5. browser selector thrash: the same selector attempted at least
   `SELECTOR_THRASH_THRESHOLD` times in one turn, over all `browser` calls,
   each `interact` sub-action counted (the rule before cannot see it: the
   calls around one selector differ).

Conservative on purpose (false positives flood the playbook with bad
reflections): an existing `passed`/`failed` outcome is never overruled, a
trajectory ended by an infrastructure error is never touched, and one tool
error alone never fires.
"""

from __future__ import annotations

import json
import logging
import re
from collections import Counter

from nightschool.browser import BROWSER_TOOL_NAME, SEQUENCE_ABORTED_BANNER, selectors_in
from nightschool.trajectory import Outcome, Trajectory

logger = logging.getLogger(__name__)

ABORT_MARKER_PREFIX = "[ATTEMPT_ABORTED"
"""Prefix shared by every in-band abort marker (seed 002: `[ATTEMPT_ABORTED_*]`)."""

STEP_LIMIT_MARKER = "[ATTEMPT_ABORTED_STEP_LIMIT]"
"""Marker the agent loop appends when a turn hits `max_steps` without an answer."""

REPEATED_ERROR_THRESHOLD = 3
"""Same normalised (tool, error) this many times in a turn → failed (PRIOR-ART.md)."""

REPEATED_ACTION_THRESHOLD = 3
"""Same tool with identical arguments this many times in a turn → failed. PRIOR-ART
used 4 for one browser selector (3 was below its bar); an identical code or command
run three times has no new information, so 3 here."""

SELECTOR_THRASH_THRESHOLD = 4
"""Same browser selector this many times in a turn → failed (seed 002: "three
repeats of the same selector is below threshold"; the incident behind it fired
one click selector across 8 nested interact calls)."""

_SPACE = re.compile(r"\s+")
_ERROR_PREFIX = re.compile(r"^(?:error\s*:\s*)+", re.IGNORECASE)


def normalise_error(error: str) -> str:
    """Error text as a repetition key: whitespace squashed, lower-cased, leading "error:" cut."""
    squashed = _SPACE.sub(" ", error).strip().lower()
    return _ERROR_PREFIX.sub("", squashed).strip()


def _action_key(name: str, arguments: object) -> str:
    try:
        args = json.dumps(arguments, sort_keys=True, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        args = repr(arguments)
    return f"{name}\0{args}"


def _signal(trajectory: Trajectory) -> str | None:
    """The first heuristic that fires for this turn, as a failure reason, or None."""
    final = trajectory.final_response or ""
    at = final.find(ABORT_MARKER_PREFIX)
    if at >= 0:
        end = final.find("]", at)
        marker = final[at : end + 1] if end >= 0 else final[at : at + 60]
        return f"abort marker {marker} in the final response"
    browser_calls = [call for call in trajectory.tool_calls if call.name == BROWSER_TOOL_NAME]
    for call in browser_calls:
        text = f"{call.error or ''}\n{call.result or ''}"
        at = text.find(SEQUENCE_ABORTED_BANNER)
        if at >= 0:
            return f"browser sequence aborted: {text[at:].splitlines()[0][:200]}"
    examples = trajectory.extra.get("examples")
    if (
        isinstance(examples, dict)
        and examples.get("passed") is False
        and not examples.get("repaired")
    ):
        return f"the reply's code fails the request's own example: {examples.get('error', '')}"[
            :300
        ]
    errors = Counter(
        (call.name, normalise_error(call.error)) for call in trajectory.tool_calls if call.error
    )
    if errors:
        (tool, error), count = errors.most_common(1)[0]
        if count >= REPEATED_ERROR_THRESHOLD:
            return f"same {tool} error {count} times in one turn: {error[:200]}"
    actions = Counter(_action_key(c.name, c.arguments) for c in trajectory.tool_calls)
    if actions:
        key, count = actions.most_common(1)[0]
        if count >= REPEATED_ACTION_THRESHOLD:
            return f"same {key.split(chr(0))[0]} call repeated {count} times in one turn"
    selectors = Counter(s for call in browser_calls for s in selectors_in(call.arguments))
    if selectors:
        selector, count = selectors.most_common(1)[0]
        if count >= SELECTOR_THRASH_THRESHOLD:
            return f"browser selector {selector[:100]!r} attempted {count} times in one turn"
    return None


def classify_chat_outcome(trajectory: Trajectory) -> tuple[Outcome, str | None]:
    """The outcome a just-assembled chat turn should carry, with its failure reason.

    Args:
        trajectory: the turn, fully assembled (tool calls, final response).

    Returns:
        `(trajectory.outcome, trajectory.failure_reason)` unchanged when the
        outcome is already `passed`/`failed`, when the turn ended on an
        infrastructure error, or when no heuristic fires; else
        `(Outcome.FAILED, "<why>")`. Never raises: a classification error is
        logged at debug and leaves the outcome as it was.
    """
    unchanged = (trajectory.outcome, trajectory.failure_reason)
    if trajectory.outcome != Outcome.UNKNOWN or trajectory.infrastructure_error:
        return unchanged
    try:
        reason = _signal(trajectory)
    except Exception:  # classification must never break a turn
        logger.debug("chat outcome heuristics failed on %s", trajectory.id, exc_info=True)
        return unchanged
    return (Outcome.FAILED, reason) if reason else unchanged


def apply_chat_outcome_heuristics(trajectory: Trajectory) -> Trajectory:
    """Return `trajectory` with `classify_chat_outcome` applied (a copy when it changed).

    A promoted copy also carries `extra["failure_source"] = "heuristic"`.
    """
    outcome, reason = classify_chat_outcome(trajectory)
    if outcome == trajectory.outcome and reason == trajectory.failure_reason:
        return trajectory
    extra = {**trajectory.extra, "failure_source": "heuristic"}
    return trajectory.model_copy(
        update={"outcome": outcome, "failure_reason": reason, "extra": extra}
    )
