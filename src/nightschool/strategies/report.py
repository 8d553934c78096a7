"""Reports a person reads: a table per generation, the archive lineage, the verdict.

Beside them: which contract the author saw (built-in or a file, with its
SHA-256), the holdout's play latency (reported, never gating) and the run's
cost ledger (tokens, calls and seconds per role and model).

`print_report` renders them with Rich; `write_reports` writes `report.md` and
`report.json` into the run directory. Both read only the checkpoint state.
Text that comes from models, servers or the lint (author failures, errors) is
escaped before Rich sees it: a `[/INST]` in a server's error is no markup.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.tree import Tree

from nightschool.strategies.archive import write_json_atomic
from nightschool.strategies.ledger import ROLES, totals

__all__ = ["print_report", "report_data", "report_markdown", "write_reports"]

_COLUMNS = ("candidate", "parent", "score", "cost (tok/task)", "s/task", "gzip bytes", "status")


def _num(value: Any, fmt: str) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    return format(value, fmt)


def _rows(generation: dict[str, Any], champion: str | None) -> list[list[str]]:
    rows = []
    for row in generation["rows"]:
        status = row["status"]
        if row["name"] == champion:
            status += " ★ champion"
        if row["status"] == "author_failed":
            status += f": {row['detail'][:80]}"
        rows.append(
            [
                row["name"],
                row["parent"] or "—",
                _num(row["score"], ".3f"),
                _num(row["cost"], ".1f"),
                _num(row.get("seconds"), ".2f"),
                str(row["gzip_bytes"] or "—"),
                status,
            ]
        )
    return rows


def _generations(state: dict[str, Any]) -> list[tuple[dict[str, Any], str | None]]:
    out = [(g, g.get("champion")) for g in state["generations"]]
    if state.get("failed_generation"):
        out.append((state["failed_generation"], None))
    return out


def _children(state: dict[str, Any]) -> dict[str | None, list[dict[str, Any]]]:
    children: dict[str | None, list[dict[str, Any]]] = {}
    for node in state["archive"]:
        children.setdefault(node["parent"], []).append(node)
    return children


def _node_label(node: dict[str, Any]) -> str:
    score = _num(node["score"], ".3f")
    cost = _num(node["cost"], ".1f")
    return (
        f"{node['name']} (gen {node['generation']}, {node['status']}, score {score}, "
        f"cost {cost}, {node['gzip_bytes']} B gz)"
    )


def _verdict_lines(state: dict[str, Any]) -> list[str]:
    verdict = state.get("verdict")
    if verdict is None:
        return [f"no verdict yet (status: {state['status']}; {state.get('error') or ''})".strip()]
    holdout = state.get("holdout") or {}
    start = state.get("start_champion")
    reference = f"baseline incumbent {holdout.get('baseline')}"
    if start is not None and holdout.get("baseline") == start["node"]:
        reference = f"{start['node']} (registered champion {start['id']}, {start['name']})"
    offset = holdout.get("offset")
    lines = [
        f"holdout: {len(holdout.get('tasks', []))} tasks drawn after generation "
        f"{holdout.get('drawn_after_generation')}, disjoint from train (asserted)"
        + ("" if offset is None else f", seeds at offset {offset}")
        + (" — not played" if verdict.get("test") == "none" else ""),
        f"champion {holdout.get('champion')} vs {reference}",
        f"decision: {'PROMOTE' if verdict['promote'] else 'keep incumbent'} — {verdict['reason']}",
    ]
    if verdict.get("test") != "none":
        p_value = verdict.get("p_value")
        lines += [
            f"test {verdict['test']}, n = {verdict['n']}"
            + ("" if p_value is None else f", p = {p_value:.4g}"),
            f"lift {verdict['lift']:+.3f} (interval [{_num(verdict['ci_low'], '+.3f')}, "
            f"{_num(verdict['ci_high'], '+.3f')}])",
            f"cost savings {verdict['cost_savings']:+.1f} tokens/task (interval "
            f"[{_num(verdict['cost_ci_low'], '+.1f')}, {_num(verdict['cost_ci_high'], '+.1f')}])",
        ]
    timing = verdict.get("latency")
    if timing:
        ours, theirs = timing["champion"], timing["baseline"]
        lines.append(
            f"latency (reported, not gating): champion median {_num(ours['median_s'], '.2f')} s "
            f"/ max {_num(ours['max_s'], '.2f')} s per play, baseline median "
            f"{_num(theirs['median_s'], '.2f')} s / max {_num(theirs['max_s'], '.2f')} s"
        )
    return lines


def _contract_line(state: dict[str, Any]) -> str:
    contract = state.get("contract")
    if not contract:
        return "contract: built-in (not recorded)"
    where = contract.get("path") or contract.get("source", "built-in")
    return f"contract: {where} (sha256 {str(contract.get('sha256', ''))[:16]})"


def _ledger_rows(state: dict[str, Any]) -> list[list[str]]:
    """Rows `role, model, calls, tokens, seconds`, a role's total after its models."""
    ledger = state.get("ledger") or {}
    rows = []
    summed = totals(ledger)
    for role in [*ROLES, *(r for r in ledger if r not in ROLES)]:
        models = ledger.get(role) or {}
        for model, use in models.items():
            rows.append(
                [role, model, str(use["calls"]), str(use["tokens"]), f"{use['seconds']:.2f}"]
            )
        if len(models) > 1:
            total = summed[role]
            rows.append(
                [
                    role,
                    "(all)",
                    str(total["calls"]),
                    str(total["tokens"]),
                    f"{total['seconds']:.2f}",
                ]
            )
    return rows


