"""Secrets found by what names them: key/value pairs, flags, headers, URIs.

Covers `key=value` pairs, name/value records, command-line flags, URI
passwords, cookie headers and bearer tokens. Where a key's value starts and
ends, and whether it is a secret, is `_values.value_span`'s to say.

Speed: CPython's `re` scans fast only for a pattern that starts with a literal,
so every pattern here starts with one ('pass', 'token', 'value', '-', '://',
...). Left context (where a key starts) is found in Python at the few places an
anchor occurs, and case-insensitive anchors are searched in the lower-cased
copy of the text, which has the same indices.
"""

from __future__ import annotations

import re
from functools import lru_cache

from nightschool.redact._blocks import yaml_block_span
from nightschool.redact._doc import SECRET, Doc, Span, left_edge_ok, line_bounds
from nightschool.redact._keys import is_not_secret_value, is_secret_key
from nightschool.redact._values import KV_VALUE, opens_line, value_span

__all__ = [
    "SECRET",
    "anchors",
    "bearer_rule",
    "cli_rule",
    "cookie_rule",
    "kv_rule",
    "name_value_rule",
    "uri_rule",
]

_KEY_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.")
_MAX_KEY = 128  # characters scanned left for the start of a key
_SKIP_INSIDE = 256  # a value left in clear longer than this hides the keys inside it
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
    r"(?:(?P<sep>[ \t]*+(?::=|=>|<-(?![-<])|:(?![:=])|=(?![=>]))[ \t]*+)"  # not '::' '=='
    # blanks alone (see `_blank_span`), not before prose: 'the token counts were'
    r"|(?P<ws>[ \t]++)(?=[^\s=:])(?![a-z]++[ \t]++[a-z])"
    r"|(?P<comma>[ \t]*+,[ \t]*+)(?=\\?[\"'])"  # define('KEY', 'value'): see `_call_ok`
    r"|(?P<xml>>))"  # <password>value</password>: see `_element_span`
)
# the closing quote of a quoted key, then maybe a subscript's ']'
_AFTER_KEY = r"(?:(?P<kq>\\?[\"'])\]?)?" + _SEPARATOR
_KV_KEYS = tuple(
    (stem, re.compile(f"(?P<key>{body}[a-z0-9_-]*+)" + _AFTER_KEY)) for stem, body in _KV_STEMS
)
# All stems in one pattern, for short texts: one scan costs less than nine
# calls there (the nine literal-led scans win on long texts; see `_SMALL`).
_KV_ANY = re.compile(
    "(?P<key>(?:" + "|".join(body for _, body in _KV_STEMS) + ")[a-z0-9_-]*+)" + _AFTER_KEY
)
_CACHED_LINE = 512  # lines up to this long are judged once per distinct line
_SMALL = 256  # measured crossover: one scan wins below, nine scans above
# A call's quoted first argument names the key: define('DB_PASSWORD', 'x'),
# config.set("api_key", "x"). Field-name lists look the same
# (values('password', 'email')), so a value that reads as a field name stays.
_CALL_OPEN = re.compile(r"[A-Za-z0-9_]\([ \t]*+$")
_FIELD_NAME = re.compile(r"[A-Za-z_][a-z_]*|[a-z]+(?:[A-Z][a-z]+)+")
_XML_MAX = 512  # characters searched for an element's closing tag
# <property name="api_key">x</property>: the element's text is the value.
_NAMED_OPEN = re.compile(r"<(?P<tag>[A-Za-z][\w.:-]*)[ \t][^<>\r\n]*?(?:name|key)[ \t]*=[ \t]*\\?$")

_BLOCK_STARTS = frozenset({"", "\n", "\r", "|", ">", "#"})  # after 'key:', a YAML block may follow
_LINE_TAIL = re.compile(r"[\"'`]?[ \t]*+(?:(?:#|//|;)[^\r\n]*+)?(?:\r?\n|$)")
_DIRECTIVES = frozenset({"requirepass", "masterauth"})  # redis.conf: plain words are passwords
_NETRC_TOKEN = re.compile(r"[^\s<]\S*+")  # not one of our placeholders
_NETRC_BACK = 300  # characters searched back for a .netrc 'machine'
# The tokens of a .netrc entry before its password, up to the key.
_NETRC = re.compile(
    r"(?<![\w.-])(?:machine[ \t\r\n]++\S++|default)"
    r"(?:[ \t\r\n]++(?:login|account|port)[ \t\r\n]++\S++)++[ \t\r\n]++\Z"
)
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
_COMMANDS = (*_P_ATTACHED, *_P_SPACED, "redis-cli", "curl", "openssl")  # words flags read


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


def _wordlike(value: str) -> bool:
    """A plain word ('reset', 'Santa', 'TEXT'), which a blank-separated key rarely holds."""
    return value.isalpha() and (value.islower() or value.isupper() or value[1:].islower())


