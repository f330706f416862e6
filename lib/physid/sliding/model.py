"""A box sliding on a plane under Coulomb friction: the book's opening tutorial.

The "real world" is pybullet (:func:`bullet_slide`); the model is a differentiable torch
rollout (:func:`simulate_slide`, one :func:`slide_step` per time step) whose only parameter is
the friction coefficient μ; and :func:`fit_friction` identifies μ by gradient descent through
the rollout.

Conventions. A box of mass m slides along +x with initial speed v₀ on a horizontal plane.
Coulomb friction decelerates it by μg while it moves and holds it once it stops, so in
continuous time it stops after v₀/(μg) seconds at the distance ::

    d(μ) = v₀² / (2 μ g)                                         (eq. tut-stopping-distance)

(:func:`stopping_distance`). The model steps the semi-implicit Euler scheme Bullet uses ::

    v_{n+1} = max(v_n − μ g Δt, 0),  x_{n+1} = x_n + v_{n+1} Δt  (eq. tut-semi-implicit-euler)

and is fitted by minimising the mean squared position error over the K samples ::

    L(μ) = (1/K) Σ_k (x̂(t_k; μ) − x_k)²                          (eq. tut-loss)

(:func:`trajectory_loss`). The labels are those of the tutorial chapter's equations. Bullet
combines the two bodies' lateral friction coefficients by their product, capped at
:data:`BULLET_MAX_FRICTION`, so the coefficient the data identifies is ``mu_box * mu_plane``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import torch

from physid.core.constants import GRAVITY
from physid.core.progress import progress as progress_bar
from physid.core.quiet_bullet import import_pybullet
from physid.core.scales import Sizes, SizeTable
from physid.core.validate import (
    check_array,
    check_count,
    check_nonnegative,
    check_number,
    check_positive,
    check_seed,
    check_tensor,
)

#: Bullet's default time step (s): 240 Hz.
BULLET_DT = 1.0 / 240.0
#: The linear and angular damping Bullet gives every body unless told otherwise (1/s).
BULLET_DEFAULT_DAMPING = 0.04
#: Bullet clamps the combined friction coefficient of a contact (the product of the two
#: bodies' coefficients) to this value (``btManifoldResult::calculateCombinedFriction``).
BULLET_MAX_FRICTION = 10.0
#: :func:`fit_friction`'s step size decays geometrically to this fraction of ``lr``.
LR_FINAL_FRACTION = 0.01


@dataclass(frozen=True)
class SlideSizes(Sizes):
    """Run sizes of the sliding-box tutorial (it has no paper sizes: ``paper`` = ``default``).

    ``fit_iterations``: Adam steps of :func:`fit_friction`; ``landscape_points``: values of μ in
    :func:`loss_landscape`; ``bullet_gradient_points``: values of μ at which
    :func:`bullet_gradient_check` differentiates pybullet by finite differences.
    """

    fit_iterations: int
    landscape_points: int
    bullet_gradient_points: int


SIZES = SizeTable(
    "sliding-box tutorial",
    quick=SlideSizes(fit_iterations=150, landscape_points=101, bullet_gradient_points=7),
    default=SlideSizes(fit_iterations=400, landscape_points=401, bullet_gradient_points=20),
    paper=SlideSizes(fit_iterations=400, landscape_points=401, bullet_gradient_points=20),
)


#: How far (a fraction of the step ``step_dt``) a sample time of :class:`SlideData` may lie
#: from its grid time: room for rounded time stamps, far below the half step that would
#: make a sample another step's.
GRID_TOLERANCE = 1e-3


@dataclass(frozen=True)
class SlideData:
    """An observed slide: positions ``x`` (m) at times ``t`` (s), sampled every ``dt`` steps.

    The box is stepped every ``step_dt`` seconds and sample ``k`` (from 1) is taken after
    ``k * sample_every`` steps, so ``t`` must be the grid ``step_dt * sample_every * (1, 2, …,
    len(t))`` (to :data:`GRID_TOLERANCE` of a step): times off that grid are refused, as are
    empty, non-positive or non-finite times and positions of another length.
    """

    t: np.ndarray
    x: np.ndarray
    v0: float
    step_dt: float
    sample_every: int
    mu_effective: float

    def __post_init__(self) -> None:
        t = check_array("t", self.t, shape=(None,), positive=True)
        x = check_array("x", self.x, shape=(len(t),))
        if len(t) == 0:
            raise ValueError("t must hold at least one sample time, got an empty array")
        step_dt = check_positive("step_dt", self.step_dt)
        sample_every = check_count("sample_every", self.sample_every)
        grid = step_dt * sample_every * np.arange(1, len(t) + 1)
        off = np.flatnonzero(np.abs(t - grid) > GRID_TOLERANCE * step_dt)
        if off.size:
            i = off[0]
            raise ValueError(
                f"t must lie on the sampling grid step_dt * sample_every * (1, 2, …) = "
                f"{step_dt:g} * {sample_every} * (1, 2, …) s; t[{i}] = {float(t[i])!r}, "
                f"expected {float(grid[i])!r}"
            )
        object.__setattr__(self, "t", t)
        object.__setattr__(self, "x", x)
        object.__setattr__(self, "v0", check_positive("v0", self.v0))
        object.__setattr__(self, "step_dt", step_dt)
        object.__setattr__(self, "sample_every", sample_every)
        mu = check_nonnegative("mu_effective", self.mu_effective)
        object.__setattr__(self, "mu_effective", mu)

    @property
    def n_steps(self) -> int:
        """Simulation steps covered by the samples."""
        return len(self.t) * self.sample_every


def _check_data(data: Any) -> SlideData:
    if not isinstance(data, SlideData):
        raise TypeError(f"data must be a SlideData, got {type(data).__name__}")
    return data


def _check_mu(mu: Any) -> torch.Tensor:
    """A float64 tensor of friction coefficients (any shape), finite and >= 0."""
    return check_tensor("mu", mu, shape=None, dtype=torch.float64, nonnegative=True)


def stopping_distance(v0: float, mu: float, g: float = GRAVITY) -> float:
    """Continuous-time stopping distance v₀²/(2μg) (m), eq. ``tut-stopping-distance``."""
    v0 = check_positive("v0", v0)
    mu = check_positive("mu", mu)
    g = check_positive("g", g)
    return v0**2 / (2.0 * mu * g)


def _slide_step(x, v, mu, dt, g):
    """Eq. ``tut-semi-implicit-euler``: friction slows the box, at most to rest; then it moves."""
    v = torch.clamp(v - mu * g * dt, min=0.0)
    return x + v * dt, v


def slide_step(
    x: torch.Tensor, v: torch.Tensor, mu: torch.Tensor, dt: float, g: float = GRAVITY
) -> tuple[torch.Tensor, torch.Tensor]:
    """One semi-implicit Euler step of the sliding box, eq. ``tut-semi-implicit-euler``.

    The friction impulse (at most μ m g Δt) may stop the box but never reverse it; the box then
    moves with its new velocity. ``x`` (m), ``v`` (m/s, >= 0) and ``mu`` are float64 tensors
    that broadcast together; ``dt`` (s) and ``g`` (m/s²) are positive. Returns the new
    ``(x, v)``. :func:`simulate_slide` checks its arguments once and loops over the same step.
    """
    x = check_tensor("x", x, shape=None, dtype=torch.float64)
    v = check_tensor("v", v, shape=None, dtype=torch.float64, nonnegative=True)
    mu = _check_mu(mu)
    dt, g = check_positive("dt", dt), check_positive("g", g)
    try:
        torch.broadcast_shapes(x.shape, v.shape, mu.shape)
    except RuntimeError:
        raise ValueError(
            f"x, v and mu must broadcast together, got shapes {tuple(x.shape)}, "
            f"{tuple(v.shape)} and {tuple(mu.shape)}"
        ) from None
    return _slide_step(x, v, mu, dt, g)


def simulate_slide(
    mu: torch.Tensor, v0: float, n_steps: int, dt: float, g: float = GRAVITY
) -> torch.Tensor:
    """Positions (m) of the box after ``n_steps`` steps of eq. ``tut-semi-implicit-euler``.

    ``mu`` is a float64 tensor of any shape (a batch of coefficients); the result has shape
    ``mu.shape + (n_steps,)`` and is differentiable in μ. The box starts at x = 0 with speed
    ``v0`` (m/s); ``dt`` is the time step (s) and ``g`` the gravity (m/s²).
    """
    mu = _check_mu(mu)
    v0 = check_positive("v0", v0)
    n_steps = check_count("n_steps", n_steps)
    dt = check_positive("dt", dt)
    g = check_positive("g", g)
    x, v = torch.zeros_like(mu), torch.full_like(mu, v0)
    positions = []
    for _ in range(n_steps):
        x, v = _slide_step(x, v, mu, dt, g)
        positions.append(x)
    return torch.stack(positions, dim=-1)


def predict(mu: torch.Tensor, data: SlideData) -> torch.Tensor:
    """The rollout of :func:`simulate_slide` sampled at the times of ``data``."""
    data = _check_data(data)
    x = simulate_slide(mu, data.v0, data.n_steps, data.step_dt)
    return x[..., data.sample_every - 1 :: data.sample_every]


def trajectory_loss(mu: torch.Tensor, data: SlideData) -> torch.Tensor:
    """Eq. ``tut-loss``: mean squared position error (m²) of the rollout against ``data``, per μ."""
    prediction = predict(mu, data)
    observed = torch.as_tensor(data.x, dtype=mu.dtype, device=mu.device)
    return ((prediction - observed) ** 2).mean(dim=-1)


def bullet_slide(
    mu_box: float = 0.5,
    mu_plane: float = 0.6,
    v0: float = 2.0,
    duration: float = 1.0,
    half_extents: tuple[float, float, float] = (0.1, 0.1, 0.01),
    mass: float = 1.0,
    sample_every: int = 4,
    settle_steps: int = 60,
    damping: float = 0.0,
) -> SlideData:
    """Slide a box in pybullet and record its position: the tutorial's observed data.

    The box first settles on the plane for ``settle_steps`` steps, then is given the speed
    ``v0`` (m/s) along +x and stepped at Bullet's default :data:`BULLET_DT` for ``duration``
    seconds; every ``sample_every``-th step is recorded. ``damping`` (1/s) is the body's linear
    and angular damping: 0 by default, since Bullet's own default
    (:data:`BULLET_DEFAULT_DAMPING`) adds a drag that is not friction. Bullet multiplies the two
    lateral friction coefficients and caps the product at :data:`BULLET_MAX_FRICTION`, so a
    product above the cap is refused: the effective coefficient is ``mu_box * mu_plane``.
    """
    mu_box = check_nonnegative("mu_box", mu_box)
    mu_plane = check_nonnegative("mu_plane", mu_plane)
    if mu_box * mu_plane > BULLET_MAX_FRICTION:
        raise ValueError(
            f"mu_box * mu_plane must be <= {BULLET_MAX_FRICTION:g} (Bullet caps the combined "
            f"friction there), got mu_box={mu_box!r}, mu_plane={mu_plane!r}"
        )
    v0 = check_positive("v0", v0)
    duration = check_positive("duration", duration)
    extents = check_array("half_extents", half_extents, shape=(3,), positive=True)
    mass = check_positive("mass", mass)
    sample_every = check_count("sample_every", sample_every)
    settle_steps = check_count("settle_steps", settle_steps, minimum=0)
    damping = check_nonnegative("damping", damping)
    n_samples = round(duration / (BULLET_DT * sample_every))
    if n_samples < 1:
        raise ValueError(
            f"duration must cover at least one sample ({BULLET_DT * sample_every:g} s), "
            f"got {duration!r}"
        )

    pb = import_pybullet()
    client = pb.connect(pb.DIRECT)
    try:
        pb.setGravity(0, 0, -GRAVITY, physicsClientId=client)
        pb.setTimeStep(BULLET_DT, physicsClientId=client)
        plane_shape = pb.createCollisionShape(pb.GEOM_PLANE, physicsClientId=client)
        plane = pb.createMultiBody(0, plane_shape, physicsClientId=client)
        box_shape = pb.createCollisionShape(
            pb.GEOM_BOX, halfExtents=extents.tolist(), physicsClientId=client
        )
        box = pb.createMultiBody(
            mass, box_shape, basePosition=[0, 0, extents[2]], physicsClientId=client
        )
        pb.changeDynamics(plane, -1, lateralFriction=mu_plane, physicsClientId=client)
        pb.changeDynamics(
            box,
            -1,
            lateralFriction=mu_box,
            linearDamping=damping,
            angularDamping=damping,
            physicsClientId=client,
        )
        for _ in range(settle_steps):
            pb.stepSimulation(physicsClientId=client)
        x0 = pb.getBasePositionAndOrientation(box, physicsClientId=client)[0][0]
        pb.resetBaseVelocity(box, [v0, 0, 0], [0, 0, 0], physicsClientId=client)
        xs = []
        for step in range(1, n_samples * sample_every + 1):
            pb.stepSimulation(physicsClientId=client)
            if step % sample_every == 0:
                position = pb.getBasePositionAndOrientation(box, physicsClientId=client)[0]
                xs.append(position[0] - x0)
    finally:
        pb.disconnect(client)
    t = BULLET_DT * sample_every * np.arange(1, n_samples + 1)
    return SlideData(
        t=t,
        x=np.asarray(xs),
        v0=v0,
        step_dt=BULLET_DT,
        sample_every=sample_every,
        mu_effective=mu_box * mu_plane,
    )


def add_noise(data: SlideData, sigma: float, seed: int) -> SlideData:
    """``data`` with i.i.d. Gaussian position noise of standard deviation ``sigma`` (m)."""
    data = _check_data(data)
    sigma = check_nonnegative("sigma", sigma)
    seed = check_seed("seed", seed)
    noise = np.random.default_rng(seed).normal(0.0, sigma, size=data.x.shape)
    return replace(data, x=data.x + noise)


def stopping_distance_error(
    v0: float, mu: float, dts: np.ndarray, g: float = GRAVITY
) -> np.ndarray:
    """Error (m) of the simulated stopping distance against eq. ``tut-stopping-distance``.

    One value per time step in ``dts`` (s). The scheme of eq. ``tut-semi-implicit-euler`` stops
    about v₀ Δt / 2 short of v₀²/(2μg), so the error shrinks linearly with Δt.
    """
    v0, mu, g = check_positive("v0", v0), check_positive("mu", mu), check_positive("g", g)
    steps = check_array("dts", dts, shape=(None,), positive=True)
    exact = stopping_distance(v0, mu, g)
    errors = []
    for dt in steps:
        n_steps = math.ceil(v0 / (mu * g * dt)) + 2
        x = simulate_slide(torch.tensor(mu, dtype=torch.float64), v0, n_steps, float(dt), g)
        errors.append(abs(x[-1].item() - exact))
    return np.asarray(errors)


@dataclass(frozen=True)
class FitResult:
    """The identified coefficient and the optimisation history (one entry per iteration)."""

    mu: float
    mus: np.ndarray
    losses: np.ndarray


def fit_friction(
    data: SlideData,
    mu_init: float = 0.1,
    iterations: int = 400,
    lr: float = 0.05,
    progress: bool = True,
) -> FitResult:
    """Identify μ by gradient descent on eq. ``tut-loss`` through the rollout.

    Adam on log μ (so μ stays positive) minimises :func:`trajectory_loss`; the step size
    ``lr`` decays geometrically to :data:`LR_FINAL_FRACTION` of itself over the run, so the
    last iterations settle.
    ``progress`` shows a bar on the terminal (never in a notebook page).
    """
    data = _check_data(data)
    mu_init = check_positive("mu_init", mu_init)
    iterations = check_count("iterations", iterations)
    lr = check_positive("lr", lr)
    if not isinstance(progress, bool):
        raise TypeError(f"progress must be True or False, got {progress!r}")
    log_mu = torch.tensor(math.log(mu_init), dtype=torch.float64, requires_grad=True)
    optimiser = torch.optim.Adam([log_mu], lr=lr)
    gamma = LR_FINAL_FRACTION ** (1 / iterations)
    decay = torch.optim.lr_scheduler.ExponentialLR(optimiser, gamma=gamma)
    mus, losses = [], []
    for _ in progress_bar(range(iterations), desc="fitting mu", disable=not progress):
        optimiser.zero_grad()
        loss = trajectory_loss(log_mu.exp(), data)
        loss.backward()
        mus.append(math.exp(log_mu.item()))
        losses.append(loss.item())
        optimiser.step()
        decay.step()
    return FitResult(mu=math.exp(log_mu.item()), mus=np.asarray(mus), losses=np.asarray(losses))


@dataclass(frozen=True)
class Landscape:
    """The loss over a grid of μ with its autograd and central finite-difference gradients."""

    mu: np.ndarray
    loss: np.ndarray
    grad_autograd: np.ndarray
    grad_fd: np.ndarray

    @property
    def max_relative_gradient_error(self) -> float:
        """Largest autograd-minus-FD gap over the grid, relative to the largest FD gradient."""
        scale = np.abs(self.grad_fd).max()
        return float(np.abs(self.grad_autograd - self.grad_fd).max() / scale)

    @property
    def argmin(self) -> float:
        """The grid value of μ with the lowest loss."""
        return float(self.mu[np.argmin(self.loss)])

    @property
    def minima(self) -> np.ndarray:
        """The grid values of μ that are local minima of the loss (interior or at an end)."""
        loss = self.loss
        lower_left = np.r_[True, loss[1:] < loss[:-1]]
        lower_right = np.r_[loss[:-1] < loss[1:], True]
        return self.mu[lower_left & lower_right]


def loss_landscape(
    data: SlideData, mu_min: float, mu_max: float, points: int, rel_step: float = 1e-6
) -> Landscape:
    """Eq. ``loss`` and its gradient on ``points`` values of μ in one batched rollout.

    The gradient comes from autograd and, for comparison, from central finite differences
    with a step of ``rel_step`` times μ.
    """
    data = _check_data(data)
    mu_min = check_positive("mu_min", mu_min)
    mu_max = check_positive("mu_max", mu_max)
    if mu_max <= mu_min:
        raise ValueError(f"mu_max must exceed mu_min, got mu_min={mu_min!r}, mu_max={mu_max!r}")
    points = check_count("points", points, minimum=2)
    rel_step = check_number("rel_step", rel_step, low=0.0, high=0.1, low_open=True)
    mu = torch.linspace(mu_min, mu_max, points, dtype=torch.float64, requires_grad=True)
    loss = trajectory_loss(mu, data)
    (grad,) = torch.autograd.grad(loss.sum(), mu)
    with torch.no_grad():
        h = rel_step * mu
        grad_fd = (trajectory_loss(mu + h, data) - trajectory_loss(mu - h, data)) / (2 * h)
    return Landscape(
        mu=mu.detach().numpy(),
        loss=loss.detach().numpy(),
        grad_autograd=grad.numpy(),
        grad_fd=grad_fd.numpy(),
    )


@dataclass(frozen=True)
class BulletGradientCheck:
    """The model's autograd gradient of eq. ``tut-loss`` beside pybullet's, on a grid of μ.

    ``grad_bullet`` is the central finite difference of the same loss with pybullet's slide in
    place of the model (the gradient the world itself would give), with steps of ``rel_step``
    times μ.
    """

    mu: np.ndarray
    grad_model: np.ndarray
    grad_bullet: np.ndarray
    rel_step: float

    @property
    def max_relative_gap(self) -> float:
        """Largest |model − pybullet| gradient gap, relative to the largest pybullet gradient."""
        scale = np.abs(self.grad_bullet).max()
        return float(np.abs(self.grad_model - self.grad_bullet).max() / scale)


def bullet_gradient_check(
    data: SlideData, mu_min: float, mu_max: float, points: int, rel_step: float = 1e-3
) -> BulletGradientCheck:
    """Compare the model's gradient of eq. ``tut-loss`` with pybullet's at ``points`` values of μ.

    pybullet's gradient is a central finite difference with a step of ``rel_step`` times μ: at
    each μ the box of :func:`bullet_slide` (its default size and mass, no damping) slides with
    ``mu_box = μ`` on a plane of friction 1, with the speed, duration and sampling of ``data``.
    """
    data = _check_data(data)
    mu_min = check_positive("mu_min", mu_min)
    mu_max = check_number("mu_max", mu_max, low=0.0, high=BULLET_MAX_FRICTION, low_open=True)
    if mu_max <= mu_min:
        raise ValueError(f"mu_max must exceed mu_min, got mu_min={mu_min!r}, mu_max={mu_max!r}")
    points = check_count("points", points, minimum=2)
    rel_step = check_number("rel_step", rel_step, low=0.0, high=0.1, low_open=True)
    duration = len(data.t) * data.sample_every * BULLET_DT
    if data.step_dt != BULLET_DT:
        raise ValueError(
            f"data must be stepped at Bullet's {BULLET_DT:g} s, got step_dt={data.step_dt!r}"
        )

    def bullet_loss(mu: float) -> float:
        slide = bullet_slide(mu, 1.0, data.v0, duration, sample_every=data.sample_every)
        return float(np.mean((slide.x - data.x) ** 2))

    mus = np.linspace(mu_min, mu_max, points)
    grad_bullet = np.array(
        [
            (bullet_loss(m * (1 + rel_step)) - bullet_loss(m * (1 - rel_step))) / (2 * rel_step * m)
            for m in mus
        ]
    )
    mu = torch.tensor(mus, dtype=torch.float64, requires_grad=True)
    (grad_model,) = torch.autograd.grad(trajectory_loss(mu, data).sum(), mu)
    return BulletGradientCheck(
        mu=mus, grad_model=grad_model.numpy(), grad_bullet=grad_bullet, rel_step=rel_step
    )
