from __future__ import annotations

import itertools
import json
import re
import time
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from nightschool.agent import ChatPipeline
from nightschool.cli._diary import diary
from nightschool.config import Settings
from nightschool.dream.frontier import FrontierTracker
from nightschool.errors import ModelUnavailableError
from nightschool.llm import ScriptedModel
from nightschool.playbook import HashingEmbedder, SkillMemory
from nightschool.sandbox import Sandbox
from nightschool.selfhood import (
    NARRATIVE_SYSTEM_PROMPT,
    WAKE_UP_HEADER,
    Diary,
    PhaseFacts,
    consolidate,
    facts_since,
    narrative_problem,
    self_state,
    wake_up_prefix,
)
from nightschool.store import Store
from nightschool.trajectory import Outcome, Trajectory

SEEDS = itertools.count()
FIRST_PERSON = re.compile(r"\b(I|my|me)\b")
NARRATIVE = (
    "I spent the night practising sql and algo challenges. I learned a verified skill for "
    "sql.customer_totals, but algo.shortest_path still beats me and I want another go at it."
)


def run(
    tracker: FrontierTracker, cluster: str, template: str, *, passed: bool, attempts: int = 1
) -> None:
    seed = next(SEEDS)
    tracker.record_run(
        cluster=cluster,
        template=template,
        tier="starter",
        seed=seed,
        challenge_hash=f"{template}-{seed}",
        passed=passed,
        attempts=attempts,
    )


def practise(store: Store) -> None:
    """Four self-play runs, a verified skill, an unverified lesson, a retraction."""
    tracker = FrontierTracker(store)
    run(tracker, "algo", "algo.shortest_path", passed=False, attempts=3)
    run(tracker, "algo", "algo.two_sum", passed=True)
    run(tracker, "sql", "sql.customer_totals", passed=True, attempts=2)
    run(tracker, "sql", "sql.customer_totals", passed=True)
    memory = SkillMemory(store, HashingEmbedder())
    skill = memory.learn_skill(
        summary="Sum order totals per customer",
        code="def totals(rows):\n    return {}\n",
        domains=["sql"],
        source_trajectory_id="traj-skill",
        template="sql.customer_totals",
        tier="starter",
    )
    assert skill.lesson_id is not None
    memory.set_verified(skill.lesson_id, True, {"passes_with": 3, "passes_without": 1})
    memory.learn(
        trigger="When a graph has weighted edges",
        anti_pattern="Using breadth-first search",
        correct_pattern="Use Dijkstra with a heap",
        domains=["algo"],
        source="selfplay",
        source_trajectory_id="traj-lesson",
    )
    doomed = memory.learn(
        trigger="When sorting strings",
        anti_pattern="x",
        correct_pattern="Use sorted with a key",
        domains=["algo"],
        source="selfplay",
        source_trajectory_id="traj-doomed",
    )
    assert doomed.lesson_id is not None
    memory.retract(doomed.lesson_id, reason="user_correction")


# -- facts and entries ---------------------------------------------------------------


