r"""Secret and personal-data redaction applied to every record before it is stored.

`redact_text` rewrites free text; `redact` walks a JSON-like value and also
blanks whole values that sit under secret-named keys (`is_secret_key`). Both are
pure: they return new objects and never mutate their input.

Rules, applied in this order, each to the output of the one before:

1. PEM private keys (`-----BEGIN ... PRIVATE KEY-----` to the matching END, or
   to the end of the base64 body when truncated) -> `<REDACTED_PRIVATE_KEY>`.
2. JWTs (`eyJ<header>.eyJ<payload>.<signature>`) -> `<REDACTED_JWT>`.
3. Provider API keys -> `<REDACTED_API_KEY>`: OpenAI `sk-`/`sk-proj-`
   (20+ chars), Anthropic `sk-ant-`, Slack `xox[abposr]-`/`xapp-`, GitHub
   `ghp_ gho_ ghu_ ghs_ ghr_` (36+) and `github_pat_`, AWS `AKIA`/`ASIA` + 16,
   Stripe `sk_live_ rk_live_ sk_test_ rk_test_`, Google `AIza` + 35, Hugging
   Face `hf_` (30+). Both ends must be token edges (not `[A-Za-z0-9_-]`).
4. Passwords inside URIs: `scheme://user:pass@host` ->
   `scheme://user:<REDACTED_SECRET>@host`.
5. `Cookie:` / `Set-Cookie:` header lines: the rest of the line -> `<REDACTED_SECRET>`.
6. `key: value` / `key=value` pairs whose key is secret-named (`is_secret_key`),
   bare, quoted or JSON-quoted (`"Authorization": "Bearer x"`, also inside
   escaped JSON `\"password\": \"x\"`). An auth scheme word (`Bearer`, `Basic`,
   `Token`, `Digest`, ...) stays and only the credential becomes
   `<REDACTED_SECRET>`; a quoted value is replaced up to its closing quote, a
   bare one up to whitespace or punctuation. Token-count keys (`max_tokens=512`)
   are not secret-named. Values that are plainly not secrets stay: `None`,
   `null`, `true`, type names (`password: str`), `$ENV`/`os.environ`
   references, calls and subscripts (`token = get_token()`), and a value equal
   to its key (`api_key=api_key`).
7. A stand-alone `Bearer <token>` (16+ token characters, at least one digit).
8. `.onion` addresses (the 16- or 56-character base32 label plus `.onion`;
   subdomains such as `www.` stay) -> `<REDACTED_ONION>`.
9. E-mail addresses `local@domain.tld` (letters-only TLD, so `deploy@10.0.0.1`
   is not one) -> `<REDACTED_EMAIL>`; `git@host` SSH remotes stay.
10. Home directories: `/home/<name>` -> `/home/<user>`, `/Users/<name>` ->
    `/Users/<user>`, `C:\Users\<name>` -> `C:\Users\<user>`.
11. Non-loopback IPv4 addresses -> `<REDACTED_IP>`. Version and section numbers
    such as "section 1.2.3.4" stay; the exact rule is `IPV4_RULE`.

Idempotence: `redact_text(redact_text(x)) == redact_text(x)`. No rule matches a
placeholder (they start with `<`, which no value pattern accepts first); every
match must run to a token edge, so a replacement never creates a new match
beside it; and a bare value cut short by a later rule's placeholder is left
alone on the next pass, as it was on the first. Checked with hypothesis in
`tests/test_redact.py` (and with 300,000 extra examples while writing it).

Limits: this is pattern matching, not a data-loss-prevention engine. Secrets
with no recognisable shape or key name (a bare random password in prose) pass
through; prose such as "Password: the old one" loses its next word; a value
under a key named 'token' is blanked even where it is a text token (logprobs);
IPv6 addresses are not redacted. Throughput, from `bench/bench_redact.py` on
one core: about 46 MB/s on 10 MB of mixed text in one string, 37 MB/s in 4 KB
records, 31 MB/s through `redact` on trajectory-like dicts (target 20 MB/s).
"""

from __future__ import annotations

