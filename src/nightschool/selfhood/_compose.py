"""First-person sentences composed deterministically from `PhaseFacts` (no model call)."""

from __future__ import annotations

from collections.abc import Sequence

from nightschool.selfhood._facts import PhaseFacts, TemplateStruggle

MAX_NAMED = 3
"""Most clusters, templates or phases named in one sentence; the rest are counted."""


def plural(count: int, singular: str, plural_form: str | None = None) -> str:
    """`"1 skill"`, `"3 skills"`; `plural_form` for irregular nouns ("entries")."""
    noun = singular if count == 1 else (plural_form or singular + "s")
    return f"{count} {noun}"


def some(count: int, singular: str, plural_form: str | None = None) -> str:
    """Like `plural`, but "a skill" / "an entry" for one."""
    if count != 1:
        return plural(count, singular, plural_form)
    article = "an" if singular[:1].lower() in "aeiou" else "a"
    return f"{article} {singular}"


def join_names(names: Sequence[str], *, limit: int = MAX_NAMED) -> str:
    """`a`, `a and b`, `a, b and c`, `a, b, c and 2 more`."""
    shown = list(names[:limit])
    rest = len(names) - len(shown)
    if rest:
        shown.append(f"{rest} more")
    if len(shown) <= 1:
        return "".join(shown)
    return ", ".join(shown[:-1]) + " and " + shown[-1]


def sentence(text: str) -> str:
    """`text` stripped, with a capital first letter and a closing full stop."""
    text = " ".join(text.split())
    if not text:
        return ""
    text = text[0].upper() + text[1:]
    return text if text[-1] in ".!?" else text + "."


def compose_entry(facts: PhaseFacts) -> str:
    """The diary entry for `facts`: first-person sentences, "" when `facts.empty`.

    Order: practice, struggles, learning, playbook clean-up, chat, generated
    challenges, phase problems, then the caller's notes. Example: "I practised
    4 challenges (algo ×2, sql ×2) and passed 3. algo.shortest_path still beats
    me after 3 attempts. I learned a verified skill for sql.customer_totals."
    """
    parts = [
        *_practice(facts),
        *_struggles(facts.struggles),
        *_learning(facts),
        *_chat(facts),
        *_challenges(facts),
        *_problems(facts),
        *(sentence(note) for note in facts.notes),
    ]
    return " ".join(part for part in parts if part)


def _passed(passes: int, runs: int) -> str:
    if passes == runs:
        return "all of them" if runs > 2 else ("both" if runs == 2 else "it")
    if passes == 0:
        return "none of them" if runs > 2 else ("neither" if runs == 2 else "")
    return str(passes)


def _practice(facts: PhaseFacts) -> list[str]:
    runs, passes = facts.runs, facts.passes
    if not runs:
        return []
    if runs == 1:
        cluster = facts.practice[0].cluster
        verdict = "passed it" if passes else "failed it"
        return [f"I practised one {cluster} challenge and {verdict}."]
    outcome = f"passed {_passed(passes, runs)}"
    if len(facts.practice) == 1:
        cluster = facts.practice[0].cluster
        return [f"I practised {runs} {cluster} challenges and {outcome}."]
    ranked = sorted(facts.practice, key=lambda p: (-p.runs, p.cluster))
    breakdown = ", ".join(f"{p.cluster} ×{p.runs}" for p in ranked[:4])
    if len(ranked) > 4:
        breakdown += f" and {len(ranked) - 4} more"
    return [f"I practised {runs} challenges ({breakdown}) and {outcome}."]


def _struggles(struggles: Sequence[TemplateStruggle]) -> list[str]:
    open_ = [s for s in struggles if not s.solved]
    cracked = [s for s in struggles if s.solved]
    out = [
        f"{s.template} still beats me after {plural(s.attempts, 'attempt')}."
        for s in open_[:MAX_NAMED]
    ]
    if len(open_) > MAX_NAMED:
        out.append(f"{plural(len(open_) - MAX_NAMED, 'more template')} beat me too.")
    if cracked:
        names = join_names([s.template for s in cracked])
        after = (
            "an earlier failure" if sum(s.failures for s in cracked) == 1 else "earlier failures"
        )
        out.append(f"I cracked {names} after {after}.")
    return out


def _learning(facts: PhaseFacts) -> list[str]:
    out: list[str] = []
    verified_skills = facts.skills_verified
    if verified_skills:
        templates = list(facts.verified_skill_templates)
        noun = "a verified skill" if verified_skills == 1 else f"{verified_skills} verified skills"
        out.append(
            f"I learned {noun} for {join_names(templates)}." if templates else f"I learned {noun}."
        )
    unverified_skills = facts.skills_new - verified_skills
    if unverified_skills > 0:
        out.append(f"I kept {some(unverified_skills, 'skill')} that I could not verify yet.")
    lessons, verified = facts.lessons_new, facts.lessons_verified
    if lessons and verified == lessons:
        noun = "a verified lesson" if lessons == 1 else f"{lessons} verified lessons"
        out.append(f"I learned {noun}.")
    elif lessons and verified:
        out.append(f"I learned {plural(lessons, 'lesson')}, {verified} of them verified.")
    elif lessons:
        verb = "is" if lessons == 1 else "are"
        out.append(f"I wrote {some(lessons, 'lesson')} that {verb} not verified yet.")
    if facts.retracted:
        entries = some(facts.retracted, "playbook entry", "playbook entries")
        out.append(f"I retracted {entries} that turned out wrong.")
    if facts.evicted:
        entries = some(facts.evicted, "old playbook entry", "old playbook entries")
        out.append(f"I let go of {entries} to keep my playbook small.")
    return out


def _chat(facts: PhaseFacts) -> list[str]:
    turns, failed = facts.chat_turns, facts.chat_failed
    if not turns:
        return []
    if not failed:
        return [f"I answered {plural(turns, 'chat turn')} with no failure recorded."]
    if turns == 1:
        return ["My one chat turn failed."]
    return [f"{failed} of my {turns} chat turns failed."]


def _challenges(facts: PhaseFacts) -> list[str]:
    accepted, rejected = facts.challenges_accepted, facts.challenges_rejected
    if accepted and rejected:
        return [
            f"I wrote {some(accepted, 'new challenge')} and discarded {rejected} "
            "that failed my checks."
        ]
    if accepted:
        return [f"I wrote {some(accepted, 'new challenge')} for myself."]
    if rejected:
        verb = "it" if rejected == 1 else "them"
        return [f"I drafted {some(rejected, 'challenge')} but my checks discarded {verb}."]
    return []


def _problems(facts: PhaseFacts) -> list[str]:
    out = []
    for problem in facts.phase_problems[:MAX_NAMED]:
        if problem.status == "interrupted":
            out.append(f"My {problem.phase} phase was interrupted.")
        else:
            detail = f" ({problem.detail.rstrip('.')})" if problem.detail else ""
            out.append(f"My {problem.phase} phase failed{detail}.")
    rest = len(facts.phase_problems) - MAX_NAMED
    if rest > 0:
        out.append(f"{plural(rest, 'more phase')} did not finish well.")
    return out
