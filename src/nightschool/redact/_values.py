"""Values under secret-named keys: where one starts and ends, and whether it is a secret.

`value_span` judges the value that follows a key, a flag or a name/value
record's name (`_assignments`): it reads the value (bare, quoted, escaped,
listed), widens a bare one as far as its context delimits it (a line, a URL
query, a connection string, an HTTP header), keeps auth scheme words, and
leaves alone what is no secret (`is_not_secret_value`) or what code passes,
annotates or assigns (`_code_reference`).
"""

from __future__ import annotations

import re

from nightschool.redact._doc import SECRET, Span
from nightschool.redact._keys import is_not_secret_value, looks_random

__all__ = ["KV_VALUE", "opens_line", "value_span"]

_SCHEMES = r"(?:[Bb]earer|[Bb]asic|[Tt]oken|[Dd]igest|[Nn]egotiate|[Aa]pi-?[Kk]ey)"
_SCHEME = r"(?:" + _SCHEMES + r"[ \t]+)?"  # an auth scheme stays in clear
# before a bare value, atomic: a credential that the bare pattern cannot take
# ('token ab[cd') is not read as the value 'token'
_BARE_SCHEME = r"(?>(?:" + _SCHEMES + r"[ \t]+)?)"
KV_VALUE = re.compile(
    # a YAML type tag ('!!str') is not part of the value; atomic, so a tag before
    # a placeholder ('!!str <REDACTED_SECRET>') is never read as the value itself
    r"(?>(?:!![a-z]+[ \t]+)?)"
    r"(?P<list>\[[ \t]*+(?=\\?[\"'`]))?"  # a list of strings: each goes, see `value_span`
    r"(?P<pre>[rRbBuUfF]{1,2}(?=[\"'`]))?"  # a string prefix: r'...', b"...", f"..."
    r"(?:\"" + _SCHEME + r"(?P<dval>(?:[^\"\\\r\n]|\\[^\r\n])++)"  # "value", with escapes
    r"|'" + _SCHEME + r"(?P<sval>(?:[^'\\\r\n]|\\[^\r\n])++)"  # 'value'
    r"|`" + _SCHEME + r"(?P<bval>[^`\r\n]++)"  # `value`
    r"|\\[\"']" + _SCHEME + r"(?P<eval>[^\"'\\\r\n]++)"  # \"value\" inside a JSON string
    r"|"
    + _BARE_SCHEME
    + r"(?P<val>[^\s\"'\\,;&(){}\[\]<>=`][^\s\"'\\,;&(){}\[\]<>`]*+)"  # bare: one token
    r"(?![(\[]|<(?:REDACTED_|user>)))"  # not a call or subscript, not cut by a placeholder
)
_LIST_ITEM = re.compile(r"[ \t]*+,[ \t]*+(?:\"([^\"\\\r\n]*+)\"|'([^'\\\r\n]*+)')")
_TEMPLATE_MARKS = ("${", "{{", "#{")  # interpolation: the value is built, not written
_REGEX_MARKS = re.compile(r"[\\()\[\]{}|]")  # r'(?:key|pwd)': a raw string that is a pattern

