"""Generated challenges: the gate stack on scripted replies in the real sandbox, the bank,
the widened validator-crash detector and its solver wiring."""

from __future__ import annotations

import shutil
import textwrap
import time
from collections.abc import Sequence
from typing import cast

import pytest

from nightschool.challenges import (
    REJECTION_KINDS,
    Challenge,
    ChallengeBank,
    ChallengeGenerator,
    ChallengeSpec,
    GenerationOutcome,
    GenerationRequest,
    parse_reply,
    quality_check,
    render,
    templates,
    validator_crash,
)
from nightschool.challenges._selftest import instrument, validator_self_test
from nightschool.dream.frontier import FrontierTracker
from nightschool.errors import ChallengeFaultError, ModelUnavailableError
from nightschool.llm import Message, ScriptedModel
from nightschool.sandbox import ExecResult, Sandbox
from nightschool.solver.core import Solver, SolverConfig
from nightschool.store import Store
from nightschool.trajectory import Outcome

needs_bwrap = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap not installed")

PROMPT = """Sum the counts per fruit in `fruit.csv` (columns `name,count`).

Output: one line per fruit, `name total`, sorted by name.

Write a Python program `solution.py`. It is run as `python3 solution.py` in the directory
that holds the input files. Print the answer to standard output."""

SETUP = """
rows = [("pear", 5), ("apple", 3), ("fig", 1), ("apple", 4)]
with open("fruit.csv", "w") as f:
    f.write("name,count\\n")
    for name, count in rows:
        f.write(f"{name},{count}\\n")
"""

RUN = (
    'result = subprocess.run([sys.executable, "solution.py"], capture_output=True, '
    "text=True, timeout=10)"
)

VALIDATOR = f"""
import subprocess
import sys

expected_output = "apple 7\\nfig 1\\npear 5"
{RUN}
if result.returncode != 0:
    print("FAIL: solution.py exited with status", result.returncode)
    sys.exit(1)
if result.stdout.strip() != expected_output:
    print("FAIL: wrong totals")
    sys.exit(1)
print("PASS")
"""

SOLUTION = """
import csv
totals = {}
with open("fruit.csv") as f:
    for row in csv.DictReader(f):
        totals[row["name"]] = totals.get(row["name"], 0) + int(row["count"])
for name in sorted(totals):
    print(name, totals[name])
"""

# the canonical bug: the expected value carries a % suffix, then float() is called on it
PERCENT_SETUP = """
with open("scores.txt", "w") as f:
    f.write("\\n".join(["40", "75", "90", "12", "66"]) + "\\n")
"""
PERCENT_VALIDATOR = f"""
import subprocess
import sys

with open("scores.txt") as f:
    values = [int(line) for line in f if line.strip()]
ratio = 100 * sum(1 for v in values if v >= 50) / len(values)
expected_output = f"{{ratio:.1f}}%"
{RUN}
if abs(float(result.stdout.strip()) - float(expected_output)) > 0.05:
    print("FAIL: wrong share")
    sys.exit(1)
print("PASS")
"""
PERCENT_SOLUTION = """
with open("scores.txt") as f:
    values = [int(line) for line in f if line.strip()]
print(f"{100 * sum(1 for v in values if v >= 50) / len(values):.1f}%")
"""
PERCENT_PROMPT = """Print the share of scores in `scores.txt` (one integer per line) that are
50 or more, as a percentage with one decimal and a % sign, e.g. `60.0%`.

Write a Python program `solution.py`; it is run as `python3 solution.py`."""


def reply(
    prompt: str = PROMPT,
    setup: str = SETUP,
    validator: str = VALIDATOR,
    solution: str = SOLUTION,
) -> str:
    def block(code: str) -> str:
        return f"```python\n{textwrap.dedent(code).strip()}\n```"

    return (
        f"### PROMPT\n{prompt}\n\n### SETUP\n{block(setup)}\n\n"
        f"### VALIDATOR\n{block(validator)}\n\n### SOLUTION\n{block(solution)}\n"
    )


GOOD = reply()
PERCENT_BUG = reply(PERCENT_PROMPT, PERCENT_SETUP, PERCENT_VALIDATOR, PERCENT_SOLUTION)
NAME_ERROR = reply(
    validator=VALIDATOR.replace('expected_output = "apple', 'expected_output = totl + "apple')
)


