"""Provider token rules: detect-secrets' plugin patterns plus a few of our own.

Every rule pairs a pattern with an anchor: a regex that starts with a literal
(so CPython's `re` scans for it at memchr speed) and that every match of the
pattern contains. Anchors pivot on a few characters ('_', '-', '.', 'A', ...)
and check the rest of a prefix with a fixed-width look-behind (`_(?<=ghp_)`),
so all anchors cost nine scans of the text: each scan costs about as much as
one `in` test (2-3 us per 4 KB here), so their number is what counts. A rule
with `back` == 0 is then matched right at each hit; the others run in a window
around it (from at most `back` characters before it to 512 after, within its
line). detect-secrets' own regexes start with a character class or a
look-behind and scan at 15-80 MB/s each.

A match is widened to the whole token around it (`chars`) and then replaced,
so a pattern that stops short (`ghp_` + 36 when the token is longer) never
leaves a tail behind, and the replacement never sits beside a token character
(idempotence). Matches that look like placeholders (`ghp_XXXX...`) stay.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import cache
from typing import NamedTuple

from nightschool.redact._doc import TOKEN_CHARS, Doc, Span, line_bounds
from nightschool.redact._keys import looks_placeholder

API_KEY = "<REDACTED_API_KEY>"
JWT = "<REDACTED_JWT>"
PRIVATE_KEY = "<REDACTED_PRIVATE_KEY>"

_WINDOW = 512  # characters searched after an anchor hit
_B64_CHARS = TOKEN_CHARS | frozenset("+/=")
_DOTTED_CHARS = TOKEN_CHARS | {"."}
_URL_PATH_CHARS = TOKEN_CHARS | {"/"}
_TELEGRAM_CHARS = TOKEN_CHARS | {":"}


@dataclass(frozen=True)
class TokenRule:
    """One provider-token rule.

    Attributes:
        name: 'PluginClass[i]' for detect-secrets pattern i of that plugin, else our own name.
        anchor: regex starting with a literal; every match of `pattern` contains a match of it.
        pattern: the rule, tried in a window around each anchor hit.
        back: how many characters before its anchor a match may start.
        group: the group of `pattern` that holds the secret (0: the whole match).
        chars: the characters of the secret token; the match is widened to their run.
        after: when set, the secret starts after this literal inside the match.
        lower: search the anchor in the lower-cased text (case-insensitive patterns).
        inside: a match may start inside a longer token (`bot<telegram token>`);
            otherwise it must start at a token edge, as our own patterns do.
        glued: a match may start inside a longer token and is not widened to
            its left (`-ppypi-...`: the flag before the token stays).
        wraps: a token that ends at a line break goes on over it when the
            next line starts with the rest of a token (a terminal or an
            editor wrapped it).
    """

    name: str
    anchor: re.Pattern[str]
    pattern: re.Pattern[str]
    back: int
    group: int = 0
    chars: frozenset[str] = TOKEN_CHARS
    after: str = ""
    lower: bool = False
    inside: bool = False
    glued: bool = False
    wraps: bool = False


# Anchors pivot on a few characters ('_', '-', '.', 'A', ...) and check the
# rest of the prefix with a fixed-width look-behind, so all anchors cost nine
# scans of the text instead of one per first letter (see `_scans`).
_GITLAB = "-(?:(?<=gl(?:dt|ft|rt)-)|(?<=gl(?:pat|cbt|imt|ptt|oas)-)|(?<=glsoat-)|(?<=glagent-))"
_GITHUB = "_(?<=gh[pousr]_)"
# hooks.slack.com, in any case (detect-secrets' Slack patterns ignore case).
_SLACK_HOOKS = r"\.(?<=[hH][oO][oO][kK][sS]\.)(?=[sS][lL][aA][cC][kK]\.)"

# (plugin module, class, denylist index, anchor, back, group, chars, after, lower).
# Plugins of detect-secrets 1.5 used, and why the others are not, are listed in
# the package docstring; `tests/test_redact_corpus.py` checks this table covers
# every pattern of the plugins it names.
_LIBRARY: tuple[tuple[str, str, int, str, int, int, frozenset[str], str, bool], ...] = (
    ("artifactory", "ArtifactoryDetector", 0, "AKC", 1, 0, TOKEN_CHARS, "", False),
    ("artifactory", "ArtifactoryDetector", 1, "AP[0-9A-F]", 1, 0, TOKEN_CHARS, "", False),
    ("aws", "AWSKeyDetector", 0, "A(?:3T|BIA|CCA|KIA|SIA)", 0, 0, TOKEN_CHARS, "", False),
    ("aws", "AWSKeyDetector", 1, "w(?<=aw)(?=s)", 1, 1, _B64_CHARS, "", True),
    ("azure_storage_key", "AzureStorageKeyDetector", 0, "AccountKey=", 0, 0, _B64_CHARS,
     "AccountKey=", False),
    ("discord", "DiscordBotTokenDetector", 0, r"\.(?=[A-Za-z0-9_-]{6}\.)", 26, 0, _DOTTED_CHARS,
     "", False),
    ("github_token", "GitHubTokenDetector", 0, _GITHUB, 3, 0, TOKEN_CHARS, "", False),
    ("gitlab_token", "GitLabTokenDetector", 0, _GITLAB, 7, 0, _DOTTED_CHARS, "", False),
    ("gitlab_token", "GitLabTokenDetector", 1, "GR1348941", 0, 0, _DOTTED_CHARS, "", False),
    ("gitlab_token", "GitLabTokenDetector", 2, _GITLAB, 7, 0, _DOTTED_CHARS, "", False),
    ("gitlab_token", "GitLabTokenDetector", 3, _GITLAB, 7, 0, _DOTTED_CHARS, "", False),
    ("gitlab_token", "GitLabTokenDetector", 4, _GITLAB, 7, 0, _DOTTED_CHARS, "", False),
    ("gitlab_token", "GitLabTokenDetector", 5, _GITLAB, 7, 0, _DOTTED_CHARS, "", False),
    ("gitlab_token", "GitLabTokenDetector", 6, _GITLAB, 7, 0, _DOTTED_CHARS, "", False),
    ("mailchimp", "MailchimpDetector", 0, "-(?=us[0-9])", 32, 0, TOKEN_CHARS, "", False),
    ("npm", "NpmDetector", 0, "_(?<=/:_)(?=authToken=)", 258, 1, TOKEN_CHARS, "", False),
    ("openai", "OpenAIDetector", 0, "T3BlbkFJ", 256, 0, TOKEN_CHARS, "", False),
    ("pypi_token", "PypiTokenDetector", 0, "-(?<=pypi-)(?=Ag)", 4, 0, TOKEN_CHARS, "", False),
    ("pypi_token", "PypiTokenDetector", 1, "-(?<=pypi-)(?=Ag)", 4, 0, TOKEN_CHARS, "", False),
    ("sendgrid", "SendGridDetector", 0, r"\.(?<=SG\.)", 2, 0, _DOTTED_CHARS, "", False),
    ("slack", "SlackDetector", 0, "-(?<=[xX][oO][xX][abposrABPOSR]-)", 4, 0, TOKEN_CHARS, "",
     False),
    ("slack", "SlackDetector", 1, _SLACK_HOOKS, 13, 0, _URL_PATH_CHARS, "/services/", False),
    ("square_oauth", "SquareOAuthDetector", 0, "-(?<=sq0csp-)", 6, 0, TOKEN_CHARS, "", False),
    ("stripe", "StripeDetector", 0, "_(?<=k_)(?=live_)", 2, 0, TOKEN_CHARS, "", False),
    ("telegram_token", "TelegramBotTokenDetector", 0, ":(?=[0-9A-Za-z_-]{35})", 10, 0,
     _TELEGRAM_CHARS, "", False),
    ("twilio", "TwilioKeyDetector", 0, "AC(?=[a-z0-9]{32})", 0, 0, TOKEN_CHARS, "", False),
    ("twilio", "TwilioKeyDetector", 1, "SK(?=[a-z0-9]{32})", 0, 0, TOKEN_CHARS, "", False),
)  # fmt: skip


class _Own(NamedTuple):
    """One of our own rules (fields as in `TokenRule`)."""

    name: str
    anchor: str
    pattern: str
    chars: frozenset[str] = TOKEN_CHARS
    back: int = 0
    group: int = 0
    after: str = ""
    glued: bool = False
    wraps: bool = False


# Our own, for token formats detect-secrets 1.5 lacks or matches too narrowly
# (formats as their issuers publish them; the same ones gitleaks' rules use).
# Each pattern starts with its anchor (or `back` characters before it).
_OWN: tuple[_Own, ...] = (
    # OpenAI sk-, sk-proj-, sk-svcacct-; Anthropic sk-ant-. Random keys hold an
    # upper-case letter and a digit; 'sk-learn-...' and branch names do not.
    _Own("openai_anthropic", "-(?<=sk-)",
         r"sk-(?=[A-Za-z0-9_-]*[A-Z])(?=[A-Za-z0-9_-]*[0-9])[A-Za-z0-9_-]{20,}", back=2),
    _Own("slack_app", "-(?<=xapp-)", r"xapp-[A-Za-z0-9-]{10,}", back=4),
    _Own("slack_any", "-(?<=xox[abposr]-)", r"xox[abposr]-[A-Za-z0-9-]{10,}", back=4),
    # Slack workflow and trigger webhooks (detect-secrets knows only /services/).
    _Own("slack_workflow_webhook", _SLACK_HOOKS,
         r"(?i:hooks\.slack\.com/workflows/)[A-Za-z0-9_/-]{16,}", _URL_PATH_CHARS, back=5,
         after="/workflows/"),
    _Own("slack_trigger_webhook", _SLACK_HOOKS,
         r"(?i:hooks\.slack\.com/triggers/)[A-Za-z0-9_/-]{16,}", _URL_PATH_CHARS, back=5,
         after="/triggers/"),
    # Discord webhooks: discord[app].com/api[/vN]/webhooks/<id>/<token>; the token goes.
    _Own("discord_webhook", r"\.(?:(?<=discord\.)|(?<=discordapp\.))(?=com/)",
         r"discord(?:app)?\.com/api(?:/v[0-9]+)?/webhooks/[0-9]{17,20}/([A-Za-z0-9_-]{40,})",
         back=10, group=1),
    _Own("github_classic", _GITHUB, r"gh[pousr]_[A-Za-z0-9]{30,}", back=3),
    _Own("github_fine_grained", "_(?<=github_)(?=pat_)", r"github_pat_[A-Za-z0-9_]{22,}",
         back=6),
    # GitLab's routable tokens (17.x) carry dots: glpat-<payload>.01.<crc>.
    _Own("gitlab_any", _GITLAB,
         r"gl(?:pat|dt|ft|soat|rt|cbt|imt|ptt|agent|oas)-[A-Za-z0-9_-]{20,}", _DOTTED_CHARS,
         back=7),
    _Own("stripe_any", "_(?<=[rs]k_)(?=live_|test_)", r"[rs]k_(?:live|test)_[A-Za-z0-9]{10,}",
         back=2),
    _Own("stripe_webhook", "_(?<=whsec_)", r"whsec_[A-Za-z0-9]{24,}", back=5),
    _Own("google_api", "AIza", r"AIza[A-Za-z0-9_-]{35}"),
    _Own("google_oauth_secret", "-(?<=GOCSPX-)", r"GOCSPX-[A-Za-z0-9_-]{24,}", back=6),
    # Google OAuth 2 access tokens.
    _Own("google_oauth_access", r"\.(?<=ya29\.)", r"ya29\.[A-Za-z0-9_-]{20,}", _DOTTED_CHARS,
         back=4),
    _Own("huggingface", "_(?<=hf_)", r"hf_[A-Za-z0-9]{30,}", back=2),
    _Own("npm", "_(?<=npm_)", r"npm_[A-Za-z0-9]{36}", back=3),
    # PyPI API tokens: 'pypi-' and a base64url macaroon, whose first bytes
    # (version 2, then the location's length and name) read 'AgE' and then
    # 'IcHlwaS5vcmc' for pypi.org, 'NdGVzdC5weXBpLm9yZw' for test.pypi.org.
    # detect-secrets wants 70+ characters after those; these also take
    # truncated tokens (40 characters after 'AgE' are more than the location
    # holds), any index's token after 'pypi-', a bare macaroon (a
    # 'pypi-' cut off by a line break or a flag glued to the front), and a
    # token wrapped over lines. 'pypi_any' shares PypiTokenDetector's anchor,
    # so the two cost one check per hit of the '-' scan.
    _Own("pypi_any", "-(?<=pypi-)(?=Ag)", r"pypi-AgE[A-Za-z0-9_-]{40,}", back=4, glued=True,
         wraps=True),
    _Own("pypi_macaroon", "AgE(?=IcHlwaS5vcmc|NdGVzdC5weXBpLm9yZw)",
         r"(?:pypi-)?AgE(?:IcHlwaS5vcmc|NdGVzdC5weXBpLm9yZw)[A-Za-z0-9_-]{8,}", back=5,
         glued=True, wraps=True),
    # Mailgun's legacy API keys: 'key-' and 32 hex digits.
    _Own("mailgun", "-(?<=key-)", r"key-[0-9a-f]{32}(?![A-Za-z0-9_-])", back=3),
    _Own("square_access", "-(?<=sq0atp-)", r"sq0atp-[A-Za-z0-9_-]{22,}", back=6),
    _Own("digitalocean", "_(?=v1_)", r"do[opr]_v1_[a-f0-9]{64}", back=3),
    _Own("shopify", "_(?<=shp(?:at|ss|ca|pa)_)", r"shp(?:at|ss|ca|pa)_[a-fA-F0-9]{32}", back=5),
    # AWS secret access keys in credentials.csv rows: the 40 characters that
    # follow an access key id and a comma (the id itself goes by AWSKeyDetector).
    _Own("aws_csv_secret", "A(?:KIA|SIA)",
         r"A(?:KIA|SIA)[0-9A-Z]{16}[ \t]*,[ \t]*\"?([A-Za-z0-9/+]{40})(?![A-Za-z0-9/+])",
         _B64_CHARS, group=1),
    # Discord bot tokens whose first part is not 24-26 characters (account ids
    # of 17 or 19 digits) or whose HMAC is 38 characters (since 2023), which
    # detect-secrets' pattern misses.
    _Own("discord_new", r"\.(?=[A-Za-z0-9_-]{6}\.)",
         r"[MNO][A-Za-z0-9_-]{22,27}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,40}", _DOTTED_CHARS,
         back=26),
)  # fmt: skip


def _shortcut(anchor: str) -> str:
    """The anchor as a regex that matches the lower-cased text."""
    return re.sub(r"\[([^\]]*)\]", lambda m: "[" + m.group(1).lower() + "]", anchor).lower()


def shortcuts() -> list[str]:
    """Regexes (for the lower-cased text) at least one of which matches wherever a rule can."""
    anchors = [spec[3] for spec in _LIBRARY] + [own.anchor for own in _OWN]
    return [_shortcut(anchor) for anchor in anchors]


@cache
def token_rules() -> tuple[TokenRule, ...]:
    """All provider rules, detect-secrets' first; imports detect-secrets on first call.

    Raises:
        ImportError: detect-secrets is not installed (it is a dependency).
        AttributeError: a plugin named in `_LIBRARY` is gone (a detect-secrets upgrade).
    """
    rules: list[TokenRule] = []
    for module, cls, index, anchor, back, group, chars, after, lower in _LIBRARY:
        plugin = getattr(importlib.import_module(f"detect_secrets.plugins.{module}"), cls)
        denylist: Sequence[re.Pattern[str]] = plugin.denylist
        rules.append(
            TokenRule(
                name=f"{cls}[{index}]",
                anchor=re.compile(anchor),
                pattern=denylist[index],
                back=back,
                group=group,
                chars=chars,
                after=after,
                lower=lower,
                inside=cls == "TelegramBotTokenDetector",
            )
        )
    for own in _OWN:
        rules.append(
            TokenRule(
                name=own.name,
                anchor=re.compile(own.anchor),
                pattern=re.compile(own.pattern),
                back=own.back,
                group=own.group,
                chars=own.chars,
                after=own.after,
                glued=own.glued,
                wraps=own.wraps,
            )
        )
    return tuple(rules)


def _token_span(text: str, match: re.Match[str], rule: TokenRule) -> tuple[int, int] | None:
    """The whole token that `match` found, or None.

    Widened to the right (and, for rules that allow it, to the left); None when
    the match holds no token character or starts inside a longer token.
    """
    start, end = match.span(rule.group)
    if start < 0:
        return None
    if rule.after:
        at = text.find(rule.after, start, end)
        if at >= 0:
            start = at + len(rule.after)
    chars = rule.chars
    while start < end and text[start] not in chars:
        start += 1
    if start >= end:
        return None
    if start > 0 and text[start - 1] in chars and not rule.after and not rule.glued:
        if not rule.inside:
            return None
        while start > 0 and text[start - 1] in chars:
            start -= 1
    end = start
    while end < len(text) and text[end] in chars:
        end += 1
    while end > start and text[end - 1] in ".:/":  # a sentence's full stop, a URL's slash
        end -= 1
    if rule.wraps:
        end = _wrapped_end(text, end)
    return start, end


# A line break (also JSON-escaped, or after a shell line continuation) and the
# rest of a wrapped token: 8+ token characters that end the next line's first
# word (not a key: no '=' or ':' after it) and hold a digit or an upper-case
# letter after the first character (not a word such as 'done' or 'Next').
_WRAP = re.compile(
    r"(?:\\?\r?\n|\\r\\n|\\n)[ \t]*+"
    r"(?=[A-Za-z0-9_-]*?(?:[0-9]|(?<=[A-Za-z0-9_-])[A-Z]))([A-Za-z0-9_-]{8,}+)(?![ \t]*[=:])"
)


def _wrapped_end(text: str, end: int) -> int:
    """Where a token that ends at `end` really ends when it goes on over line breaks."""
    while (wrapped := _WRAP.match(text, end)) is not None:
        end = wrapped.end(1)
    return end


_Members = tuple[tuple[re.Pattern[str], tuple[TokenRule, ...]], ...]


def _first_literal(anchor: str) -> tuple[str, str]:
    """Split an anchor regex into its first (literal) character and the rest."""
    if anchor.startswith("\\"):
        return anchor[1], anchor[2:]
    return anchor[0], anchor[1:]


@cache
def _scans() -> tuple[tuple[re.Pattern[str], bool, _Members], ...]:
    """Rules grouped for scanning: (scan regex, on lower-cased text, members).

    Anchors that start with the same character share one scan, `c(?=rest1|rest2|...)`,
    which consumes only that character (so no hit hides another) and starts with
    a literal (so `re` looks for it at memchr speed). Each member is (its anchor,
    the rules that share that anchor). One scan per first character (nine, with
    the pivots of `_LIBRARY` and `_OWN`) beats one scan per anchor and, on long
    texts, one alternation of all anchors (see `_combined`).
    """
    by_anchor: dict[tuple[str, bool], list[TokenRule]] = {}
    for rule in token_rules():
        by_anchor.setdefault((rule.anchor.pattern, rule.lower), []).append(rule)
    by_first: dict[tuple[str, bool], list[tuple[str, list[TokenRule]]]] = {}
    for (anchor, lower), rules in by_anchor.items():
        by_first.setdefault((_first_literal(anchor)[0], lower), []).append((anchor, rules))
    scans = []
    for (first, lower), members in by_first.items():
        rests = "|".join(f"(?:{_first_literal(anchor)[1]})" for anchor, _ in members)
        scan = re.compile(f"{re.escape(first)}(?={rests})")
        scans.append(
            (scan, lower, tuple((re.compile(anchor), tuple(rules)) for anchor, rules in members))
        )
    return tuple(scans)


def _window_end(text: str, at: int) -> int:
    """Where the search around an anchor hit at `at` stops: its line's end, at most `_WINDOW` on."""
    end = text.find("\n", at, at + _WINDOW)
    return min(len(text), at + _WINDOW) if end < 0 else end


