from __future__ import annotations

import logging
import re
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from nightschool.agent import ChatPipeline, reply_fingerprint, session_dir_name
from nightschool.agent import pipeline as pipeline_module
from nightschool.errors import ModelUnavailableError, SandboxFaultError, UserError
from nightschool.feedback import STEP_LIMIT_MARKER
from nightschool.lessons.reflection import REFLECTION_SYSTEM_PROMPT, Reflector
from nightschool.lessons.sink import PlaybookSink
from nightschool.llm import Message, ScriptedModel
from nightschool.playbook import PLAYBOOK_HEADER, HashingEmbedder, SkillMemory
from nightschool.sandbox import ExecResult
from nightschool.store import Store
from nightschool.trajectory import Outcome

REQUEST_1 = "Reply with three words exactly: kangaroo trampoline lighthouse"
REPLY_1 = "Kangaroo trampoline lighthouse are three lovely words, here you go."
REQUEST_2 = "no, reply with three words exactly: kangaroo trampoline metronome"
REFLECTION = (
    "DIAGNOSIS: The reply added extra words instead of giving exactly three words.\n"
    "REVISED PLAN:\n1. Count the words the user asked for.\n"
    "2. Reply with exactly those words and nothing else.\n"
)
CONFIRMED = "VERDICT: CONFIRMED\nCONFIDENCE: 0.9\nNOTE: The output supports the reply."


def tool(name: str, args: str) -> str:
    return f'```tool\n{{"name": "{name}", "arguments": {args}}}\n```'


def user(text: str) -> Message:
    return {"role": "user", "content": text}


def assistant(text: str) -> Message:
    return {"role": "assistant", "content": text}


@pytest.fixture
def memory(store: Store) -> SkillMemory:
    return SkillMemory(store, HashingEmbedder())


@pytest.fixture
def make(make_pipeline: Callable[..., ChatPipeline]) -> Callable[..., ChatPipeline]:
    return make_pipeline


def agent_then_reflect(agent: Callable[[Sequence[Message]], str]) -> Callable[..., str]:
    """One scripted model for the agent and the Reflector (told apart by the system prompt)."""

    def reply(messages: Sequence[Message]) -> str:
        if messages[0]["content"] == REFLECTION_SYSTEM_PROMPT:
            return REFLECTION
        return agent(messages)

    return reply


# -- one turn ----------------------------------------------------------------------


def test_plain_turn_is_recorded(make: Callable[..., ChatPipeline], store: Store) -> None:
    model = ScriptedModel(["Hello there."])
    result = make(model).handle([user("hi")], session_id="s1")
    assert result.reply == "Hello there."
    stored = store.get_trajectory(result.trajectory.id)
    assert stored is not None and stored == result.trajectory
    assert (stored.task_kind, stored.session_id, stored.user_request) == ("chat", "s1", "hi")
    assert stored.outcome == Outcome.UNKNOWN and stored.n_steps == 1
    assert "```tool" in stored.system_prompt and stored.final_response == "Hello there."
    assert stored.extra["verifier"] == {"skipped": "no tool calls"}
    assert set(result.timings) >= {"correction_check", "retrieval", "model", "tools"}
    assert set(result.timings) >= {"verifier", "record", "total"}
    assert result.correction is None and result.lessons_shown == ()
    assert len(model.calls) == 1


def test_client_sampling_is_used_within_the_operators_cap(
    make: Callable[..., ChatPipeline],
) -> None:
    model = ScriptedModel(["a", "b", "c"])
    pipe = make(model, max_tokens=100, temperature=0.2)
    first = pipe.handle([user("hi")], session_id="s", temperature=0.9, max_tokens=40)
    pipe.handle([user("hi")], session_id="s", max_tokens=5000)  # above the cap
    third = pipe.handle([user("hi")], session_id="s")
    sampling = [(call.temperature, call.max_tokens) for call in model.calls]
    assert sampling == [(0.9, 40), (0.2, 100), (0.2, 100)]
    assert (first.trajectory.temperature, third.trajectory.temperature) == (0.9, 0.2)
    with pytest.raises(UserError, match="temperature"):
        pipe.handle([user("hi")], session_id="s", temperature=3.0)


