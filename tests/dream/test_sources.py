"""`CurriculumSources.choose`: seed 000's routing between journal, template bank and generation.

The 20/80 coin fires when no brittle cluster is open (seed 000: "when pick_seed
finds every brittle candidate saturated"), not only when every cluster is aced.
Journal mining and generation are replaced by recorders here; the routing is
what is under test (the generator's gates are tested in tests/challenges).
"""

from __future__ import annotations

import random
from collections.abc import Callable

import pytest

from nightschool.challenges import (
    GENERATED_CLUSTERS,
    WEB_CLUSTER,
    Challenge,
    GenerationRequest,
    render,
    templates,
)
from nightschool.dream.frontier import FrontierTracker, SeedPick
from nightschool.dream.sources import (
    JOURNAL_PROBABILITY,
    JOURNAL_PROBABILITY_SATURATED,
    REUSE_PROBABILITY,
    TEMPLATE_WHEN_ACED,
    CurriculumSources,
    Sourced,
)
from nightschool.llm import ScriptedModel
from nightschool.sandbox import Sandbox
from nightschool.store import Store

CLUSTERS = ("algo", "sql", "bash")


def challenge_of(cluster: str) -> Challenge:
    return render(templates(cluster)[0].name, "starter", 1)


class Recorded:
    """A `CurriculumSources` whose journal, generator and rotation are recorders."""

    def __init__(
        self,
        store: Store,
        rng: random.Random,
        *,
        mined: Sourced | None = None,
        rotation: list[Challenge] | None = None,
    ) -> None:
        self.sources = CurriculumSources(store, ScriptedModel(["x"]), Sandbox(), rng=rng)
        self.journal_calls = 0
        self.generate_calls = 0
        self.generated = challenge_of("sql")

        def journal(pick: SeedPick, notify: Callable[[str], None]) -> Sourced | None:
            self.journal_calls += 1
            return mined

        def generate(pick: SeedPick, notify: Callable[[str], None]) -> Sourced:
            self.generate_calls += 1
            return Sourced(self.generated, "generated", "a new challenge")

        self.sources._journal = journal  # type: ignore[method-assign]
        self.sources._generate = generate  # type: ignore[method-assign]
        self.sources.bank.in_rotation = lambda cluster=None: list(rotation or [])  # type: ignore[method-assign]

    def choose(self, pick: SeedPick, tracker: FrontierTracker) -> Sourced:
        return self.sources.choose(pick, tracker)


def tracker_with(store: Store, **kinds: str) -> FrontierTracker:
    """A tracker over CLUSTERS whose clusters are `brittle`, `saturated` or `steady`."""
    tracker = FrontierTracker(store, clusters=CLUSTERS)
    runs = {
        "brittle": [(False, 3)],  # a failure: brittleness 2
        "saturated": [(True, 1), (True, 1)],  # two flat first-try passes
        "steady": [(True, 1)],  # one first-try pass: neither brittle nor saturated
    }
    for cluster, kind in kinds.items():
        for i, (passed, attempts) in enumerate(runs[kind]):
            tracker.record_run(
                cluster=cluster,
                template=f"{cluster}.t",
                tier="starter",
                seed=i,
                challenge_hash=f"{cluster}-{i}",
                passed=passed,
                attempts=attempts,
            )
    states = {s.cluster: s for s in tracker.states()}
    for cluster, kind in kinds.items():
        assert states[cluster].brittle == (kind == "brittle")
        assert states[cluster].saturated == (kind == "saturated")
    return tracker


def pick(cluster: str, mode: str = "coverage") -> SeedPick:
    return SeedPick(cluster, "starter", mode, f"the frontier's {mode} pick")


def draws(seed: int, n: int = 3) -> list[float]:
    probe = random.Random(seed)
    return [probe.random() for _ in range(n)]


def seed_where(test: Callable[[list[float]], bool]) -> int:
    return next(s for s in range(10_000) if test(draws(s)))


def test_brittle_cluster_open_gives_the_frontier_template(store: Store) -> None:
    tracker = tracker_with(store, algo="brittle", sql="steady", bash="saturated")
    for seed in range(40):  # whatever the rng says: journal or the template bank, never the coin
        recorded = Recorded(store, random.Random(seed))
        got = recorded.choose(pick("sql"), tracker)
        assert got == Sourced(None, "template", "the frontier's coverage pick")
        assert recorded.generate_calls == 0
        assert recorded.journal_calls == (draws(seed, 1)[0] < JOURNAL_PROBABILITY)


def test_no_brittle_cluster_open_flips_the_coin_though_not_every_cluster_is_aced(
    store: Store,
) -> None:
    # one cluster saturated, two steady: before the fix this was "not saturated: template"
    tracker = tracker_with(store, algo="steady", sql="steady", bash="saturated")
    template_side = seed_where(lambda d: d[0] >= JOURNAL_PROBABILITY_SATURATED and d[1] < 0.2)
    generated_side = seed_where(
        lambda d: d[0] >= JOURNAL_PROBABILITY_SATURATED and d[1] >= 0.2 and d[2] < 0.5
    )
    recorded = Recorded(store, random.Random(template_side))
    assert recorded.choose(pick("algo"), tracker) == Sourced(
        None, "template", "no brittle cluster open; template rotation (20%)"
    )
    assert (recorded.journal_calls, recorded.generate_calls) == (0, 0)  # journal roll missed
    recorded = Recorded(store, random.Random(generated_side))
    got = recorded.choose(pick("algo"), tracker)
    assert got.source == "generated" and got.challenge == recorded.generated
    assert (recorded.journal_calls, recorded.generate_calls) == (0, 1)  # rotation was empty


