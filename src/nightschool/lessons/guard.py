"""The generalization guard and the small text helpers every lesson maker shares.

Used by the self-play lesson extractor (`nightschool.lessons.extraction`), the
reflection sink (`nightschool.lessons.sink`) and skills from successes.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from nightschool.playbook import DOMAINS

GENERALIZATION_MIN_NGRAM = 6
"""A lesson sharing a run of this many tokens with its challenge is overfit (PRIOR-ART)."""

REFLECTION_CONFIDENCE = 0.4
"""Starting confidence of a lesson from a reflection: unverified, below a verified one."""

_TOKEN = re.compile(r"[a-z0-9_]+")

_DOMAIN_KEYWORDS: dict[str, tuple[str, ...]] = {
    "sql": ("sql", "sqlite", "query", "join", "select", "table", "database"),
    "regex_parse": ("regex", "regular expression", "parse", "pattern", "match", "log line"),
    "data_analysis": ("csv", "aggregate", "average", "total", "group", "revenue", "statistics"),
    "concurrency": ("thread", "lock", "queue", "concurrent", "parallel", "race", "async"),
    "bash": ("bash", "shell", "awk", "sed", "grep", "command line", "rename files"),
    "algo": ("algorithm", "interval", "shortest path", "graph", "sort", "top-k", "dijkstra"),
    "web_automation": ("playwright", "browser", "selector", "web page", "html form", "click"),
}


def tokens(text: str) -> list[str]:
    """Lower-case word tokens (letters, digits, underscore) of `text`."""
    return _TOKEN.findall(text.lower())


def _ngrams(words: Sequence[str], n: int) -> set[tuple[str, ...]]:
    return {tuple(words[i : i + n]) for i in range(len(words) - n + 1)}


def shared_run(text: str, sources: Iterable[str], n: int = GENERALIZATION_MIN_NGRAM) -> str | None:
    """Return the first run of `n` tokens that `text` shares with any source, or None."""
    mine = _ngrams(tokens(text), n)
    if not mine:
        return None
    for source in sources:
        common = mine & _ngrams(tokens(source), n)
        if common:
            return " ".join(min(common))
    return None


def generalization_problem(
    *,
    trigger: str,
    anti_pattern: str,
    correct_pattern: str,
    domains: Sequence[str],
    sources: Sequence[str],
    code_example: str = "",
) -> str | None:
    """Say why a candidate lesson does not generalise, or None if it passes the guard.

    Rejects (PRIOR-ART, seed 000): a lesson whose trigger, anti-pattern,
    correct pattern or code example shares a run of `GENERALIZATION_MIN_NGRAM`
    tokens with any of `sources` (the challenge prompt, setup and validator);
    empty domains; domains outside the taxonomy.
    """
    if not domains:
        return "no domains given"
    off = sorted(set(domains) - set(DOMAINS))
    if off:
        return f"domains outside the taxonomy: {', '.join(off)}"
    fields = {
        "trigger": trigger,
        "anti-pattern": anti_pattern,
        "correct pattern": correct_pattern,
        "code example": code_example,
    }
    for name, value in fields.items():
        run = shared_run(value, sources)
        if run:
            return f"{name} copies the challenge ({GENERALIZATION_MIN_NGRAM} tokens: {run!r})"
    return None


def guess_domains(text: str, cluster: str | None = None) -> list[str]:
    """Domains for a lesson: the cluster when it is in the taxonomy, else keyword matches.

    Falls back to `["python_general"]` when nothing matches.
    """
    if cluster in DOMAINS:
        return [str(cluster)]
    lowered = text.lower()
    found = [d for d, words in _DOMAIN_KEYWORDS.items() if any(w in lowered for w in words)]
    return found[:2] or ["python_general"]


def task_summary(request: str, max_words: int = 30) -> str:
    """The first sentence or line of a request, at most `max_words` words."""
    text = request.strip()
    first = re.split(r"(?<=[.!?])\s|\n", text, maxsplit=1)[0] if text else ""
    words = first.split()
    return " ".join(words[:max_words])
