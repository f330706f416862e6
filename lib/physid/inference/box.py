r"""A differentiable box shaken on a universal joint by a robot arm (the Panda experiment).

The set-up of Heiden et al. (2022), §V-C: an acrylic box of mass :data:`BOX_MASS` = 0.92 kg
hangs from a universal joint at the flange of a robot arm; the arm moves on a known trajectory
and the box swings. Phase I estimates the empty box's inertia, centre of mass and the joint's
two viscous damping coefficients; phase II the positions of two 500 g weights fixed to the
box's bottom (:data:`WEIGHT_MASS`). The arm is not simulated: its flange (the *mount*) moves
on a known trajectory, the simulator's input ``u(t)``.

Frames and geometry (all lengths in metres).

* The *mount* frame is the arm's flange frame translated along its ``z`` axis to the joint
  centre ``O``. In the start pose of :mod:`physid.inference.panda` its ``z`` axis points down.
* The universal joint turns the box by ``α`` about the mount's ``x`` axis, then by ``β``
  about the rotated ``y`` axis: the box frame is ``R_b = R · R_x(α) · R_y(β)`` (``R`` the
  mount rotation), its origin at ``O``. At ``α = β = 0`` the box frame is the mount frame.
* The box frame's ``z`` axis points *down into the box* (from the joint to the lid to the
  bottom): the lid's centre is at ``(0, 0, LID_OFFSET)``, the bottom plane at
  ``z = BOTTOM = LID_OFFSET + HEIGHT``. The centre of mass ``c = (cx, cy, cz)`` is measured
  from ``O`` in the box frame, so the paper's ``cz ∈ [0.1, 0.4]`` is how far below the joint it
  hangs. The two weights are point masses at ``(w_ix, w_iy, BOTTOM)``.
* ``Ixx … Iyz`` are the entries of the empty box's inertia tensor **about the joint centre**
  ``O``, in the box frame (the URDF convention: ``Ixy = −∫ x y dm``). About ``O`` a 0.92 kg box
  hanging 0.2 m below has ``m cz² ≈ 0.037`` kg·m² of its ``Ixx`` and ``Iyy`` from the offset
  alone, which is what makes the paper's range [0.05, 0.1] plausible. The tensor about the
  centre of mass, ``I_c = I_O − m (|c|² 1 − c cᵀ)``, must be physical
  (:meth:`ShakenBox.check_theta`): positive definite, its principal moments satisfying the
  triangle inequality.

State and input. The state is ``s = [α, β, α̇, β̇]`` (:data:`STATE_SIZE` = 4). The input
of a step (:data:`INPUT_SIZE` = 21 entries, named by :data:`INPUT_LAYOUT`) is the mount's
kinematics in world coordinates: the joint centre's position ``p`` (3) and linear acceleration
``a`` (3), the mount rotation ``R`` (9, row-major), its angular velocity ``ω_m`` (3) and
angular acceleration ``ω̇_m`` (3).

Dynamics. With ``e1, e2`` the joint axes, the box's angular velocity is
``ω = ω_m + e1 α̇ + e2 β̇`` and, differentiating (``ė1 = ω_m × e1``,
``ė2 = (ω_m + e1 α̇) × e2``),

.. math::

    \dot\omega = J \ddot q + b, \quad J = [e_1\ e_2], \quad
    b = \dot\omega_m + (\omega_m \times e_1)\dot\alpha
        + ((\omega_m + e_1\dot\alpha) \times e_2)\dot\beta.  \qquad (1)

The moment balance about the accelerating pivot ``O`` (mass ``m``, centre of mass ``r_c``
from ``O``, inertia ``I_O`` about ``O``; weights included when present) is
``I_O ω̇ + ω × I_O ω = m r_c × (g − a) + τ_joint``. The joint's constraint torques do no work
on the virtual rotations ``J δq``, its viscous torques are ``−D q̇`` (``D = diag(d1, d2)``),
so projecting on the joint axes gives

.. math::

    (J^\top I_O J)\,\ddot q = J^\top\big(-I_O b - \omega \times I_O \omega
        + m\, r_c \times (g - a)\big) - D \dot q.  \qquad (2)

Everything is evaluated in the *box* frame, where ``I_O`` and ``r_c = c`` are constant,
``e2 = (0, 1, 0)`` and ``e1 = (cos β, 0, sin β)``; the mount's ``ω_m``, ``ω̇_m`` and
``g − a`` (world) are rotated into it with ``R_y(β)ᵀ R_x(α)ᵀ Rᵀ``. The 2 × 2 system (2) is
solved in closed form. The step is semi-implicit Euler, as for the double pendulum:

.. math::

    \dot q \leftarrow \dot q + \Delta t\, \ddot q, \qquad q \leftarrow q + \Delta t\, \dot q.
    \qquad (3)

Observation. The paper measures four world points ``x = [p_o, p_x, p_y, p_z]``: the lid's
centre and the points 1 m from it along the box's ``x``, ``y`` and ``z`` axes
(:meth:`ShakenBox.world_points`). :meth:`ShakenBox.observe` returns the same points in the
*mount* frame, ``y_m = R_x(α) R_y(β) [p_o, p_o + e_x, p_o + e_y, p_o + e_z]``, which depend on
the state only (the :class:`~physid.core.simulator.Simulator` protocol's ``observe(s)``).
The world points are ``y_w = R y_m + p`` with the known mount pose ``(R, p)`` of the time step,
so for two states at the same time ``y_w − y'_w = R (y_m − y'_m)``: the differences have equal
norms, point by point (``R`` is a rotation), and a Gaussian likelihood with an isotropic noise
per point is *identical* in the two frames (4). (The
:class:`~physid.inference.likelihood.TrajectoryLikelihood` standardises each coordinate by its
own spread unless ``observation_scale`` is given; pass an isotropic scale to keep (4) exact.)

Cost: in eager torch a step is about 60 small batched operators, and a rollout of 300 steps of
50 particles, forward and backward by autograd, took about 0.35 s on one CPU thread. On the CPU
:meth:`ShakenBox.rollout` and :meth:`ShakenBox.observe` run compiled instead
(:mod:`physid.inference.box_kernel`, numba: the steps and the points forward, their
hand-derived adjoints backward), equal to the eager step (:meth:`ShakenBox.simulate_autograd`,
:func:`mount_points`) to rounding; ``compiled=False`` runs the eager step everywhere.
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
from physid.inference import box_kernel
from physid.inference.lanes import can_run, fit_arrays, lane_index
from physid.inference.lanes import rollout as lane_rollout

Tensor = torch.Tensor

__all__ = [
    "ALL_PARAMETERS",
    "BOTTOM",
    "BOX_MASS",
    "HEIGHT",
    "INPUT_LAYOUT",
    "INPUT_SIZE",
    "LID_OFFSET",
    "OBSERVATION_SIZE",
    "PHASE1_LIMITS",
    "PHASE2_LIMITS",
    "STATE_SIZE",
    "TRUE_BOX",
    "TRUE_WEIGHTS",
    "WEIGHT_MASS",
    "ShakenBox",
    "box_rotation",
    "hanging_angles",
    "mount_points",
    "static_input",
    "static_rotation",
    "world_points",
]

#: Mass of the empty acrylic box (kg), measured in the paper.
BOX_MASS: float = 0.92
#: Mass of each of the two weights (kg).
WEIGHT_MASS: float = 0.5
#: Distance (m) from the joint centre down to the lid's centre, along the box ``z`` axis.
LID_OFFSET: float = 0.05
#: Inner height (m) of the box, from the lid to the bottom plane.
HEIGHT: float = 0.25
#: The bottom plane's ``z`` in the box frame (m), where the weights sit.
BOTTOM: float = LID_OFFSET + HEIGHT

#: The empty box's six inertia entries (about the joint), centre of mass and joint dampings,
#: then the two weights' positions on the bottom (the keys of :meth:`ShakenBox.physical`).
ALL_PARAMETERS: tuple[str, ...] = (
    "Ixx", "Iyy", "Izz", "Ixy", "Ixz", "Iyz",
    "cx", "cy", "cz",
    "d1", "d2",
    "w1x", "w1y", "w2x", "w2y",
)  # fmt: skip
_BOX_PARAMETERS = ALL_PARAMETERS[:11]
_WEIGHT_PARAMETERS = ALL_PARAMETERS[11:]

#: Phase I limits (the empty box), the paper's appendix: kg·m², m, N·m·s/rad.
PHASE1_LIMITS: dict[str, tuple[float, float]] = {
    "Ixx": (0.05, 0.1),
    "Iyy": (0.05, 0.1),
    "Izz": (0.05, 0.1),
    "Ixy": (-0.01, 0.01),
    "Ixz": (-0.01, 0.01),
    "Iyz": (-0.01, 0.01),
    "cx": (-0.005, 0.005),
    "cy": (-0.005, 0.005),
    "cz": (0.1, 0.4),
    "d1": (0.0, 0.15),
    "d2": (0.0, 0.15),
}

#: Phase II limits: the weights' positions on the bottom (m).
PHASE2_LIMITS: dict[str, tuple[float, float]] = {
    "w1x": (-0.14, 0.14),
    "w1y": (-0.08, 0.08),
    "w2x": (-0.14, 0.14),
    "w2y": (-0.08, 0.08),
}

#: The empty box that generates the data (inside :data:`PHASE1_LIMITS`, physical).
TRUE_BOX: dict[str, float] = {
    "Ixx": 0.07,
    "Iyy": 0.075,
    "Izz": 0.06,
    "Ixy": 0.002,
    "Ixz": -0.003,
    "Iyz": 0.001,
    "cx": 0.002,
    "cy": -0.001,
    "cz": 0.2,
    "d1": 0.05,
    "d2": 0.08,
}

#: The weights' true positions: balanced, 12.5 cm either side of the centre along ``x``.
TRUE_WEIGHTS: dict[str, float] = {"w1x": 0.125, "w1y": 0.0, "w2x": -0.125, "w2y": 0.0}

#: The entries of a state ``[α, β, α̇, β̇]``.
STATE_SIZE = 4
#: The input's entries, in order (world coordinates): joint-centre position and acceleration,
#: mount rotation (row-major), mount angular velocity and angular acceleration.
INPUT_LAYOUT: tuple[str, ...] = (
    "px", "py", "pz",
    "ax", "ay", "az",
    "R00", "R01", "R02", "R10", "R11", "R12", "R20", "R21", "R22",
    "wx", "wy", "wz",
    "dwx", "dwy", "dwz",
)  # fmt: skip
#: The entries of an input (21).
INPUT_SIZE = len(INPUT_LAYOUT)
#: The entries of an observation: four 3-D points.
OBSERVATION_SIZE = 12


@dataclass(frozen=True)
class ShakenBox:
    """The box on a universal joint; the parameters ``names`` are estimated, the rest ``fixed``.

    Args:
        names: the estimated parameters (entries of :data:`ALL_PARAMETERS`), in the order of
            the last axis of ``theta``.
        with_weights: the two :data:`WEIGHT_MASS` weights are in the box (phase II); their
            positions come from ``theta`` or ``fixed``. Without them a weight may not be named.
        fixed: values of the parameters not estimated (defaults: :data:`TRUE_BOX` and
            :data:`TRUE_WEIGHTS`).
        dt: the time step (s) of Eq. (3). 0.01 s keeps the model within a few millimetres of
            the 1 kHz pybullet recording of :mod:`physid.inference.panda` at 300 steps for 3 s.
        gravity: m/s², along the world's ``−z``.
        compiled: roll out with the compiled kernel and its hand-derived adjoint
            (:mod:`physid.inference.box_kernel`) where the tensors are float64 on the CPU and
            the inputs need no gradient; otherwise, or with ``False``, step by step in eager
            torch (:meth:`simulate_autograd`). ``None``: the environment variable
            ``PHYSID_COMPILE``, on unless set to ``0``.
    """

    names: tuple[str, ...] = _BOX_PARAMETERS
    with_weights: bool = False
    fixed: Mapping[str, float] = field(default_factory=dict)
    dt: float = 0.01
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
        if not isinstance(self.with_weights, bool):
            raise TypeError(f"with_weights must be True or False, got {self.with_weights!r}")
        if not self.with_weights and any(n in _WEIGHT_PARAMETERS for n in names):
            raise ValueError(f"names estimate a weight but with_weights is False: {names!r}")
        if not isinstance(self.fixed, Mapping):
            raise TypeError(f"fixed must be a mapping of names to values, got {self.fixed!r}")
        bad = [k for k in self.fixed if k not in ALL_PARAMETERS]
        if bad:
            raise ValueError(f"fixed names unknown parameters {bad}")
        fixed = {k: check_number(f"fixed[{k!r}]", v) for k, v in self.fixed.items()}
        for k in ("d1", "d2"):
            if k in fixed:
                check_number(f"fixed[{k!r}]", fixed[k], low=0.0)
        object.__setattr__(self, "fixed", fixed)
        object.__setattr__(self, "dt", check_positive("dt", self.dt))
        object.__setattr__(self, "gravity", check_number("gravity", self.gravity, low=0.0))
        if self.compiled is not None and not isinstance(self.compiled, bool):
            raise TypeError(f"compiled must be True, False or None, got {self.compiled!r}")
        # The fixed box itself must be physical when no inertia entry is estimated.
        values = {**TRUE_BOX, **TRUE_WEIGHTS, **fixed}
        if not any(
            n in names for n in ("Ixx", "Iyy", "Izz", "Ixy", "Ixz", "Iyz", "cx", "cy", "cz")
        ):
            inertia = torch.tensor([values[n] for n in _BOX_PARAMETERS[:9]], dtype=torch.float64)
            problem = _inertia_problem(inertia[None])
            if problem is not None:
                raise ValueError(f"fixed: the box's inertia {problem}")

    @property
    def dim(self) -> int:
        """The number of estimated parameters."""
        return len(self.names)

    # -- the Simulator protocol ------------------------------------------------------------
    @property
    def param_names(self) -> tuple[str, ...]:
        """The estimated parameters (the ``names`` of this model)."""
        return self.names

    @property
    def state_size(self) -> int:
        """The state ``[α, β, α̇, β̇]`` has four entries."""
        return STATE_SIZE

    @property
    def input_size(self) -> int:
        """The mount's kinematics per step, :data:`INPUT_LAYOUT`: 21 entries."""
        return INPUT_SIZE

    @property
    def observation_size(self) -> int:
        """The 12 entries of four 3-D points."""
        return OBSERVATION_SIZE

    def check_theta(self, theta: Tensor | Sequence[float]) -> Tensor:
        """``theta`` (..., dim) as float64 if finite and physical, else a ValueError naming it.

        Physical: the empty box's inertia about its centre of mass is positive definite and
        its principal moments satisfy the triangle inequality; the dampings are >= 0. The
        limits are the likelihood's business, not checked here.
        """
        theta = _as_float64("theta", theta)
        self._check_width(theta)
        check_tensor("theta", theta, shape=None, dtype=torch.float64)
        p = self.physical(theta)
        for k in ("d1", "d2"):
            if bool((p[k].detach() < 0).any()):
                bad = p[k].detach()[p[k].detach() < 0].flatten()[0].item()
                raise ValueError(f"theta: {k} must be >= 0, found {bad}")
        inertia = torch.stack([p[n].detach() for n in _BOX_PARAMETERS[:9]], -1)
        problem = _inertia_problem(inertia.reshape(-1, 9))
        if problem is not None:
            raise ValueError(f"theta: the box's inertia {problem}")
        return theta

    def _check_width(self, theta: Tensor) -> None:
        if theta.shape[-1:] != (self.dim,):
            raise ValueError(
                f"theta must have a last axis of {self.dim} ({', '.join(self.names)}), "
                f"got shape {tuple(theta.shape)}"
            )

    def physical(self, theta: Tensor) -> dict[str, Tensor]:
        """All fifteen quantities of :data:`ALL_PARAMETERS`, tensors of ``theta``'s batch shape
        (the weights' entries are present, and unused, without weights)."""
        theta = _as_float64("theta", theta)
        self._check_width(theta)
        values = {**TRUE_BOX, **TRUE_WEIGHTS, **self.fixed}
        batch = theta.shape[:-1]
        out = {n: theta[..., i] for i, n in enumerate(self.names)}
        for n in ALL_PARAMETERS:
            if n not in out:
                out[n] = torch.full(batch, float(values[n]), dtype=theta.dtype, device=theta.device)
        return out

    def mass(self) -> float:
        """The total mass (kg): the box, plus the weights when present."""
        return BOX_MASS + (2 * WEIGHT_MASS if self.with_weights else 0.0)

    def mass_properties(self, theta: Tensor) -> tuple[Tensor, Tensor]:
        """The total inertia ``I_O`` (..., 3, 3) about the joint centre and the first moment
        ``m c`` (..., 3) of the box (plus weights), in the box frame."""
        p = self.physical(theta)
        i_o = torch.stack(
            (
                torch.stack((p["Ixx"], p["Ixy"], p["Ixz"]), -1),
                torch.stack((p["Ixy"], p["Iyy"], p["Iyz"]), -1),
                torch.stack((p["Ixz"], p["Iyz"], p["Izz"]), -1),
            ),
            -2,
        )
        moment = BOX_MASS * torch.stack((p["cx"], p["cy"], p["cz"]), -1)
        if self.with_weights:
            eye = torch.eye(3, dtype=i_o.dtype)
            for wx, wy in (("w1x", "w1y"), ("w2x", "w2y")):
                r = torch.stack((p[wx], p[wy], torch.full_like(p[wx], BOTTOM)), -1)
                outer = r[..., :, None] * r[..., None, :]
                i_o = i_o + WEIGHT_MASS * ((r * r).sum(-1)[..., None, None] * eye - outer)
                moment = moment + WEIGHT_MASS * r
        return i_o, moment

    def inertia_about_joint(self, theta: Tensor) -> Tensor:
        """The total inertia tensor (..., 3, 3) about the joint centre, in the box frame (the
        box's own entries plus the weights as point masses)."""
        return self.mass_properties(theta)[0]

    def rollout(self, theta: Tensor, s0: Tensor, n_steps: int, u: Tensor | None = None) -> Tensor:
        """States (..., T, 4) after each of ``n_steps`` steps of Eqs. (1–3) from ``s0``
        (..., 4), under the mount inputs ``u`` (..., T, 21); unchecked, differentiable in
        ``theta`` and ``s0``. The batch shapes of ``theta[..., 0]``, ``s0[..., 0]`` and
        ``u[..., 0, 0]`` broadcast. Compiled where it can be (see ``compiled``)."""
        return self._run(theta, s0, n_steps, u, None, None)[0]

    def rollout_residuals(
        self,
        theta: Tensor,
        s0: Tensor,
        n_steps: int,
        u: Tensor | None,
        measured: Tensor,
        weight: Tensor,
    ) -> tuple[Tensor, Tensor]:
        """:meth:`rollout`'s last state (..., 4) and ``Σ_t Σ_o (w_o (y_o(s_t) − ŷ_{t,o}))²``
        (the batch shape) of the points ``y = observe(s_t)`` against ``measured`` ``ŷ``
        (..., T, 12), with weights ``w`` (12,)
        (:class:`~physid.core.simulator.ResidualSimulator`): compiled, the sum is taken inside
        the rollout's kernel, with no array of the points."""
        return self._run(theta, s0, n_steps, u, measured, weight)

    def _run(self, theta, s0, n_steps, u, measured, weight) -> tuple[Tensor, Tensor | None]:
        parts = self._prepare(theta, s0, n_steps, u)
        compiled = compiled_by_default() if self.compiled is None else self.compiled
        tensors = (theta, s0, u) if measured is None else (theta, s0, u, measured, weight)
        if compiled and can_run(*tensors) and not any(t.requires_grad for t in tensors[2:]):
            return _compiled_rollout(*parts, n_steps, self.dt, measured, weight)
        states = _eager_rollout(*parts, n_steps, self.dt)
        if measured is None:
            return states, None
        squares = ((mount_points(states) - measured) * weight).square().sum((-1, -2))
        return states[..., -1, :], squares

    def simulate_autograd(
        self,
        theta: Tensor | Sequence[float],
        s0: Tensor | Sequence[float],
        n_steps: int,
        u: Tensor | Sequence[Sequence[float]],
    ) -> Tensor:
        """:meth:`simulate`, step by step in eager torch with plain autograd (the reference the
        compiled rollout is tested against)."""
        theta, s0, u, n_steps = self._checked(theta, s0, n_steps, u)
        return _eager_rollout(*self._prepare(theta, s0, n_steps, u), n_steps, self.dt)

    def _prepare(
        self, theta: Tensor, s0: Tensor, n_steps: int, u: Tensor | None
    ) -> tuple[Tensor, Tensor, Tensor, Tensor, Tensor, tuple[int, ...]]:
        """What a rollout needs: the inertia about the joint, the first moment, the dampings,
        ``s0``, the mount's ``ω_m``, ``ω̇_m`` and ``g − a`` in the mount frame (..., T, 3
        components, 3 vectors) and the broadcast batch shape."""
        if u is None:
            raise ValueError("u must be given: the box is driven by the mount's motion")
        n_steps = check_count("n_steps", n_steps)
        if u.shape[-1] != INPUT_SIZE or u.ndim < 2 or u.shape[-2] < n_steps:
            raise ValueError(
                f"u must have shape (..., {n_steps}, {INPUT_SIZE}), got {tuple(u.shape)}"
            )
        u = u[..., :n_steps, :]
        i_o, moment = self.mass_properties(theta)
        p = self.physical(theta)
        damping = torch.stack((p["d1"], p["d2"]), -1)
        shape = np.broadcast_shapes(theta.shape[:-1], s0.shape[:-1], u.shape[:-2])
        rot = u[..., 6:15].reshape(*u.shape[:-1], 3, 3)
        gvec = torch.tensor([0.0, 0.0, -self.gravity], dtype=u.dtype, device=u.device)
        world = torch.stack((u[..., 15:18], u[..., 18:21], gvec - u[..., 3:6]), -1)  # (.., T, 3, 3)
        mount = rot.transpose(-1, -2) @ world  # columns: ω_m, ω̇_m, g − a (mount frame)
        return i_o, moment, damping, s0, mount, tuple(shape)

    def simulate(
        self,
        theta: Tensor | Sequence[float],
        s0: Tensor | Sequence[float],
        n_steps: int,
        u: Tensor | Sequence[Sequence[float]],
    ) -> Tensor:
        """:meth:`rollout` after checking ``theta``, ``s0`` and ``u``."""
        return self.rollout(*self._checked(theta, s0, n_steps, u))

    def _checked(self, theta, s0, n_steps, u) -> tuple[Tensor, Tensor, Tensor, int]:
        theta = self.check_theta(theta)
        s0 = _check_last("s0", s0, STATE_SIZE)
        u = _check_last("u", u, INPUT_SIZE)
        n_steps = check_count("n_steps", n_steps)
        if u.ndim < 2 or u.shape[-2] != n_steps:
            raise ValueError(
                f"u must have shape (..., {n_steps}, {INPUT_SIZE}), got {tuple(u.shape)}"
            )
        return theta, s0, u, n_steps

    def observe(self, states: Tensor) -> Tensor:
        """The four measured points (..., 12) of each state, in the mount frame (see the module
        docstring, (4)): ``[p_o, p_x, p_y, p_z]`` relative to the joint centre
        (:func:`mount_points`; compiled where the rollout is)."""
        compiled = compiled_by_default() if self.compiled is None else self.compiled
        if compiled and can_run(states):
            flat = states.reshape(-1, STATE_SIZE)
            return _KernelPoints.apply(flat).reshape(*states.shape[:-1], OBSERVATION_SIZE)
        return mount_points(states)

    def world_points(self, states: Tensor, inputs: Tensor) -> Tensor:
        """The four points (..., 12) in the world, ``R y_m + p``, for states (..., 4) and the
        mount inputs (..., 21) of the same time steps (for drawing)."""
        return world_points(states, inputs)

    def energy(self, theta: Tensor, states: Tensor, rotation: Tensor | None = None) -> Tensor:
        """Mechanical energy (J) of each state (..., 4) for a *static* mount of rotation
        ``rotation`` (3, 3) (default: the mount's ``z`` pointing down, ``diag(1, −1, −1)``),
        with the potential zero at the joint centre."""
        rotation = static_rotation() if rotation is None else rotation
        i_o, moment = self.mass_properties(theta)
        q = box_rotation(states)
        e1 = torch.stack(
            (
                torch.cos(states[..., 1]),
                torch.zeros_like(states[..., 1]),
                torch.sin(states[..., 1]),
            ),
            -1,
        )
        e2 = torch.tensor([0.0, 1.0, 0.0], dtype=states.dtype)
        omega = e1 * states[..., 2:3] + e2 * states[..., 3:4]
        kinetic = 0.5 * (omega * (i_o @ omega[..., None])[..., 0]).sum(-1)
        height = (rotation @ q @ moment[..., None])[..., 2, 0]
        return kinetic + self.gravity * height


