"""The adjoint of the compiled rigid step: the gradient of a rollout with respect to every cell's
mass and friction, compiled with numba, from the decisions the forward run taped.

The forward run (:func:`physid.pushing.rigid_kernel.run` with ``taping``) keeps, for every step,
the state at its start and what it decided: the mode, the slip, each cell's line of the line
solver's piece, the kink cell and the slopes of the root condition. On that piece a step is a
smooth function of the state and the parameters, and :func:`adjoint` runs the steps backwards,
accumulating ``∂L/∂M_i`` and ``∂L/∂μ_i`` from ``∂L/∂positions``. It is the reverse-mode form of
what :func:`physid.pushing.rigid_engine.torch_rollout` builds as an autograd graph, step by step
(the tests hold the two equal to 1e-9, and to finite differences):

* the state update: ``v'_i = v + ω ẑ×r_i``, ``θ' = θ + ω Δt``, the origin's exact SE(2) flow;
* a sticking, sliding or locked step (``_piece_vjp``): on the piece, ω is the root of the
  quadratic piece, ``ω = −(lin + Σ_i c_i q_{i,l_i}) / a``, or the kink
  ``ω = (p_{j+1} − p_j) / (q_{κ,j} − q_{κ,j+1})``, and the kink cell's share balances
  ``g'(ω) = 0`` (:func:`physid.pushing.rigid_engine.line_solve`); the finger's impulse is the
  momentum gained minus the friction's. The slip of a slide or lock is a root ``h(s, θ) = 0``,
  whose derivative is ``ds/dθ = −(∂h/∂θ)/(∂h/∂s)`` (implicit function theorem; ``∂h/∂s`` from
  the forward run's slopes): ``h = p_t − σ μ p_n`` for a slide, the locked cell's velocity
  across its switch ``(d_j − d_{j+1})·v_i`` for a lock;
* a free slide (``_free_vjp``): ``x = Q⁻¹ (p + Σ_i c_i J_iᵀ d_{l_i})``;
* the finger's contact (``_contact_vjp``): the nearest point of the nearest face (the face
  and whether the point is at its end are decisions), its normal and the gap.

Each step costs a few passes over the cells (about the forward's sticking step), so the
gradient costs a small multiple of the forward run rather than the torch step's ~1.8 ms per step.
Steps the forward leaves to torch (the coupled fallback, a free slide with a cell on a switch of
D) have no tape: :func:`physid.pushing.rigid_engine.adjoint_rollout` then takes the torch path
for those pushes and counts them (:data:`physid.pushing.rigid_engine.GRADIENT_PATHS`).
"""

from __future__ import annotations

import math

import numba
import numpy as np

from physid.pushing.rigid_kernel import (
    FREE,
    LOCK,
    SLIDE,
    STICK,
    mass_matrix_inverse,
    nearest_face,
)

__all__ = ["UNDEFINED", "adjoint"]

#: :func:`adjoint`'s status of a push whose slide or lock has a root condition that does not
#: depend on the slip (its implicit derivative is undefined); 0 otherwise.
UNDEFINED = 1

_jit = numba.njit(cache=True, fastmath=False, nogil=True)


@_jit
def _q(rel, i, dirs, j):
    """``q_ij = rel_i · (ẑ × d_j)``: the slope in ω of cell ``i``'s line ``j``."""
    return rel[i, 1] * dirs[j, 0] - rel[i, 0] * dirs[j, 1]


@_jit
def _q_vjp(g_rel, i, dirs, j, g):
    """Adds ``g ∂q_ij/∂rel_i`` to ``g_rel[i]``."""
    g_rel[i, 0] -= g * dirs[j, 1]
    g_rel[i, 1] += g * dirs[j, 0]


