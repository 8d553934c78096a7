"""The promotion gate: paired statistics that decide whether a candidate replaces the incumbent.

`promotion_gate` judges a finished paired measurement (exact sign/McNemar test,
a one-sided lower confidence bound on the mean paired difference, a betting
bound); `SequentialGate` is its anytime-valid form that may stop early;
`holm_adjusted` keeps the family-wise error of several candidates against one
baseline at alpha. Every
component that keeps or drops something (lessons, skills, routers, prompts,
strategies, the learning curve and the streams) asks this package for its
verdict; it imports nothing from the rest of nightschool.
"""

from nightschool.gate.family import holm_adjusted
from nightschool.gate.promotion import GateConfig, PairedResult, Verdict, promotion_gate
from nightschool.gate.sequential import SequentialGate

__all__ = [
    "GateConfig",
    "PairedResult",
    "SequentialGate",
    "Verdict",
    "holm_adjusted",
    "promotion_gate",
]
