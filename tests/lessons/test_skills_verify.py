"""Skills from successes, recall, controlled verification, and the learning curve's wiring.

The model here is a scripted double whose behaviour is a function of the prompt
(it "benefits" from a worked example); the sandbox, store, playbook and gate are
real. What the real model gains is measured by `nightschool eval learning-curve`
(see the e2e test on the embedded model and bench/bench_learning_curve.py).
"""

from __future__ import annotations

import dataclasses
import random
import shutil
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
from tests._challenges import bare_challenge
from tests.lessons._scripted import asked, learner

from nightschool.challenges import CLUSTERS, Challenge, render, templates
from nightschool.dream import DreamLoop, FrontierTracker
from nightschool.errors import UserError
from nightschool.evals.curve import (
    HELDOUT_SEED_BASE,
    build_heldout,
    check_disjoint,
    practised_hashes,
    run_curve,
)
from nightschool.lessons.skills import learn_skill, passing_code, recall
from nightschool.lessons.verify import VERIFY_SEED_BASE, PairedVerifier, evidence
from nightschool.llm import Message, ScriptedModel
from nightschool.playbook import SkillMemory, default_embedder
from nightschool.sandbox import Sandbox
from nightschool.solver import Solver, SolverConfig
from nightschool.store import Store

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap not installed")

TEMPLATE = "python_general.tag_index"


@pytest.fixture
def memory(store: Store) -> Iterator[SkillMemory]:
    opened = SkillMemory(store, default_embedder())  # the production embedder and its floor
    try:
        yield opened
    finally:
        opened.close()


def test_skill_shown_for_new_seed_never_for_own_challenge_or_unrelated(
    memory: SkillMemory,
) -> None:
    source = render(TEMPLATE, "starter", 1)
    result = learn_skill(memory, source, source.reference_solution, source_trajectory_id="T-1")
    assert result.status == "written"
    skill = memory.get(str(result.lesson_id))
    assert skill is not None and skill.kind == "skill" and skill.source_trajectory_id == "T-1"

    same_template = recall(memory, render(TEMPLATE, "starter", 2))
    assert same_template.skill_ids == [skill.id]
    section = same_template.skill_sections[0]
    assert section.startswith("### WORKED EXAMPLES")
    assert source.reference_solution.strip().splitlines()[0] in section

    assert recall(memory, source).skills == []  # never an exact copy of the task at hand
    same_text = dataclasses.replace(source, seed=99, validation_script="# other hidden tests\n")
    assert same_text.challenge_hash != source.challenge_hash
    assert recall(memory, same_text).skills == []  # the same task text is the same task
    held_out = recall(memory, render(TEMPLATE, "starter", 2), exclude_templates={TEMPLATE})
    assert held_out.skills == []
    unrelated = bare_challenge(
        "chat.haiku", "Write a short haiku about autumn rain falling on a quiet harbour at dusk."
    )
    nothing = recall(memory, unrelated)
    assert nothing.skills == [] and nothing.lessons == [] and nothing.skill_sections == []


def test_skill_of_a_neighbouring_template_is_not_shown_even_above_the_floor(
    memory: SkillMemory,
) -> None:
    # the first curve's case: a sql skill scored 0.52 for another sql template and hurt there
    source = render("sql.customer_totals", "starter", 1)
    learn_skill(memory, source, source.reference_solution, source_trajectory_id="T-1")
    neighbour = render("sql.top_product", "starter", 2)
    above_floor = recall(memory, neighbour, same_template=False)
    assert [s.lesson.template for s in above_floor.skills] == ["sql.customer_totals"]
    assert recall(memory, neighbour).skills == []  # default: its own template only
    own = recall(memory, render("sql.customer_totals", "starter", 2))
    assert [s.lesson.template for s in own.skills] == ["sql.customer_totals"]


def test_same_solution_twice_is_one_skill(memory: SkillMemory) -> None:
    first = render(TEMPLATE, "starter", 1)
    a = learn_skill(memory, first, first.reference_solution, source_trajectory_id="T-1")
    b = learn_skill(memory, first, first.reference_solution, source_trajectory_id="T-2")
    assert a.status == "written" and b.status == "reinforced" and a.lesson_id == b.lesson_id


