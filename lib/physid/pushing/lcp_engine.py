"""Formulation 1, "as written": every cell is its own body, tied by fixed joints (Figure 2).

Each of the ``k`` cells is a planar body with velocity ``[ω_i, vx_i, vy_i]`` and mass matrix
``diag(I_i, M_i, M_i)`` (``I_i = M_i a²/6``). One time step solves the LCP of Figure 2 /
Eq. (2) of Song & Boularias with :func:`physid.pushing.lcp.solve_lcp`:

* ``J_e``: fixed joints, three rows per non-reference cell tying it to the reference cell (the
  one nearest the centroid): ``ω_i = ω_r`` and ``v_i = v_r + ω_r × (p_i − p_r)``;
* ``J_c``: the finger (:mod:`physid.pushing.finger`), a kinematic disc moving at the push
  velocity ``u``. Every step the engine finds the boundary point nearest the finger's centre,
  on the cell owning that face, and adds the rows of
  :class:`~physid.pushing.finger.FingerRows`: a one-sided, inelastic normal row
  (``λ_n ≥ 0``, restitution 0, closing any gap over the step) and Coulomb friction at the
  finger, ``|λ_t| ≤ μ_c λ_n``, written as a friction block like the ground's with the unknown
  normal impulse in its bound: the ``μ_f`` entry of Figure 2. That entry makes the LCP
  non-monotone, so :func:`~physid.pushing.lcp.solve_lcp` solves it as a scalar root in
  ``λ_n`` (each round a monotone LCP), started from the previous step's impulse, and
  differentiates the coupled system exactly. Impulses below the solver's tolerance count as
  zero: the finger touches when it pushes.
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

from collections.abc import Callable

import torch
from torch import Tensor

from physid.pushing.engine import Scene, Stepping
from physid.pushing.finger import (
    COUPLED,
    ContactRecord,
    FingerRows,
    Recorder,
    finger_contact,
)
from physid.pushing.lcp import Coupling, solve_lcp
from physid.pushing.planar import friction_block, friction_directions, perp, rotate, se2_step

__all__ = ["rollout"]


def rollout(
    scene: Scene, stepping: Stepping, on_step: Callable[[], None] | None = None
) -> tuple[Tensor, ContactRecord | None]:
    """Cell positions ``(B, n_steps + 1, k, 2)`` of formulation 1, one LCP (Eq. (2)) per step,
    and what the finger did (a :class:`~physid.pushing.finger.ContactRecord`, None without
    pushes).

    What is simulated and how are a :class:`~physid.pushing.engine.Scene` and a
    :class:`~physid.pushing.engine.Stepping` (checked when they were made); ``on_step`` is
    called after every step.
    """
    centres, masses, pushes, faces = scene.centres, scene.masses, scene.pushes, scene.faces
    dt, tol, finger = stepping.dt, stepping.tol, stepping.finger
    batch, k = masses.shape
    n_dirs, n = stepping.friction_dirs, 3 * k
    dirs = friction_directions(n_dirs, masses)
    scale = masses.mean(1, keepdim=True)
    inertia = masses * scene.cell_side**2 / 6.0
    mass_diag = torch.stack([inertia, masses, masses], 2).reshape(batch, n)
    Q = torch.diag_embed(mass_diag / scale)
    bound = scene.frictions * masses * (stepping.gravity * dt) / scale  # μ_i M_i g dt, scaled

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

    if scene.initial_pose is None:
        theta = masses.new_zeros(batch, k)
        arms = centres.expand(batch, k, 2)
        pos = arms
    else:
        theta = scene.initial_pose[:, :1].expand(batch, k)
        arms = rotate(theta, centres.expand(batch, k, 2))
        pos = scene.initial_pose[:, None, 1:] + arms
    omega0, v0 = scene.initial_velocity[:, :1], scene.initial_velocity[:, 1:]
    vel = torch.cat([omega0.expand(batch, k).unsqueeze(2),
                     (v0.unsqueeze(1) + omega0.unsqueeze(2) * perp(arms))], 2)
    idx = torch.arange(batch, device=masses.device)
    eye = torch.eye(2, dtype=masses.dtype, device=masses.device).expand(batch, 2, 2)
    record = None if pushes is None else Recorder(batch, masses)
    trajectory = [pos]
    for step in range(stepping.n_steps):
        lever = pos[:, others] - pos[:, ref : ref + 1]
        A = A_joint.expand(batch, -1, -1).clone()
        A[:, rows[:, 1], 3 * ref] = lever[..., 1]
        A[:, rows[:, 2], 3 * ref] = -lever[..., 0]
        b = masses.new_zeros(batch, n_joint)
        p = -mass_diag * vel.reshape(batch, n) / scale
        if not n_joint:
            A = b = None  # a single cell has no joints
        if pushes is None:
            x = solve_lcp(Q, p, G_fric, h_fric, blocks, A, b, tol=tol).x
        else:
            # The object frame is carried by the reference cell (the joints keep it rigid).
            turn = torch.polar(torch.ones_like(theta[:, ref]), theta[:, ref])
            origin = pos[:, ref] - torch.view_as_real(turn * torch.complex(*centres[ref]))
            centre = pushes.start + pushes.velocity * (step * dt)
            face, near, gap, normal, arm = finger_contact(faces, finger, centre, turn, origin)
            cell = faces.cell[face]
            lever_c = arm + origin - pos[idx, cell]
            J_cell = torch.cat([perp(lever_c).unsqueeze(2), eye], 2)  # (B, 2, 3)
            J = masses.new_zeros(batch, 2, k, 3)
            J[idx, :, cell] = J_cell
            f = FingerRows.build(J.reshape(batch, 2, n), normal, gap, pushes.velocity,
                                 finger.friction, dt)
            coupling = Coupling(block=1, row=FingerRows.BOUND_ROW, col=FingerRows.NORMAL_COL,
                                mu=f.mu, start=(record.last_normal / scale.squeeze(1)).unsqueeze(1))
            sol = solve_lcp(Q, p, torch.cat([G_fric.expand(batch, -1, -1), f.G], 1),
                            torch.cat([h_fric, f.h], 1), [*blocks, f.block], A, b, tol=tol,
                            coupling=coupling)
            x = sol.x
            # The interior point never returns an exact zero: below its tolerance is none.
            lam = sol.z[:, -4 + FingerRows.NORMAL_COL]
            lam = torch.where(lam > 10 * tol, lam, 0.0) * scale.squeeze(1)
            record.add(lam, near, faces.side[face], theta[:, ref], COUPLED)
        vel = x.reshape(batch, k, 3)
        theta = theta + vel[..., 0] * dt
        pos = se2_step(pos, vel[..., 0], vel[..., 1:], dt)
        trajectory.append(pos)
        if on_step is not None:
            on_step()
    return torch.stack(trajectory, 1), None if record is None else record.stack()