import itertools
import re
import string
from collections.abc import Callable
from functools import lru_cache
from typing import Any

__all__ = [
    "IPV4_RULE",
    "PLACEHOLDERS",
    "SECRET_PLACEHOLDER",
    "is_secret_key",
    "redact",
    "redact_text",
]

SECRET_PLACEHOLDER = "<REDACTED_SECRET>"
"""What replaces a password, credential or the value under a secret-named key."""

PLACEHOLDERS = (
    "<REDACTED_API_KEY>",
    "<REDACTED_EMAIL>",
    "<REDACTED_IP>",
    "<REDACTED_JWT>",
    "<REDACTED_ONION>",
    "<REDACTED_PRIVATE_KEY>",
    SECRET_PLACEHOLDER,
    "<user>",
)
"""Every placeholder `redact_text` can emit; none of them matches any rule."""

IPV4_RULE = """\
A dotted quad a.b.c.d is redacted when all of these hold:
- each octet is 0-255 written without leading zeros ("01.2.3.4" is not an address);
- it is not preceded by a letter, digit, underscore or '.' (so "v1.2.3.4" and the
  tail of "1.2.3.4.5" stay) and not followed by a letter, digit, underscore or by
  '.' plus one of those (so "1.2.3.4.5" and "pkg-1.2.3.4.tar.gz" stay);
- it is not loopback (127.0.0.0/8) and not 0.0.0.0;
- the text just before it (spaces skipped) is not one of the words 'v',
  'version', 'ver', 'release', 'section', 'sec.', 'Python', 'rev', nor the
  sign '§', nor a comparison operator ('==', '>=', '<=', '~=', '!=').
Limits: a dotted quad that names a section or version without one of those
cues ("see 1.2.3.4 above") is treated as an address and redacted; that is the
safe direction. IPv6 is not handled.
"""
"""The exact IPv4 rule, in words; `_IPV4_TAIL` and `_ip_span` implement it."""

# --- secret-named keys ------------------------------------------------------

_STRONG_WORDS = frozenset(
    {
        "password", "passwd", "passphrase", "passcode", "secret", "secrets",
        "apikey", "authorization", "auth", "cookie", "cookies", "credential",
        "credentials", "privatekey", "secretkey", "accesskey", "bearer",
    }
)  # fmt: skip
_SUBSTRING_WORDS = ("password", "passwd", "secret")
_KEY_PAIRS = frozenset(
    {
        ("api", "key"), ("access", "key"), ("private", "key"), ("secret", "key"),
        ("signing", "key"), ("encryption", "key"), ("master", "key"), ("auth", "key"),
    }
)  # fmt: skip
_TOKEN_COUNT_WORDS = frozenset(
    {
        "count", "counts", "num", "number", "max", "min", "limit", "limits", "total",
        "usage", "used", "len", "length", "budget", "in", "out", "input", "output",
        "prompt", "completion", "per", "rate", "estimate", "estimated", "type",
        "types", "id", "ids", "index", "idx", "size", "cost", "logprob", "logprobs",
    }
)  # fmt: skip
_ACRONYM = re.compile(r"([A-Z]+)([A-Z][a-z])")  # 'APIKey' -> 'API_Key'
_CAMEL = re.compile(r"([a-z0-9])([A-Z])")  # 'apiKey' -> 'api_Key'
_NON_ALNUM = re.compile(r"[^a-z0-9]+")