def test_task_kind_and_client_system_prompt(make: Callable[..., ChatPipeline]) -> None:
    model = ScriptedModel(["ok"])
    messages = [{"role": "system", "content": "Answer in French."}, user("hi")]
    result = make(model).handle(messages, session_id="s", task_kind="eval")  # type: ignore[arg-type]
    assert result.trajectory.task_kind == "eval"
    assert "Answer in French." in model.calls[0].messages[0]["content"]
    assert [m["role"] for m in model.calls[0].messages] == ["system", "user"]


def test_tool_turn_runs_in_the_sandbox_and_is_verified(
    make: Callable[..., ChatPipeline], tmp_path: Path
) -> None:
    model = ScriptedModel(
        [tool("run_python", '{"code": "print(6 * 7)"}'), "The answer is 42.", CONFIRMED]
    )
    pipe = make(model)
    result = pipe.handle([user("what is 6*7? use python")], session_id="calc")
    [call] = result.tool_calls
    assert call.name == "run_python" and "42" in (call.result or "") and call.error is None
    assert result.trajectory.extra["verifier"]["verdict"] == "CONFIRMED"
    assert result.trajectory.outcome == Outcome.UNKNOWN
    verifier_prompt = model.calls[2].messages[-1]["content"]
    assert "The answer is 42." in verifier_prompt and "print(6 * 7)" in verifier_prompt
    assert result.tokens_out == result.trajectory.tokens_out > 0
    assert (pipe.workspace_root / "calc").is_dir()


def test_workspace_persists_per_session_and_is_isolated(
    make: Callable[..., ChatPipeline],
) -> None:
    write = tool("write_file", '{"path": "note.txt", "content": "from a"}')
    read = tool("read_file", '{"path": "note.txt"}')
    model = ScriptedModel([write, "saved", CONFIRMED, read, "read it", CONFIRMED, read, "?"])
    pipe = make(model, verify=True)
    pipe.handle([user("save")], session_id="a")
    again = pipe.handle([user("read")], session_id="a")
    assert again.tool_calls[0].result == "from a"
    other = pipe.handle([user("read")], session_id="b")
    assert "no such file" in (other.tool_calls[0].error or "")


def test_session_ids_are_sanitised() -> None:
    assert session_dir_name("abc-1_2") == "abc-1_2"
    for hostile in ("../../etc", "/abs", "a/b", "", "x" * 100):
        name = session_dir_name(hostile)
        assert "/" not in name and ".." not in name and 0 < len(name) <= 60
    assert session_dir_name("a/b") != session_dir_name("a_b")


@pytest.mark.parametrize(
    "messages",
    [[], [assistant("hi")], [{"role": "tool", "content": "x"}], [{"role": "user", "content": 3}]],
)
def test_malformed_messages_are_user_errors(
    make: Callable[..., ChatPipeline], messages: list[Any]
) -> None:
    with pytest.raises(UserError):
        make(ScriptedModel(["x"])).handle(messages, session_id="s")


# -- playbook ----------------------------------------------------------------------


def test_playbook_lessons_are_shown_and_exposure_recorded(
    make: Callable[..., ChatPipeline], memory: SkillMemory, store: Store
) -> None:
    learned = memory.learn(
        trigger="count lines of code in a project",
        anti_pattern="replying with a number when code was asked for",
        correct_pattern="give the shell command",
        domains=["bash"],
        source="reflection",
    )
    request = [user("how do I count lines of code in my project?")]
    unverified = make(ScriptedModel(["Use wc -l."]), memory=memory).handle(request, session_id="u")
    assert unverified.lessons_shown == ()  # chat is shown verified entries only
    assert memory.set_verified(str(learned.lesson_id), True, {"with": [1], "without": [0]})
    model = ScriptedModel(["Use wc -l."])
    result = make(model, memory=memory).handle(request, session_id="s")
    assert result.lessons_shown == (learned.lesson_id,)
    system = model.calls[0].messages[0]["content"]
    assert PLAYBOOK_HEADER in system and str(learned.lesson_id) in system
    assert result.trajectory.extra["lessons_shown"] == [learned.lesson_id]
    rows = store.query(
        "SELECT lesson_id, trajectory_id FROM lesson_exposures WHERE trajectory_id = ?",
        (result.trajectory.id,),
    )
    assert rows == [(learned.lesson_id, result.trajectory.id)]
    lesson = memory.get(str(learned.lesson_id))
    assert lesson is not None and lesson.times_shown == 1


