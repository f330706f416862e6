"""Algorithm 1 of Song & Boularias and its baselines, registered once, and :func:`identify`.

Every identification method takes the same inputs (a
:class:`~physid.pushing.target.PushingTarget` on the training pushes, a
:class:`~physid.pushing.budget.Budget` in simulations and/or seconds, a seed) and runs through a
:class:`~physid.pushing.budget.Tracker` that counts what it spends and records every improvement
of the training loss. Methods register once, with :func:`method`, in :data:`METHODS`; each entry
carries its label in figures and tables, its options, the formulation its target simulates and
whether it is in the paper.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import cma
import numpy as np
import torch
from scipy.optimize import minimize
from torch import Tensor

from physid.core.registry import Registry
from physid.core.seeds import name_stream
from physid.core.validate import check_count, check_in_range, check_seed
from physid.pushing.budget import Budget, History, Tracker
from physid.pushing.observations import Observations
from physid.pushing.target import MASS_LIMITS, Exhausted, PushingTarget, start_point

# -- the methods, registered once ----------------------------------------------------------

MethodFn = Callable[[Tracker, np.ndarray, np.random.Generator, dict], None]

__all__ = ["METHODS", "Identification", "MethodSpec", "identify", "method", "scheduled_step",
           "travel_cap"]


@dataclass(frozen=True)
class MethodSpec:
    """A registered method: its function, its label in figures and tables, its options, the
    formulation its target simulates and whether it is in the paper."""

    name: str
    fn: MethodFn
    label: str
    options: dict
    formulation: str = "rigid"
    in_paper: bool = True


#: Every identification method, by name, in the order of the figures.
METHODS: Registry[MethodSpec] = Registry("method", MethodSpec)


def method(name: str, label: str, options: dict | None = None, formulation: str = "rigid",
           in_paper: bool = True) -> Callable[[MethodFn], MethodFn]:
    """Register ``fn(tracker, x0, rng, options)`` as the method ``name``: it improves on the start
    ``x0`` (unit box, (2k,)) until the tracker raises :class:`~physid.pushing.target.Exhausted` or
    it is done."""

    def register(fn: MethodFn) -> MethodFn:
        METHODS.add(MethodSpec(name, fn, label, dict(options or {}), formulation, in_paper))
        return fn

    return register


def _step(x: Tensor, direction: Tensor, rate: Tensor | float) -> Tensor:
    """A projected step ``clip(x − rate · d / max|d|)`` in the unit box."""
    scale = direction.abs().max().clamp_min(1e-300)
    return (x - rate * direction / scale).clamp(0.0, 1.0)


def scheduled_step(x: Tensor, direction: Tensor, it: int, options: dict) -> Tensor:
    """The step schedule shared by Algorithm 1 and exact-gradient descent: iteration ``it``
    moves the frictions by ``rate = α γ^it`` and the masses by ``rate^p`` (``p`` the option
    ``mass_power``: ½ in §6, 1 for descent), along ``direction (1, 2k)`` (masses, then
    frictions) normalised by its largest entry, projected on the unit box. The distance a
    coordinate can travel in all is bounded: ``α / (1 − γ)`` for the frictions and
    ``α^p / (1 − γ^p)`` for the masses (:func:`travel_cap`)."""
    rate = options["alpha"] * options["decay"] ** it
    k = direction.shape[1] // 2
    scale = direction.abs().max().clamp_min(1e-300)
    rates = torch.cat([torch.full((k,), rate ** options["mass_power"]),
                       torch.full((k,), rate)])
    return (x - rates.to(direction) * direction / scale).clamp(0.0, 1.0)


def travel_cap(options: dict) -> tuple[float, float]:
    """The most a mass and a friction coordinate can move in the unit box under the schedule
    of :func:`scheduled_step` with ``options`` (``alpha``, ``decay``, ``mass_power``): the
    sums of the rates over every iteration, ``(α^p / (1 − γ^p), α / (1 − γ))``."""
    alpha, decay, power = options["alpha"], options["decay"], options["mass_power"]
    if not 0 <= decay < 1:
        return math.inf, math.inf
    return alpha**power / (1 - decay**power), alpha / (1 - decay)


@method("algorithm1", "Algorithm 1 (analytic)",
        {"alpha": 0.03, "decay": 0.9, "mass_power": 0.5, "epsilon": 0.0})
def _algorithm1(tracker: Tracker, x0: np.ndarray, rng: np.random.Generator, o: dict) -> None:
    """§6: update rates α for the frictions and √α for the masses along the same per-cell
    direction (the constants C_f, C_M read as normalising it by its largest entry), decayed
    by ``decay`` per iteration as in the authors' code, until the loss is below ε."""
    _algorithm1_loop(tracker, x0, o, "paper")


