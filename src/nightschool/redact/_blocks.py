"""Secrets that span lines: YAML block scalars, values on the next line, Kubernetes Secrets.

`yaml_block_span` serves the key/value rule (`_assignments.kv_rule`) when a
secret-named key ends its line (`password: >-`, `token: |`, `secret:` with
the value indented below); `k8s_secret_rule` blanks every value under `data:`
or `stringData:` of a Kubernetes `Secret`, whatever its keys are called
(`tls.key`, `.dockerconfigjson`, `DB_URL`).
"""

from __future__ import annotations

import bisect
import re

from nightschool.redact._doc import SECRET, Doc, Span
from nightschool.redact._keys import is_not_secret_value

_MAX_LINES = 200  # lines read below a key, so a run of nested keys stays linear

# After 'key:' (and its blanks): an optional block indicator ('|', '>-', '|2+'),
# an optional comment, then the end of the line.
_BLOCK_HEADER = re.compile(r"(?P<ind>[|>](?:[1-9][+-]?|[+-][1-9]?)?)?[ \t]*(?:#[^\r\n]*)?\r?\n")
# A first line below 'key:' that is no plain scalar: a mapping key, a list
# item, a flow collection, a comment, an anchor, alias, tag or directive.
_NOT_SCALAR = re.compile(r"[-#\[{&*!?|>%@]|[^\s:]+:(?:\s|$)")


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


def yaml_block_span(text: str, key: str, key_start: int, at: int) -> tuple[Span | None, int] | None:
    """The value of a YAML key that ends its line, or None when the line goes on.

    `key: |` / `key: >-` (a block scalar) and `key:` followed by a more-indented
    plain scalar: the span runs from the first character of the value to the
    end of its last line, so the whole block becomes one `<REDACTED_SECRET>`.

    Args:
        text: the whole text.
        key: the secret-named key.
        key_start: where the key starts.
        at: where its value would start (after ':' and blanks).

    Returns:
        None when something follows the key on its line (an ordinary value);
        else (the span to blank or None, where the examined lines end).
    """
    header = _BLOCK_HEADER.match(text, at)
    if header is None:
        return None
    line_start = text.rfind("\n", 0, key_start) + 1
    indent = _indent(text[line_start:key_start])
    plain = header.group("ind") is None
    pos = header.end()
    start = end = -1
    parts: list[str] = []
    for _ in range(_MAX_LINES):
        if pos >= len(text):
            break
        eol = text.find("\n", pos)
        eol = len(text) if eol < 0 else eol
        line = text[pos:eol].rstrip("\r")
        content = line.strip()
        if content:
            if _indent(line) <= indent:
                break
            if start < 0:
                if plain and _NOT_SCALAR.match(content):
                    return None, pos
                start = pos + _indent(line)
            end = pos + len(line.rstrip())
            parts.append(content)
        elif plain:
            break
        pos = eol + 1
    if start < 0:
        return None, header.end()
    value = " ".join(parts)
    if is_not_secret_value(value, key, bare=plain):
        return None, end
    return (start, end, SECRET), end


# --- Kubernetes Secrets -----------------------------------------------------------

# 'kind: Secret' / '"kind": "Secret"', lower-cased; led by a literal so that it
# scans at memchr speed
_KIND = re.compile(r"kind[\"']?[ \t]*:[ \t]*[\"']?secret[\"']?(?![\w-])")
_YAML_DATA = re.compile(r"^([ \t]*)(?:data|stringdata):[ \t]*(?:#[^\n]*)?\r?$", re.MULTILINE)
_YAML_ENTRY = re.compile(
    r"[ \t]+(?P<key>[\"']?[^\s:\"'#][^:\r\n]*?[\"']?)[ \t]*:[ \t]+"
    r"(?P<q>[\"']?)(?P<value>[^\r\n]*?)(?P=q)[ \t]*\r?$"
)
_DOCUMENT_BREAK = re.compile(r"\n---")
_MAX_JSON = 65536  # characters searched for the end of a JSON 'data' object
_JSON_DATA = re.compile(r"\"(?:data|stringdata)\"[ \t]*:[ \t]*\{")  # lower-cased
_JSON_ENTRY = re.compile(r"\"(?P<key>[^\"\\\r\n]+)\"[ \t]*:[ \t]*\"(?P<value>[^\"\\\r\n]*)\"")