# Where a line starts a `KEY value` / `KEY=value` pair: indentation, a YAML
# list dash, and shell or Dockerfile words (`export`, `set`, `setx`, `ENV`,
# `ARG`, ...), or PowerShell's `$env:`.
_LINE_HEAD = re.compile(
    r"[ \t]*+(?:(?:export|set|setx|env|ENV|ARG|declare|readonly|local|-)[ \t]++)*+(?:\$env:)?"
)
_HEAD_ENDS = frozenset({"", "\n", " ", "\t", ":"})  # what can come just before such a key
_LINE_VALUE_CHARS = frozenset("\"'`\\;&,<>")  # what ends a bare value, not a line's value
_BRACKET_CHARS = frozenset("()[]{}")
_CUTTERS = _LINE_VALUE_CHARS | _BRACKET_CHARS
_BARE_START = re.compile(  # where a bare value starts (see `KV_VALUE`)
    r"(?>(?:!![a-z]+[ \t]+)?)" + _BARE_SCHEME + r"[^\s\"'\\,;&(){}\[\]<>=`]"
)
_IDENTIFIERS = re.compile(r"[A-Za-z_][A-Za-z0-9_]*+(?:\.[A-Za-z_][A-Za-z0-9_]*+)*+")
_OPENERS = {"(": ")", "[": "]", "{": "}"}
_CLOSING_TAIL = re.compile(r"[)\]}]++[ \t]*+[,;:]?")  # 'secret=secret),'
_COMMENT = re.compile(r"[ \t]++(?:#|//)[^\n]*+$")  # a line's trailing comment
_CODE_LINE = 512  # characters of a line read for its brackets
# A flag just before a key: its argument is one shell word ('docker run -e K=x',
# 'kubectl ... --from-literal=k=x', 'helm --set k=x').
_FLAG_BEFORE = re.compile(r"(?<![\w-])--?[A-Za-z][\w-]*+(?:[ \t]++|=)\Z")
_QUERY_CONN = frozenset({"?", "&", ";"})  # before a key: a URL query's or a connection string's
_EXTEND = {
    "line": re.compile(r"\S*+"),
    "query": re.compile(r"[^\s&#\"'`<>)\]}]*+"),
    "conn": re.compile(r"[^;\r\n\"']*+"),
    "header": re.compile(r"[^\r\n\"'`]*+"),
}
# Code, not config (`_code_reference`). A variable's or a constant's name:
# snake_case words in one case, digits at a lone word's end ('f1_score',
# 'v4auth_header', 'DEFAULT', 'credential'); not mixed case ('Ho9lU2Xk'),
# which counts only in a parameter list (`_IDENTIFIER`).
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*+")
_NAME_LIKE = re.compile(
    r"_*+(?:[a-z]++[0-9]*+|[a-z][a-z0-9]*+(?:_++[a-z][a-z0-9]*+)++)_*+"
    r"|_*+(?:[A-Z]++[0-9]*+|[A-Z][A-Z0-9]*+(?:_++[A-Z][A-Z0-9]*+)++)_*+"
)
_SNAKE_IDENTIFIER = re.compile(r"[a-z][a-z0-9]*(?:_[a-z0-9]+)+")
_BRACKETS = re.compile(r"[()\[\]{}]")
_UNPACKING = re.compile(r"[ \t]*[\w.]+[ \t]*,[ \t]*")  # 'user, password = ...'
_UNPACKING_BACK = 64  # characters of a line read before its key for `_UNPACKING`
_EXPRESSION_AFTER = re.compile(r"[ \t]++(?:[-+*/%]|\*\*|//|if|or|and)[ \t]")  # 'now + ttl'
_ANNOTATION_AFTER = re.compile(r"[ \t]*+(?:\|[ \t]|=(?!=))")  # 'X | None', 'X = default'
# 'Authorization: <Scheme> <credential>' for schemes not in `_SCHEMES` (SSWS,
# AWS4-HMAC-SHA256, SharedKey, ...): the scheme stays, the rest of the line goes.
_AUTH_HEADERS = frozenset({"authorization", "proxy-authorization"})
_SCHEME_WORDS = frozenset({"bearer", "basic", "token", "digest", "negotiate", "apikey", "api-key"})
_SCHEME_WORD = re.compile(r"[A-Z][A-Za-z0-9_-]*")
_CREDENTIAL = re.compile(r"[ \t]++([^\s\"'`][^\r\n\"'`]*)")