def _eager_rollout(
    i_o: Tensor,
    moment: Tensor,
    damping: Tensor,
    s0: Tensor,
    mount: Tensor,
    shape: tuple[int, ...],
    n_steps: int,
    dt: float,
) -> Tensor:
    """Eqs. (1–3) step by step in eager torch, batched over ``shape`` (the reference)."""
    mount = mount.expand(*shape, n_steps, 3, 3).movedim(-3, 0)  # (T, ..., 3 comps, 3 vecs)
    i_o = i_o.expand(*shape, 3, 3)
    moment = moment.expand(*shape, 3)
    damping = damping.expand(*shape, 2)
    s = s0.expand(*shape, STATE_SIZE)
    a, b, ad, bd = s.unbind(-1)
    d1, d2 = damping.unbind(-1)
    i22 = i_o[..., 1, 1]
    i_col2 = i_o[..., :, 1]  # I e2
    zero = torch.zeros_like(a)
    out = []
    for t in range(n_steps):
        ca, sa, cb, sb = torch.cos(a), torch.sin(a), torch.cos(b), torch.sin(b)
        v = mount[t]
        vx, vy, vz = v[..., 0, :], v[..., 1, :], v[..., 2, :]
        # R_x(α)ᵀ then R_y(β)ᵀ: mount frame -> box frame, for the three vectors at once.
        ca_, sa_, cb_, sb_ = ca[..., None], sa[..., None], cb[..., None], sb[..., None]
        uy = ca_ * vy + sa_ * vz
        uz = ca_ * vz - sa_ * vy
        bx = cb_ * vx - sb_ * uz
        bz = sb_ * vx + cb_ * uz
        wm = torch.stack((bx[..., 0], uy[..., 0], bz[..., 0]), -1)
        wdm = torch.stack((bx[..., 1], uy[..., 1], bz[..., 1]), -1)
        fb = torch.stack((bx[..., 2], uy[..., 2], bz[..., 2]), -1)
        e1 = torch.stack((cb, zero, sb), -1)
        # Eq. (1): ω and b in the box frame (e2 = ŷ).
        omega = wm + e1 * ad[..., None]
        omega = omega + torch.stack((zero, bd, zero), -1)
        vv = wm + e1 * ad[..., None]  # ω_m + e1 α̇
        rate = torch.stack(
            (
                wdm[..., 0] + wm[..., 1] * sb * ad - vv[..., 2] * bd,
                wdm[..., 1] + (wm[..., 2] * cb - wm[..., 0] * sb) * ad,
                wdm[..., 2] - wm[..., 1] * cb * ad + vv[..., 0] * bd,
            ),
            -1,
        )
        both = i_o @ torch.stack((omega, rate, e1), -1)  # I ω, I b, I e1
        i_omega, i_rate, i_e1 = both.unbind(-1)
        h = -i_rate - torch.linalg.cross(omega, i_omega) + torch.linalg.cross(moment, fb)
        # Eq. (2), the 2 x 2 system in closed form.
        m11 = (e1 * i_e1).sum(-1)
        m12 = (e1 * i_col2).sum(-1)
        r1 = (e1 * h).sum(-1) - d1 * ad
        r2 = h[..., 1] - d2 * bd
        det = m11 * i22 - m12 * m12
        add = (i22 * r1 - m12 * r2) / det
        bdd = (m11 * r2 - m12 * r1) / det
        # Eq. (3).
        ad = ad + dt * add
        bd = bd + dt * bdd
        a = a + dt * ad
        b = b + dt * bd
        out.append(torch.stack((a, b, ad, bd), -1))
    return torch.stack(out, -2)


