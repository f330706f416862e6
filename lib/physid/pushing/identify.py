"""Identifying each cell's mass and friction from observed pushes (Song & Boularias §3, §6–7).

The loss is Eq. (1): every observation interval of every training push is restarted from the
observed pose and twist (with the finger where it was at that time) and simulated for one
interval; the loss is the mean over pushes, intervals and cells of the distance between the
predicted and the observed cell positions at the end of the interval, in metres
(:class:`PushingTarget`). It is Eq. (1) divided by the number of terms and cells, so that it
reads as a position error.

:class:`PushingTarget` is a :class:`physid.inference.likelihood.Target` of Part II: the
parameters are the paper's ``θ = [M, μ_f]`` (2k entries, masses first) normalised to the unit
box :data:`MASS_LIMITS` × :data:`FRICTION_LIMITS` (the authors' search box), and its
log-likelihood is ``−loss / noise`` (a Gibbs density), so Part II's estimators can sample it.

Every identification method takes the same inputs (a target on the training pushes, a
:class:`Budget` in simulations and/or seconds, a seed), runs through a :class:`Tracker` that
counts simulations (one push simulated for its duration, however it is cut into restarts) and
wall time, and records every improvement of the training loss in a :class:`History`, as the
authors' code does. Methods register once, with :func:`method`, in :data:`METHODS`.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import cma
import numpy as np
import torch
from scipy.optimize import minimize
from torch import Tensor

from physid.constants import GRAVITY
from physid.inference.likelihood import Limits, Target
from physid.pushing.finger import FaceGeometry
from physid.pushing.observations import OBSERVATION_PERIOD, Observations
from physid.pushing.pushes import PushBatch
from physid.pushing.simulate import FORMULATIONS, cell_position_error
from physid.validate import (
    check_choice,
    check_count,
    check_in_range,
    check_positive,
    check_seed,
    check_tensor,
)

__all__ = [
    "DT",
    "FRICTION_LIMITS",
    "MASS_LIMITS",
    "METHODS",
    "Budget",
    "Exhausted",
    "History",
    "Identification",
    "MethodSpec",
    "PushingTarget",
    "Tracker",
    "identifiable_map",
    "identify",
    "method",
    "start_point",
]

#: The authors' search box for each cell's mass (kg): only relative masses matter (a global
#: scale leaves every push unchanged), so the unit is theirs.
MASS_LIMITS = (0.1, 5.0)
#: The authors' search box for each cell's friction coefficient with the table.
FRICTION_LIMITS = (0.1, 1.0)
#: The engines' time step (s) during identification: five steps per observation interval.
DT = 0.01
#: Restarts simulated in one batch by each formulation: memory stays bounded, and the
#: deadline of a time budget is checked after every step of a batch (formulation 1's steps
#: are slow, so its batches are small).
CHUNK = {"rigid": 192, "lcp": 8}


def identifiable_map(masses: Tensor, frictions: Tensor) -> Tensor:
    """``μ_i M_i / Σ_j μ_j M_j`` (..., k): what pushes on a table determine (the normal load
    and so the friction force of each cell is ``μ_i M_i g``; a global scale of the masses
    changes no trajectory)."""
    product = masses * frictions
    return product / product.sum(-1, keepdim=True)


class Exhausted(Exception):
    """The budget of a :class:`Tracker` is spent."""


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


class PushingTarget(Target):
    """Eq. (1) on observed pushes, as a Part II target (module docstring).

    Args:
        data: the training pushes, observed (:class:`~physid.pushing.observations.Observations`).
        formulation: ``"rigid"`` (formulation 2) or ``"lcp"`` (formulation 1, the LCP of
            Figure 2): the engine simulated and differentiated.
        noise: σ (m) of the Gibbs log-likelihood ``−loss / σ``.
        friction_dirs: directions of the friction pyramid D (4 in the paper).
    """

    def __init__(self, data: Observations, formulation: str = "rigid", noise: float = 1e-3,
                 friction_dirs: int = 4):
        if not isinstance(data, Observations):
            raise TypeError(f"data must be Observations, got {type(data).__name__}")
        self.formulation = check_choice("formulation", formulation, sorted(FORMULATIONS))
        self.noise = check_positive("noise", noise)
        self.friction_dirs = check_count("friction_dirs", friction_dirs, minimum=3)
        check_tensor("data.positions", data.positions, dtype=torch.float64)
        self.data = data
        obj = data.obj
        self.obj = obj
        self.k = len(obj)
        self.dim = self.n_params = 2 * self.k
        self.limits = Limits(
            tuple(f"M_{i}" for i in range(self.k)) + tuple(f"mu_{i}" for i in range(self.k)),
            np.repeat([MASS_LIMITS[0], FRICTION_LIMITS[0]], self.k),
            np.repeat([MASS_LIMITS[1], FRICTION_LIMITS[1]], self.k),
        )
        self.steps = round(OBSERVATION_PERIOD / DT)
        n_push, n_obs = data.positions.shape[:2]
        # One restart per push and observation interval: push b from observation t.
        push_index = torch.arange(n_push).repeat_interleave(n_obs - 1)
        obs_index = torch.arange(n_obs - 1).repeat(n_push)
        batch = PushBatch.from_pushes(obj, list(data.pushes))
        self._pushes = replace(
            _select(batch, push_index),
            start=batch.start[push_index] + batch.velocity[push_index]
            * data.times[obs_index].unsqueeze(1),
        )
        self._poses = data.poses[push_index, obs_index]
        self._twists = data.twists[push_index, obs_index]
        self._observed = data.positions[push_index, obs_index + 1]
        self._faces = FaceGeometry.of(obj, obj.centres)
        self.n_restarts = len(push_index)
        #: Simulations one evaluation costs per particle: one per training push.
        self.simulations_per_evaluation = n_push
        self.deadline: float | None = None

    # -- parameters ------------------------------------------------------------------------
    def physical(self, x: Tensor) -> tuple[Tensor, Tensor]:
        """Masses and frictions (N, k) of unit-box particles ``x`` (N, 2k)."""
        theta = self.limits.denormalise(x)
        return theta[..., : self.k], theta[..., self.k :]

    def _log_likelihood(self, x: Tensor) -> Tensor:
        return -self.loss(x) / self.noise

    # -- Eq. (1) ---------------------------------------------------------------------------
    def _rollout(self, masses: Tensor, frictions: Tensor, rows: Tensor) -> Tensor:
        """Restarted rollouts (len(rows), steps + 1, k, 2) of particles and restarts ``rows``
        (pairs: particle index, restart index)."""
        particle, restart = rows[:, 0], rows[:, 1]
        positions, _ = FORMULATIONS[self.formulation](
            self.obj.centres, masses[particle], frictions[particle],
            _select(self._pushes, restart), self._twists[restart],
            cell_side=self.obj.cell_side, dt=DT, n_steps=self.steps,
            friction_dirs=self.friction_dirs, faces=self._faces,
            initial_pose=self._poses[restart], on_step=self._check_deadline,
        )
        return positions

    def _check_deadline(self) -> None:
        if self.deadline is not None and time.perf_counter() > self.deadline:
            raise Exhausted("the time budget ran out during an evaluation")

    def _chunks(self, n: int):
        rows = torch.cartesian_prod(torch.arange(n), torch.arange(self.n_restarts))
        chunk = CHUNK[self.formulation]
        for start in range(0, len(rows), chunk):
            self._check_deadline()
            yield rows[start : start + chunk]

    def _residual(self, positions: Tensor, rows: Tensor) -> Tensor:
        """Mean-cell distance (len(rows),) at the end of each restarted interval."""
        return (positions[:, -1] - self._observed[rows[:, 1]]).norm(dim=-1).mean(-1)

    def loss(self, x: Tensor) -> Tensor:
        """Eq. (1) per particle (N,) in metres (module docstring), differentiable in ``x``."""
        x = self.check_x(x)
        masses, frictions = self.physical(x)
        total = x.new_zeros(len(x))
        for rows in self._chunks(len(x)):
            residual = self._residual(self._rollout(masses, frictions, rows), rows)
            total = total.index_add(0, rows[:, 0], residual)
        return total / self.n_restarts

    def loss_and_grad(self, x: Tensor) -> tuple[Tensor, Tensor]:
        """:meth:`loss` (N,) and its exact gradient (N, 2k) in ``x``, by autograd through the
        engine, accumulated chunk by chunk."""
        x = self.check_x(x).detach()
        total, grad = x.new_zeros(len(x)), torch.zeros_like(x)
        for rows in self._chunks(len(x)):
            xr = x.clone().requires_grad_(True)
            masses, frictions = self.physical(xr)
            residual = self._residual(self._rollout(masses, frictions, rows), rows)
            part = x.new_zeros(len(x)).index_add(0, rows[:, 0], residual)
            (g,) = torch.autograd.grad(part.sum(), xr)
            total, grad = total + part.detach(), grad + g
        return total / self.n_restarts, grad / self.n_restarts

    def algorithm1(self, x: Tensor) -> tuple[Tensor, Tensor]:
        """:meth:`loss` (N,) and Algorithm 1's direction (N, k) for the frictions, from the
        forward simulation only (§6).

        Under the paper's assumptions (rigid object, fixed inelastic finger contact) only
        cell i's own ground-friction impulse depends on μ_i: ``∂v_i/∂μ_i = M_i⁻¹ ∂λ_i/∂μ_i =
        −g Δt ŝ_i`` with ŝ_i the cell's direction of motion in the step, the forward
        simulation's own impulse per unit μ. Summed over the steps of each restarted interval
        (a velocity change at step j moves the cell for the remaining ``n − j`` steps) and
        projected on the derivative of the interval's residual, Σ_t (x̂ − x)/‖x̂ − x‖ · ∂x̂/∂μ.
        """
        x = self.check_x(x).detach()
        masses, frictions = self.physical(x)
        total = x.new_zeros(len(x))
        direction = x.new_zeros(len(x), self.k)
        weights = torch.arange(self.steps, 0, -1, dtype=x.dtype)  # n − j, j = 0 … n − 1
        with torch.no_grad():
            for rows in self._chunks(len(x)):
                positions = self._rollout(masses, frictions, rows)
                residual = positions[:, -1] - self._observed[rows[:, 1]]
                distance = residual.norm(dim=-1)  # (R, k)
                unit = residual / distance.clamp_min(1e-15).unsqueeze(-1) / self.k
                moves = positions[:, 1:] - positions[:, :-1]  # (R, n, k, 2)
                slip = moves / moves.norm(dim=-1, keepdim=True).clamp_min(1e-12)
                slip = torch.where(moves.norm(dim=-1, keepdim=True) > 1e-12, slip, 0.0)
                effect = -GRAVITY * DT**2 * torch.einsum("j,rjkd->rkd", weights, slip)
                per_cell = (unit * effect).sum(-1)  # (R, k)
                total = total.index_add(0, rows[:, 0], distance.mean(-1))
                direction = direction.index_add(0, rows[:, 0], per_cell)
        return total / self.n_restarts, direction / self.n_restarts

    def rollout_error(self, x: Tensor, data: Observations | None = None) -> Tensor:
        """The metric of §7 (N,): the mean over pushes and cells of the distance between the
        final cell positions of a full rollout from rest and those observed in ``data``
        (default: the training pushes), in metres."""
        masses, frictions = self.physical(self.check_x(x).detach())
        return self.final_error(masses, frictions, data)

    def final_positions(self, masses: Tensor, frictions: Tensor,
                        data: Observations | None = None) -> Tensor:
        """Final cell positions (N, B, k, 2) of full rollouts from rest of the pushes of
        ``data`` (default: the training pushes) with physical ``masses`` and ``frictions``
        (N, k), which need not lie in the search box."""
        data = self.data if data is None else data
        if not isinstance(data, Observations) or len(data.obj) != self.k:
            raise ValueError(f"data must be Observations of an object of {self.k} cells")
        check_tensor("masses", masses, shape=(None, self.k), dtype=torch.float64, positive=True)
        check_tensor("frictions", frictions, shape=(len(masses), self.k), dtype=torch.float64,
                     nonnegative=True)
        n, b = len(masses), len(data)
        batch = PushBatch.from_pushes(data.obj, list(data.pushes))
        steps = round(float(data.times[-1]) / DT)
        finals = []
        chunk = CHUNK[self.formulation]
        with torch.no_grad():
            for start in range(0, n * b, chunk):
                rows = torch.arange(start, min(n * b, start + chunk))
                particle, push = rows // b, rows % b
                positions, _ = FORMULATIONS[self.formulation](
                    data.obj.centres, masses[particle], frictions[particle],
                    _select(batch, push), masses.new_zeros(len(rows), 3),
                    cell_side=data.obj.cell_side, dt=DT, n_steps=steps,
                    friction_dirs=self.friction_dirs, faces=self._faces,
                )
                finals.append(positions[:, -1])
        return torch.cat(finals).reshape(n, b, self.k, 2)

    def final_error(self, masses: Tensor, frictions: Tensor, data: Observations | None = None
                    ) -> Tensor:
        """:meth:`rollout_error` of physical ``masses`` and ``frictions`` (N, k), which need
        not lie in the search box (the ground truth's error is the model's floor)."""
        data = self.data if data is None else data
        final = self.final_positions(masses, frictions, data)
        return cell_position_error(final, data.positions[:, -1].expand_as(final)).mean(1)


def _select(batch: PushBatch, index: Tensor) -> PushBatch:
    """The pushes ``index`` of ``batch``."""
    return replace(batch, cell=batch.cell[index], contact=batch.contact[index],
                   normal=batch.normal[index], velocity=batch.velocity[index],
                   start=batch.start[index])


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
    """Evaluates a :class:`PushingTarget` for a method within a :class:`Budget`: counts
    simulations and wall time, records improvements in its ``history`` (a :class:`History`),
    raises :class:`Exhausted` before an evaluation it cannot afford or once the time is
    spent.

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

    def algorithm1(self, x: Tensor) -> tuple[Tensor, Tensor]:
        """Eq. (1) and Algorithm 1's per-cell direction (:meth:`PushingTarget.algorithm1`)."""
        self._charge(len(x))
        value, direction = self.target.algorithm1(x)
        self._record(x, value)
        return value, direction