def test_entry_is_first_person_and_names_what_happened(store: Store) -> None:
    start = time.time() - 1
    practise(store)
    store.append_trajectory(
        Trajectory(task_kind="chat", outcome=Outcome.FAILED, failure_reason="wrong answer")
    )
    store.append_trajectory(Trajectory(task_kind="chat", outcome=Outcome.PASSED))
    with store.transaction() as conn:
        conn.execute(
            "INSERT INTO phase_runs(timestamp, phase, run_id, status, detail) "
            "VALUES (?, 'reflect', 'r1', 'failed', 'ModelUnavailableError: server down')",
            (time.time(),),
        )
        conn.execute(
            "INSERT INTO challenge_rejections(created_at, cluster, tier, source, kind) "
            "VALUES (?, 'sql', 'starter', 'llm', 'validator_accepts_wrong')",
            (time.time(),),
        )
    facts = facts_since(store, start)
    assert (facts.runs, facts.passes) == (4, 3)
    assert facts.verified_skill_templates == ("sql.customer_totals",)
    assert (facts.skills_new, facts.skills_verified) == (1, 1)
    assert (facts.lessons_new, facts.lessons_verified, facts.retracted) == (1, 0, 1)
    assert (facts.chat_turns, facts.chat_failed) == (2, 1)
    assert (facts.challenges_accepted, facts.challenges_rejected) == (0, 1)
    assert [p.phase for p in facts.phase_problems] == ["reflect"]

    entry = Diary(store).write_entry("dream", facts)
    assert entry is not None and entry.kind == "entry" and entry.phase == "dream"
    text = entry.text
    assert text.startswith("I practised 4 challenges (algo ×2, sql ×2) and passed 3.")
    assert "algo.shortest_path still beats me after 3 attempts." in text
    assert "I learned a verified skill for sql.customer_totals." in text
    assert "I wrote a lesson that is not verified yet." in text
    assert "I retracted a playbook entry that turned out wrong." in text
    assert "1 of my 2 chat turns failed." in text
    assert "My reflect phase failed (ModelUnavailableError: server down)." in text
    assert "Sum order totals" not in text and "Dijkstra" not in text  # counts and names only
    assert entry.record["facts"]["lessons_new"] == 1
    assert Diary(store).entries() == [entry]


def test_empty_period_writes_nothing(store: Store) -> None:
    practise(store)
    later = time.time() + 10
    facts = facts_since(store, later)
    assert facts.empty and facts.until >= later - 10
    assert Diary(store).write_entry("dream", facts) is None
    assert Diary(store).write_entry("dream", {}) is None
    assert Diary(store).entries() == []


def test_write_entry_takes_a_mapping_and_refuses_unknown_keys(store: Store) -> None:
    entry = Diary(store).write_entry(
        "dream",
        {
            "practice": [{"cluster": "sql", "runs": 2, "passes": 2}],
            "notes": ["my sandbox was slow tonight"],
        },
    )
    assert entry is not None
    assert (
        entry.text == "I practised 2 sql challenges and passed both. My sandbox was slow tonight."
    )
    with pytest.raises(ValueError, match="unknown phase fact"):
        Diary(store).write_entry("dream", {"mood": "great"})
    with pytest.raises(ValueError, match="phase"):
        Diary(store).write_entry(" ", PhaseFacts(chat_turns=1))


def test_entries_newest_first_with_filters(store: Store) -> None:
    diary_ = Diary(store)
    first = diary_.write_entry("dream", PhaseFacts(chat_turns=1))
    narrative = consolidate(store, None)
    second = diary_.write_entry("reflect", PhaseFacts(chat_turns=2, chat_failed=2))
    assert first is not None and narrative is not None and second is not None
    assert [e.id for e in diary_.entries()] == [second.id, narrative.id, first.id]
    assert [e.id for e in diary_.entries(kind="entry")] == [second.id, first.id]
    assert [e.id for e in diary_.entries(limit=1)] == [second.id]
    assert diary_.entries(since=second.timestamp.timestamp() + 5) == []
    assert diary_.latest_narrative() == narrative
    assert second.text == "2 of my 2 chat turns failed."
    with pytest.raises(ValueError, match="limit"):
        diary_.entries(limit=0)


# -- self-state ------------------------------------------------------------------------


def test_self_state_on_a_fresh_store_is_empty(store: Store) -> None:
    state = self_state(store)
    assert state.empty and state.strongest is None and state.streak == 0
    assert state.summary() == "I have not practised or learned anything yet."


def test_self_state_after_practice(store: Store) -> None:
    practise(store)
    store.append_trajectory(Trajectory(task_kind="chat"))
    state = self_state(store)
    assert state.strongest is not None and state.strongest.cluster == "sql"
    assert state.weakest is not None and state.weakest.cluster == "algo"
    assert (state.verified_skills, state.skills, state.verified_lessons, state.lessons) == (
        1,
        1,
        0,
        1,
    )
    assert state.practice_cycles == 4 and state.streak == 3
    assert state.last_practice is not None and state.last_user_turn is not None
    summary = state.summary()
    assert summary.startswith("I have practised 4 challenges")
    assert "I am strongest at sql (2 of my last 2 passed)" in summary
    assert "I passed my last 3 challenges in a row" in summary
    assert summary.count(". ") <= 1  # one or two sentences
    json.dumps(state.to_record())


