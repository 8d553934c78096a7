"""What `nightschool dream` prints about its lessons and skills: per cycle, and at the end."""

from __future__ import annotations

from typing import Any


def lesson_line(outcome: Any) -> str | None:
    """One console line for a lesson extraction's `ExtractionOutcome`; None when nothing to say."""
    if outcome is None or outcome.status == "skipped":
        return None
    if outcome.status in ("written", "reinforced"):
        trigger = outcome.candidate.trigger if outcome.candidate else ""
        return (
            f"    [green]lesson {outcome.status}[/] {outcome.lesson_id} (verified): {trigger[:90]}"
        )
    if outcome.status == "waiting":
        return f"    [dim]lesson candidate waits: {outcome.reason[:140]}[/]"
    return f"    [dim]no lesson: {outcome.reason[:140]}[/]"


def skill_line(outcome: Any) -> str | None:
    """One console line for a passing cycle's `SkillOutcome`; None when nothing was written."""
    if outcome is None or outcome.status not in ("written", "reinforced"):
        return None
    if outcome.status == "reinforced":
        return f"    [dim]skill {outcome.skill_id} reinforced (same solution seen before)[/]"
    if outcome.waits:
        return (
            f"    [green]skill written[/] {outcome.skill_id} (unverified, waits: {outcome.reason})"
        )
    if outcome.comparison is None:
        return f"    [green]skill written[/] {outcome.skill_id} (unverified)"
    return f"    skill written {outcome.skill_id}, {_verdict(outcome)}"


def _verdict(outcome: Any) -> str:
    """A compared skill's verdict and evidence: `verified: fresh renderings 5/6 ... (test)`."""
    # function-local: CLI start-up time (lessons.verify loads scipy, ~1.1 s)
    from nightschool.lessons.verify import evidence

    c = outcome.comparison
    verdict = "[green]verified[/]" if outcome.verified else "[yellow]not verified[/]"
    test = f" ({c['test']})" if c.get("test") else ""  # no test when no pair was complete
    return f"{verdict}: fresh renderings {evidence(c)}{test}"


def caught_up_line(outcome: Any) -> str | None:
    """One console line for a comparison that waited for the budget and has now run."""
    if hasattr(outcome, "skill_id"):
        if outcome.comparison is None:
            return f"    [dim]waiting skill {outcome.skill_id}: {outcome.reason}[/]"
        return f"    skill {outcome.skill_id}, after waiting, {_verdict(outcome)}"
    if outcome.status in ("written", "reinforced"):
        trigger = outcome.candidate.trigger if outcome.candidate else ""
        return (
            f"    [green]lesson {outcome.status}[/] {outcome.lesson_id} (verified, after "
            f"waiting): {trigger[:70]}"
        )
    return f"    [dim]lesson candidate, after waiting, not kept: {outcome.reason[:220]}[/]"


def cycle_lines(cycle: Any) -> list[str]:
    """The lines under a cycle: its skill, its lesson, then the waiting candidates it compared."""
    lines = [skill_line(cycle.skill), lesson_line(cycle.lesson)]
    lines += [caught_up_line(outcome) for outcome in cycle.caught_up]
    return [line for line in lines if line]


def final_outcomes(results: list[Any]) -> tuple[list[Any], list[Any]]:
    """(lesson outcomes, skill outcomes) of a run, each candidate's last word.

    A candidate that waited for the verification budget appears twice: when
    its cycle ran (`waiting`, or a skill that `waits`) and when it was
    verified (`CycleResult.caught_up` of a later cycle); only the second
    counts. A skill is identified by its id; a lesson candidate by itself.
    """
    lessons: list[Any] = []
    skills: dict[str, Any] = {}
    for cycle in results:
        for outcome in (cycle.skill, cycle.lesson, *cycle.caught_up):
            if outcome is None:
                continue
            if hasattr(outcome, "skill_id"):
                if outcome.skill_id:
                    skills[outcome.skill_id] = outcome
            elif outcome.status == "waiting":
                lessons.append(outcome)
            else:
                lessons = [o for o in lessons if not _same_candidate(o, outcome)]
                lessons.append(outcome)
    return lessons, list(skills.values())


def _same_candidate(waiting: Any, outcome: Any) -> bool:
    return bool(waiting.status == "waiting" and waiting.candidate == outcome.candidate)


