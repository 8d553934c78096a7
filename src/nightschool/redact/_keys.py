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
# 'pass' and 'pwd' name a password only as the last of two or more words
# ('db_pass', 'smtp_pwd'); alone they mean other things ('pass', 'PWD' = cwd).
_SHORT_PASSWORD_WORDS = frozenset({"pass", "pwd"})
_TOKEN_COUNT_WORDS = frozenset(
    {
        "count", "counts", "num", "number", "max", "min", "limit", "limits", "total",
        "usage", "used", "len", "length", "budget", "in", "out", "input", "output",
        "prompt", "completion", "per", "rate", "estimate", "estimated", "type",
        "types", "id", "ids", "index", "idx", "size", "cost", "logprob", "logprobs",
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
    }
)  # fmt: skip
_ACRONYM = re.compile(r"([A-Z]+)([A-Z][a-z])")  # 'APIKey' -> 'API_Key'
_CAMEL = re.compile(r"([a-z0-9])([A-Z])")  # 'apiKey' -> 'api_Key'
_NON_ALNUM = re.compile(r"[^a-z0-9]+")


def _words(name: str) -> list[str]:
    words = _NON_ALNUM.split(_CAMEL.sub(r"\1_\2", _ACRONYM.sub(r"\1_\2", name)).lower())
    return [word for word in words if word]


