"""The learning curve: held-out pass@1 before dreaming and at checkpoints while dreaming.

Two held-out sets, built before any practice and disjoint by construction and
by check:

- **(a) new seeds** (*same family*, never the headline: a new seed draws a new
  task from a practised template's family, near transfer): fresh renderings
  (seeds from `HELDOUT_SEED_BASE` up, which neither the dream nor verification
  ever renders) of the templates the dream practises, every cluster × tier
  asked for;
- **(b) unseen templates**: leave-some-out per cluster — one template of every
  cluster is never practised (the dream excludes it) and is rendered here at
  every tier asked for.

Each item is solved once (pass@1: one attempt, the solver's seeded sampling),
recorded as an `eval` trajectory (never reflected on, never a lesson or skill).
Arms on the same items: `none` (empty memory), `lessons`, `skills`, `both`
(what `recall` shows the solver for that arm). The start is the `none` arm
before any dreaming; each checkpoint's `both` arm is paired with it template by
template through the promotion gate, per set (`_curve_gate.clustered_verdict`:
items of one template are one piece of evidence; the item-level McNemar figure
is kept beside it, labelled).
The ablation adds `lessons` and `skills` arms (and pairs each with the start);
`none` is not re-measured because it does not depend on what was learned.

An item for which an arm's `recall` shows nothing gets the exact prompt of the
start, and the solver seeds each call from the challenge hash, so its solve is
the start's solve: the start's result is reused (marked `reused`) instead of
spending another model call on it.
"""

from __future__ import annotations

import csv
import dataclasses
import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from nightschool.dream.loop import DREAM_SEED_LIMIT, CycleResult, DreamLoop
from nightschool.errors import UserError
from nightschool.evals._curve_arms import (
    dream_model_calls,
    equal_compute_attempts,
)
from nightschool.evals._curve_gate import SET_LABELS, clustered_verdict, item_verdict
from nightschool.evals._curve_items import (
    ARMS,
    HELDOUT_SEED_BASE,
    Arm,
    HeldOut,
    HeldOutItem,
    ItemResult,
    Measurement,
    as_eval,
    build_heldout,
    check_disjoint,
    item_row,
    reusable,
    shown_for,
)
from nightschool.evals._curve_journal import CurveJournal, DreamChunk
from nightschool.evals._curve_parallel import measure_parallel
from nightschool.evals._curve_plot import plot
from nightschool.evals._model import pass_at_1
from nightschool.gate import Verdict
from nightschool.parallel import Backend, LocalResources, Resources
from nightschool.playbook import SkillMemory
from nightschool.solver.core import Solver
from nightschool.store import Store


def measure(
    solver: Solver,
    store: Store,
    memory: SkillMemory | None,
    heldout: HeldOut,
    arm: Arm,
    *,
    checkpoint: int,
    dream_s: float,
    cycles: int,
    session_id: str,
    on_item: Callable[[int, int, ItemResult], None] | None = None,
    start: Measurement | None = None,
    backend: Backend | None = None,
    resources: Resources | None = None,
    done: Mapping[str, ItemResult] | None = None,
) -> Measurement:
    """Solve every held-out item once with what `arm` allows `recall` to show.

    Args:
        solver: a single-attempt solver (pass@1); its playbook is ignored.
        store: eval trajectories are appended here (`task_kind="eval"`).
        memory: the playbook to recall from (None: nothing is shown).
        heldout: the sets.
        arm: `none`, `lessons`, `skills` or `both`.
        checkpoint: 0 for the start, then 1, 2, ...
        dream_s: dream seconds so far.
        cycles: dream cycles so far.
        session_id: recorded on the trajectories.
        on_item: progress callback (index from 1, total, result).
        start: the `none` measurement; an item for which `recall` shows nothing
            takes its result from here (same prompt, same seeds) instead of
            being solved again.
        backend: None solves the items here, one after the other (as always);
            a `nightschool.parallel` backend runs each solve as an episode
            (`_curve_parallel.measure_parallel`; trajectories are still
            written here, in item order).
        resources: the solver's model and sandbox as an episode gets them
            (default: the solver's own; a remote backend needs
            `SettingsResources`).
        done: task id -> result of items an earlier session measured in this
            arm (`_curve_journal`); they are taken as they are, not solved
            again and not passed to `on_item`.

    Raises:
        InfrastructureError: the model or sandbox failed (the curve stops; an
            outage is never scored as a failed item).
    """
    if backend is not None:
        return measure_parallel(
            backend,
            resources or LocalResources(solver.model, solver.sandbox),
            solver.config,
            store,
            memory,
            heldout,
            arm,
            checkpoint=checkpoint,
            dream_s=dream_s,
            cycles=cycles,
            session_id=session_id,
            on_item=on_item,
            start=start,
            done=done,
        )
    out = Measurement(checkpoint, dream_s, cycles, arm)
    items = heldout.items
    before = {r.task_id: r for r in start.results} if start is not None else {}
    earlier = done or {}
    for index, item in enumerate(items, start=1):
        if item.task_id in earlier:
            out.results.append(earlier[item.task_id])
            continue
        shown = shown_for(memory, heldout, item, arm)
        if item.task_id in before and reusable(arm, shown):
            row = dataclasses.replace(before[item.task_id], reused=True)
            out.results.append(row)
            if on_item is not None:
                on_item(index, len(items), row)
            continue
        result = solver.solve(
            item.challenge,
            session_id=session_id,
            lessons=shown.lessons,
            skills=shown.skill_sections,
            skill_ids=shown.skill_ids,
        )
        if result.infrastructure_error is not None:
            raise result.infrastructure_error
        trajectory = as_eval(result.trajectory, checkpoint, arm, item.set_name)
        stored = store.append_trajectory(trajectory)
        row = item_row(item, shown, result.passed, trajectory, stored.id)
        out.results.append(row)
        if on_item is not None:
            on_item(index, len(items), row)
    return out


