"""The text under redaction: a `Doc` with a lower-cased twin, spans, token characters."""

from __future__ import annotations

import string

SECRET = "<REDACTED_SECRET>"
"""What replaces a password, credential or the value under a secret-named key."""

TOKEN_CHARS = frozenset(string.ascii_letters + string.digits + "_-")
"""Characters of a token: a secret match must start and end at the edge of a run of these."""

ASCII_LOWER = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)

Span = tuple[int, int, str]
"""(start, end, replacement) in the current text of a `Doc`."""


class Doc:
    """The text being redacted plus a lower-cased copy with the same indices."""

    __slots__ = ("_low", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self._low: str | None = None

    @property
    def low(self) -> str:
        """`text` lower-cased, index for index (ASCII-only folding when needed)."""
        if self._low is None:
            low = self.text.lower()
            if len(low) != len(self.text):  # e.g. 'İ' lower-cases to two characters
                low = self.text.translate(ASCII_LOWER)
            self._low = low
        return self._low

    def set(self, text: str) -> None:
        """Replace the text (the lower-cased copy is rebuilt on demand)."""
        if text is not self.text:
            self.text = text
            self._low = None

    def splice(self, spans: list[Span]) -> None:
        """Replace the given (start, end, replacement) spans.

        Of spans that start together the longest wins; a span that starts
        inside an earlier one only stretches it (its tail is replaced too),
        so two rules that find overlapping parts of one secret leave none of it.
        """
        if not spans:
            return
        spans.sort(key=lambda span: (span[0], -span[1]))
        out: list[str] = []
        last = 0
        for start, end, replacement in spans:
            if start < last:
                last = max(last, end)
                continue
            out.append(self.text[last:start])
            out.append(replacement)
            last = end
        out.append(self.text[last:])
        self.set("".join(out))


def left_edge_ok(text: str, start: int) -> bool:
    """True when `start` is not inside a token (the character before is not a token character)."""
    return start == 0 or text[start - 1] not in TOKEN_CHARS


def line_bounds(text: str, at: int, reach: int) -> tuple[int, int]:
    """(start, end) of the line holding index `at`, without the newline, cut to `reach` each side.

    The cut keeps a rule that looks at the line around each of many hits
    linear on a text that is one long line.
    """
    low = max(0, at - reach)
    end = text.find("\n", at, at + reach)
    start = text.rfind("\n", low, at) + 1
    return start or low, min(len(text), at + reach) if end < 0 else end