@_jit
def _piece(masses, inertia, bound, rel, tx, ty, cell_vel, w_p, dirs, line, kc, kp):
    """On the line solver's piece (each cell on ``line[i]``, or the kink of cell ``kc`` between
    its lines ``kp`` and ``kp + 1``; ``kc = −1`` off a kink), with the contact point moving at
    ``(tx, ty)``: ``a``, ``lin``, the friction slope ``Σ_{i≠kc} c_i q_{i,l_i}``, ω, the kink's
    denominator ``q_{κ,j} − q_{κ,j+1}`` (1 off a kink), the kink cell's unclamped share and the
    finger's impulse on the object (x, y)."""
    k = masses.shape[0]
    n_lines = dirs.shape[0]
    a = lin = total = sum_i = 0.0
    for i in range(k):
        rx, ry = rel[i, 0], rel[i, 1]
        a += inertia[i] + masses[i] * (rx * rx + ry * ry)
        lin += masses[i] * (rx * (ty - cell_vel[i, 1]) - ry * (tx - cell_vel[i, 0]))
        sum_i += inertia[i]
        if i != kc:
            total += bound[i] * _q(rel, i, dirs, line[i])
    lin -= w_p * sum_i
    nxt = (kp + 1) % n_lines
    den = 1.0
    raw = 0.0
    if kc >= 0:
        den = _q(rel, kc, dirs, kp) - _q(rel, kc, dirs, nxt)
        p_k = -(tx * dirs[kp, 0] + ty * dirs[kp, 1])
        p_n = -(tx * dirs[nxt, 0] + ty * dirs[nxt, 1])
        w = (p_n - p_k) / den
        c_k = bound[kc]
        if c_k > 0:
            raw = -(a * w + lin + total + c_k * _q(rel, kc, dirs, nxt)) / (c_k * den)
        else:
            raw = 0.5
    else:
        w = -(lin + total) / a
    share = min(max(raw, 0.0), 1.0)
    ix = iy = 0.0
    for i in range(k):
        ix += masses[i] * (tx - w * rel[i, 1] - cell_vel[i, 0])
        iy += masses[i] * (ty + w * rel[i, 0] - cell_vel[i, 1])
        if i == kc:
            ix -= bound[i] * (share * dirs[kp, 0] + (1.0 - share) * dirs[nxt, 0])
            iy -= bound[i] * (share * dirs[kp, 1] + (1.0 - share) * dirs[nxt, 1])
        else:
            ix -= bound[i] * dirs[line[i], 0]
            iy -= bound[i] * dirs[line[i], 1]
    return a, lin, total, w, den, raw, ix, iy


