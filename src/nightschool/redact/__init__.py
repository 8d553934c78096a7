r"""Secret and personal-data redaction applied to every record before it is stored.

`redact_text` rewrites free text; `redact` walks a JSON-like value and also
blanks whole values that sit under secret-named keys (`is_secret_key`). Both are
pure: they return new objects and never mutate their input.

Where the rules come from. Provider token formats come from detect-secrets
(Yelp, Apache-2.0, on PyPI; pinned in pyproject): the regexes of its plugins
are used as they ship (`_providers._LIBRARY` names plugin and pattern), so a
format fixed upstream is fixed here. Chosen over the alternatives because it is
a maintained Python library whose plugins expose their patterns as plain
`re` objects (`Plugin.denylist`) that can run without its file scanner; the
gitleaks rule set (about 200 rules) is Go-regex TOML with no maintained Python
package, and ggshield needs GitGuardian's service. Its scanner is not used: it
works line by line on files, and its regexes start with character classes, so
each full scan runs at 15-80 MB/s; here each pattern runs only around a literal
anchor (see `_providers`). Where detect-secrets 1.5 lacks a format (Anthropic,
Google, Hugging Face, bare npm tokens, Stripe test and webhook keys, Shopify,
DigitalOcean, new-style Discord tokens) or matches too narrowly, our own rules
in `_providers._OWN` add it, in the issuers' published formats.

Plugins of detect-secrets not used: `KeywordDetector` and the assignment-based
ones (`CloudantDetector`, `IbmCloudIamDetector`, `IbmCosHmacDetector`,
`SoftlayerDetector`), because our key/value rule covers them and, unlike them,
leaves code references alone; `BasicAuthDetector` (our URI rule does the same
and skips placeholders); `Base64HighEntropyString` / `HexHighEntropyString`
(they flag hashes, digests and ids); `IPPublicDetector` (our IPv4 rule tells
addresses from version numbers); `JwtTokenDetector` and `PrivateKeyDetector`
(our JWT and PEM rules also catch truncated tokens and remove the whole key).
From detect-secrets' heuristics we use `is_templated_secret` for placeholders.

Rules, applied in this order, each to the output of the one before:

1. Home directories: `/home/<name>` -> `/home/<user>`, also `/Users/` and `C:\Users\`
   (first: later rules read command words on the line, and a user name can be
   one, as in `/home/mysql`).
2. Private keys -> `<REDACTED_PRIVATE_KEY>`: PEM (and PGP private key blocks),
   SSH2 (`---- BEGIN SSH2 ... PRIVATE KEY ----`) and PuTTY `.ppk` files.
3. JWTs (`eyJ<header>.eyJ<payload>.<signature>`) -> `<REDACTED_JWT>`.
4. Provider tokens -> `<REDACTED_API_KEY>`: AWS key ids and secret keys, GitHub,
   GitLab, Slack tokens and webhooks, Stripe, Twilio, SendGrid, Mailchimp,
   Square, Telegram, Discord (bot tokens and webhooks), PyPI, npm, Azure
   storage, Artifactory, OpenAI, Anthropic, Google (API keys, OAuth secrets and
   `ya29.` access tokens), Hugging Face, Shopify, DigitalOcean, Mailgun, Slack
   workflow and trigger webhooks, and the secret key that follows an access
   key id in AWS `credentials.csv` rows. Each match is widened to its whole
   token; placeholders (`ghp_XXXX...`) stay. PyPI tokens also when truncated,
   glued to a flag (`-ppypi-...`), wrapped over lines or cut off after `pypi-`.
5. Passwords inside URIs: `scheme://user:pass@host` -> `scheme://user:<REDACTED_SECRET>@host`.
6. `Cookie:` / `Set-Cookie:` header lines: the rest of the line -> `<REDACTED_SECRET>`.
7. `value` fields of name/value records whose name is secret-named
   (`{"name": "DB_PASSWORD", "value": "x"}`, Kubernetes env lists).
8. Every value under `data:` / `stringData:` of a Kubernetes `Secret` (YAML or
   JSON), whatever its key.
9. `key: value` / `key=value` pairs whose key is secret-named (`is_secret_key`,
   any case style: `api_key`, `apiKey`, `API-KEY`, `x-api-key`, `API_KEY2`):
   separators ':', '=', ':=', '=>', '<-' and blanks (a pair that makes up its
   line, `ENV KEY x`, `requirepass x`, or a `.netrc` entry); bare, quoted
   (also with escapes, string prefixes `r''`/`b""`, backticks, lists and
   YAML `!!str`) or JSON-escaped values; YAML block scalars (`key: >-`) and
   values on the next line; a call's quoted first argument
   (`define('DB_PASSWORD', 'x')`; a value that reads as a field name stays);
   XML elements (`<password>x</password>`, `<entry key="password">x</entry>`).
   A bare value runs as far as its context delimits it, so no part of a
   password is left: to the next blank where the pair opens its line (`.env`,
   INI, YAML, `export`), to ';' in connection strings, to '&' in URL queries,
   to the line's end in HTTP headers. An auth scheme word (`Bearer`, `Basic`,
   `SSWS`, ...) stays and only the credential becomes `<REDACTED_SECRET>`.
10. Command-line flags: `--password X`, `--api-key=X`, `mysql -pX`,
    `sshpass -p X`, `docker login -p X`, `redis-cli -a X`, `curl -u user:X`.
11. A stand-alone `Bearer <token>` (16+ token characters, at least one digit).
12. `.onion` addresses -> `<REDACTED_ONION>`.
13. E-mail addresses -> `<REDACTED_EMAIL>`; `git@host` SSH remotes stay.
14. Non-loopback IPv4 addresses -> `<REDACTED_IP>`; version and section numbers
    stay (the exact rule is `IPV4_RULE`).

What stays, so that stored code keeps its meaning (rules 5-10): environment
reads and references in every language (`os.environ["API_KEY"]`,
`os.getenv("TOKEN")`, `process.env.X`, `ENV["KEY"]`, `System.getenv(...)`,
`std::env::var(...)`, `${DB_PASSWORD}`, `$X`, `%X%`, `{{ x }}`,
`${{ secrets.X }}`, `settings.DB_PASSWORD`), placeholders (`<your-key>`,
`YOUR_API_KEY_HERE`, `xxx`, `***`, `changeme`, `REDACTED`, `sk-...`,
`my_token`), empty and null values, type names and annotations
(`token: str`, `def f(password: str)`, `x: ClientSecret | None`), calls,
subscripts, expressions, names passed or assigned in code
(`f(password=DEFAULT)`, `password = user_input`), filesystem paths
(`PWD=/app`), raw-string patterns (`r'(?:key|pwd)'`), and keys that describe
a secret instead of holding one (`token_count`, `password_min_length`,
`secret_name`, `auth_url`, `eos_token`, `next_token`).

Idempotence: `redact_text(redact_text(x)) == redact_text(x)`. No rule matches a
placeholder (they start with `<`, which no value pattern accepts first); every
match runs to a token edge, so a replacement never creates a new match beside
it. Context that a rule reads (a line's command words, its open brackets) is
read without the values it has blanked, as a second pass would see it; the
key/value rule skips keys inside a value it blanked. Checked with hypothesis
in `tests/test_redact.py`.

Measured (`bench/bench_redact.py`, the labelled corpus of
`bench/data/redaction_corpus.py`: 43 kinds of fake secrets, among them PyPI
tokens in 23 contexts and key=value secrets in 58 forms times 17 key names;
10 classes of negatives, among them environment reads in 12 languages and
shells, placeholders and key-named non-secrets): see the figures in that
script's output; the targets are recall >= 99% per kind (100% on the PyPI and
key=value forms, with no part of a secret left), false positives <= 0.5% on
prose, <= 2% on hard negatives and none on environment reads, placeholders
and key-named non-secrets, >= 20 MB/s. Limits: this is pattern matching, not
a data-loss-prevention engine. Secrets with no recognisable shape and no name
(a bare password in prose: 'the api_key is X') pass through; so do a plain
word after a key and blanks (`password hunter`, except in `.netrc` and
redis.conf), a call argument that is a plain word
(`define('DB_PASSWORD', 'hunter')`), a capitalised word followed by prose
("Password: Hunter was here"), a letters-only value after ':' that reads as
a class name (`HunterTwo`) or a snake_case name after a spaced '='
(`password = correct_horse`), a bare value shaped like a call or subscript
at a line's start (`password = abc(x)`: code), a value holding `${`, `{{`
or `#{` (a template), a raw string holding regex syntax (a pattern), a URL
query value with raw brackets or angle brackets, and a wrapped token's last
line when it is shorter than 8 characters. IPv6 addresses are not redacted.

Speed (`bench/bench_redact.py`, CPU time, one core of a shared 2-core machine):
about 27 MB/s on one 10 MB string, 26 MB/s on 4 KB strings and 19-20 MB/s
through `redact` on ~4 KB trajectory dicts (three strings and ten short values
each: ~7 us of fixed cost per string that reaches the rules), measured idle.
Issue 29's forms cost about 3-6% (old and new code timed in one process,
interleaved, on the machine busy with model runs: medians 15.2 -> 14.8 MB/s
on one string, 12.6 -> 11.9 on 4 KB strings, 8.6 -> 8.4 through `redact`);
the key/value rule judges a line once per distinct line (`_line_pair`), and
short texts use one combined key scan. Most of the time is scanning:
CPython's `re` runs fast only on a literal, so anchors share nine scans (see
`_providers`).
"""

from __future__ import annotations

from nightschool.redact._core import PLACEHOLDERS, SECRET_PLACEHOLDER, redact, redact_text
from nightschool.redact._keys import is_secret_key
from nightschool.redact._personal import IPV4_RULE

__all__ = [
    "IPV4_RULE",
    "PLACEHOLDERS",
    "SECRET_PLACEHOLDER",
    "is_secret_key",
    "redact",
    "redact_text",
]