def test_mastered_and_saturated_match_the_frontier_tracker(store: Store) -> None:
    tracker = FrontierTracker(store)
    for _ in range(5):
        run(tracker, "bash", "bash.count_lines", passed=True)
    run(tracker, "regex_parse", "regex_parse.dates", passed=False, attempts=3)
    run(tracker, "regex_parse", "regex_parse.dates", passed=True)
    state = self_state(store)
    expected = tracker.states()
    assert state.mastered == tuple(s.cluster for s in expected if s.mastered) == ("bash",)
    assert state.saturated == tuple(s.cluster for s in expected if s.saturated)
    assert "bash" in state.saturated and "I have mastered bash" in state.summary()


# -- consolidation ---------------------------------------------------------------------


def test_consolidate_stores_the_models_narrative(store: Store) -> None:
    start = time.time() - 1
    practise(store)
    entry = Diary(store).write_entry("dream", facts_since(store, start))
    assert entry is not None
    model = ScriptedModel([NARRATIVE], name="stub-model")
    narrative = consolidate(store, model)
    assert narrative is not None and narrative.kind == "narrative"
    assert narrative.text == NARRATIVE
    assert narrative.record["author"] == "model" and narrative.record["model"] == "stub-model"
    assert narrative.record["entry_ids"] == [entry.id] and narrative.record["problem"] is None
    [call] = model.calls
    assert call.messages[0]["content"] == NARRATIVE_SYSTEM_PROMPT
    assert entry.text in call.messages[1]["content"]
    assert Diary(store).latest_narrative() == narrative
    # Nothing new since: no second narrative.
    assert consolidate(store, ScriptedModel([NARRATIVE])) is None


@pytest.mark.parametrize(
    ("reply", "problem"),
    [
        ("", "too short"),
        ("ok", "too short"),
        (
            "The assistant practised some challenges and passed several of them overnight again.",
            "first",
        ),
        ("I practised 99 challenges tonight and passed every single one of them, I think.", "99"),
        ("I practised. " + "word " * 200, "too long"),
        (
            "```python\nprint('I did my best at every single challenge tonight, as always')\n```",
            "markup",
        ),
        ("# My diary\nI practised sql and algo tonight and learned a skill for sql.", "markup"),
    ],
)
def test_consolidate_falls_back_on_garbage(store: Store, reply: str, problem: str) -> None:
    start = time.time() - 1
    practise(store)
    Diary(store).write_entry("dream", facts_since(store, start))
    narrative = consolidate(store, ScriptedModel([reply]))
    assert narrative is not None and narrative.record["author"] == "fallback"
    assert problem in narrative.record["problem"]
    assert narrative.text.startswith("Since ") and FIRST_PERSON.search(narrative.text)
    assert len(narrative.text.split()) <= 120


def test_consolidate_refuses_a_reply_cut_at_the_token_cap() -> None:
    assert narrative_problem(NARRATIVE, NARRATIVE, "length") == "cut off at the token cap"
    assert narrative_problem(NARRATIVE, NARRATIVE) is None


def test_consolidate_without_a_model_writes_the_fallback(store: Store) -> None:
    assert consolidate(store, None) is None  # fresh home: nothing to tell
    practise(store)
    narrative = consolidate(store, None)  # no entries yet: the self-state alone
    assert narrative is not None and narrative.record["author"] == "fallback"
    assert narrative.text == self_state(store).summary()


def test_consolidate_redacts_and_lets_model_errors_through(store: Store) -> None:
    practise(store)
    leaky = NARRATIVE + " My owner is alice.smith@example.com and I like working for them."
    narrative = consolidate(store, ScriptedModel([leaky]))
    assert narrative is not None and narrative.record["author"] == "model"
    assert "alice.smith@example.com" not in narrative.text
    Diary(store).write_entry("dream", PhaseFacts(chat_turns=1))
    with pytest.raises(ModelUnavailableError):
        consolidate(store, ScriptedModel([ModelUnavailableError("down")]))
    assert Diary(store).latest_narrative() == narrative


