"""Coding challenges for self-play: a template bank rendered by cluster, tier and seed.

`render(name, tier, seed)` gives a `Challenge` (prompt, setup script,
validation script, reference solution); `evaluate(sandbox, challenge, source)`
judges a solution in a fresh sandbox workspace; `cross_seed` checks that
seeds make different tasks (a seed's reference fails other seeds). `ChallengeGenerator` has the
model write new program-style challenges behind a stack of quality gates
(`quality_check`, `preflight`, `validator_self_test`, ...) and
`ChallengeBank` keeps the accepted ones; `validator_crash` tells a crashing
validator from a failing solution. `web_automation` challenges (`_webrun`)
serve their site on loopback and answer the sandboxed solution's Playwright
calls with the host's browser; `web_problem` and `practice_clusters` say
whether this machine can run them.
"""

from nightschool.challenges._gates import (
    ChallengeSpec,
    preflight,
    quality_check,
    validator_crash,
)
from nightschool.challenges._model import CLUSTERS, TIERS, Challenge, Template
from nightschool.challenges._registry import get_template, render, templates
from nightschool.challenges._runner import Evaluation, evaluate
from nightschool.challenges._selftest import SelfTestResult, validator_self_test
from nightschool.challenges._variety import (
    MAX_CROSS_SEED_RATE,
    VARIETY_SEED_BASE,
    CrossSeed,
    cross_seed,
)
from nightschool.challenges._webrun import WEB_CLUSTER, practice_clusters, web_problem
from nightschool.challenges.generated import (
    GENERATED_CLUSTERS,
    REJECTION_KINDS,
    ROTATION_MIN_RUNS,
    ChallengeBank,
    ChallengeGenerator,
    GenerationOutcome,
    GenerationRequest,
    Rejection,
    parse_reply,
)

__all__ = [
    "CLUSTERS",
    "GENERATED_CLUSTERS",
    "MAX_CROSS_SEED_RATE",
    "REJECTION_KINDS",
    "ROTATION_MIN_RUNS",
    "TIERS",
    "VARIETY_SEED_BASE",
    "WEB_CLUSTER",
    "Challenge",
    "ChallengeBank",
    "ChallengeGenerator",
    "ChallengeSpec",
    "CrossSeed",
    "Evaluation",
    "GenerationOutcome",
    "GenerationRequest",
    "Rejection",
    "SelfTestResult",
    "Template",
    "cross_seed",
    "evaluate",
    "get_template",
    "parse_reply",
    "practice_clusters",
    "preflight",
    "quality_check",
    "render",
    "templates",
    "validator_crash",
    "validator_self_test",
    "web_problem",
]