@method("algorithm1-pinned", "Algorithm 1, pinned reading",
        {"alpha": 0.03, "decay": 0.9, "mass_power": 0.5, "epsilon": 0.0}, in_paper=False)
def _algorithm1_pinned(tracker: Tracker, x0: np.ndarray, rng: np.random.Generator,
                       o: dict) -> None:
    """Algorithm 1 with §6's assumptions 1–2 taken literally: the direction is the rigid
    body's response to each cell's friction impulse, turned about the finger's contact
    (:meth:`~physid.pushing.target.PushingTarget.algorithm1`, ``reading="pinned"``); the
    same schedule and stopping rule."""
    _algorithm1_loop(tracker, x0, o, "pinned")


@method("algorithm1-interval", "Algorithm 1, an update per interval",
        {"alpha": 0.03, "decay": 0.9, "mass_power": 0.5, "epsilon": 0.0}, in_paper=False)
def _algorithm1_interval(tracker: Tracker, x0: np.ndarray, rng: np.random.Generator,
                         o: dict) -> None:
    """Algorithm 1's loop as §6 prints it: the masses and frictions move after every
    restarted interval, along that interval's own direction, with the schedule of
    :func:`scheduled_step` decayed once per pass over the training pushes
    (:meth:`~physid.pushing.budget.Tracker.algorithm1_sweep`; each pass is scored by one
    more evaluation, which the budget counts)."""
    x = torch.as_tensor(x0)[None]
    for it in range(1 << 30):
        x, loss = tracker.algorithm1_sweep(
            x, "paper", lambda x, d, it=it: scheduled_step(x, torch.cat([d, d], 1), it, o))
        if float(loss) <= o["epsilon"]:
            return


def _algorithm1_loop(tracker: Tracker, x0: np.ndarray, o: dict, reading: str) -> None:
    x = torch.as_tensor(x0)[None]
    for it in range(1 << 30):
        loss, d = tracker.algorithm1(x, reading)
        if float(loss) <= o["epsilon"]:
            return
        x = scheduled_step(x, torch.cat([d, d], 1), it, o)


def _descent(tracker: Tracker, x0: np.ndarray, o: dict) -> None:
    x = torch.as_tensor(x0)[None]
    for it in range(1 << 30):
        _, grad = tracker.loss_and_grad(x)
        x = scheduled_step(x, grad, it, o)


@method("autograd-lcp", "Autograd (LCP formulation)",
        {"alpha": 0.1, "decay": 0.9, "mass_power": 1.0}, formulation="lcp")
def _autograd_lcp(tracker: Tracker, x0: np.ndarray, rng: np.random.Generator, o: dict) -> None:
    """Gradient descent with the exact gradient through formulation 1 (the paper's
    "Autograd" baseline), the same projected, normalised, decayed steps."""
    _descent(tracker, x0, o)


@method("autograd-rigid", "Exact gradient (rigid formulation)",
        {"alpha": 0.1, "decay": 0.9, "mass_power": 1.0}, in_paper=False)
