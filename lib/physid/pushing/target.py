"""Eq. (1) of Song & Boularias as a target: each cell's mass and friction from observed pushes.

The loss is Eq. (1): every observation interval of every training push is restarted from the
observed pose and twist (with the finger where it was at that time) and simulated for one
interval; the loss is the mean over pushes, intervals and cells of the distance between the
predicted and the observed cell positions at the end of the interval, in metres
(:class:`PushingTarget`). It is Eq. (1) divided by the number of terms and cells, so that it
reads as a position error.

:class:`PushingTarget` is a :class:`physid.core.target.Target`: the parameters are the paper's
``θ = [M, μ_f]`` (2k entries, masses first) normalised to the unit box :data:`MASS_LIMITS` ×
:data:`FRICTION_LIMITS` (the authors' search box), and its log-likelihood is ``−loss / noise``
(a Gibbs density), so Part II's estimators can sample it. :func:`start_point` is the authors'
start in that box.
"""

from __future__ import annotations

import time
from dataclasses import replace

import numpy as np
import torch
from torch import Tensor

from physid.core.constants import GRAVITY
from physid.core.target import Limits, Target
from physid.core.validate import check_choice, check_count, check_positive, check_tensor
from physid.pushing.engine import Scene, Stepping
from physid.pushing.finger import ContactRecord, FaceGeometry
from physid.pushing.observations import OBSERVATION_PERIOD, Observations
from physid.pushing.planar import friction_directions
from physid.pushing.pushes import PushBatch
from physid.pushing.simulate import FORMULATIONS, cell_position_error

