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
overhead, so on the CPU :func:`rollout` runs the steps compiled
(:mod:`physid.inference.pendulum_kernel`, numba) and back-propagates with the step's adjoint
written out by hand, checked against autograd in the tests; a likelihood's residuals are summed
inside the same loop (:meth:`DoublePendulum.rollout_residuals`).
:meth:`DoublePendulum.simulate_autograd` is the plain eager step-by-step rollout, kept as the
reference, and what runs elsewhere (``compiled=False``, or tensors on a GPU).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import torch

from physid.core.constants import GRAVITY
from physid.core.simulator import compiled_by_default
from physid.core.validate import check_count, check_number, check_positive, check_tensor
from physid.inference import pendulum_kernel
from physid.inference.lanes import can_run, fit_arrays, lane_index
from physid.inference.lanes import rollout as lane_rollout

#: Every quantity the model knows, in a fixed order (the compiled kernel's,
#: :data:`~physid.inference.pendulum_kernel.QUANTITIES`).
ALL_PARAMETERS: tuple[str, ...] = pendulum_kernel.QUANTITIES

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


@dataclass(frozen=True)
class DoublePendulum:
    """A double pendulum whose parameters ``names`` are estimated and the rest ``fixed``.

    Args:
        names: the estimated parameters, in the order of the last axis of ``theta``.
        dt: the time step (s).
        point_mass: each link's mass at its tip, no inertia (``c_i = (l_i, 0)``, ``I_i = 0``).
        fixed: values for the parameters not in ``names`` (defaults: :data:`DEFAULTS`).
        gravity: m/s².
        compiled: roll out with the compiled kernel and its hand-derived adjoint where the
            tensors are float64 on the CPU, else step by step in eager torch with autograd
            (``None``: :func:`~physid.core.simulator.compiled_by_default`).
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
        source, base = self._layout
        batch, kind = theta.shape[:-1], {"dtype": theta.dtype, "device": theta.device}
        return {
            n: theta[..., source[q]] if source[q] >= 0 else torch.full(batch, base[q], **kind)
            for q, n in enumerate(ALL_PARAMETERS)
        }

    @functools.cached_property
    def _layout(self) -> tuple[np.ndarray, np.ndarray]:
        """Where each of the twelve quantities (:data:`ALL_PARAMETERS`) comes from: its column
        of ``theta`` (−1 for none) and its value where it has none. With ``point_mass`` each
        link's centre of mass is at its tip (``c_ix = l_i``) and ``c_iy = I_i = 0``. (A frozen
        dataclass may cache: ``cached_property`` writes the instance's ``__dict__``.)"""
        values = {**DEFAULTS, **self.fixed}
        source = {n: (self.names.index(n) if n in self.names else -1) for n in ALL_PARAMETERS}
        base = {n: float(values[n]) for n in ALL_PARAMETERS}
        if self.point_mass:
            for link in ("1", "2"):
                source[f"c{link}x"], base[f"c{link}x"] = source[f"l{link}"], base[f"l{link}"]
                for n in (f"c{link}y", f"I{link}"):
                    source[n], base[n] = -1, 0.0
        return (
            np.array([source[n] for n in ALL_PARAMETERS]),
            np.array([base[n] for n in ALL_PARAMETERS]),
        )

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

    def _values(self, theta: torch.Tensor) -> torch.Tensor:
        """:meth:`constants` stacked (..., 10) for the compiled kernel (``theta`` float64 on
        the CPU): one autograd node, the formulas and their Jacobian from
        :func:`~physid.inference.pendulum_kernel.constants`."""
        source, base = self._layout
        return _Constants.apply(theta, source, base, self.gravity)

    def _roll(
        self,
        theta: torch.Tensor,
        s0: torch.Tensor,
        n_steps: int,
        measured: torch.Tensor | None = None,
        weight: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """The rollout (and, with ``measured``, the residuals) compiled where it can run, else
        in eager torch: :func:`_compiled_rollout`'s results."""
        if self._compiled() and can_run(theta, s0, *([] if measured is None else [measured])):
            return _compiled_rollout(self._values(theta), s0, n_steps, self.dt, measured, weight)
        states = _eager_rollout(self.constants(theta), s0, n_steps, self.dt)
        if measured is None:
            return states, None
        return states[..., -1, :], ((states - measured) * weight).square().sum((-1, -2))

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
        return self._roll(theta, s0, _check_steps(n_steps))[0]

    def rollout(
        self, theta: torch.Tensor, s0: torch.Tensor, n_steps: int, u: torch.Tensor | None = None
    ) -> torch.Tensor:
        """:meth:`simulate` without the checks on ``theta`` (for the likelihoods' inner loop;
        :meth:`Simulator.rollout <physid.core.simulator.Simulator.rollout>`). The
        pendulum has no input: ``u`` must be None."""
        if u is not None:
            raise ValueError(f"u must be None: the double pendulum has no input, got {u!r}")
        return self._roll(theta, s0, _check_steps(n_steps))[0]

    def rollout_residuals(
        self,
        theta: torch.Tensor,
        s0: torch.Tensor,
        n_steps: int,
        u: torch.Tensor | None,
        measured: torch.Tensor,
        weight: torch.Tensor,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """:meth:`rollout`'s last state (..., 4) and ``Σ_t Σ_i (w_i (s_{t,i} − ŝ_{t,i}))²``
        over its states against ``measured`` ``ŝ`` (..., T, 4), with weights ``w`` (4,)
        (:class:`~physid.core.simulator.ResidualSimulator`; the pendulum measures its whole
        state): compiled, the sum is taken inside the rollout's loop."""
        if u is not None:
            raise ValueError(f"u must be None: the double pendulum has no input, got {u!r}")
        return self._roll(theta, s0, n_steps, measured, weight)

    def _compiled(self) -> bool:
        return compiled_by_default() if self.compiled is None else self.compiled

    def observe(self, states: torch.Tensor) -> torch.Tensor:
        """What is measured of each state: the whole state (the identity)."""
        return states

    def simulate_autograd(
        self, theta: torch.Tensor, s0: torch.Tensor | Sequence[float], n_steps: int
    ) -> torch.Tensor:
        """The same rollout, step by step in eager torch with plain autograd (the reference)."""
        theta = self.check_theta(theta)
        s0 = _check_state(s0)
        return _eager_rollout(self.constants(theta), s0, _check_steps(n_steps), self.dt)

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


def _eager_rollout(
    consts: Sequence[torch.Tensor], s0: torch.Tensor, n_steps: int, dt: float
) -> torch.Tensor:
    """:func:`step` ``n_steps`` times in eager torch (autograd differentiates it)."""
    shape = torch.broadcast_shapes(s0.shape[:-1], *(c.shape for c in consts))
    q0, q1, w0, w1 = (s0[..., i].expand(shape) for i in range(4))
    states = []
    for _ in range(n_steps):
        q0, q1, w0, w1 = step(q0, q1, w0, w1, *consts, dt=dt)
        states.append(torch.stack((q0, q1, w0, w1), -1))
    return torch.stack(states, -2)


class _Constants(torch.autograd.Function):
    """``theta`` (..., dim) → the ten constants (..., 10), differentiable (see
    :meth:`DoublePendulum._values`)."""

    @staticmethod
    def forward(ctx, theta, source, base, gravity):
        flat = theta.detach().reshape(-1, theta.shape[-1]).contiguous().numpy()
        values = np.empty((flat.shape[0], pendulum_kernel.N_CONSTANTS))
        jacobian = np.empty((flat.shape[0], pendulum_kernel.N_CONSTANTS, flat.shape[1]))
        pendulum_kernel.constants(flat, source, base, gravity, values, jacobian)
        ctx.jacobian, ctx.shape = jacobian, theta.shape
        return torch.from_numpy(values).reshape(*theta.shape[:-1], pendulum_kernel.N_CONSTANTS)

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, grad):
        flat = grad.reshape(-1, pendulum_kernel.N_CONSTANTS).contiguous().numpy()
        g_theta = np.empty(ctx.jacobian.shape[::2])
        pendulum_kernel.constants_vjp(flat, ctx.jacobian, g_theta)
        return torch.from_numpy(g_theta).reshape(ctx.shape), None, None, None


def _compiled_rollout(
    values: torch.Tensor,
    s0: torch.Tensor,
    n_steps: int,
    dt: float,
    measured: torch.Tensor | None = None,
    weight: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """The rollout by :mod:`physid.inference.pendulum_kernel` with the constants ``values``
    (..., 10), one lane per entry of the broadcast batch shape: the states and None, or with
    ``measured`` (..., T, 4) and ``weight`` (4,), each lane's last state and its sum of squared
    weighted residuals."""
    shape = np.broadcast_shapes(s0.shape[:-1], values.shape[:-1])
    batch, shape, targets, weights = fit_arrays(measured, weight, (), shape, n_steps, STATE_SIZE)
    fixed = (targets, lane_index(shape, batch), weights)
    fit = measured is not None
    return lane_rollout(pendulum_kernel, s0, values, shape, fixed, dt, n_steps, fit)


def rollout(
    consts: Sequence[torch.Tensor], s0: torch.Tensor, n_steps: int, dt: float, compiled: bool = True
) -> torch.Tensor:
    """Roll the step out ``n_steps`` times from ``s0`` (..., 4): states of shape (..., T, 4).

    ``consts`` are the ten constants of :meth:`DoublePendulum.constants`; they and ``s0``
    broadcast against each other over the leading (lane) axes. Differentiable in both: through
    the compiled kernel's hand-derived adjoint with ``compiled`` where the tensors are float64
    on the CPU, else by autograd through the eager step.
    """
    n_steps = _check_steps(n_steps)
    dt = check_positive("dt", dt)
    if compiled and can_run(s0, *consts):
        values = torch.stack(torch.broadcast_tensors(*consts), -1)
        return _compiled_rollout(values, s0, n_steps, dt)[0]
    return _eager_rollout(consts, s0, n_steps, dt)