def _window_spans(text: str, at: int, rule: TokenRule, spans: list[Span]) -> int:
    """Run `rule` in the window around the anchor hit at `at`; return how far it searched.

    For rules whose match may start before the anchor (`back` > 0).
    """
    line_start, _ = line_bounds(text, at, _WINDOW)
    hi = _window_end(text, at)
    for match in rule.pattern.finditer(text, max(line_start, at - rule.back), hi):
        span = _token_span(text, match, rule)
        if span is not None and not looks_placeholder(text[span[0] : span[1]]):
            spans.append((span[0], span[1], API_KEY))
            hi = max(hi, span[1])
    return hi


def _anchored_span(text: str, at: int, rule: TokenRule, spans: list[Span]) -> int:
    """Match `rule` right at the anchor hit `at` (rules with `back` == 0 start there).

    Returns where the token found ends (`at` + 1 when none): later hits before
    it lie inside that token and are skipped, which keeps a run of repeated
    anchors linear.
    """
    match = rule.pattern.match(text, at, _window_end(text, at))
    if match is None:
        return at + 1
    span = _token_span(text, match, rule)
    if span is None:
        return at + 1
    if not looks_placeholder(text[span[0] : span[1]]):
        spans.append((span[0], span[1], API_KEY))
    return max(span[1], at + 1)


