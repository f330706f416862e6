"""Which run of the book a set of outputs belongs to, and writes that never leave half a file.

A run of the book (:func:`physid.book.runner.run_book`) writes ``_build/reproduction/run.json``
when it starts, with ``status: "running"``, the commit it ran (and whether the checkout had
uncommitted changes), the scale, the seed and the time; it rewrites it as ``"complete"`` or
``"failed"`` (with the error) when it ends. A run that was killed leaves ``"running"``
behind: outputs never look current unless the run that made them finished. The summary on the
terminal prints :meth:`RunRecord.describe`, the reproduction report :meth:`RunRecord.identity`.

:func:`write_text_atomic` writes a file through a temporary file in the same folder and a
rename, so a reader sees the old file or the new one, never a part of it.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime
from pathlib import Path

__all__ = ["STATUSES", "RunRecord", "checkout_commit", "load_record", "write_text_atomic"]

#: What a :class:`RunRecord` can say of its run.
STATUSES = ("running", "complete", "failed")


def write_text_atomic(path: Path, text: str) -> Path:
    """Write ``text`` to ``path`` (creating its folder) through a temporary file and a rename."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "w") as file:
            file.write(text)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return path


def checkout_commit(root: Path) -> str:
    """The short commit of the git checkout at ``root``, with ``+changes`` when files differ
    from it; ``"unknown"`` outside a git checkout."""

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", "-C", str(root), *args], capture_output=True, text=True, check=True
        ).stdout.strip()

    try:
        commit = git("rev-parse", "--short=12", "HEAD")
        changed = git("status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return commit + ("+changes" if changed else "")


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


@dataclass(frozen=True)
class RunRecord:
    """One run of the book: what ran, when, and how it ended.

    Args:
        commit: :func:`checkout_commit` of the book's root.
        scale: the scale the chapters ran at.
        seed: the seed they ran with.
        started: when the run started (UTC).
        status: one of :data:`STATUSES`.
        finished: when it ended (UTC), or None while it runs.
        error: the first line of the error a failed run ended with.
    """

    commit: str
    scale: str
    seed: int
    started: str
    status: str = "running"
    finished: str | None = None
    error: str | None = None

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"status must be one of {STATUSES}, got {self.status!r}")

    @classmethod
    def start(cls, root: Path, scale: str, seed: int) -> RunRecord:
        """The record of a run of the book at ``root`` that starts now."""
        return cls(checkout_commit(root), scale, seed, _now())

    def end(self, error: BaseException | None = None) -> RunRecord:
        """The record once the run ended now: complete, or failed with ``error``."""
        if error is None:
            return replace(self, status="complete", finished=_now())
        first = (str(error).strip().splitlines() or [""])[0]
        message = f"{type(error).__name__}: {first}" if first else type(error).__name__
        return replace(self, status="failed", finished=_now(), error=message)

    def identity(self) -> str:
        """The run's commit, scale, seed and start, as a phrase."""
        return (
            f"commit {self.commit}, scale {self.scale}, seed {self.seed}, "
            f"started {self.started}"
        )

    def describe(self) -> str:
        """One line: :meth:`identity` and how the run ended."""
        text = self.identity()
        if self.status == "running":
            return f"{text}; still running (or killed): these outputs are incomplete"
        text += f", {self.status} {self.finished}"
        return text + (f" ({self.error})" if self.error else "")

    def write(self, path: Path) -> Path:
        """Write the record as JSON to ``path`` (:func:`write_text_atomic`)."""
        return write_text_atomic(path, json.dumps(asdict(self), indent=2) + "\n")


def load_record(path: Path) -> RunRecord:
    """Read a record written by :meth:`RunRecord.write`."""
    return RunRecord(**json.loads(Path(path).read_text()))