def _compiled_rollout(
    i_o: Tensor,
    moment: Tensor,
    damping: Tensor,
    s0: Tensor,
    mount: Tensor,
    shape: tuple[int, ...],
    n_steps: int,
    dt: float,
    measured: Tensor | None = None,
    weight: Tensor | None = None,
) -> tuple[Tensor, Tensor | None]:
    """Eqs. (1–3) by :mod:`physid.inference.box_kernel`, one lane per entry of the batch
    shape; differentiable in the inertia, moment, dampings and ``s0`` through the kernel's
    adjoint: the states and None, or, with ``measured`` (..., T, 12) and ``weight`` (12,),
    each lane's last state and sum of squared weighted residuals of its points."""
    upper = (0, 1, 2, 0, 0, 1), (0, 1, 2, 1, 2, 2)  # Ixx, Iyy, Izz, Ixy, Ixz, Iyz
    consts = torch.cat((i_o[..., upper[0], upper[1]], moment, damping), -1)
    # The inputs' batch, and the measurements' with them.
    batch, shape, targets, weights = fit_arrays(
        measured, weight, mount.shape[:-3], shape, n_steps, OBSERVATION_SIZE
    )
    vectors = mount.detach().expand(*batch, n_steps, 3, 3).reshape(-1, n_steps, 9)
    fixed = (vectors.contiguous().numpy(), lane_index(shape, batch), targets, weights, LID_OFFSET)
    return lane_rollout(box_kernel, s0, consts, shape, fixed, dt, n_steps, measured is not None)


