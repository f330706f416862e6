"""Physical constants shared by every part of the book (one vocabulary across parts)."""

from __future__ import annotations

#: Standard gravity in m/s², used by every simulator of the book (pybullet is set to match).
GRAVITY: float = 9.81