def _call_ok(text: str, key_start: int, span: Span) -> bool:
    """For `KEY', 'value'`: the key is a call's first argument and the value no field name."""
    quote = key_start - 1
    if quote < 0 or text[quote] not in "'\"":
        return False
    if _CALL_OPEN.search(text, max(0, quote - 16), quote) is None:
        return False
    return _FIELD_NAME.fullmatch(text[span[0] : span[1]]) is None


def _element_span(text: str, key: str, tag: str, at: int) -> Span | None:
    """`<tag ...>value</tag>`: the value, when it is the element's whole text and a secret."""
    end = text.find(f"</{tag}>", at, at + _XML_MAX)
    if end <= at:
        return None
    raw = text[at:end]
    value = raw.strip()
    if not value or "<" in value or "\n" in value or is_not_secret_value(value, key, bare=False):
        return None
    start = at + len(raw) - len(raw.lstrip())
    return (start, start + len(value), SECRET)


def _xml_span(text: str, key: str, key_start: int, at: int, quoted: bool) -> Span | None:
    """`<password>x</password>` or `<property name="password">x</property>`."""
    if not quoted:
        if key_start == 0 or text[key_start - 1] != "<":
            return None
        return _element_span(text, key, text[key_start : at - 1], at)
    line_start, _ = line_bounds(text, key_start, 256)
    opening = _NAMED_OPEN.search(text, line_start, key_start - 1)
    return None if opening is None else _element_span(text, key, opening.group("tag"), at)


def _netrc(text: str, key_start: int) -> bool:
    """The key ends a `.netrc` entry's head: 'machine <host>' or 'default', 'login <user>'."""
    low = max(0, key_start - _NETRC_BACK)
    if text.find("login", low, key_start) < 0:
        return False
    return _NETRC.search(text, low, key_start) is not None


def _blank_span(text: str, key: str, key_start: int, at: int) -> tuple[Span | None, int]:
    """A key and its value with blanks alone between them.

    In a `.netrc` entry (`machine h login u password p`) any value; where the
    pair makes up its line (`ENV API_KEY x`, `requirepass x`, `  password x
    # prod`), a value that is no plain word ('reset', 'TEXT'); elsewhere a key
    with '_' and a value that `looks_random` (`aws configure set
    aws_secret_access_key X`).
    """
    if _netrc(text, key_start):  # its tokens are whatever lies between blanks
        token = _NETRC_TOKEN.match(text, at)
        if token is None or is_not_secret_value(token.group(0), key, bare=False):
            return None, at
        return (token.start(), token.end(), SECRET), token.end()
    if opens_line(text, key_start):
        span, end = value_span(text, key, at, extend="line")
        if span is not None and _LINE_TAIL.match(text, span[1]) is not None:
            quoted = span[0] > at and text[span[0] - 1] in "\"'`"
            word = text[span[0] : span[1]].rstrip(".,;:!?")  # 'token limit.' ends a sentence
            plain = _wordlike(word) and key.lower() not in _DIRECTIVES
            if quoted or not plain:
                return span, end
    if "_" not in key:
        return None, at
    return value_span(text, key, at, random_only=True)


def _pair_span(
    text: str, key: str, key_start: int, match: re.Match[str], blanked: list[Span]
) -> tuple[Span | None, int]:
    """The span to blank for one key match of `kv_rule`, and where its value ends."""
    at = match.end()
    quoted_key = match.group("kq") is not None
    kind = match.lastgroup  # the separator's group closes last
    if kind == "xml":
        return _xml_span(text, key, key_start, at, quoted_key), at
    if kind == "ws":
        return _blank_span(text, key, key_start, at)
    if kind == "comma":
        span, end = value_span(text, key, at)
        ok = span is not None and quoted_key and _call_ok(text, key_start, span)
        return (span if ok else None), end
    separator = match.group("sep").strip()
    colon = separator == ":"
    # YAML keys open their lines; 'if token:' and 'case "secret":' end code lines
    if (
        colon
        and text[at : at + 1] in _BLOCK_STARTS
        and not quoted_key
        and opens_line(text, key_start)
    ):
        block = yaml_block_span(text, key, key_start, at)
        if block is not None:
            return block
    newline = text.rfind("\n", max(0, key_start - _CACHED_LINE), key_start)
    line_start = newline + 1
    line_end = text.find("\n", at, at + _CACHED_LINE)
    if line_end < 0 and at + _CACHED_LINE >= len(text):
        line_end = len(text)
    short = (newline >= 0 or key_start <= _CACHED_LINE) and line_end >= 0
    if short and not (blanked and blanked[-1][1] > line_start):
        # Everything `value_span` reads lies on the key's line: judge the line
        # alone, once per distinct line (code lines recur across a trajectory).
        found, end = _line_pair(
            text[line_start:line_end], key, key_start - line_start, at - line_start, separator,
            quoted_key,
        )  # fmt: skip
        if found is not None:
            found = (found[0] + line_start, found[1] + line_start, found[2])
        return found, end + line_start if end else 0
    return value_span(
        text,
        key,
        at,
        yaml=colon,
        separator=separator,
        key_start=key_start,
        quoted_key=quoted_key,
        blanked=blanked,
    )


