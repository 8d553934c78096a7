"""Per-call thread choice and KV-cache prefix reuse of the embedded model.

Unit tests of the rules, then the real SmolLM2-135M: replies with reuse equal
replies without it, token for token, over a retry, an extended conversation
and a shorter prompt that is a prefix of the last one.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from nightschool.errors import ModelResponseError
from nightschool.llm import EmbeddedConfig, EmbeddedModel, Message
from nightschool.llm._prefix import PREFIX_BACKOFF, DecodeUsage, kept_prefix, shared_prefix
from nightschool.llm._threads import choose_threads, runnable_others

SMALL = "smollm2-135m"


def test_runnable_others_is_the_median_of_readings_less_the_caller() -> None:
    readings = iter(["0.5 0.4 0.3 3/90 1", "0.5 0.4 0.3 1/90 1", "0.5 0.4 0.3 2/90 1"])
    assert runnable_others(lambda: next(readings), samples=3, gap_s=0) == 1
    assert runnable_others(lambda: "0.1 0.1 0.1 1/50 7", samples=2, gap_s=0) == 0


def test_runnable_others_says_none_when_the_load_cannot_be_read() -> None:
    def broken() -> str:
        raise OSError("no /proc")

    assert runnable_others(broken, samples=2, gap_s=0) is None
    assert runnable_others(lambda: "garbage", samples=1, gap_s=0) is None


@pytest.mark.parametrize(
    ("cpus", "others", "threads"),
    [(2, 0, 2), (2, 1, 1), (2, 5, 1), (8, 1, 7), (8, 0, 8), (1, 0, 1), (4, None, 3), (1, None, 1)],
)
def test_threads_are_the_cores_nobody_else_uses(
    cpus: int, others: int | None, threads: int
) -> None:
    choice = choose_threads(cpus=cpus, others=lambda: others)
    assert choice.threads == threads
    assert f"of {cpus} CPUs" in choice.reason


def test_a_fixed_thread_count_is_kept_whatever_the_load() -> None:
    choice = choose_threads(3, cpus=2, others=lambda: 9)
    assert choice.threads == 3 and "NIGHTSCHOOL_THREADS" in choice.reason


def test_kept_prefix_stops_at_the_previous_prompt_and_backs_off() -> None:
    old_prompt = list(range(100))
    cached = [*old_prompt, 900, 901, 902]  # the previous reply follows its prompt
    assert shared_prefix(cached, [*old_prompt, 5]) == 100
    # a longer prompt sharing the whole old prompt keeps the old prompt, not its reply
    quoting = [*old_prompt, 900, 901, 902, 7, 8, *list(range(50))]
    assert kept_prefix(cached, 100, quoting) == 100
    # a retry (the same prompt) decodes its last PREFIX_BACKOFF tokens again
    assert kept_prefix(cached, 100, old_prompt) == 100 - PREFIX_BACKOFF
    # a shorter prompt that is a prefix of the old one, too
    assert kept_prefix(cached, 100, old_prompt[:40]) == 40 - PREFIX_BACKOFF
    # nothing shared, nothing cached, or a prompt too short to back off from
    assert kept_prefix(cached, 100, [7, *old_prompt]) == 0
    assert kept_prefix(cached, 0, old_prompt) == 0
    assert kept_prefix(cached, 100, old_prompt[:PREFIX_BACKOFF]) == 0


def test_decode_usage_counts_decoded_and_cached_tokens() -> None:
    usage = DecodeUsage()
    usage.add(100, 0, 20, 1.5, 2)
    usage.add(120, 92, 10, 0.5, 1)
    assert (usage.calls, usage.tokens_in, usage.tokens_cached, usage.tokens_decoded) == (
        2, 220, 92, 128,
    )  # fmt: skip
    assert usage.threads == {2: 1, 1: 1} and usage.seconds == pytest.approx(2.0)


SYSTEM: Message = {"role": "system", "content": "You are a careful Python programmer."}
TASK: Message = {"role": "user", "content": "Write a Python function is_prime(n)."}


def _session(model: EmbeddedModel) -> list[tuple[str, int, int]]:
    """A retry, an extended conversation quoting the reply, then a shorter prompt."""
    first = model.complete([SYSTEM, TASK], temperature=0, max_tokens=40)
    retry = model.complete([SYSTEM, TASK], temperature=0, max_tokens=40)
    repair = model.complete(
        [SYSTEM, TASK, {"role": "assistant", "content": first.text},
         {"role": "user", "content": "is_prime(1) returned True. Fix it."}],
        temperature=0, max_tokens=40,
    )  # fmt: skip
    sampled = model.complete([SYSTEM, TASK], temperature=0.8, max_tokens=24, seed=11)
    return [(c.text, c.tokens_in, c.tokens_cached) for c in (first, retry, repair, sampled)]


@pytest.fixture(scope="module")
def sessions() -> Iterator[dict[bool, list[tuple[str, int, int]]]]:
    out = {}
    for reuse in (False, True):
        config = EmbeddedConfig(model=SMALL, n_ctx=1024, n_threads=1, reuse_prefix=reuse)
        with EmbeddedModel(config) as model:
            out[reuse] = _session(model)
            out[reuse].append(("usage", model.usage.tokens_in, model.usage.tokens_cached))
    yield out


@pytest.mark.e2e
def test_replies_with_prefix_reuse_equal_replies_without(sessions: dict) -> None:
    assert [s[0] for s in sessions[True]] == [s[0] for s in sessions[False]]
    assert [s[1] for s in sessions[True]] == [s[1] for s in sessions[False]]


@pytest.mark.e2e
def test_shared_prefixes_come_from_the_cache_and_are_counted(sessions: dict) -> None:
    (_, n1, c1), (_, n2, c2), (_, n3, c3), (_, n4, c4), (_, total_in, total_cached) = sessions[True]
    assert c1 == 0 and c2 == n2 - PREFIX_BACKOFF  # the retry decodes only its tail
    assert c3 == n1  # the repair keeps the first prompt, not the reply it quotes
    assert c4 == n4 - PREFIX_BACKOFF  # a prompt that prefixes the cached one
    assert (total_in, total_cached) == (n1 + n2 + n3 + n4, c1 + c2 + c3 + c4)
    assert all(cached == 0 for _, _, cached in sessions[False][:4])
    assert sessions[False][4][2] == 0


@pytest.mark.e2e
def test_a_failed_call_forgets_the_cache() -> None:
    config = EmbeddedConfig(model=SMALL, n_ctx=256, n_threads=1)
    with EmbeddedModel(config) as model:
        model.complete([SYSTEM, TASK], temperature=0, max_tokens=4)
        with pytest.raises(ModelResponseError, match=r"context window"):
            model.complete([SYSTEM, {"role": "user", "content": "word " * 400}], max_tokens=4)
        after = model.complete([SYSTEM, TASK], temperature=0, max_tokens=4)
    assert after.tokens_cached == 0