@lru_cache(maxsize=4096)
def is_secret_key(name: str) -> bool:
    """Say whether a mapping key or header name names a secret.

    The name is normalised first: camelCase is split, case folded and every run
    of non-alphanumerics becomes a word break, so 'X-Api-Key', 'x_api_key' and
    'XApiKey' all read as the words ['x', 'api', 'key'].

    A name is secret when one of its words is in a fixed list (password, passwd,
    passphrase, secret, apikey, authorization, auth, cookie, credential(s), ...),
    a word contains 'password', 'passwd' or 'secret' ('dbpassword',
    'clientsecret'), two adjacent words form 'api key', 'access key', 'private
    key', 'secret key' and the like, or a word is or ends with 'token'
    ('token', 'session_token', 'accesstoken') and no word marks a token count
    ('max', 'in', 'out', 'count', 'usage', 'prompt', 'type', ...). So
    'max_tokens', 'tokens_in', 'tokens_out', 'token_count' and 'session_id' are
    not secret; 'session_token' and 'db_password' are.

    Args:
        name: the key as written.

    Returns:
        True when values under this key should be replaced whole.
    """
    words = _NON_ALNUM.split(_CAMEL.sub(r"\1_\2", _ACRONYM.sub(r"\1_\2", name)).lower())
    words = [word for word in words if word]
    for word in words:
        if word in _STRONG_WORDS or any(sub in word for sub in _SUBSTRING_WORDS):
            return True
    if any(pair in _KEY_PAIRS for pair in itertools.pairwise(words)):
        return True
    if any(word.endswith("token") for word in words):
        return not any(word in _TOKEN_COUNT_WORDS for word in words)
    return False


# --- text rules -------------------------------------------------------------
#
# Speed: CPython's `re` only scans fast (memchr-like) when a pattern starts with
# a literal. A leading look-behind, `\b`, a character class or IGNORECASE makes
# it try the pattern at every position (measured 15-80 MB/s per rule, far too
# slow for eleven rules). So every pattern below starts with a literal anchor
# ('sk-', '@', '.', 'token', ...); left context (word boundaries, the local
# part of an e-mail, the first octet of an address, the start of a key) is
# checked in Python at the few places the anchor occurs. Case-insensitive
# anchors are searched in a lower-cased copy of the text with the same indices.

_TOKEN_CHARS = frozenset(string.ascii_letters + string.digits + "_-")
_KEY_CHARS = _TOKEN_CHARS | {"."}
_LOCAL_CHARS = _TOKEN_CHARS | set(".%+")
_ONION_LABEL_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz234567")  # base32
_DIGITS = frozenset(string.digits)
_MAX_KEY = 128  # characters scanned left for the start of a key
_ASCII_LOWER = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)

_Span = tuple[int, int, str]