_LEDGER_COLUMNS = ("role", "model", "calls", "tokens", "seconds")


def report_data(state: dict[str, Any]) -> dict[str, Any]:
    """The report as JSON-ready data (generations, lineage edges, verdict)."""
    return {
        "status": state["status"],
        "error": state.get("error"),
        "config": {k: v for k, v in state["config"].items() if k != "contract"},
        "contract": state.get("contract"),
        "models": state.get("models"),
        "train": [f"{t['template']}/{t['tier']}/{t['seed']}" for t in state["train"]],
        "generations": [
            {
                "generation": g["generation"],
                "champion": champion,
                "rows": [{k: v for k, v in r.items() if k != "results"} for r in g["rows"]],
            }
            for g, champion in _generations(state)
        ],
        "lineage": [
            {k: n[k] for k in ("name", "parent", "generation", "status", "score", "cost")}
            | {"gzip_bytes": n["gzip_bytes"]}
            for n in state["archive"]
        ],
        "incumbent": state.get("incumbent"),
        "holdout": state.get("holdout"),
        "verdict": state.get("verdict"),
        "verdict_text": _verdict_lines(state),
        "ledger": state.get("ledger"),
        "ledger_totals": totals(state.get("ledger") or {}),
    }


def report_markdown(state: dict[str, Any]) -> str:
    """The report as Markdown."""
    out = ["# nightschool evolve report", ""]
    out.append(
        f"status: **{state['status']}**" + (f" — {state['error']}" if state["error"] else "")
    )
    out += ["", _contract_line(state), ""]
    for generation, champion in _generations(state):
        out += [f"## generation {generation['generation']}", ""]
        out.append("| " + " | ".join(_COLUMNS) + " |")
        out.append("|" + "---|" * len(_COLUMNS))
        for row in _rows(generation, champion):
            out.append("| " + " | ".join(cell.replace("|", "/") for cell in row) + " |")
        out.append("")
    out += ["## lineage", ""]
    children = _children(state)

    def walk(parent: str | None, depth: int) -> None:
        for node in children.get(parent, []):
            out.append("  " * depth + "- " + _node_label(node))
            walk(node["name"], depth + 1)

    walk(None, 0)
    out += ["", "## promotion decision", ""]
    out += [f"- {line}" for line in _verdict_lines(state)]
    out += ["", "## cost ledger", ""]
    out.append("| " + " | ".join(_LEDGER_COLUMNS) + " |")
    out.append("|" + "---|" * len(_LEDGER_COLUMNS))
    for row in _ledger_rows(state):
        out.append("| " + " | ".join(cell.replace("|", "/") for cell in row) + " |")
    return "\n".join(out) + "\n"


def print_report(console: Console, state: dict[str, Any]) -> None:
    """Print the generation tables, the lineage tree and the verdict with Rich."""
    for generation, champion in _generations(state):
        table = Table(title=f"generation {generation['generation']}")
        for column in _COLUMNS:
            table.add_column(
                column,
                justify="right" if column[:4] in ("scor", "cost", "s/ta", "gzip") else "left",
            )
        for row in _rows(generation, champion):
            table.add_row(*(escape(cell) for cell in row))
        console.print(table)
    tree = Tree("archive lineage")
    children = _children(state)

    def grow(branch: Tree, parent: str | None) -> None:
        for node in children.get(parent, []):
            grow(branch.add(escape(_node_label(node))), node["name"])

    grow(tree, None)
    console.print(tree)
    console.print("[bold]promotion decision[/]")
    for line in _verdict_lines(state):
        console.print(f"  {escape(line)}", highlight=False)
    ledger = Table(title="cost ledger")
    for column in _LEDGER_COLUMNS:
        ledger.add_column(column, justify="left" if column in ("role", "model") else "right")
    for row in _ledger_rows(state):
        ledger.add_row(*(escape(cell) for cell in row))
    console.print(ledger)
    console.print(escape(_contract_line(state)), highlight=False)


def write_reports(run_dir: Path, state: dict[str, Any]) -> tuple[Path, Path]:
    """Write `report.md` and `report.json` into `run_dir`; return their paths."""
    markdown = run_dir / "report.md"
    data = run_dir / "report.json"
    write_json_atomic(data, report_data(state))
    tmp = run_dir / ".report.md.tmp"
    tmp.write_text(report_markdown(state), encoding="utf-8")
    tmp.replace(markdown)
    return markdown, data
