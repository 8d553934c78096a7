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

ALL = [t.name for t in templates()]
COMBOS = [(name, tier) for name in ALL for tier in TIERS]
SRC = str(Path(__file__).resolve().parents[2] / "src")


def test_clusters_and_tiers_are_the_documented_ones() -> None:
    assert CLUSTERS == (
        "algo", "bash", "concurrency", "data_analysis", "python_general", "regex_parse", "sql",
    )  # fmt: skip
    assert TIERS == ("basic", "intermediate", "advanced", "expert")


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
    assert len(ALL) >= 21


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
    assert other.setup_script != first.setup_script
    assert other.challenge_hash != first.challenge_hash


@pytest.mark.parametrize(("name", "tier"), COMBOS)
def test_prompt_states_the_file_and_the_tier_twists(name: str, tier: str) -> None:
    challenge = render(name, tier, 3)
    level = TIERS.index(tier)
    prompt = challenge.prompt
    assert f"`{challenge.solution_file}`" in prompt
    assert challenge.solution_file in ("solution.py", "solution.sh")
    assert (challenge.solution_file == "solution.sh") == (challenge.cluster == "bash")
    assert len(prompt) < 3000
    if level == 0:
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
