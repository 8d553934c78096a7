"""The verification budget: comparisons held to a share of dream time, candidates that wait."""

from __future__ import annotations

import random
import shutil
import time
from collections.abc import Iterator

import pytest
from tests.lessons._scripted import learner, lesson_dream

from nightschool.challenges import Challenge, render
from nightschool.dream import DreamLoop, FrontierTracker
from nightschool.dream.budget import (
    LEDGER_WINDOW_S,
    PRIOR_COMPARISON_S,
    Ledger,
    VerificationBudget,
    earlier_dreams,
    record_dream_time,
)
from nightschool.dream.loop import SkillOutcome
from nightschool.dream.queue import PendingLesson
from nightschool.lessons.extraction import CandidateLesson
from nightschool.lessons.verify import PairedVerifier
from nightschool.llm import ScriptedModel
from nightschool.playbook import HashingEmbedder, SkillMemory, default_embedder
from nightschool.sandbox import Sandbox
from nightschool.solver import Solver
from nightschool.store import Store

needs_bwrap = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap not installed")


class Clock:
    """Real seconds plus whatever a test adds (practice time that did not happen)."""

    def __init__(self) -> None:
        self.offset = 0.0

    def __call__(self) -> float:
        return time.perf_counter() + self.offset


def test_a_share_outside_zero_to_one_is_refused() -> None:
    for share in (0.0, -0.1, 1.5):
        with pytest.raises(ValueError, match="share"):
            VerificationBudget(share)


def test_a_comparison_runs_only_when_its_expected_cost_fits_the_share() -> None:
    now = [100.0]
    budget = VerificationBudget(0.25, clock=lambda: now[0])
    budget.start()
    now[0] = 130.0  # 30 s of practice: 0 + 15 <= 0.25 * (30 + 15) is false
    assert budget.expected_s == PRIOR_COMPARISON_S and not budget.allows()
    now[0] = 145.0  # 45 s: 15 <= 15
    assert budget.allows()
    with budget.timed():
        now[0] = 165.0  # a 20 s comparison
    assert (budget.spent_s, budget.comparisons, budget.expected_s) == (20.0, 1, 20.0)
    assert budget.used_share() == pytest.approx(20 / 65)
    assert not budget.allows()  # 20 + 20 > 0.25 * (65 + 20)
    now[0] = 240.0  # 140 s: 40 <= 0.25 * 160
    assert budget.allows()
    budget.start()  # a second start changes nothing
    assert budget.elapsed_s == 140.0


def test_a_comparison_that_raises_is_still_charged() -> None:
    now = [0.0]
    budget = VerificationBudget(0.5, clock=lambda: now[0])
    budget.start()
    with pytest.raises(RuntimeError), budget.timed():
        now[0] = 7.0
        raise RuntimeError("the model server went away")
    assert (budget.spent_s, budget.comparisons) == (7.0, 1)


def test_a_share_of_one_never_makes_a_candidate_wait() -> None:
    now = [0.0]
    budget = VerificationBudget(1.0, clock=lambda: now[0])
    budget.start()
    assert budget.allows()
    with budget.timed():
        now[0] = 50.0
    assert budget.allows()


@needs_bwrap
def test_a_skill_over_budget_waits_unverified_then_a_later_cycle_verifies_it(
    store: Store, rendered: dict[str, Challenge]
) -> None:
    memory = SkillMemory(store, default_embedder())
    try:
        solver = Solver(learner(rendered), Sandbox(), playbook=memory)
        verifier = PairedVerifier(solver, store=store, k=6)
        loop = DreamLoop(
            store,
            solver,
            FrontierTracker(store),
            rng=random.Random(1),
            verifier=verifier,
            verify_share=0.25,
        )
        clock = Clock()
        assert loop.budget is not None
        loop.budget = VerificationBudget(0.25, clock=clock)
        first = loop.run_cycle(cluster="python_general", tier="starter")
        assert first.passed and first.skill is not None and first.skill.waits
        assert first.skill.comparison is None
        assert first.skill.reason.startswith("a comparison (about 15 s) would take verification")
        waiting = memory.get(str(first.skill.skill_id))
        assert waiting is not None and not waiting.verified
        assert "verification" not in waiting.extra  # what idle time's skills phase looks for
        assert [w.skill_id for w in loop.waiting.items] == [first.skill.skill_id]
        assert not list(store.iter_trajectories(task_kind="verification"))  # nothing solved for it

        clock.offset += 600.0  # ten minutes of practice make room
        second = loop.run_cycle(cluster="python_general", tier="starter")
        caught = [o for o in second.caught_up if getattr(o, "skill_id", None)]
        assert [o.skill_id for o in caught] == [first.skill.skill_id]
        assert caught[0].verified and caught[0].comparison is not None
        verified = memory.get(str(first.skill.skill_id))
        assert verified is not None and verified.verified
        assert verified.extra["verification"]["comparison"]["method"] == ("paired-fresh-renderings")
        assert not loop.waiting and loop.budget.comparisons >= 1
    finally:
        memory.close()