# -- the methods, registered once ----------------------------------------------------------

MethodFn = Callable[[Tracker, np.ndarray, np.random.Generator, dict], None]


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
METHODS: dict[str, MethodSpec] = {}


def method(name: str, label: str, options: dict | None = None, formulation: str = "rigid",
           in_paper: bool = True) -> Callable[[MethodFn], MethodFn]:
    """Register ``fn(tracker, x0, rng, options)`` as the method ``name``: it improves on the
    start ``x0`` (unit box, (2k,)) until the tracker raises :class:`Exhausted` or it is done."""

    def register(fn: MethodFn) -> MethodFn:
        if name in METHODS:
            raise ValueError(f"method {name!r} is registered twice")
        METHODS[name] = MethodSpec(name, fn, label, dict(options or {}), formulation, in_paper)
        return fn

    return register


def _step(x: Tensor, direction: Tensor, rate: Tensor | float) -> Tensor:
    """A projected step ``clip(x − rate · d / max|d|)`` in the unit box."""
    scale = direction.abs().max().clamp_min(1e-300)
    return (x - rate * direction / scale).clamp(0.0, 1.0)


@method("algorithm1", "Algorithm 1 (analytic)", {"alpha": 0.03, "decay": 0.9, "epsilon": 0.0})
def _algorithm1(tracker: Tracker, x0: np.ndarray, rng: np.random.Generator, o: dict) -> None:
    """§6: update rates α for the frictions and √α for the masses along the same per-cell
    direction (the constants C_f, C_M read as normalising it by its largest entry), decayed
    by ``decay`` per iteration as in the authors' code, until the loss is below ε."""
    x = torch.as_tensor(x0)[None]
    for it in range(1 << 30):
        loss, d = tracker.algorithm1(x)
        if float(loss) <= o["epsilon"]:
            return
        rate = o["alpha"] * o["decay"] ** it
        scale = d.abs().max().clamp_min(1e-300)
        step = torch.cat([math.sqrt(rate) * d, rate * d], 1) / scale
        x = (x - step).clamp(0.0, 1.0)


