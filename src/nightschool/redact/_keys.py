"""Which names name a secret, and which values under them are plainly not one.

`is_secret_key` judges a key, header or flag name; `is_not_secret_value`
judges the value written under such a name (references, placeholders, code).
Both err towards redacting: a name or value they cannot place counts as secret.
"""

from __future__ import annotations

import itertools
import re
from functools import cache, lru_cache

_STRONG_WORDS = frozenset(
    {
        "password", "passwd", "passphrase", "passcode", "secret", "secrets",
        "apikey", "authorization", "auth", "cookie", "cookies", "credential",
        "credentials", "privatekey", "secretkey", "accesskey", "bearer",
        "requirepass", "masterauth", "pwd",
    }
)  # fmt: skip
_SUBSTRING_WORDS = ("password", "passwd", "secret")
_NOT_SECRET_WORDS = frozenset({"passwordless", "secretless", "secretsmanager", "secretstr"})
# Words that make 'key' a secret's name when they come just before it: generic
# qualifiers and the services whose keys agents most often handle.
_KEY_QUALIFIERS = frozenset(
    {
        "api", "access", "private", "secret", "signing", "encryption", "master", "auth",
        "client", "app", "service", "webhook", "license", "consumer", "account",
        "subscription", "shared", "hmac", "jwt", "session", "admin", "root", "deploy",
        "storage", "openai", "anthropic", "stripe", "sendgrid", "mailgun", "twilio",
        "google", "gemini", "groq", "mistral", "cohere", "replicate", "pinecone",
        "algolia", "azure", "aws", "github", "gitlab", "slack", "discord", "telegram",
        "hf", "huggingface", "cloudflare", "datadog", "openrouter", "deepseek",
    }
)  # fmt: skip
# 'pass' names a password only as the last of two or more words ('db_pass');
# alone it means other things. ('pwd', a strong word, names the password of
# connection strings, 'Pwd=...;'; the shell's PWD holds a path, and
# `is_not_secret_value` keeps paths.)
_SHORT_PASSWORD_WORDS = frozenset({"pass"})
_TOKEN_COUNT_WORDS = frozenset(
    {
        "count", "counts", "num", "number", "max", "min", "limit", "limits", "total",
        "usage", "used", "len", "length", "budget", "in", "out", "input", "output",
        "prompt", "completion", "per", "rate", "estimate", "estimated", "type",
        "types", "id", "ids", "index", "idx", "size", "cost", "logprob", "logprobs",
    }
)  # fmt: skip
# Tokens of a tokenizer or a paginated API, not credentials: 'eos_token',
# 'pad_token', 'next_token' (AWS's NextToken), 'page_token'.
_TOKEN_KIND_WORDS = frozenset(
    {
        "bos", "eos", "pad", "unk", "sep", "cls", "mask", "start", "end", "stop",
        "special", "eot", "begin", "first", "last", "next", "prev", "previous",
        "current", "cur", "lookahead", "peek", "word", "subword", "char", "added",
        "vocab", "page", "continuation", "cursor", "sync", "resume", "pagination",
    }
)  # fmt: skip
# A last word that makes the name describe a secret rather than hold one:
# 'password_min_length', 'secret_name', 'api_key_header', 'token_url'.
_META_WORDS = _TOKEN_COUNT_WORDS | frozenset(
    {
        "method", "mode", "name", "names", "enabled", "disabled", "enable", "disable",
        "required", "policy", "expiry", "expires", "expiration", "ttl", "timeout",
        "url", "uri", "urls", "endpoint", "header", "field", "file", "path", "dir",
        "provider", "strategy", "scheme", "format", "version", "env", "var", "ref",
        "label", "hint", "rotation", "days", "seconds", "hours", "minutes", "ms", "age",
        "algorithm", "algo", "region", "location", "manager", "backend", "source",
        "flag", "option", "second", "secure", "httponly", "samesite", "domain",
        "pattern", "regex", "prefix", "suffix", "template", "schema", "description",
        "placeholder", "headers", "time", "timestamp", "date", "at", "str", "details",
    }
)  # fmt: skip
_ACRONYM = re.compile(r"([A-Z]+)([A-Z][a-z])")  # 'APIKey' -> 'API_Key'
_CAMEL = re.compile(r"([a-z0-9])([A-Z])")  # 'apiKey' -> 'api_Key'
_NON_ALNUM = re.compile(r"[^a-z0-9]+")
_LETTER_DIGIT = re.compile(r"(?<=[a-z])(?=[0-9])|(?<=[0-9])(?=[a-z])")  # 'key2' -> 'key_2'