@pytest.fixture
def lesson_loop(store: Store, rendered: dict[str, Challenge]) -> Iterator[DreamLoop]:
    """A dream loop whose scripted model fails until a lesson is shown, then passes."""
    memory = SkillMemory(store, embedder=HashingEmbedder())
    try:
        yield lesson_dream(store, memory, rendered)
    finally:
        memory.close()


@needs_bwrap
def test_a_waiting_lesson_is_not_written_until_its_comparison_runs(
    store: Store, lesson_loop: DreamLoop
) -> None:
    loop, memory = lesson_loop, lesson_loop.solver.playbook
    assert memory is not None
    clock = Clock()
    loop.budget = VerificationBudget(0.25, clock=clock)
    first = loop.run_cycle(cluster="data_analysis", tier="basic")
    assert not first.passed and first.lesson is not None
    assert first.lesson.status == "waiting" and first.lesson.candidate is not None
    assert memory.count(kind="lesson") == 0  # a waiting candidate is never shown
    assert not list(store.iter_trajectories(task_kind="verification"))

    clock.offset += 600.0
    second = loop.run_cycle(cluster="data_analysis", tier="basic")
    # the second cycle saw no lesson either and failed; its own candidate queues behind
    # the older one, and both fit after it: oldest first
    assert second.lesson is not None and second.lesson.status == "waiting"
    assert [o.status for o in second.caught_up] == ["written", "reinforced"]
    assert all(o.comparison["promote"] is True for o in second.caught_up)
    assert memory.count(kind="lesson") == 1 and not loop.waiting


@needs_bwrap
def test_without_a_budget_every_candidate_is_verified_at_once(lesson_loop: DreamLoop) -> None:
    loop = lesson_loop
    cycle = loop.run_cycle(cluster="data_analysis", tier="basic")
    assert loop.budget is None and not loop.waiting and not cycle.caught_up
    assert cycle.lesson is not None and cycle.lesson.status == "written"


def test_waiting_skills_are_verified_before_waiting_lessons(store: Store) -> None:
    """Unit test of the queue's order, with the comparisons replaced by recorders."""
    solver = Solver(ScriptedModel(lambda _m: ""), Sandbox())
    loop = DreamLoop(store, solver, FrontierTracker(store), verify_share=0.25)
    now = [0.0]
    loop.budget = VerificationBudget(0.25, clock=lambda: now[0])
    loop.budget.start()
    compared: list[str] = []

    def verify_skill(skill_id: str, _prompt: str, _notify: object) -> SkillOutcome:
        compared.append(skill_id)
        now[0] += 10.0  # each comparison takes 10 s
        return SkillOutcome("written", skill_id, comparison={"k": 6})

    class Extractor:
        def settle(self, challenge: Challenge, _candidate: object, **_original: object) -> str:
            compared.append(challenge.template)
            now[0] += 10.0
            return "settled"

    loop._verify_skill = verify_skill  # type: ignore[method-assign]
    loop.extractor = Extractor()  # type: ignore[assignment]
    a, b = render("algo.top_k", "starter", 1), render("sql.customer_totals", "starter", 2)
    candidate = CandidateLesson("when x", "", "do y", ["algo"], 0.5)
    result = solver.solve(a)  # a scripted failure, only carried along
    loop.waiting.add_lesson(PendingLesson.of(a, candidate, result))
    loop.waiting.add_skill("S-2", b)
    loop.waiting.add_skill("S-3", a)
    assert not loop.budget.allows()
    assert loop._must_wait("skill") and loop._must_wait("lesson")
    now[0] = 1000.0
    assert loop.budget.allows()
    assert loop._must_wait("lesson")  # the budget has room, but skills go first
    assert loop._must_wait("skill")  # and older skills before a new one
    done: list[object] = []
    loop._catch_up(done, lambda _m: None)
    assert compared == ["S-2", "S-3", "algo.top_k"] and not loop.waiting
    assert not loop._must_wait("skill")  # nothing ahead and room left
    now[0] = 1030.0  # 30 s spent of 1030: a 10 s comparison fits 25%
    assert loop.budget.allows()


def test_the_share_comes_from_the_flag_or_the_environment_and_is_checked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import typer
    from typer.testing import CliRunner

    from nightschool.cli import app
    from nightschool.config import Settings
    from nightschool.errors import UserError

    monkeypatch.delenv("NIGHTSCHOOL_VERIFY_SHARE", raising=False)
    assert Settings().verify_share == 0.25  # issue 27's target, on by default
    monkeypatch.setenv("NIGHTSCHOOL_VERIFY_SHARE", "0.3")
    assert Settings().verify_share == 0.3
    assert Settings(verify_share=0.5).verify_share == 0.5  # the flag wins
    monkeypatch.setenv("NIGHTSCHOOL_VERIFY_SHARE", "1.5")
    with pytest.raises(UserError, match="NIGHTSCHOOL_VERIFY_SHARE"):
        Settings()
    dream = typer.main.get_command(app).commands["dream"]  # type: ignore[attr-defined]
    [option] = [p for p in dream.params if p.name == "verify_share"]
    assert option.opts == ["--verify-share"] and "NIGHTSCHOOL_VERIFY_SHARE" in option.help
    shown = CliRunner().invoke(app, ["dream", "--help"], env={"COLUMNS": "400"})
    # escaped: Rich took an unescaped "[default: ...]" for markup and printed nothing of it
    assert "[default: NIGHTSCHOOL_VERIFY_SHARE, else 0.25]" in shown.output, shown.output
    env = CliRunner().invoke(app, ["dream"])  # refused before any model or database is opened
    assert env.exit_code == 2 and "NIGHTSCHOOL_VERIFY_SHARE must be above 0" in env.output