@pytest.fixture(scope="module")
def sandbox() -> Sandbox:
    return Sandbox()


def generator(
    sandbox: Sandbox, replies: Sequence[str] | ScriptedModel, attempts: int = 3
) -> tuple[ChallengeGenerator, ScriptedModel]:
    model = replies if isinstance(replies, ScriptedModel) else ScriptedModel(list(replies))
    return ChallengeGenerator(model, sandbox, max_attempts=attempts), model


def request(cluster: str = "data_analysis") -> GenerationRequest:
    return GenerationRequest(cluster=cluster, tier="basic")


# -- the gate stack, end to end -----------------------------------------------------------


@needs_bwrap
def test_self_contradicting_validator_is_rejected_by_the_self_test(sandbox: Sandbox) -> None:
    gen, model = generator(sandbox, [PERCENT_BUG] * 3)
    outcome = gen.generate(request())
    assert not outcome.accepted and outcome.challenge is None
    assert [r.kind for r in outcome.rejections] == ["validator_self_test"] * 3
    assert [r.attempt for r in outcome.rejections] == [1, 2, 3]
    assert "could not convert string to float: '60.0%'" in outcome.rejections[0].detail
    assert outcome.self_tests == ("rejected",) * 3 and outcome.self_test == "rejected"
    assert outcome.attempts == outcome.model_calls == len(model.calls) == 3


@needs_bwrap
def test_module_scope_name_error_is_a_preflight_rejection(sandbox: Sandbox) -> None:
    outcome = generator(sandbox, [NAME_ERROR], attempts=1)[0].generate(request())
    assert [r.kind for r in outcome.rejections] == ["preflight"]
    assert "NameError" in outcome.rejections[0].detail
    assert outcome.self_test == "not_run"


@needs_bwrap
def test_good_challenge_is_accepted_and_banked(sandbox: Sandbox, store: Store) -> None:
    gen, model = generator(sandbox, [GOOD])
    events: list[str] = []
    req = GenerationRequest(cluster="data_analysis", tier="starter", source_trajectory_id="t-1")
    outcome = gen.generate(req, on_event=events.append)
    challenge = outcome.challenge
    assert challenge is not None and outcome.attempts == 1 and not outcome.rejections
    assert outcome.self_test == "passed"
    assert challenge.template == f"data_analysis.gen_{challenge.challenge_hash[:8]}"
    assert (challenge.seed, challenge.source, challenge.solution_file) == (0, "llm", "solution.py")
    assert challenge.wrong_solution == "" and challenge.tier == "starter"
    assert challenge.reference_solution.startswith("import csv")
    assert any("accepted" in event for event in events)
    assert model.calls[0].max_tokens == 1200 and model.calls[0].temperature == 0.7

    bank = ChallengeBank(store)
    assert bank.add(challenge, outcome, req, model.name) is True
    assert bank.add(challenge, outcome, req, model.name) is False  # idempotent on the hash
    assert bank.get(challenge.challenge_hash) == challenge
    assert bank.get("nope") is None
    assert bank.in_rotation() == [challenge] and bank.in_rotation("data_analysis") == [challenge]
    assert bank.in_rotation("sql") == []
    assert bank.mined_trajectory_ids() == {"t-1"}
    report = bank.yield_report()
    assert report["accepted"] == 1 and report["attempts"] == 1
    assert report["attempts_per_acceptance"] == 1.0
    assert bank.yield_report(since=time.time() + 60)["accepted"] == 0


@needs_bwrap
def test_repair_loop_feeds_the_rejection_back(sandbox: Sandbox, store: Store) -> None:
    gen, model = generator(sandbox, [NAME_ERROR, GOOD])
    outcome = gen.generate(request())
    assert outcome.accepted and outcome.attempts == 2
    assert [(r.kind, r.attempt) for r in outcome.rejections] == [("preflight", 1)]
    first, second = (call.messages[-1]["content"] for call in model.calls)
    assert "rejected" not in first
    assert "rejected by the preflight check" in second and "NameError" in second
    assert model.calls[0].seed != model.calls[1].seed
    bank = ChallengeBank(store)
    assert bank.record_rejections(request(), outcome) == 1
    assert outcome.challenge is not None
    bank.add(outcome.challenge, outcome, request(), model.name)
    report = bank.yield_report()
    assert report["rejections"] == {"preflight": 1}
    assert report["attempts"] == 2 and report["attempts_per_acceptance"] == 2.0