def test_verifier_promotes_only_a_candidate_that_wins_its_pairs(
    store: Store, rendered: dict[str, Challenge]
) -> None:
    solver = Solver(learner(rendered), Sandbox(), SolverConfig(max_attempts=3))
    verifier = PairedVerifier(solver, store=store, k=6, session_id="verify-test")
    source = render(TEMPLATE, "starter", 3)
    section = f"### WORKED EXAMPLES\n```python\n{source.reference_solution}\n```"
    helps = verifier.compare(TEMPLATE, "starter", skills=[section], skill_ids=["S-1"])
    assert helps.helps and helps.verdict is not None and helps.verdict.test == "mcnemar-exact"
    record = helps.record()
    assert record["passes_with"] == 6 and record["passes_without"] == 0 and record["k"] == 6
    assert all(seed >= VERIFY_SEED_BASE for seed in helps.seeds)

    assert helps.curtailed == 0

    useless = verifier.compare(TEMPLATE, "starter")  # nothing shown: the control arm again
    assert not useless.helps and useless.record()["passes_with"] == 0
    # two ties leave at most 4 candidate-only wins of 6: the gate could not promote, so
    # the comparison stops there (curtailed) instead of solving 4 more renderings
    assert len(useless.with_candidate) == 2 and useless.record()["curtailed"] == 4
    # and says so: counts over what was solved, not over k
    assert evidence(useless.record()) == (
        "0/2 with it vs 0/2 without; stopped after 2 of 6: the gate could no longer promote"
    )
    assert evidence(record) == "6/6 with it vs 0/6 without"
    kinds = store.query("SELECT task_kind, COUNT(*) FROM trajectories GROUP BY task_kind")
    # 6 control runs (cached, solved once) + 6 + 2 candidate runs, single attempt each
    assert dict(kinds) == {"verification": 14}


def test_a_later_run_reuses_stored_control_results_with_the_same_key(
    store: Store, rendered: dict[str, Challenge]
) -> None:
    calls: list[bool] = []  # per model call: was a worked example shown (candidate arm)?

    def counting(messages: Sequence[Message]) -> str:
        calls.append("WORKED EXAMPLES" in messages[0]["content"])
        return learner(rendered).complete(messages).text

    section = (
        f"### WORKED EXAMPLES\n```python\n{render(TEMPLATE, 'starter', 3).reference_solution}\n```"
    )
    first = PairedVerifier(Solver(ScriptedModel(counting), Sandbox()), store=store, k=6)
    earlier = first.compare(TEMPLATE, "starter", skills=[section])
    assert earlier.helps
    assert calls.count(False) == 6 and calls.count(True) == 6
    keys = store.query(
        "SELECT json_extract(record, '$.extra.control_key') FROM trajectories "
        "WHERE json_extract(record, '$.extra.verification_arm') = 'control'"
    )
    assert len({row[0] for row in keys}) == 6 and all(row[0] for row in keys)

    calls.clear()  # a new run (a new verifier) on the same store: the controls are read back
    again = PairedVerifier(Solver(ScriptedModel(counting), Sandbox()), store=store, k=6)
    outcome = again.compare(TEMPLATE, "starter", skills=[section])
    assert outcome.helps and outcome.without == earlier.without
    assert calls.count(False) == 0 and calls.count(True) == 6

    calls.clear()  # other solver settings make other controls: solved anew
    other = Solver(ScriptedModel(counting), Sandbox(), SolverConfig(max_tokens=400))
    PairedVerifier(other, store=store, k=6).compare(TEMPLATE, "starter", skills=[section])
    assert calls.count(False) == 6