def test_a_cycle_that_hits_a_fault_leaves_the_waiting_candidates_waiting(store: Store) -> None:
    from nightschool.errors import ModelUnavailableError

    model = ScriptedModel([ModelUnavailableError("connection refused")])
    loop = DreamLoop(store, Solver(model, Sandbox()), FrontierTracker(store), verify_share=0.25)
    now = [0.0]
    loop.budget = VerificationBudget(0.25, clock=lambda: now[0])
    loop.budget.start()
    now[0] = 1000.0  # plenty of room
    compared: list[str] = []
    loop._verify_skill = lambda skill_id, *_: compared.append(skill_id)  # type: ignore[method-assign]
    item = loop.waiting.add_skill("S-1", render("algo.top_k", "starter", 1))
    with pytest.raises(ModelUnavailableError):
        loop.run_cycle(cluster="algo", tier="starter")
    assert loop.waiting.items == [item] and compared == []  # none against a failing server


def test_earlier_dreams_lend_room_or_owe_it() -> None:
    now = [0.0]
    roomy = VerificationBudget(0.25, clock=lambda: now[0], earlier=Ledger(300.0, 20.0, 2))
    roomy.start()
    assert roomy.expected_s == 10.0  # the earlier comparisons' mean
    assert roomy.allows()  # 20 + 10 <= 0.25 * (300 + 10): room at the first cycle
    owing = VerificationBudget(0.25, clock=lambda: now[0], earlier=Ledger(100.0, 70.0, 4))
    owing.start()
    now[0] = 200.0  # 70 + 17.5 > 0.25 * (300 + 17.5) although this run verified nothing
    assert not owing.allows() and owing.used_share() == 0.0


def test_unrecorded_hands_out_each_stretch_of_the_run_once() -> None:
    now = [0.0]
    budget = VerificationBudget(0.5, clock=lambda: now[0], earlier=Ledger(999.0, 9.0, 1))
    budget.start()
    now[0] = 40.0
    with budget.timed():
        now[0] = 52.0
    assert budget.unrecorded() == Ledger(52.0, 12.0, 1)  # this run only, not `earlier`
    now[0] = 70.0
    assert budget.unrecorded() == Ledger(18.0, 0.0, 0)
    assert budget.unrecorded() == Ledger(0.0, 0.0, 0)


def test_the_ledger_counts_the_last_day_only(store: Store) -> None:
    assert earlier_dreams(store) == Ledger()
    record_dream_time(store, "dream-a", Ledger(120.0, 30.0, 2))
    record_dream_time(store, "dream-b", Ledger(60.0, 0.0, 0))
    record_dream_time(store, "dream-b", Ledger(0.0, 0.0, 0))  # nothing happened: no row
    with store.transaction() as conn:  # a dream of two days ago
        conn.execute(
            "INSERT INTO verification_ledger (ended_at, session_id, elapsed_s, verification_s, "
            "comparisons) VALUES (?, 'dream-old', 5000, 4000, 100)",
            (time.time() - 2 * LEDGER_WINDOW_S,),
        )
    assert earlier_dreams(store) == Ledger(180.0, 30.0, 2)
    assert store.query("SELECT COUNT(*) FROM verification_ledger") == [(3,)]


@needs_bwrap
def test_a_short_dream_verifies_with_the_room_earlier_dreams_left(
    store: Store, lesson_loop: DreamLoop
) -> None:
    record_dream_time(store, "dream-earlier", Ledger(300.0, 0.0, 0))  # 5 minutes, no comparison
    loop = lesson_loop
    loop.budget = VerificationBudget(0.25)
    cycle = loop.run_cycle(cluster="data_analysis", tier="basic")
    # this run is seconds old, but the day's dreaming leaves room: verified at once
    assert cycle.lesson is not None and cycle.lesson.status == "written"
    assert loop.budget.earlier == Ledger(300.0, 0.0, 0) and loop.budget.comparisons == 1
    [(elapsed, spent, comparisons)] = store.query(
        "SELECT elapsed_s, verification_s, comparisons FROM verification_ledger "
        "WHERE session_id = ?",
        (loop.session_id,),
    )
    assert comparisons == 1 and 0 < spent <= elapsed  # the cycle, written for the next run
