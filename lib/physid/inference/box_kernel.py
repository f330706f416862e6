r"""The shaken box's rollout compiled with numba: Eqs. (1–3) of :mod:`physid.inference.box`
forward, and their hand-derived adjoint backward, one lane at a time.

Why. In eager torch one step of the box is about 60 small batched operators forward and
twice as many backward; at the likelihoods' sizes (100 particles × 10 shooting windows, 30
steps each) every operator costs microseconds of dispatch for a few thousand flops, so a
likelihood and its gradient took 67 ms on one thread, 5× less than rolling the windows out one
after another, and the box's phase II spent minutes of the real-data chapter in it. A lane
(one particle in one window) is a 4-vector state, eleven constants and the mount's three
vectors per step: a few hundred flops per step, which a compiled loop does in well under a
microsecond.

What. :func:`forward` runs every lane's steps and records the states (and each step's
cosines and sines); :func:`backward` walks each lane's steps in reverse, recomputing a step's
intermediates from the state before it and applying the adjoint of (1–3) written out by hand
below (``_step_vjp``), which the tests check against torch autograd through the eager step.
:func:`physid.inference.lanes.run` makes the pair a torch function. The lanes' constants are the box
frame's inertia about the joint (six entries), the first moment ``m c`` (three) and the two
dampings; the weights of phase II enter through those (:meth:`ShakenBox.mass_properties
<physid.inference.box.ShakenBox.mass_properties>` stays in torch), so the kernel knows nothing
of the parameterisation. The mount's vectors ``ω_m``, ``ω̇_m`` and ``g − a`` in the mount
frame are per (mount, step), shared by the lanes that index them, and carry no gradient.

A likelihood needs only each lane's sum of squared residuals of its points against the
measured ones (and the last state, for multiple shooting's defects): with ``measured`` given,
:func:`forward` sums them as it goes and :func:`backward` adds their adjoint, so no array of
the points (or of the states' gradients) is made
(:meth:`ShakenBox.rollout_residuals <physid.inference.box.ShakenBox.rollout_residuals>`).

Measured (the phase-I likelihood and gradient of ``benchmarks/inference.py``: 100 particles ×
10 windows of 30 steps, one thread), step by step: the eager step 67 ms; this kernel for the
rollout with the points made and compared in torch 18 ms, 11 ms with the points compiled
(:func:`points`, :func:`points_backward`), 7 ms with the residuals summed in the kernel, 4.8 ms
with the helpers inlined into the loops (``inline="always"``, backward 3.6 → 2.2 ms) and the
last state as the only state output; fused multiply-adds and reassociation
(``fastmath`` without the no-NaN and no-infinity flags, so a diverging particle still gives
``nan``) took the kernel from 3.6 to 3.4 ms. Each trigonometric value is computed once per
step and passed on (``_trig``): that changed little. ``torch.compile`` of the same elementwise
step was not tried: numba is already Part I's compiler and its kernels are cached on disk, so
a process pays no compile once a machine has one. The lanes run one at a time here; the
pendulum's kernel (:mod:`physid.inference.pendulum_kernel`) runs them in vectorised blocks,
which the box's target did not need.
"""

from __future__ import annotations

import math

import numba
import numpy as np

__all__ = ["N_CONSTANTS", "backward", "forward", "points", "points_backward"]

#: The constants of a lane: ``Ixx, Iyy, Izz, Ixy, Ixz, Iyz`` (about the joint, box frame),
#: ``m cx, m cy, m cz`` and the dampings ``d1, d2``.
N_CONSTANTS = 11

# Fast-math flags that change rounding only (no "nnan"/"ninf": a diverging rollout gives nan),
# and numpy's error model: a division by zero gives inf, as in torch, instead of raising.
_FLAGS = {"contract", "arcp", "nsz", "reassoc"}
_jit = numba.njit(cache=True, fastmath=_FLAGS, nogil=True, error_model="numpy")
_inline = numba.njit(cache=True, fastmath=_FLAGS, nogil=True, error_model="numpy", inline="always")


@_inline
def _to_box(ca, sa, cb, sb, vx, vy, vz):
    """A mount-frame vector in the box frame, ``R_y(β)ᵀ R_x(α)ᵀ v``, and the intermediate
    ``z`` component ``uz`` the adjoint needs."""
    uy = ca * vy + sa * vz
    uz = ca * vz - sa * vy
    return cb * vx - sb * uz, uy, sb * vx + cb * uz, uz


@_inline
def _trig(a, b):
    """``(cos α, sin α, cos β, sin β)``: each step needs them of its state twice (the step
    and the points), so they are computed once and passed on."""
    return math.cos(a), math.sin(a), math.cos(b), math.sin(b)


