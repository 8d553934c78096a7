"""Coding challenges for self-play: a template bank rendered by cluster, tier and seed.

`render(name, tier, seed)` gives a `Challenge` (prompt, setup script,
validation script, reference solution); `evaluate(sandbox, challenge, source)`
judges a solution in a fresh sandbox workspace.
"""

from nightschool.challenges._model import CLUSTERS, TIERS, Challenge, Template
from nightschool.challenges._registry import get_template, render, templates
from nightschool.challenges._runner import Evaluation, evaluate

__all__ = [
    "CLUSTERS",
    "TIERS",
    "Challenge",
    "Evaluation",
    "Template",
    "evaluate",
    "get_template",
    "render",
    "templates",
]