def test_the_coin_is_20_80_and_journal_mining_is_boosted(store: Store) -> None:
    tracker = tracker_with(store, algo="steady", sql="saturated", bash="saturated")
    recorded = Recorded(store, random.Random(11))
    sources = [recorded.choose(pick("algo"), tracker).source for _ in range(2_000)]
    templates_share = sources.count("template") / len(sources)
    assert abs(templates_share - TEMPLATE_WHEN_ACED) < 0.03
    assert sources.count("generated") == len(sources) - sources.count("template")
    # how often the journal is tried: 75% with no brittle cluster open ...
    recorded = Recorded(store, random.Random(5))
    for _ in range(2_000):
        recorded.choose(pick("algo"), tracker)
    assert abs(recorded.journal_calls / 2_000 - JOURNAL_PROBABILITY_SATURATED) < 0.03
    # ... and 25% while one is open
    tracker_with(store, algo="brittle")  # algo's latest run is now a failure
    recorded = Recorded(store, random.Random(5))
    for _ in range(2_000):
        recorded.choose(pick("algo"), tracker)
    assert abs(recorded.journal_calls / 2_000 - JOURNAL_PROBABILITY) < 0.03
    assert recorded.generate_calls == 0


def test_every_cluster_saturated_flips_the_coin(store: Store) -> None:
    tracker = tracker_with(store, algo="saturated", sql="saturated", bash="saturated")
    seed = seed_where(lambda d: d[0] >= JOURNAL_PROBABILITY_SATURATED and d[1] < 0.2)
    recorded = Recorded(store, random.Random(seed))
    exploring = SeedPick("sql", "starter", "exploration", "every cluster is saturated", CLUSTERS)
    assert recorded.choose(exploring, tracker).reason.endswith("template rotation (20%)")


def test_a_generated_challenge_in_rotation_is_replayed_half_the_time(store: Store) -> None:
    tracker = tracker_with(store, algo="steady", sql="steady", bash="steady")
    kept = challenge_of("bash")
    replay = seed_where(lambda d: d[0] >= 0.75 and d[1] >= 0.2 and d[2] < REUSE_PROBABILITY)
    fresh = seed_where(lambda d: d[0] >= 0.75 and d[1] >= 0.2 and d[2] >= REUSE_PROBABILITY)
    recorded = Recorded(store, random.Random(replay), rotation=[kept])
    got = recorded.choose(pick("algo"), tracker)
    assert got.source == "rotation" and got.challenge == kept and recorded.generate_calls == 0
    recorded = Recorded(store, random.Random(fresh), rotation=[kept])
    assert recorded.choose(pick("algo"), tracker).source == "generated"


@pytest.mark.parametrize(
    ("kinds", "the_pick"),
    [
        ({}, pick("algo", "cold_start")),  # nothing practised yet: not aced, just unknown
        ({"algo": "steady"}, pick("sql", "cold_start")),
        ({"algo": "steady", "sql": "steady", "bash": "steady"}, pick("sql", "exploration")),
    ],
    ids=["fresh agent", "untried cluster", "exploration roll"],
)
def test_a_cold_start_or_an_exploration_roll_keeps_the_template(
    store: Store, kinds: dict[str, str], the_pick: SeedPick
) -> None:
    tracker = tracker_with(store, **kinds)
    for seed in range(40):
        recorded = Recorded(store, random.Random(seed))
        assert recorded.choose(the_pick, tracker).source == "template"
        assert recorded.generate_calls == 0
        assert recorded.journal_calls == (draws(seed, 1)[0] < JOURNAL_PROBABILITY)


def test_a_mined_journal_turn_comes_first(store: Store) -> None:
    mined = Sourced(challenge_of("algo"), "journal", "mined from chat turn T")
    tracker = tracker_with(store, algo="steady", sql="steady", bash="steady")
    seed = seed_where(lambda d: d[0] < JOURNAL_PROBABILITY)
    for brittle in (False, True):
        if brittle:  # now a brittle cluster is open: the journal is still tried first
            tracker_with(store, algo="brittle")
        recorded = Recorded(store, random.Random(seed), mined=mined)
        assert recorded.choose(pick("algo"), tracker) == mined
        assert (recorded.journal_calls, recorded.generate_calls) == (1, 0)


class Asked(Exception):
    """Raised by the stub generator with the request it got."""


def test_the_model_is_never_asked_for_a_web_challenge(store: Store) -> None:
    """Generation draws from GENERATED_CLUSTERS: web challenges need a site and the browser."""
    sources = CurriculumSources(store, ScriptedModel(["x"]), Sandbox(), rng=random.Random(0))

    def generate(request: GenerationRequest, on_event: object = None) -> None:
        raise Asked(request)

    sources.generator.generate = generate  # type: ignore[assignment, method-assign]
    asked = []
    for seed in range(40):
        sources.rng = random.Random(seed)
        with pytest.raises(Asked) as raised:
            sources._generate(pick("web_automation"), lambda _m: None)
        asked.append(raised.value.args[0].cluster)
    assert WEB_CLUSTER not in asked and set(asked) <= set(GENERATED_CLUSTERS)
