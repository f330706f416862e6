"""A differentiable double pendulum: rigid links, semi-implicit Euler, batched in torch.

Each link ``i`` is a rigid body hinged at its proximal joint, with mass ``m_i``, moment of
inertia ``I_i`` about its centre of mass (the axis of rotation), the centre of mass at
``(c_ix, c_iy)`` in the link frame (``x`` along the link from the joint towards its tip, ``y``
perpendicular), a viscous friction coefficient ``d_i`` at its joint and a length ``l_i`` (the
distance from its joint to the next joint: ``l1`` places joint 2 on link 1; ``l2`` only matters for
a point mass at the tip, and for drawing).
The state is ``s = [q0, q1, q̇0, q̇1]``: ``q0`` is the angle of link 1 from hanging straight
down, ``q1`` the angle of link 2 relative to link 1. This is the 11-parameter model of the
real-data experiment of Heiden et al. (2022) with all twelve quantities available as
parameters; ``point_mass=True`` gives the textbook pendulum with the whole mass of
each link at its tip and no inertia, whose only geometric parameters are the lengths.

:class:`DoublePendulum` is a :class:`~physid.core.simulator.Simulator`: no input, and the
whole state is measured (:meth:`DoublePendulum.observe` is the identity).

The time step is semi-implicit Euler, as in the Tiny Differentiable Simulator: ``q̈`` from the
current state, then ``q̇ ← q̇ + Δt q̈``, then ``q ← q + Δt q̇``.

Speed. A rollout is a sequence of ~30 elementwise operations per step on tensors with one lane
per (particle, shooting window). Eager autograd spends almost all its time on per-operation
overhead, so :func:`rollout` runs the steps without autograd and back-propagates with a
hand-derived adjoint (:func:`step_vjp`, checked against autograd in the tests), both in chunks
of steps that ``torch.compile`` fuses into one C++ kernel each (a few seconds to compile once
per process; ``compiled=False`` runs the same code eagerly).
:meth:`DoublePendulum.simulate_autograd` is the plain eager step-by-step rollout, kept as the
reference.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import torch

from physid.core.constants import GRAVITY
from physid.core.simulator import compiled_by_default
from physid.core.validate import check_count, check_number, check_positive, check_tensor

#: Every quantity the model knows, in a fixed order.
ALL_PARAMETERS: tuple[str, ...] = (
    "l1",
    "m1",
    "I1",
    "c1x",
    "c1y",
    "d1",
    "l2",
    "m2",
    "I2",
    "c2x",
    "c2y",
    "d2",
)

#: The 11 parameters of the paper's real-data experiment and their limits (appendix Table 1), in
#: the table's order. The paper's "link 2 length" is ``l1``, the offset of joint 2 along link 1:
#: in the Tiny Differentiable Simulator's compound pendulum (the paper's simulator) joint ``i ≥ 1``
#: sits at ``link_lengths[i]`` along the previous link, and no elbow-to-tip distance enters the
#: dynamics (``tests/inference/test_tds.py`` checks the mapping against that simulator).
REAL_LIMITS: dict[str, tuple[float, float]] = {
    "m1": (0.05, 0.5),
    "I1": (0.002, 1.0),
    "c1x": (-0.2, 0.2),
    "c1y": (-0.2, 0.2),
    "d1": (0.0, 0.5),
    "l1": (0.08, 0.3),
    "m2": (0.05, 0.5),
    "I2": (0.002, 1.0),
    "c2x": (-0.2, 0.2),
    "c2y": (-0.2, 0.2),
    "d2": (0.0, 0.5),
}

#: Values of the parameters that are not estimated (a rig of the size of the IBM pendulum).
DEFAULTS: dict[str, float] = {
    "l1": 0.091,
    "m1": 0.1,
    "I1": 0.002,
    "c1x": 0.045,
    "c1y": 0.0,
    "d1": 0.001,
    "l2": 0.070,
    "m2": 0.1,
    "I2": 0.002,
    "c2x": 0.035,
    "c2y": 0.0,
    "d2": 0.001,
}

#: The default start state, link 1 horizontal and link 2 in line with it, at rest.
SIDEWAYS = (math.pi / 2, 0.0, 0.0, 0.0)

#: The entries of a state ``[q0, q1, q̇0, q̇1]``.
STATE_SIZE = 4

#: Steps fused into one compiled kernel.
CHUNK = 5
_N_CONSTS = 10



@dataclass(frozen=True)
class DoublePendulum:
    """A double pendulum whose parameters ``names`` are estimated and the rest ``fixed``.

    Args:
        names: the estimated parameters, in the order of the last axis of ``theta``.
        dt: the time step (s).
        point_mass: each link's mass at its tip, no inertia (``c_i = (l_i, 0)``, ``I_i = 0``).
        fixed: values for the parameters not in ``names`` (defaults: :data:`DEFAULTS`).
        gravity: m/s².
        compiled: fuse the rollout with ``torch.compile`` (``None``: the environment variable
            ``PHYSID_COMPILE``, on unless set to ``0``).
    """

    names: tuple[str, ...] = ("l1", "l2")
    dt: float = 0.01
    point_mass: bool = False
    fixed: Mapping[str, float] = field(default_factory=dict)
    gravity: float = GRAVITY
    compiled: bool | None = None

    def __post_init__(self) -> None:
        if isinstance(self.names, str) or not all(isinstance(n, str) for n in self.names):
            raise TypeError(f"names must be a sequence of parameter names, got {self.names!r}")
        names = tuple(self.names)
        object.__setattr__(self, "names", names)
        unknown = [n for n in names if n not in ALL_PARAMETERS]
        if unknown or len(set(names)) != len(names) or not names:
            raise ValueError(f"names must be distinct entries of {ALL_PARAMETERS}, got {names!r}")
        if not isinstance(self.fixed, Mapping):
            raise TypeError(f"fixed must be a mapping of names to values, got {self.fixed!r}")
        bad = [k for k in self.fixed if k not in ALL_PARAMETERS]
        if bad:
            raise ValueError(f"fixed names unknown parameters {bad}")
        fixed = {k: _check_parameter(f"fixed[{k!r}]", k, v) for k, v in self.fixed.items()}
        object.__setattr__(self, "fixed", fixed)
        object.__setattr__(self, "dt", check_positive("dt", self.dt))
        object.__setattr__(self, "gravity", check_number("gravity", self.gravity, low=0.0))
        if self.compiled is not None and not isinstance(self.compiled, bool):
            raise TypeError(f"compiled must be True, False or None, got {self.compiled!r}")
        if not isinstance(self.point_mass, bool):
            raise TypeError(f"point_mass must be True or False, got {self.point_mass!r}")

    @property
    def dim(self) -> int:
        return len(self.names)

    # -- the Simulator protocol (physid.core.simulator) -----------------------------------
    @property
    def param_names(self) -> tuple[str, ...]:
        """The estimated parameters (the ``names`` of this model)."""
        return self.names

    @property
    def state_size(self) -> int:
        """The state ``[q0, q1, q̇0, q̇1]`` has four entries."""
        return STATE_SIZE

    @property
    def input_size(self) -> int:
        """The pendulum is not actuated, so its input has no entries."""
        return 0

    @property
    def observation_size(self) -> int:
        """The whole state is measured (:meth:`observe`), so four entries."""
        return STATE_SIZE

    def check_theta(self, theta: torch.Tensor | Sequence[float]) -> torch.Tensor:
        """``theta`` (..., dim) as float64, finite and physical, else a ValueError naming it.

        The estimators call :meth:`rollout` instead: a sampler may propose a
        particle outside the limits, whose log-likelihood is then whatever the rollout gives.
        """
        theta = _as_float64("theta", theta)
        if theta.shape[-1:] != (self.dim,):
            raise ValueError(
                f"theta must have a last axis of {self.dim} ({', '.join(self.names)}), "
                f"got shape {tuple(theta.shape)}"
            )
        check_tensor("theta", theta, shape=None, dtype=torch.float64)
        for i, name in enumerate(self.names):
            low, open_ = _DOMAIN.get(name[0], (None, False))
            values = theta[..., i].detach()
            if low is not None and bool(((values < low) | (open_ & (values == low))).any()):
                bad = values[(values < low) | (open_ & (values == low))].flatten()[0].item()
                relation = ">" if open_ else ">="
                raise ValueError(f"theta: {name} must be {relation} {low:g}, found {bad}")
        return theta

    def physical(self, theta: torch.Tensor) -> dict[str, torch.Tensor]:
        """All twelve quantities, as tensors of ``theta``'s batch shape."""
        theta = _as_float64("theta", theta)
        if theta.shape[-1:] != (self.dim,):
            raise ValueError(
                f"theta must have a last axis of {self.dim} ({', '.join(self.names)}), "
                f"got shape {tuple(theta.shape)}"
            )
        values = {**DEFAULTS, **self.fixed}
        batch = theta.shape[:-1]
        out = {n: theta[..., i] for i, n in enumerate(self.names)}
        for n in ALL_PARAMETERS:
            if n not in out:
                out[n] = torch.full(batch, float(values[n]), dtype=theta.dtype, device=theta.device)
        if self.point_mass:
            zero = torch.zeros_like(out["l1"])
            out.update(c1x=out["l1"], c1y=zero, I1=zero, c2x=out["l2"], c2y=zero, I2=zero)
        return out

    def constants(self, theta: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """The ten per-link constants the step uses (differentiable in ``theta``).

        With ``φ`` the absolute link angles: the mass matrix ``M11 = m1 |c1|² + I1 + m2 l1²``,
        ``M22 = m2 |c2|² + I2``, ``M12 = Kc cos q1 − Ks sin q1`` (``Kc, Ks = m2 l1 c2x,
        m2 l1 c2y``); the gravity torques ``Gx1 sin φ1 + Gy1 cos φ1`` and
        ``Gx2 sin φ2 + Gy2 cos φ2`` (``Gx1 = g (m1 c1x + m2 l1)``, ``Gy1 = g m1 c1y``,
        ``Gx2, Gy2 = g m2 c2x, g m2 c2y``); the joint frictions ``d1``, ``d2``. No square root
        or angle appears, so a centre of mass on the joint axis has finite gradients.
        """
        p = self.physical(theta)
        g = self.gravity
        m11 = p["m1"] * (p["c1x"] ** 2 + p["c1y"] ** 2) + p["I1"] + p["m2"] * p["l1"] ** 2
        m22 = p["m2"] * (p["c2x"] ** 2 + p["c2y"] ** 2) + p["I2"]
        kc = p["m2"] * p["l1"] * p["c2x"]
        ks = p["m2"] * p["l1"] * p["c2y"]
        gx1 = g * (p["m1"] * p["c1x"] + p["m2"] * p["l1"])
        gy1 = g * p["m1"] * p["c1y"]
        gx2 = g * p["m2"] * p["c2x"]
        gy2 = g * p["m2"] * p["c2y"]
        return (m11, m22, kc, ks, gx1, gy1, gx2, gy2, p["d1"], p["d2"])

    def simulate(
        self, theta: torch.Tensor, s0: torch.Tensor | Sequence[float], n_steps: int
    ) -> torch.Tensor:
        """States ``s_1 … s_T`` from ``s0``: the batch shapes of ``theta`` and ``s0`` broadcast,
        then ``(T, 4)``.

        Differentiable in ``theta`` and ``s0`` (through :func:`rollout`). ``theta`` must be
        finite and physical (masses and lengths > 0, inertias and frictions >= 0).
        """
        theta = self.check_theta(theta)
        s0 = _check_state(s0)
        compiled = compiled_by_default() if self.compiled is None else self.compiled
        return rollout(self.constants(theta), s0, n_steps, self.dt, compiled=compiled)

    def rollout(
        self, theta: torch.Tensor, s0: torch.Tensor, n_steps: int, u: torch.Tensor | None = None
    ) -> torch.Tensor:
        """:meth:`simulate` without the checks on ``theta`` (for the likelihoods' inner loop;
        :meth:`Simulator.rollout <physid.core.simulator.Simulator.rollout>`). The
        pendulum has no input: ``u`` must be None."""
        if u is not None:
            raise ValueError(f"u must be None: the double pendulum has no input, got {u!r}")
        compiled = compiled_by_default() if self.compiled is None else self.compiled
        return rollout(self.constants(theta), s0, n_steps, self.dt, compiled=compiled)

    def observe(self, states: torch.Tensor) -> torch.Tensor:
        """What is measured of each state: the whole state (the identity)."""
        return states

    def simulate_autograd(
        self, theta: torch.Tensor, s0: torch.Tensor | Sequence[float], n_steps: int
    ) -> torch.Tensor:
        """The same rollout, step by step in eager torch with plain autograd (the reference)."""
        theta = self.check_theta(theta)
        s0 = _check_state(s0)
        consts = self.constants(theta)
        shape = torch.broadcast_shapes(s0.shape[:-1], consts[0].shape)
        q0, q1, w0, w1 = (s0[..., i].expand(shape) for i in range(4))
        states = []
        for _ in range(_check_steps(n_steps)):
            q0, q1, w0, w1 = step(q0, q1, w0, w1, *consts, dt=self.dt)
            states.append(torch.stack((q0, q1, w0, w1), -1))
        return torch.stack(states, -2)

    def energy(self, theta: torch.Tensor, states: torch.Tensor) -> torch.Tensor:
        """Total mechanical energy ``T + V`` (J) of each state (shape ``states[..., 0]``)."""
        theta, states = self.check_theta(theta), _check_state(states, "states")
        m11, m22, kc, ks, gx1, gy1, gx2, gy2, _, _ = self.constants(theta)
        q0, q1, w0, w1 = states.unbind(-1)
        v1, v2 = w0, w0 + w1
        m12 = kc * torch.cos(q1) - ks * torch.sin(q1)
        kinetic = 0.5 * (m11 * v1**2 + 2 * m12 * v1 * v2 + m22 * v2**2)
        a2 = q0 + q1
        potential = -(gx1 * torch.cos(q0) - gy1 * torch.sin(q0)) - (
            gx2 * torch.cos(a2) - gy2 * torch.sin(a2)
        )
        return kinetic + potential

    def tip_positions(self, theta: torch.Tensor, states: torch.Tensor) -> torch.Tensor:
        """The elbow and tip positions ``(..., 2, 2)`` (x right, y up) for drawing."""
        theta, states = self.check_theta(theta), _check_state(states, "states")
        p = self.physical(theta)
        q0, q1 = states[..., 0], states[..., 1]
        l1, l2 = p["l1"][..., None], p["l2"][..., None]
        elbow = torch.stack((l1 * torch.sin(q0), -l1 * torch.cos(q0)), -1)
        tip = elbow + torch.stack((l2 * torch.sin(q0 + q1), -l2 * torch.cos(q0 + q1)), -1)
        return torch.stack((elbow, tip), -2)


#: Lower bounds of the physical parameters, by the first letter of their names: masses and
#: lengths > 0, inertias and frictions >= 0 (centre-of-mass offsets are free).
_DOMAIN: dict[str, tuple[float, bool]] = {
    "m": (0.0, True),
    "l": (0.0, True),
    "I": (0.0, False),
    "d": (0.0, False),
}


def _check_parameter(name: str, parameter: str, value) -> float:
    low, open_ = _DOMAIN.get(parameter[0], (None, False))
    return check_number(name, value, low=low, low_open=open_)


def _as_float64(name: str, value) -> torch.Tensor:
    """A torch tensor must be float64 (TypeError otherwise); arrays and lists are converted."""
    if isinstance(value, torch.Tensor):
        return check_tensor(name, value, shape=None, dtype=torch.float64, finite=False)
    try:
        array = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be an array of real numbers, got {value!r}") from None
    return torch.as_tensor(array, dtype=torch.float64)


def _check_state(s0: torch.Tensor | Sequence[float], name: str = "s0") -> torch.Tensor:
    s0 = _as_float64(name, s0)
    if s0.shape[-1:] != (4,):
        raise ValueError(
            f"{name} must have a last axis of 4 (q0, q1, q̇0, q̇1), got {tuple(s0.shape)}"
        )
    return check_tensor(name, s0, shape=None, dtype=torch.float64)


def _check_steps(n_steps: int) -> int:
    return check_count("n_steps", n_steps)


def step(q0, q1, w0, w1, m11, m22, kc, ks, gx1, gy1, gx2, gy2, d1, d2, dt: float):
    """One semi-implicit Euler step of the double pendulum (elementwise, any shapes)."""
    c1, s1 = torch.cos(q1), torch.sin(q1)
    a2 = q0 + q1
    m12 = kc * c1 - ks * s1
    kss = kc * s1 + ks * c1
    det = m11 * m22 - m12 * m12
    v = w0 + w1
    r1 = d2 * w1 - d1 * w0 + kss * v * v - (gx1 * torch.sin(q0) + gy1 * torch.cos(q0))
    r2 = -d2 * w1 - kss * w0 * w0 - (gx2 * torch.sin(a2) + gy2 * torch.cos(a2))
    a1 = (m22 * r1 - m12 * r2) / det
    acc2 = (m11 * r2 - m12 * r1) / det
    w0 = w0 + dt * a1
    w1 = w1 + dt * (acc2 - a1)
    return q0 + dt * w0, q1 + dt * w1, w0, w1


def step_vjp(
    q0, q1, w0, w1, m11, m22, kc, ks, gx1, gy1, gx2, gy2, d1, d2, bq0, bq1, bw0, bw1, dt: float
):
    """The adjoint of :func:`step`: cotangents of the state before the step and of the ten
    constants, given the cotangents ``b*`` of the state after it."""
    # Recompute the forward intermediates.
    c1, s1 = torch.cos(q1), torch.sin(q1)
    a2 = q0 + q1
    c0, s0 = torch.cos(q0), torch.sin(q0)
    c2, s2 = torch.cos(a2), torch.sin(a2)
    m12 = kc * c1 - ks * s1
    kss = kc * s1 + ks * c1
    det = m11 * m22 - m12 * m12
    v = w0 + w1
    r1 = d2 * w1 - d1 * w0 + kss * v * v - (gx1 * s0 + gy1 * c0)
    r2 = -d2 * w1 - kss * w0 * w0 - (gx2 * s2 + gy2 * c2)
    a1 = (m22 * r1 - m12 * r2) / det
    acc2 = (m11 * r2 - m12 * r1) / det
    # Backward through q' = q + dt w', w' = w + dt a.
    bw0t = bw0 + dt * bq0
    bw1t = bw1 + dt * bq1
    x = dt * (bw0t - bw1t) / det
    y = dt * bw1t / det
    br1 = m22 * x - m12 * y
    br2 = m11 * y - m12 * x
    bdet = -(x * a1 + y * acc2)
    bm11 = r2 * y + bdet * m22
    bm22 = r1 * x + bdet * m11
    bm12 = -(r2 * x + r1 * y) - 2.0 * m12 * bdet
    # r1 and r2.
    bd1 = -br1 * w0
    bd2 = (br1 - br2) * w1
    bkss = br1 * v * v - br2 * w0 * w0
    bv = 2.0 * br1 * kss * v
    # gravity: r1 -= gx1 s0 + gy1 c0, r2 -= gx2 s2 + gy2 c2
    bgx1, bgy1 = -br1 * s0, -br1 * c0
    bgx2, bgy2 = -br2 * s2, -br2 * c2
    ba2 = -br2 * (gx2 * c2 - gy2 * s2)
    # m12 = kc c1 - ks s1, kss = kc s1 + ks c1
    bkc = bm12 * c1 + bkss * s1
    bks = bkss * c1 - bm12 * s1
    nq0 = bq0 - br1 * (gx1 * c0 - gy1 * s0) + ba2
    nq1 = bq1 + ba2 + bkss * m12 - bm12 * kss
    nw0 = bw0t - d1 * br1 - 2.0 * br2 * kss * w0 + bv
    nw1 = bw1t + d2 * (br1 - br2) + bv
    return (nq0, nq1, nw0, nw1), (bm11, bm22, bkc, bks, bgx1, bgy1, bgx2, bgy2, bd1, bd2)


def _forward_chunk(q0, q1, w0, w1, consts, n: int, dt: float):
    out = []
    for _ in range(n):
        q0, q1, w0, w1 = step(q0, q1, w0, w1, *consts, dt=dt)
        out.append(torch.stack((q0, q1, w0, w1), 0))
    return torch.stack(out, 0)


def _backward_chunk(start, grads, bstate, bconsts, consts, n: int, dt: float):
    """Recompute ``n`` steps from ``start`` (4, L), then back-propagate ``bstate`` (4, L)
    and the per-step output cotangents ``grads`` (n, 4, L); ``bconsts`` (10, L) accumulates."""
    states = [tuple(start.unbind(0))]
    for _ in range(n - 1):
        states.append(step(*states[-1], *consts, dt=dt))
    b = tuple((bstate + grads[n - 1]).unbind(0))
    acc = list(bconsts.unbind(0))
    for i in range(n - 1, -1, -1):
        b, dc = step_vjp(*states[i], *consts, *b, dt=dt)
        acc = [a + d for a, d in zip(acc, dc, strict=True)]
        if i > 0:
            b = tuple(bi + gi for bi, gi in zip(b, grads[i - 1].unbind(0), strict=True))
    return torch.stack(b, 0), torch.stack(acc, 0)


_KERNELS: dict[tuple[str, int, bool], object] = {}


def _kernel(kind: str, n: int, compiled: bool):
    key = (kind, n, compiled)
    if key not in _KERNELS:
        base = _forward_chunk if kind == "forward" else _backward_chunk
        if kind == "forward":

            def fn(q0, q1, w0, w1, consts, dt):
                return base(q0, q1, w0, w1, consts, n, dt)
        else:

            def fn(start, grads, bstate, bconsts, consts, dt):
                return base(start, grads, bstate, bconsts, consts, n, dt)

        _KERNELS[key] = _Guarded(fn) if compiled else fn
    return _KERNELS[key]


class _Guarded:
    """A compiled kernel that falls back to the eager function if compiling fails."""

    def __init__(self, fn):
        self.eager = fn
        # One thread: the kernels are small, and parallel jobs each get their own core.
        self.compiled = torch.compile(fn, dynamic=True, fullgraph=True, options={"cpp.threads": 1})
        self.failed = False

    def __call__(self, *args):
        if not self.failed:
            try:
                return self.compiled(*args)
            except Exception as error:  # no C++ compiler, a recompile limit, ...
                import warnings

                warnings.warn(
                    f"torch.compile failed ({type(error).__name__}); running the rollout eagerly",
                    RuntimeWarning,
                    stacklevel=2,
                )
                self.failed = True
        return self.eager(*args)


def _chunks(n_steps: int) -> list[tuple[int, int]]:
    spans = [(t, CHUNK) for t in range(0, n_steps - n_steps % CHUNK, CHUNK)]
    spans += [(t, 1) for t in range(n_steps - n_steps % CHUNK, n_steps)]
    return spans


def _fresh(x: torch.Tensor) -> torch.Tensor:
    """A copy with canonical strides and no storage offset (the compiled kernels guard on both)."""
    out = torch.empty(x.shape, dtype=torch.float64, device=x.device)
    return out.copy_(x)  # differentiable outside the autograd Function


class _Rollout(torch.autograd.Function):
    @staticmethod
    def forward(ctx, s0, dt, n_steps, compiled, *consts):
        lanes = s0.shape[1]
        out = torch.empty((n_steps, 4, lanes), dtype=s0.dtype, device=s0.device)
        plain = tuple(_fresh(c) for c in consts)
        q = tuple(_fresh(s0).unbind(0))
        for t, n in _chunks(n_steps):
            out[t : t + n] = _kernel("forward", n, compiled)(*q, plain, dt)
            q = tuple(_fresh(out[t + n - 1]).unbind(0))
        ctx.save_for_backward(s0, out, *consts)
        ctx.dt, ctx.n_steps, ctx.compiled = dt, n_steps, compiled
        return out

    @staticmethod
    def backward(ctx, grad_out):
        s0, out, *consts = ctx.saved_tensors
        consts = tuple(_fresh(c) for c in consts)
        grad = _fresh(grad_out)
        bstate = torch.zeros(s0.shape, dtype=s0.dtype, device=s0.device)
        bconsts = torch.zeros((_N_CONSTS, s0.shape[1]), dtype=s0.dtype, device=s0.device)
        for t, n in reversed(_chunks(ctx.n_steps)):
            start = _fresh(s0 if t == 0 else out[t - 1])
            kernel = _kernel("backward", n, ctx.compiled)
            bstate, bconsts = kernel(
                start, _fresh(grad[t : t + n]), bstate, bconsts, consts, ctx.dt
            )
        return (bstate, None, None, None, *bconsts.unbind(0))


def rollout(
    consts: Sequence[torch.Tensor], s0: torch.Tensor, n_steps: int, dt: float, compiled: bool = True
) -> torch.Tensor:
    """Roll the step out ``n_steps`` times from ``s0`` (..., 4): states of shape (..., T, 4).

    ``consts`` are the ten constants of :meth:`DoublePendulum.constants`; they and ``s0``
    broadcast against each other over the leading (lane) axes. Differentiable in both, through
    the hand-derived adjoint.
    """
    n_steps = _check_steps(n_steps)
    dt = check_positive("dt", dt)
    shape = torch.broadcast_shapes(s0.shape[:-1], *(c.shape for c in consts))
    lanes = int(np.prod(shape)) if shape else 1
    # Fresh buffers with canonical strides: the compiled kernels guard on strides.
    flat_s0 = _fresh(s0.expand(*shape, 4).reshape(lanes, 4).T)
    flat_consts = [_fresh(c.expand(shape).reshape(lanes)) for c in consts]
    out = _Rollout.apply(flat_s0, float(dt), n_steps, bool(compiled), *flat_consts)
    return out.permute(2, 0, 1).reshape(*shape, n_steps, 4)
