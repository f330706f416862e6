"""Random streams that follow names, never positions in a list.

A seeded draw for one entry of a registry or a folder (an object's ground truth and pushes, a
method's random choices) takes :func:`name_stream` of the entry's name as part of its seed, so
adding, removing or reordering the other entries changes none of its numbers.
"""

from __future__ import annotations

import zlib

__all__ = ["name_stream"]


def name_stream(name: str) -> int:
    """A stable non-negative integer (< 2³²) for ``name``: its CRC-32, the same on every
    machine and Python version (unlike ``hash``)."""
    if not isinstance(name, str) or not name:
        raise TypeError(f"name must be a non-empty string, got {name!r}")
    return zlib.crc32(name.encode("utf-8"))