def test_stored_failing_controls_let_a_useless_candidate_stop_before_any_solve(
    store: Store, rendered: dict[str, Challenge]
) -> None:
    def solve_all(messages: Sequence[Message]) -> str:
        challenge = asked(rendered, messages)
        assert challenge is not None
        return f"```python\n{challenge.reference_solution}\n```"

    solver = Solver(ScriptedModel(solve_all), Sandbox(), SolverConfig(max_attempts=1))
    PairedVerifier(solver, store=store, k=6).compare(TEMPLATE, "starter", skills=["(a)"])
    before = store.query("SELECT COUNT(*) FROM trajectories")[0][0]
    # every control passed before: no candidate can win 5 of 6, so nothing is solved
    outcome = PairedVerifier(solver, store=store, k=6).compare(TEMPLATE, "starter", skills=["(b)"])
    assert not outcome.helps and outcome.curtailed == 6 and not outcome.with_candidate
    assert store.query("SELECT COUNT(*) FROM trajectories")[0][0] == before


def test_verifier_skips_the_candidate_once_passing_controls_rule_out_promotion(
    store: Store, rendered: dict[str, Challenge]
) -> None:
    def solve_all(messages: Sequence[Message]) -> str:
        challenge = asked(rendered, messages)
        assert challenge is not None
        return f"```python\n{challenge.reference_solution}\n```"

    solver = Solver(ScriptedModel(solve_all), Sandbox(), SolverConfig(max_attempts=1))
    verifier = PairedVerifier(solver, store=store, k=6)
    outcome = verifier.compare(TEMPLATE, "starter", skills=["### WORKED EXAMPLES\n(none)"])
    # rendering 1: nothing known yet, the candidate goes first and passes, so its control
    # runs and passes (a tie); the template now looks easy (3/4 by Laplace's rule), so
    # rendering 2 starts with its control, which passes: no win either way, the candidate
    # is deferred; at most 4 wins remain: stop
    assert not outcome.helps
    assert list(outcome.without.values()) == [True, True] and len(outcome.with_candidate) == 1
    assert outcome.curtailed == 4 and outcome.deferred == 1
    record = outcome.record()
    assert record["with"] == [1, None, None, None, None, None]  # unsolved is not a failure
    assert record["without"] == [1, 1, None, None, None, None]
    assert evidence(record) == (
        "1/1 with it vs 2/2 without; 1 solved in one arm only: not a win either way; "
        "stopped after 2 of 6: the gate could no longer promote"
    )
    arms = store.query(
        "SELECT json_extract(record, '$.extra.verification_arm'), COUNT(*) FROM trajectories "
        "GROUP BY 1 ORDER BY 1"
    )
    assert [tuple(row) for row in arms] == [("candidate", 1), ("control", 2)]


def test_a_failing_candidate_is_refused_without_solving_its_controls(
    store: Store, rendered: dict[str, Challenge]
) -> None:
    # a lesson from a failed cycle, on a template the model fails: the candidate arm fails
    # first, which no control result can turn into a win, so no control is solved
    solver = Solver(learner(rendered, solves_dream=False), Sandbox(), SolverConfig())
    verifier = PairedVerifier(solver, store=store, k=6)
    outcome = verifier.compare(TEMPLATE, "starter", skills=["### WORKED EXAMPLES\n(none)"])
    assert not outcome.helps and outcome.without == {}
    assert list(outcome.with_candidate.values()) == [False, False]
    assert outcome.deferred == 2 and outcome.curtailed == 4
    arms = store.query(
        "SELECT json_extract(record, '$.extra.verification_arm'), COUNT(*) FROM trajectories "
        "GROUP BY 1"
    )
    assert [tuple(row) for row in arms] == [("candidate", 2)]
    # the order before solved both arms of both renderings
    before = PairedVerifier(solver, k=6, order="control-first")
    old = before.compare(TEMPLATE, "starter", skills=["### WORKED EXAMPLES\n(none)"])
    assert not old.helps and old.deferred == 0
    assert list(old.without.values()) == list(old.with_candidate.values()) == [False, False]
    with pytest.raises(ValueError, match="unknown verification order"):
        PairedVerifier(solver, order="candidate-last")