@_inline
def _to_box_vjp(trig, vx, vy, vz, gx, gy, gz, uz):
    """The adjoint of :func:`_to_box`: the cotangents of ``cos α, sin α, cos β, sin β`` from
    those ``(gx, gy, gz)`` of the box-frame vector (the mount's vector has none)."""
    ca, sa, cb, sb = trig
    guz = -sb * gx + cb * gz
    return vy * gy + vz * guz, vz * gy - vy * guz, vx * gx + uz * gz, -uz * gx + vx * gz


@_inline
def _terms(trig, ad, bd, c, v):
    """Eqs. (1–2) for one lane: ``(α̈, β̈)`` last, after the intermediates the adjoint reuses.

    ``c`` holds the eleven constants, ``v`` the mount's vectors (9,): component-major,
    ``v[3 i + k]`` is component ``i`` of vector ``k`` (``ω_m``, ``ω̇_m``, ``g − a``)."""
    ca, sa, cb, sb = trig
    ixx, iyy, izz, ixy, ixz, iyz, mx, my, mz, d1, d2 = (
        c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7], c[8], c[9], c[10]
    )  # fmt: skip
    # Mount frame -> box frame: R_x(α)ᵀ, then R_y(β)ᵀ, for the three vectors.
    w0, w1, w2, uz0 = _to_box(ca, sa, cb, sb, v[0], v[3], v[6])  # ω_m
    wd0, wd1, wd2, uz1 = _to_box(ca, sa, cb, sb, v[1], v[4], v[7])  # ω̇_m
    f0, f1, f2, uz2 = _to_box(ca, sa, cb, sb, v[2], v[5], v[8])  # g − a
    vv0 = w0 + cb * ad  # ω_m + e1 α̇, e1 = (cos β, 0, sin β)
    vv2 = w2 + sb * ad
    o0, o1, o2 = vv0, w1 + bd, vv2  # ω
    r0 = wd0 + w1 * sb * ad - vv2 * bd  # b of Eq. (1)
    r1 = wd1 + (w2 * cb - w0 * sb) * ad
    r2 = wd2 - w1 * cb * ad + vv0 * bd
    p0 = ixx * o0 + ixy * o1 + ixz * o2  # I ω
    p1 = ixy * o0 + iyy * o1 + iyz * o2
    p2 = ixz * o0 + iyz * o1 + izz * o2
    # h = −I b − ω × (I ω) + (m c) × (g − a), then Eq. (2) with J = [e1, ŷ].
    h0 = -(ixx * r0 + ixy * r1 + ixz * r2) - (o1 * p2 - o2 * p1) + (my * f2 - mz * f1)
    h1 = -(ixy * r0 + iyy * r1 + iyz * r2) - (o2 * p0 - o0 * p2) + (mz * f0 - mx * f2)
    h2 = -(ixz * r0 + iyz * r1 + izz * r2) - (o0 * p1 - o1 * p0) + (mx * f1 - my * f0)
    m11 = cb * cb * ixx + 2.0 * cb * sb * ixz + sb * sb * izz
    m12 = cb * ixy + sb * iyz
    q1 = cb * h0 + sb * h2 - d1 * ad
    q2 = h1 - d2 * bd
    det = m11 * iyy - m12 * m12
    add = (iyy * q1 - m12 * q2) / det
    bdd = (m11 * q2 - m12 * q1) / det
    return (
        ca, sa, cb, sb, w0, w1, w2, uz0, uz1, uz2, f0, f1, f2, vv0, vv2, o0, o1, o2,
        r0, r1, r2, p0, p1, p2, h0, h1, h2, m11, m12, q1, q2, det, add, bdd,
    )  # fmt: skip