def _words(name: str) -> list[str]:
    """Lower-case words of a name; numbers are dropped ('API_KEY_2' -> ['api', 'key'])."""
    spaced = _CAMEL.sub(r"\1_\2", _ACRONYM.sub(r"\1_\2", name)).lower()
    words = _NON_ALNUM.split(_LETTER_DIGIT.sub("_", spaced))
    return [word for word in words if word and not word.isdigit()]


@lru_cache(maxsize=4096)
def is_secret_key(name: str) -> bool:
    """Say whether a mapping key, header or command-line flag name names a secret.

    The name is normalised first: camelCase is split, case folded and every run
    of non-alphanumerics becomes a word break, so 'X-Api-Key', 'x_api_key',
    '--api-key' and 'XApiKey' all read as the words ['x', 'api', 'key'].

    A name is secret when one of its words is in a fixed list (password, passwd,
    pwd, passphrase, secret, apikey, authorization, auth, cookie,
    credential(s), requirepass, ...), a word contains 'password', 'passwd' or
    'secret' ('dbpassword', 'clientsecret'), 'key' or 'keys' follows a
    qualifier ('api key', 'client key', 'stripe key', ...), the last of two or
    more words is 'pass' ('smtp_pass'), or a word is or ends with 'token'
    ('session_token') and no word marks a token count ('max', 'in', 'out',
    'count', 'usage', ...) or a tokenizer's or a paginated API's token
    ('eos_token', 'pad_token', 'next_token', 'page_token'). Numbers are no
    words ('API_KEY2' reads as ['api', 'key']).

    It is not secret, whatever the words before, when its last word says the
    value describes a secret instead of holding one: 'password_min_length',
    'secret_name', 'api_key_header', 'token_url', 'auth_method',
    'password_file', 'MAX_PASSWORD_AGE' (the list is `_META_WORDS`), or when a
    word is 'passwordless' and the like.

    Args:
        name: the key as written.

    Returns:
        True when values under this name should be replaced whole.
    """
    words = _words(name)
    if not words or words[-1] in _META_WORDS or any(w in _NOT_SECRET_WORDS for w in words):
        return False
    for word in words:
        if word in _STRONG_WORDS or any(sub in word for sub in _SUBSTRING_WORDS):
            return True
    if any(a in _KEY_QUALIFIERS and b in ("key", "keys") for a, b in itertools.pairwise(words)):
        return True
    if len(words) > 1 and words[-1] in _SHORT_PASSWORD_WORDS:
        return True
    if any(word.endswith("token") for word in words):
        return not any(w in _TOKEN_COUNT_WORDS or w in _TOKEN_KIND_WORDS for w in words)
    return False


# --- values -------------------------------------------------------------------