def _enclosing(text: str, key_start: int, blanked: list[Span]) -> str:
    """The innermost bracket ('(', '[', '{') still open before the key on its line, or ''.

    Brackets inside values already blanked (`blanked`, in text order) do not
    count: a second pass finds a placeholder there, and must judge alike.
    """
    line_start = text.rfind("\n", max(0, key_start - 256), key_start) + 1
    low = max(line_start, key_start - 256)
    holes = [(a, b) for a, b, _ in reversed(blanked) if b > low and a < key_start]
    depth = 0
    for bracket in reversed(list(_BRACKETS.finditer(text, low, key_start))):
        at = bracket.start()
        if any(a <= at < b for a, b in holes):
            continue
        char = bracket.group(0)
        if char in ")]}":
            depth += 1
        elif depth == 0:
            return char
        else:
            depth -= 1
    return ""


def _unpacking(text: str, key_start: int) -> bool:
    """The line before the key is 'name, ' (`user, password = ...`), within 64 characters."""
    newline = text.rfind("\n", max(0, key_start - _UNPACKING_BACK - 1), key_start)
    if newline < 0 and key_start > _UNPACKING_BACK:
        return False
    return _UNPACKING.fullmatch(text, newline + 1, key_start) is not None


def _code_reference(
    text: str, key_start: int, at: int, raw: str, end: int, blanked: list[Span]
) -> bool:
    """A bare name that code passes, annotates or assigns, not a written secret.

    `f(password=DEFAULT)`, `api_key=credential,` and `{"token": tok}` (before
    ',', ')' or '}'), `def f(self, api_keys: AsyncAPIKeys)` (any name in a
    parameter list), `user, password = auth` (unpacking), `token: Token | None
    = None` (an annotation), `expires = now + ttl` (an expression), `password =
    user_input` (a snake_case name after a spaced '='). Mixed-case names count
    only in parentheses: 'Ho9lU2Xk' after '=' is a password.
    """
    if _NAME_LIKE.fullmatch(raw) is None:
        if _IDENTIFIER.fullmatch(raw) is None or looks_random(raw):
            return False
        in_parens = _enclosing(text, key_start, blanked) == "("
        if not in_parens:
            return False
    else:
        in_parens = _enclosing(text, key_start, blanked) == "("
    sep = at
    while sep > key_start and text[sep - 1] in " \t":
        sep -= 1
    separator = text[sep - 1 : sep]
    spaced = text[at - 1 : at] == " "
    quoted_key = text[key_start - 1 : key_start] in ("'", '"')
    closes = text[end : end + 1] in (",", ")", "}")
    # 'api_key=credential,' ends a line of a call's arguments (or a blank
    # follows); 'KEY=ABC,def' is one value
    ends = text[end + 1 : end + 2] in ("", " ", "\t", "\r", "\n") or text[end : end + 1] != ","
    if closes and ends and ((separator == "=" and not spaced) or quoted_key):
        return True
    if in_parens and (closes or _ANNOTATION_AFTER.match(text, end) is not None):
        return True
    if separator == "=" and _unpacking(text, key_start):
        return True
    if _EXPRESSION_AFTER.match(text, end) is not None:
        return True
    if separator == ":" and _ANNOTATION_AFTER.match(text, end) is not None:
        return True
    return separator == "=" and spaced and _SNAKE_IDENTIFIER.fullmatch(raw) is not None


def _widens(text: str, key: str, start: int, end: int, yaml: bool) -> bool:
    """Whether the bare token `text[start:end]` goes on past `end` as one value.

    Not when the token alone is plainly no secret (a scheme word before a
    template, 'Bearer {token}'; a name, 'HF_TOKEN",'; a word before prose), nor
    when a quote that closes a string cuts it ('--auth=trust",'): a quote
    inside a value has more of the value right after it ('ab"cd').
    """
    first = text[start:end]
    after = text[end : end + 2]
    if first.lower() in _SCHEME_WORDS or is_not_secret_value(
        first, key, bare=True, after=after, yaml=yaml
    ):
        return False
    return not (after[:1] in "\"'`" and not after[1:2].isalnum())


