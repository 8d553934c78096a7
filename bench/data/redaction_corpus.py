"""Labelled corpus for redaction: fake secrets of 43 kinds and negatives in 10 classes.

Used by `tests/test_redact_corpus.py` (targets) and `bench/bench_redact.py`
(figures). Everything is generated from a seed, so a run is reproducible and a
new seed gives fresh values (the tests use two seeds).

Positives (`positives`): each sample is a short text (code, `.env`, YAML, JSON,
shell, log line, prose, ...) holding one fake secret in the format its issuer
documents (prefixes, lengths and alphabets as published by GitHub, GitLab,
Slack, Stripe, AWS, PyPI, npm, Discord, Twilio, SendGrid, ...). `secrets` names
the values that must vanish. Kinds whose values have no recognisable shape (AWS
secret keys, Twilio auth tokens, passwords) appear only under a key, flag or
header that names them; shaped ones also appear bare in prose and logs. The
kinds `pypi_forms`, `kv_quoting`, `kv_config` and `kv_shell` come from
`bench/data/redaction_forms.py`: PyPI tokens and key=value secrets in every
quoting, separator and file format found so far (issue 29).

Negatives (`negatives`): text with nothing secret or personal in it, so any
change `redact_text` makes is a false positive. Classes: `prose`, `code`,
`logs`, `configs`, and the hard negatives `hard_key_named` (`token_count: 42`),
`hard_placeholder` (`<your-api-key>`, `xxxx`), `hard_env_read`
(`os.environ["API_KEY"]`), `hard_reference` (`${DB_PASSWORD}`,
`settings.DB_PASSWORD`, empty values), `hard_lookalike` (git SHAs, UUIDs,
digests, `sk-learn`) and `hard_version` (dotted quads that are versions).
No sample holds an e-mail address, a non-loopback IPv4 address or a home
directory, which `redact_text` rightly rewrites.

Leak test (`leaked`): a secret counts as caught only when no run of 10 of its
characters (all of it, when shorter) survives in the output, so a token cut in
half is a miss.
"""

from __future__ import annotations

import base64
import json
import random
import string
from collections.abc import Callable
from dataclasses import dataclass

from bench.data.redaction_forms import kinds as form_kinds
from bench.data.redaction_negatives import HARD_CLASSES, NEGATIVE_CLASSES, fill, prose

__all__ = [
    "HARD_CLASSES",
    "KINDS",
    "NEGATIVE_CLASSES",
    "Sample",
    "Scores",
    "leaked",
    "negatives",
    "positives",
    "score",
]

ALNUM = string.ascii_letters + string.digits
UPPER_ALNUM = string.ascii_uppercase + string.digits
HEX = "0123456789abcdef"
URLSAFE = ALNUM + "_-"
B64 = ALNUM + "+/"


@dataclass(frozen=True)
class Sample:
    """One labelled text.

    Attributes:
        text: what is passed to `redact_text`.
        kind: the secret kind (positives) or the negative class (negatives).
        secrets: values that must not survive redaction; empty for negatives.
    """

    text: str
    kind: str
    secrets: tuple[str, ...] = ()


def leaked(secret: str, output: str, window: int = 10) -> bool:
    """True when any `window`-character run of `secret` is still in `output`."""
    if len(secret) <= window:
        return secret in output
    return any(secret[i : i + window] in output for i in range(len(secret) - window + 1))