@needs_bwrap
def test_failing_reference_is_rejected(sandbox: Sandbox) -> None:
    wrong = SOLUTION.replace("sorted(totals)", "sorted(totals, reverse=True)")
    outcome = generator(sandbox, [reply(solution=wrong)], attempts=1)[0].generate(request())
    assert [r.kind for r in outcome.rejections] == ["reference_fails"]
    assert "wrong totals" in outcome.rejections[0].detail


@needs_bwrap
def test_validator_that_passes_an_empty_solution_is_rejected(sandbox: Sandbox) -> None:
    lax = f"import subprocess\nimport sys\n\n{RUN}\nsys.exit(result.returncode)\n"
    outcome = generator(sandbox, [reply(validator=lax)], attempts=1)[0].generate(request())
    assert [r.kind for r in outcome.rejections] == ["wrong_passes"]
    assert "empty solution.py" in outcome.rejections[0].detail


@needs_bwrap
def test_nondeterministic_validator_is_rejected(sandbox: Sandbox) -> None:
    """The validator passes the right output only before a deadline set when the reply is
    written; a wrong non-empty output makes it sleep past the deadline before failing.
    So the first reference run passes and the repeat after the wrong solutions fails."""

    def flaky(_messages: Sequence[Message]) -> str:
        deadline = time.time() + 6
        validator = f"""
import subprocess
import sys
import time

expected_output = "apple 7\\nfig 1\\npear 5"
{RUN}
got = result.stdout.strip()
if got != expected_output:
    if got:
        time.sleep(max(0.0, {deadline!r} - time.time()) + 0.5)
    print("FAIL: wrong totals")
    sys.exit(1)
if time.time() > {deadline!r}:
    print("FAIL: too late")
    sys.exit(1)
print("PASS")
"""
        return reply(validator=validator)

    gen, _ = generator(sandbox, ScriptedModel(flaky), attempts=1)
    outcome = gen.generate(request())
    assert [r.kind for r in outcome.rejections] == ["nondeterministic"]
    assert "too late" in outcome.rejections[0].detail


def test_unparseable_reply_and_infrastructure_errors(store: Store) -> None:
    sandbox = cast(Sandbox, object())  # never used: no gate that runs code is reached
    gen, model = generator(sandbox, ["I would rather not.", "### PROMPT\nonly a prompt"], 2)
    outcome = gen.generate(request())
    assert [r.kind for r in outcome.rejections] == ["unparseable", "unparseable"]
    assert not outcome.accepted and outcome.self_test == "not_run"
    assert "unparseable" in model.calls[1].messages[-1]["content"]
    down = ScriptedModel([ModelUnavailableError("server went away")])
    with pytest.raises(ModelUnavailableError):
        ChallengeGenerator(down, sandbox).generate(request())
    with pytest.raises(ValueError, match="unknown cluster"):
        gen.generate(GenerationRequest(cluster="poetry", tier="basic"))
    with pytest.raises(ValueError, match="source"):
        gen.generate(GenerationRequest(cluster="sql", tier="basic", source="template"))


def test_prompt_carries_brief_and_diversity() -> None:
    gen = ChallengeGenerator(ScriptedModel(["x"]), cast(Sandbox, object()))
    req = GenerationRequest(
        cluster="regex_parse",
        tier="starter",
        source="journal",
        brief="parse dates like 2024-01-31 out of a log",
        needed_clusters=("sql",),
        forbidden_shapes=("count ERROR lines",),
    )
    system, user = (m["content"] for m in gen.messages(req, None))
    assert "### VALIDATOR" in system and "expected_output" in system
    assert "parse dates like 2024-01-31" in user and "sqlite3" in user
    assert "enough of these, so write something else: count ERROR lines." in user
    assert "very small task" in user
    assert set(REJECTION_KINDS) >= {"unsafe", "validator_self_test", "wrong_passes"}


