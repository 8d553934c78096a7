"""Read the start of a GGUF file: format version, counts and `general.name`, nothing more.

Used by `nightschool doctor` to tell a model file from a broken or foreign one
without loading it. Format: https://github.com/ggml-org/ggml/blob/master/docs/gguf.md
(little-endian; strings are a u64 length and UTF-8 bytes; versions 2 and 3 use
u64 counts, version 1 used u32 and is no longer loaded by llama.cpp).
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

GGUF_HEAD_BYTES = 1 << 20
"""How much of a GGUF file `read_head` reads by default (1 MiB; `general.name` comes early)."""

_GGUF_SCALAR_SIZES = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
"""Byte sizes of the GGUF scalar value types (8 is string, 9 is array)."""


@dataclass(frozen=True)
class GgufHeader:
    """What `read_gguf_header` found.

    Attributes:
        version: GGUF format version (2 or 3).
        tensors: tensor count.
        metadata: metadata key-value count.
        name: the `general.name` value, or None when not found in the bytes read.
    """

    version: int
    tensors: int
    metadata: int
    name: str | None


class _Cursor:
    """Little-endian reads over a bytes buffer; `struct.error` when it runs out."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.at = 0

    def take(self, fmt: str) -> int:
        (value,) = struct.unpack_from("<" + fmt, self.data, self.at)
        self.at += struct.calcsize(fmt)
        return int(value)

    def string(self) -> str:
        size = self.take("Q")
        if self.at + size > len(self.data):
            raise struct.error("string runs past the bytes read")
        self.at += size
        return self.data[self.at - size : self.at].decode("utf-8", errors="replace")

    def skip(self, kind: int) -> None:
        if kind == 8:
            self.string()
        elif kind == 9:
            inner, count = self.take("I"), self.take("Q")
            if inner in _GGUF_SCALAR_SIZES:
                self.at += _GGUF_SCALAR_SIZES[inner] * count
            else:
                for _ in range(count):
                    self.skip(inner)
        elif kind in _GGUF_SCALAR_SIZES:
            self.at += _GGUF_SCALAR_SIZES[kind]
        else:
            raise ValueError(f"unknown GGUF value type {kind}")


def read_gguf_header(head: bytes) -> GgufHeader:
    """Parse the start of a GGUF file (https://github.com/ggml-org/ggml/blob/master/docs/gguf.md).

    Args:
        head: the file's first bytes (`GGUF_HEAD_BYTES` is plenty for `general.name`).

    Returns:
        The header; `name` is None when `general.name` lies beyond `head`.

    Raises:
        ValueError: not a GGUF file, a version llama.cpp no longer loads (1) or
            does not know yet, or implausible counts.
    """
    cursor = _Cursor(head)
    if head[:4] != b"GGUF":
        raise ValueError(f"no GGUF magic (the file starts with {head[:4]!r})")
    try:
        cursor.at = 4
        version, tensors, metadata = cursor.take("I"), cursor.take("Q"), cursor.take("Q")
    except struct.error:
        raise ValueError("the GGUF header is cut short") from None
    if version not in (2, 3):
        raise ValueError(f"GGUF version {version} (llama.cpp loads versions 2 and 3)")
    if tensors > 1 << 20 or metadata > 1 << 16:
        raise ValueError(f"implausible GGUF counts: {tensors} tensors, {metadata} metadata keys")
    name = None
    try:
        for _ in range(metadata):
            key, kind = cursor.string(), cursor.take("I")
            if key == "general.name" and kind == 8:
                name = cursor.string()
                break
            cursor.skip(kind)
    except struct.error:
        pass  # `general.name` lies beyond the bytes read
    return GgufHeader(version, tensors, metadata, name)


def read_head(paths: Sequence[Path], size: int = GGUF_HEAD_BYTES) -> bytes:
    """The first `size` bytes of `paths` concatenated (a split GGUF's parts, in order)."""
    out = b""
    for path in paths:
        with open(path, "rb") as handle:
            out += handle.read(size - len(out))
        if len(out) >= size:
            break
    return out
