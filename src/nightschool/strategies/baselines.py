"""Built-in baseline strategies played in generation 0.

Each is written to the strategy contract (`CONTRACT_TEXT`) and passes
`lint_strategy` (a test checks it), so baselines and authored candidates run
through exactly the same sandboxed path.
"""

from __future__ import annotations

__all__ = ["BASELINES", "REFINE", "SAMPLE", "SAMPLE_THEN_REFINE"]

SAMPLE = '''\
def solve(task, harness):
    """Best-of-budget: sample fresh solutions until one passes the visible tests."""
    best = ""
    while harness.budget_left > 0:
        temperature = 0.2 if not best else 0.8
        code = harness.sample(temperature=temperature)
        if not code:
            continue
        best = code
        if harness.run_tests(code) == "PASSED":
            return code
    return best
'''

REFINE = '''\
def solve(task, harness):
    """Depth: one sample, then refine it with the test feedback until it passes."""
    code = harness.sample()
    while harness.budget_left > 0:
        feedback = harness.run_tests(code) if code else "FAILED: no code was produced"
        if feedback == "PASSED":
            return code
        code = harness.refine(code, feedback) or code
    return code
'''

SAMPLE_THEN_REFINE = '''\
def solve(task, harness):
    """Breadth then depth: sample half the budget, refine the last failure with the rest."""
    first_half = max(1, harness.budget_left // 2)
    code = ""
    feedback = "FAILED: no code was produced"
    for _ in range(first_half):
        candidate = harness.sample(temperature=0.8 if code else 0.2)
        if candidate:
            code = candidate
            feedback = harness.run_tests(code)
            if feedback == "PASSED":
                return code
    while harness.budget_left > 0:
        code = harness.refine(code, feedback) or code
        feedback = harness.run_tests(code)
        if feedback == "PASSED":
            return code
    return code
'''

BASELINES: dict[str, str] = {
    "sample": SAMPLE,
    "refine": REFINE,
    "sample_then_refine": SAMPLE_THEN_REFINE,
}
"""Baseline name -> strategy source, in the order generation 0 plays them."""
