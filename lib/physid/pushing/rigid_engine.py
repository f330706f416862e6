"""Formulation 2: the object as one rigid body carrying ``k`` ground-friction points.

The object's twist ``[ω, vx, vy]`` at the object-frame origin replaces the ``3k`` cell
velocities of formulation 1 (:mod:`physid.pushing.lcp_engine`); the fixed joints are solved
exactly by construction (cell ``i`` moves with ``v + ω × r_i``). The mass matrix is
``Σ_i J_iᵀ diag(I_i, M_i, M_i) J_i``, the momentum ``Σ_i J_iᵀ diag(I_i, M_i, M_i) v_i`` of the
cell velocities of the previous step, and each cell keeps its own friction block of §5 (same
directions ``D``, bound ``μ_i M_i g dt``) and the pusher contact is the same. So a step is the
LCP of Eq. (2) restricted to rigid motions, and both formulations give the same trajectories
(to the LCP solver's tolerance).

Solver. Every step is classified by what the finger does (the mode is recorded): it does not
push (*free*: a resting object stays at rest, a moving one slides without the finger), it
*sticks*, it *slides*, or it slides while the motion *locks* a cell's velocity on a switch of
``D``; anything else falls back to the coupled interior-point LCP with the finger's rows
(:func:`rigid_lcp_step`). With the contact point's velocity given, a step minimises over the
single angular velocity ω the convex piecewise-quadratic (maximum-dissipation form of the LCP)

    g(ω) = ½ Σ_i [I_i (ω − ω'_i)² + M_i ‖v̄ + ω ẑ×(r_i − r_c) − v'_i‖²]
           + Σ_i μ_i M_i g dt · max_j(−d_j · (v̄ + ω ẑ×(r_i − r_c))),

with primes for the previous step and ``v̄`` the contact point's velocity: the finger's own
for a stick, a root of the cone condition in its slip for a slide.
:func:`line_solve` minimises it exactly: it sorts the breakpoints of the friction terms, finds
the piece where ``g'`` changes sign, and returns the root of that quadratic piece or the
breakpoint (a kink).

Three paths, one step. The classification (which mode, the sliding root, the twist of a free
or sticking step) needs no gradient and runs compiled, per push
(:func:`physid.pushing.rigid_kernel.classify`); where the cone condition has several roots
(it need not be monotone in the slip), the step takes the first from the finger's own slip,
the least slip. A rollout that needs no gradient runs entirely compiled
(:func:`compiled_rollout`), handing back to torch only the steps the kernel does not solve (a
free slide with a cell on a switch of D, the coupled fallback). A rollout that needs a gradient
with respect to the masses and frictions only runs compiled too, recording each step's
decisions, and its backward pass is the compiled adjoint (:func:`adjoint_rollout`,
:mod:`physid.pushing.rigid_adjoint`). Any other gradient, and the pushes with a step the kernel
leaves to torch, run :func:`torch_rollout`: each step's mode and slip from the kernel, the step
recomputed differentiably in torch, vectorised over the batch. Either way gradients are
implicit derivatives, of the optimality condition on the identified piece and of the slide's or
lock's root condition (``_implicit_slip``). The paths give the same trajectories (tests: to
1e-9 m) and the same gradients (to 1e-9, relative).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, fields

import numpy as np
import torch
from torch import Tensor

from physid.pushing import rigid_adjoint, rigid_kernel
from physid.pushing.engine import Scene, Stepping
from physid.pushing.finger import (
    COUPLED,
    FREE,
    LOCK,
    SLIDE,
    STICK,
    ContactRecord,
    FingerRows,
    Recorder,
    finger_contact,
)
from physid.pushing.lcp import Coupling, SolverError, solve_lcp
from physid.pushing.planar import cross, friction_block, friction_directions, perp, se2_step

__all__ = [
    "GRADIENT_PATHS",
    "SLIDE_WALKS",
    "adjoint_rollout",
    "compiled_rollout",
    "line_solve",
    "rigid_lcp_step",
    "rollout",
    "torch_rollout",
]


def line_solve(
    a: Tensor, lin: Tensor, c: Tensor, p: Tensor, q: Tensor, tol: float = 1e-10
) -> tuple[Tensor, Tensor, Tensor]:
    """Exact minimiser of ``½ a ω² + lin ω + Σ_i c_i max_j(p_j + q_ij ω)`` (batched).

    Shapes: ``a, lin (B,)``, ``c (B, k)`` (≥ 0), ``p (B, L)``, ``q (B, k, L)``. The lines are
    those of a regular friction polygon, ``p_j + q_ij ω = −d_j · (v̄ + ω β_i)`` with ``d_j`` in
    angular order, so cell ``i``'s envelope bends only where neighbours ``j, j+1`` tie with a
    positive value (its velocity crosses the bisector of ``−d_j`` and ``−d_{j+1}``), by
    ``c_i |q_ij − q_i,j+1|``. Returns ``ω (B,)`` (differentiable) and the optimality check
    ``g'(ω−) ≤ 0 ≤ g'(ω+)`` (B,) (to a relative 1e-8): it fails only in the degenerate case of
    a cell whose velocity passes through zero, which the caller re-solves. The third output,
    ``weights (B, k, L)`` (differentiable), is the subgradient of each cell's envelope at
    the solution: one-hot on the line attaining it, split between the two lines of a kink so
    that ``g'(ω) = 0``; ``c_i Σ_j weights_ij d_j`` is then cell ``i``'s friction impulse.
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
        onehot = torch.zeros_like(q).scatter(2, line, 1.0)
        kink_cells = torch.zeros_like(c).scatter(1, kink_cell.unsqueeze(1), 1.0)
        kink_cells = kink_cells * at_kink.unsqueeze(1)
        pair_mask = torch.zeros_like(q)
        pair_mask[idx, kink_cell, kink_pair] = 1.0
        next_mask = torch.zeros_like(q)
        next_mask[idx, kink_cell, nxt] = 1.0
    # The kink cell's share between its two lines balances g'(ω) = 0 (differentiable: the
    # friction impulses depend on it).
    q_line = q.gather(2, line).squeeze(2)
    c_kink = c[idx, kink_cell]
    others = (c * q_line).sum(1) - c_kink * q_line[idx, kink_cell]
    share = -(a * omega + lin + others + c_kink * q[idx, kink_cell, nxt]) / (
        c_kink * torch.where(at_kink, denom, 1.0)
    )
    share = torch.where(c_kink > 0, share, 0.5).clamp(0.0, 1.0)
    weights = onehot * (1.0 - kink_cells.unsqueeze(2)) + kink_cells.unsqueeze(2) * (
        share[:, None, None] * pair_mask + (1.0 - share)[:, None, None] * next_mask
    )
    return omega, ok, weights


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
    finger: tuple[Tensor, FingerRows] | None,
    tol: float,
) -> tuple[Tensor, Tensor | None]:
    """One step of formulation 2 by the interior-point LCP solver: the twist (B, 3) and the
    finger's normal impulse (B,) (None without a finger).

    ``arms (B, k, 2)`` world offsets of the cells from the origin, ``bound (B, k)`` the friction
    impulse bounds ``μ_i M_i g dt``, ``momentum (B, 3)`` the generalised momentum, ``finger``
    None or ``(start (B,), rows)``: a first guess of the normal impulse and the finger's
    :class:`~physid.pushing.finger.FingerRows` for the twist, whose Coulomb coupling is solved
    by :func:`~physid.pushing.lcp.solve_lcp`'s scalar root search.
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
    if finger is None:
        return solve_lcp(Q, p, G, h, blocks, tol=tol).x, None
    start, f = finger
    coupling = Coupling(block=1, row=FingerRows.BOUND_ROW, col=FingerRows.NORMAL_COL, mu=f.mu,
                        start=(start / scale.squeeze(1)).unsqueeze(1))
    sol = solve_lcp(Q, p, torch.cat([G, f.G], 1), torch.cat([h, f.h], 1), [*blocks, f.block],
                    tol=tol, coupling=coupling)
    normal = sol.z[:, -4 + FingerRows.NORMAL_COL] * scale.squeeze(1)
    return sol.x, normal


def _momentum(masses, inertia, arms, omega, cell_vel) -> Tensor:
    """Generalised momentum ``Σ_i J_iᵀ diag(I_i, M_i, M_i) [ω', v'_i]`` (B, 3) of the twist."""
    spin = (inertia * omega.unsqueeze(1) + masses * cross(arms, cell_vel)).sum(1)
    return torch.cat([spin.unsqueeze(1), (masses.unsqueeze(2) * cell_vel).sum(1)], 1)


def _moving_contact(masses, inertia, bound, arms, arm, target, omega, cell_vel, dirs, tol):
    """The step with the contact point moving at ``target`` (B, 2), by :func:`line_solve`: the
    new ω (B,), the new velocity of the origin (B, 2), the optimality check (B,) and the
    finger's impulse on the object (B, 2): the linear momentum gained minus the friction's."""
    rel = arms - arm.unsqueeze(1)
    a = (inertia + masses * (rel * rel).sum(2)).sum(1)
    lin = (masses * cross(rel, target.unsqueeze(1) - cell_vel)).sum(1)
    lin = lin - (inertia * omega.unsqueeze(1)).sum(1)
    p_lines = -(target @ dirs.T)
    q_lines = rel @ perp(dirs).T  # −d_j · (ẑ × rel) = rel · (ẑ × d_j)
    new_omega, ok, weights = line_solve(a, lin, bound, p_lines, q_lines, tol)
    v_origin = target - new_omega.unsqueeze(1) * perp(arm)
    new_vel = target.unsqueeze(1) + new_omega[:, None, None] * perp(rel)
    gained = (masses.unsqueeze(2) * (new_vel - cell_vel)).sum(1)
    friction = (bound.unsqueeze(2) * (weights @ dirs)).sum(1)
    return new_omega, v_origin, ok, gained - friction


#: How many pushes of the rollouts that needed a gradient took each path (:func:`rollout`):
#: ``"compiled"``, the compiled step and its compiled adjoint
#: (:mod:`physid.pushing.rigid_adjoint`); ``"torch"``, the torch step, because the kernel left a
#: step of that push to torch (the coupled fallback, a free slide with a cell on a switch of D)
#: or a tensor other than the maps needs a gradient.
GRADIENT_PATHS: dict[str, int] = Counter()

#: How many sliding root searches of the compiled rollouts each walk made
#: (:mod:`physid.pushing.rigid_kernel`): ``"pencils"``, the walk whose pieces cost O(L) but
#: for the cells its scan passes;
#: ``"piece by piece"``, the walk it leaves a search to where the line solve's choice among
#: tied cells decides the root (cells tied across a line of D, a kink share the line solve
#: clipped, a kink cell without friction).
SLIDE_WALKS: dict[str, int] = Counter()


def rollout(
    scene: Scene, stepping: Stepping, on_step: Callable[[], None] | None = None
) -> tuple[Tensor, ContactRecord | None]:
    """Cell positions ``(B, n_steps + 1, k, 2)`` of formulation 2 and the finger's
    :class:`~physid.pushing.finger.ContactRecord` (the contract of :mod:`physid.pushing.engine`,
    the same results as :func:`physid.pushing.lcp_engine.rollout`).

    Pushes on the CPU run compiled (:func:`compiled_rollout`), and where only the masses and
    frictions need a gradient, with the compiled adjoint (:func:`adjoint_rollout`); the rest,
    and slides without a pusher, run the torch step (:func:`torch_rollout`)."""
    if scene.pushes is not None and _compilable(scene):
        return compiled_rollout(scene, stepping, on_step)
    if scene.pushes is not None and _adjoint_applies(scene):
        return adjoint_rollout(scene, stepping, on_step)
    if torch.is_grad_enabled():
        GRADIENT_PATHS["torch"] += scene.batch
    return torch_rollout(scene, stepping, on_step)


def _scene_tensors(scene: Scene) -> dict[str, Tensor]:
    tensors = {"centres": scene.centres, "masses": scene.masses, "frictions": scene.frictions,
               "initial_velocity": scene.initial_velocity, "initial_pose": scene.initial_pose,
               "start": scene.pushes.start, "velocity": scene.pushes.velocity}
    return {name: t for name, t in tensors.items() if t is not None}


def _compilable(scene: Scene) -> bool:
    """Whether no tensor of ``scene`` needs a gradient and all live on the CPU."""
    tensors = _scene_tensors(scene).values()
    grad = torch.is_grad_enabled() and any(t.requires_grad for t in tensors)
    return not grad and all(t.device.type == "cpu" for t in tensors)


def _adjoint_applies(scene: Scene) -> bool:
    """Whether every tensor of ``scene`` lives on the CPU and the maps, and only they, need a
    gradient."""
    tensors = _scene_tensors(scene)
    maps = ("masses", "frictions")
    return (torch.is_grad_enabled()
            and all(t.device.type == "cpu" for t in tensors.values())
            and any(tensors[name].requires_grad for name in maps)
            and not any(t.requires_grad for name, t in tensors.items() if name not in maps))


class _KernelRun:
    """The arrays of one compiled rollout (:func:`physid.pushing.rigid_kernel.run`): its inputs
    from a scene and a stepping, its state, its outputs and, when ``taping``, its tape."""

    def __init__(self, scene: Scene, stepping: Stepping, taping: bool):
        def array(t: Tensor) -> np.ndarray:
            return np.ascontiguousarray(t.detach().cpu().numpy(), dtype=np.float64)

        self.scene, self.stepping = scene, stepping
        self.masses, self.frictions = array(scene.masses), array(scene.frictions)
        self.centres = array(scene.centres)
        batch, k = self.masses.shape
        n_steps = stepping.n_steps
        if scene.initial_pose is None:
            self.theta, self.origin = np.zeros(batch), np.zeros((batch, 2))
        else:
            pose = array(scene.initial_pose)
            self.theta, self.origin = pose[:, 0].copy(), pose[:, 1:].copy()
        twist = array(scene.initial_velocity)
        self.omega, self.v = twist[:, 0].copy(), twist[:, 1:].copy()
        arms = _rotate_numpy(self.theta, self.centres)
        self.cell_vel = self.v[:, None, :] + self.omega[:, None, None] * np.stack(
            [-arms[..., 1], arms[..., 0]], 2)
        self.face_mid, self.face_normal, self.face_side = scene.faces.arrays
        self.dirs = friction_directions(stepping.friction_dirs, scene.masses).cpu().numpy()
        self.start, self.velocity = array(scene.pushes.start), array(scene.pushes.velocity)
        self.next_step = np.zeros(batch, np.int64)
        self.override = np.zeros((batch, 4))
        self.override_mode = np.full(batch, -1, np.int64)
        self.last_normal = np.zeros(batch)
        self.positions = np.empty((batch, n_steps + 1, k, 2))
        self.rec_normal = np.zeros((batch, n_steps))
        self.rec_point = np.zeros((batch, n_steps, 2))
        self.rec_side = np.zeros((batch, n_steps), np.int64)
        self.rec_yaw = np.zeros((batch, n_steps))
        self.rec_mode = np.zeros((batch, n_steps), np.int64)
        self.taping = taping
        shape = (batch, n_steps) if taping else (0, 0)
        self.tape_state = np.zeros((shape[0], shape[1] + taping, 6))
        self.tape_cv = np.zeros((shape[0], shape[1] + taping, k, 2))
        self.tape_int = np.zeros((*shape, 3), np.int64)
        self.tape_float = np.zeros((*shape, 3))
        self.tape_line = np.zeros((*shape, k), np.int64)
        self.skip = np.zeros(batch, np.bool_)
        self.walks = np.zeros(2, np.int64)

    def run(self) -> np.ndarray:
        """Runs every push from its next step until it ends or meets a step the kernel leaves
        to torch; returns the pushes waiting at such a step."""
        scene, stepping, finger = self.scene, self.stepping, self.stepping.finger
        rigid_kernel.run(
            self.centres, self.masses, self.frictions, scene.cell_side, stepping.gravity,
            stepping.dt, stepping.n_steps, self.dirs, stepping.tol, finger.radius,
            finger.friction, self.face_mid, self.face_normal, scene.faces.half, self.face_side,
            self.start, self.velocity, self.theta, self.origin, self.omega, self.v,
            self.cell_vel, self.next_step, self.override, self.override_mode, self.last_normal,
            self.positions, self.rec_normal, self.rec_point, self.rec_side, self.rec_yaw,
            self.rec_mode, self.taping, self.tape_state, self.tape_cv, self.tape_int,
            self.tape_float, self.tape_line, self.walks,
        )
        SLIDE_WALKS["pencils"] += int(self.walks[0])
        SLIDE_WALKS["piece by piece"] += int(self.walks[1])
        self.walks[:] = 0
        return np.nonzero(self.next_step < stepping.n_steps)[0]

    def record(self) -> ContactRecord:
        return ContactRecord(
            touching=torch.as_tensor(self.rec_normal > 0),
            normal_impulse=torch.as_tensor(self.rec_normal),
            point=torch.as_tensor(self.rec_point), side=torch.as_tensor(self.rec_side),
            yaw=torch.as_tensor(self.rec_yaw), mode=torch.as_tensor(self.rec_mode),
        )

    def adjoint(self, grad_positions: Tensor) -> tuple[Tensor, Tensor]:
        """The gradients (B, k) of the masses and frictions from that of the positions
        (:func:`physid.pushing.rigid_adjoint.adjoint`)."""
        scene, stepping, finger = self.scene, self.stepping, self.stepping.finger
        g_masses, g_frictions, status = rigid_adjoint.adjoint(
            self.centres, self.masses, self.frictions, scene.cell_side, stepping.gravity,
            stepping.dt, self.dirs, finger.radius, finger.friction, self.face_mid,
            self.face_normal, scene.faces.half, self.start, self.velocity, self.tape_state,
            self.tape_cv, self.tape_int, self.tape_float, self.tape_line, self.skip,
            np.ascontiguousarray(grad_positions.detach().cpu().numpy(), dtype=np.float64),
        )
        if (status == rigid_adjoint.UNDEFINED).any():
            raise SolverError("the implicit gradient of a sliding step is undefined (a root "
                              "condition does not depend on the slip)")
        like = scene.masses
        return (torch.as_tensor(g_masses, dtype=like.dtype),
                torch.as_tensor(g_frictions, dtype=like.dtype))


class _Adjoint(torch.autograd.Function):
    """The positions of a taped :class:`_KernelRun` as a function of the masses and frictions,
    with the compiled adjoint as its backward."""

    @staticmethod
    def forward(ctx, masses: Tensor, frictions: Tensor, run: _KernelRun) -> Tensor:
        ctx.run = run
        return torch.as_tensor(run.positions, dtype=masses.dtype)

    @staticmethod
    def backward(ctx, grad: Tensor) -> tuple[Tensor, Tensor, None]:
        g_masses, g_frictions = ctx.run.adjoint(grad)
        return g_masses, g_frictions, None


def compiled_rollout(
    scene: Scene, stepping: Stepping, on_step: Callable[[], None] | None = None
) -> tuple[Tensor, ContactRecord]:
    """:func:`rollout` of pushes by the compiled step (:mod:`physid.pushing.rigid_kernel`), no
    gradient. A step the kernel leaves to torch (a free slide of a moving object, the coupled
    fallback) is solved by ``_contact_step`` and the kernel goes on from it; the record's
    modes show which steps those were."""
    if scene.pushes is None:
        raise ValueError("compiled_rollout needs pushes; a free slide runs torch_rollout")
    run = _KernelRun(scene, stepping, taping=False)
    while len(pending := run.run()):
        for step in np.unique(run.next_step[pending]):
            rows = pending[run.next_step[pending] == step]
            w, vel, normal, mode = _torch_contact_step(
                scene, stepping, rows, int(step), run.theta, run.origin, run.omega,
                run.cell_vel, run.last_normal,
            )
            run.override[rows] = np.concatenate([w[:, None], vel, normal[:, None]], 1)
            run.override_mode[rows] = mode
    if on_step is not None:
        for _ in range(stepping.n_steps):
            on_step()
    return torch.as_tensor(run.positions, dtype=scene.masses.dtype), run.record()


def adjoint_rollout(
    scene: Scene, stepping: Stepping, on_step: Callable[[], None] | None = None
) -> tuple[Tensor, ContactRecord]:
    """:func:`rollout` of pushes by the compiled step, differentiable in the masses and
    frictions through the compiled adjoint (:mod:`physid.pushing.rigid_adjoint`). A push with a
    step the kernel leaves to torch runs :func:`torch_rollout` instead, and is counted in
    :data:`GRADIENT_PATHS`."""
    if scene.pushes is None:
        raise ValueError("adjoint_rollout needs pushes; a free slide runs torch_rollout")
    run = _KernelRun(scene, stepping, taping=True)
    pending = run.run()
    run.skip[pending] = True
    positions, record = _Adjoint.apply(scene.masses, scene.frictions, run), run.record()
    GRADIENT_PATHS["compiled"] += scene.batch - len(pending)
    if len(pending):
        GRADIENT_PATHS["torch"] += len(pending)
        rows = torch.as_tensor(pending)
        part, part_record = torch_rollout(scene.select(rows), stepping, on_step)
        positions = positions.index_put((rows,), part)
        record = ContactRecord(**{
            f.name: getattr(record, f.name).index_put((rows,), getattr(part_record, f.name))
            for f in fields(ContactRecord)
        })
    elif on_step is not None:
        for _ in range(stepping.n_steps):
            on_step()
    return positions, record


def _rotate_numpy(theta: np.ndarray, centres: np.ndarray) -> np.ndarray:
    """Object-frame ``centres (k, 2)`` turned by ``theta (B,)``: ``(B, k, 2)``."""
    cos, sin = np.cos(theta)[:, None], np.sin(theta)[:, None]
    return np.stack([cos * centres[:, 0] - sin * centres[:, 1],
                     cos * centres[:, 1] + sin * centres[:, 0]], 2)


def _torch_contact_step(scene, stepping, rows, step, theta, origin, omega, cell_vel,
                        last_normal):
    """``_contact_step`` of the pushes ``rows`` of a compiled rollout at ``step`` (their
    state taken from the kernel's arrays): ω, the origin's velocity, the normal impulse and
    the mode, as numpy arrays."""
    like = scene.masses
    def t(a: np.ndarray) -> Tensor:
        return torch.as_tensor(a[rows], dtype=like.dtype)

    masses, dt = scene.masses[rows].detach(), stepping.dt
    inertia = masses * scene.cell_side**2 / 6.0
    bound = scene.frictions[rows].detach() * masses * (stepping.gravity * dt)
    turn = torch.polar(torch.ones(len(rows), dtype=like.dtype), t(theta))
    centres_c = torch.complex(scene.centres[:, 0], scene.centres[:, 1])
    arms = torch.view_as_real(turn.unsqueeze(1) * centres_c)
    pushes = scene.pushes
    centre = (pushes.start[rows] + pushes.velocity[rows] * (step * dt)).detach()
    _, _, gap, normal, arm = finger_contact(scene.faces, stepping.finger, centre, turn,
                                            t(origin))
    u = pushes.velocity[rows].detach()
    c = _Contact(masses, inertia, bound, arms, t(omega), t(cell_vel), arm, normal,
                 perp(normal), (u * normal).sum(1) - gap / dt, gap, u)
    with torch.no_grad():
        w, v, push_n, mode = _contact_step(c, stepping.finger.friction,
                                          friction_directions(stepping.friction_dirs, like),
                                          stepping.tol, dt, t(last_normal))
    return w.numpy(), v.numpy(), push_n.numpy(), mode.numpy()


def torch_rollout(
    scene: Scene, stepping: Stepping, on_step: Callable[[], None] | None = None
) -> tuple[Tensor, ContactRecord | None]:
    """:func:`rollout` by the torch step, vectorised over the batch and differentiable."""
    masses, pushes, dt, tol = scene.masses, scene.pushes, stepping.dt, stepping.tol
    batch, k = masses.shape
    dirs = friction_directions(stepping.friction_dirs, masses)
    inertia = masses * scene.cell_side**2 / 6.0
    bound = scene.frictions * masses * (stepping.gravity * dt)
    if scene.initial_pose is None:
        theta = masses.new_zeros(batch)
        origin = masses.new_zeros(batch, 2)
    else:
        theta, origin = scene.initial_pose[:, 0], scene.initial_pose[:, 1:]
    omega, v_origin = scene.initial_velocity[:, 0], scene.initial_velocity[:, 1:]
    # Planar rotations as unit complex numbers: fewer autograd nodes per step.
    centres_c = torch.complex(scene.centres[:, 0], scene.centres[:, 1])
    arms0 = torch.view_as_real(torch.polar(torch.ones_like(theta), theta).unsqueeze(1) * centres_c)
    cell_vel = v_origin.unsqueeze(1) + omega[:, None, None] * perp(arms0)
    trajectory = []
    record = Recorder(batch, masses) if pushes is not None else None
    for step in range(stepping.n_steps):
        turn = torch.polar(torch.ones_like(theta), theta)
        arms = torch.view_as_real(turn.unsqueeze(1) * centres_c)
        trajectory.append(origin.unsqueeze(1) + arms)
        if pushes is None:
            momentum = _momentum(masses, inertia, arms, omega, cell_vel)
            twist, _ = rigid_lcp_step(masses, inertia, bound, arms, momentum, dirs, None, tol)
            omega, v_origin = twist[:, 0], twist[:, 1:]
        else:
            omega, v_origin = _finger_step(
                masses, inertia, bound, arms, omega, cell_vel, dirs, tol, stepping.finger,
                scene.faces, pushes, turn, origin, step * dt, dt, record,
            )
        cell_vel = v_origin.unsqueeze(1) + omega[:, None, None] * perp(arms)
        theta = theta + omega * dt
        origin = se2_step(origin, omega, v_origin, dt)
        if on_step is not None:
            on_step()
    turn = torch.polar(torch.ones_like(theta), theta)
    trajectory.append(origin.unsqueeze(1) + torch.view_as_real(turn.unsqueeze(1) * centres_c))
    return torch.stack(trajectory, 1), None if record is None else record.stack()


@dataclass(frozen=True)
class _Contact:
    """The finger's contact at one step, for a sub-batch: everything a step needs."""

    masses: Tensor
    inertia: Tensor
    bound: Tensor
    arms: Tensor
    omega: Tensor
    cell_vel: Tensor
    arm: Tensor
    normal: Tensor
    tangent: Tensor
    closing: Tensor  # the contact point's normal velocity that closes the gap (B,)
    gap: Tensor
    velocity: Tensor  # the finger's (B, 2)

    def __getitem__(self, i: Tensor) -> _Contact:
        return _Contact(*(getattr(self, f.name)[i] for f in fields(self)))

    def target(self, slip: Tensor) -> Tensor:
        """Contact-point velocity closing the gap with tangential velocity ``slip`` (B,)."""
        return self.closing.unsqueeze(1) * self.normal + slip.unsqueeze(1) * self.tangent

    def move(self, slip: Tensor, dirs: Tensor, tol: float):
        """:func:`_moving_contact` with the contact point at :meth:`target` ``(slip)``; the
        impulse as normal and tangential components."""
        omega, v, ok, impulse = _moving_contact(
            self.masses, self.inertia, self.bound, self.arms, self.arm, self.target(slip),
            self.omega, self.cell_vel, dirs, tol,
        )
        return omega, v, ok, (impulse * self.normal).sum(1), (impulse * self.tangent).sum(1)

    def at_rest(self) -> Tensor:
        return (self.omega == 0) & (self.cell_vel == 0).all(2).all(1)

    def momentum(self) -> Tensor:
        return _momentum(self.masses, self.inertia, self.arms, self.omega, self.cell_vel)



def _free_step(c: _Contact, dirs: Tensor, tol: float) -> Tensor:
    """The twist (B, 3) without the finger's force: zero for an object at rest (friction
    holds it), else the interior-point LCP of a free slide."""
    twist = c.masses.new_zeros(len(c.masses), 3)
    moving = torch.nonzero(~c.at_rest()).flatten()
    if len(moving):
        m = c[moving]
        free, _ = rigid_lcp_step(m.masses, m.inertia, m.bound, m.arms, m.momentum(), dirs, None,
                                 tol)
        twist = twist.index_put((moving,), free)
    return twist


def _free_twist(c: _Contact, found: Tensor, dirs: Tensor, tol: float) -> Tensor:
    """The free step's twist (B, 3) of :func:`_classify`'s ``found`` twist, differentiable:
    zero where the object rests or stops (the twist is then zero whatever the parameters), the
    closed form of its smooth piece where every cell slides on one line ``l_i`` of its friction
    polygon (the twist solves ``Q x = p + Σ_i c_i J_iᵀ d_{l_i}``, the optimality condition of
    the free slide on that piece), and the interior-point LCP (:func:`_free_step`) where a
    cell's velocity is on a switch of D."""
    twist = c.masses.new_zeros(len(c.masses), 3)
    with torch.no_grad():
        cell_vel = found[:, None, 1:] + found[:, :1, None] * perp(c.arms)
        values = -(cell_vel @ dirs.T)  # (B, k, L)
        top = values.topk(2, dim=2).values
        speed = cell_vel.norm(dim=2).amax(1)
        strict = ((top[..., 0] - top[..., 1]) > 1e-9 * speed.unsqueeze(1)).all(1)
        moving = (found != 0).any(1)
        line = values.argmax(2)
    smooth = torch.nonzero(moving & strict).flatten()
    if len(smooth):
        m = c[smooth]
        d = dirs[line[smooth]]  # (B, k, 2)
        total = m.masses.sum(1)
        first = (m.masses * m.arms[..., 0]).sum(1)
        second = (m.masses * m.arms[..., 1]).sum(1)
        rot = (m.inertia + m.masses * (m.arms * m.arms).sum(2)).sum(1)
        zero = torch.zeros_like(total)
        Q = torch.stack([torch.stack([rot, -second, first], 1),
                         torch.stack([-second, total, zero], 1),
                         torch.stack([first, zero, total], 1)], 1)
        friction = m.bound.unsqueeze(2) * d
        b = m.momentum() + torch.cat([cross(m.arms, friction).sum(1, keepdim=True),
                                      friction.sum(1)], 1)
        twist = twist.index_put((smooth,), torch.linalg.solve(Q, b))
    rest = torch.nonzero(moving & ~strict).flatten()
    if len(rest):
        twist = twist.index_put((rest,), _free_step(c[rest], dirs, tol))
    return twist


def _separates(c: _Contact, twist: Tensor) -> Tensor:
    """Whether the twist keeps the object off the finger: ``n·(v_c − u) ≥ −gap/Δt``."""
    v_contact = twist[:, 1:] + twist[:, :1] * perp(c.arm)
    return ((v_contact - c.velocity) * c.normal).sum(1) >= (c.closing - (
        c.velocity * c.normal).sum(1)) - 1e-9 * (1 + c.velocity.norm(dim=1))


def _classify(c: _Contact, mu: float, dirs: Tensor, tol: float):
    """The step's mode per push (no gradient), by the compiled step
    (:func:`physid.pushing.rigid_kernel.classify`, which states the order of the decisions):
    :data:`FREE`, :data:`STICK`, :data:`SLIDE`, :data:`LOCK` or :data:`COUPLED` (the
    fallback), the contact point's tangential velocity for the sticking and sliding ones, the
    finger's normal impulse (B,), the twist (B, 3) of the free and sticking steps and, for the
    sliding ones, the slopes (B, 2) of the cone condition and of ω in the slip. A free
    slide the kernel does not solve goes to the interior-point LCP here: free if that keeps
    the object off the finger, else coupled."""
    def array(t: Tensor) -> np.ndarray:
        return np.ascontiguousarray(t.detach().cpu().numpy(), dtype=np.float64)

    contact = torch.cat([c.arm, c.normal, c.closing[:, None], c.omega[:, None], c.velocity], 1)
    found = rigid_kernel.classify(
        float(mu), array(c.masses), array(c.inertia), array(c.bound), array(c.arms),
        array(c.cell_vel), array(contact), array(dirs), float(tol),
    )
    mode, twist, normal, slip, slopes = (torch.as_tensor(x, device=c.masses.device)
                                         for x in found)
    twist, normal, slip, slopes = (x.to(c.masses.dtype) for x in (twist, normal, slip, slopes))
    lcp = torch.nonzero(mode == rigid_kernel.LCP_FREE).flatten()
    if len(lcp):
        free_twist = _free_step(c[lcp], dirs, tol)
        separate = _separates(c[lcp], free_twist)
        mode[lcp] = torch.where(separate, FREE, COUPLED)
        twist[lcp[separate]] = free_twist[separate]
    return mode, slip, normal, twist, slopes


def _finger_step(masses, inertia, bound, arms, omega, cell_vel, dirs, tol, finger, faces,
                 pushes, turn, origin, time, dt, record):
    """One step with the finger (module docstring): find the contact, then
    ``_contact_step``."""
    centre = pushes.start + pushes.velocity * time
    face, near, gap, normal, arm = finger_contact(faces, finger, centre, turn, origin)
    u = pushes.velocity
    c = _Contact(masses, inertia, bound, arms, omega, cell_vel, arm, normal, perp(normal),
                 (u * normal).sum(1) - gap / dt, gap, u)
    new_omega, v_origin, push_n, mode = _contact_step(c, finger.friction, dirs, tol, dt,
                                                     record.last_normal)
    record.add(push_n, near, faces.side[face], torch.angle(turn), mode)
    return new_omega, v_origin


def _contact_step(c: _Contact, mu: float, dirs: Tensor, tol: float, dt: float,
                 last_normal: Tensor) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """The step of B pushes whose finger contacts are ``c``: classify each (:func:`_classify`),
    then take the step of its mode (the classification's own for free and sticking steps when
    no gradient is needed; differentiably otherwise). ``last_normal`` (B,) is the previous
    step's normal impulse (the coupled LCP's first guess). Returns ω (B,), the origin's
    velocity (B, 2), the finger's normal impulse (B,) and the mode (B,)."""
    with torch.no_grad():
        mode, slip, push_n, twist, slopes = _classify(c, mu, dirs, tol)
        # Both contact modes were accepted with λ_n ≥ −(solver tolerance): within it,
        # a negative impulse is none.
        push_n = push_n.clamp(min=0.0)
    grad = _needs_grad(c)
    new_omega, v_origin = twist[:, 0], twist[:, 1:]
    redo = (mode == SLIDE) | (mode == LOCK)
    if grad:
        redo |= mode == STICK
    moving = torch.nonzero(redo).flatten()
    if len(moving):
        m = c[moving]
        # A sticking contact point moves with the finger: its slip follows the turning tangent.
        s = torch.where(mode[moving] == STICK, (m.velocity * m.tangent).sum(1), slip[moving])
        if grad:
            s = _implicit_slip(m, s, mode[moving], slopes[moving], mu, dirs, tol)
        w, v, *_ = m.move(s, dirs, tol)
        new_omega = new_omega.index_put((moving,), w)
        v_origin = v_origin.index_put((moving,), v)
    free = torch.nonzero(mode == FREE).flatten()
    if grad and len(free):
        twist = _free_twist(c[free], twist[free], dirs, tol)
        new_omega = new_omega.index_put((free,), twist[:, 0])
        v_origin = v_origin.index_put((free,), twist[:, 1:])
    coupled = torch.nonzero(mode == COUPLED).flatten()
    if len(coupled):
        m = c[coupled]
        J = torch.cat([perp(m.arm).unsqueeze(2),
                       torch.eye(2, dtype=m.arm.dtype, device=m.arm.device).expand(
                           len(coupled), 2, 2)], 2)
        rows = FingerRows.build(J, m.normal, m.gap, m.velocity, mu, dt)
        twist, lam = rigid_lcp_step(m.masses, m.inertia, m.bound, m.arms, m.momentum(), dirs,
                                    (last_normal[coupled], rows), tol)
        new_omega = new_omega.index_put((coupled,), twist[:, 0])
        v_origin = v_origin.index_put((coupled,), twist[:, 1:])
        lam = torch.where(lam > 10 * tol * m.masses.mean(1), lam, 0.0)  # below tolerance: none
        push_n = push_n.index_put((coupled,), lam.detach())
    return new_omega, v_origin, push_n, mode


def _needs_grad(c: _Contact) -> bool:
    """Whether a gradient may flow through the contact's tensors."""
    return torch.is_grad_enabled() and any(
        getattr(c, f.name).requires_grad for f in fields(c)
    )


def _implicit_slip(c: _Contact, slip: Tensor, mode: Tensor, slopes: Tensor, mu: float,
                   dirs: Tensor, tol: float) -> Tensor:
    """``slip`` with the implicit derivative of the sliding and locked roots attached (values
    unchanged): for a root of a condition ``h(s, θ) = 0``, ``ds/dθ = −(∂h/∂θ)/(∂h/∂s)``
    (implicit function theorem; ``∂h/∂s`` on the line solver's piece, from the
    classification's ``slopes`` (B, 2) of the cone condition and of ω in the slip).

    A sliding root solves ``h = p_t − σ μ p_n`` (the impulse on the cone's edge). A locked
    root is set by kinematics: the locked cell's velocity stays on the switch between two
    directions of D, ``h = (d_j − d_{j+1})·v_i``, with the cell and switch the ones its
    velocity lies on."""
    i = torch.nonzero((mode == SLIDE) | (mode == LOCK)).flatten()
    if not len(i):
        return slip
    m = c[i]
    leaf = slip[i].detach()
    w, _, _, p_n, p_t = m.move(leaf, dirs, tol)
    sign = torch.where(p_t.detach() > 0, 1.0, -1.0).to(leaf.dtype)
    f = p_t - sign * mu * p_n
    f_slope, w_slope = slopes[i, 0], slopes[i, 1]
    lever = perp(m.arms - m.arm.unsqueeze(1))
    vel = m.target(leaf).unsqueeze(1) + w[:, None, None] * lever  # (B, k, 2)
    switch = dirs - dirs.roll(-1, 0)
    off = (vel @ switch.T).flatten(1)  # (B, k·L): each velocity's offset from each switch
    with torch.no_grad():
        # The locked cell: its velocity is on a switch that the slip moves it across (the
        # line solver's own kink cell stays on its switch whatever the slip: excluded).
        moves = (m.tangent.unsqueeze(1) + w_slope[:, None, None] * lever) @ switch.T
        moves = moves.flatten(1)
        speed = vel.norm(dim=2).repeat_interleave(len(dirs), 1)
        rate = off.abs() / (speed + 1e-300)
        crosses = moves.abs() > 1e-6 * (moves.abs().amax(1, keepdim=True))
        nearest = torch.where(crosses, rate, torch.inf).argmin(1, keepdim=True)
    locked = mode[i] == LOCK
    h = torch.where(locked, off.gather(1, nearest).squeeze(1), f)
    slope = torch.where(locked, moves.gather(1, nearest).squeeze(1), f_slope)
    if not bool((torch.isfinite(slope) & (slope != 0)).all()):
        raise SolverError("the implicit gradient of a sliding step is undefined (a root "
                          "condition does not depend on the slip)")
    corrected = leaf.detach() - (h - h.detach()) / slope
    return slip.index_put((i,), corrected)