class _KernelPoints(torch.autograd.Function):
    """:func:`mount_points` by :func:`physid.inference.box_kernel.points` and its adjoint."""

    @staticmethod
    def forward(ctx, states):
        values = states.detach().contiguous().numpy()
        out = np.empty((values.shape[0], OBSERVATION_SIZE))
        box_kernel.points(values, LID_OFFSET, out)
        ctx.values = values
        return torch.from_numpy(out)

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, grad):
        out = np.empty_like(ctx.values)
        box_kernel.points_backward(ctx.values, LID_OFFSET, grad.contiguous().numpy(), out)
        return torch.from_numpy(out)


def box_rotation(states: Tensor) -> Tensor:
    """``R_x(α) R_y(β)`` (..., 3, 3): the box frame in the mount frame."""
    a, b = states[..., 0], states[..., 1]
    ca, sa, cb, sb = torch.cos(a), torch.sin(a), torch.cos(b), torch.sin(b)
    zero = torch.zeros_like(a)
    return torch.stack(
        (
            torch.stack((cb, zero, sb), -1),
            torch.stack((sa * sb, ca, -sa * cb), -1),
            torch.stack((-ca * sb, sa, ca * cb), -1),
        ),
        -2,
    )


def mount_points(states: Tensor) -> Tensor:
    """The points ``[p_o, p_x, p_y, p_z]`` (..., 12) of states (..., 4), in the mount frame."""
    q = box_rotation(states)
    origin = LID_OFFSET * q[..., :, 2]
    return torch.cat(
        (origin, origin + q[..., :, 0], origin + q[..., :, 1], origin + q[..., :, 2]), -1
    )