def test_without_memory_there_is_no_playbook(make: Callable[..., ChatPipeline]) -> None:
    model = ScriptedModel(["ok"])
    make(model, memory=None).handle([user("count lines of code")], session_id="s")
    assert PLAYBOOK_HEADER not in model.calls[0].messages[0]["content"]


# -- failure detection -------------------------------------------------------------


def test_step_limit_fails_the_turn_by_heuristic(make: Callable[..., ChatPipeline]) -> None:
    model = ScriptedModel(lambda _m: tool("list_files", "{}"))
    result = make(model, max_steps=3).handle([user("loop forever")], session_id="s")
    assert STEP_LIMIT_MARKER in result.reply
    assert result.trajectory.outcome == Outcome.FAILED
    assert result.trajectory.extra["failure_source"] == "heuristic"
    assert result.trajectory.extra["verifier"] == {"skipped": "turn already failed"}
    assert len(model.calls) == 3  # no verifier call


def test_confident_refutation_fails_the_turn_and_retracts_its_lessons(
    make: Callable[..., ChatPipeline],
    memory: SkillMemory,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    turn_id = "f" * 32
    monkeypatch.setattr(pipeline_module, "new_id", lambda: turn_id)
    poisoned = memory.learn(
        trigger="an optimization analysis of project size",
        anti_pattern="",
        correct_pattern="report the line count as a number",
        domains=["bash"],
        source="reflection",
        source_trajectory_id=turn_id,
    )
    assert poisoned.status == "written"

    def judge(messages: Sequence[Message]) -> str:
        prompt = messages[-1]["content"]
        if "AGENT'S RESPONSE" not in prompt:
            last = messages[-1]["content"]
            if last.startswith("TOOL RESULT"):
                return "The project has 1,623 lines of code."
            return tool("run_shell", '{"command": "echo 1623"}')
        response = re.search(r"AGENT'S RESPONSE:\n(.*?)\n\n", prompt, re.DOTALL)
        assert response is not None and "just give me the code" in prompt
        if "`" not in response.group(1):
            return "VERDICT: REFUTED\nCONFIDENCE: 0.9\nNOTE: The user asked for code, not a number."
        return CONFIRMED

    result = make(ScriptedModel(judge), memory=memory).handle(
        [user("how many lines of code is a project? just give me the code")], session_id="s"
    )
    t = result.trajectory
    assert t.id == turn_id and t.outcome == Outcome.FAILED
    assert t.extra["failure_source"] == "verifier"
    assert t.failure_reason is not None and "asked for code" in t.failure_reason
    assert t.extra["verifier"]["verdict"] == "REFUTED"
    assert t.extra["lessons_retracted"] == 1
    assert memory.get(str(poisoned.lesson_id)) is None


def test_verifier_outage_keeps_the_reply(make: Callable[..., ChatPipeline]) -> None:
    model = ScriptedModel([tool("list_files", "{}"), "empty", ModelUnavailableError("down")])
    result = make(model).handle([user("list")], session_id="s")
    assert result.reply == "empty"
    assert result.trajectory.extra["verifier"]["skipped"].startswith("unavailable")
    assert result.trajectory.outcome == Outcome.UNKNOWN


# -- infrastructure faults ---------------------------------------------------------


def test_model_down_mid_turn_is_recorded_then_raised(
    make: Callable[..., ChatPipeline], store: Store
) -> None:
    model = ScriptedModel([tool("list_files", "{}"), ModelUnavailableError("server gone")])
    with pytest.raises(ModelUnavailableError):
        make(model).handle([user("list my files")], session_id="s")
    [t] = list(store.iter_trajectories())
    assert t.outcome == Outcome.UNKNOWN and t.failure_reason is None
    assert t.infrastructure_error == "ModelUnavailableError: server gone"
    assert [c.name for c in t.tool_calls] == ["list_files"]


def test_sandbox_fault_is_recorded_then_raised(
    make: Callable[..., ChatPipeline], store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    pipe = make(ScriptedModel([tool("run_shell", '{"command": "ls"}')]))

    def broken(*args: object, **kwargs: object) -> ExecResult:
        raise SandboxFaultError("bubblewrap failed: no user namespaces")

    monkeypatch.setattr(pipe.sandbox, "run_in", broken)
    with pytest.raises(SandboxFaultError):
        pipe.handle([user("ls")], session_id="s")
    [t] = list(store.iter_trajectories())
    assert t.infrastructure_error is not None and "no user namespaces" in t.infrastructure_error
    assert t.outcome == Outcome.UNKNOWN


# -- concurrency -------------------------------------------------------------------


def test_concurrent_turns_are_complete_and_not_interleaved(
    make: Callable[..., ChatPipeline], store: Store
) -> None:
    def reply(messages: Sequence[Message]) -> str:
        if messages[0]["content"].startswith("You check"):
            return CONFIRMED
        marker = messages[1]["content"].split()[-1]
        if messages[-1]["content"].startswith("TOOL RESULT"):
            return f"done {marker}"
        return tool("write_file", f'{{"path": "m.txt", "content": "{marker}"}}')

    pipe = make(ScriptedModel(reply))
    threads_n, turns = 16, 2
    errors: list[BaseException] = []
    results: list[Any] = []
    lock = threading.Lock()
    barrier = threading.Barrier(threads_n)

    def client(index: int) -> None:
        barrier.wait()
        try:
            for turn in range(turns):
                marker = f"m{index}x{turn}"
                r = pipe.handle([user(f"task {marker}")], session_id=f"c{index}")
                with lock:
                    results.append((marker, r))
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=client, args=(i,)) for i in range(threads_n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors
    assert len(results) == threads_n * turns
    stored = {t.id: t for t in store.iter_trajectories(task_kind="chat")}
    assert len(stored) == threads_n * turns
    for marker, r in results:
        t = stored[r.trajectory.id]
        assert t.user_request == f"task {marker}" and t.final_response == f"done {marker}"
        assert [c.arguments["content"] for c in t.tool_calls] == [marker]
        assert t.session_id == f"c{marker[1:].split('x')[0]}"


# -- the real-time correction path -------------------------------------------------


def correction_setup(
    make: Callable[..., ChatPipeline], store: Store, memory: SkillMemory, **kw: Any
) -> ChatPipeline:
    count = iter(range(1, 1000))
    model = ScriptedModel(agent_then_reflect(lambda _m: f"{REPLY_1} #{next(count)}"))
    reflector = Reflector(store, model, sink=PlaybookSink(memory))
    return make(model, memory=memory, reflector=reflector, **kw)


def test_correction_promotes_retracts_and_reflects(
    make: Callable[..., ChatPipeline],
    store: Store,
    memory: SkillMemory,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="nightschool.agent")
    pipe = correction_setup(make, store, memory)
    first = pipe.handle([user(REQUEST_1)], session_id="s")
    stale = memory.learn(
        trigger="three words",
        anti_pattern="",
        correct_pattern="reply with any words",
        domains=["python_general"],
        source="reflection",
        source_trajectory_id=first.trajectory.id,
    )
    second = pipe.handle([user(REQUEST_1), assistant(first.reply), user(REQUEST_2)], session_id="s")
    event = second.correction
    assert event is not None and event.trajectory_id == first.trajectory.id
    assert event.signals == ("phrase:no", "rephrase") and event.jaccard >= 0.4
    assert event.lessons_retracted == 1 and event.reflection_scheduled
    assert memory.get(str(stale.lesson_id)) is None
    [corr] = store.corrections(first.trajectory.id)
    assert (corr.source, corr.authority, corr.outcome) == (
        "user_correction",
        "human",
        Outcome.FAILED,
    )
    assert (
        corr.failure_reason
        == f"user-correction signal: phrase + rephrase(jaccard={event.jaccard:.2f})"
    )
    assert second.trajectory.extra["corrected_trajectory_id"] == first.trajectory.id

    assert pipe.wait_background(timeout_s=30)
    [done] = pipe.background_results()
    assert done.status == "ok" and done.trajectory_id == first.trajectory.id
    assert done.lesson_id and "diagnosis=" in done.detail
    lesson = memory.get(done.lesson_id)
    assert lesson is not None and lesson.source_trajectory_id == first.trajectory.id
    assert f"post-turn reflection: ok (traj={first.trajectory.id})" in caplog.text
    reloaded = store.get_trajectory(first.trajectory.id)
    assert reloaded is not None and reloaded.outcome == Outcome.FAILED

    # a similar request: not shown while unverified (only nearly the same task would be)
    similar = [user("Reply with three words exactly: kangaroo trampoline giraffe")]
    third = pipe.handle(similar, session_id="s2")
    assert done.lesson_id not in third.lessons_shown
    assert memory.set_verified(done.lesson_id, True, {"with": [1, 1], "without": [0, 0]})
    fourth = pipe.handle(similar, session_id="s3")
    assert done.lesson_id in fourth.lessons_shown
    assert pipe.background_results(since=1) == []


def test_one_promotion_per_turn_and_no_promotion_without_a_cached_reply(
    make: Callable[..., ChatPipeline], store: Store, memory: SkillMemory
) -> None:
    pipe = correction_setup(make, store, memory, reflect_on_correction=False)
    first = pipe.handle([user(REQUEST_1)], session_id="s")
    convo = [user(REQUEST_1), assistant(first.reply), user(REQUEST_2)]
    assert pipe.handle(convo, session_id="s").correction is not None
    assert pipe.handle(convo, session_id="s").correction is None  # entry dropped
    unknown = [user(REQUEST_1), assistant("a reply this server never sent"), user(REQUEST_2)]
    assert pipe.handle(unknown, session_id="s").correction is None
    other_session = pipe.handle([user(REQUEST_1)], session_id="t")
    convo_t = [user(REQUEST_1), assistant(other_session.reply), user(REQUEST_2)]
    assert pipe.handle(convo_t, session_id="elsewhere").correction is None
    assert len(store.corrections(first.trajectory.id)) == 1
    assert pipe.background_results() == []


def test_follow_up_that_is_not_a_correction(
    make: Callable[..., ChatPipeline], store: Store, memory: SkillMemory
) -> None:
    pipe = correction_setup(make, store, memory)
    first = pipe.handle([user(REQUEST_1)], session_id="s")
    follow = [user(REQUEST_1), assistant(first.reply), user("Great, now translate it to French.")]
    assert pipe.handle(follow, session_id="s").correction is None
    assert store.corrections(first.trajectory.id) == []


def test_fingerprint_ignores_case_and_whitespace() -> None:
    assert reply_fingerprint("Hello   World\n") == reply_fingerprint("hello world")
    assert reply_fingerprint("a" * 500 + "x") == reply_fingerprint("a" * 500 + "y")
    assert reply_fingerprint("hello") != reply_fingerprint("hello!")


def test_reply_does_not_wait_for_the_reflection(
    make: Callable[..., ChatPipeline], store: Store, memory: SkillMemory
) -> None:
    release = threading.Event()

    def slow(messages: Sequence[Message]) -> str:
        assert messages[0]["content"] == REFLECTION_SYSTEM_PROMPT
        assert release.wait(30)
        return REFLECTION

    # Two models: a scripted model serves one call at a time, so a reflection
    # blocked inside it would hold up the agent's own call.
    model, reflecting = ScriptedModel(lambda _m: REPLY_1), ScriptedModel(slow)
    reflector = Reflector(store, reflecting, sink=PlaybookSink(memory))
    pipe = make(model, memory=memory, reflector=reflector)
    first = pipe.handle([user(REQUEST_1)], session_id="s")
    second = pipe.handle([user(REQUEST_1), assistant(first.reply), user(REQUEST_2)], session_id="s")
    assert second.correction is not None and second.correction.reflection_scheduled
    assert pipe.pending_background() == 1 and pipe.background_results() == []
    assert not pipe.wait_background(timeout_s=0.05)
    release.set()
    assert pipe.wait_background(timeout_s=30)
    assert [r.status for r in pipe.background_results()] == ["ok"]


def test_background_failures_and_no_lesson_are_reported(
    make: Callable[..., ChatPipeline],
    store: Store,
    memory: SkillMemory,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="nightschool.agent")
    replies = {"n": 0}

    def agent(messages: Sequence[Message]) -> str:
        if messages[0]["content"] == REFLECTION_SYSTEM_PROMPT:
            return "I have no idea what happened."  # unparseable
        replies["n"] += 1
        return f"{REPLY_1} #{replies['n']}"

    model = ScriptedModel(agent)

    class Exploding(Reflector):
        def reflect_one(self, trajectory: Any) -> Any:
            raise RuntimeError("boom")

    pipe = make(model, memory=memory, reflector=Reflector(store, model, sink=PlaybookSink(memory)))
    first = pipe.handle([user(REQUEST_1)], session_id="s")
    pipe.handle([user(REQUEST_1), assistant(first.reply), user(REQUEST_2)], session_id="s")
    assert pipe.wait_background(timeout_s=30)
    [no_lesson] = pipe.background_results()
    assert no_lesson.status == "no lesson" and "unparseable" in no_lesson.detail
    assert no_lesson.lesson_id is None

    pipe2 = make(model, memory=memory, reflector=Exploding(store, model))
    first2 = pipe2.handle([user(REQUEST_1)], session_id="s")
    pipe2.handle([user(REQUEST_1), assistant(first2.reply), user(REQUEST_2)], session_id="s")
    assert pipe2.wait_background(timeout_s=30)
    [failed] = pipe2.background_results()
    assert (failed.status, failed.detail) == ("failed", "RuntimeError: boom")
    assert "post-turn reflection: no lesson" in caplog.text
    assert "post-turn reflection: failed" in caplog.text


def test_close_without_waiting_cancels_queued_work_visibly(
    make: Callable[..., ChatPipeline], store: Store, memory: SkillMemory
) -> None:
    release = threading.Event()

    def slow(messages: Sequence[Message]) -> str:
        if messages[0]["content"] == REFLECTION_SYSTEM_PROMPT:
            assert release.wait(30)
            return REFLECTION
        return REPLY_1

    # ScriptedModel serialises calls, so the blocked critic gets its own instance.
    model, critic = ScriptedModel(slow), ScriptedModel(slow)
    pipe = make(model, memory=memory, reflector=Reflector(store, critic, sink=PlaybookSink(memory)))
    for session in ("a", "b"):
        first = pipe.handle([user(REQUEST_1)], session_id=session)
        convo = [user(REQUEST_1), assistant(first.reply), user(REQUEST_2)]
        assert pipe.handle(convo, session_id=session).correction is not None
    assert pipe.pending_background() == 2
    pipe.close(wait=False)
    release.set()
    assert pipe.wait_background(timeout_s=30)
    statuses = sorted(r.status for r in pipe.background_results())
    assert statuses == ["failed", "ok"]
    assert any("Cancelled" in r.detail for r in pipe.background_results())
    # after close, corrections are still recorded but nothing more is scheduled
    third = pipe.handle([user(REQUEST_1)], session_id="c")
    late = pipe.handle([user(REQUEST_1), assistant(third.reply), user(REQUEST_2)], session_id="c")
    assert late.correction is not None and not late.correction.reflection_scheduled


def test_workspace_failure_is_recorded_then_raised(
    make: Callable[..., ChatPipeline], store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    pipe = make(ScriptedModel(["never asked"]))

    def no_workspace(session_id: str) -> Any:
        raise SandboxFaultError("cannot create the session workspace: disk full")

    monkeypatch.setattr(pipe, "_workspace", no_workspace)
    with pytest.raises(SandboxFaultError):
        pipe.handle([user("hi")], session_id="s")
    [t] = list(store.iter_trajectories())
    assert t.infrastructure_error is not None and "disk full" in t.infrastructure_error
    assert t.n_steps == 0 and t.outcome == Outcome.UNKNOWN


def test_without_reflector_the_correction_is_still_recorded(
    make: Callable[..., ChatPipeline], store: Store
) -> None:
    replies = iter([REPLY_1, "second"])
    pipe = make(ScriptedModel(lambda _m: next(replies)), memory=None, reflector=None)
    first = pipe.handle([user(REQUEST_1)], session_id="s")
    second = pipe.handle([user(REQUEST_1), assistant(first.reply), user(REQUEST_2)], session_id="s")
    assert second.correction is not None
    assert not second.correction.reflection_scheduled
    assert second.correction.lessons_retracted == 0
    assert len(store.corrections(first.trajectory.id)) == 1
    assert pipe.pending_background() == 0 and pipe.wait_background(0)
