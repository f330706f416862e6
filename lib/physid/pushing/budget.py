"""What an identification method may spend, and the record of what it found.

Every method of :mod:`physid.pushing.identify` runs through a :class:`Tracker`: it evaluates a
:class:`~physid.pushing.target.PushingTarget` within a :class:`Budget` in simulations (one push
simulated for its duration, however it is cut into restarts) and/or seconds, raises
:class:`~physid.pushing.target.Exhausted` once the budget is spent, and records every improvement of
the training loss in a :class:`History`, as the authors' code does.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from torch import Tensor

from physid.core.validate import check_count, check_positive
from physid.pushing.target import Exhausted, PushingTarget

__all__ = ["Budget", "History", "Tracker"]


@dataclass(frozen=True)
class Budget:
    """What a method may spend: ``simulations`` (pushes simulated for their duration) and/or
    ``seconds`` of wall time; None leaves one unlimited, not both."""

    simulations: int | None = None
    seconds: float | None = None

    def __post_init__(self) -> None:
        if self.simulations is None and self.seconds is None:
            raise ValueError("budget must limit simulations or seconds, got neither")
        if self.simulations is not None:
            object.__setattr__(self, "simulations", check_count("simulations",
                                                                self.simulations))
        if self.seconds is not None:
            object.__setattr__(self, "seconds", check_positive("seconds", self.seconds))


# -- the record of a run -------------------------------------------------------------------


@dataclass
class History:
    """Every improvement of the training loss: the simulations used and the wall time (s)
    when it was found, the loss (m) and the estimate (unit box, (2k,))."""

    simulations: list[int] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)
    loss: list[float] = field(default_factory=list)
    estimates: list[np.ndarray] = field(default_factory=list)

    def best_at(self, simulations: float | None = None, seconds: float | None = None) -> int:
        """Index of the last improvement within ``simulations`` and ``seconds`` (0 if none)."""
        best = 0
        for i, (s, t) in enumerate(zip(self.simulations, self.seconds, strict=True)):
            if (simulations is None or s <= simulations) and (seconds is None or t <= seconds):
                best = i
        return best


class Tracker:
    """Evaluates a :class:`~physid.pushing.target.PushingTarget` for a method within a
    :class:`Budget`: counts simulations and wall time, records improvements in its ``history`` (a
    :class:`History`), raises :class:`~physid.pushing.target.Exhausted` before an evaluation it
    cannot afford or once the time is spent.

    The history starts with the start point ``x0`` (unit box, (2k,)) and its loss
    ``start_loss``, at 0 simulations and 0 s: every method starts there, and the start is
    evaluated once, outside the budgets."""

    def __init__(self, target: PushingTarget, budget: Budget, x0: np.ndarray,
                 start_loss: float):
        self.target, self.budget = target, budget
        self.simulations = 0
        self.history = History([0], [0.0], [float(start_loss)], [np.array(x0, dtype=float)])
        self.best = float(start_loss)
        self.best_x: np.ndarray = np.array(x0, dtype=float)
        self.start = time.perf_counter()
        target.deadline = None if budget.seconds is None else self.start + budget.seconds

    @property
    def elapsed(self) -> float:
        return time.perf_counter() - self.start

    def affordable(self) -> int:
        """How many particles the budget can still evaluate (simulations only)."""
        if self.budget.simulations is None:
            return 1 << 30
        return (self.budget.simulations - self.simulations) // (
            self.target.simulations_per_evaluation)

    def _charge(self, n: int) -> None:
        if n > self.affordable():
            raise Exhausted("the simulation budget is spent")
        if self.budget.seconds is not None and self.elapsed > self.budget.seconds:
            raise Exhausted("the time budget is spent")

    def _record(self, x: Tensor, loss: Tensor) -> None:
        self.simulations += len(x) * self.target.simulations_per_evaluation
        seconds = self.elapsed
        for row, value in zip(x.detach().numpy(), loss.detach().tolist(), strict=True):
            if value < self.best:
                self.best, self.best_x = value, row.copy()
                self.history.simulations.append(self.simulations)
                self.history.seconds.append(seconds)
                self.history.loss.append(value)
                self.history.estimates.append(row.copy())

    def loss(self, x: Tensor) -> Tensor:
        """Eq. (1) of each particle (N,)."""
        self._charge(len(x))
        value = self.target.loss(x).detach()
        self._record(x, value)
        return value

    def loss_and_grad(self, x: Tensor) -> tuple[Tensor, Tensor]:
        """Eq. (1) and its exact gradient in the unit box (autograd through the engine)."""
        self._charge(len(x))
        value, grad = self.target.loss_and_grad(x)
        self._record(x, value)
        return value, grad

    def algorithm1_sweep(self, x: Tensor, reading: str,
                         update: Callable[[Tensor, Tensor], Tensor]) -> tuple[Tensor, Tensor]:
        """One pass of §6's loop as printed: for every restarted interval in turn (push by
        push, in time), Algorithm 1's direction of that interval alone at the current ``x``
        and ``x ← update(x, direction)``. The pass simulates every training push once; its
        end is then scored with :meth:`loss` (a second evaluation, charged and recorded).
        Returns the end and its loss."""
        self._charge(2 * len(x))
        for restart in range(self.target.n_restarts):
            _, direction = self.target.algorithm1(x, reading, restart)
            x = update(x, direction)
        self.simulations += len(x) * self.target.simulations_per_evaluation
        return x, self.loss(x)

    def algorithm1(self, x: Tensor, reading: str = "paper") -> tuple[Tensor, Tensor]:
        """Eq. (1) and Algorithm 1's per-cell direction in the ``reading`` of §6's
        assumptions (:meth:`~physid.pushing.target.PushingTarget.algorithm1`)."""
        self._charge(len(x))
        value, direction = self.target.algorithm1(x, reading)
        self._record(x, value)
        return value, direction
