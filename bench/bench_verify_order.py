"""What solving the candidate before the control would save in controlled verification.

Reads a home's stored verification trajectories (`verification_arm` control or
candidate, per template and rendering seed, in the order they were solved;
a self-play trajectory starts the next verification) and replays each
verification's pairs through the real `promotion_gate` with the verifier's
curtailment rule in two orders:

- `control first` (the order these stores were made with; today's
  `PairedVerifier` still offers it as `order="control-first"`, and its default
  `adaptive` order came from this replay): solve the control; stop if a
  control pass leaves promotion out of reach; solve the candidate.
- `candidate first`: solve the candidate; a candidate failure is never a win,
  so stop if promotion is out of reach even counting it a tie; else solve the
  control (it tells a tie from a loss).

Both stop before a rendering once promotion is out of reach. An outcome the
run never solved counts as the case that saves nothing (candidate passes,
control fails, 60 s). The replay ignores the control cache (a control reused
from an earlier verification costs nothing in the run), so it overstates
control first where controls were reused. No model call.

Usage:
    .venv/bin/python bench/bench_verify_order.py bench/results/stream-mbpp-dream60/memory.db
"""

from __future__ import annotations

import argparse
import json
import sqlite3
from pathlib import Path

from nightschool.gate import GateConfig, PairedResult, promotion_gate

UNSOLVED_S = 60.0
"""Seconds charged for a solve the run never made (about one 1.5B solve here)."""


def _pair(index: int, control: bool, candidate: bool) -> PairedResult:
    return PairedResult(
        task_id=f"r{index}", incumbent_score=float(control), candidate_score=float(candidate)
    )


def _reachable(pairs: list[PairedResult], rest: int, gate: GateConfig) -> bool:
    best = pairs + [_pair(len(pairs) + i, False, True) for i in range(rest)]
    return bool(best) and promotion_gate(best, gate).promote


def verifications(db: Path) -> list[list[dict[str, tuple[bool, float]]]]:
    """Each verification's renderings in solve order: {arm: (passed, seconds)}.

    Read with sqlite3 read-only, not `Store.open`, which migrates the file: the
    stores read here are committed benchmark results.
    """
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        rows = conn.execute(
            "SELECT record, outcome FROM trajectories WHERE task_kind IN "
            "('verification', 'selfplay') ORDER BY rowid"
        ).fetchall()
    finally:
        conn.close()
    out: list[dict[int, dict[str, tuple[bool, float]]]] = []
    template = None
    for record_text, outcome in rows:
        record = json.loads(record_text)
        extra = record.get("extra", {})
        if record["task_kind"] == "selfplay":
            template = None  # the next verification starts afresh
            continue
        arm, seed = str(extra.get("verification_arm")), int(extra.get("seed", 0))
        if template is None or extra.get("template") != template or arm in out[-1].get(seed, {}):
            template = extra.get("template")
            out.append({})
        out[-1].setdefault(seed, {})[arm] = (
            outcome == "passed",
            float(record.get("duration_s") or 0.0),
        )
    return [list(run.values()) for run in out]


def replay(
    renderings: list[dict[str, tuple[bool, float]]],
    *,
    candidate_first: bool,
    k: int,
    gate: GateConfig,
) -> tuple[int, float]:
    """(solves, seconds) of one verification under one order."""
    pairs: list[PairedResult] = []
    solves, seconds = 0, 0.0
    for index, arms in enumerate(renderings):
        control, control_s = arms.get("control", (False, UNSOLVED_S))
        candidate, candidate_s = arms.get("candidate", (True, UNSOLVED_S))
        rest = k - index
        if not _reachable(pairs, rest, gate):
            break
        first, second = (candidate_s, control_s) if candidate_first else (control_s, candidate_s)
        solves, seconds = solves + 1, seconds + first
        settled = (not candidate) if candidate_first else control
        assumed = _pair(index, False, False) if candidate_first else _pair(index, True, True)
        if settled and not _reachable([*pairs, assumed], rest - 1, gate):
            break
        solves, seconds = solves + 1, seconds + second
        pairs.append(_pair(index, control, candidate))
    return solves, seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("db", type=Path, nargs="+", help="a home's nightschool.db (or a copy)")
    parser.add_argument("--k", type=int, default=6, help="renderings per verification")
    args = parser.parse_args()
    gate = GateConfig()
    print(f"{'store':55} {'verif.':>6} {'stored':>6} {'control first':>20} {'candidate first':>20}")
    for db in args.db:
        runs = verifications(db)
        stored = sum(len(arms) for run in runs for arms in run)
        cells = []
        for candidate_first in (False, True):
            results = [
                replay(r, candidate_first=candidate_first, k=args.k, gate=gate) for r in runs
            ]
            cells.append((sum(s for s, _ in results), sum(t for _, t in results) / 60))
        (cf, cft), (kf, kft) = cells
        saved = 1 - kft / cft if cft else 0.0
        print(
            f"{db!s:55} {len(runs):>6} {stored:>6} {cf:>6} solves {cft:5.1f} min "
            f"{kf:>6} solves {kft:5.1f} min  ({saved:.0%} less time)"
        )


if __name__ == "__main__":
    main()
