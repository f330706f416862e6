"""The interface every estimator shares: initialise, step, run (with a progress bar), particles.

An estimator holds a :class:`~physid.inference.likelihood.Target` and a set of particles in
the target's coordinates. Particle methods (SVGD, CSVGD, CEM, Emcee's walkers) move ``N``
particles at once; single-chain MCMC (SGLD, NUTS) starts at the centre of the limits and its
``particles`` are its last ``N`` samples. :meth:`Estimator.run` records snapshots into a
:class:`History`.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np
import torch

from physid.inference.likelihood import Target
from physid.progress import progress as progress_bar
from physid.validate import check_count, check_number, check_positive, check_seed

Tensor = torch.Tensor


@dataclass
class History:
    """Snapshots of an estimator's particles during :meth:`Estimator.run`."""

    name: str
    iterations: list[int] = field(default_factory=list)
    particles: list[np.ndarray] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)

    def final(self) -> np.ndarray:
        return self.particles[-1]


class Estimator:
    """Base class: subclasses implement ``_start``, ``_step`` and :attr:`particles`.

    Args:
        target: what to sample.
        n_particles: particles (or walkers, or the samples a chain reports).
        seed: seeds every random draw the estimator makes, the start particles included.
        x0: start particles inside the limits, ``(n_particles, dim)`` for a particle method
            and ``(1, dim)`` for a single chain; default: a Sobol sequence over the limits
            scrambled by ``seed`` (particle methods) or the centre of the limits (single-chain
            MCMC), with the target's start for any auxiliary variables.
    """

    name = "estimator"
    single_chain = False

    def __init__(
        self, target: Target, n_particles: int = 100, seed: int = 0, x0: Tensor | None = None
    ):
        if not isinstance(target, Target):
            raise TypeError(f"target must be a Target, got {type(target).__name__}")
        self.target = target
        self.n_particles = check_count("n_particles", n_particles)
        self.seed = check_seed("seed", seed)
        self._x0 = None
        if x0 is not None:
            self._x0 = target.check_particles(x0, "x0")
            rows, what = (1, "the chain's start") if self.single_chain else (self.n_particles, "N")
            if self._x0.shape[0] != rows:
                raise ValueError(f"x0 must have {rows} rows ({what}), got {self._x0.shape[0]}")
        self.iteration = 0
        self.initialised = False

    # -- interface -------------------------------------------------------------------------
    def initialise(self) -> None:
        """Reset the random state and the particles to the start."""
        self.generator = torch.Generator().manual_seed(self.seed)
        self.rng = np.random.default_rng(self.seed)
        self._torch_state = torch.Generator().manual_seed(self.seed).get_state()
        if self._x0 is not None:
            x0 = self._x0
        elif self.single_chain:
            x0 = self.target.centre(self.seed)[None]
        else:
            x0 = self.target.initial(self.n_particles, self.seed)
        self.iteration = 0
        self._start(x0.clone())
        self.initialised = True

    def step(self) -> None:
        """One iteration (initialising first if needed)."""
        if not self.initialised:
            self.initialise()
        self._step()
        self.iteration += 1

    @contextmanager
    def own_torch_rng(self) -> Iterator[None]:
        """Run a block that draws from torch's global generator (a network's initial weights,
        ``Distribution.sample``, pyro) on this estimator's own seeded stream, leaving the
        caller's global generator as it was."""
        with torch.random.fork_rng(devices=[]):
            torch.set_rng_state(self._torch_state)
            yield
            self._torch_state = torch.get_rng_state()

    @property
    def particles(self) -> Tensor:  # pragma: no cover - interface
        """The current particles (N, dim), or a chain's last N samples."""
        raise NotImplementedError

    def parameters(self) -> np.ndarray:
        """The current particles in the target's parameter units (N, M): physical units for a
        trajectory likelihood."""
        return self.target.parameters(self.particles.detach()).numpy()

    def run(
        self,
        n_iterations: int,
        record_every: int = 1,
        progress: bool = True,
        callback: Callable[[Estimator], None] | None = None,
    ) -> History:
        """Initialise, then step ``n_iterations`` times, snapshotting every ``record_every``.

        The snapshot at iteration 0 is the start. ``callback(estimator)`` runs after each step.
        The progress bar goes to the terminal (:mod:`physid.progress`), never into a page.
        """
        n_iterations = check_count("n_iterations", n_iterations, 0)
        record_every = check_count("record_every", record_every)
        if callback is not None and not callable(callback):
            raise TypeError(f"callback must be callable, got {callback!r}")
        self.initialise()
        history = History(self.name)
        start = time.perf_counter()
        self._record(history, start)
        bar = progress_bar(range(n_iterations), desc=self.name, disable=not progress)
        for _ in bar:
            self.step()
            if callback is not None:
                callback(self)
            if self.iteration % record_every == 0 or self.iteration == n_iterations:
                self._record(history, start)
        return history

    def _record(self, history: History, start: float) -> None:
        history.iterations.append(self.iteration)
        history.particles.append(self.particles.detach().numpy().copy())
        history.seconds.append(time.perf_counter() - start)

    # -- for subclasses ----------------------------------------------------------------------
    def _start(self, x0: Tensor) -> None:  # pragma: no cover - interface
        raise NotImplementedError

    def _step(self) -> None:  # pragma: no cover - interface
        raise NotImplementedError


class ChainEstimator(Estimator):
    """A single Markov chain whose particles are its last ``n_particles`` samples."""

    single_chain = True

    def _start(self, x0: Tensor) -> None:
        self.x = x0[0]
        self.samples: deque[Tensor] = deque(maxlen=self.n_particles)
        self.samples.append(self.x.clone())

    def _accept(self, x: Tensor) -> None:
        self.x = x.detach()
        self.samples.append(self.x.clone())

    @property
    def particles(self) -> Tensor:
        return torch.stack(list(self.samples))


class AdaGrad:
    """Liu & Wang's SVGD step rule: AdaGrad with momentum on the squared gradient."""

    def __init__(self, stepsize: float, alpha: float = 0.9, eps: float = 1e-6):
        self.stepsize = check_positive("stepsize", stepsize)
        self.alpha = check_number("alpha", alpha, low=0.0, high=1.0, high_open=True)
        self.eps = check_positive("eps", eps)
        self.hist: Tensor | None = None

    def __call__(self, direction: Tensor) -> Tensor:
        sq = direction**2
        self.hist = sq if self.hist is None else self.alpha * self.hist + (1 - self.alpha) * sq
        return self.stepsize * direction / (self.eps + self.hist.sqrt())


def value_and_grad(fn, x: Tensor) -> tuple[Tensor, Tensor]:
    """``fn(x)`` (N,) and its gradient, with non-finite entries (a blown-up rollout) zeroed."""
    x = x.detach().requires_grad_(True)
    value = fn(x)
    (grad,) = torch.autograd.grad(value.sum(), x)
    return value.detach(), torch.nan_to_num(grad, nan=0.0, posinf=0.0, neginf=0.0)