@pytest.mark.parametrize("deferred_control_passes", [False, True])
def test_a_deferred_arm_is_solved_when_the_verdict_depends_on_it(
    store: Store, rendered: dict[str, Challenge], deferred_control_passes: bool
) -> None:
    # the candidate fails the first rendering (its control deferred: a tie or a loss) and
    # wins the other five: as a tie that would promote (5 wins, no loss), as a loss not,
    # so the deferred control is solved before the verdict
    verifier = PairedVerifier(Solver(ScriptedModel(lambda _m: ""), Sandbox()), k=6)
    first_seed = verifier.seeds(TEMPLATE, "starter")[0][0]

    def reply(messages: Sequence[Message]) -> str:
        challenge = asked(rendered, messages)
        assert challenge is not None
        shown = "WORKED EXAMPLES" in messages[0]["content"]
        good = (deferred_control_passes and not shown) if challenge.seed == first_seed else shown
        code = challenge.reference_solution if good else challenge.wrong_solution
        return f"```python\n{code}\n```"

    solver = Solver(ScriptedModel(reply), Sandbox(), SolverConfig(max_attempts=1))
    verifier = PairedVerifier(solver, store=store, k=6)
    outcome = verifier.compare(TEMPLATE, "starter", skills=["### WORKED EXAMPLES\n(none)"])
    assert outcome.deferred == 0 and outcome.curtailed == 0
    assert outcome.without[first_seed] is deferred_control_passes
    assert sum(outcome.with_candidate.values()) == 5
    assert outcome.helps is not deferred_control_passes
    assert outcome.record()["solved"] == 6


def test_dream_turns_a_pass_into_a_verified_skill_with_provenance(
    store: Store, memory: SkillMemory, rendered: dict[str, Challenge]
) -> None:
    solver = Solver(learner(rendered), Sandbox(), playbook=memory)
    verifier = PairedVerifier(solver, store=store, k=6)
    loop = DreamLoop(store, solver, FrontierTracker(store), rng=random.Random(1), verifier=verifier)
    cycle = loop.run_cycle(cluster="python_general", tier="starter")
    assert cycle.passed and cycle.skill is not None and cycle.skill.status == "written"
    assert cycle.skill.verified, cycle.skill.reason
    skill = memory.get(str(cycle.skill.skill_id))
    assert (
        skill is not None and skill.verified and skill.source_trajectory_id == cycle.trajectory_id
    )
    assert skill.extra["verification"]["comparison"]["method"] == "paired-fresh-renderings"
    stored = store.get_trajectory(cycle.trajectory_id)
    assert stored is not None
    assert passing_code(stored.tool_calls) is not None
    # retracting the source trajectory archives the skill
    assert memory.retract_from_trajectory(cycle.trajectory_id) == 1
    assert memory.get(skill.id) is None


def test_heldout_sets_are_disjoint_and_cover_every_cluster_and_tier() -> None:
    heldout = build_heldout(["starter", "basic"], per_cell=2, seed=0)
    assert len(CLUSTERS) == 8  # web_automation's items came last: the others' are unchanged
    assert len(heldout.set_a) == len(heldout.set_b) == 8 * 2 * 2
    assert len(heldout.unseen_templates) == 8
    for items in (heldout.set_a, heldout.set_b):
        cells = {(i.challenge.cluster, i.challenge.tier) for i in items}
        assert len(cells) == 16
    assert all(i.challenge.seed >= HELDOUT_SEED_BASE for i in heldout.items)
    practised = {t.name for t in templates()} - heldout.unseen_templates
    assert {i.challenge.template for i in heldout.set_a} <= practised
    leaked = [heldout.set_b[0].challenge.challenge_hash]
    with pytest.raises(UserError, match="were practised"):
        check_disjoint(heldout, leaked)


