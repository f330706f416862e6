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
from dataclasses import dataclass, field

import numpy as np
import torch

from physid.inference.likelihood import Target

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


def _check_count(value, name: str, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < minimum:
        raise ValueError(f"{name} must be an int >= {minimum}, got {value!r}")
    return int(value)


class Estimator:
    """Base class: subclasses implement ``_start``, ``_step`` and :attr:`particles`.

    Args:
        target: what to sample.
        n_particles: particles (or walkers, or the samples a chain reports).
        seed: seeds every random draw the estimator makes.
        x0: start particles (N, dim) inside the limits; default: the Sobol sequence over the
            limits (particle methods) or the centre of the limits (single-chain MCMC).
    """

    name = "estimator"
    single_chain = False

    def __init__(self, target: Target, n_particles: int = 100, seed: int = 0, x0=None):
        self.target = target
        self.n_particles = _check_count(n_particles, "n_particles")
        self.seed = _check_count(seed, "seed", 0)
        self._x0 = None if x0 is None else target.check_particles(x0, "x0")
        self.iteration = 0
        self.initialised = False

    # -- interface -------------------------------------------------------------------------
    def initialise(self) -> None:
        """Reset the random state and the particles to the start."""
        self.generator = torch.Generator().manual_seed(self.seed)
        self.rng = np.random.default_rng(self.seed)
        if self._x0 is not None:
            x0 = self._x0
        elif self.single_chain:
            x0 = self.target.centre()[None]
        else:
            x0 = self.target.initial(self.n_particles)
        self.iteration = 0
        self._start(x0.clone())
        self.initialised = True

    def step(self) -> None:
        """One iteration (initialising first if needed)."""
        if not self.initialised:
            self.initialise()
        self._step()
        self.iteration += 1

    @property
    def particles(self) -> Tensor:  # pragma: no cover - interface
        """The current particles (N, dim), or a chain's last N samples."""
        raise NotImplementedError

    def parameters(self) -> np.ndarray:
        """The current particles in physical parameter units (N, M) where the target has them."""
        x = self.particles
        if hasattr(self.target, "parameters"):
            return self.target.parameters(x).numpy()
        return x[:, : self.target.n_params].numpy()

    def run(
        self, n_iterations: int, record_every: int = 1, progress: bool = True, callback=None
    ) -> History:
        """Initialise, then step ``n_iterations`` times, snapshotting every ``record_every``.

        The snapshot at iteration 0 is the start. ``callback(estimator)`` runs after each step.
        """
        from tqdm.auto import tqdm

        n_iterations = _check_count(n_iterations, "n_iterations", 0)
        record_every = _check_count(record_every, "record_every")
        self.initialise()
        history = History(self.name)
        start = time.perf_counter()
        self._record(history, start)
        for _ in tqdm(range(n_iterations), desc=self.name, disable=not progress, leave=False):
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
        self.stepsize, self.alpha, self.eps = float(stepsize), float(alpha), float(eps)
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