def world_points(states: Tensor, inputs: Tensor) -> Tensor:
    """The points (..., 12) in the world: ``R y_m + p`` with ``R, p`` from the inputs (..., 21)."""
    local = mount_points(states).unflatten(-1, (4, 3))
    rot = inputs[..., 6:15].unflatten(-1, (3, 3))
    world = (rot[..., None, :, :] @ local[..., None])[..., 0] + inputs[..., None, 0:3]
    return world.flatten(-2)


def static_rotation() -> Tensor:
    """The mount rotation ``diag(1, −1, −1)`` (π about ``x``): its ``z`` axis points down."""
    return torch.diag(torch.tensor([1.0, -1.0, -1.0], dtype=torch.float64))


def static_input(n_steps: int, rotation: Tensor | None = None) -> Tensor:
    """Inputs (T, 21) of a mount at rest at the origin, rotated by ``rotation`` (default
    :func:`static_rotation`)."""
    n_steps = check_count("n_steps", n_steps)
    rotation = static_rotation() if rotation is None else rotation
    u = torch.zeros(n_steps, INPUT_SIZE, dtype=torch.float64)
    u[:, 6:15] = rotation.reshape(9)
    return u


def hanging_angles(com: Sequence[float], down: Sequence[float]) -> tuple[float, float]:
    """The joint angles ``(α, β)`` at which a centre of mass ``com`` (box frame) hangs straight
    along the unit direction of gravity ``down`` (mount frame), the solution nearest zero."""
    r = np.asarray(com, dtype=float)
    g = np.asarray(down, dtype=float)
    g = g / np.linalg.norm(g)
    # y: R_y(β) r keeps r_y, so (R_x(−α) g)_y = g_y cos α + g_z sin α = r_y / |r|.
    rho = math.hypot(g[1], g[2])
    phase = math.atan2(g[2], g[1])
    alpha = phase - math.acos(np.clip(r[1] / np.linalg.norm(r) / rho, -1, 1))
    alt = phase + math.acos(np.clip(r[1] / np.linalg.norm(r) / rho, -1, 1))
    alpha = min((alpha, alt), key=lambda x: abs(math.remainder(x, 2 * math.pi)))
    alpha = math.remainder(alpha, 2 * math.pi)
    ca, sa = math.cos(alpha), math.sin(alpha)
    v = np.array([g[0], ca * g[1] + sa * g[2], -sa * g[1] + ca * g[2]])
    beta = math.atan2(v[0], v[2]) - math.atan2(r[0], r[2])
    return alpha, math.remainder(beta, 2 * math.pi)


