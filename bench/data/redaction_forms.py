"""Positives for the redaction corpus: PyPI tokens and key=value secrets in every form.

Kinds for `bench/data/redaction_corpus.py` (which adds them to `KINDS`), grown
from the misses measured on an outside corpus (issue 29: PyPI tokens 2 of 32,
key=value secrets 4 of 64, one of them cut in half):

- `pypi_forms`: a PyPI token in `.pypirc`, `TWINE_PASSWORD=`, an upload URL,
  quotes, after `__token__:`, glued to a `-p` flag, wrapped over lines, cut
  off after `pypi-` by a line continuation.
- `kv_quoting`: one secret-named key (12 case styles: `api_key`, `apiKey`,
  `API-KEY`, `x-api-key`, `client_secret`, ...) with every separator and
  quoting (`=`, ` = "..."`, `: '...'`, JSON, `=>`, `:=`, `<-`, string
  prefixes, backticks, lists, escaped JSON, YAML tags).
- `kv_config`: config files (YAML, block scalars, TOML, INI, XML elements and
  attributes, `.netrc`, connection strings, Kubernetes Secrets, redis.conf).
- `kv_shell`: shells and command lines (`export`, `set`, `setx`, PowerShell's
  `$env:`, Dockerfile `ENV`, `docker run -e`, `--key value`, `--key=value`,
  URL query strings, `Authorization` and API-key headers).

Half the key=value secrets also hold symbols that end a bare token elsewhere
(`HARD_SYMBOLS`: ';', '&', ',', brackets, '<', '$', '#', ...), as many as the
form lets a value hold (`hard_symbols`), so that a secret cut in two shows as
a miss (no part of it may be left).

`FORMS` lists every (kind, template) so that a test can try each one with
each key name (`KEY_NAMES`); templates take `{k}` (the key as written), `{K}`
(its environment-variable spelling), `{p}` (the secret) and `{b}` (the secret
in base64, for Kubernetes `data:`).
"""

from __future__ import annotations

import base64
import random
import re
import string
from collections.abc import Callable

ALNUM = string.ascii_letters + string.digits
URLSAFE = ALNUM + "_-"

KEY_NAMES = (
    "api_key", "apiKey", "API-KEY", "x-api-key", "client_secret", "auth_token",
    "access_token", "private_key", "passwd", "pwd", "secret", "credentials",
    "password", "DB_PASSWORD", "SecretKey", "refresh_token", "API_KEY2",
)  # fmt: skip
"""Key names in every case style the outside corpus used, and a numbered one."""

PYPI_FORMS = (
    "{s}",
    "[distutils]\nindex-servers = pypi\n\n[pypi]\nusername = __token__\npassword = {s}\n",
    "[pypi]\n  username: __token__\n  password: {s}",
    "TWINE_PASSWORD={s}",
    'export TWINE_PASSWORD="{s}"',
    "TWINE_USERNAME=__token__ TWINE_PASSWORD='{s}' twine upload dist/*",
    "UV_PUBLISH_TOKEN={s}",
    "__token__:{s}",
    "https://__token__:{s}@upload.pypi.org/legacy/",
    "twine upload -u __token__ -p {s} dist/*",
    "twine upload -u __token__ -p{s} dist/*",
    "uv publish --token {s}",
    "poetry config pypi-token.pypi {s}",
    "'{s}'",
    '"{s}"',
    "`{s}`",
    'password = "{s}"',
    '{{"username": "__token__", "password": "{s}"}}',
    "      - name: publish\n        with:\n          password: {s}",
    "{wrapped}",
    "TWINE_PASSWORD={wrapped}",
    "password = pypi-\\\n{tail}",
    "echo {s} | gh secret set PYPI_API_TOKEN",
)
"""PyPI token contexts; `{wrapped}` is the token cut over two lines at a
terminal's column, `{tail}` the token without its `pypi-` prefix."""