class _Doc:
    """The text being redacted plus a lower-cased copy with the same indices."""

    __slots__ = ("_low", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self._low: str | None = None

    @property
    def low(self) -> str:
        if self._low is None:
            low = self.text.lower()
            if len(low) != len(self.text):  # e.g. 'İ' lower-cases to two characters
                low = self.text.translate(_ASCII_LOWER)
            self._low = low
        return self._low

    def set(self, text: str) -> None:
        if text is not self.text:
            self.text = text
            self._low = None

    def splice(self, spans: list[_Span]) -> None:
        """Replace the given (start, end, replacement) spans; overlaps lose."""
        if not spans:
            return
        spans.sort()
        out: list[str] = []
        last = 0
        for start, end, replacement in spans:
            if start < last:
                continue
            out.append(self.text[last:start])
            out.append(replacement)
            last = end
        out.append(self.text[last:])
        self.set("".join(out))


def _left_edge_ok(text: str, start: int) -> bool:
    return start == 0 or text[start - 1] not in _TOKEN_CHARS


# 1. PEM private keys. The body may not contain '-----', so a run of BEGIN
# lines without END costs linear time (a plain lazy '.*?END' was quadratic).
_PEM = re.compile(
    r"-----BEGIN ([A-Z0-9 ]{0,40})PRIVATE KEY-----"
    r"(?:(?:[A-Za-z0-9+/=\s\\:,]|-(?!----))*?-----END \1PRIVATE KEY-----"
    r"|[A-Za-z0-9+/=\s\\]*+)"  # truncated: the base64 body that follows
)


# 2-3. JWTs and provider keys. Each pattern is a literal, then a look-behind
# that rejects a start inside a longer token ('xsk-...'), then the body, which
# must run to a token edge. The literal comes first so `re` can scan for it.
def _token_pattern(literal: str, body: str) -> re.Pattern[str]:
    lit = re.escape(literal)
    return re.compile(f"{lit}(?<![A-Za-z0-9_-]{lit}){body}(?![A-Za-z0-9_-])")


_TOKEN_PATTERNS: tuple[tuple[str, re.Pattern[str], str], ...] = tuple(
    (literal, _token_pattern(literal, body), placeholder)
    for literal, body, placeholder in (
        ("eyJ", r"[A-Za-z0-9_-]{5,}+\.eyJ[A-Za-z0-9_-]{5,}+\.[A-Za-z0-9_-]*+", "<REDACTED_JWT>"),
        # OpenAI sk-, sk-proj-, sk-svcacct-; Anthropic sk-ant-
        ("sk-", r"[A-Za-z0-9_-]{20,}+", "<REDACTED_API_KEY>"),
        ("xox", r"[abposr]-[A-Za-z0-9-]{10,}+", "<REDACTED_API_KEY>"),  # Slack
        ("xapp-", r"[A-Za-z0-9-]{10,}+", "<REDACTED_API_KEY>"),  # Slack app-level
        ("gh", r"[pousr]_[A-Za-z0-9]{36,}+", "<REDACTED_API_KEY>"),  # GitHub ghp_ gho_ ...
        ("github_pat_", r"[A-Za-z0-9_]{22,}+", "<REDACTED_API_KEY>"),  # GitHub fine-grained
        ("AKIA", r"[A-Z0-9]{16}", "<REDACTED_API_KEY>"),  # AWS long-term key id
        ("ASIA", r"[A-Z0-9]{16}", "<REDACTED_API_KEY>"),  # AWS temporary key id
        ("sk_", r"(?:live|test)_[A-Za-z0-9]{10,}+", "<REDACTED_API_KEY>"),  # Stripe secret
        ("rk_", r"(?:live|test)_[A-Za-z0-9]{10,}+", "<REDACTED_API_KEY>"),  # Stripe restricted
        ("AIza", r"[A-Za-z0-9_-]{35}", "<REDACTED_API_KEY>"),  # Google API key
        ("hf_", r"[A-Za-z0-9]{30,}+", "<REDACTED_API_KEY>"),  # Hugging Face
    )
)

# 4. Passwords in URIs.
_URI_PASSWORD = re.compile(r"(://[^\s:/@?#'\"<>]*+):[^\s@/?#'\"<>]++@")

# 5. Cookie header lines (anchor searched in the lower-cased copy).
_COOKIE = re.compile(r"cookie[ \t]*:[ \t]*")

# 6. Secret-named key/value pairs. The anchors are stems searched in the
# lower-cased copy; the whole key is recovered by scanning left, then judged by
# `is_secret_key`, so 'max_tokens: 512' costs one cached lookup.
_KEY_QUALIFIERS = ("api", "access", "private", "secret", "signing", "encryption", "master", "auth")
# 'key' counts only after a qualifier ('api_key', 'accesskey', 'x-api-key'): bare 'key' is common.
_QUALIFIED_KEY = "key(?:" + "|".join(
    f"(?<={qualifier}{sep}key)" for qualifier in _KEY_QUALIFIERS for sep in ("_", "-", "")
) + ")"  # fmt: skip
_KV_STEMS: tuple[tuple[str, str], ...] = (
    ("passw", "passw"),
    ("passphrase", "passphrase"),
    ("passcode", "passcode"),
    ("secret", "secret"),
    ("token", "token(?!s(?![a-z0-9]))"),  # a word 'tokens' is a count ('max_tokens')
    ("key", _QUALIFIED_KEY),
    ("auth", "auth"),
    ("cookie", "cookie"),
    ("credential", "credential"),
    ("bearer", "bearer"),
)
_KV_KEYS = tuple(
    (
        stem,
        re.compile(
            body + r"[a-z0-9_-]*+"  # rest of the key
            r"(?P<kq>\\?[\"'])?"  # closing quote of a quoted key
            r"[ \t]*+(?::(?![:=])|=(?!=))[ \t]*+"  # separator, not '::' ':=' '=='
        ),
    )
    for stem, body in _KV_STEMS
)
_SCHEMES = r"(?:[Bb]earer|[Bb]asic|[Tt]oken|[Dd]igest|[Nn]egotiate|[Aa]pi-?[Kk]ey)"
_KV_VALUE = re.compile(
    r"(?P<vq>\\?[\"'])?"  # opening quote of a quoted value
    r"(?:" + _SCHEMES + r"[ \t]+)?"  # an auth scheme stays in clear
    r"(?(vq)(?P<qval>[^\"'\\\r\n]++)"  # quoted value: up to the quote
    r"|(?P<val>[^\s\"'\\,;&(){}\[\]<>=`][^\s\"'\\,;&(){}\[\]<>`]*+)"  # bare: one token
    r"(?![(\[]|<(?:REDACTED_|user>)))"  # not a call or subscript, not cut by a placeholder
)
_NOT_SECRET_VALUES = frozenset(
    {
        "", "none", "null", "nil", "true", "false", "undefined", "redacted", "***",
        "str", "string", "bytes", "int", "number", "bool", "boolean", "any",
        "secretstr", "optional", "required", "bearer", "basic", "token", "digest",
        "negotiate", "apikey", "api-key",
    }
)  # fmt: skip
_STRING_PREFIXES = frozenset({"f", "r", "b", "u", "rb", "br", "fr", "rf"})
_ENV_PREFIXES = ("$", "%", "{{", "os.environ", "process.env", "env.")
_PLACEHOLDER_ONLY = re.compile(r"(?:\s*<(?:REDACTED_[A-Z_]+|user)>\s*)+")

# 7. A stand-alone bearer token.
_BEARER = re.compile(r"bearer[ \t]+")
_BEARER_TOKEN = re.compile(r"(?=[A-Za-z0-9_.~+/-]*[0-9])[A-Za-z0-9_.~+/-]{16,}+=*")

# 8-10. Onion hosts, e-mail addresses, home directories.
_ONION = re.compile(r"\.onion(?![a-z0-9_-])")
_EMAIL_DOMAIN = re.compile(r"[A-Za-z0-9-]++(?:\.[A-Za-z0-9-]++)*\.[A-Za-z]{2,}(?![\w-]|\.[\w-])")
# A name stops at any character that ends a bare value in rule 6, so replacing
# it can never change what follows such a value (idempotence).
_NAME = r"(?P<name>[^/\\\s\"'`:;,<>|*?&(){}\[\]]++)"
_HOME = re.compile(r"/(?:home|Users)/" + _NAME)
_WIN_HOME = re.compile(r":\\{1,2}Users\\{1,2}" + _NAME)

# 11. IPv4: anchored on the dot after the first octet.
_OCTET = r"(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9][0-9]|[0-9])"
_IPV4_TAIL = re.compile(rf"\.{_OCTET}\.{_OCTET}\.{_OCTET}(?!\.?\w)")
_IP_CUE = re.compile(
    r"(?:(?<![A-Za-z])(?i:v|ver|version|release|rev|section|sec\.|python)|§|[=><~!]=)\s*$"
)


def _pem_rule(doc: _Doc) -> None:
    if "-----BEGIN" in doc.text:
        doc.set(_PEM.sub("<REDACTED_PRIVATE_KEY>", doc.text))


def _token_rules(doc: _Doc) -> None:
    text = doc.text
    long_text = len(text) > 4096  # there sre's literal scan beats `in` (1.5 vs 3 ms on 5 MB)
    spans: list[_Span] = []
    for prefix, pattern, placeholder in _TOKEN_PATTERNS:
        if long_text or prefix in text:
            spans.extend((m.start(), m.end(), placeholder) for m in pattern.finditer(text))
    doc.splice(spans)


def _uri_rule(doc: _Doc) -> None:
    if "://" in doc.text:
        doc.set(_URI_PASSWORD.sub(r"\1:" + SECRET_PLACEHOLDER + "@", doc.text))


def _cookie_rule(doc: _Doc) -> None:
    low = doc.low
    if "cookie" not in low:
        return
    text = doc.text
    spans: list[_Span] = []
    for match in _COOKIE.finditer(low):
        start = match.start()
        if low[start - 4 : start] == "set-":
            start -= 4
        while start > 0 and low[start - 1] in " \t":
            start -= 1
        if start > 0 and low[start - 1] != "\n":
            continue  # not a header line
        end = text.find("\n", match.end())
        end = len(text) if end < 0 else end
        if end > match.end() and text[end - 1] == "\r":
            end -= 1
        if end > match.end() and text[match.end() : end] != SECRET_PLACEHOLDER:
            spans.append((match.end(), end, SECRET_PLACEHOLDER))
    doc.splice(spans)


def _kv_span(text: str, stem_at: int, key_end: int, value_at: int) -> tuple[_Span | None, int]:
    """Judge one `key<sep>value` candidate.

    Returns the span to blank (or None) and where the examined value ends;
    later candidates that start before that are skipped.
    """
    key_start = stem_at
    while key_start > 0 and stem_at - key_start < _MAX_KEY and text[key_start - 1] in _KEY_CHARS:
        key_start -= 1
    key = text[key_start:key_end].rsplit(".", 1)[-1]
    if not is_secret_key(key):
        return None, 0
    value = _KV_VALUE.match(text, value_at)
    if value is None:
        return None, 0
    group = "qval" if value.group("vq") else "val"
    stripped = value.group(group).strip()
    lowered = stripped.lower()
    key_lower = key.lower()
    if (
        lowered in _NOT_SECRET_VALUES
        or stripped.startswith(_ENV_PREFIXES)
        or lowered == key_lower
        or lowered.endswith("." + key_lower)
        or (lowered in _STRING_PREFIXES and text[value.end() : value.end() + 1] in ("'", '"'))
        or _PLACEHOLDER_ONLY.fullmatch(stripped)
    ):
        return None, value.end()
    return (value.start(group), value.end(group), SECRET_PLACEHOLDER), value.end()


def _kv_rule(doc: _Doc) -> None:
    low = doc.low
    text = doc.text
    spans: list[_Span] = []
    for stem, pattern in _KV_KEYS:
        if stem not in low:
            continue
        scanned = 0
        for match in pattern.finditer(low):
            if match.start() < scanned:
                continue  # inside a value already judged ('token=token=...' stays linear)
            key_end = match.start("kq") if match.group("kq") else match.end(0)
            while key_end > match.start() and low[key_end - 1] in " \t:=":
                key_end -= 1
            span, scanned = _kv_span(text, match.start(), key_end, match.end())
            if span is not None:
                spans.append(span)
    doc.splice(spans)


def _bearer_rule(doc: _Doc) -> None:
    low = doc.low
    if "bearer" not in low:
        return
    text = doc.text
    spans: list[_Span] = []
    for match in _BEARER.finditer(low):
        if not _left_edge_ok(text, match.start()):
            continue
        token = _BEARER_TOKEN.match(text, match.end())
        if token is not None:
            spans.append((token.start(), token.end(), SECRET_PLACEHOLDER))
    doc.splice(spans)


def _onion_rule(doc: _Doc) -> None:
    low = doc.low
    if ".onion" not in low:
        return
    spans: list[_Span] = []
    for match in _ONION.finditer(low):
        start = match.start()
        while start > 0 and match.start() - start <= 56 and low[start - 1] in _ONION_LABEL_CHARS:
            start -= 1
        if 16 <= match.start() - start <= 56 and _left_edge_ok(low, start):
            spans.append((start, match.end(), "<REDACTED_ONION>"))
    doc.splice(spans)


def _email_rule(doc: _Doc) -> None:
    text = doc.text
    at = text.find("@")
    spans: list[_Span] = []
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
            spans.append((start, domain.end(), "<REDACTED_EMAIL>"))
        at = text.find("@", at + 1)
    doc.splice(spans)


def _home_repl(match: re.Match[str]) -> str:
    return match.group(0)[: match.start("name") - match.start()] + "<user>"


def _home_rule(doc: _Doc) -> None:
    if "/home/" in doc.text or "/Users/" in doc.text:
        doc.set(_HOME.sub(_home_repl, doc.text))
    if "Users\\" in doc.text:
        doc.set(_WIN_HOME.sub(_home_repl, doc.text))


def _ip_span(text: str, tail: re.Match[str]) -> _Span | None:
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
    return (start, tail.end(), "<REDACTED_IP>")


def _ip_rule(doc: _Doc) -> None:
    text = doc.text
    spans = [span for tail in _IPV4_TAIL.finditer(text) if (span := _ip_span(text, tail))]
    doc.splice(spans)


_SHORT = 64
_ANY_ANCHOR = re.compile(
    "|".join(
        [
            "-----begin", "://", "cookie", "bearer", r"\.onion", "@", "/home/", "/users/",
            r"users\\", r"\.[0-9]",
            *(re.escape(prefix.lower()) for prefix, _, _ in _TOKEN_PATTERNS),
            *(stem for stem, _ in _KV_STEMS),
        ]
    )
)  # fmt: skip
"""Searched in the lower-cased text of strings shorter than `_SHORT`: every
rule's anchor. Running the rules costs ~4 us even on 'passed'; this search
~0.4 us, and the many short strings of a trajectory record (roles, ids, tool
names) mostly stop here. Longer strings go straight to the rules."""

_RULES: tuple[Callable[[_Doc], None], ...] = (
    _pem_rule,
    _token_rules,
    _uri_rule,
    _cookie_rule,
    _kv_rule,
    _bearer_rule,
    _onion_rule,
    _email_rule,
    _home_rule,
    _ip_rule,
)


def redact_text(text: str) -> str:
    """Replace secrets and personal data in free text with placeholders.

    See the module docstring for the rules and their order; the IPv4 rule is
    spelled out in `IPV4_RULE`. Surrounding text is kept character for
    character and in order; only matched spans change.

    Args:
        text: any string (a log, a tool output, a model message, code).

    Returns:
        The text with each match replaced by `<REDACTED_API_KEY>`,
        `<REDACTED_EMAIL>`, `<REDACTED_IP>`, `<REDACTED_PRIVATE_KEY>`,
        `<REDACTED_JWT>`, `<REDACTED_SECRET>`, `<REDACTED_ONION>`, or for home
        directories `/home/<user>` and `/Users/<user>`. Idempotent:
        `redact_text(redact_text(x)) == redact_text(x)`.
    """
    if len(text) < _SHORT and not _ANY_ANCHOR.search(text.lower()):
        return text
    return _run_rules(text)


def _run_rules(text: str) -> str:
    """All rules, without the short-string shortcut (tests compare the two)."""
    doc = _Doc(text)
    for rule in _RULES:
        rule(doc)
    return doc.text


def redact(value: Any) -> Any:
    """Recursively redact a JSON-like value.

    Strings go through `redact_text`. In a dict, the value under a secret-named
    key (`is_secret_key`: 'password', 'X-Api-Key', 'db_password',
    'session_token', 'Authorization', 'cookie', ...) is replaced whole by
    `<REDACTED_SECRET>`, whatever its type, unless it is None, a bool or an
    empty string (nothing to hide). Token-count keys ('max_tokens', 'tokens_in',
    'tokens_out') are not secret-named, so their numbers stay. Keys themselves
    are never changed.

    Args:
        value: a dict, list, tuple, str, int, float, bool or None, nested to any
            depth. Other objects are returned as they are (not inspected).

    Returns:
        A new value of the same shape (dicts stay dicts, tuples stay tuples);
        the input is never mutated.
    """
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, dict):
        out: dict[Any, Any] = {}
        for key, item in value.items():
            if (
                isinstance(key, str)
                and is_secret_key(key)
                and item is not None
                and not isinstance(item, bool)
                and item != ""
            ):
                out[key] = SECRET_PLACEHOLDER
            else:
                out[key] = redact(item)
        return out
    if isinstance(value, list):
        return [redact(item) for item in value]
    if isinstance(value, tuple):
        return tuple(redact(item) for item in value)
    return value
