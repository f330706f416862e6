r"""The double pendulum's rollout compiled with numba: the semi-implicit Euler step of
:mod:`physid.inference.pendulum` forward, its hand-derived adjoint backward, one lane at a time.

A lane is one particle in one shooting window: a 4-vector state ``[q0, q1, q̇0, q̇1]`` and the
ten constants of :meth:`DoublePendulum.constants
<physid.inference.pendulum.DoublePendulum.constants>` (computed from the parameters in torch,
so the kernel knows nothing of the parameterisation). :func:`forward` runs every lane's steps
and records the states; with ``measured`` it also sums each lane's squared, weighted
residuals of its states against the measured ones (the pendulum measures its whole state), so
a likelihood makes no array of the residuals. :func:`backward` walks each lane's steps in
reverse from the recorded states, applying the adjoint of the step written out by hand
(``_step_vjp``), which the tests check against torch autograd through
:func:`physid.inference.pendulum.step` and against finite differences. The lane loops have
the shape of :mod:`physid.inference.box_kernel`'s: the same structure, another system.

Why numba and not ``torch.compile`` (which this module replaces): the compiled torch chunks
(5 steps each, a forward and a recomputing backward kernel) took 0.8 ms forward and 1.5 ms
backward on 1,000 lanes × 40 steps, but each call paid guards and fresh copies of its
arguments (about 3 ms per likelihood evaluation in all), and every process compiled them
anew (about 5 s, in every parallel worker). Here the trigonometric values of each state are
computed once forward and kept for the backward pass, which then needs none.
"""

from __future__ import annotations

import math

import numba
import numpy as np

__all__ = ["N_CONSTANTS", "backward", "forward"]

#: The constants of a lane: ``M11, M22, Kc, Ks, Gx1, Gy1, Gx2, Gy2, d1, d2``.
N_CONSTANTS = 10

# Fast-math flags that change rounding only (no "nnan"/"ninf": a diverging rollout gives nan),
# and numpy's error model: a division by zero gives inf, as in torch, instead of raising.
_FLAGS = {"contract", "arcp", "nsz", "reassoc"}
_jit = numba.njit(cache=True, fastmath=_FLAGS, nogil=True, error_model="numpy")
_inline = numba.njit(cache=True, fastmath=_FLAGS, nogil=True, error_model="numpy", inline="always")


@_inline
def _terms(trig, w0, w1, c):
    """The step's intermediates from ``trig = (cos q0, sin q0, cos q1, sin q1)``: the angle
    ``q0 + q1``'s cosine and sine, ``M12``, ``Ks``-rotated ``kss``, the determinant, ``v =
    q̇0 + q̇1``, the right-hand sides ``r1, r2`` and the accelerations ``a1, acc2`` (of
    :func:`physid.inference.pendulum.step`)."""
    c0, s0, c1, s1 = trig
    m11, m22, kc, ks, gx1, gy1, gx2, gy2, d1, d2 = (
        c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7], c[8], c[9]
    )  # fmt: skip
    c2 = c0 * c1 - s0 * s1
    s2 = s0 * c1 + c0 * s1
    m12 = kc * c1 - ks * s1
    kss = kc * s1 + ks * c1
    det = m11 * m22 - m12 * m12
    v = w0 + w1
    r1 = d2 * w1 - d1 * w0 + kss * v * v - (gx1 * s0 + gy1 * c0)
    r2 = -d2 * w1 - kss * w0 * w0 - (gx2 * s2 + gy2 * c2)
    a1 = (m22 * r1 - m12 * r2) / det
    acc2 = (m11 * r2 - m12 * r1) / det
    return c2, s2, m12, kss, det, v, r1, r2, a1, acc2