_NOT_SECRET_VALUES = frozenset(
    {
        "", "none", "null", "nil", "true", "false", "undefined", "redacted", "***",
        "str", "string", "bytes", "int", "number", "bool", "boolean", "any",
        "secretstr", "optional", "required", "bearer", "basic", "token", "digest",
        "negotiate", "apikey", "api-key", "await", "new", "lambda", "function", "yield",
        "not", "password", "passwd", "secret", "changeme", "todo", "tbd", "fixme",
        "id", "float", "char", "object", "dict", "list", "array", "uuid",
    }
)  # fmt: skip
# Bare words that code assigns or passes ('api_key = value', 'self._auth =
# auth') or that prose and usage lines put after a key ('--secrets KEY',
# '--password requires --user', 'wandb_api_key: The API key ...').
_CODE_WORDS = frozenset(
    {
        "value", "val", "obj", "data", "result", "res", "ret", "arg", "args", "kwargs",
        "default", "other", "tmp", "temp", "item", "cls", "self", "this", "key", "name",
        "text", "line", "params", "config", "cfg", "conf", "settings", "options", "opts",
        "headers", "response", "resp", "req", "request", "payload", "body", "content",
        "input", "output", "env", "environ", "ctx", "context", "creds", "cred", "file",
        "path", "string", "the", "a", "an", "and", "or", "is", "are", "was", "be", "to",
        "of", "in", "on", "for", "with", "by", "from", "as", "at", "if", "then", "else",
        "when", "which", "that", "it", "its", "requires", "require", "must", "should",
        "will", "can", "may", "use", "see", "also", "only",
    }
)  # fmt: skip
# Class names: two or more capitalised humps, letters only, capitals in a row
# only at the start ('ReadableBuffer', 'HTTPPasswordMgr', 'ClientSecret'); a
# bare one after ':' is a type annotation, not a secret (random letters rarely
# split so: 'VYYweLvepWOpj' does not).
_CLASS_NAME = re.compile(r"_?[A-Z]+[a-z]{2,}(?:[A-Z][a-z]{2,})+")
# A quoted sentence: four or more words that end with a full stop or hold one.
_SENTENCE = re.compile(r"\S+(?: \S+){3,}")
_ENV_PREFIXES = ("$", "{{", "os.environ", "process.env", "env.", "import.meta.env", "ENV[")
# '%NAME%' (cmd.exe), '%(name)s' and '%s' (printf); not any value that starts with '%'.
_PERCENT_REF = re.compile(r"%(?:[A-Za-z_][\w.-]*%|\(|[sdr](?![A-Za-z0-9]))")
# A filesystem path ('/run/secrets/db', '~/.netrc', 'C:\\keys\\a.pem'): it names a
# secret's file, or is the shell's PWD; never the secret itself.
_PATH = re.compile(r"(?:~|\.{1,2})?(?:/[\w.@-]++)++/?|[A-Za-z]:\\[\w.\\ -]*+")
_PATH_WORD = re.compile(r"\.?[A-Za-z][a-z]+")  # 'run', 'Users', '.netrc': a directory's name

_OUR_PLACEHOLDER = re.compile(r"<(?:REDACTED_[A-Z_]+|user)>")
"""One of our own placeholders. A value holding one was rewritten by an earlier
rule (or pass), so it is left alone: 'redis-cli -a "/home/your_' passes as a
placeholder value, its home path then becomes '/home/<user>', and a second pass
must not redact it (found by the idempotence property test)."""
# Words that mark a value as a stand-in for a secret ('your_api_key_here').
_PLACEHOLDER_WORDS = frozenset(
    {
        "your", "here", "placeholder", "changeme", "replaceme", "redacted", "example",
        "sample", "dummy", "todo", "insert", "replace", "goes", "removed", "masked",
        "hidden", "omitted",
    }
)  # fmt: skip
# Placeholder words stand between separators that people type in names
# ('your_api_key_here', '<your-key>'), not between a random password's symbols
# ('Todo^Yo4!!i*p').
_PLACEHOLDER_SPLIT = re.compile(r"[\s_\-.<>{}\[\]()/:'\"`]+")
_RUN = re.compile(r"(.)\1{5}")  # six equal characters: 'xxxxxx', '******', '000000'
_VERSION = re.compile(r"v?[0-9]+(?:\.[0-9]+)+(?:-(?:[0-9]+(?:\.[0-9]+)*)?|\+)?")  # '3.0-', '1.2'
_SAME = re.compile(r"(.)\1{2,}")  # a whole value of one character: 'xxx', '***', '...'
_MASK = re.compile(r"\*{3}")  # '***REMOVED***', 'sk-ab***yz'
_MASK_VISIBLE = 12  # a masked value shows a few characters; more may be a secret's core
# settings.DB_PASSWORD, self._token, cfg.s3_key, props.apiKey: words in one
# case or camelCase, digits only at a word's end, so a token with a dot
# ('BqbT7M0m.eVVBsYs6bPc2', 'gSvB_OuF.gIxL') is no name.
# Atomic and possessive throughout: the alternatives overlap ('abc' is both a
# lower-case word and a camelCase one), and backtracking into them would be
# exponential in the number of words.
_WORD = r"(?>[A-Z]+(?:[A-Z][a-z]+)++|[A-Z]?[a-z]+(?:[A-Z][a-z]+)*+|[A-Z]+)[0-9]*+"
_SEGMENT = f"_*+{_WORD}(?:_++{_WORD})*+_*+"
_DOTTED_NAME = re.compile(f"{_SEGMENT}(?:\\.{_SEGMENT})++")
# db_password, NEW_TOKEN, dbPassword_v2: words joined by '_' (not 'FqmiK_4vZGW...')
_SNAKE_NAME = re.compile(f"{_WORD}(?:_++{_WORD})++")
_SECRET_STEMS = ("pass", "pwd", "secret", "token", "key", "auth", "cred")
_YAML_TAG_OR_ALIAS = re.compile(r"!!?[A-Za-z][\w.:-]*|\*[A-Za-z_][\w-]*")  # !Ref, !!str, *anchor
_RANDOM_LOOKING = re.compile(r"\S{16,}")
_CLASSES = (
    re.compile(r"[a-z]"),
    re.compile(r"[A-Z]"),
    re.compile(r"[0-9]"),
    re.compile(r"[^A-Za-z0-9]"),
)


