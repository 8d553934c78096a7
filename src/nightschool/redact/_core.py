"""The redaction pipeline: the rule order, the short-string shortcut and the dict walker.

`nightschool.redact` re-exports the public names; its docstring lists the rules
and where they come from. The rules themselves live in `_assignments`,
`_personal` and `_providers`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from nightschool.redact._assignments import anchors as _assignment_anchors
from nightschool.redact._assignments import (
    bearer_rule,
    cli_rule,
    cookie_rule,
    kv_rule,
    name_value_rule,
    uri_rule,
)
from nightschool.redact._blocks import anchors as _block_anchors
from nightschool.redact._blocks import k8s_secret_rule
from nightschool.redact._doc import SECRET, Doc
from nightschool.redact._keys import is_secret_key
from nightschool.redact._personal import (
    EMAIL,
    IP,
    ONION,
    USER,
    email_rule,
    home_rule,
    ip_rule,
    onion_rule,
)
from nightschool.redact._personal import anchors as _personal_anchors
from nightschool.redact._providers import (
    API_KEY,
    JWT,
    PRIVATE_KEY,
    jwt_rule,
    pem_rule,
    shortcuts,
    token_rule,
)

SECRET_PLACEHOLDER = SECRET
"""What replaces a password, credential or the value under a secret-named key."""

PLACEHOLDERS = (API_KEY, EMAIL, IP, JWT, ONION, PRIVATE_KEY, SECRET_PLACEHOLDER, USER)
"""Every placeholder `redact_text` can emit; none of them matches any rule."""

_RULES: tuple[Callable[[Doc], None], ...] = (
    # first: the rules after it read context words ('mysql', 'openssl') on the
    # line, and a home directory's user name can be one ('/home/mysql'); rewritten
    # later, a second pass would read a different line (idempotence property test)
    home_rule,
    pem_rule,
    jwt_rule,
    token_rule,
    uri_rule,
    cookie_rule,
    name_value_rule,
    k8s_secret_rule,
    kv_rule,
    cli_rule,
    bearer_rule,
    onion_rule,
    email_rule,
    ip_rule,
)

_SHORT = 64
# Short strings (roles, ids, tool names) mostly stop at this one search.
_ANY_ANCHOR = re.compile(
    "|".join(
        [
            "-----begin",
            "---- begin ssh2",
            "putty-user-key-file-",
            "eyj",
            *shortcuts(),
            *_assignment_anchors(),
            *_block_anchors(),
            *_personal_anchors(),
        ]
    )
)
"""Searched in the lower-cased text of strings shorter than `_SHORT`: every
rule's anchor. Running the rules costs ~10 us even on 'passed'; this search
~0.5 us, and the many short strings of a trajectory record (roles, ids, tool
names) mostly stop here. Longer strings go straight to the rules."""


def redact_text(text: str) -> str:
    """Replace secrets and personal data in free text with placeholders.

    See the module docstring for the rules and their order; the IPv4 rule is
    spelled out in `IPV4_RULE`. Surrounding text is kept character for
    character and in order; only matched spans change.

    Args:
        text: any string (a log, a tool output, a model message, code).

    Returns:
        The text with each match replaced by one of `PLACEHOLDERS`
        (`<REDACTED_API_KEY>`, `<REDACTED_SECRET>`, ..., and `<user>` for the
        name in a home directory). Idempotent:
        `redact_text(redact_text(x)) == redact_text(x)`.

    Raises:
        ImportError: detect-secrets (a dependency) is missing; raised on the
            first call that reaches the provider rules.
    """
    if len(text) < _SHORT and not _ANY_ANCHOR.search(text.lower()):
        return text
    return _run_rules(text)


def _run_rules(text: str) -> str:
    """All rules, without the short-string shortcut (tests compare the two)."""
    doc = Doc(text)
    for rule in _RULES:
        rule(doc)
    return doc.text


def redact(value: Any) -> Any:
    """Recursively redact a JSON-like value.

    Strings go through `redact_text`. In a dict, the value under a secret-named
    key (`is_secret_key`: 'password', 'X-Api-Key', 'db_password',
    'session_token', 'Authorization', 'cookie', ...) is replaced whole by
    `<REDACTED_SECRET>`, whatever its type, unless it is None, a bool or an
    empty string (nothing to hide). Keys that describe rather than hold a
    secret ('max_tokens', 'token_count', 'password_min_length') keep their
    values. Keys themselves are never changed.

    Args:
        value: a dict, list, tuple, str, int, float, bool or None, nested to any
            depth. Other objects are returned as they are (not inspected).

    Returns:
        A new value of the same shape (dicts stay dicts, tuples stay tuples);
        the input is never mutated.
    """
    kind = type(value)
    if kind is str:
        return redact_text(value)
    if kind is dict:
        return _redact_dict(value)
    if kind is list:
        return [_redact_item(item) for item in value]
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, dict):
        return _redact_dict(value)
    if isinstance(value, list):
        return [redact(item) for item in value]
    if isinstance(value, tuple):
        return tuple(redact(item) for item in value)
    return value


_SCALARS = (int, float, bool, type(None))


def _redact_item(item: Any) -> Any:
    """`redact` with the common leaf types answered without a call."""
    kind = type(item)
    if kind is str:
        return (
            redact_text(item) if len(item) >= _SHORT or _ANY_ANCHOR.search(item.lower()) else item
        )
    if kind in _SCALARS:
        return item
    return redact(item)


def _redact_dict(value: dict[Any, Any]) -> dict[Any, Any]:
    out: dict[Any, Any] = {}
    for key, item in value.items():
        if (
            isinstance(key, str)
            and is_secret_key(key)
            and item is not None
            and item is not True
            and item is not False
            and item != ""
        ):
            out[key] = SECRET_PLACEHOLDER
        else:
            out[key] = _redact_item(item)
    return out