def kept_summary(results: list[Any]) -> list[str]:
    """What a dream run kept, what it threw away and why, and what that changes for the agent.

    Args:
        results: the run's `CycleResult`s.

    Returns:
        Lines for the console: one per kept lesson or skill, one counting what
        was not kept (by reason), and one `what it changed` sentence (what
        still waits for the verification budget: `budget_lines`).
    """
    from nightschool.lessons.verify import evidence  # function-local: see _verdict

    lines: list[str] = []
    outcomes, skill_outcomes = final_outcomes(results)
    lessons = [o for o in outcomes if o.lesson_id]
    kept = [s for s in skill_outcomes if s.status in ("written", "reinforced")]
    skills = [s for s in kept if not s.earlier]
    earlier = [s for s in kept if s.earlier]
    for outcome in lessons:
        trigger = outcome.candidate.trigger if outcome.candidate else ""
        c = outcome.comparison or {}
        said = f" ({evidence(c)})" if c else ""
        lines.append(f"kept: lesson {outcome.lesson_id}, verified{said}: {trigger[:80]}")
    for skill in skills:
        state = "verified" if skill.verified else "not verified"
        lines.append(f"kept: skill {skill.skill_id} ({skill.status}, {state})")
    if earlier:
        lines.append(
            f"compared: {len(earlier)} skill(s) earlier dreams left waiting, "
            f"{sum(s.verified for s in earlier)} verified"
        )
    dropped: dict[str, int] = {}
    for o in outcomes:
        if o.status in ("rejected", "unparseable"):
            why = o.reason.split(":")[0] if o.status == "rejected" else "unparseable"
            dropped[f"lesson: {why}"] = dropped.get(f"lesson: {why}", 0) + 1
    for s in skill_outcomes:
        if s.status == "rejected":
            dropped["skill: rejected"] = dropped.get("skill: rejected", 0) + 1
    if dropped:
        lines.append("not kept: " + ", ".join(f"{n} {why}" for why, n in sorted(dropped.items())))
    verified_skills = sum(s.verified for s in skills)
    if not lessons and not skills:
        lines.append("what it changed: nothing; the agent answers every request as before.")
    else:
        parts = []
        if lessons:
            parts.append(f"{len(lessons)} verified lesson(s) are shown on similar requests")
        if skills:
            parts.append(
                f"{len(skills)} skill(s) ({verified_skills} verified) are shown as worked "
                "examples when the same task comes again (in dream: its own template only)"
            )
        lines.append(
            "what it changed: " + "; ".join(parts) + ". Whether that helps on new tasks is "
            "measured by `nightschool eval stream`, not by this run."
        )
    return lines


def budget_lines(loop: Any) -> list[str]:
    """Verification's share of the run against the budget (`--verify-share`), and what waits.

    Args:
        loop: the run's `DreamLoop` (its `budget`, `waiting` queue and `resumed`).

    Returns:
        No line without a budget; else the share line (with the candidates
        the run took over from earlier dreams) and, when some still wait, a
        line saying where they are kept.
    """
    budget = loop.budget
    if budget is None:
        return []
    resumed, dropped = loop.resumed or (0, 0)
    earlier = f"; {resumed} waiting candidate(s) taken over from earlier dreams" if resumed else ""
    if dropped:
        earlier += f" ({dropped} older lesson candidate(s) dropped)"
    if budget.earlier.elapsed_s > 0:
        total = budget.total()
        earlier += (
            f"; with the last day's earlier dreams {total.spent_s / total.elapsed_s:.0%} of "
            f"{total.elapsed_s:.0f} s"
        )
    lines = [
        f"verification: {budget.spent_s:.0f} s of {budget.elapsed_s:.0f} s "
        f"({budget.used_share():.0%}; share {budget.share:.0%}), {budget.comparisons} "
        f"comparison(s){earlier}"
    ]
    skills, lessons = loop.waiting.count("skill"), loop.waiting.count("lesson")
    if skills or lessons:
        parts = []
        if skills:
            parts.append(f"{skills} skill(s) (stored unverified; idle time verifies them too)")
        if lessons:
            parts.append(f"{lessons} lesson candidate(s) (not shown until verified)")
        lines.append("still waiting for verification, kept for the next dream: " + ", ".join(parts))
    return lines
