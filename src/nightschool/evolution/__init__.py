"""Strategy evolution: promotion gates deciding whether a candidate replaces the incumbent."""

from nightschool.evolution.gate import GateConfig, PairedResult, Verdict, promotion_gate
from nightschool.evolution.sequential import SequentialGate

__all__ = ["GateConfig", "PairedResult", "SequentialGate", "Verdict", "promotion_gate"]