def _autograd_rigid(tracker: Tracker, x0: np.ndarray, rng: np.random.Generator,
                    o: dict) -> None:
    """Gradient descent with the exact gradient through formulation 2: the compiled adjoint
    (:mod:`physid.pushing.rigid_adjoint`), or autograd through the torch step for a push the
    compiled step leaves to torch."""
    _descent(tracker, x0, o)


def _finite_differences(tracker: Tracker, x0: np.ndarray, o: dict) -> None:
    x = torch.as_tensor(x0)[None]
    dim = x.shape[1]
    for it in range(1 << 30):
        h = o["step"]
        # One-sided: step up, or down where the box ends.
        sign = torch.where(x[0] + h <= 1.0, 1.0, -1.0)
        probes = x + torch.diag(sign * h)
        loss = tracker.loss(torch.cat([x, probes]))
        grad = ((loss[1:] - loss[0]) * sign / h).reshape(1, dim)
        x = _step(x, grad, o["alpha"] * o["decay"] ** it)


@method("fd-authors", "Finite differences (authors' step)",
        {"step": 0.5 / (MASS_LIMITS[1] - MASS_LIMITS[0]), "alpha": 0.1, "decay": 0.9})
def _fd_authors(tracker: Tracker, x0: np.ndarray, rng: np.random.Generator, o: dict) -> None:
    """One-sided finite differences with the authors' step (0.5 kg of a mass, a tenth of its
    box), every parameter at once: 2k + 1 evaluations per gradient."""
    _finite_differences(tracker, x0, o)


@method("fd-small", "Finite differences (step 1e-4)", {"step": 1e-4, "alpha": 0.1,
                                                        "decay": 0.9}, in_paper=False)
def _fd_small(tracker: Tracker, x0: np.ndarray, rng: np.random.Generator, o: dict) -> None:
    """One-sided finite differences with a step of 1e-4 of each box, small against the loss's
    curvature and far above rounding."""
    _finite_differences(tracker, x0, o)


@method("random", "Random search", {"batch": 4})
def _random(tracker: Tracker, x0: np.ndarray, rng: np.random.Generator, o: dict) -> None:
    """Uniform draws over the box, ``batch`` at a time; keep the best."""
    while True:
        n = max(1, min(o["batch"], tracker.affordable()))
        tracker.loss(torch.as_tensor(rng.uniform(size=(n, len(x0)))))


@method("weighted", "Weighted sampling", {"batch": 10, "sigma": 0.5, "min_sigma": 0.02})
def _weighted(tracker: Tracker, x0: np.ndarray, rng: np.random.Generator, o: dict) -> None:
    """§7.1: uniform draws first, then Gaussian draws around the best so far whose σ (unit
    box) halves after every batch until ``min_sigma``; draws outside the box are redrawn (the
    authors reject them), and clipped after ten tries."""
    n = max(1, min(o["batch"], tracker.affordable()))
    tracker.loss(torch.as_tensor(rng.uniform(size=(n, len(x0)))))
    sigma = o["sigma"]
    while True:
        n = max(1, min(o["batch"], tracker.affordable()))
        draws = tracker.best_x + sigma * rng.standard_normal((n, len(x0)))
        for _ in range(10):
            outside = (draws < 0) | (draws > 1)
            if not outside.any():
                break
            redraw = tracker.best_x + sigma * rng.standard_normal((n, len(x0)))
            draws = np.where(outside, redraw, draws)
        tracker.loss(torch.as_tensor(np.clip(draws, 0.0, 1.0)))
        sigma = max(o["min_sigma"], sigma / 2)