_SMALL = 1024  # below this many characters one alternation beats many scans


@cache
def _combined() -> tuple[tuple[re.Pattern[str], bool, dict[str, _Members]], ...]:
    """Per case: one alternation of all first-character scans, and members by first character.

    For short texts the ~20 separate scans cost more in call overhead than one
    alternation (about 120 MB/s) costs in scanning; for long texts the reverse
    (each literal-led scan runs at 0.5-3 GB/s). Measured crossover: 1-2 KB.
    """
    out = []
    for lower in (False, True):
        scans = [(scan, members) for scan, low, members in _scans() if low == lower]
        regex = re.compile("|".join(f"(?:{scan.pattern})" for scan, _ in scans))
        by_char = {
            scan.pattern[1] if scan.pattern[0] == "\\" else scan.pattern[0]: members
            for scan, members in scans
        }
        out.append((regex, lower, by_char))
    return tuple(out)


def _hits(doc: Doc) -> Iterator[tuple[str, int, _Members]]:
    """(haystack, index, members) for every anchor hit, in scan order."""
    if len(doc.text) < _SMALL:
        for regex, lower, by_char in _combined():
            haystack = doc.low if lower else doc.text
            for hit in regex.finditer(haystack):
                at = hit.start()
                yield haystack, at, by_char[haystack[at]]
        return
    for scan, lower, members in _scans():
        haystack = doc.low if lower else doc.text
        for hit in scan.finditer(haystack):
            yield haystack, hit.start(), members