KV_QUOTING = (
    "{k}={p}",
    '{k} = "{p}"',
    "{k}: '{p}'",
    '"{k}": "{p}"',
    '{{"{k}":"{p}","user":"ci"}}',
    "{{'{k}': '{p}', 'user': 'ci'}}",
    "{k} => {p}",
    "'{k}' => '{p}',",
    "{k} := {p}",
    '{k} := "{p}"',
    '{k} <- "{p}"',
    "{k} = r'{p}'",
    '{k} = b"{p}"',
    "{k} = `{p}`",
    '{k} = ["{p}"]',
    "{k}: !!str {p}",
    '"{{\\"{k}\\": \\"{p}\\"}}"',
    "client = Client({k}='{p}', timeout=30)",
    "const {k} = '{p}';",
    '{k}: "{p}", # rotate monthly',
)
KV_CONFIG = (
    "{k}: {p}",
    "service:\n  {k}: {p}\n  region: eu-west-1\n",
    "{k}: >-\n  {p}\n",
    "{k}: |\n  {p}\nnext: 1\n",
    "auth:\n  {k}:\n    {p}\n",
    '[auth]\n{k} = "{p}"\n',
    "[auth]\n{k} = {p}\n",
    "<{k}>{p}</{k}>",
    "<config>\n  <{k}>\n    {p}\n  </{k}>\n</config>",
    '<auth {k}="{p}" />',
    '<property name="{k}" value="{p}"/>',
    '<entry key="{k}">{p}</entry>',
    "machine api.example.com login bob password {p}",
    "machine api.example.com\n  login bob\n  password {p}\n",
    "Server=tcp:db,1433;Database=app;User ID=sa;Password={p};",
    "Driver={{ODBC Driver 18}};Server=db;Uid=sa;Pwd={p};",
    "apiVersion: v1\nkind: Secret\nmetadata:\n  name: app\ntype: Opaque\ndata:\n  {k}: {b}\n",
    '{{"apiVersion": "v1", "data": {{"{k}": "{b}"}}, "kind": "Secret"}}',
    "requirepass {p}",
    "{K} {p}",
)
KV_SHELL = (
    "export {K}={p}",
    "export {K}='{p}'",
    "set {K}={p}",
    'setx {K} "{p}"',
    '$env:{K} = "{p}"',
    "ENV {K}={p}",
    "ENV {K} {p}",
    "docker run -e {K}={p} app:latest",
    'docker run --env {K}="{p}" app:latest',
    "app --{f} {p}",
    "app --{f}={p} --port 8080",
    "curl 'https://api.example.com/v1/items?{k}={p}&page=2'",
    "GET /callback?state=1&{k}={p} HTTP/1.1",
    "Authorization: Bearer {p}",
    "Authorization: SSWS {p}",
    "curl -H 'Authorization: Bearer {p}' https://api.example.com",
    'curl -H "X-Api-Key: {p}" https://api.example.com',
    "{K}={p} python app.py",
)

FORMS: tuple[tuple[str, str], ...] = (
    *(("kv_quoting", t) for t in KV_QUOTING),
    *(("kv_config", t) for t in KV_CONFIG),
    *(("kv_shell", t) for t in KV_SHELL),
)
"""(kind, template) for every key=value form."""