@_jit
def _forward(s0, consts, mount, index, measured, weight, lid, dt, out, trig, squares):
    """Roll every lane out: ``s0`` (L, 4), ``consts`` (L, 11), ``mount`` (M, T, 9) indexed by
    ``index`` (L,); the states after each step into ``out`` (L, T, 4) and the cosines and
    sines of the angles before each step into ``trig`` (L, T, 4), for ``_backward``.
    Eq. (3): semi-implicit Euler.

    With ``measured`` (M, T, 12) (indexed like ``mount``; an empty array for none), also each
    lane's sum over its steps of the squared, weighted differences between its points
    (:func:`points`, the lid ``lid`` below the joint) and the measured ones,
    ``Σ_t Σ_o (w_o (y_o(s_t) − ŷ_{t,o}))²``, into ``squares`` (L,): a Gaussian likelihood's
    residual, with no (L, T, 12) array made."""
    n_steps = out.shape[1]
    fit = measured.shape[0] > 0
    y = np.empty(12)
    for lane in range(s0.shape[0]):
        a, b, ad, bd = s0[lane, 0], s0[lane, 1], s0[lane, 2], s0[lane, 3]
        c = consts[lane]
        m = mount[index[lane]]
        total = 0.0
        here = _trig(a, b)
        for t in range(n_steps):
            for i in range(4):
                trig[lane, t, i] = here[i]
            terms = _terms(here, ad, bd, c, m[t])
            ad = ad + dt * terms[-2]
            bd = bd + dt * terms[-1]
            a = a + dt * ad
            b = b + dt * bd
            out[lane, t, 0] = a
            out[lane, t, 1] = b
            out[lane, t, 2] = ad
            out[lane, t, 3] = bd
            here = _trig(a, b)
            if fit:
                _points_into(here, lid, y)
                target = measured[index[lane], t]
                for o in range(12):
                    r = weight[o] * (y[o] - target[o])
                    total += r * r
        squares[lane] = total


@_inline
def _step_vjp(trig, ad, bd, c, v, dt, g, gc):
    """The adjoint of one step from ``(a, b, ad, bd)``: ``g`` (4,) holds the cotangent of the
    state after the step and is overwritten with that of the state before it; the constants'
    cotangents are added to ``gc`` (11,). Each block reverses the same line of
    ``_terms`` (read bottom up)."""
    (
        ca, sa, cb, sb, w0, w1, w2, uz0, uz1, uz2, f0, f1, f2, vv0, vv2, o0, o1, o2,
        r0, r1, r2, p0, p1, p2, h0, h1, h2, m11, m12, q1, q2, det, add, bdd,
    ) = _terms(trig, ad, bd, c, v)  # fmt: skip
    ixx, iyy, izz, ixy, ixz, iyz, mx, my, mz, d1, d2 = (
        c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7], c[8], c[9], c[10]
    )  # fmt: skip
    # -- Eq. (3): a' = a + dt ad', ad' = ad + dt add (the same for b) --
    g_a, g_b = g[0], g[1]
    g_ad = g[2] + dt * g[0]
    g_bd = g[3] + dt * g[1]
    x = dt * g_ad / det
    y = dt * g_bd / det
    # -- the 2 x 2 solve --
    g_q1 = iyy * x - m12 * y
    g_q2 = m11 * y - m12 * x
    g_det = -(x * add + y * bdd)
    g_m11 = q2 * y + g_det * iyy
    g_m12 = -(q2 * x + q1 * y) - 2.0 * m12 * g_det
    g_iyy = q1 * x + g_det * m11
    # -- q1 = cb h0 + sb h2 − d1 ad, q2 = h1 − d2 bd --
    gh0, gh1, gh2 = cb * g_q1, g_q2, sb * g_q1
    g_cb = h0 * g_q1
    g_sb = h2 * g_q1
    gc[9] += -ad * g_q1
    gc[10] += -bd * g_q2
    g_ad += -d1 * g_q1
    g_bd += -d2 * g_q2
    # -- m12 = cb Ixy + sb Iyz, m11 = cb² Ixx + 2 cb sb Ixz + sb² Izz --
    g_cb += ixy * g_m12 + (2.0 * cb * ixx + 2.0 * sb * ixz) * g_m11
    g_sb += iyz * g_m12 + (2.0 * cb * ixz + 2.0 * sb * izz) * g_m11
    gc[3] += cb * g_m12
    gc[5] += sb * g_m12
    gc[0] += cb * cb * g_m11
    gc[4] += 2.0 * cb * sb * g_m11
    gc[2] += sb * sb * g_m11
    # -- h = −I b − ω × (I ω) + (m c) × (g − a) --
    # d(ω × P)ᵀ g: ω gets P × g, P gets g × ω; here g is −gh.
    gp0 = o1 * gh2 - o2 * gh1  # ω × gh
    gp1 = o2 * gh0 - o0 * gh2
    gp2 = o0 * gh1 - o1 * gh0
    go0 = gh1 * p2 - gh2 * p1  # gh × P
    go1 = gh2 * p0 - gh0 * p2
    go2 = gh0 * p1 - gh1 * p0
    # (m c) × F: m c gets F × gh, F gets gh × (m c).
    gc[6] += f1 * gh2 - f2 * gh1
    gc[7] += f2 * gh0 - f0 * gh2
    gc[8] += f0 * gh1 - f1 * gh0
    gf0 = gh1 * mz - gh2 * my
    gf1 = gh2 * mx - gh0 * mz
    gf2 = gh0 * my - gh1 * mx
    # P = I ω: ω gets I gP; b gets −I gh. I gets gP ωᵀ − gh bᵀ (symmetrised into its entries).
    go0 += ixx * gp0 + ixy * gp1 + ixz * gp2
    go1 += ixy * gp0 + iyy * gp1 + iyz * gp2
    go2 += ixz * gp0 + iyz * gp1 + izz * gp2
    gr0 = -(ixx * gh0 + ixy * gh1 + ixz * gh2)
    gr1 = -(ixy * gh0 + iyy * gh1 + iyz * gh2)
    gr2 = -(ixz * gh0 + iyz * gh1 + izz * gh2)
    e00 = gp0 * o0 - gh0 * r0
    e11 = gp1 * o1 - gh1 * r1
    e22 = gp2 * o2 - gh2 * r2
    gc[0] += e00
    gc[1] += e11 + g_iyy
    gc[2] += e22
    gc[3] += gp0 * o1 + gp1 * o0 - gh0 * r1 - gh1 * r0
    gc[4] += gp0 * o2 + gp2 * o0 - gh0 * r2 - gh2 * r0
    gc[5] += gp1 * o2 + gp2 * o1 - gh1 * r2 - gh2 * r1
    # -- b (r0, r1, r2) of Eq. (1) --
    g_sb += (gr0 * w1 - gr1 * w0) * ad
    g_cb += (gr1 * w2 - gr2 * w1) * ad
    g_ad += gr0 * w1 * sb + gr1 * (w2 * cb - w0 * sb) - gr2 * w1 * cb
    g_vv2 = -gr0 * bd + go2
    g_vv0 = gr2 * bd + go0
    g_bd += -gr0 * vv2 + gr2 * vv0 + go1
    # -- vv = ω_m + e1 α̇, e1 = (cb, 0, sb): ω_m's cotangent, then the others' --
    gw0 = g_vv0 - gr1 * sb * ad
    gw1 = (gr0 * sb - gr2 * cb) * ad + go1
    gw2 = g_vv2 + gr1 * cb * ad
    g_cb += g_vv0 * ad
    g_sb += g_vv2 * ad
    g_ad += g_vv0 * cb + g_vv2 * sb
    # -- the rotation of the three vectors into the box frame --
    ca0, sa0, cb0, sb0 = _to_box_vjp(trig, v[0], v[3], v[6], gw0, gw1, gw2, uz0)
    ca1, sa1, cb1, sb1 = _to_box_vjp(trig, v[1], v[4], v[7], gr0, gr1, gr2, uz1)
    ca2, sa2, cb2, sb2 = _to_box_vjp(trig, v[2], v[5], v[8], gf0, gf1, gf2, uz2)
    g_ca = ca0 + ca1 + ca2
    g_sa = sa0 + sa1 + sa2
    g_cb += cb0 + cb1 + cb2
    g_sb += sb0 + sb1 + sb2
    g[0] = g_a - sa * g_ca + ca * g_sa
    g[1] = g_b - sb * g_cb + cb * g_sb
    g[2] = g_ad
    g[3] = g_bd


