"""The template bank without a sandbox: API, determinism, prompts."""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from nightschool.challenges import (
    CLUSTERS,
    TIERS,
    Challenge,
    Template,
    get_template,
    render,
    templates,
)
from nightschool.challenges._model import tier_level

ALL = [t.name for t in templates()]
COMBOS = [(name, tier) for name in ALL for tier in TIERS]
SRC = str(Path(__file__).resolve().parents[2] / "src")


def test_clusters_and_tiers_are_the_documented_ones() -> None:
    assert CLUSTERS == (
        "algo", "bash", "concurrency", "data_analysis", "python_general", "regex_parse", "sql",
        "web_automation",
    )  # fmt: skip
    assert TIERS == ("starter", "basic", "intermediate", "advanced", "expert")


def test_tier_level_counts_from_starter() -> None:
    assert [tier_level(tier) for tier in TIERS] == [0, 1, 2, 3, 4]
    with pytest.raises(ValueError, match="known tiers: starter, basic"):
        tier_level("novice")


# Challenge hashes of the family bank (seeds draw different tasks, issue "Transfer,
# measured honestly"): a change to any template's rendering must be deliberate,
# since stored journals, verification and held-out sets name (template, tier, seed).
PINNED = [
    ("algo.top_k", "basic", "3c6ebd96057deafe"),
    ("bash.word_freq", "intermediate", "60536e6232edd077"),
    ("concurrency.pipeline", "advanced", "1d55c70d1104d085"),
    ("data_analysis.dept_summary", "expert", "5bacc1847b57e73d"),
    ("python_general.config_merge", "basic", "aa5e4fedcc4e5eca"),
    ("regex_parse.dates", "advanced", "f475659199bea16d"),
    ("sql.running_balance", "expert", "a0d0e2b0af7bc34f"),
]


@pytest.mark.parametrize(("name", "tier", "digest"), PINNED)
def test_existing_tiers_render_as_before(name: str, tier: str, digest: str) -> None:
    assert render(name, tier, 5).challenge_hash == digest


@pytest.mark.parametrize("cluster", CLUSTERS)
def test_every_cluster_has_three_templates(cluster: str) -> None:
    found = templates(cluster)
    assert len(found) >= 3
    for template in found:
        assert isinstance(template, Template)
        assert template.cluster == cluster
        assert template.name.startswith(f"{cluster}.")
        assert get_template(template.name) is template


def test_templates_lists_all_sorted_and_unique() -> None:
    assert sorted(set(ALL)) == ALL
    assert len(ALL) >= 24


def test_unknown_names_raise_value_error_listing_the_known_ones() -> None:
    with pytest.raises(ValueError, match=r"algo\.merge_intervals"):
        get_template("algo.nope")
    with pytest.raises(ValueError, match="known clusters"):
        templates("cooking")
    with pytest.raises(ValueError, match="unknown tier"):
        render("algo.merge_intervals", "legendary", 0)
    with pytest.raises(ValueError, match="unknown tier"):
        get_template("sql.top_product").render("Basic", 0)


@pytest.mark.parametrize(("name", "tier"), COMBOS)
def test_render_is_deterministic_and_seeds_differ(name: str, tier: str) -> None:
    first = render(name, tier, 7)
    again = render(name, tier, 7)
    other = render(name, tier, 8)
    assert first == again
    assert first.challenge_hash == again.challenge_hash
    assert (first.template, first.cluster, first.tier, first.seed) == (
        name, name.split(".")[0], tier, 7,
    )  # fmt: skip
    assert other.challenge_hash != first.challenge_hash
    if tier == "starter":  # a function task may need no files: the hidden cases differ
        assert (other.setup_script, other.validation_script) != (
            first.setup_script, first.validation_script,
        )  # fmt: skip
    else:
        assert other.setup_script != first.setup_script


@pytest.mark.parametrize(("name", "tier"), COMBOS)
def test_prompt_states_the_file_and_the_tier_twists(name: str, tier: str) -> None:
    challenge = render(name, tier, 3)
    level = TIERS.index(tier) - 1  # twists stated: starter and basic none
    prompt = challenge.prompt
    assert f"`{challenge.solution_file}`" in prompt
    assert challenge.solution_file in ("solution.py", "solution.sh")
    assert (challenge.solution_file == "solution.sh") == (challenge.cluster == "bash")
    assert len(prompt) < 3000
    if level <= 0:
        assert "Extra rules" not in prompt
    else:
        rules = prompt.split("Extra rules at this level:\n", 1)[1].split("\n\n", 1)[0]
        assert len([line for line in rules.splitlines() if line.startswith("- ")]) == level
        previous = render(name, TIERS[level - 1], 3).prompt

        def words(text: str) -> set[str]:
            return set(re.sub(r"[\d.]+", "#", text).split())

        assert words(prompt) - words(previous), "the new twist adds no words to the prompt"


@pytest.mark.parametrize(("name", "tier"), COMBOS)
def test_solutions_differ_and_scripts_compile(name: str, tier: str) -> None:
    challenge = render(name, tier, 0)
    assert challenge.reference_solution.strip() != challenge.wrong_solution.strip()
    compile(challenge.setup_script, "<setup>", "exec")
    compile(challenge.validation_script, "<validator>", "exec")
    if challenge.solution_file.endswith(".py"):
        compile(challenge.reference_solution, "<reference>", "exec")
        compile(challenge.wrong_solution, "<wrong>", "exec")
    for text in (challenge.reference_solution, challenge.wrong_solution):
        assert not re.search(r"#[+=-]!?\w+\s*$", text, re.MULTILINE), "a marker was left in"