# -- wake-up -----------------------------------------------------------------------------


def test_wake_up_prefix_is_empty_on_a_fresh_store(store: Store) -> None:
    assert wake_up_prefix(store) == ""


def test_wake_up_prefix_after_practice(store: Store) -> None:
    practise(store)
    prefix = wake_up_prefix(store)
    assert prefix.startswith(WAKE_UP_HEADER + "\n") and len(prefix) <= 400
    assert "I have practised 4 challenges" in prefix
    consolidate(store, ScriptedModel([NARRATIVE]))
    prefix = wake_up_prefix(store, max_chars=400)
    assert "I spent the night practising sql and algo challenges." in prefix
    assert len(prefix) <= 400
    for cap in (60, 120, 200):
        short = wake_up_prefix(store, max_chars=cap)
        assert short.startswith(WAKE_UP_HEADER) and len(short) <= cap
    assert wake_up_prefix(store, max_chars=20) == ""


# -- the chat pipeline -------------------------------------------------------------------


def make_pipeline(
    store: Store, tmp_path: Path, model: ScriptedModel, *, wake_up: bool = True
) -> ChatPipeline:
    return ChatPipeline(
        model=model,
        store=store,
        sandbox=Sandbox(),
        memory=None,
        reflector=None,
        workspace_root=tmp_path / "workspaces",
        wake_up=wake_up,
    )


def test_pipeline_puts_the_wake_up_prefix_in_the_system_prompt(
    store: Store, tmp_path: Path
) -> None:
    model = ScriptedModel(["Hello.", "Hello again.", "Quiet hello."])
    pipe = make_pipeline(store, tmp_path, model)
    quiet = make_pipeline(store, tmp_path, model, wake_up=False)
    try:
        fresh = pipe.handle([{"role": "user", "content": "hi"}], session_id="s")
        assert WAKE_UP_HEADER not in fresh.trajectory.system_prompt
        practise(store)
        after = pipe.handle([{"role": "user", "content": "hi"}], session_id="s")
        prompt = model.calls[1].messages[0]["content"]
        assert prompt == after.trajectory.system_prompt
        assert f"{WAKE_UP_HEADER}\nI have practised 4 challenges" in prompt
        assert "wake_up" in after.timings
        off = quiet.handle([{"role": "user", "content": "hi"}], session_id="s")
        assert WAKE_UP_HEADER not in off.trajectory.system_prompt
    finally:
        pipe.close()
        quiet.close()


# -- the CLI -----------------------------------------------------------------------------


def cli() -> typer.Typer:
    app = typer.Typer()
    app.command()(diary)

    @app.command()
    def other() -> None:  # a second command keeps `diary` a named subcommand
        pass

    return app


def test_cli_on_a_fresh_home_is_friendly() -> None:
    result = CliRunner().invoke(cli(), ["diary"])
    assert result.exit_code == 0, result.output
    assert "no database yet" in result.output


def test_cli_shows_state_and_entries() -> None:
    path = Settings().database_path()
    with Store.open(path) as home:
        start = time.time() - 1
        practise(home)
        Diary(home).write_entry("dream", facts_since(home, start))
        consolidate(home, ScriptedModel([NARRATIVE]))
    runner = CliRunner()
    shown = runner.invoke(cli(), ["diary", "--limit", "5"], env={"COLUMNS": "200"})
    assert shown.exit_code == 0, shown.output
    assert "I have practised 4 challenges" in shown.output
    assert "I practised 4 challenges" in shown.output and "narrative" in shown.output
    narratives = runner.invoke(cli(), ["diary", "--narrative"], env={"COLUMNS": "200"})
    assert "I spent the night" in narratives.output and "dream" not in narratives.output
    as_json = runner.invoke(cli(), ["diary", "--json"])
    assert as_json.exit_code == 0, as_json.output
    lines = [json.loads(line) for line in as_json.output.splitlines()]
    assert [line["kind"] for line in lines] == ["self_state", "narrative", "entry"]
    assert lines[0]["practice_cycles"] == 4 and lines[2]["phase"] == "dream"