def _extended_end(text: str, end: int, extend: str, *, force: bool = False) -> int:
    """Where a bare value ends that its context delimits more widely than one token does.

    `extend` names the context (`_EXTEND`): 'line' (the pair opens its line,
    or a `.netrc` entry: the value runs to the next blank, over quotes, ';',
    '&', ',', '<', '>', and over brackets when `force`d, see `_bracket_cut`;
    one trailing ';' or ',' is left out), 'query' (a URL query parameter: to
    '&', '#' or a blank), 'conn' (a connection string's field: to ';'),
    'header' (an HTTP header: to the line's end or a quote).
    """
    if extend == "line" and not force and (end >= len(text) or text[end] not in _LINE_VALUE_CHARS):
        return end
    run = _EXTEND[extend].match(text, end)
    stop = run.end() if run is not None else end
    while stop > end and text[stop - 1] in " \t":
        stop -= 1
    if extend == "line" and stop > end and text[stop - 1] in ";,":
        stop -= 1
    return stop


def _extension(before: str, key: str, separator: str, quoted_key: bool, opens: bool) -> str:
    """The context that delimits a bare value under `key` (see `_extended_end`), or ''.

    `before` is the character before the key; `opens`: the key opens its line.
    """
    if separator == "=" and before in ("?", "&"):
        return "query"
    if separator == "=" and before == ";":
        return "conn"
    if quoted_key or separator not in (":", "=", ":=", "=>", "<-"):
        return ""
    header = separator == ":" and ("-" in key or key.lower() in _AUTH_HEADERS)
    if header and (before in ("'", '"') or opens):
        return "header"
    return "line" if opens else ""


def _after_flag(text: str, key_start: int) -> bool:
    """The pair is a command-line flag's argument: `-e KEY=x`, `--set auth.key=x`."""
    return _FLAG_BEFORE.search(text, max(0, key_start - 64), key_start) is not None


def _pair_extension(
    text: str, key: str, key_start: int, separator: str, quoted_key: bool, end: int
) -> str:
    """`_extension` for a pair whose bare value's first token ends at `end`.

    Only a header, a query, a connection string or a token cut by one of
    `_LINE_VALUE_CHARS` or a bracket can widen, so the line's head is read
    only then.
    """
    before = text[key_start - 1 : key_start]
    header = separator == ":" and ("-" in key or key.lower() in _AUTH_HEADERS)
    cut = text[end : end + 1] in _CUTTERS
    if not (header or cut or before in ("?", "&", ";")):
        return ""
    opens = not quoted_key and (
        opens_line(text, key_start)
        or text[key_start] == "-"  # the key is a flag: '--api-key=x'
        or _after_flag(text, key_start)
    )
    return _extension(before, key, separator, quoted_key, opens)


def _bracket_cut(
    text: str, key: str, at: int, separator: str, key_start: int, quoted_key: bool, extend: str
) -> tuple[Span | None, int] | None:
    """A bare value that a bracket cuts ('eGJObq[z)J', 'K705pPq.{EKJ'), or None.

    Where its context widens a bare value (`_pair_extension`), the bracket is
    part of the secret, which then goes whole: always in a header, a URL query
    or a connection string; where the pair opens its line, unless the line
    reads as code (`_code_before_bracket`: `hash(pw)`, `tokens[0]`,
    `base64.b64decode(x)`). None: not such a value, or code (judged as before).
    """
    bare = _BARE_START.match(text, at)
    if bare is None:
        return None
    start = bare.end() - 1
    cut = start
    while cut < len(text) and text[cut] not in _BRACKET_CHARS and not text[cut].isspace():
        cut += 1
    if cut >= len(text) or text[cut] not in _BRACKET_CHARS:
        return None
    head = text[start:cut]
    if not head or is_not_secret_value(head, key, bare=False):
        return None  # '/home/(' , '$X[', 'xxx(': nothing secret before the bracket
    if separator and key_start >= 0:
        extend = _pair_extension(text, key, key_start, separator, quoted_key, cut)
    if not extend or (extend == "line" and _code_before_bracket(text, head, cut)):
        return None
    end = _extended_end(text, cut, extend, force=True)
    raw = text[start:end]
    if is_not_secret_value(raw, key, bare=True, after=text[end : end + 2], yaml=separator == ":"):
        return None, end
    return (start, end, SECRET), end