# -- parsing and pure checks --------------------------------------------------------------


def test_parse_reply_is_lenient() -> None:
    spec = parse_reply(GOOD)
    assert spec is not None and spec.prompt == PROMPT
    assert spec.validation_script.startswith("import subprocess\n")
    assert spec.reference_solution.endswith("print(name, totals[name])\n")
    bold = (
        "Here you go.\n**Task:**\nDo it with solution.py please, it is easy enough.\n"
        "**Setup:**\n```python\nopen('a.txt', 'w').write('1')\n```\n"
        "**Validator:**\n```python\n# setup\nimport subprocess\n```\n"
        "**Reference solution:**\n```python\nprint(1)\n"  # unterminated fence
    )
    spec = parse_reply(bold)
    assert spec is not None and spec.validation_script == "# setup\nimport subprocess\n"
    assert spec.reference_solution == "print(1)\n"
    bare = "Print 1 from solution.py.\n```python\nA=1\n```\n```python\nB=2\n```\n```\nC=3\n```"
    assert parse_reply(bare) == ChallengeSpec(
        "Print 1 from solution.py.", "A=1\n", "B=2\n", "C=3\n"
    )
    bare = "Task\n" + bare.replace("```\nC=3", "```python\nC=3")  # a lone "Task" heading
    assert parse_reply(bare) == ChallengeSpec(
        "Print 1 from solution.py.", "A=1\n", "B=2\n", "C=3\n"
    )
    labelled = GOOD.replace("### SOLUTION", "### SOLUTION (reference)").replace(
        "### VALIDATOR", "Validation script:"
    )
    assert parse_reply(labelled) == parse_reply(GOOD)
    assert parse_reply("### PROMPT\nx\n### SETUP\n```python\nA=1\n```") is None
    missing_code = GOOD.replace(textwrap.dedent(SOLUTION).strip(), "")
    assert parse_reply(missing_code) is None


def test_quality_check_rejects_what_is_clearly_broken() -> None:
    good = parse_reply(GOOD)
    assert good is not None and quality_check(good) is None

    def check(**changes: str) -> str | None:
        assert good is not None
        return quality_check(ChallengeSpec(**{**good.__dict__, **changes}))

    assert "characters" in (check(prompt="short") or "")
    assert "solution.py" in (check(prompt=PROMPT.replace("solution.py", "main.py")) or "")
    no_run = VALIDATOR.replace("subprocess.run", "print")
    assert "subprocess.run" in (check(validation_script=no_run) or "")
    net = "import urllib.request\n" + VALIDATOR
    assert "network module urllib" in (check(validation_script=net) or "")
    assert "standard library" in (check(reference_solution="import numpy\nprint(1)\n") or "")
    assert check(reference_solution="import helper\n", setup_script=SETUP + "# helper.py\n") is None
    leaky = PROMPT + "\n\nHint:\n" + SOLUTION
    assert "reference solution's code" in (check(prompt=leaky) or "")
    printing = VALIDATOR.replace('print("PASS")', "print(expected_output)")
    assert "expected_output" in (check(validation_script=printing) or "")
    assert "setup script is empty" in (check(setup_script="  \n") or "")


def test_instrument_probes_before_the_solution_run() -> None:
    nested = textwrap.dedent(
        f"""
        '''Doc.'''
        from __future__ import annotations
        import subprocess, sys

        def main():
            expected_lines = ["a", "b"]
            try:
                {RUN}
            except BaseException:
                pass

        main()
        """
    )
    probed = instrument(nested)
    assert probed is not None
    body = probed.split("def main():", 1)[1]
    assert body.index("_nightschool_probe((locals(), globals())") < body.index("subprocess.run")
    assert probed.index("from __future__") < probed.index("def _nightschool_probe")
    assert instrument("import subprocess\nsubprocess.run(['ls'])\n") is None  # no solution.py
    assert instrument("def broken(:\n") is None