def token_rule(doc: Doc) -> None:
    """Replace provider tokens (every `token_rules` rule) with `<REDACTED_API_KEY>`."""
    text = doc.text
    spans: list[Span] = []
    covered: dict[str, int] = {}  # rule name -> hits before this were searched already
    for haystack, at, members in _hits(doc):
        for anchor, rules in members:
            if len(members) > 1 and anchor.match(haystack, at) is None:
                continue
            for rule in rules:
                if at < covered.get(rule.name, 0):
                    continue
                if not rule.back:
                    covered[rule.name] = _anchored_span(text, at, rule, spans)
                else:
                    searched = _window_spans(text, at, rule, spans)
                    covered[rule.name] = max(searched - _WINDOW // 2, at + 1)
    doc.splice(spans)


# PEM private keys (also PGP private key blocks). The body may not contain
# '-----', so a run of BEGIN lines without END costs linear time.
_PEM = re.compile(
    r"-----BEGIN ([A-Z0-9 ]{0,40})PRIVATE KEY( BLOCK)?-----"
    r"(?:(?:[A-Za-z0-9+/=\s\\:,]|-(?!----))*?-----END \1PRIVATE KEY(?(2) BLOCK)-----"
    r"|[A-Za-z0-9+/=\s\\]*+)"  # truncated: the base64 body that follows
)


# SSH2 (RFC 4716 style, ssh.com) private keys: '---- BEGIN SSH2 ... PRIVATE KEY ----'.
# Header lines (Comment: "...") may hold anything but '----', so the body stops
# at the next BEGIN or END line and a run of BEGIN lines stays linear.
_SSH2 = re.compile(
    r"---- BEGIN SSH2 (ENCRYPTED )?PRIVATE KEY ----"
    r"(?:(?:[^-]|-(?!---))*?---- END SSH2 \1?PRIVATE KEY ----|[A-Za-z0-9+/=\s\\]*+)"
)
# PuTTY key files (.ppk v2/v3): the header line and every header or base64 line
# after it, through 'Private-MAC: <hex>'. Public lines go too (simpler, and harmless).
_PUTTY = re.compile(
    r"PuTTY-User-Key-File-[0-9]+:[^\r\n\\]*+"
    r"(?:(?:\r?\n|\\r\\n|\\n)(?:(?:Encryption|Comment|Public-Lines|Private-Lines|Private-Hash"
    r"|Key-Derivation|Argon2-[A-Za-z]+): [^\r\n\\]*+|[A-Za-z0-9+/=]++(?![^\r\n\\])))*+"
    r"(?:(?:\r?\n|\\r\\n|\\n)Private-MAC: [0-9a-fA-F]*+)?"
)


def pem_rule(doc: Doc) -> None:
    """Replace private keys: PEM (and PGP) blocks, SSH2 keys and PuTTY key files.

    A block goes to its END line, or to the end of a truncated body.
    """
    if "BEGIN" in doc.text:
        if "-----BEGIN" in doc.text:
            doc.set(_PEM.sub(PRIVATE_KEY, doc.text))
        if "---- BEGIN SSH2" in doc.text:
            doc.set(_SSH2.sub(PRIVATE_KEY, doc.text))
    if "PuTTY-User-Key-File-" in doc.text:
        doc.set(_PUTTY.sub(PRIVATE_KEY, doc.text))


_JWT = re.compile(
    r"eyJ(?<![A-Za-z0-9_-]eyJ)[A-Za-z0-9_-]{5,}+\.eyJ[A-Za-z0-9_-]{5,}+\.[A-Za-z0-9_-]*+"
    r"(?![A-Za-z0-9_-])"
)


def jwt_rule(doc: Doc) -> None:
    """Replace JWTs (`eyJ<header>.eyJ<payload>.<signature>`) with `<REDACTED_JWT>`.

    Broader than detect-secrets' `JwtTokenDetector`, which also requires the
    parts to decode; a truncated or altered token still carries the claims.
    """
    if "eyJ" in doc.text:
        doc.splice([(m.start(), m.end(), JWT) for m in _JWT.finditer(doc.text)])
