"""Formulation 2: the object as one rigid body carrying ``k`` ground-friction points.

The object's twist ``[ω, vx, vy]`` at the object-frame origin replaces the ``3k`` cell
velocities of formulation 1 (:mod:`physid.pushing.lcp_engine`); the fixed joints are solved
exactly by construction (cell ``i`` moves with ``v + ω × r_i``). The mass matrix is
``Σ_i J_iᵀ diag(I_i, M_i, M_i) J_i``, the momentum ``Σ_i J_iᵀ diag(I_i, M_i, M_i) v_i`` of the
cell velocities of the previous step, and each cell keeps its own friction block of §5 (same
directions ``D``, bound ``μ_i M_i g dt``) and the pusher contact is the same. So a step is the
LCP of Eq. (2) restricted to rigid motions, and both formulations give the same trajectories
(to the LCP solver's tolerance).

Solver. The contact point moves with the end-effector (the velocity constraint of
formulation 1), so the step minimises over the single angular velocity ω the convex
piecewise-quadratic (maximum-dissipation form of the LCP)

    g(ω) = ½ Σ_i [I_i (ω − ω'_i)² + M_i ‖v̄ + ω ẑ×(r_i − r_c) − v'_i‖²]
           + Σ_i μ_i M_i g dt · max_j(−d_j · (v̄ + ω ẑ×(r_i − r_c))),

with primes for the previous step. :func:`line_solve` minimises it exactly: it sorts the
breakpoints of the friction terms, finds the piece where ``g'`` changes sign, and returns the
root of that quadratic piece or the breakpoint (a kink). No iterations, so it is fast; its
gradient is the implicit derivative of the optimality condition on the identified piece.
Items whose optimality check fails (numerically) are re-solved by the interior-point solver
on the rigid LCP (:func:`rigid_lcp_step`), as is every step without a pusher.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor

from physid.constants import GRAVITY
from physid.pushing.lcp import solve_lcp
from physid.pushing.lcp_engine import (
    contact_target,
    cross,
    friction_block,
    friction_directions,
    perp,
    pin_rows,
    se2_step,
)
from physid.pushing.pushes import PushBatch
from physid.pushing.rollout_args import check_rollout_args

__all__ = ["line_solve", "rigid_lcp_step", "rollout"]


def line_solve(
    a: Tensor, lin: Tensor, c: Tensor, p: Tensor, q: Tensor, tol: float = 1e-10
) -> tuple[Tensor, Tensor]:
    """Exact minimiser of ``½ a ω² + lin ω + Σ_i c_i max_j(p_j + q_ij ω)`` (batched).

    Shapes: ``a, lin (B,)``, ``c (B, k)`` (≥ 0), ``p (B, L)``, ``q (B, k, L)``. The lines are
    those of a regular friction polygon, ``p_j + q_ij ω = −d_j · (v̄ + ω β_i)`` with ``d_j`` in
    angular order, so cell ``i``'s envelope bends only where neighbours ``j, j+1`` tie with a
    positive value (its velocity crosses the bisector of ``−d_j`` and ``−d_{j+1}``), by
    ``c_i |q_ij − q_i,j+1|``. Returns ``ω (B,)`` (differentiable) and the optimality check
    ``g'(ω−) ≤ 0 ≤ g'(ω+)`` (B,) (to a relative 1e-8): it fails only in the degenerate case of
    a cell whose velocity passes through zero, which the caller re-solves.
    """
    batch, k, n_lines = q.shape
    with torch.no_grad():
        qn, pn = q.roll(-1, 2), p.roll(-1, 1)
        dq = q - qn
        valid = dq.abs() > 1e-14 * q.abs().amax(2, keepdim=True)
        kinks = (pn - p).unsqueeze(1) / torch.where(valid, dq, 1.0)
        on_envelope = valid & (p.unsqueeze(1) + q * torch.where(valid, kinks, 0.0) > 0)
        kinks = torch.where(on_envelope, kinks, torch.inf).reshape(batch, -1)
        jump = torch.where(on_envelope, c.unsqueeze(2) * dq.abs(), 0.0).reshape(batch, -1)
        base = (c * q.amin(2)).sum(1)  # the slope left of every kink
        sorted_kinks, order = kinks.sort(1)
        slope = base.unsqueeze(1) + jump.gather(1, order).cumsum(1)
        grad_right = a.unsqueeze(1) * sorted_kinks + lin.unsqueeze(1) + slope
        count = k * n_lines
        rank = torch.arange(1, count + 1, device=q.device).expand(batch, count)
        n_below = torch.where(grad_right < 0, rank, 0).amax(1)  # kinks with g'(κ+) < 0
        below = (n_below - 1).clamp(min=0).unsqueeze(1)
        slope_piece = torch.where(n_below > 0, slope.gather(1, below).squeeze(1), base)
        above = n_below.clamp(max=count - 1).unsqueeze(1)
        kink_above = torch.where(
            n_below < count, sorted_kinks.gather(1, above).squeeze(1), torch.inf
        )
        smooth = -(lin + slope_piece) / a
        at_kink = kink_above <= smooth
        omega_guess = torch.where(at_kink, kink_above, smooth)
        line = (p.unsqueeze(1) + q * omega_guess[:, None, None]).argmax(2, keepdim=True)
        flat = order.gather(1, above).squeeze(1)
        kink_cell, kink_pair = flat // n_lines, flat % n_lines
    # Differentiable: the root of the identified quadratic piece, or the identified kink.
    omega_smooth = -(lin + (c * q.gather(2, line).squeeze(2)).sum(1)) / a
    idx = torch.arange(batch, device=q.device)
    nxt = (kink_pair + 1) % n_lines
    denom = q[idx, kink_cell, kink_pair] - q[idx, kink_cell, nxt]
    omega_kink = (p[idx, nxt] - p[idx, kink_pair]) / torch.where(at_kink, denom, 1.0)
    omega = torch.where(at_kink, omega_kink, omega_smooth)
    with torch.no_grad():
        g_left, g_right = _one_sided(a, lin, c, p, q, omega, tol)
        size = (a * omega).abs() + lin.abs() + (c * q.abs().amax(2)).sum(1)
        ok = (g_left <= 1e-8 * size) & (g_right >= -1e-8 * size) & torch.isfinite(omega)
    return omega, ok


def _ties(p: Tensor, q: Tensor, omega: Tensor, tol: float) -> Tensor:
    """``(B, k, L)``: which lines attain each cell's maximum at ``omega`` (to ``tol``)."""
    at = omega[:, None, None]
    values = p.unsqueeze(1) + q * at
    spread = p.abs().amax(1)[:, None, None] + q.abs().amax(2, keepdim=True) * at.abs()
    return values >= values.amax(2, keepdim=True) - tol * spread