@needs_bwrap
def test_self_test_skips_rather_than_blocks(sandbox: Sandbox) -> None:
    good = parse_reply(GOOD)
    assert good is not None
    assert validator_self_test(sandbox, good).status == "passed"
    renamed = good.validation_script.replace("expected_output", "target")
    result = validator_self_test(sandbox, ChallengeSpec(good.prompt, good.setup_script, renamed,
                                                        good.reference_solution))  # fmt: skip
    assert result.status == "skipped" and "no expected-value variable" in result.detail
    template = render(templates("python_general")[0].name, "basic", 1)
    assert validator_self_test(sandbox, template).status in ("passed", "skipped")


# -- the widened crash detector -----------------------------------------------------------


def ran(stdout: str = "", stderr: str = "", code: int = 1, timed_out: bool = False) -> ExecResult:
    return ExecResult(code, stdout, stderr, timed_out, 0.1)


PERCENT_CRASH = """Traceback (most recent call last):
  File "<stdin>", line 9, in <module>
ValueError: could not convert string to float: '60.0%'
"""

SOLUTION_TRACEBACK = """FAIL: solution.py exited with status 1; the end of its stderr:
Traceback (most recent call last):
  File "/workspace/solution.py", line 3, in <module>
    total += int(row["count"])
             ^^^^^^^^^^^^^^^^^
ValueError: invalid literal for int() with base 10: 'x'
"""

CHAINED = """Traceback (most recent call last):
  File "<stdin>", line 12, in <module>
  File "/usr/lib/python3.11/json/__init__.py", line 346, in loads
    return _default_decoder.decode(s)
json.decoder.JSONDecodeError: Expecting value: line 1 column 1 (char 0)

During handling of the above exception, another exception occurred:

Traceback (most recent call last):
  File "<stdin>", line 14, in <module>
  File "<stdin>", line 5, in report
KeyError: 'total'
"""


def test_validator_crash_on_real_tracebacks() -> None:
    assert validator_crash(ran(stderr=PERCENT_CRASH), "solution.py") == (
        "ValueError: could not convert string to float: '60.0%' (validator line 9)"
    )
    assert validator_crash(ran(stderr=CHAINED), "solution.py") == (
        "KeyError: 'total' (validator line 5)"
    )
    # the validator printed the solution's own traceback and failed cleanly
    assert validator_crash(ran(stdout=SOLUTION_TRACEBACK), "solution.py") is None
    # ... and even when it then crashes too, the solution crashed first
    assert validator_crash(ran(SOLUTION_TRACEBACK, PERCENT_CRASH), "solution.py") is None
    library = CHAINED.split("During handling")[0]  # innermost frame in json: not the validator
    assert validator_crash(ran(stderr=library), "solution.py") is None
    asserting = PERCENT_CRASH.replace(
        "ValueError: could not convert string to float: '60.0%'", "AssertionError"
    )
    assert validator_crash(ran(stderr=asserting), "solution.py") is None
    assert validator_crash(ran(stdout="FAIL: wrong totals\n"), "solution.py") is None
    assert validator_crash(ran(stderr=PERCENT_CRASH, code=0), "solution.py") is None
    assert (
        validator_crash(ran(stderr=PERCENT_CRASH, code=-9, timed_out=True), "solution.py") is None
    )
    syntax = "  File \"<stdin>\", line 3\n    x = (\n        ^\nSyntaxError: '(' was never closed\n"
    assert validator_crash(ran(stderr=syntax), "solution.py") == (
        "SyntaxError: '(' was never closed (validator line 3)"
    )


# -- the solver's circuit breaker ---------------------------------------------------------


def fenced(code: str) -> str:
    return f"```python\n{code}\n```"


