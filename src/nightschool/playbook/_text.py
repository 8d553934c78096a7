"""Text helpers shared by the lexical and vector sides of the playbook.

`tokens` splits text the way SQLite's `unicode61` tokenizer does (runs of
Unicode letters and digits; `_` and punctuation separate), lower-cased.
`fts_query` turns arbitrary user text into a safe FTS5 MATCH expression: an
OR of double-quoted tokens, stopwords dropped. A quoted FTS5 string is always
a literal phrase, so `AND`, `NEAR`, `*`, `^`, `:`, `-`, parentheses or quotes in
the user's text can never form FTS5 syntax.
"""

from __future__ import annotations

import re
import unicodedata

TOKEN_RE = re.compile(r"[^\W_]+")
"""A token: a maximal run of Unicode letters and digits (as `unicode61` splits)."""

_STOPWORD_TEXT = """
    a about above after again against all am an and any are as at be because been before
    being below between both but by can could did do does doing down during each few for
    from further had has have having he her here hers herself him himself his how i if in
    into is it its itself just me more most my myself no nor not now of off on once only or
    other our ours ourselves out over own same she should so some such than that the their
    theirs them themselves then there these they this those through to too under until up
    very was we were what when where which while who whom why will with would you your
    yours yourself yourselves get got use using used want wants need needs make makes
    instead avoid dont doesn isn t s
"""
STOPWORDS = frozenset(_STOPWORD_TEXT.split())
"""English function words (plus lesson boilerplate such as `instead`, `avoid`).

They carry no topic: dropping them from FTS queries keeps BM25 candidate sets
small (a query term that matches most rows costs time and adds no ranking
signal) and keeps the hashing embedder focused on content words."""

MAX_QUERY_TOKENS = 32
"""At most this many distinct content tokens go into one FTS5 query (first ones kept)."""


def normalise(text: str) -> str:
    """NFKC-normalise, lower-case and collapse whitespace; used to compare triggers."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    return " ".join(tokens(folded, keep_stopwords=True))


def tokens(text: str, *, keep_stopwords: bool = False) -> list[str]:
    """Lower-cased tokens of `text` in order (duplicates kept).

    Args:
        text: any string.
        keep_stopwords: keep the words in `STOPWORDS` (default drops them).
    """
    found = TOKEN_RE.findall(unicodedata.normalize("NFKC", text).lower())
    if keep_stopwords:
        return found
    return [tok for tok in found if tok not in STOPWORDS]


def content_tokens(text: str) -> list[str]:
    """Distinct content tokens of `text` in order of appearance.

    A text of only stopwords falls back to its stopwords, so that "is it"
    still matches something rather than nothing.
    """
    picked = _distinct(tokens(text))
    return picked or _distinct(tokens(text, keep_stopwords=True))


def fts_query(text: str, *, max_tokens: int = MAX_QUERY_TOKENS) -> str:
    """Build a safe FTS5 MATCH expression from free text.

    Returns:
        `"tok1" OR "tok2" ...` over `content_tokens(text)` (first `max_tokens`
        kept), or "" when the text has no letter or digit.
    """
    return " OR ".join(f'"{tok}"' for tok in content_tokens(text)[:max_tokens])


def _distinct(items: list[str]) -> list[str]:
    return list(dict.fromkeys(items))
