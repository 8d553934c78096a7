"""Reading a solver reply, telling attempts apart, and writing the retry prompt.

Side-effect free helpers of `solver`:

- `read_reply`: the solution code in a model reply. Tool-call blobs
  (`{"name": ..., "arguments": {...}}`, bare, fenced or in `<tool_call>` tags)
  are recognised and never taken as code themselves; a source string inside
  their arguments is taken instead.
- `normalise_code`: a key under which two programs that differ only in
  layout, comments or docstrings are equal.
- `retry_prompt`: the fresh prompt of a retry (task + failing code + checker
  message), never the validator's source.
- `attempt_temperature` and `call_seed`: the sampling schedule.
"""

from __future__ import annotations

import ast
import hashlib
import json
import re
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[^\n]*\n(.*?)(?:```|\Z)", re.DOTALL)
"""A fenced block: group 1 the language tag, group 2 the body (unterminated: to the end)."""

_TOOL_TAG = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|\Z)", re.DOTALL)
_BLOB_SHAPE = re.compile(
    r"""^\s*[\[{].*?["']?(?:name|function)["']?\s*:.*?["']?(?:arguments|parameters|args)["']?\s*:""",
    re.DOTALL,
)
_DATA_LANGS = frozenset({"json", "json5", "jsonl", "tool", "tool_call", "toolcall"})
_NAME_KEYS = ("name", "function")
_ARG_KEYS = ("arguments", "parameters", "args")
_CODE_KEYS = frozenset(
    {"code", "content", "contents", "source", "solution", "script", "file_content", "body"}
)
_LITERAL_NODES = (
    ast.Constant,
    ast.Name,
    ast.Attribute,
    ast.Dict,
    ast.List,
    ast.Set,
    ast.Tuple,
    ast.JoinedStr,
    ast.UnaryOp,
)
_PROSE_LINE = re.compile(r"^[A-Za-z][^|$;&<>=`]*\s\S+\s[^|$;&<>=`]*[.!?:]$")

NoCode = Literal["none", "blob"]
"""Why a reply held no code: `none` (nothing usable) or `blob` (a tool call without source)."""


@dataclass(frozen=True)
class ReplyCode:
    """What `read_reply` found in one reply.

    Attributes:
        code: the solution source, stripped, or None when the reply holds none.
        blob: the reply (or one of its blocks) is a tool-call / JSON object.
        from_blob: `code` was taken out of such an object's arguments.
    """

    code: str | None
    blob: bool = False
    from_blob: bool = False


def language(solution_file: str) -> str:
    """Fence tag of `solution_file`: `python` for `.py`, else `bash`."""
    return "python" if solution_file.endswith(".py") else "bash"


def read_reply(reply: str, solution_file: str) -> ReplyCode:
    """Find the solution source for `solution_file` in a model reply.

    Order: the longest fenced block tagged with the file's language
    (`python`/`py`/`python3` for `.py`, `bash`/`sh` otherwise); else the longest
    other fenced block; else a source string out of a tool-call blob; else the
    whole reply when it has no fences and looks like source (for `.py`: it
    parses, after dedenting, and is more than a bare name or literal; for
    shell: several lines, the first not a prose sentence).

    A tool-call blob is a JSON or Python-dict object with a `name`/`function`
    key and an `arguments`/`parameters`/`args` field (also OpenAI's nested
    `{"function": {"name", "arguments": "<json>"}}`), bare, in a fence or in
    `<tool_call>` tags. It is never code; blocks tagged `json`/`tool` and bare
    data literals are not code either.

    Args:
        reply: the assistant message text.
        solution_file: the requested file, e.g. `solution.py` or `solution.sh`.

    Returns:
        A `ReplyCode`; its `code` is None when nothing usable is there.
    """
    if _is_blob(reply):  # a whole-reply blob: its strings may hold fences of their own
        return _read_blob(reply.strip(), solution_file)
    blocks: list[tuple[str, str]] = [("tool", body) for body in _TOOL_TAG.findall(reply)]
    blocks += FENCE.findall(_TOOL_TAG.sub("", reply))
    if not any(body.strip() for _, body in blocks):
        return _read_unfenced(reply, solution_file)
    wanted = {"python", "py", "python3"} if solution_file.endswith(".py") else {"bash", "sh"}
    tagged_code: list[str] = []
    other_code: list[str] = []
    blob_code: list[str] = []
    blob = False
    for tag, body in blocks:
        lang = tag.lower()
        body = body.strip()
        if not body:
            continue
        if _is_blob(body):
            blob = True
            found = _code_in_blob(body, solution_file)
            if found is not None:
                blob_code.append(found)
        elif lang in _DATA_LANGS or _is_data(body, solution_file):
            continue
        else:
            (tagged_code if lang in wanted else other_code).append(body)
    for pool in (tagged_code, other_code):
        if pool:
            return ReplyCode(salvage_python(max(pool, key=len), solution_file), blob=blob)
    if blob_code:
        return ReplyCode(max(blob_code, key=len), blob=True, from_blob=True)
    return ReplyCode(None, blob=blob)


def salvage_python(code: str, solution_file: str) -> str:
    """Drop a cut-off tail so that a Python reply that ran into the token cap can run.

    A small model often writes its function and then its own test calls until
    `max_tokens` cuts it mid-line (seen with Qwen2.5-Coder-0.5B: the function was
    complete, a trailing `check()` was not, and the file failed with a
    SyntaxError). When `code` does not parse, the trailing top-level statements
    are dropped one at a time until the rest parses and still defines a function
    or class; otherwise `code` is returned unchanged. Shell files are never touched.
    """
    if not solution_file.endswith(".py") or _parse_python(code) is not None:
        return code
    lines = code.splitlines()
    starts = [
        index
        for index, line in enumerate(lines)
        if line and not line[0].isspace() and not line.startswith(("#", ")", "]", "}"))
    ]
    for cut in reversed(starts[1:]):
        kept = "\n".join(lines[:cut]).rstrip() + "\n"
        tree = _parse_python(kept)
        if tree is not None and any(
            isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
            for node in tree.body
        ):
            return kept
    return code


def _read_blob(text: str, solution_file: str) -> ReplyCode:
    """`ReplyCode` of a tool-call blob: its source string, if any."""
    found = _code_in_blob(text, solution_file)
    return ReplyCode(found, blob=True, from_blob=found is not None)


def _read_unfenced(reply: str, solution_file: str) -> ReplyCode:
    """`read_reply` for a reply with no fences and no `<tool_call>` tags.

    Leading blank lines are dropped but the first line's indentation is kept
    for parsing (an indented function body dedents as a whole); the returned
    code is the stripped reply.
    """
    text = reply.strip()
    if not text:
        return ReplyCode(None)
    if _looks_like_source(reply.strip("\r\n").rstrip(), solution_file, standalone=True):
        return ReplyCode(text + "\n")
    candidate = _embedded_object(text)  # prose around a blob: "Calling {"name": ...}"
    return ReplyCode(None) if candidate is None else _read_blob(candidate, solution_file)


def _embedded_object(text: str) -> str | None:
    """The first tool-call object inside prose (`Calling: {"name": ...}`), as text."""
    start = text.find("{")
    while start != -1:
        try:
            _, end = json.JSONDecoder(strict=False).raw_decode(text, start)
        except ValueError:
            start = text.find("{", start + 1)
            continue
        if _is_blob(text[start:end]):
            return text[start:end]
        start = text.find("{", end)
    return None


def _load_object(text: str) -> object:
    """`text` as JSON (control characters allowed in strings), else a Python literal, else None."""
    try:
        return json.loads(text, strict=False)
    except ValueError:
        pass
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None


def _call_arguments(obj: object) -> tuple[bool, object]:
    """Whether `obj` is a tool call, and its arguments (a JSON string argument decoded)."""
    if isinstance(obj, list):
        for item in obj:
            is_call, arguments = _call_arguments(item)
            if is_call:
                return True, arguments
        return False, None
    if not isinstance(obj, dict):
        return False, None
    nested = obj.get("function")
    if isinstance(nested, dict) and any(key in nested for key in _ARG_KEYS):
        return _call_arguments({"name": nested.get("name", ""), **nested})
    if not any(key in obj for key in _NAME_KEYS):
        return False, None
    for key in _ARG_KEYS:
        if key in obj:
            arguments = obj[key]
            if isinstance(arguments, str):
                decoded = _load_object(arguments)
                if isinstance(decoded, dict | list):
                    arguments = decoded
            return True, arguments
    return False, None


def _is_blob(text: str) -> bool:
    """True when `text` is a tool-call object, or is shaped like one but does not parse."""
    stripped = text.strip()
    if not stripped.startswith(("{", "[")):
        return False
    obj = _load_object(stripped)
    if obj is not None:
        return _call_arguments(obj)[0]
    # Unparseable (often cut off at max_tokens): a blob by its shape unless it is Python.
    return _BLOB_SHAPE.match(stripped) is not None and _parse_python(stripped) is None


def _strings(value: object, key: str = "") -> Iterator[tuple[str, str]]:
    """Every string inside `value` with the name of the key that holds it."""
    if isinstance(value, str):
        yield key, value
    elif isinstance(value, dict):
        for name, item in value.items():
            yield from _strings(item, str(name).lower())
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item, key)


def _code_in_blob(text: str, solution_file: str) -> str | None:
    """The source string in a tool call's arguments, preferring `code`/`content`-like keys."""
    _, arguments = _call_arguments(_load_object(text.strip()))
    found: list[tuple[bool, str]] = []
    for key, value in _strings(arguments):
        candidate = value.strip()
        if "```" in candidate:
            candidate = read_reply(candidate, solution_file).code or ""
        if candidate and _looks_like_source(candidate, solution_file, standalone=False):
            found.append((key in _CODE_KEYS, candidate))
    if not found:
        return None
    return max(found, key=lambda item: (item[0], len(item[1])))[1]


def _parse_python(text: str) -> ast.Module | None:
    try:
        return ast.parse(textwrap.dedent(text))
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None


def _only_literals(tree: ast.Module) -> bool:
    """True when every statement is a bare name, attribute or literal expression."""
    return all(
        isinstance(node, ast.Expr) and isinstance(node.value, _LITERAL_NODES) for node in tree.body
    )


def _is_data(text: str, solution_file: str) -> bool:
    """True when `text` is a bare data literal (JSON, a dict, a lone string), not a program."""
    if solution_file.endswith(".py"):
        tree = _parse_python(text)
        return tree is not None and _only_literals(tree)
    return isinstance(_load_object(text), dict | list)


def _looks_like_source(text: str, solution_file: str, *, standalone: bool) -> bool:
    """Whether unfenced `text` is plausibly the source of `solution_file`.

    Python: it parses (after dedenting) and holds more than bare literals.
    Shell: not a data literal, its first line not a prose sentence, and several
    lines (`standalone`, a whole reply) or at least two words (a tool argument).
    """
    if solution_file.endswith(".py"):
        tree = _parse_python(text)
        return tree is not None and bool(tree.body) and not _only_literals(tree)
    if _is_data(text, solution_file):
        return False
    first = next((line.strip() for line in text.splitlines() if line.strip()), "")
    if not first or _PROSE_LINE.match(first):
        return False
    return "\n" in text if standalone else len(text.split()) >= 2


def normalise_code(code: str, solution_file: str) -> str:
    """A key equal for programs that differ only in layout, comments or docstrings.

    Python: `ast.dump` of the parsed module (dedented) with docstrings removed,
    so comments, blank lines, quoting and spacing do not count; source that does
    not parse falls back to its whitespace-collapsed text. Shell: full-line
    comments dropped and whitespace collapsed (a shebang counts as a comment).

    Args:
        code: the solution source.
        solution_file: its file name (`.py` or a shell script).

    Returns:
        The key, prefixed `ast:`, `text:` or `sh:` so the kinds never collide.
    """
    if solution_file.endswith(".py"):
        tree = _parse_python(code)
        if tree is None:
            return "text:" + " ".join(code.split())
        for node in ast.walk(tree):
            if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                body = node.body
                if body and isinstance(body[0], ast.Expr):
                    value = body[0].value
                    if isinstance(value, ast.Constant) and isinstance(value.value, str):
                        node.body = body[1:] or [ast.Pass()]
        return "ast:" + ast.dump(tree)
    lines = [line for line in code.splitlines() if not line.strip().startswith("#")]
    return "sh:" + " ".join(" ".join(lines).split())


def attempt_temperature(base: float, step: float, ceiling: float, index: int) -> float:
    """Sampling temperature of the `index`-th draw: `min(base + index * step, ceiling)`.

    `index` is the 0-based attempt plus the resample number within it, so
    resamples rise further by the same step. The ceiling never pushes the
    temperature below `base`. Rising temperature across retries matched tree
    search on HumanEval at about 1/50 of its cost (Kapoor et al. 2024, "AI
    Agents That Matter", arXiv 2407.01502).

    Returns:
        The temperature, rounded to 6 decimals.
    """
    return round(min(base + index * step, max(ceiling, base)), 6)


def call_seed(salt: int, challenge_hash: str, attempt: int, resample: int) -> int:
    """Sampling seed of one model call, from `sha256(salt:challenge:attempt:resample)`.

    Returns:
        An integer in [0, 2**31): llama.cpp treats 0xFFFFFFFF as "random", so the
        top bit is cleared.
    """
    digest = hashlib.sha256(f"{salt}:{challenge_hash}:{attempt}:{resample}".encode()).hexdigest()
    return int(digest[:8], 16) & 0x7FFFFFFF


def no_code_note(kind: NoCode) -> str:
    """Feedback for a reply that held no code (`blob`: a tool call without source)."""
    if kind == "blob":
        return "Your reply was a tool call or JSON object, not code, so nothing was run."
    return "Your reply contained no code block, so nothing was run."


def retry_prompt(
    task: str,
    solution_file: str,
    *,
    failed_code: str | None,
    checker: str,
    no_code: NoCode | None = None,
    duplicate_of: int | None = None,
) -> str:
    """The user message of a retry: the task, then what went wrong, then the ask.

    Holds the last failing program and the checker's message (validator
    output only; never the validator's source), a note when the last reply had
    no code or repeated an earlier attempt, and the closing request. After a
    repeated reply the failing program itself is left out and only the checker's
    message stays: shown its own code, Qwen2.5-Coder-0.5B copied it again even
    at temperature 0.9-1.0 (4 of 4 learning-curve dream cycles ran a single
    distinct program in 7 model calls).

    Args:
        task: the challenge prompt.
        solution_file: the requested file.
        failed_code: the last program the checker rejected, or None (none ran yet).
        checker: that run's checker message (ignored without `failed_code`).
        no_code: set when the last reply held no code (and why).
        duplicate_of: the attempt number a repeated reply copied, if any.

    Returns:
        The message text.
    """
    lang = language(solution_file)
    parts = [task.rstrip()]
    if failed_code is not None and duplicate_of is not None:
        parts.append(
            "A previous solution failed with this checker message:\n\n"
            f"```text\n{checker.strip()}\n```\n\n"
            "Write a new solution from scratch, in a different way."
        )
    elif failed_code is not None:
        parts.append(
            f"Your previous solution (below) failed with this checker message:\n\n"
            f"```text\n{checker.strip()}\n```\n\n"
            f"Your previous {solution_file}:\n\n```{lang}\n{failed_code.strip()}\n```\n\n"
            "Write a different, corrected solution."
        )
    if duplicate_of is not None:
        parts.append(
            f"Your last reply repeated the solution of attempt {duplicate_of}, which already "
            "failed, so it was not run. Do not repeat it."
        )
    if no_code is not None:
        parts.append(no_code_note(no_code).replace("Your reply", "Your previous reply"))
    ask = f"Reply with the complete {solution_file} in one ```{lang} block"
    parts.append(ask + (", not a tool call or JSON." if no_code is not None else "."))
    return "\n\n".join(parts)


def conversation_retry(feedback: str, solution_file: str) -> str:
    """The retry appended to the conversation (`retry_mode="conversation"`, the old solver)."""
    return (
        f"Your {solution_file} did not pass. The checker said:\n\n{feedback}\n\n"
        f"Fix the problem and reply with the complete corrected {solution_file} "
        "in one fenced code block."
    )


def prose(reply: str) -> str:
    """The part of a reply outside code fences (the plan, if any), at most 2000 characters."""
    return FENCE.sub("", reply).strip()[:2000]