@needs_bwrap
def test_solver_stops_on_a_crashing_generated_validator(sandbox: Sandbox) -> None:
    brittle = VALIDATOR.replace(
        "if result.stdout.strip() != expected_output:",
        "if int(result.stdout.split()[1]) != 7 or result.stdout.strip() != expected_output:",
    )
    challenge = Challenge(
        template="data_analysis.gen_deadbeef", cluster="data_analysis", tier="starter", seed=0,
        prompt=PROMPT, setup_script=SETUP, validation_script=textwrap.dedent(brittle),
        reference_solution=SOLUTION, wrong_solution="", source="llm",
    )  # fmt: skip
    model = ScriptedModel([fenced('print("apple seven")'), fenced("print(2)"), fenced("print(3)")])
    config = SolverConfig(max_attempts=3, max_resamples=0)
    result = Solver(model, sandbox, config).solve(challenge)
    assert isinstance(result.infrastructure_error, ChallengeFaultError)
    assert "validator of data_analysis.gen_deadbeef crashed: ValueError" in str(
        result.infrastructure_error
    )
    assert result.attempts == 1 and len(model.calls) == 1
    assert result.trajectory.outcome == Outcome.UNKNOWN and result.trajectory.failure_reason is None
    # a starter-tier generated challenge is a whole program: nothing is stripped (stripping
    # top-level code would leave only `import csv` and fail)
    passing = ScriptedModel([fenced(SOLUTION.strip() + "\nassert True")])
    solved = Solver(passing, sandbox, config).solve(challenge)
    assert solved.passed and solved.trajectory.extra["test_code_stripped"] == 0


@needs_bwrap
def test_template_challenge_failure_stays_an_ordinary_failure(sandbox: Sandbox) -> None:
    challenge = render(templates("data_analysis")[0].name, "basic", 3)
    model = ScriptedModel([fenced("print(1)"), fenced("print(2)")])
    result = Solver(model, sandbox, SolverConfig(max_attempts=2, max_resamples=0)).solve(challenge)
    assert result.infrastructure_error is None and not result.passed
    assert result.attempts == 2 and result.trajectory.outcome == Outcome.FAILED


# -- the bank's rotation ------------------------------------------------------------------


def banked(store: Store, n: int) -> Challenge:
    challenge = Challenge(
        template=f"algo.gen_{n:08x}", cluster="algo", tier="basic", seed=0,
        prompt=f"{PROMPT} #{n}", setup_script=SETUP, validation_script=VALIDATOR,
        reference_solution=SOLUTION, wrong_solution="", source="journal",
    )  # fmt: skip
    outcome = GenerationOutcome(challenge, (), 1, 1, 0.5, "passed")
    req = GenerationRequest("algo", "basic", "journal", source_trajectory_id=f"traj-{n}")
    assert ChallengeBank(store).add(challenge, outcome, req, "scripted")
    return challenge


def test_bank_rotation_keeps_only_challenges_in_the_learning_zone(store: Store) -> None:
    bank = ChallengeBank(store)
    tracker = FrontierTracker(store)
    always, mixed, retired, fresh = (banked(store, n) for n in range(4))

    def run(challenge: Challenge, passed: bool) -> None:
        tracker.record_run(
            cluster=challenge.cluster, template=challenge.template, tier=challenge.tier,
            seed=challenge.seed, challenge_hash=challenge.challenge_hash, passed=passed, attempts=1,
        )  # fmt: skip

    run(always, True)
    assert always in bank.in_rotation()  # one run is too few to tell
    run(always, True)
    run(mixed, True)
    run(mixed, False)
    run(fresh, False)
    assert bank.solve_rate(always.challenge_hash) == (2, 2)
    assert bank.solve_rate(mixed.challenge_hash) == (1, 2)
    assert bank.retire(retired.challenge_hash, "duplicate of a template") is True
    assert bank.retire(retired.challenge_hash, "again") is False
    assert bank.in_rotation() == [mixed, fresh]
    assert bank.in_rotation("algo") == [mixed, fresh] and bank.in_rotation("sql") == []
    with pytest.raises(ValueError, match="no generated challenge"):
        bank.retire("0000", "gone")
    assert bank.mined_trajectory_ids() == {f"traj-{n}" for n in range(4)}
    bank.reject(
        cluster="sql", tier="basic", source="journal", kind="unsafe", detail="secrets",
        source_trajectory_id="traj-9",
    )  # fmt: skip
    assert "traj-9" in bank.mined_trajectory_ids()
    report = bank.yield_report()
    assert report["retired"] == 1 and report["rejections"] == {"unsafe": 1}
    assert report["accepted"] == 4 and report["attempts"] == 4
    with pytest.raises(ValueError, match="kind"):
        bank.reject(cluster="sql", tier="basic", source="llm", kind="bogus", detail="")
    with pytest.raises(ValueError, match="source"):
        bank.reject(cluster="sql", tier="basic", source="template", kind="quality", detail="")
