"""`first_draw`: an arm's answer as the first of at most three draws, against resample2."""

from __future__ import annotations

import dataclasses

from nightschool.evals.stream import StreamRow, first_draw


def row(task: int, arm: str, passed: bool, public: bool, calls: int = 1) -> StreamRow:
    return StreamRow(task, f"t{task}", arm, passed, public, "", 100 * calls, 0, model_calls=calls)


def reuse(of: StreamRow, arm: str) -> StreamRow:
    return dataclasses.replace(of, arm=arm, reused=True)


def stream() -> list[StreamRow]:
    """Six tasks, one per branch of the policy (see each comment)."""
    rows: list[StreamRow] = []

    def plain(task: int, n: tuple[bool, bool], r: tuple[bool, bool] | None, r2: bool) -> None:
        """No memory (hidden, public); the resample draw where N failed; resample2's outcome."""
        first = row(task, "no_memory", *n)
        rows.append(first)
        if r is None:  # N passed its public test: neither redraw was made
            rows.extend([reuse(first, "resample"), reuse(first, "resample2")])
            return
        second = row(task, "resample", *r, calls=2)
        rows.append(second)
        rows.append(reuse(second, "resample2") if r[1] else row(task, "resample2", r2, r2, 3))

    # t0: the memory answer passes; three plain draws all fail -> a win
    plain(0, (False, False), (False, False), r2=False)
    rows.append(row(0, "memory", True, True))
    # t1: the memory answer fails its public test, the plain answer passes -> a tie
    plain(1, (True, True), None, r2=True)
    rows.append(row(1, "memory", False, False))
    # t2: memory and the plain answer fail, the resample draw passes -> a tie
    plain(2, (False, False), (True, True), r2=True)
    rows.append(row(2, "memory", False, False, calls=2))  # a lesson extraction call
    # t3: memory, plain and resample fail; resample2's third draw passes -> a loss
    plain(3, (False, False), (False, False), r2=True)
    rows.append(row(3, "memory", False, False, calls=2))
    # t4: memory was shown nothing (the no-memory answer reused): resample2's draws
    plain(4, (False, False), (False, False), r2=True)
    rows.append(reuse(next(r for r in rows if r.task_id == "t4"), "memory"))
    # t5: the memory answer passes its public test but not the hidden ones -> a loss
    plain(5, (True, True), None, r2=True)
    rows.append(row(5, "memory", False, True))
    return rows


def test_each_arm_is_the_first_of_three_draws_against_resample2() -> None:
    (line,) = first_draw(stream())
    c = line.versus_resample2
    assert line.arm == "memory" and c.base == "resample2"
    assert (c.wins, c.losses) == (1, 2)
    assert c.figures["memory"].passed == 4 and c.figures["resample2"].passed == 5
    assert line.redrawn == 4  # t1 t2 t3 t4: the first draw failed its public test
    # every draw made counts: t0 1, t1 1+1, t2 2+2, t3 2+2, t4 resample2's 3, t5 1
    assert c.figures["memory"].model_calls == 1 + 2 + 4 + 4 + 3 + 1
    assert c.figures["resample2"].model_calls == 3 + 1 + 2 + 3 + 3 + 1
    assert line.holm_p == c.verdict.p_value and not line.promoted


def test_every_first_draw_arm_is_a_line_and_holm_spans_them() -> None:
    rows = stream()
    # a static arm that passes everything: it wins wherever resample2 failed (t0)
    rows += [row(k, "static", True, True) for k in range(6)]
    lines = {line.arm: line for line in first_draw(rows)}
    assert list(lines) == ["memory", "static"]  # ALL_ARMS order; second-chance arms left out
    static = lines["static"].versus_resample2
    assert (static.wins, static.losses) == (1, 0) and lines["static"].redrawn == 0
    ps = sorted(line.versus_resample2.verdict.p_value or 1.0 for line in lines.values())
    assert min(line.holm_p or 1.0 for line in lines.values()) == min(1.0, 2 * ps[0])


def test_without_the_redraw_arms_there_is_no_table() -> None:
    rows = [r for r in stream() if r.arm != "resample2"]
    assert first_draw(rows) == []
    assert first_draw([r for r in stream() if r.arm in ("no_memory", "memory")]) == []