def _descent(tracker: Tracker, x0: np.ndarray, o: dict) -> None:
    x = torch.as_tensor(x0)[None]
    for it in range(1 << 30):
        _, grad = tracker.loss_and_grad(x)
        x = _step(x, grad, o["alpha"] * o["decay"] ** it)


@method("autograd-lcp", "Autograd (LCP formulation)", {"alpha": 0.1, "decay": 0.9},
        formulation="lcp")
def _autograd_lcp(tracker: Tracker, x0: np.ndarray, rng: np.random.Generator, o: dict) -> None:
    """Gradient descent with the exact gradient through formulation 1 (the paper's
    "Autograd" baseline), the same projected, normalised, decayed steps."""
    _descent(tracker, x0, o)


@method("autograd-rigid", "Autograd (rigid formulation)", {"alpha": 0.1, "decay": 0.9},
        in_paper=False)
def _autograd_rigid(tracker: Tracker, x0: np.ndarray, rng: np.random.Generator,
                    o: dict) -> None:
    """Gradient descent with the exact gradient through formulation 2."""
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
    """The outcome of :func:`identify`: the method, its best estimate (masses and frictions,
    (k,) each), its :class:`History`, the simulations and seconds it used and why it stopped."""

    method: str
    masses: np.ndarray
    frictions: np.ndarray
    history: History
    simulations: int
    seconds: float
    stopped: str


