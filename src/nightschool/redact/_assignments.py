"""Secrets found by what names them: key/value pairs, flags, headers, URIs.

Covers `key=value` pairs, name/value records, command-line flags, URI
passwords, cookie headers and bearer tokens.

Speed: CPython's `re` scans fast only for a pattern that starts with a literal,
so every pattern here starts with one ('pass', 'token', 'value', '-', '://',
...). Left context (where a key starts) is found in Python at the few places an
anchor occurs, and case-insensitive anchors are searched in the lower-cased
copy of the text, which has the same indices.
"""

from __future__ import annotations

import re

from nightschool.redact._doc import Doc, Span, left_edge_ok, line_bounds
from nightschool.redact._keys import is_not_secret_value, is_secret_key, looks_random

SECRET = "<REDACTED_SECRET>"

_KEY_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.")
_MAX_KEY = 128  # characters scanned left for the start of a key
_URI_PASSWORD = re.compile(r"(://[^\s:/@?#'\"<>]*+):([^\s@/?#'\"<>]++)@")
_COOKIE = re.compile(r"cookie[ \t]*:[ \t]*")

# Key stems, searched in the lower-cased copy; the whole key is then recovered
# by scanning left and judged by `is_secret_key`, so 'max_tokens: 512' costs a
# cached lookup.
_KV_STEMS: tuple[tuple[str, str], ...] = (
    ("pass", "pass"),
    ("pwd", "pwd"),
    ("secret", "secret"),
    ("token", "token(?!s(?![a-z0-9]))"),  # a word 'tokens' is a count ('max_tokens')
    ("key", "key"),
    ("auth", "auth"),
    ("cookie", "cookie"),
    ("credential", "credential"),
    ("bearer", "bearer"),
)
_SEPARATOR = (
    r"(?:(?P<sep>[ \t]*+(?::=|=>|:(?![:=])|=(?![=>]))[ \t]*+)"  # ':' '=' ':=' '=>', not '::' '=='
    r"|(?P<ws>[ \t]++)(?=\S{16})"  # or blanks alone (then the value must look random)
    r"|(?P<comma>[ \t]*+,[ \t]*+)(?=\\?[\"'])"  # define('KEY', 'value'): see `_call_ok`
    r"|(?P<xml>>))"  # <password>value</password>: see `_xml_span`
)
_KV_KEYS = tuple(
    (
        stem,
        re.compile(
            f"(?P<key>{body}[a-z0-9_-]*+)"
            r"(?P<kq>\\?[\"'])?\]?" + _SEPARATOR  # closing quote of a quoted key, a subscript's ']'
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
_STRING_PREFIXES = frozenset({"f", "r", "b", "u", "rb", "br", "fr", "rf"})
# A call's quoted first argument names the key: define('DB_PASSWORD', 'x'),
# config.set("api_key", "x"). Field-name lists look the same
# (values('password', 'email')), so a value that reads as a field name stays.
_CALL_OPEN = re.compile(r"[A-Za-z0-9_]\([ \t]*+$")
_FIELD_NAME = re.compile(r"[A-Za-z_][a-z_]*|[a-z]+(?:[A-Z][a-z]+)+")
_XML_MAX = 512  # characters searched for an element's closing tag

# Name/value records: {"name": "DB_PASSWORD", "value": "x"}, k8s `env:` lists,
# <add key="ApiSecret" value="x"/>. The name is looked for this far back.
_NV_VALUE = re.compile(r"value(?P<kq>\\?[\"'])?[ \t]*+(?::(?![:=])|=(?!=))[ \t]*+")
_NV_NAME = re.compile(
    r"(?<![\w-])(?i:name|key)\\?[\"']?[ \t]*[:=][ \t]*\\?[\"']?(?P<name>[A-Za-z_][\w.-]*)"
)
_NV_BACK = 200

_BEARER = re.compile(r"bearer[ \t]+")
_BEARER_TOKEN = re.compile(r"[A-Za-z0-9_.~+/-]{16,}+=*")

# Command-line flags. Long flags are judged by `is_secret_key`; short ones only
# for the commands where they carry a password. A flag glued to the word before it
# is not one; nor after '>', which ends a placeholder: '1.2.3.4--password x' keeps
# its flag glued to '4', and would lose it once the IP became '<REDACTED_IP>'
# (found by the idempotence property test).
_FLAG = re.compile(r"-(?<![\w>-]-)(?P<flag>-[A-Za-z][A-Za-z0-9_-]*+|[A-Za-z]++)(?P<sep>=|[ \t]++)?")
_P_ATTACHED = ("mysql", "mariadb")  # mysql -pSECRET (a lone '-p' prompts)
_P_SPACED = ("sshpass", " login")  # sshpass -p X; docker / podman / helm ... login -p X


def uri_rule(doc: Doc) -> None:
    """`scheme://user:password@host` -> `scheme://user:<REDACTED_SECRET>@host`."""
    if "://" not in doc.text:
        return

    def replace(match: re.Match[str]) -> str:
        if is_not_secret_value(match.group(2), "password", bare=False):
            return match.group(0)
        return f"{match.group(1)}:{SECRET}@"

    doc.set(_URI_PASSWORD.sub(replace, doc.text))


def cookie_rule(doc: Doc) -> None:
    """`Cookie:` / `Set-Cookie:` header lines: the rest of the line -> `<REDACTED_SECRET>`."""
    low = doc.low
    if "cookie" not in low:
        return
    text = doc.text
    spans: list[Span] = []
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
        if end > match.end() and text[match.end() : end] != SECRET:
            spans.append((match.end(), end, SECRET))
    doc.splice(spans)


def _value_span(
    text: str, key: str, at: int, *, random_only: bool = False
) -> tuple[Span | None, int]:
    """Judge the value that starts at `at` under the secret-named `key`.

    Returns the span to blank (or None) and where the examined value ends.
    """
    value = _KV_VALUE.match(text, at)
    if value is None:
        return None, 0
    bare = not value.group("vq")
    group = "val" if bare else "qval"
    raw = value.group(group)
    if (
        is_not_secret_value(raw, key, bare=bare, after=text[value.end() : value.end() + 2])
        or (
            bare
            and raw.lower() in _STRING_PREFIXES
            and text[value.end() : value.end() + 1] in "'\""
        )
        or (random_only and not looks_random(raw.strip()))
    ):
        return None, value.end()
    return (value.start(group), value.end(group), SECRET), value.end()


def _call_ok(text: str, key_start: int, span: Span) -> bool:
    """For `KEY', 'value'`: the key is a call's first argument and the value no field name."""
    quote = key_start - 1
    if quote < 0 or text[quote] not in "'\"":
        return False
    if _CALL_OPEN.search(text, max(0, quote - 16), quote) is None:
        return False
    return _FIELD_NAME.fullmatch(text[span[0] : span[1]]) is None


def _xml_span(text: str, key: str, key_start: int, at: int) -> Span | None:
    """`<key>value</key>`: the value, when it is one element's whole text and a secret."""
    if key_start == 0 or text[key_start - 1] != "<":
        return None
    end = text.find(f"</{text[key_start : at - 1]}>", at, at + _XML_MAX)
    if end <= at:
        return None
    value = text[at:end]
    if "<" in value or "\n" in value or is_not_secret_value(value, key, bare=False):
        return None
    return (at, end, SECRET)


def kv_rule(doc: Doc) -> None:
    """Values under secret-named keys: `password=x`, `"api_key": "x"`, `SMTP_PASS: x`.

    Bare, quoted and JSON-escaped forms; an auth scheme word (`Bearer`,
    `Basic`, ...) stays. A key followed only by blanks (`aws_secret_access_key
    X`) counts when the key holds '_' and the value looks random (`looks_random`).
    """
    low = doc.low
    text = doc.text
    spans: list[Span] = []
    for _, pattern in _KV_KEYS:  # each scan is as fast as a `stem in low` check
        scanned = 0
        for match in pattern.finditer(low):
            if match.start() < scanned:
                continue  # inside a value already judged ('token=token=...' stays linear)
            stem_at = match.start()
            key_start = stem_at
            while (
                key_start > 0
                and stem_at - key_start < _MAX_KEY
                and text[key_start - 1] in _KEY_CHARS
            ):
                key_start -= 1
            key = text[key_start : match.end("key")].rsplit(".", 1)[-1]
            blanks_only = match.group("ws") is not None
            if not is_secret_key(key) or (blanks_only and "_" not in key):
                continue
            if match.group("xml") is not None:
                span = None if match.group("kq") else _xml_span(text, key, key_start, match.end())
            else:
                span, scanned = _value_span(text, key, match.end(), random_only=blanks_only)
                comma = match.group("comma") is not None
                if comma and span and not (match.group("kq") and _call_ok(text, key_start, span)):
                    span = None
            if span is not None:
                spans.append(span)
    doc.splice(spans)


def name_value_rule(doc: Doc) -> None:
    """`value` fields of records whose `name` / `key` field is secret-named.

    `{"name": "DB_PASSWORD", "value": "x"}`, a Kubernetes `- name: X` /
    `value: x` pair, `<add key="ApiSecret" value="x"/>`: the nearest name or key
    field in the 200 characters before `value` decides.
    """
    low = doc.low
    if "value" not in low:
        return
    text = doc.text
    spans: list[Span] = []
    for match in _NV_VALUE.finditer(low):
        if not left_edge_ok(low, match.start()):
            continue
        names = list(_NV_NAME.finditer(text, max(0, match.start() - _NV_BACK), match.start()))
        if not names or not is_secret_key(names[-1].group("name")):
            continue
        span, _ = _value_span(text, names[-1].group("name"), match.end())
        if span is not None:
            spans.append(span)
    doc.splice(spans)


def _flag_value(text: str, flag: re.Match[str], line: str) -> tuple[str, int] | None:
    """(the name the flag's value is judged under, where the value starts), or None."""
    name = flag.group("flag")
    spaced = flag.group("sep") is not None
    if name.startswith("-"):
        if name == "-user" and "curl" in line and spaced:
            return "user", flag.end()
        return (name[1:], flag.end()) if spaced and is_secret_key(name[1:]) else None
    if name.startswith("p") and any(command in line for command in _P_ATTACHED):
        return "password", flag.start("flag") + 1
    if name == "p" and spaced and any(command in line for command in _P_SPACED):
        return "password", flag.end()
    if name == "a" and spaced and "redis-cli" in line:
        return "password", flag.end()
    if name == "u" and spaced and "curl" in line:
        return "user", flag.end()
    openssl = name in ("pass", "passin", "passout") and spaced and "openssl" in line
    if openssl and text.startswith("pass:", flag.end()):
        return "password", flag.end() + 5
    return None


def cli_rule(doc: Doc) -> None:
    """Secrets passed as command-line flags.

    `--password X`, `--db-password=X`, `--api-key X` (any long flag that
    `is_secret_key` accepts); `mysql -pX`, `sshpass -p X`, `docker login -p X`,
    `redis-cli -a X`, `curl -u user:X`, `openssl ... -passout pass:X`.
    """
    text = doc.text
    if "-" not in text:
        return
    spans: list[Span] = []
    for flag in _FLAG.finditer(text):
        line_start, _ = line_bounds(text, flag.start(), 256)
        found = _flag_value(text, flag, text[line_start : flag.start()].lower())
        if found is None or text[found[1] : found[1] + 1] == "-":
            continue
        name, at = found
        if name == "user":  # user:password, only the password goes
            value = _KV_VALUE.match(text, at)
            colon = text.find(":", at, value.end()) if value else -1
            if value is None or colon < 0:
                continue
            name, at = "password", colon + 1
        span, _ = _value_span(text, name, at)
        if span is not None:
            spans.append(span)
    doc.splice(spans)


def _token_like(word: str) -> bool:
    """A digit, or mixed case that is not just a capitalised word ('Extraordinarily')."""
    if any(ch.isdigit() for ch in word):
        return True
    return not word.islower() and not word.isupper() and not word[1:].islower()


def bearer_rule(doc: Doc) -> None:
    """A stand-alone `Bearer <token>`: 16+ token characters with a digit or mixed case."""
    low = doc.low
    if "bearer" not in low:
        return
    text = doc.text
    spans: list[Span] = []
    for match in _BEARER.finditer(low):
        if not left_edge_ok(text, match.start()):
            continue
        token = _BEARER_TOKEN.match(text, match.end())
        if token is not None and _token_like(token.group(0)):
            spans.append((token.start(), token.end(), SECRET))
    doc.splice(spans)


def anchors() -> list[str]:
    """Regexes (for the lower-cased text) at least one of which matches wherever a rule here can."""
    commands = [*_P_ATTACHED, *_P_SPACED, "redis-cli", "curl", "openssl"]
    # A stem counts only when its key is followed by what can follow a key
    # ('passed' and 'tokens' alone do not), as in `_KV_KEYS` and `_FLAG`.
    stems = "|".join(stem for stem, _ in _KV_STEMS)
    keyed = f"(?:{stems})[a-z0-9_-]*\\\\?[\"']?\\]?[ \t:=,>]"
    return ["://", "value", *commands, keyed]