@_jit
def _piece_vjp(g_w, g_ix, g_iy, masses, inertia, bound, rel, tx, ty, cell_vel, w_p, dirs, line,
               kc, kp, g_rel, g_cv, g_m, g_i, g_c):
    """The vector–Jacobian product of :func:`_piece`'s ω and impulse (cotangents ``g_w``,
    ``(g_ix, g_iy)``): adds to ``g_rel``, ``g_cv`` (k, 2) and ``g_m``, ``g_i``, ``g_c`` (k,) (the
    masses, the rotational inertias, the friction bounds ``c_i``) and returns the cotangents
    of the contact point's velocity (x, y) and of the previous ω, and the impulse (x, y)."""
    k = masses.shape[0]
    n_lines = dirs.shape[0]
    a, lin, total, w, den, raw, ix, iy = _piece(masses, inertia, bound, rel, tx, ty, cell_vel, w_p,
                                             dirs, line, kc, kp)
    nxt = (kp + 1) % n_lines
    share = min(max(raw, 0.0), 1.0)
    g_tx = g_ty = g_a = g_lin = g_den = g_share = 0.0
    # The impulse Σ_i M_i (v̄ + ω ẑ×rel_i − v'_i) − Σ_i c_i f_i.
    if g_ix != 0 or g_iy != 0:
        sum_m = 0.0
        for i in range(k):
            m = masses[i]
            sum_m += m
            g_m[i] += (g_ix * (tx - w * rel[i, 1] - cell_vel[i, 0])
                       + g_iy * (ty + w * rel[i, 0] - cell_vel[i, 1]))
            g_w += m * (g_iy * rel[i, 0] - g_ix * rel[i, 1])
            g_rel[i, 0] += m * w * g_iy
            g_rel[i, 1] -= m * w * g_ix
            g_cv[i, 0] -= m * g_ix
            g_cv[i, 1] -= m * g_iy
            if i == kc:
                g_c[i] -= (g_ix * (share * dirs[kp, 0] + (1.0 - share) * dirs[nxt, 0])
                           + g_iy * (share * dirs[kp, 1] + (1.0 - share) * dirs[nxt, 1]))
                g_share -= bound[i] * (g_ix * (dirs[kp, 0] - dirs[nxt, 0])
                                       + g_iy * (dirs[kp, 1] - dirs[nxt, 1]))
            else:
                g_c[i] -= g_ix * dirs[line[i], 0] + g_iy * dirs[line[i], 1]
        g_tx += sum_m * g_ix
        g_ty += sum_m * g_iy
    # The kink cell's share, −(aω + lin + Σ_{i≠κ} c_i q_{i,l_i} + c_κ q_{κ,j+1}) / (c_κ den),
    # where it is not clamped (torch's clamp passes the gradient at its ends).
    c_k = bound[kc] if kc >= 0 else 0.0
    if kc >= 0 and c_k > 0 and 0.0 <= raw <= 1.0 and g_share != 0:
        scale = c_k * den
        g_n = -g_share / scale
        g_scale = -g_share * raw / scale
        g_c[kc] += g_scale * den
        g_den += g_scale * c_k
        g_a += g_n * w
        g_w += g_n * a
        g_lin += g_n
        for i in range(k):
            if i != kc:
                g_c[i] += g_n * _q(rel, i, dirs, line[i])
                _q_vjp(g_rel, i, dirs, line[i], g_n * bound[i])
        g_c[kc] += g_n * _q(rel, kc, dirs, nxt)
        _q_vjp(g_rel, kc, dirs, nxt, g_n * c_k)
    # ω on the piece.
    if kc >= 0:
        g_pn = g_w / den
        g_den -= g_w * w / den
        g_tx -= g_pn * (dirs[nxt, 0] - dirs[kp, 0])
        g_ty -= g_pn * (dirs[nxt, 1] - dirs[kp, 1])
        _q_vjp(g_rel, kc, dirs, kp, g_den)
        _q_vjp(g_rel, kc, dirs, nxt, -g_den)
    else:
        g_s = -g_w / a
        g_a -= g_w * w / a
        g_lin += g_s
        for i in range(k):
            g_c[i] += g_s * _q(rel, i, dirs, line[i])
            _q_vjp(g_rel, i, dirs, line[i], g_s * bound[i])
    # a = Σ_i I_i + M_i |rel_i|² and lin = Σ_i M_i rel_i × (v̄ − v'_i) − ω' Σ_i I_i.
    sum_i = 0.0
    for i in range(k):
        m, rx, ry = masses[i], rel[i, 0], rel[i, 1]
        sum_i += inertia[i]
        ux, uy = tx - cell_vel[i, 0], ty - cell_vel[i, 1]
        g_i[i] += g_a - g_lin * w_p
        g_m[i] += g_a * (rx * rx + ry * ry) + g_lin * (rx * uy - ry * ux)
        g_rel[i, 0] += 2.0 * g_a * m * rx + g_lin * m * uy
        g_rel[i, 1] += 2.0 * g_a * m * ry - g_lin * m * ux
        g_tx -= g_lin * m * ry
        g_ty += g_lin * m * rx
        g_cv[i, 0] += g_lin * m * ry
        g_cv[i, 1] -= g_lin * m * rx
    return g_tx, g_ty, -g_lin * sum_i, ix, iy