def start_point(k: int) -> np.ndarray:
    """The authors' start (unit box, (2k,)): every mass at half its box range (2.45 kg) and
    every friction at 0.5."""
    mass = (MASS_LIMITS[1] - MASS_LIMITS[0]) * 0.5
    unit_mass = (mass - MASS_LIMITS[0]) / (MASS_LIMITS[1] - MASS_LIMITS[0])
    unit_friction = (0.5 - FRICTION_LIMITS[0]) / (FRICTION_LIMITS[1] - FRICTION_LIMITS[0])
    return np.concatenate([np.full(k, unit_mass), np.full(k, unit_friction)])


def identify(name: str, data: Observations, budget: Budget, seed: int = 0,
             options: dict | None = None, noise: float = 1e-3) -> Identification:
    """Run the registered method ``name`` on the training pushes ``data`` within ``budget``
    from the authors' start, its random draws seeded by ``seed``; ``options`` override the
    method's registered ones. Every argument is checked before any work."""
    spec = METHODS[check_choice("name", name, sorted(METHODS))]
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
    target = PushingTarget(data, formulation=spec.formulation, noise=noise)
    x0 = start_point(target.k)
    # The start, shared by every method, is evaluated once with formulation 2 (the two
    # formulations agree to solver tolerance), outside the budget.
    start_loss = float(PushingTarget(data, noise=noise).loss(torch.as_tensor(x0)[None])[0])
    tracker = Tracker(target, budget, x0, start_loss)
    stopped = "finished"
    try:
        # Each method draws from its own stream of the seed.
        stream = np.random.default_rng([seed, list(METHODS).index(name)])
        spec.fn(tracker, x0, stream, merged)
    except Exhausted as stop:
        stopped = str(stop)
    finally:
        target.deadline = None
    masses, frictions = target.physical(torch.as_tensor(tracker.best_x)[None])
    return Identification(name, masses[0].numpy(), frictions[0].numpy(), tracker.history,
                          tracker.simulations, tracker.elapsed, stopped)
