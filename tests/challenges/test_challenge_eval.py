"""Every template x tier in the real bubblewrap sandbox: reference passes, near-miss fails."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

import pytest

from nightschool.challenges import TIERS, Challenge, Evaluation, evaluate, render, templates
from nightschool.challenges._runner import FEEDBACK_CHARS
from nightschool.errors import ChallengeFaultError
from nightschool.sandbox import Sandbox, SandboxConfig

pytestmark = pytest.mark.skipif(
    shutil.which("bwrap") is None, reason="bubblewrap is not installed (apt-get install bubblewrap)"
)

WEB = frozenset(t.name for t in templates("web_automation"))
COMBOS = [
    (t.name, tier)
    for t in templates()
    for tier in TIERS
    if t.name not in WEB or tier in ("starter", "intermediate", "expert")
]
"""Each web_automation evaluation starts its own Chromium (about 2-5 s): here they are
checked at three tiers and two starter seeds; every tier and 4 seeds are measured by
`bench/bench_web.py` (reference 12/12, near-miss 0/12 and cross-seed 0/36 per tier)."""
PROGRAM_COMBOS = [(name, tier) for name, tier in COMBOS if tier != "starter" and name not in WEB]
"""The starter tier's seeds are covered by the every-seed starter test below."""
STARTER_SEEDS = [(t.name, seed) for t in templates() for seed in range(2 if t.name in WEB else 6)]
"""Six seeds per starter template, two for a web one (see `WEB`)."""
SEED = 2024
NEAR_MISS_SEEDS = (SEED + 1, SEED + 2)
"""Seeds draw different tasks from a template's family, each with its own near-miss: check
several. (References on other seeds are run by `test_bank_variety.py`, against their own
seed's validator and the others'.)"""
CHECKER_SOURCE_MARKERS = ("def run_solution", "def check_lines", "DATA = json.loads")


@pytest.fixture(scope="module")
def sandbox() -> Sandbox:
    return Sandbox(SandboxConfig(timeout_s=30))


@pytest.fixture(scope="module")
def pool() -> Iterator[ThreadPoolExecutor]:
    """Two evaluations at a time: most of a run is process start-up and sleeps."""
    with ThreadPoolExecutor(max_workers=2) as executor:
        yield executor


def evaluate_both(
    pool: ThreadPoolExecutor, sandbox: Sandbox, challenge: Challenge, first: str, second: str
) -> tuple[Evaluation, Evaluation]:
    one = pool.submit(evaluate, sandbox, challenge, first)
    two = pool.submit(evaluate, sandbox, challenge, second)
    return one.result(), two.result()


@pytest.mark.parametrize(("name", "tier"), COMBOS)
def test_reference_passes_and_near_miss_fails(
    pool: ThreadPoolExecutor, sandbox: Sandbox, name: str, tier: str
) -> None:
    challenge = render(name, tier, SEED)
    good, bad = evaluate_both(
        pool, sandbox, challenge, challenge.reference_solution, challenge.wrong_solution
    )
    assert good.passed, f"reference failed: {good.feedback}"
    assert good.feedback == ""
    assert good.setup.ok and good.validation.ok
    assert not bad.passed, "the near-miss solution was accepted"
    assert bad.feedback and len(bad.feedback) <= FEEDBACK_CHARS
    assert not bad.validation.timed_out
    for marker in CHECKER_SOURCE_MARKERS:
        assert marker not in bad.feedback


@pytest.mark.parametrize("seed", NEAR_MISS_SEEDS)
@pytest.mark.parametrize(("name", "tier"), PROGRAM_COMBOS)
def test_near_miss_fails_on_other_seeds(sandbox: Sandbox, name: str, tier: str, seed: int) -> None:
    challenge = render(name, tier, seed)
    bad = evaluate(sandbox, challenge, challenge.wrong_solution)
    assert not bad.passed, f"seed {seed}: the near-miss solution was accepted"
    assert bad.feedback and not bad.validation.timed_out


@pytest.mark.parametrize(("name", "seed"), STARTER_SEEDS)
def test_starter_reference_passes_and_near_miss_fails_for_every_seed(
    pool: ThreadPoolExecutor, sandbox: Sandbox, name: str, seed: int
) -> None:
    """Starter examples and cases are drawn per seed: check several seeds, not one."""
    challenge = render(name, "starter", seed)
    good, bad = evaluate_both(
        pool, sandbox, challenge, challenge.reference_solution, challenge.wrong_solution
    )
    assert good.passed, f"seed {seed}: reference failed: {good.feedback}"
    assert not bad.passed, f"seed {seed}: the near-miss solution was accepted"
    assert bad.feedback and not bad.validation.timed_out