__all__ = [
    "DT",
    "FRICTION_LIMITS",
    "MASS_LIMITS",
    "READINGS",
    "Exhausted",
    "PushingTarget",
    "identifiable_map",
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
#: The readings of §6's assumptions :meth:`PushingTarget.algorithm1` can take.
READINGS = ("paper", "pinned")



def identifiable_map(masses: Tensor, frictions: Tensor) -> Tensor:
    """``μ_i M_i / Σ_j μ_j M_j`` (..., k): what pushes on a table determine (the normal load
    and so the friction force of each cell is ``μ_i M_i g``; a global scale of the masses
    changes no trajectory)."""
    product = masses * frictions
    return product / product.sum(-1, keepdim=True)


class Exhausted(Exception):
    """The budget of an identification run is spent (a
    :class:`~physid.pushing.budget.Tracker`'s, or a time budget during an evaluation)."""


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
        self.formulation = FORMULATIONS.check(formulation, "formulation")
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
            batch.select(push_index),
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
        return self._rollout_record(masses, frictions, rows)[0]

    def _rollout_record(self, masses: Tensor, frictions: Tensor, rows: Tensor
                        ) -> tuple[Tensor, ContactRecord]:
        """:meth:`_rollout` and the finger's record of each restart."""
        particle, restart = rows[:, 0], rows[:, 1]
        return FORMULATIONS[self.formulation].rollout(
            Scene(self.obj.centres, masses[particle], frictions[particle], self.obj.cell_side,
                  self._twists[restart], self._pushes.select(restart), self._faces,
                  self._poses[restart]),
            Stepping(DT, self.steps, self.friction_dirs),
            self._check_deadline,
        )

    def _check_deadline(self) -> None:
        if self.deadline is not None and time.perf_counter() > self.deadline:
            raise Exhausted("the time budget ran out during an evaluation")

    def _chunks(self, n: int, restarts: Tensor | None = None):
        restarts = torch.arange(self.n_restarts) if restarts is None else restarts
        rows = torch.cartesian_prod(torch.arange(n), restarts)
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

    def hessian(self, x: Tensor, step: float = 1e-4) -> Tensor:
        """The Hessian (2k, 2k) of the negative log-likelihood ``loss / noise`` at one point
        ``x`` (2k,) of the unit box: central differences of :meth:`loss_and_grad`'s exact
        gradient, ``H_ij = (g_j(x + h e_i) − g_j(x − h e_i)) / (2h)``, each pair clipped to the
        box and divided by its actual width, then symmetrised, ``(H + Hᵀ) / 2``. The loss is
        smooth only piecewise (the contact modes switch), so ``H`` may have negative
        eigenvalues where the point is not a minimum or a switch lies within ``step``."""
        if np.ndim(x) != 1:
            raise ValueError(f"x must be one point of shape ({self.dim},), got {np.shape(x)}")
        x = self.check_particles(x[None], "x")
        step = check_positive("step", step)
        if step >= 0.5:
            raise ValueError(f"step must be below 0.5 (the unit box), got {step}")
        eye = torch.eye(self.dim, dtype=x.dtype)
        upper, lower = (x + step * eye).clamp(max=1.0), (x - step * eye).clamp(min=0.0)
        _, grad = self.loss_and_grad(torch.cat((upper, lower)))
        width = (upper - lower).diagonal()[:, None]
        h = (grad[: self.dim] - grad[self.dim :]) / width / self.noise
        return 0.5 * (h + h.T)

    def algorithm1(self, x: Tensor, reading: str = "paper", restart: int | None = None
                   ) -> tuple[Tensor, Tensor]:
        """:meth:`loss` (N,) and Algorithm 1's direction (N, k) for the frictions, from the
        forward simulation only (§6); with ``restart``, of that restarted interval alone
        (push ``restart // (S − 1)``, interval ``restart % (S − 1)`` for S observations per
        push), the term of one pass of §6's inner loop.

        ``reading="paper"`` is §6's derivation: under the paper's assumptions only cell i's
        own ground-friction impulse depends on μ_i, ``∂v_i/∂μ_i = M_i⁻¹ ∂λ_i/∂μ_i = −g Δt
        ŝ_i``, the forward simulation's own impulse per unit μ: −ŝ_i is the direction of D
        most opposed to the cell's motion in the step (``_impulse_directions``; the engine's
        friction impulse lies on a vertex of D's polygon, opposite the motion only for many
        directions). Summed over the steps of each restarted interval (a velocity change at
        step j moves the cell for the remaining ``n − j`` steps) and projected on the
        derivative of the interval's residual, Σ_t (x̂ − x)/‖x̂ − x‖ · ∂x̂/∂μ.

        ``reading="pinned"`` takes assumptions 1 and 2 literally instead: the object is one
        rigid body, turned about the finger's contact point while the finger touches it (and
        free, about its centre of mass, while it does not), so cell i's friction impulse
        changes the angular velocity of every cell, ``Δω = (r_i − p) × ∂λ_i/∂μ_i / I_p`` with
        ``p`` the pivot and ``I_p = Σ_l M_l (‖r_l − p‖² + a²/6)`` (and, free, the velocity of
        the centre of mass by ``∂λ_i/∂μ_i / Σ_l M_l``); the same forward simulation, the same
        sums.
        """
        reading = check_choice("reading", reading, READINGS)
        if restart is not None:
            restart = check_count("restart", restart, minimum=0)
            if restart >= self.n_restarts:
                raise ValueError(f"restart must be < {self.n_restarts}, got {restart}")
        chosen = None if restart is None else torch.tensor([restart])
        terms = self.n_restarts if restart is None else 1
        x = self.check_x(x).detach()
        masses, frictions = self.physical(x)
        total = x.new_zeros(len(x))
        direction = x.new_zeros(len(x), self.k)
        weights = torch.arange(self.steps, 0, -1, dtype=x.dtype)  # n − j, j = 0 … n − 1
        with torch.no_grad():
            for rows in self._chunks(len(x), chosen):
                positions, record = self._rollout_record(masses, frictions, rows)
                residual = positions[:, -1] - self._observed[rows[:, 1]]
                distance = residual.norm(dim=-1)  # (R, k)
                unit = residual / distance.clamp_min(1e-15).unsqueeze(-1) / self.k
                slip = self._impulse_directions(positions[:, 1:] - positions[:, :-1])
                if reading == "paper":
                    effect = -GRAVITY * DT**2 * torch.einsum("j,rjkd->rkd", weights, slip)
                    per_cell = (unit * effect).sum(-1)  # (R, k)
                else:
                    per_cell = self._pinned(positions, record, slip, unit,
                                            masses[rows[:, 0]], weights)
                total = total.index_add(0, rows[:, 0], distance.mean(-1))
                direction = direction.index_add(0, rows[:, 0], per_cell)
        return total / terms, direction / terms

    def _impulse_directions(self, moves: Tensor) -> Tensor:
        """Minus each cell's friction impulse per unit μ and ``M g Δt`` in the forward
        simulation, from its ``moves`` (..., 2) in the steps: minus the direction of D most
        opposed to the motion (the vertex of D's polygon that maximises the dissipation), zero
        for a cell at rest."""
        dirs = friction_directions(self.friction_dirs, moves)
        opposed = dirs[(moves @ dirs.T).argmin(-1)]
        return torch.where(moves.norm(dim=-1, keepdim=True) > 1e-12, -opposed, 0.0)

    def _pinned(self, positions: Tensor, record: ContactRecord, slip: Tensor, unit: Tensor,
                masses: Tensor, weights: Tensor) -> Tensor:
        """The pinned reading of :meth:`algorithm1` (R, k): the rigid body's response to each
        cell's friction impulse per unit μ, about the finger's contact while it touches and
        about the centre of mass while it does not, projected on the residual's ``unit``."""
        cells = positions[:, :-1]  # (R, n, k, 2): the cells at each step's start
        m = masses[:, None, :, None]
        centre = (m * cells).sum(2) / m.sum(2)  # (R, n, 2)
        turn = torch.stack([torch.cos(record.yaw), torch.sin(record.yaw)], -1)  # (R, n, 2)
        point = record.point.to(cells)
        contact = cells.mean(2) + torch.stack(
            [turn[..., 0] * point[..., 0] - turn[..., 1] * point[..., 1],
             turn[..., 1] * point[..., 0] + turn[..., 0] * point[..., 1]], -1)
        touching = record.touching.to(cells.device).unsqueeze(-1)  # (R, n, 1)
        pivot = torch.where(touching, contact, centre)
        arms = cells - pivot.unsqueeze(2)  # (R, n, k, 2)
        inertia = (masses[:, None] * ((arms**2).sum(-1) + self.obj.cell_side**2 / 6)).sum(-1)
        impulse = -GRAVITY * DT * masses[:, None, :, None] * slip  # ∂λ_i/∂μ_i (R, n, k, 2)
        torque = arms[..., 0] * impulse[..., 1] - arms[..., 1] * impulse[..., 0]  # (R, n, k)
        spin = torque / inertia.unsqueeze(-1)
        lever = (unit.unsqueeze(1) * torch.stack([-arms[..., 1], arms[..., 0]], -1)).sum((-1, -2))
        free = (~touching).to(cells.dtype)  # (R, n, 1)
        push = impulse / masses.sum(-1)[:, None, None, None]
        shift = free * (unit.sum(1)[:, None, None, :] * push).sum(-1)  # (R, n, k)
        return DT * torch.einsum("j,rjk->rk", weights, spin * lever.unsqueeze(-1) + shift)

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
                positions, _ = FORMULATIONS[self.formulation].rollout(
                    Scene(data.obj.centres, masses[particle], frictions[particle],
                          data.obj.cell_side, masses.new_zeros(len(rows), 3),
                          batch.select(push), self._faces),
                    Stepping(DT, steps, self.friction_dirs),
                )
                finals.append(positions[:, -1])
        return torch.cat(finals).reshape(n, b, self.k, 2)

    def push_errors(self, masses: Tensor, frictions: Tensor, data: Observations | None = None
                    ) -> Tensor:
        """The final cell-position error (N, B) of each push of ``data`` (default: the
        training pushes) with physical ``masses`` and ``frictions`` (N, k), which need not lie
        in the search box (the ground truth's error is the model's floor)."""
        data = self.data if data is None else data
        final = self.final_positions(masses, frictions, data)
        return cell_position_error(final, data.positions[:, -1].expand_as(final))

    def final_error(self, masses: Tensor, frictions: Tensor, data: Observations | None = None
                    ) -> Tensor:
        """:meth:`rollout_error` of physical ``masses`` and ``frictions`` (N, k): the mean
        over pushes of :meth:`push_errors`."""
        return self.push_errors(masses, frictions, data).mean(1)


def start_point(k: int) -> np.ndarray:
    """The authors' start (unit box, (2k,)): every mass at half its box range (2.45 kg) and
    every friction at 0.5."""
    mass = (MASS_LIMITS[1] - MASS_LIMITS[0]) * 0.5
    unit_mass = (mass - MASS_LIMITS[0]) / (MASS_LIMITS[1] - MASS_LIMITS[0])
    unit_friction = (0.5 - FRICTION_LIMITS[0]) / (FRICTION_LIMITS[1] - FRICTION_LIMITS[0])
    return np.concatenate([np.full(k, unit_mass), np.full(k, unit_friction)])