def paired_verdict(start: Measurement, later: Measurement, set_name: str) -> Verdict:
    """Gate `later` against `start` on one set, one pair per template (`clustered_verdict`)."""
    return clustered_verdict(start.results, later.results, set_name)


@dataclass
class Curve:
    """Everything a learning-curve run measured."""

    heldout: HeldOut
    measurements: list[Measurement] = field(default_factory=list)
    verdicts: list[dict[str, Any]] = field(default_factory=list)
    cycles: list[CycleResult] = field(default_factory=list)

    @property
    def start(self) -> Measurement:
        """The `none` arm before any dreaming."""
        return self.measurements[0]

    def add(self, measurement: Measurement) -> None:
        """Append a measurement and, past the start, its verdicts against the start."""
        self.measurements.append(measurement)
        if len(self.measurements) == 1:
            return
        for set_name in ("a", "b"):
            verdict = paired_verdict(self.start, measurement, set_name)
            items = item_verdict(self.start.results, measurement.results, set_name)
            self.verdicts.append(
                {
                    "checkpoint": measurement.checkpoint,
                    "dream_s": round(measurement.dream_s, 1),
                    "arm": measurement.arm,
                    "set": set_name,
                    "measures": SET_LABELS[set_name],
                    "unit": "template",
                    "promote": verdict.promote,
                    "test": verdict.test,
                    "n": verdict.n,
                    "lift": round(verdict.lift, 4),
                    "p_value": verdict.p_value,
                    "summary": verdict.summary(),
                    "items_n": items.n,
                    "items_p_value": items.p_value,
                    "items_summary": "not the verdict (items of one template are not "
                    "independent): " + items.summary(),
                }
            )

    def rows(self) -> list[dict[str, Any]]:
        """One CSV row per measurement × set: pass@1 with its Wilson 95% interval."""
        rows = []
        for m in self.measurements:
            for set_name in ("a", "b"):
                passed, n = m.pass_rate(set_name)
                rate = pass_at_1(passed, n)
                rows.append(
                    {
                        "checkpoint": m.checkpoint,
                        "dream_minutes": round(m.dream_s / 60, 2),
                        "cycles": m.cycles,
                        "arm": m.arm,
                        "set": set_name,
                        "passed": passed,
                        "n": n,
                        "pass_at_1": round(rate.rate, 4),
                        "ci_low": round(rate.low, 4),
                        "ci_high": round(rate.high, 4),
                    }
                )
        return rows

    def write(self, out_dir: Path) -> dict[str, Path]:
        """Write `curve.csv`, `verdicts.json`, `items.csv` and `curve.png` into `out_dir`.

        Returns:
            Name → path of each file written (no PNG when matplotlib is missing).
        """
        out_dir.mkdir(parents=True, exist_ok=True)
        written: dict[str, Path] = {}
        rows = self.rows()
        path = out_dir / "curve.csv"
        with path.open("w", newline="", encoding="utf-8") as handle:
            writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
        written["csv"] = path
        items = out_dir / "items.csv"
        with items.open("w", newline="", encoding="utf-8") as handle:
            fields = [
                "checkpoint", "arm", "task_id", "set", "cluster", "tier", "passed", "tokens",
                "shown", "reused",
            ]  # fmt: skip
            writer = csv.DictWriter(handle, fieldnames=fields)
            writer.writeheader()
            for m in self.measurements:
                for r in m.results:
                    writer.writerow(
                        {
                            "checkpoint": m.checkpoint,
                            "arm": m.arm,
                            "task_id": r.task_id,
                            "set": r.set_name,
                            "cluster": r.cluster,
                            "tier": r.tier,
                            "passed": int(r.passed),
                            "tokens": r.tokens,
                            "shown": r.shown,
                            "reused": int(r.reused),
                        }
                    )
        written["items"] = items
        verdicts = out_dir / "verdicts.json"
        verdicts.write_text(json.dumps(self.verdicts, indent=2) + "\n", encoding="utf-8")
        written["verdicts"] = verdicts
        png = plot(rows, out_dir / "curve.png")
        if png is not None:
            written["png"] = png
        return written