@pytest.mark.parametrize("name", [t.name for t in templates()])
def test_empty_and_crashing_solutions_fail_with_feedback(
    pool: ThreadPoolExecutor, sandbox: Sandbox, name: str
) -> None:
    challenge = render(name, "intermediate", SEED)
    if challenge.solution_file.endswith(".sh"):
        crash = "echo 'cannot parse input: boom' >&2\nexit 3\n"
        status = "status 3"
    else:
        crash = "raise RuntimeError('cannot parse input: boom')\n"
        status = "status 1"
    empty, crashed = evaluate_both(pool, sandbox, challenge, "", crash)
    assert not empty.passed
    assert "FAIL:" in empty.feedback
    assert not crashed.passed
    assert "cannot parse input: boom" in crashed.feedback
    assert status in crashed.feedback


@pytest.mark.parametrize("name", [t.name for t in templates()])
def test_starter_empty_crashing_and_stdin_reading_solutions_fail_with_feedback(
    pool: ThreadPoolExecutor, sandbox: Sandbox, name: str
) -> None:
    challenge = render(name, "starter", SEED)
    if challenge.solution_file.endswith(".sh"):
        empty, crashed = evaluate_both(pool, sandbox, challenge, "", "echo boom >&2\nexit 3\n")
        assert not empty.passed and "FAIL:" in empty.feedback
        assert not crashed.passed and "status 3" in crashed.feedback
        return
    func = challenge.reference_solution.split("def ", 1)[1].split("(", 1)[0]
    crash = f"def {func}(*args):\n    raise RuntimeError('cannot parse input: boom')\n"
    empty, crashed = evaluate_both(pool, sandbox, challenge, "", crash)
    assert not empty.passed
    assert f"FAIL: solution.py does not define a function named `{func}`" in empty.feedback
    assert not crashed.passed
    first = crashed.feedback.splitlines()[0]
    assert first.startswith(f"FAIL: {func}(") and "(test 1 of" in first
    assert "raised RuntimeError: cannot parse input: boom (solution.py line 2)" in first
    reads = evaluate(sandbox, challenge, f"import sys\n\ndef {func}(*args):\n    return input()\n")
    assert not reads.passed and "do not read input" in reads.feedback
    for marker in CHECKER_SOURCE_MARKERS:
        assert marker not in empty.feedback + crashed.feedback + reads.feedback


def _hand_made(setup: str, validation: str) -> Challenge:
    return Challenge(
        template="algo.hand_made",
        cluster="algo",
        tier="basic",
        seed=0,
        prompt="Print hello. Write `solution.py`.",
        setup_script=setup,
        validation_script=validation,
        reference_solution="print('hello')\n",
        wrong_solution="print('bye')\n",
    )


def test_setup_failure_is_a_challenge_fault(sandbox: Sandbox) -> None:
    broken = _hand_made("raise SystemExit('setup exploded')", "print('never runs')")
    with pytest.raises(ChallengeFaultError, match="setup exploded"):
        evaluate(sandbox, broken, "print('hello')\n")


def test_validator_timeout_is_a_failed_evaluation() -> None:
    quick = Sandbox(SandboxConfig(timeout_s=1.5))
    stuck = _hand_made("pass", "import time\nprint('checking...', flush=True)\ntime.sleep(30)")
    result = evaluate(quick, stuck, "print('hello')\n")
    assert not result.passed
    assert result.validation.timed_out
    assert "timed out" in result.feedback and "checking..." in result.feedback


def test_solution_cannot_read_the_validator(sandbox: Sandbox) -> None:
    challenge = render("algo.top_k", "basic", SEED)
    snoop = "import os\nprint(sorted(os.listdir('.')))\n"
    result = evaluate(sandbox, challenge, snoop)
    assert not result.passed
    assert "scores.csv" in result.feedback and "solution.py" in result.feedback
    assert ".py'" not in result.feedback.replace("'solution.py'", "")


def test_hand_made_challenge_passes_and_fails(sandbox: Sandbox) -> None:
    validation = (
        "import subprocess, sys\n"
        "out = subprocess.run([sys.executable, 'solution.py'], capture_output=True, text=True)\n"
        "sys.exit(0 if out.stdout.strip() == 'hello' else print('FAIL: wrong greeting') or 1)\n"
    )
    challenge = _hand_made("open('input.txt', 'w').write('x')", validation)
    assert evaluate(sandbox, challenge, challenge.reference_solution).passed
    failed = evaluate(sandbox, replace(challenge), challenge.wrong_solution)
    assert not failed.passed and failed.feedback == "FAIL: wrong greeting"
