"""What a fine-tuning export may use, and the pieces every format shares.

**Never exported** (by `Exclusions.reason`), so no benchmark or measurement
item can leak into training data:

- `eval` trajectories: eval-suite turns and the learning curve's held-out items;
- `verification` trajectories: the control and candidate arms of the paired
  comparison that verifies a lesson or skill. They are measurements, and a
  fixed set: `PairedVerifier.seeds` draws the renderings of a template and
  tier from `random.Random(f"verify:{template}:{tier}")`, so every later
  verification of that template re-solves the same challenges. A model tuned
  on them would be measured on its own training data;
- any other trajectory on a challenge that one of those measured: the same
  `extra["challenge_hash"]`, or the same task text (whitespace-normalised,
  `learning.skills.prompt_sha`; an eval turn's text with a leading
  instruction paragraph, such as the regression suite's, also counts);
- trajectories of a template the learning curve holds out as "unseen" (its
  set (b), `extra["learning_curve"]["set"] == "b"`): training on any rendering
  of it would make it seen;
- template renderings whose `extra["seed"]` is at or above
  `dream.loop.DREAM_SEED_LIMIT`: the dream renders below it, and the seeds
  above are reserved for measurement (verification from 500,000,000, the
  curve from 1,000,000,000, evolution holdouts from 1,000,000).

Everything an export writes is redacted again with the current rules
(`redact.redact_text`): records were redacted when stored, but with the rules
of that day; redaction is idempotent, so a second pass changes only what a
newer rule catches.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from nightschool.dream.loop import DREAM_SEED_LIMIT
from nightschool.lessons.skills import prompt_sha
from nightschool.redact import redact, redact_text
from nightschool.solver.attempts import language, normalise_code
from nightschool.trajectory import Outcome, Trajectory

TASK_KINDS = ("selfplay", "chat", "reflection", "eval", "verification")
"""Every `task_kind` nightschool records."""

MEASUREMENT_KINDS = frozenset({"eval", "verification"})
"""Task kinds that are measurements; no fine-tuning export ever includes them."""

HELD_OUT = "eval, verification or held-out item"
"""Skip reason of a measurement trajectory or one on a measured challenge."""


@dataclass
class Tally:
    """What an export wrote and what it left out, and why.

    Attributes:
        written: records written (trajectories, chat examples or pairs).
        unit: what a written record is, for the summary ("pairs").
        skipped: count per reason (each reason names its own unit).
    """

    written: int = 0
    unit: str = "records"
    skipped: Counter[str] = field(default_factory=Counter)

    def skip(self, reason: str, count: int = 1) -> None:
        """Count `count` items left out for `reason`."""
        if count:
            self.skipped[reason] += count

    def summary(self, destination: str = "") -> str:
        """One line: `wrote 3 pairs to x.jsonl; skipped 5: 4 not passed, 1 duplicate`."""
        line = f"wrote {self.written} {self.unit}" + (f" to {destination}" if destination else "")
        if self.skipped:
            parts = ", ".join(f"{n} {why}" for why, n in self.skipped.most_common())
            line += f"; skipped {sum(self.skipped.values())}: {parts}"
        return line


def _prompt_keys(text: str) -> set[str]:
    """`prompt_sha` of `text` and of every tail after a blank line (instruction prefixes)."""
    keys = {prompt_sha(text)}
    rest = text
    while "\n\n" in rest:
        rest = rest.split("\n\n", 1)[1]
        if rest.strip():
            keys.add(prompt_sha(rest))
    return keys


@dataclass(frozen=True)
class Exclusions:
    """The measured challenges, task texts and held-out templates (see the module docstring).

    Attributes:
        hashes: challenge hashes of measured items.
        prompts: `prompt_sha` keys of measured task texts.
        templates: templates held out as unseen by a learning curve.
    """

    hashes: frozenset[str] = frozenset()
    prompts: frozenset[str] = frozenset()
    templates: frozenset[str] = frozenset()

    @classmethod
    def from_trajectories(cls, measured: Iterable[Trajectory]) -> Exclusions:
        """Collect exclusions from the measurement trajectories of a store.

        Args:
            measured: trajectories of the `MEASUREMENT_KINDS` (others are
                ignored), e.g. `store.iter_trajectories(task_kind="eval")`
                followed by those of `verification`.
        """
        hashes: set[str] = set()
        prompts: set[str] = set()
        templates: set[str] = set()
        for item in measured:
            if item.task_kind not in MEASUREMENT_KINDS:
                continue
            if item.extra.get("challenge_hash"):
                hashes.add(str(item.extra["challenge_hash"]))
            if item.user_request.strip():
                prompts |= _prompt_keys(item.user_request)
            curve = item.extra.get("learning_curve")
            if isinstance(curve, dict) and curve.get("set") == "b" and item.extra.get("template"):
                templates.add(str(item.extra["template"]))
        return cls(frozenset(hashes), frozenset(prompts), frozenset(templates))

    def reason(self, trajectory: Trajectory) -> str | None:
        """Why `trajectory` must not be exported, or None when it may be."""
        extra = trajectory.extra
        if trajectory.task_kind in MEASUREMENT_KINDS:
            return HELD_OUT
        if str(extra.get("challenge_hash", "")) in self.hashes:
            return HELD_OUT
        if trajectory.user_request.strip() and prompt_sha(trajectory.user_request) in self.prompts:
            return HELD_OUT
        if extra.get("template") in self.templates:
            return "trajectories of a held-out template"
        seed = extra.get("seed")
        template_render = extra.get("challenge_source", "template") == "template"
        if template_render and isinstance(seed, int) and seed >= DREAM_SEED_LIMIT:
            return "renderings at a measurement seed"
        return None


class Run(NamedTuple):
    """One judged `run_solution` call.

    Attributes:
        code: the program that ran.
        passed: the verdict that counts (see `judged_runs`).
        file: the solution file name (`solution.py`, `solution.sh`).
    """

    code: str
    passed: bool
    file: str


def judged_runs(trajectory: Trajectory) -> list[Run]:
    """The programs a trajectory ran through the validator, with the verdict that counts.

    Each `run_solution` call with code and a `passed`/`failed` result is one
    run (a reply without code or a repeat that was not run is none). The
    validator judged every run; a correction overrides the verdict of the
    last one only: a trajectory corrected to `failed` ends on a rejected
    program, one corrected to `passed` on an accepted one (a human label
    outranks the validator). An `unknown` trajectory keeps the validator's
    verdicts.
    """
    runs = [
        Run(str(call.arguments["code"]), call.result == "passed", str(call.arguments.get("file")))
        for call in trajectory.tool_calls
        if call.name == "run_solution"
        and call.arguments.get("code")
        and call.result in ("passed", "failed")
    ]
    if runs and trajectory.outcome != Outcome.UNKNOWN:
        runs[-1] = runs[-1]._replace(passed=trajectory.outcome == Outcome.PASSED)
    return runs


def fence(run: Run) -> str:
    """The program as one fenced block tagged with its language (the solver's reply format)."""
    return f"```{language(run.file)}\n{redact_text(run.code).strip()}\n```"


def code_key(run: Run) -> str:
    """Equal for programs that differ only in layout, comments or docstrings."""
    return normalise_code(run.code, run.file)


def clean(text: str) -> str:
    """`text` redacted with the current rules (idempotent on stored records)."""
    return redact_text(text)


def clean_value(value: Any) -> Any:
    """A JSON-like value redacted with the current rules (`redact.redact`)."""
    return redact(value)
