"""The interface every estimator shares, and the one place an estimator is registered.

An estimator holds a :class:`~physid.core.target.Target` and a set of particles in
the target's coordinates. Particle methods (SVGD, CSVGD, CEM, Emcee's walkers) move ``N``
particles at once; single-chain MCMC (SGLD, NUTS) starts at the centre of the limits and its
``particles`` are its last ``N`` samples. :meth:`Estimator.run` records snapshots into a
:class:`History`.

An estimator class is registered once, with the :func:`register` decorator, under its name
with its :class:`EstimatorSpec`: the chapter's hyperparameters, its run length and options per
scale, the likelihood it runs on (single shooting, or multiple shooting with CSVGD's defect
constraints) and the options of a smoke run. Everything else derives from :data:`REGISTRY`:
:data:`physid.inference.estimators.ESTIMATORS` and :func:`make_estimator
<physid.inference.estimators.make_estimator>`, the chapter's options and run settings
(:func:`physid.inference.chapters.inference_synthetic.estimator_settings`) and the tests' table
of estimators.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import MappingProxyType

import numpy as np
import torch

from physid.core.progress import progress as progress_bar
from physid.core.registry import Registry
from physid.core.scales import SCALES
from physid.core.target import Target
from physid.core.validate import check_choice, check_count, check_number, check_positive, check_seed

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
        The progress bar goes to the terminal (:mod:`physid.core.progress`), never into a page.
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

    def diagnostics(self) -> dict[str, object]:
        """What the estimator reports besides its particles (none here; BayesSim: its
        training losses)."""
        return {}

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



# -- the registry ----------------------------------------------------------------------------
@dataclass(frozen=True)
class Scaled:
    """An estimator's run at one scale: ``iterations`` (None: the chapter's own count) and
    options on top of its hyperparameters."""

    iterations: int | None = None
    options: Mapping[str, object] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.iterations is not None:
            object.__setattr__(self, "iterations", check_count("iterations", self.iterations))
        object.__setattr__(self, "options", _check_options("options", self.options))


@dataclass(frozen=True)
class EstimatorSpec:
    """A registered estimator (see :func:`register`)."""

    name: str
    cls: type[Estimator]
    options: Mapping[str, object]
    scales: Mapping[str, Scaled]
    multiple_shooting: bool
    smoke: Mapping[str, object]
    paper_order: int | None = None

    def at(self, scale: str) -> Scaled:
        """The run length and options at ``scale``: the hyperparameters, then the scale's."""
        scaled = self.scales.get(check_choice("scale", scale, SCALES), Scaled())
        return Scaled(scaled.iterations, {**self.options, **scaled.options})


#: Every registered estimator by name, in the order of registration (the chapter's order).
REGISTRY: Registry[EstimatorSpec] = Registry("estimator", EstimatorSpec)


def paper_order() -> tuple[str, ...]:
    """Every registered estimator's name, in the order of the paper's tables and Fig. 16
    (``paper_order`` of :func:`register`); those without one follow in registration order."""
    specs = list(REGISTRY.values())
    ranked = sorted(
        range(len(specs)),
        key=lambda i: (specs[i].paper_order is None, specs[i].paper_order or 0, i),
    )
    return tuple(specs[i].name for i in ranked)


def _check_options(name: str, options: Mapping[str, object] | None) -> Mapping[str, object]:
    if options is None:
        options = {}
    if not isinstance(options, Mapping) or not all(isinstance(k, str) for k in options):
        raise TypeError(f"{name} must be a mapping of option names to values, got {options!r}")
    return MappingProxyType(dict(options))


def register(
    name: str,
    *,
    options: Mapping[str, object] | None = None,
    scales: Mapping[str, Scaled] | None = None,
    multiple_shooting: bool = False,
    smoke: Mapping[str, object] | None = None,
    paper_order: int | None = None,
) -> Callable[[type[Estimator]], type[Estimator]]:
    """A class decorator that registers an :class:`Estimator` under ``name`` (and sets its
    ``name``).

    Args:
        name: the estimator's name in tables, runs and :data:`REGISTRY`.
        options: the chapter's hyperparameters (passed to the constructor at every scale).
        scales: per scale of :data:`physid.core.scales.SCALES`, a :class:`Scaled` run length and
            options (a missing scale: the chapter's iteration count, no extra options).
        multiple_shooting: runs on the multiple-shooting likelihood with the defects as
            constraints (CSVGD); otherwise on single shooting.
        smoke: options for a smoke run of a few particles and steps (the tests).
        paper_order: the estimator's place in the paper's tables and Fig. 16 (0 first), the
            order of :func:`paper_order`; None for one the paper does not run.

    ValueError for a name already registered; TypeError for a class that is not an
    :class:`Estimator` or is registered already.
    """
    if not isinstance(name, str) or not name:
        raise TypeError(f"name must be a non-empty string, got {name!r}")
    if name in REGISTRY:
        raise ValueError(f"name {name!r} is registered already")
    options = _check_options("options", options)
    smoke = _check_options("smoke", smoke)
    scales = {} if scales is None else scales
    if not isinstance(scales, Mapping):
        raise TypeError(f"scales must be a mapping of scales to Scaled, got {scales!r}")
    for scale, scaled in scales.items():
        check_choice("scales", scale, SCALES)
        if not isinstance(scaled, Scaled):
            raise TypeError(f"scales[{scale!r}] must be a Scaled, got {scaled!r}")
    if not isinstance(multiple_shooting, bool):
        raise TypeError(f"multiple_shooting must be True or False, got {multiple_shooting!r}")
    if paper_order is not None:
        paper_order = check_count("paper_order", paper_order, minimum=0)
        taken = [spec.name for spec in REGISTRY.values() if spec.paper_order == paper_order]
        if taken:
            raise ValueError(f"paper_order {paper_order} is {taken[0]}'s already")

    def decorator(cls: type[Estimator]) -> type[Estimator]:
        if not (isinstance(cls, type) and issubclass(cls, Estimator)):
            raise TypeError(f"cls must be an Estimator subclass, got {cls!r}")
        if any(spec.cls is cls for spec in REGISTRY.values()):
            raise TypeError(f"cls {cls.__name__} is registered already")
        cls.name = name
        REGISTRY.add(
            EstimatorSpec(
                name, cls, options, MappingProxyType(dict(scales)), multiple_shooting, smoke,
                paper_order,
            )
        )
        return cls

    return decorator
