"""Personal data: `.onion` hosts, e-mail addresses, home directories, IPv4 addresses."""

from __future__ import annotations

import re
import string

from nightschool.redact._doc import Doc, Span, left_edge_ok

ONION = "<REDACTED_ONION>"
EMAIL = "<REDACTED_EMAIL>"
IP = "<REDACTED_IP>"
USER = "<user>"

IPV4_RULE = """\
A dotted quad a.b.c.d is redacted when all of these hold:
- each octet is 0-255 written without leading zeros ("01.2.3.4" is not an address);
- it is not preceded by a letter, digit, underscore or '.' (so "v1.2.3.4" and the
  tail of "1.2.3.4.5" stay) and not followed by a letter, digit, underscore, by
  '.' plus one of those (so "1.2.3.4.5" and "pkg-1.2.3.4.tar.gz" stay), or by '-'
  plus a letter (so "1.2.3.4-rc1" stays);
- it is not loopback (127.0.0.0/8) and not 0.0.0.0;
- the text just before it (spaces skipped) is not one of the words 'v',
  'version', 'ver', 'release', 'section', 'sec.', 'Python', 'rev', nor the
  sign '§', nor a comparison operator ('==', '>=', '<=', '~=', '!=').
Limits: a dotted quad that names a section or version without one of those
cues ("see 1.2.3.4 above") is treated as an address and redacted; that is the
safe direction. IPv6 is not handled.
"""
"""The exact IPv4 rule, in words; `_IPV4_TAIL` and `_ip_span` implement it."""

_LOCAL_CHARS = frozenset(string.ascii_letters + string.digits + "_-.%+")
_ONION_LABEL_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz234567")  # base32
_DIGITS = frozenset(string.digits)

_ONION = re.compile(r"\.onion(?![a-z0-9_-])")
_EMAIL_DOMAIN = re.compile(r"[A-Za-z0-9-]++(?:\.[A-Za-z0-9-]++)*\.[A-Za-z]{2,}(?![\w-]|\.[\w-])")
# A name stops at any character that ends a bare value in the key/value rule,
# so replacing it can never change what follows such a value (idempotence).
_NAME = r"(?P<name>[^/\\\s\"'`:;,<>|*?&(){}\[\]]++)"
_HOME = re.compile(r"/(?:home|Users)/" + _NAME)
_WIN_HOME = re.compile(r":\\{1,2}Users\\{1,2}" + _NAME)

# IPv4, anchored on the dot after the first octet.
_OCTET = r"(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9][0-9]|[0-9])"
_IPV4_TAIL = re.compile(rf"\.{_OCTET}\.{_OCTET}\.{_OCTET}(?!\.?\w|-[A-Za-z])")
_IP_CUE = re.compile(
    r"(?:(?<![A-Za-z])(?i:v|ver|version|release|rev|section|sec\.|python)|§|[=><~!]=)\s*$"
)


def onion_rule(doc: Doc) -> None:
    """`.onion` addresses (16- or 56-character base32 label) -> `<REDACTED_ONION>`."""
    low = doc.low
    if ".onion" not in low:
        return
    spans: list[Span] = []
    for match in _ONION.finditer(low):
        start = match.start()
        while start > 0 and match.start() - start <= 56 and low[start - 1] in _ONION_LABEL_CHARS:
            start -= 1
        if 16 <= match.start() - start <= 56 and left_edge_ok(low, start):
            spans.append((start, match.end(), ONION))
    doc.splice(spans)


def email_rule(doc: Doc) -> None:
    """`local@domain.tld` (letters-only TLD) -> `<REDACTED_EMAIL>`; `git@host` stays."""
    text = doc.text
    at = text.find("@")
    spans: list[Span] = []
    while at >= 0:
        start = at
        while start > 0 and at - start <= 64 and text[start - 1] in _LOCAL_CHARS:
            start -= 1
        domain = _EMAIL_DOMAIN.match(text, at + 1)
        if (
            start < at
            and (start == 0 or text[start - 1] not in _LOCAL_CHARS)
            and text[start:at] != "git"  # git@host: SSH remotes, not a person
            and domain is not None
        ):
            spans.append((start, domain.end(), EMAIL))
        at = text.find("@", at + 1)
    doc.splice(spans)


def _home_repl(match: re.Match[str]) -> str:
    return match.group(0)[: match.start("name") - match.start()] + USER


def home_rule(doc: Doc) -> None:
    r"""`/home/<name>`, `/Users/<name>`, `C:\Users\<name>` -> the same with `<user>`."""
    if "/home/" in doc.text or "/Users/" in doc.text:
        doc.set(_HOME.sub(_home_repl, doc.text))
    if "Users\\" in doc.text:
        doc.set(_WIN_HOME.sub(_home_repl, doc.text))


def _ip_span(text: str, tail: re.Match[str]) -> Span | None:
    """The span of the address whose first dot `tail` starts at, if it is one."""
    start = tail.start()
    while start > 0 and tail.start() - start < 4 and text[start - 1] in _DIGITS:
        start -= 1
    first = text[start : tail.start()]
    if not first or len(first) > 3 or (len(first) > 1 and first[0] == "0") or int(first) > 255:
        return None
    if start > 0 and (text[start - 1].isalnum() or text[start - 1] in "_."):
        return None
    if first == "127" or text[start : tail.end()] == "0.0.0.0":
        return None
    if _IP_CUE.search(text, max(0, start - 12), start):
        return None
    return (start, tail.end(), IP)


def ip_rule(doc: Doc) -> None:
    """Non-loopback IPv4 addresses -> `<REDACTED_IP>` (the rule: `IPV4_RULE`)."""
    text = doc.text
    spans = [span for tail in _IPV4_TAIL.finditer(text) if (span := _ip_span(text, tail))]
    doc.splice(spans)


def anchors() -> list[str]:
    """Regexes (for the lower-cased text) at least one of which matches wherever a rule here can."""
    return [r"\.onion", "@", "/home/", "/users/", r"users\\", r"\.[0-9]"]