@cache
def _templated() -> object:
    """detect-secrets' `is_templated_secret` ({x}, <x>, ${x}), imported on first use."""
    # function-local: start-up time (detect-secrets, ~300 ms; redact loads with the CLI's store)
    from detect_secrets.filters.heuristic import is_templated_secret

    return is_templated_secret


def _visible(value: str) -> int:
    return sum(1 for char in value if char.isalnum())


def looks_placeholder(value: str) -> bool:
    """True for stand-ins such as `<your-key>`, `${X}`, `xxxxxx`, `sk-...`, `YOUR_API_KEY`.

    Templated shapes come from detect-secrets' `is_templated_secret`; the rest
    are runs of six equal characters, a whole value of three or more equal
    characters (`xxx`, `***`), a `***` mask with at most 12 letters and
    digits around it (`***REMOVED***`, `sk-ab***yz`), a
    trailing ellipsis, `[...]`, and words such as 'your', 'here', 'example',
    'placeholder', 'replace', 'removed' set apart by punctuation
    (`your_api_key_here`; not 'AKIAIOSFODNN7EXAMPLE', where a random tail
    could spell a word).
    """
    value = value.strip()
    if not value or _RUN.search(value) or value.endswith(("...", "…")):
        return True
    if _SAME.fullmatch(value) or (_MASK.search(value) and _visible(value) <= _MASK_VISIBLE):
        return True
    if value[0] == "[" and value[-1] == "]":
        return True
    templated = _templated()
    if callable(templated) and templated(value):
        return True
    return not _PLACEHOLDER_WORDS.isdisjoint(_PLACEHOLDER_SPLIT.split(value.lower()))


def _is_path(value: str) -> bool:
    r"""A filesystem path, not a base64 secret that starts with '/'.

    Its parts hold no '+', none of them `looks_random`, and one is a plain
    word ('/run/secrets/db', '/app'); Windows paths ('C:\\keys\\a.pem') too.
    """
    if _PATH.fullmatch(value) is None:
        return False
    if value[1:2] == ":":
        return True
    parts = [part for part in value.split("/") if part]
    return any(_PATH_WORD.fullmatch(part) for part in parts) and not any(
        looks_random(part) for part in parts
    )


def _is_prose(value: str, after: str) -> bool:
    """'auth: user session started', 'Password: Enter your password': a word, then prose.

    A placeholder after the word counts as prose too: a later rule may put one
    there ('auth: user a@b.example' -> 'auth: user <REDACTED_EMAIL>'), and a
    second pass must judge the word as the first did.
    """
    letters = value.replace("-", "")  # 're-exchanging on every call'
    word = letters.isalpha() and (
        value.islower()
        or (value[0].isupper() and value[1:].islower())
        or (value.isupper() and len(value) <= 5)  # 'credentials: API key', 'PEM private'
    )
    return word and after[:1] == " " and (after[1:2].islower() or after[1:2] == "<")