def _code_before_bracket(text: str, head: str, cut: int) -> bool:
    """`head` then a bracket at `cut` reads as code: a call, a subscript, a literal.

    The head is an identifier or a dotted chain of them (`hash`,
    `base64.b64decode`, `_BedrockSigV4Auth`), and the rest of the line is
    bracketed as code is: every bracket closes its own kind by the line's end
    (`hash(pw, salt)`, `tuple[bytes] | None`), or the line ends open, with an
    opening bracket or a comma (a call over several lines), or with closing
    brackets alone (`secret=secret)`). A secret's brackets fall otherwise
    ('eGJObq[z)J', 'qsMxi):F;Ec', 'XSz0rHOq[ea{;k', 'f3Hcqq{2}6S').
    """
    if _IDENTIFIERS.fullmatch(head.rstrip(".")) is None:
        return False
    eol = text.find("\n", cut, cut + _CODE_LINE)
    line = text[cut : cut + _CODE_LINE if eol < 0 else eol]
    body = _COMMENT.sub("", line).rstrip()
    if body.endswith(("(", "[", "{", ",", "\\")):
        return True
    stack: list[str] = []
    for i, char in enumerate(body):
        if char in _OPENERS:
            stack.append(_OPENERS[char])
        elif char in ")]}":
            if body[i + 1 : i + 2].isalnum():
                return False  # 'x{2}6S': code puts no name right after a bracket
            if stack and stack[-1] == char:
                stack.pop()
            elif stack:
                return False  # '[z)': a bracket closed by another kind
            else:  # closes what an earlier line opened: only closers may follow
                return _CLOSING_TAIL.fullmatch(body, i) is not None
    return not stack


def _authorization(text: str, key: str, start: int, end: int) -> tuple[bool, Span | None]:
    """'Authorization: SSWS 00ab...': a scheme word stays, the credential to the line's end goes.

    Returns (whether the value is a scheme and a credential, the span to blank
    or None). The scheme word is never blanked, so a second pass that finds
    `SSWS <REDACTED_SECRET>` leaves it alone.
    """
    if _SCHEME_WORD.fullmatch(text[start:end]) is None:
        return False, None
    credential = _CREDENTIAL.match(text, end)
    if credential is None or credential.group(1)[0] in "|=":  # 'Authorization: Type | None'
        return False, None
    words = credential.group(1).split()
    if len(words) > 1 and words[0].isalpha() and words[0].islower():
        return False, None  # prose: 'Authorization: The user must log in'
    value = credential.group(1).rstrip()
    if is_not_secret_value(value, key, bare=False):
        return True, None
    return True, (credential.start(1), credential.start(1) + len(value), SECRET)