@_jit
def _free_vjp(g_w, g_vx, g_vy, w, vx, vy, masses, inertia, bound, arms, cell_vel, w_p, dirs, line,
              g_arms, g_cv, g_m, g_i, g_c):
    """The vector–Jacobian product of a free slide's twist ``x = Q⁻¹ b`` on its piece (each cell
    on ``line[i]``; :func:`physid.pushing.rigid_kernel._free_slide`): ``b̄ = Q⁻¹ x̄``,
    ``Q̄ = −b̄ xᵀ``, carried to the cells; returns the previous ω's cotangent."""
    k = masses.shape[0]
    i00, i01, i02, i11, i12, i22 = mass_matrix_inverse(masses, inertia, arms)
    b0 = i00 * g_w + i01 * g_vx + i02 * g_vy
    b1 = i01 * g_w + i11 * g_vx + i12 * g_vy
    b2 = i02 * g_w + i12 * g_vx + i22 * g_vy
    # Q = [[rot, −second, first], [−second, total, 0], [first, 0, total]].
    g_rot = -b0 * w
    g_second = b0 * vx + b1 * w
    g_first = -(b0 * vy + b2 * w)
    g_total = -(b1 * vx + b2 * vy)
    for i in range(k):
        m, ax, ay = masses[i], arms[i, 0], arms[i, 1]
        cx, cy = cell_vel[i, 0], cell_vel[i, 1]
        dx, dy = dirs[line[i], 0], dirs[line[i], 1]
        g_m[i] += (g_total + g_first * ax + g_second * ay + g_rot * (ax * ax + ay * ay)
                   + b0 * (ax * cy - ay * cx) + b1 * cx + b2 * cy)
        g_i[i] += g_rot + b0 * w_p
        g_arms[i, 0] += g_first * m + 2.0 * g_rot * m * ax + b0 * (m * cy + bound[i] * dy)
        g_arms[i, 1] += g_second * m + 2.0 * g_rot * m * ay - b0 * (m * cx + bound[i] * dx)
        g_cv[i, 0] += (b1 - b0 * ay) * m
        g_cv[i, 1] += (b2 + b0 * ax) * m
        g_c[i] += b0 * (ax * dy - ay * dx) + b1 * dx + b2 * dy
    return b0 * inertia.sum()


@_jit
def _contact_vjp(theta, rx, ry, near_x, near_y, dist, tan_x, tan_y, inside, g_ax, g_ay, g_nx,
                 g_ny, g_gap):
    """The contact's vector–Jacobian product: from the cotangents of the contact point's offset
    ``R c`` (``g_ax``, ``g_ay``), the world normal ``R (c − r)/|c − r|`` and the gap ``|c − r| −
    radius`` to those of θ and the origin (x, y)."""
    cos, sin = math.cos(theta), math.sin(theta)
    gap0 = max(dist, 1e-12)
    tox, toy = (near_x - rx) / gap0, (near_y - ry) / gap0
    arm_x, arm_y = cos * near_x - sin * near_y, cos * near_y + sin * near_x
    n_x, n_y = cos * tox - sin * toy, cos * toy + sin * tox
    g_theta = -g_ax * arm_y + g_ay * arm_x - g_nx * n_y + g_ny * n_x
    g_cx = cos * g_ax + sin * g_ay
    g_cy = -sin * g_ax + cos * g_ay
    g_tox = cos * g_nx + sin * g_ny
    g_toy = -sin * g_nx + cos * g_ny
    along = g_tox * tox + g_toy * toy if dist > 1e-12 else 0.0
    g_ex = (g_tox - along * tox) / gap0
    g_ey = (g_toy - along * toy) / gap0
    if dist > 0:
        g_ex += g_gap * tox
        g_ey += g_gap * toy
    g_cx += g_ex
    g_cy += g_ey
    g_rx, g_ry = -g_ex, -g_ey
    if inside:
        on = g_cx * tan_x + g_cy * tan_y
        g_rx += on * tan_x
        g_ry += on * tan_y
    g_theta += g_rx * ry - g_ry * rx
    return g_theta, -(cos * g_rx - sin * g_ry), -(sin * g_rx + cos * g_ry)