def _one_sided(a, lin, c, p, q, omega, tol):
    """Left and right derivatives of the objective of :func:`line_solve` at ``omega``."""
    tie = _ties(p, q, omega, tol)
    right = (c * torch.where(tie, q, -torch.inf).amax(2)).sum(1)
    left = (c * torch.where(tie, q, torch.inf).amin(2)).sum(1)
    return a * omega + lin + left, a * omega + lin + right


def rigid_lcp_step(
    masses: Tensor,
    inertia: Tensor,
    bound: Tensor,
    arms: Tensor,
    momentum: Tensor,
    dirs: Tensor,
    contact: tuple[Tensor, Tensor, Tensor] | None,
    tol: float,
) -> Tensor:
    """One step of formulation 2 by the interior-point LCP solver; returns the twist (B, 3).

    ``arms (B, k, 2)`` world offsets of the cells from the origin, ``bound (B, k)`` the friction
    impulse bounds ``μ_i M_i g dt``, ``momentum (B, 3)`` the generalised momentum, ``contact``
    the pusher's ``(arm (B, 2), inward normal (B, 2), target velocity v̄ (B, 2))`` or None.
    """
    batch, k = masses.shape
    n_dirs = len(dirs)
    scale = masses.mean(1, keepdim=True)
    total = masses.sum(1)
    first = (masses * arms[..., 0]).sum(1)
    second = (masses * arms[..., 1]).sum(1)
    rot = (inertia + masses * (arms * arms).sum(2)).sum(1)
    zero = torch.zeros_like(total)
    Q = torch.stack(
        [torch.stack([rot, -second, first], 1), torch.stack([-second, total, zero], 1),
         torch.stack([first, zero, total], 1)], 1
    ) / scale.unsqueeze(2)
    # Friction point i, direction j: d_j · (v + ω ẑ×r_i) = [d_j·(ẑ×r_i), d_jx, d_jy] · twist.
    spin = perp(arms) @ dirs.T  # (B, k, n_dirs)
    rows = torch.stack([spin, dirs[:, 0].expand_as(spin), dirs[:, 1].expand_as(spin)], 3)
    G = torch.cat([-rows, masses.new_zeros(batch, k, 1, 3)], 2).reshape(batch, -1, 3)
    h = torch.cat([masses.new_zeros(batch, k, n_dirs), (bound / scale).unsqueeze(2)], 2)
    h = h.reshape(batch, -1)
    blocks = [friction_block(n_dirs, k, masses)]
    p = -momentum / scale
    if contact is None:
        return solve_lcp(Q, p, G, h, blocks, tol=tol).x
    A, b = pin_rows(*contact)
    return solve_lcp(Q, p, G, h, blocks, A, b, tol=tol).x