@_jit
def _backward(
    s0, out, trig, consts, mount, index, measured, weight, lid, grad, g_squares, dt, g_s0, g_consts
):
    """The adjoint of ``_forward``: given the cotangents ``grad`` (L, T, 4) of the states it
    returned in ``out`` (or (L, 1, 4): of the last state only) and ``g_squares`` (L,) of its
    ``squares`` (unused without ``measured``), write those of ``s0`` into ``g_s0`` (L, 4) and
    of the constants into ``g_consts`` (L, 11)."""
    n_steps = out.shape[1]
    fit = measured.shape[0] > 0
    every = grad.shape[1] == n_steps
    g = np.empty(4)
    y = np.empty(12)
    for lane in range(s0.shape[0]):
        c = consts[lane]
        m = mount[index[lane]]
        gc = g_consts[lane]
        gc[:] = 0.0
        for i in range(4):
            g[i] = 0.0
        after = _trig(out[lane, n_steps - 1, 0], out[lane, n_steps - 1, 1])
        for t in range(n_steps - 1, -1, -1):
            if every or t == n_steps - 1:
                for i in range(4):
                    g[i] += grad[lane, t if every else 0, i]
            if fit:
                _points_into(after, lid, y)
                target = measured[index[lane], t]
                for o in range(12):  # the cotangent of the points: 2 w² (y − ŷ) ḡ
                    y[o] = 2.0 * weight[o] * weight[o] * (y[o] - target[o]) * g_squares[lane]
                ga, gb = _points_vjp(after, lid, y)
                g[0] += ga
                g[1] += gb
            prev = s0[lane] if t == 0 else out[lane, t - 1]
            before = (trig[lane, t, 0], trig[lane, t, 1], trig[lane, t, 2], trig[lane, t, 3])
            _step_vjp(before, prev[2], prev[3], c, m[t], dt, g, gc)
            after = before
        for i in range(4):
            g_s0[lane, i] = g[i]


