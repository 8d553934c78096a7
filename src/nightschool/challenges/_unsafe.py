"""Why a text must not be replayed as a practice challenge (journal mining's safety refusal).

PRIOR-ART.md: a journal-mined challenge once replayed a user's destructive SQL.
`unsafe_reason` names the first hazard it finds (privilege, destructive shell
or SQL, credentials, network access); pattern matching, not a sandbox.
"""

from __future__ import annotations

import re

_RM_RECURSIVE = (
    r"\brm\s+(?:-{1,2}[\w-]+\s+)*?(?:-[a-zA-Z]*[rR][a-zA-Z]*|--recursive)\s+"
    r"(?:-{1,2}[\w-]+\s+)*[\"']?(?:/|~|\$|\*|\.\.(?![\w])|\.(?=[\s;|&\"']|$))"
)
_SQL_UNGUARDED = (
    r"(?!(?:a|an|the|my|your|this|that|these|those|it|each|every|all|some|list|dict|array)\b)"
    r"[\w.\"`\[\]]+"
)
"""A table name after DELETE FROM / UPDATE; an English determiner there is prose
("delete from a dict"), not SQL."""

_UNSAFE_RULES: tuple[tuple[str, str], ...] = (
    # privilege escalation
    ("privilege: sudo", r"(?<![\w.-])(?:sudo|doas|pkexec)\b(?!-)"),
    ("privilege: su root", r"(?<![\w.-])su\s+(?:-l?\s+)?root\b|(?<![\w.-])su\s+-\s*(?:$|\n)"),
    (
        "privilege: setuid",
        r"\bsetuid\b|\bos\.set(?:e|re|res)?uid\s*\(|\bsetcap\b"
        r"|\bchmod\s+(?:[ugoa]*\+[a-z]*s|[2-7][0-7]{3})\b",
    ),
    ("privilege: sudoers", r"/etc/sudoers\b"),
    # destructive shell
    ("destructive shell: rm -rf", _RM_RECURSIVE),
    (
        "destructive shell: rmtree",
        r"\bshutil\.rmtree\s*\(\s*(?:r?[\"'](?:/|~)|os\.path\.expanduser)",
    ),
    (
        "destructive shell: find -delete",
        r"\bfind\s+[\"']?(?:/|~)\S*[^\n]*\s-(?:delete\b|exec\s+rm\b)",
    ),
    ("destructive shell: mkfs", r"\bmkfs(?:\.\w+)?\b"),
    ("destructive shell: dd of=/dev", r"\bdd\b[^\n]*\bof=/dev/"),
    (
        "destructive shell: write to a disk device",
        r">\s*/dev/(?:sd[a-z]|nvme\d|hd[a-z]|xvd[a-z]|vd[a-z]|mmcblk\d|disk\d)",
    ),
    (
        "destructive shell: overwrite system file",
        r"(?<![<>])>{1,2}\s*/(?:etc|boot|bin|sbin|usr|lib)/",
    ),
    (
        "destructive shell: chmod -R on / or ~",
        r"\bch(?:mod|own|grp)\s+(?:-\w+\s+)*-[a-zA-Z]*R[a-zA-Z]*\s+(?:\S+\s+)?[\"']?(?:/|~)",
    ),
    ("destructive shell: fork bomb", r":\s*\(\s*\)\s*\{\s*:\s*\|\s*:\s*&\s*\}\s*;\s*:"),
    (
        "destructive shell: shutdown/reboot",
        r"(?:^|[;&|(`\"']|\$\()\s*(?:shutdown|reboot|poweroff)\b"
        r"(?=\s*(?:$|[;&|`\"')]|-\w|now\b|\+\d))"
        r"|\bshutdown\s+(?:-[hrPHc]\b|now\b|\+\d)|\bsystemctl\s+(?:poweroff|reboot|halt)\b"
        r"|(?<![\w.])init\s+[06]\s*(?:$|[;&|`\"'])",
    ),
    ("destructive shell: git push --force", r"\bgit\s+push\b[^\n;|&]*\s(?:--force\S*|-f)\b"),
    # destructive SQL
    (
        "destructive SQL: DROP TABLE",
        r"\bdrop\s+(?:table|database|schema|view)\b"
        r"|\bdrop\s+(?:index|user|role|trigger)\s+(?:if\s+exists\s+)?[\w.\"`]+\s*(?:;|$)",
    ),
    ("destructive SQL: TRUNCATE", r"\btruncate\s+table\b|\btruncate\s+[\w.\"`]+\s*;"),
    ("destructive SQL: ALTER TABLE ... DROP", r"\balter\s+table\s+\S+\s+drop\b"),
    # credentials (also the placeholders redaction leaves where a secret was)
    ("credentials: private key", r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY|<REDACTED_PRIVATE_KEY>"),
    ("credentials: API key", r"<REDACTED_(?:API_KEY|JWT|SECRET)>|\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"),
    (
        "credentials: secret file",
        r"\.ssh/|\bid_(?:rsa|dsa|ecdsa|ed25519)\b|/etc/shadow\b|\.aws/credentials\b"
        r"|\.netrc\b|\.pgpass\b|\baws_secret_access_key\b",
    ),
    (
        "credentials: password",
        r"\b(?:password|passwd|passphrase|pwd)\b[\"']?\s*[:=]\s*[\"']?"
        r"(?![\s\"'<$]|None\b|null\b|os\.|input\s*\(|getpass)[^\s\"',;)]{3,}"
        r"|(?<![/\w])passwd\s+\w",
    ),
    (
        "credentials: API key/token/secret",
        r"\b(?:api[_ -]?key|apikey|access[_-]?key|secret(?:[_-]?key)?|client[_-]?secret"
        r"|(?:auth|access|bearer|api)[_-]?token|token)\b[\"']?\s*(?:[:=]|\bis\b)\s*"
        r"(?:[\"'][^\s\"'<$]{8,}[\"']|(?=[^\s]*\d)(?=[^\s]*[A-Za-z])[A-Za-z0-9_\-/+]{12,})",
    ),
    # network access
    ("network access: curl", r"(?<![\w.-])curl\b(?!-)"),
    ("network access: wget", r"(?<![\w.-])wget\b"),
    (
        "network access: ssh/scp",
        r"(?<![\w./-])(?:ssh|scp|sftp|telnet)\b(?!-)"
        r"|(?<![\w.-])(?:nc|ncat)\s+(?:-[a-zA-Z]|[\w.-]+\s+\d{2,5}\b)|\bnetcat\b",
    ),
    (
        "network access: package install",
        r"\b(?:pip3?|npm|yarn|pnpm|apt(?:-get)?|brew|gem|cargo|conda)\s+install\b",
    ),
    ("network access: git remote", r"\bgit\s+(?:clone|fetch|pull|push)\b"),
    (
        "network access: python networking",
        r"\b(?:import|from)\s+(?:requests|socket|httpx|aiohttp|http\.client|ftplib|smtplib"
        r"|paramiko|urllib\.request|urllib3)\b|\burlopen\s*\("
        r"|\b(?:requests|httpx)\.(?:get|post|put|patch|delete|head|request|Session|Client)\b"
        r"|\bsocket\.(?:socket|create_connection)\b",
    ),
    (
        "network access: URL",
        r"\b(?:https?|ftp|wss?)://(?!(?:localhost|127(?:\.\d{1,3}){3}|\[::1\]|0\.0\.0\.0"
        r"|(?:[\w-]+\.)*example(?:\.(?:com|org|net))?|(?:[\w-]+\.)+(?:test|invalid|localhost)"
        r")(?![\w.-]))[\w.-]+",
    ),
)
"""Named refusal rules, checked in this order; the first that matches names the
reason. Case-insensitive (the AWS and PEM rules too), word-boundary aware."""

_UNSAFE_PATTERNS = tuple(
    (reason, re.compile(pattern, re.IGNORECASE | re.MULTILINE)) for reason, pattern in _UNSAFE_RULES
)

_UNGUARDED = (
    (
        "destructive SQL: DELETE without WHERE",
        re.compile(r"\bdelete\s+from\s+" + _SQL_UNGUARDED, re.I),
    ),
    (
        "destructive SQL: UPDATE without WHERE",
        re.compile(r"\bupdate\s+" + _SQL_UNGUARDED + r"\s+set\s+[\w.\"`\[\]]+\s*=", re.I),
    ),
)
_STATEMENT_END = re.compile(
    r";|\"|\)|\n\s*\n|\b(?:select|insert|update|delete|create|drop|alter|with)\b", re.I
)
_REAL_WHERE = re.compile(r"\bwhere\b(?!\s+(?:1\s*=\s*1|true|1)\b)", re.I)


def _unguarded_statement(text: str) -> str | None:
    for reason, pattern in _UNGUARDED:
        for match in pattern.finditer(text):
            rest = text[match.end() : match.end() + 400]
            end = _STATEMENT_END.search(rest)
            statement = rest[: end.start()] if end else rest
            if not _REAL_WHERE.search(statement):
                return reason
    return None


def unsafe_reason(text: str) -> str | None:
    """Why `text` must not be replayed as a challenge, or None when it may be.

    Rules run case-insensitively in the order below (the WHERE-less DELETE /
    UPDATE check last, after network access); the first that fires names the
    reason as `"<category>: <rule>"`:

    - privilege: `sudo`/`doas`/`pkexec`, `su root` / `su -`, setuid
      (`setuid`, `os.setuid(`, `setcap`, `chmod u+s`, `chmod 4755`),
      `/etc/sudoers`.
    - destructive shell: recursive `rm` (`-r`, `-rf`, `--recursive`) on an
      absolute, home (`~`), variable (`$X`), glob (`*`), `.` or `..` target;
      `shutil.rmtree` on an absolute or home path; `find / ... -delete` or
      `-exec rm`; `mkfs`; `dd ... of=/dev/...`; redirection into a disk device
      (`> /dev/sda`) or a system directory (`> /etc/...`); `chmod`/`chown -R`
      on `/` or `~`; the `:(){ :|:& };:` fork bomb; `shutdown`, `reboot`,
      `poweroff` as commands (at a line or command start, then an end, a
      flag or `now`), `systemctl reboot|poweroff|halt`, `init 0|6`;
      `git push --force` / `-f`.
    - destructive SQL: `DROP TABLE|DATABASE|SCHEMA|VIEW`,
      `DROP INDEX|USER|ROLE|TRIGGER name;`, `TRUNCATE TABLE` (or
      `TRUNCATE t;`), `ALTER TABLE t DROP ...`, and
      `DELETE FROM t` / `UPDATE t SET c = ...` whose statement (up to `;`, a
      closing `"` or `)`, a blank line or the next SQL keyword) has no
      `WHERE`, or only `WHERE 1=1` / `WHERE true` (a determiner after
      `DELETE FROM`, as in "delete from a dict", is prose).
    - credentials: PEM private key headers, the placeholders redaction leaves
      for keys, JWTs and secrets (`<REDACTED_API_KEY>`, ...), AWS key ids
      (`AKIA...`), secret files (`~/.ssh/`, `id_rsa`, `/etc/shadow`,
      `.aws/credentials`, `.netrc`, `.pgpass`), `password=`/`passwd:` with a
      literal value, the `passwd user` command, and `api_key`/`token`/
      `secret`/`client_secret` assigned a literal that looks like a key
      (quoted, 8+ characters; or 12+ key characters mixing letters and digits).
    - network access: `curl`, `wget`, `ssh`/`scp`/`sftp`/`telnet`, `netcat`,
      `nc -l` or `nc host port`; package installs (`pip install`,
      `npm install`, `apt-get install`, ...);
      `git clone|fetch|pull|push`; Python networking (`import requests`,
      `socket`, `httpx`, `aiohttp`, `urllib.request`, `urlopen(`,
      `requests.get`, `socket.socket`); `http(s)://`, `ftp://`, `ws(s)://`
      URLs except loopback (`localhost`, `127.x.x.x`, `[::1]`, `0.0.0.0`) and
      the reserved names of RFC 2606 / RFC 6761 (`example.com|org|net`,
      `*.example`, `*.test`, `*.invalid`, `*.localhost`).

    Deliberately allowed (near misses): `DELETE ... WHERE ...`, pandas
    `drop_duplicates` / `df.drop(...)`, `tokenizer`/`max_tokens`, `rm` inside
    words (`format`, `confirm`), non-recursive `rm` and recursive `rm` of a
    plain relative path (`rm -rf build`), `sudoku`, `executor.shutdown()`,
    "truncate the string", `urllib.parse`, `/etc/passwd` (no secrets in it),
    `chmod 755 x.sh`, and a bare mention of "password" or "API key".

    Pattern matching, not a sandbox: it keeps obvious hazards out of replayed
    prompts; the sandbox (no network, own workspace) remains the real guard.

    Args:
        text: any text (a request, a failure description, code).

    Returns:
        A short named reason such as `"destructive SQL: DROP TABLE"`, or None.
    """
    for reason, pattern in _UNSAFE_PATTERNS:
        if pattern.search(text):
            return reason
    return _unguarded_statement(text)


__all__ = ["unsafe_reason"]
