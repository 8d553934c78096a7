"""The verification queue: what waits is kept in the store and a later dream verifies it."""

from __future__ import annotations

import shutil
from collections.abc import Iterator

import pytest
from tests.lessons._scripted import lesson_dream

from nightschool.challenges import Challenge, render
from nightschool.dream import queue as queue_module
from nightschool.dream.queue import PENDING_LESSONS_CAP, PendingLesson, VerificationQueue
from nightschool.lessons.extraction import CandidateLesson
from nightschool.lessons.skills import learn_skill
from nightschool.playbook import HashingEmbedder, SkillMemory
from nightschool.store import Store

needs_bwrap = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap not installed")

CANDIDATE = CandidateLesson("when x happens", "doing y", "do z instead", ["algo"], 0.5)


def pending_rows(store: Store) -> list[tuple[object, ...]]:
    return store.query("SELECT template, seed, passed, attempts FROM pending_lessons ORDER BY seed")


@pytest.fixture
def memory(store: Store) -> Iterator[SkillMemory]:
    playbook = SkillMemory(store, embedder=HashingEmbedder())
    yield playbook
    playbook.close()


@needs_bwrap
def test_a_lesson_left_waiting_is_kept_and_the_next_dream_verifies_it(
    store: Store, memory: SkillMemory, rendered: dict[str, Challenge]
) -> None:
    first = lesson_dream(store, memory, rendered, verify_share=0.25)
    cycle = first.run_cycle(cluster="data_analysis", tier="basic")
    # a cycle of a scripted model takes well under the 45 s that make room for a 15 s comparison
    assert cycle.lesson is not None and cycle.lesson.status == "waiting"
    assert first.resumed == (0, 0) and len(first.waiting) == 1
    [(template, seed, passed, attempts)] = pending_rows(store)
    assert (template, seed, passed, attempts) == (cycle.template, cycle.seed, 0, cycle.attempts)
    assert memory.count(kind="lesson") == 0  # kept aside, never shown
    del first  # the run ends: nothing more is written

    later = lesson_dream(store, memory, rendered, verify_share=1.0)  # 1: every candidate at once
    again = later.run_cycle(cluster="data_analysis", tier="basic")
    assert later.resumed == (1, 0)
    # the earlier candidate goes first; this cycle's own (the same lesson) queues behind it
    assert [o.status for o in again.caught_up] == ["written", "reinforced"]
    assert again.caught_up[0].comparison["original"] == {"passed": False, "attempts": 3}
    assert memory.count(kind="lesson") == 1 and not later.waiting.items
    assert pending_rows(store) == []  # settled, so gone


def test_a_dream_without_a_budget_leaves_the_queue_alone(
    store: Store, memory: SkillMemory, rendered: dict[str, Challenge]
) -> None:
    VerificationQueue(store).add_lesson(
        PendingLesson("P-1", render("algo.top_k", "starter", 5), CANDIDATE, False, 3, "T-1")
    )
    loop = lesson_dream(store, memory, rendered, verify_share=0.25)
    loop.budget = None  # `verify_share=None`: verified at once, nothing loaded
    assert loop.resumed is None
    assert VerificationQueue(store).load(None, lessons=False) == (0, 0)
    assert len(pending_rows(store)) == 1  # a run that extracts no lessons does not touch them


def test_load_keeps_the_newest_lessons_and_skips_held_out_templates(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    ticks = iter(range(1, 1000))
    monkeypatch.setattr(queue_module.time, "time", lambda: float(next(ticks)))
    writer = VerificationQueue(store)
    for seed in range(PENDING_LESSONS_CAP + 2):
        challenge = render("algo.top_k", "starter", seed)
        writer.add_lesson(PendingLesson(f"P-{seed}", challenge, CANDIDATE, False, 2, f"T-{seed}"))
    held_out = render("sql.customer_totals", "starter", 7)
    writer.add_lesson(PendingLesson("P-held", held_out, CANDIDATE, True, 2, "T-held"))

    reader = VerificationQueue(store, exclude_templates={"sql.customer_totals"})
    loaded, dropped = reader.load(None)
    assert (loaded, dropped) == (PENDING_LESSONS_CAP - 1, 3)  # the cap counts the held-out row
    seeds = [w.lesson.challenge.seed for w in reader.items if w.lesson]
    assert seeds == list(range(3, PENDING_LESSONS_CAP + 2))  # the three oldest are gone
    assert reader.items[0].lesson is not None and reader.items[0].lesson.candidate == CANDIDATE
    assert reader.load(None) == (0, 0)  # loading again adds nothing twice
    assert store.query("SELECT COUNT(*) FROM pending_lessons WHERE id = 'P-held'") == [(1,)]

    reader.done(reader.items[0])
    assert store.query("SELECT COUNT(*) FROM pending_lessons WHERE id = 'P-3'") == [(0,)]


def test_a_row_that_no_longer_renders_is_dropped(store: Store) -> None:
    VerificationQueue(store).add_lesson(
        PendingLesson("P-1", render("algo.top_k", "starter", 1), CANDIDATE, False, 3, "T-1")
    )
    with store.transaction() as conn:
        conn.execute("UPDATE pending_lessons SET template = 'algo.retired_template'")
    assert VerificationQueue(store).load(None) == (0, 1)
    assert pending_rows(store) == []


def test_skills_without_a_verdict_are_loaded_skills_with_one_are_not(
    store: Store, memory: SkillMemory
) -> None:
    waiting = render("algo.top_k", "starter", 1)
    judged = render("sql.customer_totals", "starter", 2)
    held_out = render("python_general.tag_index", "starter", 3)
    ids = {}
    for challenge in (waiting, judged, held_out):
        learned = learn_skill(
            memory,
            challenge,
            challenge.reference_solution,
            source_trajectory_id=f"T-{challenge.seed}",
        )
        assert learned.lesson_id is not None
        ids[challenge.template] = learned.lesson_id
    memory.set_verified(ids[judged.template], False, {"verdict": "not promoted"})

    queue = VerificationQueue(store, exclude_templates={held_out.template})
    assert queue.load(memory, lessons=False) == (1, 0)
    [item] = queue.items
    assert (item.kind, item.skill_id, item.template) == (
        "skill",
        ids[waiting.template],
        waiting.template,
    )
    assert VerificationQueue(store).load(None) == (0, 0)


def test_a_pending_lesson_is_stored_redacted(store: Store) -> None:
    leaky = CandidateLesson(
        "when a key like AKIAIOSFODNN7EXAMPLE appears",
        "mailing bob@example.com",
        "do z",
        ["algo"],
        0.5,
    )
    VerificationQueue(store).add_lesson(
        PendingLesson("P-1", render("algo.top_k", "starter", 1), leaky, False, 3, "T-1")
    )
    [(stored,)] = store.query("SELECT candidate FROM pending_lessons")
    assert "AKIAIOSFODNN7EXAMPLE" not in stored and "bob@example.com" not in stored
    queue = VerificationQueue(store)
    queue.load(None)
    [item] = queue.items
    assert item.lesson is not None and "<REDACTED_API_KEY>" in item.lesson.candidate.trigger
