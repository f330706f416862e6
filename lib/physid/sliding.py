"""A box sliding on a plane under Coulomb friction: the book's opening tutorial.

The "real world" is pybullet (:func:`bullet_slide`); the model is a differentiable torch
rollout (:func:`simulate_slide`) whose only parameter is the friction coefficient μ; and
:func:`fit_friction` identifies μ by gradient descent through the rollout.

Conventions. A box of mass m slides along +x with initial speed v₀ on a horizontal plane.
Coulomb friction decelerates it by μg while it moves and holds it once it stops, so in
continuous time it stops after v₀/(μg) seconds at the distance v₀²/(2μg)
(:func:`stopping_distance`). Bullet combines the two bodies' lateral friction coefficients by
their product, so the coefficient the data identifies is ``mu_box * mu_plane``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np
import torch
from tqdm.auto import tqdm

from physid.quiet_bullet import import_pybullet
from physid.scales import select

GRAVITY = 9.81
BULLET_DT = 1.0 / 240.0


@dataclass(frozen=True)
class SlideSizes:
    """Run sizes of the sliding-box tutorial (it has no paper sizes: ``paper`` = ``default``)."""

    fit_iterations: int
    landscape_points: int


SIZES = {
    "quick": SlideSizes(fit_iterations=150, landscape_points=101),
    "default": SlideSizes(fit_iterations=400, landscape_points=401),
    "paper": SlideSizes(fit_iterations=400, landscape_points=401),
}


def sizes(scale: str) -> SlideSizes:
    """The :class:`SlideSizes` of ``scale`` (ValueError for an unknown scale)."""
    return select(SIZES, scale, "sliding-box tutorial")


@dataclass(frozen=True)
class SlideData:
    """An observed slide: positions ``x`` (m) at times ``t`` (s), sampled every ``dt`` steps."""

    t: np.ndarray
    x: np.ndarray
    v0: float
    step_dt: float
    sample_every: int
    mu_effective: float

    @property
    def n_steps(self) -> int:
        """Simulation steps covered by the samples."""
        return len(self.t) * self.sample_every


def _check_positive(name: str, value: float) -> float:
    if not (isinstance(value, int | float) and math.isfinite(value) and value > 0):
        raise ValueError(f"{name} must be a positive finite number, got {value!r}")
    return float(value)


def _check_friction(name: str, value: float) -> float:
    if not (isinstance(value, int | float) and math.isfinite(value) and value >= 0):
        raise ValueError(f"{name} must be a non-negative finite number, got {value!r}")
    return float(value)


def stopping_distance(v0: float, mu: float, g: float = GRAVITY) -> float:
    """Continuous-time stopping distance v₀²/(2μg) of a box sliding under Coulomb friction."""
    _check_positive("v0", v0)
    _check_positive("mu", mu)
    return v0**2 / (2.0 * mu * g)


def simulate_slide(
    mu: torch.Tensor, v0: float, n_steps: int, dt: float, g: float = GRAVITY
) -> torch.Tensor:
    """Positions of the box after each of ``n_steps`` semi-implicit Euler steps.

    One step applies the Coulomb friction impulse, at most μ m g dt, which can stop the box but
    never reverse it, then moves it with the new velocity:

        v_{n+1} = max(v_n - μ g dt, 0),    x_{n+1} = x_n + v_{n+1} dt,

    the scheme Bullet uses for a box resting on a plane. ``mu`` may have any shape (a batch of
    coefficients); the result has shape ``mu.shape + (n_steps,)`` and is differentiable in μ.
    """
    if not isinstance(mu, torch.Tensor):
        raise ValueError(f"mu must be a torch.Tensor, got {type(mu).__name__}")
    if not bool(torch.isfinite(mu).all()) or bool((mu < 0).any()):
        raise ValueError(f"mu must be finite and non-negative, got {mu}")
    _check_positive("v0", v0)
    _check_positive("dt", dt)
    if not (isinstance(n_steps, int) and n_steps > 0):
        raise ValueError(f"n_steps must be a positive int, got {n_steps!r}")
    v = torch.full_like(mu, float(v0))
    x = torch.zeros_like(mu)
    positions = []
    for _ in range(n_steps):
        v = torch.clamp(v - mu * g * dt, min=0.0)
        x = x + v * dt
        positions.append(x)
    return torch.stack(positions, dim=-1)


def predict(mu: torch.Tensor, data: SlideData) -> torch.Tensor:
    """The rollout of :func:`simulate_slide` sampled at the times of ``data``."""
    x = simulate_slide(mu, data.v0, data.n_steps, data.step_dt)
    return x[..., data.sample_every - 1 :: data.sample_every]


def trajectory_loss(mu: torch.Tensor, data: SlideData) -> torch.Tensor:
    """Mean squared position error (m²) between the rollout and the data, per μ in the batch."""
    observed = torch.as_tensor(data.x, dtype=mu.dtype, device=mu.device)
    return ((predict(mu, data) - observed) ** 2).mean(dim=-1)


def bullet_slide(
    mu_box: float = 0.5,
    mu_plane: float = 0.6,
    v0: float = 2.0,
    duration: float = 1.0,
    half_extents: tuple[float, float, float] = (0.1, 0.1, 0.01),
    mass: float = 1.0,
    sample_every: int = 4,
    settle_steps: int = 60,
) -> SlideData:
    """Slide a box in pybullet and record its position: the tutorial's observed data.

    The box first settles on the plane for ``settle_steps`` steps, then is given the speed
    ``v0`` along +x and stepped at Bullet's default 1/240 s for ``duration`` seconds; every
    ``sample_every``-th step is recorded. Bullet's default linear and angular damping (0.04)
    would add a drag that is not friction, so both are set to zero. Bullet multiplies the two
    lateral friction coefficients: the effective coefficient is ``mu_box * mu_plane``.
    """
    _check_friction("mu_box", mu_box)
    _check_friction("mu_plane", mu_plane)
    _check_positive("v0", v0)
    _check_positive("duration", duration)
    _check_positive("mass", mass)
    for h in half_extents:
        _check_positive("half_extents", h)
    if not (isinstance(sample_every, int) and sample_every > 0):
        raise ValueError(f"sample_every must be a positive int, got {sample_every!r}")
    n_samples = round(duration / (BULLET_DT * sample_every))
    if n_samples < 1:
        raise ValueError(f"duration {duration!r} s is shorter than one sample")

    pb = import_pybullet()
    client = pb.connect(pb.DIRECT)
    try:
        pb.setGravity(0, 0, -GRAVITY, physicsClientId=client)
        pb.setTimeStep(BULLET_DT, physicsClientId=client)
        plane_shape = pb.createCollisionShape(pb.GEOM_PLANE, physicsClientId=client)
        plane = pb.createMultiBody(0, plane_shape, physicsClientId=client)
        box_shape = pb.createCollisionShape(
            pb.GEOM_BOX, halfExtents=list(half_extents), physicsClientId=client
        )
        box = pb.createMultiBody(
            mass, box_shape, basePosition=[0, 0, half_extents[2]], physicsClientId=client
        )
        pb.changeDynamics(plane, -1, lateralFriction=mu_plane, physicsClientId=client)
        pb.changeDynamics(
            box,
            -1,
            lateralFriction=mu_box,
            linearDamping=0.0,
            angularDamping=0.0,
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
        v0=float(v0),
        step_dt=BULLET_DT,
        sample_every=sample_every,
        mu_effective=mu_box * mu_plane,
    )


def add_noise(data: SlideData, sigma: float, seed: int) -> SlideData:
    """``data`` with i.i.d. Gaussian position noise of standard deviation ``sigma`` (m)."""
    if not (isinstance(sigma, int | float) and math.isfinite(sigma) and sigma >= 0):
        raise ValueError(f"sigma must be a non-negative finite number, got {sigma!r}")
    noise = np.random.default_rng(seed).normal(0.0, sigma, size=data.x.shape)
    return replace(data, x=data.x + noise)


def stopping_distance_error(
    v0: float, mu: float, dts: np.ndarray, g: float = GRAVITY
) -> np.ndarray:
    """Absolute error of the simulated stopping distance against v₀²/(2μg), for each dt in ``dts``.

    The discrete scheme of :func:`simulate_slide` stops about v₀ dt / 2 short of v₀²/(2μg),
    so the error shrinks linearly with dt.
    """
    exact = stopping_distance(v0, mu, g)
    errors = []
    for dt in np.asarray(dts, dtype=float):
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
    """Identify μ by gradient descent through the rollout.

    Adam on log μ (so μ stays positive) minimises :func:`trajectory_loss`; the step size
    decays geometrically to 1 % of ``lr`` over the run, so the last iterations settle.
    """
    _check_positive("mu_init", mu_init)
    _check_positive("lr", lr)
    if not (isinstance(iterations, int) and iterations > 0):
        raise ValueError(f"iterations must be a positive int, got {iterations!r}")
    log_mu = torch.tensor(math.log(mu_init), dtype=torch.float64, requires_grad=True)
    optimiser = torch.optim.Adam([log_mu], lr=lr)
    decay = torch.optim.lr_scheduler.ExponentialLR(optimiser, gamma=0.01 ** (1.0 / iterations))
    mus, losses = [], []
    for _ in tqdm(range(iterations), desc="fitting mu", disable=not progress, leave=False):
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


def loss_landscape(
    data: SlideData, mu_min: float, mu_max: float, points: int, rel_step: float = 1e-6
) -> Landscape:
    """Evaluate the loss and its gradient on ``points`` values of μ in one batched rollout."""
    _check_positive("mu_min", mu_min)
    _check_positive("mu_max", mu_max)
    if mu_max <= mu_min:
        raise ValueError(f"mu_max must exceed mu_min, got mu_min={mu_min!r}, mu_max={mu_max!r}")
    if not (isinstance(points, int) and points >= 2):
        raise ValueError(f"points must be an int >= 2, got {points!r}")
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