def _inertia_problem(values: Tensor) -> str | None:
    """What is unphysical about inertias (N, 9) ``Ixx … Iyz, cx, cy, cz`` (about the joint),
    or None: the tensor about the centre of mass must be positive definite and satisfy the
    triangle inequality."""
    ixx, iyy, izz, ixy, ixz, iyz, cx, cy, cz = values.unbind(-1)
    c = torch.stack((cx, cy, cz), -1)
    i_o = torch.stack(
        (
            torch.stack((ixx, ixy, ixz), -1),
            torch.stack((ixy, iyy, iyz), -1),
            torch.stack((ixz, iyz, izz), -1),
        ),
        -2,
    )
    eye = torch.eye(3, dtype=values.dtype)
    i_c = i_o - BOX_MASS * (
        (c * c).sum(-1)[..., None, None] * eye - c[..., :, None] * c[..., None, :]
    )
    moments = torch.linalg.eigvalsh(i_c)  # ascending
    tol = 1e-12
    if bool((moments[..., 0] <= 0).any()):
        bad = moments[..., 0][moments[..., 0] <= 0][0].item()
        return f"about its centre of mass is not positive definite (principal moment {bad:.3g})"
    if bool((moments[..., 0] + moments[..., 1] < moments[..., 2] - tol).any()):
        return "about its centre of mass violates the triangle inequality"
    return None


def _as_float64(name: str, value) -> Tensor:
    if isinstance(value, Tensor):
        return check_tensor(name, value, shape=None, dtype=torch.float64, finite=False)
    try:
        array = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be an array of real numbers, got {value!r}") from None
    return torch.as_tensor(array, dtype=torch.float64)


def _check_last(name: str, value, size: int) -> Tensor:
    value = _as_float64(name, value)
    if value.shape[-1:] != (size,):
        raise ValueError(f"{name} must have a last axis of {size}, got shape {tuple(value.shape)}")
    return check_tensor(name, value, shape=None, dtype=torch.float64)