@_jit
def forward(s0, consts, measured, index, weight, dt, out, trig, squares):
    """Roll every lane out: ``s0`` (L, 4), ``consts`` (L, 10); the states after each step
    into ``out`` (L, T, 4), the trigonometric values of the state before each step into
    ``trig`` (L, T, 4) (for :func:`backward`).

    With ``measured`` (M, T, 4) indexed by ``index`` (L,) (an empty array for none), also
    ``Σ_t Σ_i (w_i (s_{t,i} − ŝ_{t,i}))²`` per lane into ``squares`` (L,)."""
    n_steps = out.shape[1]
    fit = measured.shape[0] > 0
    for lane in range(s0.shape[0]):
        q0, q1, w0, w1 = s0[lane, 0], s0[lane, 1], s0[lane, 2], s0[lane, 3]
        c = consts[lane]
        total = 0.0
        for t in range(n_steps):
            here = (math.cos(q0), math.sin(q0), math.cos(q1), math.sin(q1))
            a1, acc2 = _terms(here, w0, w1, c)[-2:]
            w0 = w0 + dt * a1
            w1 = w1 + dt * (acc2 - a1)
            q0 = q0 + dt * w0
            q1 = q1 + dt * w1
            state = (q0, q1, w0, w1)
            for i in range(4):
                out[lane, t, i] = state[i]
                trig[lane, t, i] = here[i]
            if fit:
                target = measured[index[lane], t]
                for i in range(4):
                    r = weight[i] * (state[i] - target[i])
                    total += r * r
        squares[lane] = total


@_inline
def _step_vjp(trig, w0, w1, c, dt, g, gc):
    """The adjoint of one step from a state with rates ``w0, w1`` and trigonometric values
    ``trig``: ``g`` (4,) holds the cotangent of the state after the step and is overwritten
    with that of the state before it; the constants' cotangents are added to ``gc`` (10,)."""
    c0, s0, c1, s1 = trig
    m11, m22, _, _, gx1, gy1, gx2, gy2, d1, d2 = (
        c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7], c[8], c[9]
    )  # fmt: skip
    c2, s2, m12, kss, det, v, r1, r2, a1, acc2 = _terms(trig, w0, w1, c)
    bq0, bq1 = g[0], g[1]
    # q' = q + dt w', w' = w + dt a.
    bw0t = g[2] + dt * bq0
    bw1t = g[3] + dt * bq1
    x = dt * (bw0t - bw1t) / det
    y = dt * bw1t / det
    br1 = m22 * x - m12 * y
    br2 = m11 * y - m12 * x
    bdet = -(x * a1 + y * acc2)
    bm12 = -(r2 * x + r1 * y) - 2.0 * m12 * bdet
    bkss = br1 * v * v - br2 * w0 * w0
    bv = 2.0 * br1 * kss * v
    ba2 = -br2 * (gx2 * c2 - gy2 * s2)
    gc[0] += r2 * y + bdet * m22
    gc[1] += r1 * x + bdet * m11
    gc[2] += bm12 * c1 + bkss * s1
    gc[3] += bkss * c1 - bm12 * s1
    gc[4] += -br1 * s0
    gc[5] += -br1 * c0
    gc[6] += -br2 * s2
    gc[7] += -br2 * c2
    gc[8] += -br1 * w0
    gc[9] += (br1 - br2) * w1
    g[0] = bq0 - br1 * (gx1 * c0 - gy1 * s0) + ba2
    g[1] = bq1 + ba2 + bkss * m12 - bm12 * kss
    g[2] = bw0t - d1 * br1 - 2.0 * br2 * kss * w0 + bv
    g[3] = bw1t + d2 * (br1 - br2) + bv


@_jit
def backward(s0, out, trig, consts, measured, index, weight, grad, g_squares, dt, g_s0, g_consts):
    """The adjoint of :func:`forward`: given the cotangents ``grad`` (L, T, 4) of the states
    (or (L, 1, 4): of the last state only) and ``g_squares`` (L,) of the sums (unused without
    ``measured``), write those of ``s0`` into ``g_s0`` (L, 4) and of the constants into
    ``g_consts`` (L, 10)."""
    n_steps = out.shape[1]
    fit = measured.shape[0] > 0
    every = grad.shape[1] == n_steps
    g = np.empty(4)
    for lane in range(s0.shape[0]):
        c = consts[lane]
        gc = g_consts[lane]
        gc[:] = 0.0
        for i in range(4):
            g[i] = 0.0
        for t in range(n_steps - 1, -1, -1):
            if every or t == n_steps - 1:
                for i in range(4):
                    g[i] += grad[lane, t if every else 0, i]
            if fit:
                target = measured[index[lane], t]
                for i in range(4):  # 2 w² (s − ŝ) ḡ
                    g[i] += 2.0 * weight[i] ** 2 * (out[lane, t, i] - target[i]) * g_squares[lane]
            prev = s0[lane] if t == 0 else out[lane, t - 1]
            here = trig[lane, t]
            _step_vjp((here[0], here[1], here[2], here[3]), prev[2], prev[3], c, dt, g, gc)
        for i in range(4):
            g_s0[lane, i] = g[i]