def test_challenge_hash_is_sha256_prefix() -> None:
    challenge = render("algo.top_k", "basic", 1)
    text = challenge.prompt + challenge.setup_script + challenge.validation_script
    assert challenge.challenge_hash == hashlib.sha256(text.encode()).hexdigest()[:16]
    assert re.fullmatch(r"[0-9a-f]{16}", challenge.challenge_hash)


def test_rendering_is_stable_across_processes() -> None:
    """String seeds: a fresh interpreter (new hash salt) renders identical challenges."""
    picks = [(name, tier, 11) for name, tier in COMBOS]
    code = (
        "import json, sys\n"
        "from nightschool.challenges import render\n"
        "picks = json.loads(sys.argv[1])\n"
        "print(json.dumps([render(n, t, s).challenge_hash for n, t, s in picks]))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, json.dumps(picks)],
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONPATH": SRC, "PYTHONHASHSEED": "12345"},
    ).stdout
    assert json.loads(out) == [render(n, t, s).challenge_hash for n, t, s in picks]


def test_challenge_is_frozen_with_python_default_file() -> None:
    challenge = Challenge("a.b", "algo", "basic", 0, "p", "s", "v", "r", "w")
    assert challenge.solution_file == "solution.py"
    with pytest.raises(AttributeError):
        challenge.prompt = "other"  # type: ignore[misc]


FUNCTION = re.compile(r"```python\n(?:import \w+\n\n\n)?def (\w+)\(.*\) -> .+:\n    \"\"\"")


@pytest.mark.parametrize("name", ALL)
@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_starter_prompts_are_short_and_explicit(name: str, seed: int) -> None:
    """Sized for a 0.5B model: one short task with the exact signature or input shown."""
    challenge = render(name, "starter", seed)
    prompt = challenge.prompt
    assert len(prompt) <= 900, len(prompt)
    assert "Extra rules" not in prompt and "hidden" in prompt
    if challenge.solution_file == "solution.py":
        match = FUNCTION.search(prompt)
        assert match, "no signature with a docstring"
        func = match.group(1)
        assert prompt.count(f">>> {func}(") in (1, 2), "one or two worked examples"
        assert f"calls `{func}` on hidden tests" in prompt
        assert "do not print" in prompt and "return the result" in prompt
        assert f"def {func}(" in challenge.reference_solution
        assert "print(" not in challenge.reference_solution
        assert "input(" not in challenge.reference_solution
        assert "open(" not in challenge.reference_solution
    else:
        assert "bash solution.sh" in prompt and "For the " in prompt
        body = [line for line in challenge.reference_solution.splitlines() if line.strip()]
        assert len(body) <= 5, "a starter script is one pipeline or one loop"
    assert challenge.validation_script.count("DATA = ") == 1


@pytest.mark.parametrize("name", ALL)
def test_starter_validators_hold_5_to_8_hidden_cases(name: str) -> None:
    challenge = render(name, "starter", 4)
    data = challenge.validation_script.split("\nDATA = ", 1)[1].split("\n", 1)[0]
    value = eval(data, {"json": json})  # the validator's own `json.loads(...)` literal
    if challenge.solution_file == "solution.py":
        assert 5 <= len(value["cases"]) <= 8
        calls = [case["call"] for case in value["cases"]]
        assert len(set(calls)) == len(calls), "cases repeat"
        assert not any(call in challenge.prompt for call in calls), "a hidden case is shown"
    else:
        assert len(value) >= 2, "the script also runs on hidden inputs"


STARTER_SEEDS = range(6)
EXAMPLE = re.compile(r"^    >>> (.+)\n    (.+)$", re.MULTILINE)


@pytest.mark.parametrize("name", ALL)
def test_starter_prompts_differ_by_seed(name: str) -> None:
    """A new seed is a new task as the solver sees it: the worked example comes from the seed."""
    prompts = {render(name, "starter", seed).prompt for seed in STARTER_SEEDS}
    assert len(prompts) >= 5, f"{len(prompts)} distinct prompts among seeds 0..5"


def _validator_data(challenge: Challenge) -> dict[str, object]:
    data = challenge.validation_script.split("\nDATA = ", 1)[1].split("\n", 1)[0]
    value = eval(data, {"json": json})  # the validator's own `json.loads(...)` literal
    assert isinstance(value, dict)
    return value


@pytest.mark.parametrize(
    "name", [n for n in ALL if not n.startswith(("bash.", "web_automation."))]
)  # web starters take a browser page: `test_challenge_eval` runs them
@pytest.mark.parametrize("seed", STARTER_SEEDS)
def test_starter_worked_examples_are_what_the_reference_returns(
    name: str, seed: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The seeded `>>>` examples are right: the reference returns the shown value."""
    challenge = render(name, "starter", seed)
    monkeypatch.chdir(tmp_path)
    exec(challenge.setup_script, {})  # the database of the sql templates
    scope: dict[str, object] = {}
    exec(str(_validator_data(challenge)["prelude"]), scope)  # fixtures: con, work, Ledger
    exec(challenge.reference_solution, scope)
    examples = EXAMPLE.findall(challenge.prompt)
    assert examples and len(examples) == challenge.prompt.count(">>> ")
    for shown_call, shown_value in examples:
        got = eval(shown_call, scope)
        want = eval(shown_value, scope)  # `[work(5), ...]` evaluates with the prelude's work
        if isinstance(want, list) and want and want[-1] is Ellipsis:  # a shown prefix
            got, want = got[: len(want) - 1], want[:-1]
        assert got == want, f"{shown_call} returns {got!r}, the prompt shows {shown_value}"