def _momentum(masses, inertia, arms, omega, cell_vel) -> Tensor:
    """Generalised momentum ``Σ_i J_iᵀ diag(I_i, M_i, M_i) [ω', v'_i]`` (B, 3) of the twist."""
    spin = (inertia * omega.unsqueeze(1) + masses * cross(arms, cell_vel)).sum(1)
    return torch.cat([spin.unsqueeze(1), (masses.unsqueeze(2) * cell_vel).sum(1)], 1)


def _grip_step(masses, inertia, bound, arms, arm, target, omega, cell_vel, dirs, tol):
    """The step with the contact point on the end-effector, by :func:`line_solve`: the new ω
    (B,), the new velocity of the origin (B, 2) and the optimality check (B,)."""
    rel = arms - arm.unsqueeze(1)
    a = (inertia + masses * (rel * rel).sum(2)).sum(1)
    lin = (masses * cross(rel, target.unsqueeze(1) - cell_vel)).sum(1)
    lin = lin - (inertia * omega.unsqueeze(1)).sum(1)
    p_lines = -(target @ dirs.T)
    q_lines = rel @ perp(dirs).T  # −d_j · (ẑ × rel) = rel · (ẑ × d_j)
    new_omega, ok = line_solve(a, lin, bound, p_lines, q_lines, tol)
    return new_omega, target - new_omega.unsqueeze(1) * perp(arm), ok


def rollout(
    centres: Tensor,
    masses: Tensor,
    frictions: Tensor,
    pushes: PushBatch | None,
    initial_velocity: Tensor,
    *,
    cell_side: float,
    dt: float,
    n_steps: int,
    friction_dirs: int = 4,
    gravity: float = GRAVITY,
    tol: float = 1e-10,
    on_step: Callable[[], None] | None = None,
) -> Tensor:
    """Cell positions ``(B, n_steps + 1, k, 2)`` of formulation 2 (same arguments as
    :func:`physid.pushing.lcp_engine.rollout`)."""
    s = check_rollout_args(
        centres, masses, frictions, pushes, initial_velocity, cell_side=cell_side, dt=dt,
        n_steps=n_steps, friction_dirs=friction_dirs, gravity=gravity, tol=tol,
    )
    cell_side, dt, n_steps, gravity, tol = s.cell_side, s.dt, s.n_steps, s.gravity, s.tol
    friction_dirs = s.friction_dirs
    batch, k = masses.shape
    dirs = friction_directions(friction_dirs, masses)
    inertia = masses * cell_side**2 / 6.0
    bound = frictions * masses * (gravity * dt)
    theta = masses.new_zeros(batch)
    origin = masses.new_zeros(batch, 2)
    omega, v_origin = initial_velocity[:, 0], initial_velocity[:, 1:]
    cell_vel = v_origin.unsqueeze(1) + omega[:, None, None] * perp(centres)
    # Planar rotations as unit complex numbers: fewer autograd nodes per step.
    centres_c = torch.complex(centres[:, 0], centres[:, 1])
    if pushes is not None:
        contact_c = torch.complex(pushes.contact[:, 0], pushes.contact[:, 1])
        normal_c = torch.complex(pushes.normal[:, 0], pushes.normal[:, 1])
    trajectory = []
    for step in range(n_steps):
        turn = torch.polar(torch.ones_like(theta), theta)
        arms = torch.view_as_real(turn.unsqueeze(1) * centres_c)
        trajectory.append(origin.unsqueeze(1) + arms)
        if pushes is None:
            momentum = _momentum(masses, inertia, arms, omega, cell_vel)
            twist = rigid_lcp_step(masses, inertia, bound, arms, momentum, dirs, None, tol)
            omega, v_origin = twist[:, 0], twist[:, 1:]
        else:
            arm = torch.view_as_real(turn * contact_c)
            normal = torch.view_as_real(turn * normal_c)
            target = contact_target(pushes, origin + arm, (step + 1) * dt, dt)
            new_omega, v_origin, ok = _grip_step(
                masses, inertia, bound, arms, arm, target, omega, cell_vel, dirs, tol
            )
            if not ok.all():
                i = torch.nonzero(~ok).flatten()
                momentum = _momentum(masses[i], inertia[i], arms[i], omega[i], cell_vel[i])
                exact = rigid_lcp_step(
                    masses[i], inertia[i], bound[i], arms[i], momentum, dirs,
                    (arm[i], normal[i], target[i]), tol,
                )
                new_omega = new_omega.index_put((i,), exact[:, 0])
                v_origin = v_origin.index_put((i,), exact[:, 1:])
            omega = new_omega
        cell_vel = v_origin.unsqueeze(1) + omega[:, None, None] * perp(arms)
        theta = theta + omega * dt
        origin = se2_step(origin, omega, v_origin, dt)
        if on_step is not None:
            on_step()
    turn = torch.polar(torch.ones_like(theta), theta)
    trajectory.append(origin.unsqueeze(1) + torch.view_as_real(turn.unsqueeze(1) * centres_c))
    return torch.stack(trajectory, 1)