@lru_cache(maxsize=4096)
def is_secret_key(name: str) -> bool:
    """Say whether a mapping key, header or command-line flag name names a secret.

    The name is normalised first: camelCase is split, case folded and every run
    of non-alphanumerics becomes a word break, so 'X-Api-Key', 'x_api_key',
    '--api-key' and 'XApiKey' all read as the words ['x', 'api', 'key'].

    A name is secret when one of its words is in a fixed list (password, passwd,
    passphrase, secret, apikey, authorization, auth, cookie, credential(s), ...),
    a word contains 'password', 'passwd' or 'secret' ('dbpassword',
    'clientsecret'), 'key' follows a qualifier ('api key', 'client key',
    'stripe key', ...), the last of two or more words is 'pass' or 'pwd'
    ('smtp_pass'), or a word is or ends with 'token' ('session_token') and no
    word marks a token count ('max', 'in', 'out', 'count', 'usage', ...).

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
    if any(a in _KEY_QUALIFIERS and b == "key" for a, b in itertools.pairwise(words)):
        return True
    if len(words) > 1 and words[-1] in _SHORT_PASSWORD_WORDS:
        return True
    if any(word.endswith("token") for word in words):
        return not any(word in _TOKEN_COUNT_WORDS for word in words)
    return False


# --- values -------------------------------------------------------------------

_NOT_SECRET_VALUES = frozenset(
    {
        "", "none", "null", "nil", "true", "false", "undefined", "redacted", "***",
        "str", "string", "bytes", "int", "number", "bool", "boolean", "any",
        "secretstr", "optional", "required", "bearer", "basic", "token", "digest",
        "negotiate", "apikey", "api-key", "await", "new", "lambda", "function", "yield",
        "not", "password", "passwd", "secret", "changeme", "todo", "tbd", "fixme",
    }
)  # fmt: skip
_ENV_PREFIXES = ("$", "%", "{{", "os.environ", "process.env", "env.", "import.meta.env", "ENV[")
_OUR_PLACEHOLDER = re.compile(r"<(?:REDACTED_[A-Z_]+|user)>")
"""One of our own placeholders. A value holding one was rewritten by an earlier
rule (or pass), so it is left alone: 'redis-cli -a "/home/your_' passes as a
placeholder value, its home path then becomes '/home/<user>', and a second pass
must not redact it (found by the idempotence property test)."""
# Words that mark a value as a stand-in for a secret ('your_api_key_here').
_PLACEHOLDER_WORDS = frozenset(
    {
        "your", "here", "placeholder", "changeme", "replaceme", "redacted", "example",
        "sample", "dummy", "todo", "insert", "replace", "goes",
    }
)  # fmt: skip
_RUN = re.compile(r"(.)\1{5}")  # six equal characters: 'xxxxxx', '******', '000000'
_DOTTED_NAME = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+")  # settings.DB_PASSWORD
_SNAKE_NAME = re.compile(r"[A-Za-z]\w*_\w*")  # db_password, NEW_TOKEN
_SECRET_STEMS = ("pass", "pwd", "secret", "token", "key", "auth", "cred")
_YAML_TAG_OR_ALIAS = re.compile(r"![A-Za-z][\w.:-]*|\*[A-Za-z_][\w-]*")  # !Ref, *anchor
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
    from detect_secrets.filters.heuristic import is_templated_secret

    return is_templated_secret


def looks_placeholder(value: str) -> bool:
    """True for stand-ins such as `<your-key>`, `${X}`, `xxxxxx`, `sk-...`, `YOUR_API_KEY`.

    Templated shapes come from detect-secrets' `is_templated_secret`; the rest
    are runs of six equal characters, a trailing ellipsis, `[...]`, and words
    such as 'your', 'here', 'example', 'placeholder', 'replace' set apart by
    punctuation (`your_api_key_here`; not 'AKIAIOSFODNN7EXAMPLE', where a
    random tail could spell a word).
    """
    value = value.strip()
    if not value or _RUN.search(value) or value.endswith(("...", "…")):
        return True
    if value[0] == "[" and value[-1] == "]":
        return True
    templated = _templated()
    if callable(templated) and templated(value):
        return True
    return not _PLACEHOLDER_WORDS.isdisjoint(_NON_ALNUM.split(value.lower()))


@lru_cache(maxsize=4096)  # the same code lines recur across a trajectory's steps
def is_not_secret_value(value: str, key: str, *, bare: bool, after: str = "") -> bool:
    """Say whether `value`, written under the secret-named `key`, is plainly not a secret.

    Not secrets: empty and null-like words, type names, placeholders
    (`looks_placeholder`), values holding one of our own (`<REDACTED_...>`,
    `<user>`), values with no letter or
    digit, environment reads and references (`$X`, `%X%`, `{{ x }}`,
    `os.environ...`, `process.env...`), a value equal to its key or ending in
    `.key`. For bare (unquoted) values also: dotted names (`settings.DB_PASSWORD`),
    snake_case names that contain a secret word (`db_password`), YAML tags and
    aliases (`!Ref`, `*default`), and a lower-case word followed by more prose
    (`auth: user session started`).

    Args:
        value: the value as matched, quotes removed.
        key: the key it sits under.
        bare: True when the value was not quoted.
        after: the text right after the value (only its first characters are read).
    """
    stripped = value.strip()
    lowered = stripped.lower()
    key_lower = key.lower()
    if (
        lowered in _NOT_SECRET_VALUES
        or stripped.startswith(_ENV_PREFIXES)
        or lowered == key_lower
        or lowered.endswith("." + key_lower)
        or not any(ch.isalnum() for ch in stripped)
        or _OUR_PLACEHOLDER.search(stripped)
        or looks_placeholder(stripped)
    ):
        return True
    if not bare:
        return False
    if _DOTTED_NAME.fullmatch(stripped) or _YAML_TAG_OR_ALIAS.fullmatch(stripped):
        return True
    if _SNAKE_NAME.fullmatch(stripped) and any(stem in lowered for stem in _SECRET_STEMS):
        return True
    return stripped.isalpha() and stripped.islower() and after[:1] == " " and after[1:2].islower()


def looks_random(value: str) -> bool:
    """16+ non-space characters from at least three of: lower, upper, digits, symbols."""
    if _RANDOM_LOOKING.fullmatch(value) is None:
        return False
    return sum(1 for cls in _CLASSES if cls.search(value)) >= 3