@lru_cache(maxsize=4096)  # the same code lines recur across a trajectory's steps
def is_not_secret_value(
    value: str, key: str, *, bare: bool, after: str = "", yaml: bool = True
) -> bool:
    """Say whether `value`, written under the secret-named `key`, is plainly not a secret.

    Not secrets: empty and null-like words, type names (also GraphQL's
    `String!`, `ID!`), placeholders (`looks_placeholder`), values holding one of our
    own (`<REDACTED_...>`, `<user>`), values with no letter or digit,
    environment reads and references (`$X`, `%X%`, `{{ x }}`, `os.environ...`,
    `process.env...`), version numbers (`3.0-`, `1.2.3`), filesystem paths
    (`/run/secrets/db`, the shell's `PWD=/app`), a value equal to its key or
    ending in `.key`, a value that spells words of its key (`_AUTH = "auth"`),
    a quoted sentence ('"Use a token. Prefer ..."'). For bare
    (unquoted) values also: dotted names (`settings.DB_PASSWORD`), snake_case
    names that contain a secret word (`db_password`), class names
    (`ReadableBuffer`; only where `yaml`), words of code and prose (`value`, `self`, `the`,
    `requires`), a number under a token's name (a token id), YAML tags and
    aliases (`!Ref`, `*default`; only where `yaml`), and a word followed by
    more prose (`auth: user session started`, `Password: Enter your password`).

    Args:
        value: the value as matched, quotes removed.
        key: the key it sits under.
        bare: True when the value was not quoted.
        after: the text right after the value (only its first characters are read).
        yaml: the separator could be YAML's or an annotation's ':' (a bare
            `!Ref x` or `*alias` there is a tag or an alias, `ClientSecret` a
            type; after '=' or a flag they are passwords).
    """
    stripped = value.strip()
    lowered = stripped.lower()
    key_lower = key.lower()
    if (
        lowered in _NOT_SECRET_VALUES
        or lowered.rstrip("!?") in _NOT_SECRET_VALUES
        or stripped.startswith(_ENV_PREFIXES)
        or _PERCENT_REF.match(stripped)
        or lowered == key_lower
        or lowered.endswith("." + key_lower)
        or not any(ch.isalnum() for ch in stripped)
        or _OUR_PLACEHOLDER.search(stripped)
        or _is_path(stripped)
        or _VERSION.fullmatch(stripped)
        or looks_placeholder(stripped)
    ):
        return True
    if _names_the_key(stripped, key):
        return True
    if not bare:
        return _SENTENCE.fullmatch(stripped) is not None and (
            stripped[-1] in ".!?" or ". " in stripped
        )
    if lowered.rstrip(".,:;") in _CODE_WORDS or (stripped.isdigit() and _token_only(key)):
        return True
    if _DOTTED_NAME.fullmatch(stripped) or (yaml and _CLASS_NAME.fullmatch(stripped)):
        return True
    if yaml and _YAML_TAG_OR_ALIAS.fullmatch(stripped):
        return True
    if _SNAKE_NAME.fullmatch(stripped) and any(stem in lowered for stem in _SECRET_STEMS):
        return True
    return _is_prose(stripped, after)


_NAME_CHARS = re.compile(r"[A-Za-z_.-]+")
# Words of made-up example values ('my_token', 'my-secret', 'test_api_key').
_FILLER_WORDS = frozenset(
    {
        "my", "our", "the", "a", "an", "some", "test", "fake", "dummy", "foo", "bar",
        "baz", "secret", "secrets", "token", "key", "api", "password", "pass", "value",
        "new", "old", "user", "default", "demo", "mock", "x",
    }
)  # fmt: skip


def _names_the_key(value: str, key: str) -> bool:
    """The value spells words of its key, or made-up words: `_AUTH = "auth"`, `"my_token"`.

    Also `X_ACCESS_TOKEN = "X-Access-Token"` (a header's name) and `"my-secret"`.
    """
    if _NAME_CHARS.fullmatch(value) is None:
        return False
    value_words = _words(value)
    key_words = _words(key)
    n = len(value_words)
    if n > 1 and set(value_words) <= _FILLER_WORDS.union(key_words):
        return True  # 'my_token', 'my-secret-key'
    return 0 < n <= len(key_words) and any(
        key_words[i : i + n] == value_words for i in range(len(key_words) - n + 1)
    )


def _token_only(key: str) -> bool:
    """The key names a token and nothing stronger ('token', 'session_token'): numbers are ids."""
    words = _words(key)
    return not any(w in _STRONG_WORDS or any(s in w for s in _SUBSTRING_WORDS) for w in words)


def looks_random(value: str) -> bool:
    """16+ non-space characters from at least three of: lower, upper, digits, symbols."""
    if _RANDOM_LOOKING.fullmatch(value) is None:
        return False
    return sum(1 for cls in _CLASSES if cls.search(value)) >= 3