@lru_cache(maxsize=4096)
def _line_pair(
    line: str, key: str, key_start: int, at: int, separator: str, quoted_key: bool
) -> tuple[Span | None, int]:
    """`value_span` for a pair on one line, judged on that line alone (see `_pair_span`)."""
    return value_span(
        line,
        key,
        at,
        yaml=separator == ":",
        separator=separator,
        key_start=key_start,
        quoted_key=quoted_key,
        blanked=[],
    )


def kv_rule(doc: Doc) -> None:
    """Values under secret-named keys: `password=x`, `"api_key": "x"`, `SMTP_PASS: x`.

    Separators ':', '=', ':=', '=>', '<-', blanks (`_blank_span`) and a call's
    comma (`define('KEY', 'x')`); bare, quoted ('', "", ``, with string
    prefixes and escapes), JSON-escaped and list values; YAML block scalars
    and next-line values (`yaml_block_span`); XML elements. An auth scheme word
    (`Bearer`, `Basic`, ...) stays. A bare value that opens its line's pair
    (`.env`, INI, YAML) runs to the next blank, so a password holding ';', '&'
    or ',' goes whole.
    """
    low = doc.low
    text = doc.text
    spans: list[Span] = []
    scanned = 0
    # Each scan is as fast as a `stem in low` check; merged in text order, so a
    # key inside a blanked value is skipped whatever its stem, as it is gone on
    # a second pass (idempotence). Keys inside a value left in clear are judged
    # on their own (a later rule may blank the outer key, and a second pass
    # would judge them), unless the value is long: 'token=xxxxxxtoken=...' and
    # the like stay linear.
    if len(low) < _SMALL:
        matches = list(_KV_ANY.finditer(low))
    else:
        matches = [match for _, pattern in _KV_KEYS for match in pattern.finditer(low)]
        matches.sort(key=re.Match.start)
    netrc = "login" in low  # a .netrc entry has one; see `_blank_span`
    for match in matches:
        if match.start() < scanned:
            continue
        stem_at = match.start()
        key_start = stem_at
        while (
            key_start > 0 and stem_at - key_start < _MAX_KEY and text[key_start - 1] in _KEY_CHARS
        ):
            key_start -= 1
        key = text[key_start : match.end("key")].rsplit(".", 1)[-1]
        if not is_secret_key(key) or text[key_start - 1 : key_start] in ("/", "\\"):
            continue  # not secret-named, or a file's name: '"/etc/passwd": ...'
        if match.lastgroup == "ws" and not (netrc or "_" in key or opens_line(text, key_start)):
            continue  # 'the token counts': prose (`_blank_span` would say so, more slowly)
        span, end = _pair_span(text, key, key_start, match, spans)
        if span is not None:
            spans.append(span)
        if span is not None or end - match.end() > _SKIP_INSIDE:
            scanned = max(scanned, end)
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
        span, _ = value_span(text, names[-1].group("name"), match.end())
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


def _line_context(text: str, start: int, end: int, spans: list[Span]) -> str:
    """The line before a flag, lower-cased, without the values already blanked on it.

    A command word inside a blanked value (`redis-cli -a 'mysql' ... -passout`)
    is gone on a second pass, so it must not count on the first (idempotence).
    """
    line = text[start:end].lower()
    if not spans or spans[-1][1] <= start or not any(word in line for word in _COMMANDS):
        return line
    inside: list[Span] = []
    for span in reversed(spans):  # in text order, so the line's own come last
        if span[1] <= start:
            break
        if span[0] < end:
            inside.append(span)
    parts: list[str] = []
    for span_start, span_end, _ in reversed(inside):
        parts.append(text[start : max(start, span_start)])
        start = max(start, span_end)
    parts.append(text[start:end])
    return "".join(parts).lower()


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
        found = _flag_value(text, flag, _line_context(text, line_start, flag.start(), spans))
        if found is None or text[found[1] : found[1] + 1] == "-":
            continue
        name, at = found
        if name == "user":  # user:password, only the password goes
            value = KV_VALUE.match(text, at)
            colon = text.find(":", at, value.end()) if value else -1
            if value is None or colon < 0:
                continue
            name, at = "password", colon + 1
        span, _ = value_span(text, name, at, yaml=False, extend="line")  # a shell word
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
    commands = list(_COMMANDS)
    # A stem counts only when its key is followed by what can follow a key
    # ('passed' and 'tokens' alone do not), as in `_KV_KEYS` and `_FLAG`.
    stems = "|".join(stem for stem, _ in _KV_STEMS)
    keyed = f"(?:{stems})[a-z0-9_-]*\\\\?[\"']?\\]?[ \t:=,><]"
    return ["://", "value", *commands, keyed]