@_jit
def _lock_condition(rel, tx, ty, nx, ny, w, w_slope, dirs):
    """The locked cell and switch of :func:`physid.pushing.rigid_engine._implicit_slip`: among
    the cells' velocities whose offset from a switch the slip moves, the one nearest (relative
    to its speed). Returns the cell, the switch and the condition's slope in the slip."""
    k = rel.shape[0]
    n_lines = dirs.shape[0]
    tan_x, tan_y = -ny, nx
    largest = 0.0
    for i in range(k):
        lx, ly = -rel[i, 1], rel[i, 0]
        for j in range(n_lines):
            jn = (j + 1) % n_lines
            sx, sy = dirs[j, 0] - dirs[jn, 0], dirs[j, 1] - dirs[jn, 1]
            largest = max(largest, abs((tan_x + w_slope * lx) * sx + (tan_y + w_slope * ly) * sy))
    best = math.inf
    cell = switch = 0
    slope = 0.0
    for i in range(k):
        lx, ly = -rel[i, 1], rel[i, 0]
        vx, vy = tx + w * lx, ty + w * ly
        speed = math.sqrt(vx * vx + vy * vy)
        for j in range(n_lines):
            jn = (j + 1) % n_lines
            sx, sy = dirs[j, 0] - dirs[jn, 0], dirs[j, 1] - dirs[jn, 1]
            moves = (tan_x + w_slope * lx) * sx + (tan_y + w_slope * ly) * sy
            if abs(moves) > 1e-6 * largest:
                rate = abs(vx * sx + vy * sy) / (speed + 1e-300)
                if rate < best:
                    best, cell, switch, slope = rate, i, j, moves
    return cell, switch, slope


@_jit
def _flow(w, dt):
    """The SE(2) flow of :func:`physid.pushing.planar.se2_step`, ``Δx = (f_x v_x − f_y v_y, f_x
    v_y + f_y v_x)``: ``f_x``, ``f_y`` and their derivatives in ω."""
    h = w * (dt / 2)
    if abs(h) > 1e-4:
        sinc = math.sin(h) / h
        d_sinc = (h * math.cos(h) - math.sin(h)) / (h * h)
    else:
        sinc = 1.0 - h * h / 6.0
        d_sinc = -h / 3.0 + h * h * h / 30.0
    ch, sh = math.cos(h), math.sin(h)
    return (dt * sinc * ch, dt * sinc * sh, dt * (dt / 2) * (d_sinc * ch - sinc * sh),
            dt * (dt / 2) * (d_sinc * sh + sinc * ch))