def practised_hashes(store: Store) -> list[str]:
    """Challenge hashes of every self-play or verification trajectory in `store`."""
    rows = store.query(
        "SELECT DISTINCT json_extract(record, '$.extra.challenge_hash') FROM trajectories "
        "WHERE task_kind IN ('selfplay', 'verification')",
        [],
    )
    return [str(row[0]) for row in rows if row[0]]


def run_curve(
    *,
    store: Store,
    memory: SkillMemory,
    loop: DreamLoop,
    eval_solver: Solver,
    heldout: HeldOut,
    checkpoints: int,
    cycles_per_checkpoint: int | None,
    minutes_per_checkpoint: float | None,
    ablation: Literal["none", "final", "all"] = "final",
    session_id: str = "curve",
    on_measure: Callable[[str], None] | None = None,
    on_item: Callable[[int, int, ItemResult], None] | None = None,
    on_cycle: Callable[[int, CycleResult], None] | None = None,
    backend: Backend | None = None,
    resources: Resources | None = None,
    journal: CurveJournal | None = None,
) -> Curve:
    """Measure, dream, measure again at each checkpoint.

    Args:
        store: the (fresh) database of this run.
        memory: the playbook the dream fills and the arms recall from.
        loop: the dream loop; it must exclude `heldout.unseen_templates`.
        eval_solver: a single-attempt solver for the held-out items.
        heldout: from `build_heldout`.
        checkpoints: how many dream chunks (and measurements after the start).
        cycles_per_checkpoint: dream cycles per chunk; or
        minutes_per_checkpoint: dream minutes per chunk (whole cycles).
        ablation: measure `lessons` and `skills` arms at the last checkpoint
            (`final`), at every checkpoint (`all`) or never (`none`); unless
            `none`, the `placebo` and `equal_compute` control arms at the last
            checkpoint (`_curve_arms`).
        session_id: recorded on eval trajectories.
        on_measure: called with a line when a phase starts.
        on_item: called after each held-out item (index from 1, total, result).
        on_cycle: called after each dream cycle (index from 0, result).
        backend: where held-out solves run (None: here, one after the other;
            see `measure`); the dream itself always runs here.
        resources: the eval solver's model and sandbox for `backend`.
        journal: the run directory's journal (`_curve_journal`): every item
            and dream cycle is written to it as it finishes, and what it
            already holds is not measured or dreamt again (a resumed curve).
            `curve.cycles` then holds this session's cycles only.

    Returns:
        The `Curve` (call `write` to save it).

    Raises:
        UserError: bad arguments, or a held-out challenge was practised.
        InfrastructureError: the model or sandbox failed.
    """
    if not loop.exclude_templates >= heldout.unseen_templates:
        raise UserError("the dream loop must exclude every template of held-out set (b)")
    if (cycles_per_checkpoint is None) == (minutes_per_checkpoint is None):
        raise UserError("give exactly one of cycles or minutes per checkpoint")
    notify = on_measure or (lambda _msg: None)
    curve = Curve(heldout)

    def measured(
        solver: Solver, arm: Arm, checkpoint: int, dream_s: float, cycles: int
    ) -> Measurement:
        done = journal.items(checkpoint, arm) if journal is not None else {}
        if done:
            notify(f"checkpoint {checkpoint}: arm {arm}: {len(done)} item(s) measured earlier")

        def record(index: int, total: int, row: ItemResult) -> None:
            if journal is not None:
                journal.record_item(checkpoint, arm, row)
            if on_item is not None:
                on_item(index, total, row)

        return measure(
            solver, store, memory if arm != "none" else None, heldout, arm,
            checkpoint=checkpoint, dream_s=dream_s, cycles=cycles, session_id=session_id,
            on_item=record, start=curve.start if curve.measurements else None,
            backend=backend, resources=resources, done=done,
        )  # fmt: skip

    notify("checkpoint 0: measuring the start (nothing learned)")
    curve.add(measured(eval_solver, "none", 0, 0.0, 0))
    dream_s = 0.0
    cycles_total = 0
    for checkpoint in range(1, checkpoints + 1):
        done, spent = _dream_chunk(
            loop, curve, journal, checkpoint, cycles_per_checkpoint, minutes_per_checkpoint,
            notify=notify, on_cycle=on_cycle, cycles_before=cycles_total,
        )  # fmt: skip
        dream_s += spent
        cycles_total += done
        check_disjoint(heldout, practised_hashes(store))
        for arm in _arms_at(checkpoint, checkpoints, ablation):
            solver = eval_solver
            if arm == "equal_compute":
                k = equal_compute_attempts(dream_model_calls(store), len(heldout.items))
                solver = Solver(
                    eval_solver.model,
                    eval_solver.sandbox,
                    eval_solver.config.model_copy(update={"max_attempts": k}),
                )
                notify(f"checkpoint {checkpoint}: equal compute is {k} attempt(s) per item")
            notify(f"checkpoint {checkpoint}: measuring arm {arm}")
            curve.add(measured(solver, arm, checkpoint, dream_s, cycles_total))
    return curve