def _r(rng: random.Random, alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def pypi_token(rng: random.Random) -> str:
    """A fake PyPI token: 'pypi-' and a base64url macaroon for pypi.org or test.pypi.org."""
    location = "AgEIcHlwaS5vcmc" if rng.random() < 0.8 else "AgENdGVzdC5weXBpLm9yZw"
    return "pypi-" + location + _r(rng, URLSAFE, rng.randint(140, 200))


def pypi_sample(rng: random.Random, template: str | None = None) -> tuple[str, tuple[str, ...]]:
    """(text, secrets) for one PyPI form (`template`, else a random one)."""
    token = pypi_token(rng)
    cut = rng.randint(60, 80)
    text = (template or rng.choice(PYPI_FORMS)).format(
        s=token, wrapped=f"{token[:cut]}\n{token[cut:]}", tail=token[5:]
    )
    return text, (token[5:],)  # 'pypi-' alone is no secret


def _secret(rng: random.Random, symbols: str = "!%^*-_@+~") -> str:
    """A fake password: letters and digits, then `symbols` among letters and digits."""
    while True:
        head = _r(rng, ALNUM, rng.randint(4, 8))
        value = head + _r(rng, ALNUM + symbols, rng.randint(8, 16)) + rng.choice(ALNUM)
        if any(mark in value for mark in ("${", "{{", "#{", "***")):
            continue  # templates and masks, which redaction rightly leaves
        if _CALL_SHAPED.match(value):
            continue  # 'abc(x)', 'abc[1].y': a call or subscript (the documented limit)
        return value


# A name, then brackets that close as code's do and nothing glued after them.
_CALL_SHAPED = re.compile(r"[A-Za-z0-9_]+[(\[{](?:[^()\[\]{}]*[)\]}](?![A-Za-z0-9]))+[^()\[\]{}]*$")

HARD_SYMBOLS = "!%^*-_@+~;&,()[]{}<>=$#:/.?|"
"""Symbols that end a bare token elsewhere: a secret holding them must still go whole."""


def hard_symbols(template: str) -> str:
    """The `HARD_SYMBOLS` a secret can hold in `template` and still be one value there.

    A URL query ends a value at '&' or '#' (and takes no raw brackets or angle
    brackets), a connection string at ';' (ODBC also braces), XML at '<' or
    '&', a Markdown code span at '('; a raw string with regex syntax is a
    pattern.
    """
    excluded = set()
    if "?{k}=" in template or "&{k}=" in template:
        excluded |= set("&#<>()[]{}")
    if "={p};" in template:
        excluded |= set(";{}")
    if "<" in template:
        excluded |= set("<>&")
    if "`{p}`" in template:
        excluded |= set("(")
    if "r'{p}'" in template:
        excluded |= set("()[]{}|")  # a raw string holding regex syntax is a pattern
    return "".join(char for char in HARD_SYMBOLS if char not in excluded)


def kv_text(template: str, key: str, secret: str) -> str:
    """The template filled for one key name and one secret."""
    env = key.upper().replace("-", "_")
    flag = key.replace("_", "-").lower() if "_" in key or "-" in key else key
    encoded = base64.b64encode(secret.encode()).decode()
    return template.format(k=key, K=env, f=flag, p=secret, b=encoded)


def kv_sample(
    rng: random.Random,
    kind: str,
    template: str | None = None,
    key: str | None = None,
    *,
    hard: bool = False,
) -> tuple[str, tuple[str, ...]]:
    """(text, secrets) for one key=value form of `kind` (random template and key unless given).

    `hard`: the secret also holds the `hard_symbols` of its template.
    """
    template = template or rng.choice([t for k, t in FORMS if k == kind])
    secret = _secret(rng, hard_symbols(template)) if hard else _secret(rng)
    text = kv_text(template, key or rng.choice(KEY_NAMES), secret)
    if "{b}" in template:
        return text, (base64.b64encode(secret.encode()).decode(),)
    return text, (secret,)


def kinds() -> dict[str, Callable[[random.Random], tuple[str, tuple[str, ...]]]]:
    """Kind -> builder of one random (text, secrets) sample."""
    return {
        "pypi_forms": pypi_sample,
        "kv_quoting": lambda rng: kv_sample(rng, "kv_quoting", hard=rng.random() < 0.5),
        "kv_config": lambda rng: kv_sample(rng, "kv_config", hard=rng.random() < 0.5),
        "kv_shell": lambda rng: kv_sample(rng, "kv_shell", hard=rng.random() < 0.5),
    }
