"""Helpers shared by the `regex_parse` templates: a seed's task against its family."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from nightschool.challenges._templates import _kit

LOG_FORMATS = ("fmt_bracket", "fmt_colon", "fmt_kv")
"""The line formats of the `error_lines` logs (program and starter): `LEVEL [MODULE] MESSAGE`,
`[LEVEL] MODULE: MESSAGE`, `key=value` pairs."""


def separates(result: Callable[[set[str]], object], own: set[str], *axes: Sequence[str]) -> bool:
    """True when the seed's data tells its task apart from every other task over `axes`.

    Args:
        result: the emulated expected output for a set of feature tags (the
            seed's data is bound in it).
        own: the seed's tags (its `variant` tags plus twist tags).
        axes: the axes whose other tags to try; the tags of `own` outside them stay.

    Returns:
        False if some other combination of tags gives the same result as `own`;
        a combination whose emulation raises counts as different (that program
        would crash or print something else).
    """
    return _kit.separates(result, own, _kit.family_rivals(own, *axes))
