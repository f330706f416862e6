"""Wall time per stage of a chapter, for the table a chapter closes with.

A chapter's driver marks its public functions as stages (:meth:`StageClock.stage`); each call
adds its wall time to the stage of that name, and a stage called from inside another counts
in the outer one only, so the stages' times add up to the time spent in them. A stage whose
result comes from the disk cache (:func:`physid.core.sweeps.cached`) takes only the lookup.
The times are wall-clock and vary from run to run: a chapter shows them in a table, and no
claim depends on them.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from typing import Any

__all__ = ["StageClock"]


class StageClock:
    """The wall time of each stage (a decorated function) since the clock was made or
    :meth:`reset`, in the order the stages were first called."""

    def __init__(self) -> None:
        self._seconds: dict[str, float] = {}
        self._calls: dict[str, int] = {}
        self._depth = 0

    def stage(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        """``fn``, timed as the stage ``fn.__name__`` (a call inside another stage counts in
        that one only)."""

        @functools.wraps(fn)
        def timed(*args: Any, **kwargs: Any) -> Any:
            outer = self._depth == 0
            self._depth += 1
            start = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                self._depth -= 1
                if outer:
                    name = fn.__name__
                    self._seconds[name] = (self._seconds.get(name, 0.0)
                                           + time.perf_counter() - start)
                    self._calls[name] = self._calls.get(name, 0) + 1

        return timed

    def reset(self) -> None:
        """Forget every stage's time."""
        self._seconds.clear()
        self._calls.clear()

    def rows(self) -> list[dict[str, Any]]:
        """One row per stage: its name, calls, seconds and share of the stages' total, then a
        total row."""
        total = sum(self._seconds.values())
        rows = [{"stage": name, "calls": self._calls[name], "seconds": seconds,
                 "share": seconds / total if total > 0 else 0.0}
                for name, seconds in self._seconds.items()]
        rows.append({"stage": "all stages", "calls": sum(self._calls.values()),
                     "seconds": total, "share": 1.0 if total > 0 else 0.0})
        return rows