def value_span(
    text: str,
    key: str,
    at: int,
    *,
    random_only: bool = False,
    yaml: bool = True,
    extend: str = "",
    separator: str = "",
    key_start: int = -1,
    quoted_key: bool = False,
    blanked: list[Span] | None = None,
) -> tuple[Span | None, int]:
    """Judge the value that starts at `at` under the secret-named `key`.

    Args:
        text: the whole text.
        key: the secret-named key.
        at: where the value starts.
        random_only: only a value that `looks_random` counts.
        yaml: the separator was ':' (YAML tags and aliases are no values).
        extend: the context that delimits a bare value (`_extended_end`), or ''.
        separator: the pair's separator (':', '=', ...); when given, `extend`
            is found from the pair's context (`_extension`) where it matters.
        key_start: where the key starts (-1: not a key/value pair; no code checks).
        quoted_key: the key's closing quote came before the separator (`"key": ...`).
        blanked: the values blanked so far by the rule, in text order.

    Returns:
        The span to blank (or None) and where the examined value ends.
    """
    value = KV_VALUE.match(text, at)
    cut_by_bracket = value is None or (
        value.lastgroup == "val" and text[value.end() : value.end() + 1] in _BRACKET_CHARS
    )
    if cut_by_bracket and ((separator and key_start >= 0) or extend):
        cut = _bracket_cut(text, key, at, separator, key_start, quoted_key, extend)
        if cut is not None:
            return cut
    if value is None:
        return None, 0
    group = value.lastgroup or "val"  # the value's group closes last
    bare = group == "val"
    start, end = value.span(group)
    token_end = end  # a bare value's first token, before its context widens it
    if bare:
        key_low = key.lower()
        if key_low in _AUTH_HEADERS:
            scheme, auth = _authorization(text, key, start, end)
            if scheme:
                return auth, auth[1] if auth else end
        if (
            separator
            and key_start >= 0
            and (
                text[end : end + 1] in _LINE_VALUE_CHARS
                or text[key_start - 1 : key_start] in _QUERY_CONN
                or (separator == ":" and ("-" in key or key_low in _AUTH_HEADERS))
            )
        ):
            extend = _pair_extension(text, key, key_start, separator, quoted_key, end)
        if extend and _widens(text, key, start, end, yaml):
            end = _extended_end(text, end, extend)
    raw = text[start:end]
    names = bare or value.group("list") is not None  # a list may hold names: ["HF_TOKEN"]
    opening = text[start - 1] if not bare else ""
    if (key_start > 0 and opening and not quoted_key and text[key_start - 1] == opening) or (
        group == "bval" and any(c in raw for c in " \t(")
    ):
        # "'Cookie:' HTTP header", '`password:` with a': the quote closes the key's;
        # 'token: `get_token()`': Markdown code
        return None, at
    if (
        is_not_secret_value(raw, key, bare=names, after=text[end : end + 2], yaml=yaml)
        or (random_only and not looks_random(raw.strip()))
        or (not bare and any(mark in raw for mark in _TEMPLATE_MARKS))
        or ("f" in (value.group("pre") or "").lower() and "{" in raw)
        or ("r" in (value.group("pre") or "").lower() and _REGEX_MARKS.search(raw) is not None)
        or (
            bare
            and key_start >= 0
            and _code_reference(
                text, key_start, at, text[start:token_end], token_end, blanked or []
            )
        )
    ):
        return None, max(end, value.end())
    if value.group("list"):
        end = _list_end(text, key, value.end())
    return (start, end, SECRET), max(end, value.end())


def _list_end(text: str, key: str, at: int) -> int:
    """Where the quoted items of a list (`["a", "b"]`) that follow the first one end."""
    end = at
    pos = at + 1 if text[at : at + 1] in "\"'`" else at  # the first item's closing quote
    while (item := _LIST_ITEM.match(text, pos)) is not None:
        raw = item.group(1) if item.group(1) is not None else item.group(2)
        if not is_not_secret_value(raw, key, bare=True):
            end = item.end() - 1
        pos = item.end()
    return end


def opens_line(text: str, key_start: int) -> bool:
    """The key starts with a letter or '_' and only `_LINE_HEAD` words come before it on its line.

    A key that starts otherwise ('1.2.3.4--password') could lose its head to a
    later rule ('<REDACTED_IP>--password'), and a second pass would judge the
    pair differently (idempotence).
    """
    first = text[key_start : key_start + 1]
    if not (first.isalpha() or first == "_") or text[key_start - 1 : key_start] not in _HEAD_ENDS:
        return False
    line_start = text.rfind("\n", max(0, key_start - 256), key_start) + 1
    if line_start == 0 and key_start > 256:
        line_start = key_start - 256
    head = text[line_start:key_start]
    return not head.strip(" \t") or _LINE_HEAD.fullmatch(head) is not None