@pytest.mark.store_backends("postgres")
def test_learning_curve_measures_gates_and_writes_files(
    tmp_path: Path, store: Store, memory: SkillMemory, rendered: dict[str, Challenge]
) -> None:
    model = learner(rendered)
    config = SolverConfig(max_attempts=1)
    solver = Solver(model, Sandbox(), config, playbook=memory)
    heldout = build_heldout(["starter"], per_cell=2, seed=0)  # every practised template
    loop = DreamLoop(
        store,
        solver,
        FrontierTracker(store),
        rng=random.Random(0),
        exclude_templates=heldout.unseen_templates,
    )
    curve = run_curve(
        store=store,
        memory=memory,
        loop=loop,
        eval_solver=Solver(model, Sandbox(), config),
        heldout=heldout,
        checkpoints=1,
        cycles_per_checkpoint=3,
        minutes_per_checkpoint=None,
    )
    arms = [(m.checkpoint, m.arm) for m in curve.measurements]
    assert arms == [
        (0, "none"), (1, "both"), (1, "lessons"), (1, "skills"), (1, "placebo"),
        (1, "equal_compute"),
    ]  # fmt: skip
    both_shown = {r.task_id: r.shown for r in curve.measurements[1].results}
    placebo = curve.measurements[4]
    assert all(r.shown <= both_shown[r.task_id] for r in placebo.results)
    for row in placebo.results:  # a placebo never shows anything of the item's own cluster
        trajectory = store.get_trajectory(row.trajectory_id)
        assert trajectory is not None
        for skill_id in trajectory.extra.get("skills_shown", []):
            skill = memory.get(str(skill_id))
            assert skill is not None and skill.template.split(".")[0] != row.cluster
    equal = curve.measurements[5]
    assert not any(r.reused for r in equal.results)  # more attempts: never the start's solve
    start_a, _ = curve.start.pass_rate("a")
    assert start_a == 0  # nothing learned: the double fails every held-out item
    both = curve.measurements[1]
    practised = {c.template for c in curve.cycles if c.passed}
    gained = [r for r in both.results if r.passed and r.set_name == "a"]
    assert gained and {r.task_id.split(":")[1] for r in gained} <= practised
    for row in both.results:  # a skill shown anywhere never comes from a held-out template
        trajectory = store.get_trajectory(row.trajectory_id)
        assert trajectory is not None
        for skill_id in trajectory.extra.get("skills_shown", []):
            skill = memory.get(str(skill_id))
            assert skill is not None and skill.template not in heldout.unseen_templates
    assert curve.measurements[2].pass_rate("a")[0] == 0  # lessons only: no skills shown
    assert {(v["checkpoint"], v["set"]) for v in curve.verdicts} >= {(1, "a"), (1, "b")}
    written = curve.write(tmp_path / "out")
    assert written["csv"].read_text().startswith("checkpoint,")
    assert written["png"].stat().st_size > 5_000
    # an item shown nothing is the start's solve (same prompt, same seeds): reused, not re-run
    start_rows = {r.task_id: r for r in curve.start.results}
    later = [r for m in curve.measurements[1:] for r in m.results]
    reused = [r for r in later if r.reused]
    assert reused and all(r.shown == 0 for r in reused)
    assert all(r.trajectory_id == start_rows[r.task_id].trajectory_id for r in reused)
    assert all(r.passed == start_rows[r.task_id].passed for r in reused)
    assert all(r.reused for r in curve.measurements[2].results)  # no lessons were learned
    assert not any(r.reused for r in later if r.shown)
    eval_kinds = store.query("SELECT COUNT(*) FROM trajectories WHERE task_kind = 'eval'", [])[0][0]
    assert eval_kinds == len(heldout.items) + len(later) - len(reused)
    check_disjoint(heldout, practised_hashes(store))
    # skills only ever come from practice, never from a held-out (eval) trajectory
    for skill in memory.list(kind="skill"):
        source = store.get_trajectory(skill.source_trajectory_id)
        assert source is not None and source.task_kind == "selfplay"


def test_curve_refuses_a_loop_that_practises_heldout_templates(
    store: Store, memory: SkillMemory
) -> None:
    heldout = build_heldout(["starter"], per_cell=1)
    solver = Solver(ScriptedModel(["x"]), Sandbox(), playbook=memory)
    loop = DreamLoop(store, solver, FrontierTracker(store))
    with pytest.raises(UserError, match="must exclude"):
        run_curve(
            store=store,
            memory=memory,
            loop=loop,
            eval_solver=solver,
            heldout=heldout,
            checkpoints=1,
            cycles_per_checkpoint=1,
            minutes_per_checkpoint=None,
        )