def _r(rng: random.Random, alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


# --- secret makers: (value, env-style name) -----------------------------------

Maker = Callable[[random.Random], tuple[str, str]]


def _openai(rng: random.Random) -> tuple[str, str]:
    style = rng.randrange(3)
    if style == 0:
        value = "sk-proj-" + _r(rng, URLSAFE, rng.choice([48, 74, 156]))
    elif style == 1:
        value = "sk-" + _r(rng, ALNUM, 20) + "T3BlbkFJ" + _r(rng, ALNUM, 20)
    else:
        value = "sk-svcacct-" + _r(rng, URLSAFE, 74)
    return value, "OPENAI_API_KEY"


def _anthropic(rng: random.Random) -> tuple[str, str]:
    return "sk-ant-api03-" + _r(rng, URLSAFE, 93) + "AA", "ANTHROPIC_API_KEY"


def _github(rng: random.Random) -> tuple[str, str]:
    return rng.choice(["ghp", "gho", "ghu", "ghs", "ghr"]) + "_" + _r(rng, ALNUM, 36), "GH_TOKEN"


def _github_pat(rng: random.Random) -> tuple[str, str]:
    return "github_pat_" + _r(rng, ALNUM, 22) + "_" + _r(rng, ALNUM, 59), "GITHUB_TOKEN"


def _gitlab(rng: random.Random) -> tuple[str, str]:
    prefix, n = rng.choice([("glpat-", 20), ("gldt-", 20), ("glrt-", 20), ("glptt-", 40)])
    if rng.random() < 0.15:
        prefix, n = "GR1348941", 20
    return prefix + _r(rng, URLSAFE, n), "GITLAB_TOKEN"


def _slack(rng: random.Random) -> tuple[str, str]:
    style = rng.randrange(3)
    if style == 0:
        value = (
            f"xoxb-{_r(rng, string.digits, 12)}-{_r(rng, string.digits, 13)}-{_r(rng, ALNUM, 24)}"
        )
    elif style == 1:
        value = (
            f"xoxp-{_r(rng, string.digits, 11)}-{_r(rng, string.digits, 12)}"
            f"-{_r(rng, string.digits, 13)}-{_r(rng, HEX, 32)}"
        )
    else:
        value = (
            f"xapp-1-A{_r(rng, UPPER_ALNUM, 10)}-{_r(rng, string.digits, 13)}-{_r(rng, HEX, 64)}"
        )
    return value, "SLACK_BOT_TOKEN"


def _slack_webhook(rng: random.Random) -> tuple[str, str]:
    path = f"T{_r(rng, UPPER_ALNUM, 10)}/B{_r(rng, UPPER_ALNUM, 10)}/{_r(rng, ALNUM, 24)}"
    return path, "SLACK_WEBHOOK_URL"


def _aws_key_id(rng: random.Random) -> tuple[str, str]:
    return rng.choice(["AKIA", "ASIA"]) + _r(rng, string.ascii_uppercase + "234567", 16), (
        "AWS_ACCESS_KEY_ID"
    )


def _aws_secret(rng: random.Random) -> tuple[str, str]:
    return _r(rng, B64, 40), "AWS_SECRET_ACCESS_KEY"


def _stripe(rng: random.Random) -> tuple[str, str]:
    prefix = rng.choice(["sk_live_", "rk_live_", "sk_test_", "whsec_"])
    return prefix + _r(rng, ALNUM, rng.choice([24, 32, 99])), "STRIPE_SECRET_KEY"


def _google(rng: random.Random) -> tuple[str, str]:
    return "AIza" + _r(rng, URLSAFE, 35), "GOOGLE_API_KEY"


def _huggingface(rng: random.Random) -> tuple[str, str]:
    return "hf_" + _r(rng, string.ascii_letters, 34), "HF_TOKEN"


def _pypi(rng: random.Random) -> tuple[str, str]:
    return "pypi-AgEIcHlwaS5vcmc" + _r(rng, URLSAFE, rng.randint(140, 200)), "PYPI_TOKEN"


def _npm(rng: random.Random) -> tuple[str, str]:
    return "npm_" + _r(rng, ALNUM, 36), "NPM_TOKEN"


def _discord(rng: random.Random) -> tuple[str, str]:
    user_id = str(rng.randint(10**16, 10**19 - 1))
    third = _r(rng, URLSAFE, rng.choice([27, 38]))
    return f"{_b64url(user_id.encode())}.{_r(rng, URLSAFE, 6)}.{third}", "DISCORD_BOT_TOKEN"


def _twilio(rng: random.Random) -> tuple[str, str]:
    if rng.random() < 0.5:
        return "SK" + _r(rng, HEX, 32), "TWILIO_API_KEY"
    return _r(rng, HEX, 32), "TWILIO_AUTH_TOKEN"


def _sendgrid(rng: random.Random) -> tuple[str, str]:
    return f"SG.{_r(rng, URLSAFE, 22)}.{_r(rng, URLSAFE, 43)}", "SENDGRID_API_KEY"


def _mailchimp(rng: random.Random) -> tuple[str, str]:
    return f"{_r(rng, HEX, 32)}-us{rng.randint(1, 21)}", "MAILCHIMP_API_KEY"


def _square(rng: random.Random) -> tuple[str, str]:
    if rng.random() < 0.5:
        return "sq0csp-" + _r(rng, URLSAFE, 43), "SQUARE_APP_SECRET"
    return "sq0atp-" + _r(rng, URLSAFE, 22), "SQUARE_ACCESS_TOKEN"


def _telegram(rng: random.Random) -> tuple[str, str]:
    return f"{rng.randint(10**7, 10**10 - 1)}:AA{_r(rng, URLSAFE, 33)}", "TELEGRAM_BOT_TOKEN"


def _jwt(rng: random.Random) -> tuple[str, str]:
    header = _b64url(json.dumps({"alg": rng.choice(["HS256", "RS256"]), "typ": "JWT"}).encode())
    claims = {"sub": _r(rng, string.digits, 10), "iat": rng.randint(1_600_000_000, 1_800_000_000)}
    payload = _b64url(json.dumps(claims).encode())
    return f"{header}.{payload}.{_r(rng, URLSAFE, 43)}", "ID_TOKEN"


def _password(rng: random.Random) -> str:
    return _r(rng, ALNUM, rng.randint(4, 8)) + _r(rng, ALNUM + "!#%^*-_", rng.randint(8, 16))


def _azure(rng: random.Random) -> tuple[str, str]:
    return _r(rng, B64, 86) + "==", "AZURE_STORAGE_KEY"


def _digitalocean(rng: random.Random) -> tuple[str, str]:
    return "dop_v1_" + _r(rng, HEX, 64), "DIGITALOCEAN_TOKEN"


def _shopify(rng: random.Random) -> tuple[str, str]:
    return rng.choice(["shpat_", "shpss_", "shpca_"]) + _r(rng, HEX, 32), "SHOPIFY_TOKEN"


# Contexts for a secret with a recognisable shape: named and unnamed.
NAMED = [
    "{NAME}={s}",
    'export {NAME}="{s}"',
    "{name}: {s}",
    '{{"{name}": "{s}", "timeout": 30}}',
    'client = Client({name}="{s}")',
    "[default]\n{name} = {s}\nregion = eu-west-1",
    "- name: {NAME}\n  value: '{s}'",
    "docker run -e {NAME}={s} app:latest",
]
UNNAMED = [
    "{s}",
    "here is the key {s} please keep it safe",
    "2024-05-01T12:00:07Z DEBUG using credential {s} for upload",
    "I pasted `{s}` into the config and it worked.",
    "keys = ['{s}']",
    "curl https://api.example.com/v1/items?key={s}&page=2",
    "Traceback: AuthError('invalid key {s}')",
]


def _shaped(maker: Maker) -> Callable[[random.Random], Sample]:
    def build(rng: random.Random) -> Sample:
        value, name = maker(rng)
        template = rng.choice(NAMED + UNNAMED)
        return Sample(template.format(s=value, NAME=name, name=name.lower()), "", (value,))

    return build


def _named_only(maker: Maker) -> Callable[[random.Random], Sample]:
    def build(rng: random.Random) -> Sample:
        value, name = maker(rng)
        template = rng.choice(NAMED)
        return Sample(template.format(s=value, NAME=name, name=name.lower()), "", (value,))

    return build


def _aws_secret_sample(rng: random.Random) -> Sample:
    value, _ = _aws_secret(rng)
    template = rng.choice(
        [
            "aws_secret_access_key = {s}",
            "AWS_SECRET_ACCESS_KEY={s}",
            'export AWS_SECRET_ACCESS_KEY="{s}"',
            '{{"AccessKeyId": "ASIAEXAMPLEEXAMPLE", "SecretAccessKey": "{s}"}}',
            "aws configure set aws_secret_access_key {s}",
            "s3 = boto3.client('s3', aws_secret_access_key='{s}')",
            "secret_key: {s}",
            "AWS_SECRET_KEY: '{s}'",
        ]
    )
    return Sample(template.format(s=value), "", (value,))


def _webhook_sample(rng: random.Random) -> Sample:
    path, name = _slack_webhook(rng)
    url = "https://hooks.slack.com/services/" + path
    template = rng.choice(NAMED + UNNAMED + ['curl -X POST -d \'{{"text":"hi"}}\' {s}'])
    return Sample(template.format(s=url, NAME=name, name=name.lower()), "", (path,))


def _npm_sample(rng: random.Random) -> Sample:
    value, name = _npm(rng)
    if rng.random() < 0.3:
        return Sample(f"//registry.npmjs.org/:_authToken={value}\n", "", (value,))
    return _shaped(lambda _: (value, name))(rng)


def _azure_sample(rng: random.Random) -> Sample:
    value, _ = _azure(rng)
    text = (
        f"DefaultEndpointsProtocol=https;AccountName=store{rng.randint(1, 99)};"
        f"AccountKey={value};EndpointSuffix=core.windows.net"
    )
    return Sample(text, "", (value,))


def _private_key_sample(rng: random.Random) -> Sample:
    kind = rng.choice(["RSA ", "EC ", "OPENSSH ", ""])
    lines = [_r(rng, B64, 64) for _ in range(rng.randint(3, 12))]
    body = "\n".join(lines)
    pem = f"-----BEGIN {kind}PRIVATE KEY-----\n{body}\n-----END {kind}PRIVATE KEY-----"
    if rng.random() < 0.3:
        text = json.dumps({"type": "service_account", "private_key": pem + "\n"})
    else:
        text = f"$ cat id_key\n{pem}\n$ "
    return Sample(text, "", tuple(lines))


def _db_uri_sample(rng: random.Random) -> Sample:
    password = _r(rng, ALNUM, rng.randint(10, 24))
    scheme = rng.choice(["postgres", "postgresql", "mysql", "mongodb+srv", "redis", "amqp"])
    uri = f"{scheme}://app_user:{password}@db.internal.example:5432/prod"
    template = rng.choice(["DATABASE_URL={u}", 'engine = create_engine("{u}")', "url: {u}", "{u}"])
    return Sample(template.format(u=uri), "", (password,))


def _bearer_sample(rng: random.Random) -> Sample:
    token = _r(rng, URLSAFE + ".", rng.randint(24, 64))
    template = rng.choice(
        [
            "curl -H 'Authorization: Bearer {t}' https://api.example.com/v1/me",
            "GET /v1/me HTTP/1.1\nHost: api.example.com\nAuthorization: Bearer {t}\n",
            'headers = {{"Authorization": "Bearer {t}"}}',
            "requests.get(url, headers={{'Authorization': 'Bearer {t}'}})",
            'fetch(url, {{ headers: {{ Authorization: "Bearer {t}" }} }})',
            "the server rejected Bearer {t} with 401",
        ]
    )
    return Sample(template.format(t=token), "", (token,))


def _basic_sample(rng: random.Random) -> Sample:
    cred = base64.b64encode(f"deploy:{_password(rng)}".encode()).decode()
    template = rng.choice(
        [
            "Authorization: Basic {c}",
            'headers["Authorization"] = "Basic {c}"',
            "curl -H 'Authorization: Basic {c}' https://ci.example.com/api",
            '{{"headers": {{"authorization": "Basic {c}"}}}}',
        ]
    )
    return Sample(template.format(c=cred), "", (cred,))


def _cli_sample(rng: random.Random) -> Sample:
    pw = _password(rng).replace("'", "")
    template = rng.choice(
        [
            "mysql -u root -p{p} -h db.internal prod",
            "mysqldump -uroot -p'{p}' shop > dump.sql",
            "sshpass -p '{p}' ssh deploy@build.internal",
            "docker login -u deploy -p {p} registry.example.com",
            "podman login --username ci --password {p} quay.io",
            "app serve --db-password={p} --port 8080",
            "./manage.py createsuperuser --password '{p}'",
            "vault login -method=userpass username=ops password={p}",
            "gh auth login --with-token --token {p}",
            "curl -u admin:{p} https://ci.example.com/api/json",
            "redis-cli -h cache.internal -a {p} ping",
            "openssl pkcs12 -export -passout pass:{p} -out cert.p12",
            "az login --service-principal -u app-id --password {p} --tenant t",
            "psql --host=db --username=app --api-key {p}",
        ]
    )
    return Sample(template.format(p=pw), "", (pw,))


def _kv_sample(rng: random.Random) -> Sample:
    pw = _password(rng)
    template = rng.choice(
        [
            "DB_PASSWORD={p}",
            "SMTP_PASS={p}",
            "export REDIS_PASSWORD='{p}'",
            "password: {p}",
            '  password: "{p}"',
            '{{"client_secret": "{p}", "client_id": "web"}}',
            'secret_key = "{p}"',
            "[database]\nuser = app\npassword = {p}\n",
            "MYSQL_ROOT_PASSWORD: {p}",
            "app.config['SECRET_KEY'] = '{p}'",
            "SECRET_KEY = '{p}'",
            "conn = psycopg.connect(host='db', password='{p}')",
            "jdbc.password={p}",
            '<add key="ApiSecret" value="{p}" />',
            "WEBHOOK_SECRET={p}",
            "STRIPE_KEY={p}",
            "private_key_passphrase = {p}",
            "token: {p}",
        ]
    )
    return Sample(template.format(p=pw), "", (pw,))


def _discord_webhook_sample(rng: random.Random) -> Sample:
    token = _r(rng, URLSAFE, 68)
    host = rng.choice(["discord.com", "discordapp.com", "ptb.discord.com"])
    version = rng.choice(["", "/v10"])
    url = f"https://{host}/api{version}/webhooks/{rng.randint(10**17, 10**19 - 1)}/{token}"
    template = rng.choice(
        NAMED + UNNAMED + ["curl -H 'Content-Type: application/json' -d @m.json {s}"]
    )
    return Sample(template.format(s=url, NAME="DISCORD_WEBHOOK_URL", name="webhook"), "", (token,))


def _slack_workflow_sample(rng: random.Random) -> Sample:
    secret = _r(rng, ALNUM, 24)
    if rng.random() < 0.5:
        path = (
            f"workflows/T{_r(rng, UPPER_ALNUM, 10)}/A{_r(rng, UPPER_ALNUM, 10)}/"
            f"{_r(rng, string.digits, 18)}/{secret}"
        )
    else:
        path = f"triggers/T{_r(rng, UPPER_ALNUM, 10)}/{_r(rng, string.digits, 13)}/{secret}"
    url = "https://hooks.slack.com/" + path
    template = rng.choice(NAMED + UNNAMED)
    return Sample(template.format(s=url, NAME="SLACK_WEBHOOK", name="hook"), "", (secret,))


def _google_oauth_access(rng: random.Random) -> tuple[str, str]:
    return "ya29." + _r(rng, URLSAFE, rng.choice([100, 160, 220])), "GOOGLE_ACCESS_TOKEN"


def _mailgun(rng: random.Random) -> tuple[str, str]:
    return "key-" + _r(rng, HEX, 32), "MAILGUN_API_KEY"


def _gitlab_dotted(rng: random.Random) -> tuple[str, str]:
    # GitLab 17.x routable tokens: <prefix><payload>.<version>.<crc, base36>.
    prefix = rng.choice(["glpat-", "gldt-", "glrt-"])
    payload = _r(rng, URLSAFE, rng.randint(27, 40))
    return f"{prefix}{payload}.01.{_r(rng, string.ascii_lowercase + string.digits, 9)}", "GL_TOKEN"


def _kv_syntax_sample(rng: random.Random) -> Sample:
    # Separators and shapes beyond 'key: value' / 'key=value'.
    pw = _password(rng).replace("'", "")
    template = rng.choice(
        [
            "$config = ['db_password' => '{p}', 'host' => 'db'];",
            ':password => "{p}",',
            'password := "{p}"',
            "DB_PASSWORD := {p}",
            "define('DB_PASSWORD', '{p}');",
            'define( "AUTH_KEY", "{p}" );',
            'config.set("api_key", "{p}")',
            "<password>{p}</password>",
            "<server><id>nexus</id><username>ci</username><password>{p}</password></server>",
            "<entry><apiKey>{p}</apiKey><region>eu</region></entry>",
        ]
    )
    return Sample(template.format(p=pw), "", (pw,))


def _putty_sample(rng: random.Random) -> Sample:
    private = [_r(rng, B64, 64) for _ in range(rng.randint(2, 8))]
    mac = _r(rng, HEX, 64)
    version = rng.choice(["2", "3"])
    lines = [
        f"PuTTY-User-Key-File-{version}: ssh-rsa",
        "Encryption: none",
        f"Comment: rsa-key-2024{rng.randint(1000, 9999)}",
        "Public-Lines: 2",
        _r(rng, B64, 64),
        _r(rng, B64, 20),
        f"Private-Lines: {len(private)}",
        *private,
        f"Private-MAC: {mac}",
    ]
    ppk = "\n".join(lines)
    text = rng.choice([f"$ cat ~/.ssh/id.ppk\n{ppk}\n$ ", json.dumps({"key_file": ppk})])
    return Sample(text, "", (*private, mac))


def _ssh2_sample(rng: random.Random) -> Sample:
    body = [_r(rng, B64, 70) for _ in range(rng.randint(3, 10))]
    enc = rng.choice(["ENCRYPTED ", ""])
    block = (
        f"---- BEGIN SSH2 {enc}PRIVATE KEY ----\n"
        f'Comment: "rsa-key-2024{rng.randint(1000, 9999)}"\n'
        + "\n".join(body)
        + f"\n---- END SSH2 {enc}PRIVATE KEY ----"
    )
    return Sample(f"key file:\n{block}\nend", "", tuple(body))


def _aws_csv_sample(rng: random.Random) -> Sample:
    key_id, _ = _aws_key_id(rng)
    secret, _ = _aws_secret(rng)
    if rng.random() < 0.5:
        text = f"Access key ID,Secret access key\n{key_id},{secret}\n"
    else:
        text = (
            "User name,Password,Access key ID,Secret access key,Console login link\n"
            f"deploy,,{key_id},{secret},https://123456789012.signin.aws.amazon.com/console\n"
        )
    return Sample(text, "", (key_id, secret))


def _twilio_sample(rng: random.Random) -> Sample:
    value, name = _twilio(rng)
    if value.startswith("SK"):
        return _shaped(lambda _: (value, name))(rng)
    return _named_only(lambda _: (value, name))(rng)


def _from_forms(
    build: Callable[[random.Random], tuple[str, tuple[str, ...]]],
) -> Callable[[random.Random], Sample]:
    def sample(rng: random.Random) -> Sample:
        text, secrets = build(rng)
        return Sample(text, "", secrets)

    return sample


KINDS: dict[str, Callable[[random.Random], Sample]] = {
    "openai": _shaped(_openai),
    "anthropic": _shaped(_anthropic),
    "github_classic": _shaped(_github),
    "github_fine_grained": _shaped(_github_pat),
    "gitlab": _shaped(_gitlab),
    "slack_token": _shaped(_slack),
    "slack_webhook": _webhook_sample,
    "aws_access_key_id": _shaped(_aws_key_id),
    "aws_secret_key": _aws_secret_sample,
    "stripe": _shaped(_stripe),
    "google_api": _shaped(_google),
    "huggingface": _shaped(_huggingface),
    "pypi": _shaped(_pypi),
    "npm": _npm_sample,
    "discord": _shaped(_discord),
    "twilio": _twilio_sample,
    "sendgrid": _shaped(_sendgrid),
    "mailchimp": _shaped(_mailchimp),
    "square": _shaped(_square),
    "telegram": _shaped(_telegram),
    "jwt": _shaped(_jwt),
    "private_key": _private_key_sample,
    "db_uri_password": _db_uri_sample,
    "bearer_header": _bearer_sample,
    "basic_auth_header": _basic_sample,
    "cli_flag": _cli_sample,
    "key_value": _kv_sample,
    "azure_storage": _azure_sample,
    "digitalocean": _shaped(_digitalocean),
    "shopify": _shaped(_shopify),
    "google_oauth_secret": _shaped(lambda rng: ("GOCSPX-" + _r(rng, URLSAFE, 28), "CLIENT_SECRET")),
    "discord_webhook": _discord_webhook_sample,
    "slack_workflow_webhook": _slack_workflow_sample,
    "google_oauth_access": _shaped(_google_oauth_access),
    "mailgun": _shaped(_mailgun),
    "gitlab_dotted": _shaped(_gitlab_dotted),
    "kv_syntax": _kv_syntax_sample,
    "putty_ssh2_key": lambda rng: (_putty_sample if rng.random() < 0.5 else _ssh2_sample)(rng),
    "aws_credentials_csv": _aws_csv_sample,
    **{kind: _from_forms(build) for kind, build in form_kinds().items()},
}
"""Secret kind -> sample builder (one random sample per call)."""


def positives(seed: int = 0, per_kind: int = 40) -> list[Sample]:
    """`per_kind` samples of every kind in `KINDS`, deterministic in `seed`."""
    rng = random.Random(seed)
    out: list[Sample] = []
    for kind, build in KINDS.items():
        for _ in range(per_kind):
            sample = build(rng)
            out.append(Sample(sample.text, kind, sample.secrets))
    return out


def negatives(seed: int = 0, per_class: int = 200) -> list[Sample]:
    """`per_class` samples of `prose` and of every class in `NEGATIVE_CLASSES`.

    Every template of a class is used at least once when `per_class` allows;
    the rest are drawn at random. Deterministic in `seed`.
    """
    rng = random.Random(seed + 1_000_003)
    out = [Sample(prose(rng), "prose") for _ in range(per_class)]
    for name, templates in NEGATIVE_CLASSES.items():
        chosen = list(templates[:per_class])
        chosen += [rng.choice(templates) for _ in range(per_class - len(chosen))]
        out.extend(Sample(fill(template, rng), name) for template in chosen)
    return out


@dataclass(frozen=True)
class Scores:
    """What `score` measured.

    Attributes:
        recall: kind -> fraction of its samples whose secrets all vanished.
        false_positive: negative class -> fraction of its samples that changed.
        misses: positive samples with a secret left (at most 5 per kind).
        false_alarms: (original, redacted) negatives that changed (at most 5 per class).
    """

    recall: dict[str, float]
    false_positive: dict[str, float]
    misses: list[Sample]
    false_alarms: list[tuple[str, str]]

    def overall_recall(self) -> float:
        """Mean of the per-kind recalls (every kind weighs the same)."""
        return sum(self.recall.values()) / len(self.recall)

    def hard_false_positive(self) -> float:
        """Mean false-positive rate over the `hard_*` classes."""
        rates = [self.false_positive[name] for name in HARD_CLASSES]
        return sum(rates) / len(rates)


def score(redact_text: Callable[[str], str], pos: list[Sample], neg: list[Sample]) -> Scores:
    """Run `redact_text` over the samples and compute recall and false positives."""
    hits: dict[str, list[bool]] = {}
    misses: list[Sample] = []
    for sample in pos:
        out = redact_text(sample.text)
        ok = not any(leaked(secret, out) for secret in sample.secrets)
        hits.setdefault(sample.kind, []).append(ok)
        if not ok and sum(1 for m in misses if m.kind == sample.kind) < 5:
            misses.append(sample)
    changed: dict[str, list[bool]] = {}
    alarms: list[tuple[str, str]] = []
    per_class_alarms: dict[str, int] = {}
    for sample in neg:
        out = redact_text(sample.text)
        changed.setdefault(sample.kind, []).append(out != sample.text)
        if out != sample.text and per_class_alarms.get(sample.kind, 0) < 5:
            per_class_alarms[sample.kind] = per_class_alarms.get(sample.kind, 0) + 1
            alarms.append((sample.text, out))
    return Scores(
        recall={kind: sum(v) / len(v) for kind, v in hits.items()},
        false_positive={kind: sum(v) / len(v) for kind, v in changed.items()},
        misses=misses,
        false_alarms=alarms,
    )