@method("cma", "CMA-ES", {"sigma": 0.3, "popsize": 8}, in_paper=False)
def _cma(tracker: Tracker, x0: np.ndarray, rng: np.random.Generator, o: dict) -> None:
    """The ``cma`` package's CMA-ES in the unit box, one generation per evaluation, with a
    population of ``popsize`` (the package's default, 4 + 3 ln(2k) ≈ 19 for 88 cells, would
    spend the chapter's budget on two generations)."""
    es = cma.CMAEvolutionStrategy(
        list(x0), o["sigma"],
        {"bounds": [0.0, 1.0], "seed": int(rng.integers(1, 2**31 - 1)), "verbose": -9,
         "popsize": int(o["popsize"])},
    )
    while not es.stop():
        candidates = es.ask()
        values = tracker.loss(torch.as_tensor(np.array(candidates)))
        es.tell(candidates, values.tolist())


@method("nelder-mead", "Nelder–Mead", {}, in_paper=False)
def _nelder_mead(tracker: Tracker, x0: np.ndarray, rng: np.random.Generator, o: dict) -> None:
    """scipy's Nelder–Mead within the unit box, one evaluation at a time."""

    def fun(z: np.ndarray) -> float:
        return float(tracker.loss(torch.as_tensor(z)[None])[0])

    minimize(fun, x0, method="Nelder-Mead", bounds=[(0.0, 1.0)] * len(x0),
             options={"maxfev": 1 << 30, "xatol": 0.0, "fatol": 0.0})


# -- running one method --------------------------------------------------------------------


@dataclass(frozen=True)
class Identification:
    """The outcome of :func:`identify`: the method, its best estimate (masses and frictions, (k,)
    each), its :class:`~physid.pushing.budget.History`, the simulations and seconds it used, why
    it stopped and the friction model it identified with (the directions of D)."""

    method: str
    masses: np.ndarray
    frictions: np.ndarray
    history: History
    simulations: int
    seconds: float
    stopped: str
    friction_dirs: int


def identify(name: str, data: Observations, budget: Budget, seed: int = 0,
             options: dict | None = None, noise: float = 1e-3,
             friction_dirs: int = 4) -> Identification:
    """Run the registered method ``name`` on the training pushes ``data`` within ``budget``
    from the authors' start, its random draws seeded by ``seed``; ``options`` override the
    method's registered ones. The engine's friction model is the polygon of ``friction_dirs``
    directions (the paper's D has 4; more approach isotropic Coulomb friction, which pybullet
    simulates). Every argument is checked before any work."""
    spec = METHODS.get(name, "name")
    if not isinstance(data, Observations):
        raise TypeError(f"data must be Observations, got {type(data).__name__}")
    if not isinstance(budget, Budget):
        raise TypeError(f"budget must be a Budget, got {type(budget).__name__}")
    seed = check_seed("seed", seed)
    merged = dict(spec.options)
    for key, value in (options or {}).items():
        if key not in merged:
            raise ValueError(f"options: {name} has no option {key!r} (it has {sorted(merged)})")
        merged[key] = check_in_range(f"options[{key!r}]", value, 0.0, math.inf)
    friction_dirs = check_count("friction_dirs", friction_dirs, minimum=3)
    target = PushingTarget(data, formulation=spec.formulation, noise=noise,
                           friction_dirs=friction_dirs)
    x0 = start_point(target.k)
    # The start, shared by every method, is evaluated once with formulation 2 (the two
    # formulations agree to solver tolerance), outside the budget.
    start_loss = float(PushingTarget(data, noise=noise, friction_dirs=friction_dirs).loss(
        torch.as_tensor(x0)[None])[0])
    tracker = Tracker(target, budget, x0, start_loss)
    stopped = "finished"
    try:
        # Each method draws from its own stream of the seed, chosen by its name.
        stream = np.random.default_rng([seed, name_stream(name)])
        spec.fn(tracker, x0, stream, merged)
    except Exhausted as stop:
        stopped = str(stop)
    finally:
        target.deadline = None
    masses, frictions = target.physical(torch.as_tensor(tracker.best_x)[None])
    return Identification(name, masses[0].numpy(), frictions[0].numpy(), tracker.history,
                          tracker.simulations, tracker.elapsed, stopped, friction_dirs)