class _Documents:
    """The YAML documents ('---' separated) of a text: which one holds an index, and its kind."""

    def __init__(self, low: str) -> None:
        self.low = low
        self.breaks = [m.start() for m in _DOCUMENT_BREAK.finditer(low)]
        self._secret: dict[int, bool] = {}

    def is_secret(self, at: int) -> bool:
        """Whether the document holding index `at` says `kind: Secret`."""
        i = bisect.bisect_right(self.breaks, at)
        if i not in self._secret:
            start = self.breaks[i - 1] if i else 0
            end = self.breaks[i] if i < len(self.breaks) else len(self.low)
            self._secret[i] = _KIND.search(self.low, start, end) is not None
        return self._secret[i]


def _yaml_data_spans(doc: Doc, documents: _Documents, spans: list[Span]) -> None:
    text, low = doc.text, doc.low
    for block in _YAML_DATA.finditer(low):
        if not documents.is_secret(block.start()):
            continue
        i = bisect.bisect_right(documents.breaks, block.start())
        end = documents.breaks[i] if i < len(documents.breaks) else len(low)
        indent = len(block.group(1))
        pos = block.end() + 1
        while pos < end:
            eol = text.find("\n", pos)
            eol = len(text) if eol < 0 else eol
            line = text[pos:eol]
            if line.strip():
                if _indent(line) <= indent:
                    break
                entry = _YAML_ENTRY.match(line)
                if entry is not None:
                    _entry_span(text, entry, pos, spans)
            pos = eol + 1


def _entry_span(text: str, entry: re.Match[str], offset: int, spans: list[Span]) -> None:
    key = entry.group("key").strip("\"'")
    value = entry.group("value")
    if value[:1] in ("|", ">"):  # a block scalar under the key
        found = yaml_block_span(text, key, offset + entry.start("key"), offset + entry.start("q"))
        if found is not None and found[0] is not None:
            spans.append(found[0])
        return
    if not is_not_secret_value(value, key, bare=False):
        spans.append((offset + entry.start("value"), offset + entry.end("value"), SECRET))


def _json_data_spans(doc: Doc, documents: _Documents, spans: list[Span]) -> None:
    text, low = doc.text, doc.low
    for block in _JSON_DATA.finditer(low):
        close = text.find("}", block.end(), block.end() + _MAX_JSON)
        if close < 0 or not documents.is_secret(block.start()):
            continue
        for entry in _JSON_ENTRY.finditer(text, block.end(), close):
            if not is_not_secret_value(entry.group("value"), entry.group("key"), bare=False):
                spans.append((entry.start("value"), entry.end("value"), SECRET))


def k8s_secret_rule(doc: Doc) -> None:
    """Every value under `data:` / `stringData:` of a Kubernetes `Secret` -> `<REDACTED_SECRET>`.

    YAML manifests (each `---` document judged by its own `kind:`) and the JSON
    that `kubectl get secret -o json` prints. Its keys name files or settings
    (`tls.key`, `.dockerconfigjson`, `DB_URL`), so no key test applies; empty
    values and placeholders stay.
    """
    low = doc.low
    if "secret" not in low or "kind" not in low or _KIND.search(low) is None:
        return
    spans: list[Span] = []
    if "data" in low:
        documents = _Documents(low)
        _yaml_data_spans(doc, documents, spans)
        _json_data_spans(doc, documents, spans)
    doc.splice(spans)


def anchors() -> list[str]:
    """Regexes (for the lower-cased text) at least one of which matches wherever a rule here can."""
    return [_KIND.pattern]
