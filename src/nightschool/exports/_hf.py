"""`hf`: a Hugging Face `datasets`-loadable directory of trajectories.

Layout (the Hub's own convention, so `datasets.load_dataset(<dir>)` and a Hub
upload both read it as one `train` split):

    <dir>/README.md                              dataset card (YAML header + counts)
    <dir>/data/train-00000-of-00001.parquet      one row per trajectory

Columns (`SCHEMA`): `id`, `timestamp` (UTC), `session_id`, `task_kind`,
`cluster`, `tier`, `template`, `challenge_hash`, `model`, `temperature`,
`outcome` (effective, corrections applied), `corrected_by`, `failure_reason`,
`attempts`, `sample_of` (`dream --samples`), `system_prompt`, `user_request`,
`response` (the last program run, fenced, or the final reply), `messages`
(system/user/assistant with `response`: what `trl.SFTTrainer` reads),
`tool_calls` (JSON text), `tokens_in`, `tokens_out`, `duration_s`. Failed and
unknown trajectories are rows too: filter on `outcome`.

The directory is built beside the target and renamed into place, so a reader
never sees half an export.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from nightschool.errors import UserError
from nightschool.exports._select import (
    Exclusions,
    Tally,
    clean,
    clean_value,
    fence,
    judged_runs,
)
from nightschool.trajectory import Trajectory

DATA_FILE = "data/train-00000-of-00001.parquet"
"""Where the rows go, relative to the export directory."""

_STRING_COLUMNS = (
    "id", "session_id", "task_kind", "cluster", "tier", "template", "challenge_hash", "model",
)  # fmt: skip


def _schema() -> Any:
    import pyarrow as pa  # function-local: start-up time (pyarrow, Parquet export only)

    message = pa.struct([("role", pa.string()), ("content", pa.string())])
    return pa.schema(
        [
            ("id", pa.string()),
            ("timestamp", pa.timestamp("us", tz="UTC")),
            *((name, pa.string()) for name in _STRING_COLUMNS[1:]),
            ("temperature", pa.float64()),
            ("outcome", pa.string()),
            ("corrected_by", pa.string()),
            ("failure_reason", pa.string()),
            ("attempts", pa.int64()),
            ("sample_of", pa.string()),
            ("system_prompt", pa.string()),
            ("user_request", pa.string()),
            ("response", pa.string()),
            ("messages", pa.list_(message)),
            ("tool_calls", pa.string()),
            ("tokens_in", pa.int64()),
            ("tokens_out", pa.int64()),
            ("duration_s", pa.float64()),
        ]
    )


def hf_row(trajectory: Trajectory) -> dict[str, Any]:
    """One dataset row (see the module docstring), every text redacted."""
    runs = judged_runs(trajectory)
    response = fence(runs[-1]) if runs else clean(trajectory.final_response.strip())
    system, request = clean(trajectory.system_prompt), clean(trajectory.user_request)
    messages = [{"role": "system", "content": system}] if system.strip() else []
    messages += [
        {"role": "user", "content": request},
        {"role": "assistant", "content": response},
    ]
    extra = trajectory.extra
    correction = extra.get("correction")
    attempts = extra.get("attempts")
    return {
        "id": trajectory.id,
        "timestamp": trajectory.timestamp.astimezone(UTC),
        "session_id": trajectory.session_id,
        "task_kind": trajectory.task_kind,
        "cluster": trajectory.cluster,
        "tier": trajectory.tier,
        "template": extra.get("template"),
        "challenge_hash": extra.get("challenge_hash"),
        "model": trajectory.model,
        "temperature": trajectory.temperature,
        "outcome": trajectory.outcome.value,
        "corrected_by": correction.get("source") if isinstance(correction, dict) else None,
        "failure_reason": clean(trajectory.failure_reason) if trajectory.failure_reason else None,
        "attempts": attempts if isinstance(attempts, int) else None,
        "sample_of": extra.get("sample_of"),
        "system_prompt": system,
        "user_request": request,
        "response": response,
        "messages": messages,
        "tool_calls": json.dumps(
            clean_value([call.model_dump(mode="json") for call in trajectory.tool_calls]),
            ensure_ascii=False,
        ),
        "tokens_in": trajectory.tokens_in,
        "tokens_out": trajectory.tokens_out,
        "duration_s": trajectory.duration_s,
    }


def hf_rows(
    trajectories: Iterable[Trajectory],
    *,
    exclusions: Exclusions | None = None,
    tally: Tally | None = None,
) -> Iterator[dict[str, Any]]:
    """Yield `hf_row` of every trajectory `exclusions` lets through, in input order."""
    exclusions = exclusions or Exclusions()
    tally = tally if tally is not None else Tally()
    tally.unit = "trajectories"
    for trajectory in trajectories:
        why = exclusions.reason(trajectory)
        if why is not None:
            tally.skip(why)
            continue
        tally.written += 1
        yield hf_row(trajectory)


@dataclass
class CardFacts:
    """What the dataset card reports.

    Attributes:
        rows: rows written.
        outcomes, task_kinds, clusters, models: row counts per value.
        first, last: the oldest and newest trajectory (None when empty).
        skipped: trajectories left out, per reason.
        selection: the filters the export was asked for (name -> value).
        exported_at: when the export ran (UTC).
    """

    rows: int = 0
    outcomes: Counter[str] = field(default_factory=Counter)
    task_kinds: Counter[str] = field(default_factory=Counter)
    clusters: Counter[str] = field(default_factory=Counter)
    models: Counter[str] = field(default_factory=Counter)
    first: datetime | None = None
    last: datetime | None = None
    skipped: Mapping[str, int] = field(default_factory=dict)
    selection: Mapping[str, str] = field(default_factory=dict)
    exported_at: datetime = field(default_factory=lambda: datetime.now(UTC))

    def add(self, row: Mapping[str, Any]) -> None:
        """Count one row."""
        self.rows += 1
        self.outcomes[row["outcome"]] += 1
        self.task_kinds[row["task_kind"]] += 1
        self.clusters[row["cluster"] or "(none)"] += 1
        self.models[row["model"] or "(unknown)"] += 1
        moment: datetime = row["timestamp"]
        self.first = moment if self.first is None else min(self.first, moment)
        self.last = moment if self.last is None else max(self.last, moment)


def _size_category(rows: int) -> str:
    for limit, name in ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K")):
        if rows < limit:
            return name
    return "100K<n<1M" if rows < 1_000_000 else "1M<n<10M"


def _table(title: str, counts: Counter[str]) -> list[str]:
    lines = [f"| {title} | rows |", "|---|---:|"]
    ordered = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    lines += [f"| {name} | {n} |" for name, n in ordered]
    return [*lines, ""]


def dataset_card(facts: CardFacts, *, version: str = "") -> str:
    """The `README.md` of an export: YAML metadata for the Hub and `datasets`, then prose.

    The YAML header's `configs` entry maps the `train` split to `data/train-*`,
    which is what `datasets.load_dataset(<dir>)` reads. The body gives the
    counts (outcome, task kind, cluster), the models, the date range, the
    filters, what was left out and why, and the redaction note.
    """
    q = json.dumps  # JSON strings are valid YAML scalars
    span = (
        f"{facts.first:%Y-%m-%d %H:%M} to {facts.last:%Y-%m-%d %H:%M} UTC"
        if facts.first and facts.last
        else "no trajectories"
    )
    selection = ", ".join(f"{k} = {v}" for k, v in facts.selection.items()) or "none"
    skipped = [f"- {n} {why}" for why, n in sorted(facts.skipped.items())] or ["- nothing"]
    lines = [
        "---",
        f"pretty_name: {q('nightschool trajectories')}",
        "language:",
        "- en",
        "tags:",
        "- nightschool",
        "- agent-trajectories",
        "- code",
        "task_categories:",
        "- text-generation",
        "size_categories:",
        f"- {q(_size_category(facts.rows))}",
        "configs:",
        "- config_name: default",
        "  data_files:",
        "  - split: train",
        "    path: data/train-*",
        "---",
        "",
        "# nightschool trajectories",
        "",
        "Episodes of a local LLM agent recorded by nightschool"
        + (f" {version}" if version else "")
        + f", exported {facts.exported_at:%Y-%m-%d %H:%M} UTC: self-play challenges "
        "judged by a validator in a sandbox, chat turns, reflections. One row per "
        "trajectory; `outcome` is the effective verdict (later corrections applied).",
        "",
        f"- rows: {facts.rows}",
        f"- date range: {span}",
        f"- filters: {selection}",
        "",
        *_table("outcome", facts.outcomes),
        *_table("task kind", facts.task_kinds),
        *_table("cluster", facts.clusters),
        *_table("model", facts.models),
        "## Left out",
        "",
        "Eval-suite and verification trajectories, any trajectory on a challenge or "
        "task text they measured, templates a learning curve holds out, and renderings "
        "at measurement seeds are never exported, so the data cannot leak into a "
        "benchmark. Left out of this export:",
        "",
        *skipped,
        "",
        "## Redaction",
        "",
        "Every record was redacted when it was stored and every text was redacted "
        "again at export with the current rules: API keys and tokens, private keys, "
        "JWTs, passwords in URIs, cookies, secret-named values, e-mail addresses, "
        "home-directory user names, .onion and non-loopback IPv4 addresses become "
        "placeholders such as `<REDACTED_API_KEY>` or `/home/<user>`. Redaction is "
        "pattern matching: a secret without a recognisable shape or name (a bare "
        "password in prose) can remain. Review before publishing.",
        "",
        "## Load",
        "",
        "```python",
        "from datasets import load_dataset",
        'ds = load_dataset("path/to/this/directory", split="train")',
        'passed = ds.filter(lambda row: row["outcome"] == "passed")',
        "```",
        "",
    ]
    return "\n".join(lines)


def check_target(target: Path) -> None:
    """Raise `UserError` unless `target` can become a new export directory.

    It may not exist yet (its parent must) or be an empty directory.
    """
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise UserError(
            f"{target} already exists and is not an empty directory",
            hint="choose a new --output path or remove the old export",
        )
    if not target.parent.is_dir():
        raise UserError(f"the parent directory {target.parent} does not exist")


@contextlib.contextmanager
def atomic_directory(target: Path) -> Iterator[Path]:
    """Yield a fresh directory beside `target`; on success it is renamed to `target`.

    On error the partial directory is removed and `target` is untouched.

    Raises:
        UserError: see `check_target`.
    """
    check_target(target)
    partial = Path(tempfile.mkdtemp(prefix=f".{target.name}.partial-", dir=target.parent))
    try:
        yield partial
        if target.exists():
            target.rmdir()  # empty (checked above); rename cannot replace it everywhere
        os.rename(partial, target)
    finally:
        shutil.rmtree(partial, ignore_errors=True)


def write_hf_dataset(
    trajectories: Iterable[Trajectory],
    directory: Path,
    *,
    exclusions: Exclusions | None = None,
    tally: Tally | None = None,
    selection: Mapping[str, str] | None = None,
    version: str = "",
) -> CardFacts:
    """Write the dataset directory (Parquet + card) atomically; return what the card says.

    Args:
        trajectories: any trajectories (corrections overlaid), oldest first
            for a readable file; not mutated.
        directory: the export directory; must not exist or be empty.
        exclusions: measured items to leave out (None: only the measurement
            kinds themselves).
        tally: counts rows written and trajectories skipped, per reason.
        selection: the filters, shown in the card.
        version: the nightschool version, shown in the card.

    Raises:
        UserError: no trajectory is left to export (an empty Parquet file does
            not load), or see `check_target`.
    """
    # function-local: start-up time (pyarrow, Parquet export only)
    import pyarrow as pa
    import pyarrow.parquet as pq

    check_target(directory)
    tally = tally if tally is not None else Tally()
    facts = CardFacts(selection=dict(selection or {}))
    rows = []
    for row in hf_rows(trajectories, exclusions=exclusions, tally=tally):
        facts.add(row)
        rows.append(row)
    facts.skipped = dict(tally.skipped)
    if not rows:  # datasets 5.2 cannot load an empty Parquet file ("BatchSize must be > 0")
        raise UserError(
            f"no trajectories to export ({tally.summary()}); nothing was written",
            hint="loosen --since/--cluster/--outcome/--task-kind",
        )
    with atomic_directory(directory) as partial:
        data = partial / DATA_FILE
        data.parent.mkdir(parents=True)
        pq.write_table(pa.Table.from_pylist(rows, schema=_schema()), data)
        (partial / "README.md").write_text(dataset_card(facts, version=version), "utf-8")
    return facts