def _arms_at(checkpoint: int, checkpoints: int, ablation: str) -> list[Arm]:
    """The arms measured after `checkpoint`'s dream chunk (see `run_curve`'s `ablation`)."""
    arms: list[Arm] = ["both"]
    if ablation == "all" or (ablation == "final" and checkpoint == checkpoints):
        arms += ["lessons", "skills"]
    if ablation != "none" and checkpoint == checkpoints:
        arms += ["placebo", "equal_compute"]
    return arms


def _dream_chunk(
    loop: DreamLoop,
    curve: Curve,
    journal: CurveJournal | None,
    checkpoint: int,
    cycles: int | None,
    minutes: float | None,
    *,
    notify: Callable[[str], None],
    on_cycle: Callable[[int, CycleResult], None] | None,
    cycles_before: int,
) -> tuple[int, float]:
    """Dream `checkpoint`'s chunk (`cycles` cycles or `minutes` of whole cycles).

    A chunk the journal holds as finished is not dreamt again; one it holds in
    part goes on from its journalled cycles and seconds. Each finished cycle is
    appended to `curve.cycles` and journalled.

    Returns:
        (cycles, wall seconds) of the whole chunk, earlier sessions included.
    """
    chunk = journal.chunk(checkpoint) if journal is not None else DreamChunk()
    done, spent = chunk.cycles, chunk.seconds
    if chunk.done:
        notify(f"checkpoint {checkpoint}: dreamt earlier ({done} cycle(s))")
        return done, spent
    notify(
        f"checkpoint {checkpoint}: dreaming"
        + (f" (going on after {done} cycle(s), {spent / 60:.1f} min)" if done else "")
    )
    while not (
        (cycles is not None and done >= cycles) or (minutes is not None and spent >= minutes * 60)
    ):
        started = time.perf_counter()
        cycle = loop.run_cycle()  # an InfrastructureError stops the curve
        seconds = time.perf_counter() - started
        curve.cycles.append(cycle)
        done += 1
        spent += seconds
        if journal is not None:
            journal.record_cycle(checkpoint, cycle, seconds)
        if on_cycle is not None:
            on_cycle(cycles_before + done - 1, cycle)
    if journal is not None:
        journal.record_chunk_done(checkpoint)
    return done, spent


__all__ = [
    "ARMS",
    "DREAM_SEED_LIMIT",
    "HELDOUT_SEED_BASE",
    "Curve",
    "CurveJournal",
    "DreamChunk",
    "HeldOut",
    "HeldOutItem",
    "ItemResult",
    "Measurement",
    "build_heldout",
    "check_disjoint",
    "measure",
    "paired_verdict",
    "plot",
    "practised_hashes",
    "run_curve",
]
