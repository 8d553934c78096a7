"""Challenges written by the model, kept only when a stack of quality gates passes.

`ChallengeGenerator` asks a `ChatModel` for one program-style challenge (the
task, a setup script, a validator, a reference solution) and runs the gates
in order: parse → quality → preflight → validator self-test → the reference
passes → wrong solutions fail → the verdict is deterministic. A rejection is
fed back into a fresh prompt (the repair loop), up to `max_attempts` model
calls. `ChallengeBank` stores accepted challenges and every rejection in the
append-only `generated_challenges` / `challenge_rejections` tables (m007) and
keeps a challenge in rotation while its solve rate is strictly between 0 and 1.

Source of the acceptance rule: the self-generated curricula of PRIOR-ART
(Absolute Zero, KodCode, CodeT: keep a task only if the reference passes, a
wrong solution fails, the verdict is deterministic and the current solve rate
is strictly between 0 and 1); the self-test from the predecessor system.
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from nightschool.challenges._bank import (  # re-exported: the bank of what this writes
    REJECTION_KINDS,
    RETIRED,
    ROTATION_MIN_RUNS,
    SOURCES,
    ChallengeBank,
)
from nightschool.challenges._gates import (
    SOLUTION_FILE,
    ChallengeSpec,
    preflight,
    quality_check,
    validator_crash,
)
from nightschool.challenges._generation import GenerationOutcome, GenerationRequest, Rejection
from nightschool.challenges._model import CLUSTERS, TIERS, Challenge
from nightschool.challenges._runner import evaluate
from nightschool.challenges._selftest import validator_self_test
from nightschool.errors import ChallengeFaultError
from nightschool.sandbox import Sandbox

if TYPE_CHECKING:
    from nightschool.llm import ChatModel, Completion, Message

WRONG_SOLUTIONS: tuple[tuple[str, str], ...] = (
    ("an empty solution.py", ""),
    ("a solution.py printing a wrong answer", 'print("nightschool: not the answer")\n'),
)
"""Solutions every accepted validator must reject."""

RUN_LINE = (
    "Write a Python program `solution.py`. It is run as `python3 solution.py` in the "
    "directory that holds the input files, with only the standard library (no network). "
    "Print the answer to standard output."
)
"""Appended to a generated prompt that does not name `solution.py` (the solver's contract)."""

DETAIL_CHARS = 300
"""Longest rejection detail kept, characters."""

EXAMPLE = """### PROMPT
Count the lines of `app.log` that contain the word ERROR.

Input: `app.log`, a text file with one log message per line.

Output: print one integer, the number of lines that contain `ERROR`.

Write a Python program `solution.py`. It is run as `python3 solution.py` in the directory
that holds the input files, with only the standard library. Print the answer to standard output.

### SETUP
```python
lines = ["INFO start", "ERROR disk full", "INFO retry", "ERROR disk full", "WARN slow"]
with open("app.log", "w") as f:
    f.write("\\n".join(lines) + "\\n")
```

### VALIDATOR
```python
import subprocess
import sys

with open("app.log") as f:
    expected_output = str(sum(1 for line in f if "ERROR" in line))

result = subprocess.run([sys.executable, "solution.py"], capture_output=True, text=True, timeout=10)
if result.returncode != 0:
    print("FAIL: solution.py exited with status", result.returncode)
    sys.exit(1)
if result.stdout.strip() != expected_output:
    print("FAIL: wrong count")
    sys.exit(1)
print("PASS")
```

### SOLUTION
```python
count = 0
with open("app.log") as f:
    for line in f:
        if "ERROR" in line:
            count += 1
print(count)
```"""
"""The worked example in the system prompt: short, complete, and copyable in form."""

SYSTEM_PROMPT = (
    "You write small, self-contained Python coding challenges with an automatic checker.\n\n"
    "A challenge has four parts, each under its own heading:\n"
    "### PROMPT: the task for the student: the input files and the exact output format. The "
    "student writes `solution.py`, run as `python3 solution.py` in the folder with the input "
    "files; it prints the answer to standard output.\n"
    "### SETUP: a Python script that creates the input files with fixed data (no randomness).\n"
    "### VALIDATOR: a Python script run after solution.py is written. It puts the exact text "
    "solution.py must print in a string variable named `expected_output` (compute it from the "
    'input files or write it out), runs `subprocess.run([sys.executable, "solution.py"], '
    "capture_output=True, text=True, timeout=10)`, compares `result.stdout.strip()` with "
    "`expected_output` as strings, then prints PASS and exits 0, or prints one short FAIL line "
    "and calls `sys.exit(1)`.\n"
    "### SOLUTION: a correct solution.py.\n\n"
    "Rules: standard library only; no network; no randomness. The validator never prints "
    "`expected_output` or the input data, and never calls float() or int() on "
    "`expected_output`. Put each script in one ```python fenced block. Do not copy the "
    "example's task.\n\nExample:\n\n" + EXAMPLE
)
"""The generator's system prompt: the four-section format and one worked example."""

TIER_HINTS: dict[str, str] = {
    "starter": "a very small task: one short input file and one simple computation",
    "basic": "a small task: one input file, a loop and a count or sum",
    "intermediate": "two steps, or one edge case stated in the prompt (blank lines, ties)",
    "advanced": "several steps and two edge cases, all stated in the prompt",
    "expert": "a harder task with several stated edge cases",
}
"""What each tier asks for (a difficulty hint only: generated challenges are whole programs)."""

CLUSTER_HINTS: dict[str, str] = {
    "algo": "an algorithm (sorting, searching, intervals, graphs, dynamic programming)",
    "bash": "shell-style text processing (what grep, sort, uniq, cut or wc do), in Python",
    "concurrency": "threads or a thread pool, printing results in a deterministic order",
    "data_analysis": "CSV or JSON records: filtering, grouping, sums, averages",
    "python_general": "everyday Python: files, dicts, string formatting, dataclasses",
    "regex_parse": "parsing text with the re module (logs, key=value lines, dates)",
    "sql": "sqlite3: the setup creates a database file, the solution queries it",
}
"""One line per cluster telling the model what kind of task it is."""

GENERATED_CLUSTERS: tuple[str, ...] = tuple(c for c in CLUSTERS if c in CLUSTER_HINTS)
"""Clusters the model writes challenges for: every cluster but `web_automation`, whose
challenges need a site and the host's browser (`_webrun`), which a model-written
program-style challenge would not provide."""

_HEADING = re.compile(
    r"^\s*(?P<lead>#{1,6}\s*)?(?:\d+[.)]\s*)?(?P<open>\*\*|\[|<)?\s*"
    r"(?P<name>[A-Za-z][A-Za-z. ]*?)\s*(?:\([^)]*\))?\s*(?:\*\*|\]|>)?\s*:?\s*(?:\*\*)?\s*$"
)
_SECTION_NAMES = {
    **dict.fromkeys(("prompt", "task", "challenge", "challenge prompt"), "prompt"),
    **dict.fromkeys(("setup", "setup script", "setup.py"), "setup"),
    **dict.fromkeys(("solution", "reference", "reference solution", "solution.py"), "solution"),
    **dict.fromkeys(("validator", "validation", "validation script", "validator script",
                     "validator.py", "checker", "check script"), "validator"),
}  # fmt: skip
_FENCED = re.compile(r"```[^\n]*\n(.*?)(?:\n\s*```|\Z)", re.S)


def parse_reply(text: str) -> ChallengeSpec | None:
    """Read the four sections out of a generator reply, leniently.

    Headings may be `### PROMPT`, `**Setup:**`, `[VALIDATOR]`, `2. Solution`,
    `### SOLUTION (reference)` or a bare `SOLUTION:` line (synonyms: task,
    setup script, validation script, checker, reference solution, ...). A
    bare heading inside a fenced block is code; a `#`/`**`/`[` heading always
    starts a section (it closes a fence the model forgot). A code section is
    its first fenced block (an unterminated fence runs to the end), else its
    text. Without headings, three or more fenced blocks are read as setup,
    validator and solution, with the prose before them as the prompt.

    Returns:
        The `ChallengeSpec` (scripts end with one newline), or None when a
        section is missing or empty.
    """
    sections: dict[str, list[str]] = {}
    current: str | None = None
    in_fence = False
    for line in text.splitlines():
        name, strong = _section(line)
        if name and name not in sections and (strong or not in_fence):
            current, in_fence = name, False
            sections[name] = []
            continue
        if line.lstrip().startswith("```"):
            in_fence = not in_fence
        if current is not None:
            sections[current].append(line)
    if len(sections) < 4:
        return _parse_fences(text)
    prompt = _unfence("\n".join(sections["prompt"]))
    setup, validator, solution = (
        _code("\n".join(sections[key])) for key in ("setup", "validator", "solution")
    )
    if not (prompt and setup and validator and solution):
        return None
    return ChallengeSpec(prompt, setup, validator, solution)


def _section(line: str) -> tuple[str | None, bool]:
    """(section name, strong heading) when `line` is a section heading, else (None, False)."""
    match = _HEADING.match(line)
    name = _SECTION_NAMES.get(match["name"].strip().lower()) if match else None
    return name, bool(name and match and (match["lead"] or match["open"]))


def _code(section: str) -> str:
    match = _FENCED.search(section)
    code = (match[1] if match else section).strip("\n")
    return code + "\n" if code.strip() else ""


def _unfence(text: str) -> str:
    stripped = text.strip()
    if stripped.startswith("```") and stripped.endswith("```") and stripped.count("```") == 2:
        return stripped.split("\n", 1)[-1].rsplit("```", 1)[0].strip()
    return stripped


def _parse_fences(text: str) -> ChallengeSpec | None:
    blocks = list(_FENCED.finditer(text))
    if len(blocks) < 3:
        return None
    lines = text[: blocks[0].start()].splitlines()
    prompt = "\n".join(line for line in lines if _section(line)[0] is None).strip()
    codes = [_code(block[0]) for block in blocks[:3]]
    if not prompt or not all(codes):
        return None
    return ChallengeSpec(prompt, codes[0], codes[1], codes[2])


def _short(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= DETAIL_CHARS else line[: DETAIL_CHARS - 3] + "..."


def _copies_example(spec: ChallengeSpec) -> str | None:
    first = EXAMPLE.split("\n")[1]
    if first in spec.prompt:
        return "the prompt copies the worked example's task"
    return None


class _Rejected(Exception):
    """Control flow inside `_judge`: one gate refused the attempt."""

    def __init__(self, kind: str, detail: str) -> None:
        super().__init__(detail)
        self.kind = kind
        self.detail = _short(detail)


class ChallengeGenerator:
    """Writes program-style challenges with a model and keeps those every gate accepts.

    Args:
        model: any `ChatModel`.
        sandbox: where the dry runs and evaluations run.
        max_attempts: model calls per `generate` (the repair loop), at least 1.
        temperature: sampling temperature of every call.
        max_tokens: completion cap per call, tokens (the worked example's four
            sections are about 1,200 characters; the cap leaves room for a
            larger task; a reply cut short is an `unparseable` rejection).
        seed: salt of every call's seed; each `generate` call and attempt gets
            its own seed derived from it.

    Raises:
        ValueError: `max_attempts` below 1.
    """

    def __init__(
        self,
        model: ChatModel,
        sandbox: Sandbox,
        *,
        max_attempts: int = 3,
        temperature: float = 0.7,
        max_tokens: int = 1200,
        seed: int = 0,
    ) -> None:
        if max_attempts < 1:
            raise ValueError(f"max_attempts must be at least 1, got {max_attempts}")
        self.model = model
        self.sandbox = sandbox
        self.max_attempts = max_attempts
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.seed = seed
        self._serial = 0

    def messages(self, request: GenerationRequest, previous: Rejection | None) -> list[Message]:
        """System prompt + one user message for `request` (with the last rejection, if any)."""
        parts = [
            "Write one new coding challenge.",
            f"Cluster: {request.cluster}: {CLUSTER_HINTS.get(request.cluster, request.cluster)}.",
            f"Difficulty: {request.tier}: {TIER_HINTS.get(request.tier, request.tier)}.",
        ]
        if request.brief.strip():
            parts.append(
                "The challenge must practise the skill this request needed (write a fresh, "
                f"self-contained task; do not copy the request):\n{request.brief.strip()}"
            )
        if request.needed_clusters:
            topics = "; ".join(CLUSTER_HINTS.get(c, c) for c in request.needed_clusters)
            parts.append(f"Topics the bank needs most: {topics}.")
        if request.forbidden_shapes:
            shapes = "; ".join(request.forbidden_shapes)
            parts.append(f"The bank has enough of these, so write something else: {shapes}.")
        if previous is not None:
            parts.append(
                f"Your previous challenge was rejected by the {previous.kind} check: "
                f"{previous.detail}\nWrite a new, corrected challenge."
            )
        parts.append("Reply with the four sections ### PROMPT, ### SETUP, ### VALIDATOR, "
                     "### SOLUTION, as in the example.")  # fmt: skip
        return [
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": "\n\n".join(parts)},
        ]

    def generate(
        self, request: GenerationRequest, *, on_event: Callable[[str], None] | None = None
    ) -> GenerationOutcome:
        """Generate one challenge for `request`, repairing rejected attempts.

        Args:
            request: cluster, tier, source and the prompt's extras.
            on_event: called with short progress strings.

        Returns:
            The `GenerationOutcome`: the accepted `Challenge` (template
            `{cluster}.gen_{hash8}`, seed 0, `source=request.source`, the empty
            solution as `wrong_solution`) or None, and every rejection.

        Raises:
            ValueError: a cluster outside `GENERATED_CLUSTERS`, an unknown tier or source.
            InfrastructureError: the model or the sandbox failed (never
                recorded as a rejection). A setup script failing while judging
                (`ChallengeFaultError`) is a `preflight` rejection instead.
        """
        if request.cluster not in GENERATED_CLUSTERS or request.tier not in TIERS:
            raise ValueError(
                f"unknown cluster or tier for a generated challenge: {request.cluster!r}, "
                f"{request.tier!r} (clusters: {', '.join(GENERATED_CLUSTERS)})"
            )
        if request.source not in SOURCES:
            raise ValueError(f"source must be one of {SOURCES}, got {request.source!r}")
        notify = on_event or (lambda _message: None)
        self._serial += 1
        started = time.perf_counter()
        rejections: list[Rejection] = []
        self_tests: list[str] = []
        for attempt in range(1, self.max_attempts + 1):
            notify(f"attempt {attempt}/{self.max_attempts}: asking {self.model.name}")
            completion = self.model.complete(
                self.messages(request, rejections[-1] if rejections else None),
                temperature=self.temperature,
                max_tokens=self.max_tokens,
                seed=self._call_seed(request, attempt),
            )
            reports: dict[str, Any] = {"attempt": attempt}
            try:
                challenge = self._judge(request, completion, reports, self_tests, notify)
            except _Rejected as rejected:
                notify(f"attempt {attempt}: rejected ({rejected.kind}): {rejected.detail}")
                rejections.append(Rejection(rejected.kind, rejected.detail, attempt))
                continue
            notify(f"attempt {attempt}: accepted {challenge.template}")
            return GenerationOutcome(
                challenge, tuple(rejections), attempt, attempt,
                time.perf_counter() - started, self_tests[-1], tuple(self_tests), reports,
            )  # fmt: skip
        return GenerationOutcome(
            None, tuple(rejections), self.max_attempts, self.max_attempts,
            time.perf_counter() - started, self_tests[-1] if self_tests else "not_run",
            tuple(self_tests),
        )  # fmt: skip

    def _call_seed(self, request: GenerationRequest, attempt: int) -> int:
        key = (
            f"{self.seed}:{self._serial}:{request.cluster}:{request.tier}:{request.brief}:{attempt}"
        )
        return int(hashlib.sha256(key.encode("utf-8")).hexdigest()[:8], 16) & 0x7FFFFFFF

    def _judge(
        self,
        request: GenerationRequest,
        completion: Completion,
        reports: dict[str, Any],
        self_tests: list[str],
        notify: Callable[[str], None],
    ) -> Challenge:
        """Run every gate on one reply; the accepted challenge, or `_Rejected`."""
        spec = parse_reply(completion.text)
        if spec is None:
            cut = (
                " (the reply was cut at the token limit)"
                if completion.finish_reason == "length"
                else ""
            )
            raise _Rejected(
                "unparseable",
                "the reply lacks one of the four sections ### PROMPT, ### SETUP, "
                f"### VALIDATOR, ### SOLUTION, each with its code in one fenced block{cut}",
            )
        if SOLUTION_FILE not in spec.prompt:
            spec = dataclasses.replace(spec, prompt=f"{spec.prompt.strip()}\n\n{RUN_LINE}")
        detail = quality_check(spec) or _copies_example(spec)
        if detail:
            raise _Rejected("quality", detail)
        notify("dry run of setup and validator")
        detail = preflight(self.sandbox, spec)
        if detail:
            raise _Rejected("preflight", detail)
        test = validator_self_test(self.sandbox, spec)
        self_tests.append(test.status)
        reports["self_test"] = {"status": test.status, "detail": test.detail}
        if test.status == "rejected":
            raise _Rejected("validator_self_test", test.detail)
        challenge = _challenge(request, spec)
        notify("judging the reference and wrong solutions")
        try:
            self._judge_solutions(challenge, reports)
        except ChallengeFaultError as exc:
            raise _Rejected(
                "preflight", f"the setup script failed while judging: {exc.message}"
            ) from None
        return challenge

    def _judge_solutions(self, challenge: Challenge, reports: dict[str, Any]) -> None:
        """Reference passes, wrong solutions fail, the reference's verdict repeats."""
        first = evaluate(self.sandbox, challenge, challenge.reference_solution)
        if not first.passed:
            crash = validator_crash(first.validation, SOLUTION_FILE)
            why = f"the validator crashed: {crash}" if crash else first.feedback
            raise _Rejected("reference_fails", f"the reference solution fails: {why}")
        for label, source in WRONG_SOLUTIONS:
            if evaluate(self.sandbox, challenge, source).passed:
                raise _Rejected("wrong_passes", f"the validator accepts {label}")
        second = evaluate(self.sandbox, challenge, challenge.reference_solution)
        if not second.passed:
            raise _Rejected(
                "nondeterministic",
                f"the reference passed once, then failed: {second.feedback}",
            )
        reports["reference_s"] = round(first.validation.duration_s, 3)
        reports["wrong_solutions_rejected"] = len(WRONG_SOLUTIONS)
        reports["deterministic"] = True


def _challenge(request: GenerationRequest, spec: ChallengeSpec) -> Challenge:
    text = spec.prompt + spec.setup_script + spec.validation_script
    hash8 = hashlib.sha256(text.encode("utf-8")).hexdigest()[:8]
    return Challenge(
        template=f"{request.cluster}.gen_{hash8}",
        cluster=request.cluster,
        tier=request.tier,
        seed=0,
        prompt=spec.prompt,
        setup_script=spec.setup_script,
        validation_script=spec.validation_script,
        reference_solution=spec.reference_solution,
        wrong_solution=WRONG_SOLUTIONS[0][1],
        solution_file=SOLUTION_FILE,
        source=request.source,
    )


__all__ = [
    "REJECTION_KINDS",
    "RETIRED",
    "ROTATION_MIN_RUNS",
    "SOURCES",
    "ChallengeBank",
    "ChallengeGenerator",
    "GenerationOutcome",
    "GenerationRequest",
    "Rejection",
    "parse_reply",
]