@_jit
def adjoint(centres, masses, frictions, cell_side, gravity, dt, dirs, radius, mu, face_mid,
            face_normal, half, start, velocity, tape_state, tape_cv, tape_int, tape_float,
            tape_line, skip, grad_positions):
    """``∂L/∂masses`` and ``∂L/∂frictions`` (B, k) of a taped rollout (module docstring) from
    ``grad_positions`` (B, T + 1, k, 2), and a status per push (0, or :data:`UNDEFINED`).

    The arguments are :func:`physid.pushing.rigid_kernel.run`'s: the object (``centres``,
    ``cell_side``), the maps, the stepping, the finger (``radius``, ``mu``), the faces, the
    pushes (``start``, ``velocity``) and the tape; pushes where ``skip`` (B,) is set (their tape
    is not whole) get no gradient."""
    batch, k = masses.shape
    n_steps = tape_int.shape[1]
    g_masses = np.zeros((batch, k))
    g_frictions = np.zeros((batch, k))
    status = np.zeros(batch, np.int64)
    inertia, bound = np.empty(k), np.empty(k)
    arms, rel = np.empty((k, 2)), np.empty((k, 2))
    g_arms, g_rel, g_cv, g_next = (np.empty((k, 2)), np.empty((k, 2)), np.empty((k, 2)),
                                   np.empty((k, 2)))
    g_m, g_i, g_c = np.empty(k), np.empty(k), np.empty(k)
    for b in range(batch):
        if skip[b]:
            continue
        for i in range(k):
            inertia[i] = masses[b, i] * cell_side**2 / 6.0
            bound[i] = frictions[b, i] * masses[b, i] * (gravity * dt)
        g_m[:] = 0.0
        g_i[:] = 0.0
        g_c[:] = 0.0
        g_next[:] = 0.0
        g_theta = g_ox = g_oy = g_omega = 0.0
        ux, uy = velocity[b, 0], velocity[b, 1]
        for step in range(n_steps, -1, -1):
            theta = tape_state[b, step, 0]
            cos, sin = math.cos(theta), math.sin(theta)
            for i in range(k):
                arms[i, 0] = cos * centres[i, 0] - sin * centres[i, 1]
                arms[i, 1] = cos * centres[i, 1] + sin * centres[i, 0]
            g_arms[:] = 0.0
            if step < n_steps:
                # The state update: v'_i = v + ω ẑ×r_i, θ' = θ + ω Δt, the origin's flow.
                w, vx, vy = (tape_state[b, step + 1, 3], tape_state[b, step + 1, 4],
                             tape_state[b, step + 1, 5])
                g_w = g_omega + dt * g_theta
                g_vx = g_vy = 0.0
                for i in range(k):
                    gx, gy = g_next[i, 0], g_next[i, 1]
                    g_vx += gx
                    g_vy += gy
                    g_w += gy * arms[i, 0] - gx * arms[i, 1]
                    g_arms[i, 0] += w * gy
                    g_arms[i, 1] -= w * gx
                f_x, f_y, df_x, df_y = _flow(w, dt)
                g_vx += f_x * g_ox + f_y * g_oy
                g_vy += f_x * g_oy - f_y * g_ox
                g_w += df_x * (vx * g_ox + vy * g_oy) + df_y * (vx * g_oy - vy * g_ox)
                # The step itself: cotangents of this step's state (ω, cell velocities).
                g_omega = 0.0
                g_cv[:] = 0.0
                mode = tape_int[b, step, 0]
                line = tape_line[b, step]
                w_p = tape_state[b, step, 3]
                cell_vel = tape_cv[b, step]
                if mode == FREE:
                    if w != 0 or vx != 0 or vy != 0:
                        g_omega += _free_vjp(g_w, g_vx, g_vy, w, vx, vy, masses[b], inertia,
                                             bound, arms, cell_vel, w_p, dirs, line, g_arms,
                                             g_cv, g_m, g_i, g_c)
                else:
                    ox, oy = tape_state[b, step, 1], tape_state[b, step, 2]
                    rx, ry, face, near_x, near_y, dist, inside = nearest_face(
                        theta, ox, oy, start[b, 0] + ux * (step * dt),
                        start[b, 1] + uy * (step * dt), face_mid, face_normal, half)
                    tan_x, tan_y = -face_normal[face, 1], face_normal[face, 0]
                    gap0 = max(dist, 1e-12)
                    tox, toy = (near_x - rx) / gap0, (near_y - ry) / gap0
                    nx, ny = cos * tox - sin * toy, cos * toy + sin * tox
                    arm_x, arm_y = cos * near_x - sin * near_y, cos * near_y + sin * near_x
                    closing = ux * nx + uy * ny - (dist - radius) / dt
                    s = tape_float[b, step, 0]
                    kc, kp = tape_int[b, step, 1], tape_int[b, step, 2]
                    t_x, t_y = -ny, nx
                    tx, ty = closing * nx + s * t_x, closing * ny + s * t_y
                    for i in range(k):
                        rel[i, 0] = arms[i, 0] - arm_x
                        rel[i, 1] = arms[i, 1] - arm_y
                    g_rel[:] = 0.0
                    # v = v̄ − ω ẑ×arm.
                    g_ax, g_ay = -g_vy * w, g_vx * w
                    g_w += g_vx * arm_y - g_vy * arm_x
                    g_tx, g_ty, g_wp, ix, iy = _piece_vjp(
                        g_w, 0.0, 0.0, masses[b], inertia, bound, rel, tx, ty, cell_vel, w_p,
                        dirs, line, kc, kp, g_rel, g_cv, g_m, g_i, g_c)
                    g_tx += g_vx
                    g_ty += g_vy
                    g_omega += g_wp
                    g_s = g_tx * t_x + g_ty * t_y
                    g_tx2 = g_ty2 = 0.0
                    g_tanx, g_tany = s * g_tx, s * g_ty
                    g_nx, g_ny = closing * g_tx, closing * g_ty
                    g_closing = g_tx * nx + g_ty * ny
                    if mode == STICK:
                        g_tanx += g_s * ux
                        g_tany += g_s * uy
                    elif mode == SLIDE or mode == LOCK:
                        if mode == SLIDE:
                            slope = tape_float[b, step, 1]
                        else:
                            cell, switch, slope = _lock_condition(rel, tx, ty, nx, ny, w,
                                                                  tape_float[b, step, 2], dirs)
                        if not (math.isfinite(slope) and slope != 0):
                            status[b] = UNDEFINED
                            break
                        g_h = -g_s / slope
                        if mode == SLIDE:
                            sigma = 1.0 if ix * t_x + iy * t_y > 0 else -1.0
                            g_ix = g_h * (t_x - sigma * mu * nx)
                            g_iy = g_h * (t_y - sigma * mu * ny)
                            g_tanx += g_h * ix
                            g_tany += g_h * iy
                            g_nx -= g_h * sigma * mu * ix
                            g_ny -= g_h * sigma * mu * iy
                            g_w2 = 0.0
                        else:
                            jn = (switch + 1) % dirs.shape[0]
                            sx = dirs[switch, 0] - dirs[jn, 0]
                            sy = dirs[switch, 1] - dirs[jn, 1]
                            g_ix = g_iy = 0.0
                            g_tx2, g_ty2 = g_h * sx, g_h * sy
                            g_w2 = g_h * (-rel[cell, 1] * sx + rel[cell, 0] * sy)
                            g_rel[cell, 0] += g_h * w * sy
                            g_rel[cell, 1] -= g_h * w * sx
                        g_px, g_py, g_wp, _, _ = _piece_vjp(g_w2, g_ix, g_iy, masses[b], inertia,
                                                      bound, rel, tx, ty, cell_vel, w_p, dirs,
                                                      line, kc, kp, g_rel, g_cv, g_m, g_i, g_c)
                        g_tx2 += g_px
                        g_ty2 += g_py
                        g_omega += g_wp
                        g_tanx += s * g_tx2
                        g_tany += s * g_ty2
                        g_nx += closing * g_tx2
                        g_ny += closing * g_ty2
                        g_closing += g_tx2 * nx + g_ty2 * ny
                    # t = ẑ × n; closing = u·n − (gap − radius)/Δt.
                    g_nx += g_tany + g_closing * ux
                    g_ny += -g_tanx + g_closing * uy
                    for i in range(k):
                        g_arms[i, 0] += g_rel[i, 0]
                        g_arms[i, 1] += g_rel[i, 1]
                        g_ax -= g_rel[i, 0]
                        g_ay -= g_rel[i, 1]
                    d_theta, d_ox, d_oy = _contact_vjp(theta, rx, ry, near_x, near_y, dist,
                                                       tan_x, tan_y, inside, g_ax, g_ay, g_nx,
                                                       g_ny, -g_closing / dt)
                    g_theta += d_theta
                    g_ox += d_ox
                    g_oy += d_oy
                g_next[:] = g_cv
            # The cells' positions, origin + R(θ) c_i.
            for i in range(k):
                gx = grad_positions[b, step, i, 0] + g_arms[i, 0]
                gy = grad_positions[b, step, i, 1] + g_arms[i, 1]
                g_ox += grad_positions[b, step, i, 0]
                g_oy += grad_positions[b, step, i, 1]
                g_theta += gy * arms[i, 0] - gx * arms[i, 1]
        side2 = cell_side**2 / 6.0
        for i in range(k):
            g_masses[b, i] = g_m[i] + g_i[i] * side2 + g_c[i] * frictions[b, i] * gravity * dt
            g_frictions[b, i] = g_c[i] * masses[b, i] * gravity * dt
    return g_masses, g_frictions, status
