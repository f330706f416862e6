"""The errors of the book runner: a chapter that fails, a build that fails."""

from __future__ import annotations


class ChapterError(RuntimeError):
    """A chapter's cell raised while the runner executed it."""


class BuildError(RuntimeError):
    """Sphinx (jupyter-book) reported a warning or an error."""