def forward(
    s0: np.ndarray, consts: np.ndarray, fixed: tuple, dt: float, n_steps: int, fit: bool
) -> tuple[np.ndarray, np.ndarray, tuple]:
    """Roll the lanes ``s0`` (L, 4) with constants ``consts`` (L, 11) out for ``n_steps``
    with ``fixed = (mount, index, measured, weight, lid)`` (``_forward``): the states
    (L, T, 4), or with ``fit`` the last states (L, 4); the sums of squared residuals (L,); and
    the tape of :func:`backward` (the :class:`~physid.inference.lanes.LaneKernel` contract)."""
    lanes = s0.shape[0]
    out = np.empty((lanes, n_steps, 4))
    trig = np.empty((lanes, n_steps, 4))
    squares = np.zeros(lanes)
    _forward(s0, consts, *fixed, dt, out, trig, squares)
    states = out[:, -1].copy() if fit else out
    return states, squares, (s0, out, trig, consts, fixed, dt)


def backward(tape: tuple, grad: np.ndarray, g_squares: np.ndarray) -> tuple[np.ndarray, ...]:
    """The adjoint of :func:`forward`: given the cotangents ``grad`` of the states (L, T, 4),
    or of the last state (L, 1, 4), and ``g_squares`` (L,) of the sums, those of the start
    states (L, 4) and of the constants (L, 11)."""
    s0, out, trig, consts, fixed, dt = tape
    g_s0, g_consts = np.empty_like(s0), np.empty_like(consts)
    _backward(s0, out, trig, consts, *fixed, grad, g_squares, dt, g_s0, g_consts)
    return g_s0, g_consts


@_inline
def _points_into(trig, lid, out):
    """The twelve coordinates of :func:`physid.inference.box.mount_points` of one state into
    ``out`` (12,): ``p_o = lid · z_b`` and ``p_o + x_b``, ``p_o + y_b``, ``p_o + z_b``, with
    ``[x_b, y_b, z_b] = R_x(α) R_y(β)``, from ``_trig`` of ``(α, β)``."""
    ca, sa, cb, sb = trig
    axes = ((cb, sa * sb, -ca * sb), (0.0, ca, sa), (sb, -sa * cb, ca * cb))
    for i in range(3):
        origin = lid * axes[2][i]
        out[i] = origin
        for j in range(3):
            out[3 * (j + 1) + i] = origin + axes[j][i]


@_inline
def _points_vjp(trig, lid, g):
    """The cotangents of ``α`` and ``β`` from those of the twelve coordinates ``g`` (12,)."""
    ca, sa, cb, sb = trig
    # Each axis's cotangent: x_b and y_b their own point's, z_b its point's and lid × all.
    gx1, gx2 = g[4], g[5]
    gx0 = g[3]
    gy1, gy2 = g[7], g[8]
    gz0 = g[9] + lid * (g[0] + g[3] + g[6] + g[9])
    gz1 = g[10] + lid * (g[1] + g[4] + g[7] + g[10])
    gz2 = g[11] + lid * (g[2] + g[5] + g[8] + g[11])
    ga = gx1 * ca * sb + gx2 * sa * sb - gy1 * sa + gy2 * ca - gz1 * ca * cb - gz2 * sa * cb
    gb = -gx0 * sb + gx1 * sa * cb - gx2 * ca * cb + gz0 * cb + gz1 * sa * sb - gz2 * ca * sb
    return ga, gb


@_jit
def points(states, lid, out):
    """The four measured points (K, 12) of states (K, 4) into ``out``
    (:func:`physid.inference.box.mount_points`)."""
    for k in range(states.shape[0]):
        _points_into(_trig(states[k, 0], states[k, 1]), lid, out[k])


@_jit
def points_backward(states, lid, grad, out):
    """The adjoint of :func:`points`: the cotangents ``grad`` (K, 12) of the points into those
    of the states ``out`` (K, 4) (the rates get none)."""
    for k in range(states.shape[0]):
        out[k, 0], out[k, 1] = _points_vjp(_trig(states[k, 0], states[k, 1]), lid, grad[k])
        out[k, 2] = 0.0
        out[k, 3] = 0.0
