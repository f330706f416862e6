"""Formulation 1, "as written": every cell is its own body, tied by fixed joints (Figure 2).

Each of the ``k`` cells is a planar body with velocity ``[ω_i, vx_i, vy_i]`` and mass matrix
``diag(I_i, M_i, M_i)`` (``I_i = M_i a²/6``). One time step solves the LCP of Figure 2 /
Eq. (2) of Song & Boularias with :func:`physid.pushing.lcp.solve_lcp`:

* ``J_e``: fixed joints, three rows per non-reference cell tying it to the reference cell (the
  one nearest the centroid): ``ω_i = ω_r`` and ``v_i = v_r + ω_r × (p_i − p_r)``;
* ``J_c``: the end-effector contact, restitution 0, modelled as the velocity constraint that
  §6's assumptions 2–3 describe: the end-effector is kinematic, moves at constant velocity,
  and the contact point ``c`` stays fixed on the object and in contact with it. Its two rows
  (contact normal ``n``, the inward normal of the pushed face, which turns with the object,
  and tangent ``t``) are equalities ``J_c v = [n; t]·v̄`` with ``v̄ = (q(t+dt) − c(t))/dt``, the
  velocity that puts ``c`` on the end-effector position ``q`` at the end of the step
  (position-level stabilisation; it is the push velocity while they coincide). Being an
  equality, the contact can pull (a negative normal impulse) where a real finger would let
  go or slide; the pybullet ground truth grips the contact point the same way. (A unilateral
  normal row with a Coulomb end-effector friction ``μ_c`` in F, as for body contacts in
  Figure 2, makes the LCP non-monotone: the interior-point iterations were measured to stall on
  7 of 30 pushes with ``μ_c = 10``, and the object then slid along the end-effector on up to
  a fifth of the steps, which fixed contact points cannot follow.)
* ``J_f``, ``E``, ``μ_f``: the ground friction of §5 (Cline 2002). Per cell, ``D`` holds the
  directions ``d_j`` of the friction polygon (``n_dirs = 4``: ±x and ±y, as in the paper) on
  the translational velocities only: its ω column is zero, so ``D`` spans translations and the
  cells exert no frictional torque about their own centres. ``ζ = 1``. The rows are
  ``ρ = D v_i + ζ η_i ≥ 0 ⊥ λ_i ≥ 0`` and ``ξ = μ_i M_i g dt − ζᵀλ_i ≥ 0 ⊥ η_i ≥ 0``.

Friction impulse convention: the normal load of cell ``i`` is its weight ``M_i g``, so the bound
on its friction impulse over one step is ``μ_i M_i g dt`` (the ``μ_f`` entry of Figure 2 times the
known normal impulse). With a polygon of directions the bound is on ``Σ_j λ_ij``: for 4
directions the friction set is the diamond ``|f_x| + |f_y| ≤ μ_i M_i g dt``, exact for motion
along x or y, ``1/√2`` of Coulomb's circle for diagonal motion.

Positions are integrated with the SE(2) exponential of each cell's twist, the exact flow over
``dt`` of the step's constant velocity field: to first order it is ``x_{t+1} = x_t + v dt`` of §3,
and it keeps jointed cells rigid (plain per-coordinate Euler lets fixed joints drift).
The LCP is scaled to O(1): velocities in m/s, impulses in units of the mean cell mass × 1 m/s.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch import Tensor

from physid.constants import GRAVITY
from physid.pushing.lcp import solve_lcp
from physid.pushing.pushes import PushBatch
from physid.pushing.rollout_args import check_rollout_args
from physid.validate import check_count

__all__ = ["friction_directions", "pin_rows", "rollout"]


def friction_directions(n_dirs: int, like: Tensor) -> Tensor:
    """The ``(n_dirs, 2)`` unit directions ``d_j`` of D, counter-clockwise from +x."""
    n_dirs = check_count("friction_dirs", n_dirs, minimum=3)
    angles = torch.arange(n_dirs, dtype=like.dtype, device=like.device) * (2 * math.pi / n_dirs)
    return torch.stack([torch.cos(angles), torch.sin(angles)], dim=1)


def friction_block(n_dirs: int, count: int, like: Tensor) -> Tensor:
    """``(1, count, n_dirs + 1, n_dirs + 1)`` blocks ``[[0, ζ], [−ζᵀ, 0]]`` of F (§5)."""
    blk = like.new_zeros(n_dirs + 1, n_dirs + 1)
    blk[:n_dirs, n_dirs] = 1.0
    blk[n_dirs, :n_dirs] = -1.0
    return blk.expand(1, count, n_dirs + 1, n_dirs + 1)


def rotation(theta: Tensor) -> Tensor:
    """Rotation matrices ``(..., 2, 2)`` of angles ``theta (...)``."""
    c, s = torch.cos(theta), torch.sin(theta)
    return torch.stack([c, -s, s, c], -1).unflatten(-1, (2, 2))


def rotate(theta: Tensor, vec: Tensor) -> Tensor:
    """Rotate ``vec (..., 2)`` by angles ``theta (...)``."""
    return (rotation(theta) @ vec.unsqueeze(-1)).squeeze(-1)


def perp(vec: Tensor) -> Tensor:
    """``ẑ × vec``: the velocity of offset ``vec`` under a unit angular velocity."""
    return vec @ vec.new_tensor([[0.0, 1.0], [-1.0, 0.0]])


def cross(a: Tensor, b: Tensor) -> Tensor:
    """Planar cross product ``a_x b_y − a_y b_x``."""
    return (perp(a) * b).sum(-1)


def se2_step(pos: Tensor, omega: Tensor, vel: Tensor, dt: float) -> Tensor:
    """Position after ``dt`` of a point moving with the rigid velocity field ``(ω, vel)``.

    ``pos + V(ω dt) vel dt`` with ``V(φ) = [[sin φ/φ, −(1−cos φ)/φ], [(1−cos φ)/φ, sin φ/φ]]``
    ``= (sin(φ/2)/(φ/2)) R(φ/2)``, applied as a complex multiplication.
    """
    half = omega * (dt / 2)
    flow = torch.polar(torch.sinc(half / math.pi) * dt, half)
    return pos + torch.view_as_real(flow * torch.complex(vel[..., 0], vel[..., 1]))


def contact_target(pushes: PushBatch, contact_world: Tensor, t_next: float, dt: float) -> Tensor:
    """``v̄ = (q(t+dt) − c(t)) / dt``: the velocity that brings the contact onto the pusher."""
    pusher = pushes.contact + pushes.velocity * t_next
    return (pusher - contact_world) / dt


def pin_rows(arm: Tensor, normal: Tensor, target: Tensor) -> tuple[Tensor, Tensor]:
    """The end-effector rows of one body: ``J_c (B, 2, 3)`` for the twist at the body's
    reference point (``arm`` from it to the contact) and their targets ``[n·v̄, t·v̄] (B, 2)``."""
    tangent = perp(normal)
    j_n = torch.stack([cross(arm, normal), normal[:, 0], normal[:, 1]], 1)
    j_t = torch.stack([cross(arm, tangent), tangent[:, 0], tangent[:, 1]], 1)
    rows = torch.stack([j_n, j_t], 1)
    return rows, torch.stack([(normal * target).sum(1), (tangent * target).sum(1)], 1)


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
    """Cell positions ``(B, n_steps + 1, k, 2)`` of formulation 1, one LCP (Eq. (2)) per step.

    ``centres (k, 2)`` object-frame cell centres; ``masses``, ``frictions (B, k)``; ``pushes``
    a batch of B pushes or None (no pusher); ``initial_velocity (B, 3)`` the object's initial
    twist ``[ω, vx, vy]`` at the object-frame origin. Every argument is checked first by
    :func:`physid.pushing.rollout_args.check_rollout_args`.
    """
    s = check_rollout_args(
        centres, masses, frictions, pushes, initial_velocity, cell_side=cell_side, dt=dt,
        n_steps=n_steps, friction_dirs=friction_dirs, gravity=gravity, tol=tol,
    )
    cell_side, dt, n_steps, gravity, tol = s.cell_side, s.dt, s.n_steps, s.gravity, s.tol
    friction_dirs = s.friction_dirs
    batch, k = masses.shape
    n_dirs, n = friction_dirs, 3 * k
    dirs = friction_directions(n_dirs, masses)
    scale = masses.mean(1, keepdim=True)
    inertia = masses * cell_side**2 / 6.0
    mass_diag = torch.stack([inertia, masses, masses], 2).reshape(batch, n)
    Q = torch.diag_embed(mass_diag / scale)
    bound = frictions * masses * (gravity * dt) / scale  # μ_i M_i g dt, scaled

    # Ground friction rows (constant): −D on cell i's translational columns, 0 for η_i.
    per = n_dirs + 1
    G_fric = masses.new_zeros(k, per, n)
    cell = torch.arange(k, device=masses.device)[:, None]
    row = torch.arange(n_dirs, device=masses.device)[None, :]
    G_fric[cell, row, 3 * cell + 1] = -dirs[:, 0]
    G_fric[cell, row, 3 * cell + 2] = -dirs[:, 1]
    G_fric = G_fric.reshape(1, k * per, n).expand(batch, -1, -1)
    h_fric = torch.cat([masses.new_zeros(batch, k, n_dirs), bound.unsqueeze(2)], 2)
    h_fric = h_fric.reshape(batch, k * per)
    blocks = [friction_block(n_dirs, k, masses)]

    # Fixed joints: each non-reference cell i tied to the reference cell r.
    ref = int(torch.argmin(centres.norm(dim=1)).item())
    others = torch.tensor([i for i in range(k) if i != ref], device=masses.device, dtype=torch.long)
    n_joint = 3 * len(others)
    A_joint = masses.new_zeros(n_joint, n)
    rows = torch.arange(n_joint, device=masses.device).reshape(-1, 3)
    for axis in range(3):
        A_joint[rows[:, axis], 3 * others + axis] = 1.0
        A_joint[rows[:, axis], 3 * ref + axis] = -1.0

    if pushes is not None:
        contact_offset = pushes.contact - centres[pushes.cell]  # from the pushed cell's centre
        col = (3 * pushes.cell[:, None] + torch.arange(3, device=masses.device)).unsqueeze(1)

    theta = masses.new_zeros(batch, k)
    pos = centres.expand(batch, k, 2)
    omega0, v0 = initial_velocity[:, :1], initial_velocity[:, 1:]
    vel = torch.cat([omega0.expand(batch, k).unsqueeze(2),
                     (v0.unsqueeze(1) + omega0.unsqueeze(2) * perp(centres))], 2)
    trajectory = [pos]
    for step in range(n_steps):
        lever = pos[:, others] - pos[:, ref : ref + 1]
        A = A_joint.expand(batch, -1, -1).clone()
        A[:, rows[:, 1], 3 * ref] = lever[..., 1]
        A[:, rows[:, 2], 3 * ref] = -lever[..., 0]
        b = masses.new_zeros(batch, n_joint)
        if pushes is not None:
            idx = torch.arange(batch, device=masses.device)
            arm = rotate(theta[idx, pushes.cell], contact_offset)
            normal = rotate(theta[idx, pushes.cell], pushes.normal)
            target = contact_target(pushes, pos[idx, pushes.cell] + arm, (step + 1) * dt, dt)
            rows_c, b_c = pin_rows(arm, normal, target)
            J_c = masses.new_zeros(batch, 2, n).scatter(2, col.expand(-1, 2, -1), rows_c)
            A = torch.cat([A, J_c], 1)
            b = torch.cat([b, b_c], 1)
        p = -mass_diag * vel.reshape(batch, n) / scale
        if A.shape[1]:
            x = solve_lcp(Q, p, G_fric, h_fric, blocks, A, b, tol=tol).x
        else:
            x = solve_lcp(Q, p, G_fric, h_fric, blocks, tol=tol).x
        vel = x.reshape(batch, k, 3)
        theta = theta + vel[..., 0] * dt
        pos = se2_step(pos, vel[..., 0], vel[..., 1:], dt)
        trajectory.append(pos)
        if on_step is not None:
            on_step()
    return torch.stack(trajectory, 1)
