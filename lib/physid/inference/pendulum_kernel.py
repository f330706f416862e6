r"""The double pendulum's rollout compiled with numba: the semi-implicit Euler step of
:mod:`physid.inference.pendulum` forward, its hand-derived adjoint backward, with the lanes in
SIMD registers.

A lane is one particle in one shooting window: a 4-vector state ``[q0, q1, q̇0, q̇1]`` and the
ten constants of :meth:`DoublePendulum.constants
<physid.inference.pendulum.DoublePendulum.constants>` (computed from the parameters in torch,
so the kernel knows nothing of the parameterisation). :func:`forward` runs every lane's steps;
with measurements it also sums each lane's squared, weighted residuals of its states against
the measured ones (the pendulum measures its whole state), so a likelihood makes no array of
the residuals. :func:`backward` walks the steps in reverse from the recorded tape, applying
the adjoint of the step written out by hand (``_step_vjp``), which the tests check against
torch autograd through :func:`physid.inference.pendulum.step` and against finite
differences. Together they are a :class:`~physid.inference.lanes.LaneKernel`.

**Layout.** The lanes are packed in blocks of :data:`BLOCK`: within a block, each state entry
and each constant is a row of :data:`BLOCK` consecutive lanes, and the innermost loop runs
over the lanes of a block, every step of a lane the same arithmetic with no branch on data.
LLVM then executes that loop on vectors of lanes (four float64 at a time with AVX2). Two things
make that possible. The arrays are flat and indexed by hand, so the rows of a block lie at
compile-time constant distances and LLVM needs one run-time overlap check per pair of arrays
(indexing numba's 2-D arrays, whose strides are run-time values, needed more checks than LLVM
allows, and it left the loop scalar); and a block is long enough (32 lanes, above LLVM's
16-iteration threshold) for those checks to be worth making. The sines and cosines are
:func:`sincos`, a polynomial whose quadrant is chosen by selects, where a call into the C
library's ``sin`` and ``cos`` would keep the loop scalar.

**What it gave** (1,000 lanes of 40 steps, one thread, the benchmark's problem): the forward
pass 1.3–1.5 ms with one lane at a time and ``math.sin``/``math.cos``, 0.8 ms with the
polynomial and the lanes as rows of numba 2-D arrays (still scalar), 0.18 ms blocked and
vectorised (0.21 ms with the residuals; gathering each lane's measurements into the blocks'
order once per call, ``_targets``, costs 0.07 ms more); the backward pass 0.76 ms one lane
at a time, 0.6 ms blocked. Three things kept LLVM from vectorising, each found from its
remarks: a tuple indexed in a loop (numba makes it a stack array: store each entry by
name), a read of the tape's previous step in the loop that writes the next one (the running
state lives in the block's rows of the packed lanes instead, and the tape keeps the rates
before each step for the backward pass), and any data-dependent branch or gather inside the
loop over the lanes (hoisted into loops of their own). A fourth kept the backward pass
scalar with no remark at all: its steps run in reverse, LLVM could not prove the reversed
index non-negative, and the wrap-around select numba puts on a possibly negative index made
every load a gather; ``max(…, 0)`` on the index let it vectorise (0.56 → 0.26 ms). The
constants and their Jacobian are one call (:func:`constants`) in place of about a hundred torch
operations and their autograd graph (0.35 → 0.08 ms with the gradient), and the gathered
measurements are kept between calls that gather the same ones (``_gathered``, 0.04 ms
saved). The likelihood and gradient of the benchmark went from 3.5 ms to 2.3 ms with the
blocks, then to 1.45 ms (run back to back; about 2.2 ms for a single call after other work
has emptied the caches). The states equal the one-lane-at-a-time kernel's to 1e-15.
"""

from __future__ import annotations

import math

import numba
import numpy as np

__all__ = [
    "BLOCK",
    "N_CONSTANTS",
    "QUANTITIES",
    "backward",
    "constants",
    "constants_vjp",
    "forward",
    "sincos",
]

#: The constants of a lane: ``M11, M22, Kc, Ks, Gx1, Gy1, Gx2, Gy2, d1, d2``.
N_CONSTANTS = 10
#: The twelve physical quantities :func:`constants` takes, in the order of its columns.
QUANTITIES = ("l1", "m1", "I1", "c1x", "c1y", "d1", "l2", "m2", "I2", "c2x", "c2y", "d2")
#: Lanes per block (the vectorised loop's trip count).
BLOCK = 32
#: Rows of a block of the packed lanes: the state (4) and the constants.
_ROWS = 4 + N_CONSTANTS
#: Rows of a block of the tape per step: the state after the step (4), the cosines and sines
#: of the angles before it (``cos q0, sin q0, cos q1, sin q1``) and the rates before it (2).
_TAPE = 10

# π/2 in three parts for the range reduction of :func:`sincos` (Cody and Waite): the first
# two carry 33 significant bits, so ``k × part`` is exact for |k| < 2²⁰ (|x| < 1.6e6); their
# sum is π/2 to about 1e-37 (the tests check it).
_PIO2 = (1.5707963267341256, 6.077100506303966e-11, 2.0222662487959506e-21)
_TWO_OVER_PI = 0.6366197723675814
# Taylor coefficients of sin r − r (r³ … r¹⁷) and cos r − 1 + r²/2 (r⁴ … r¹⁸): on
# |r| ≤ π/4 the first terms left out are below 1e-19.
_SIN = tuple((-1) ** k / math.factorial(2 * k + 1) for k in range(1, 9))
_COS = tuple((-1) ** k / math.factorial(2 * k) for k in range(2, 10))

# Fast-math flags that change rounding only (no "nnan"/"ninf": a diverging rollout gives nan),
# and numpy's error model: a division by zero gives inf, as in torch, instead of raising.
_FLAGS = {"contract", "arcp", "nsz", "reassoc"}
_jit = numba.njit(cache=True, fastmath=_FLAGS, nogil=True, error_model="numpy")
_inline = numba.njit(cache=True, fastmath=_FLAGS, nogil=True, error_model="numpy", inline="always")


# Without "reassoc": the range reduction's subtractions must stay in their order.
@numba.njit(cache=True, fastmath={"contract"}, nogil=True, error_model="numpy")
def sincos(x: float) -> tuple[float, float]:
    """``(sin x, cos x)`` to about 1 ulp for |x| < 1.6e6 (nan for a non-finite ``x``): ``x =
    k π/2 + r`` with |r| ≤ π/4, the Taylor polynomials of sin r and cos r, and the quadrant
    ``k mod 4`` choosing and signing them by selects, so that a loop calling it vectorises."""
    k = np.floor(x * _TWO_OVER_PI + 0.5)
    r = ((x - k * _PIO2[0]) - k * _PIO2[1]) - k * _PIO2[2]
    z = r * r
    s = r + r * z * (
        _SIN[0] + z * (_SIN[1] + z * (_SIN[2] + z * (_SIN[3] + z * (
            _SIN[4] + z * (_SIN[5] + z * (_SIN[6] + z * _SIN[7])))))))
    c = 1.0 - 0.5 * z + z * z * (
        _COS[0] + z * (_COS[1] + z * (_COS[2] + z * (_COS[3] + z * (
            _COS[4] + z * (_COS[5] + z * (_COS[6] + z * _COS[7])))))))
    q = k - 4.0 * np.floor(0.25 * k)
    odd = (q == 1.0) | (q == 3.0)
    sine = c if odd else s
    cosine = s if odd else c
    sine = -sine if q >= 2.0 else sine
    cosine = -cosine if (q == 1.0) | (q == 2.0) else cosine
    return sine, cosine


# Without fast-math, and each formula in the order of the torch one: the constants are those
# of DoublePendulum.constants to the last bit, so the compiled and eager rollouts start alike.
@numba.njit(cache=True, nogil=True, error_model="numpy")
def constants(theta, source, base, gravity, values, jacobian):
    """The ten constants of :meth:`DoublePendulum.constants
    <physid.inference.pendulum.DoublePendulum.constants>` for each row of ``theta`` (N, M),
    into ``values`` (N, 10), and their derivatives with respect to ``theta`` into ``jacobian``
    (N, 10, M): the twelve quantities of :data:`QUANTITIES` are ``theta[n, source[q]]``, or
    ``base[q]`` where ``source[q] < 0``, and that method's products and squares are
    differentiated by hand (one call in place of its hundred-odd torch operations and their
    autograd graph)."""
    jacobian[:] = 0.0
    g = gravity
    p = np.empty(12)
    d = np.empty((N_CONSTANTS, 12))  # ∂ constants / ∂ quantities
    for n in range(theta.shape[0]):
        for q in range(12):
            p[q] = theta[n, source[q]] if source[q] >= 0 else base[q]
        l1, m1, i1, c1x, c1y, d1 = p[0], p[1], p[2], p[3], p[4], p[5]
        m2, i2, c2x, c2y, d2 = p[7], p[8], p[9], p[10], p[11]
        d[:] = 0.0
        v = values[n]
        v[0] = m1 * (c1x * c1x + c1y * c1y) + i1 + m2 * (l1 * l1)  # M11
        d[0, 0], d[0, 1], d[0, 2] = 2.0 * m2 * l1, c1x * c1x + c1y * c1y, 1.0
        d[0, 3], d[0, 4], d[0, 7] = 2.0 * m1 * c1x, 2.0 * m1 * c1y, l1 * l1
        v[1] = m2 * (c2x * c2x + c2y * c2y) + i2  # M22
        d[1, 7], d[1, 8] = c2x * c2x + c2y * c2y, 1.0
        d[1, 9], d[1, 10] = 2.0 * m2 * c2x, 2.0 * m2 * c2y
        v[2] = m2 * l1 * c2x  # Kc
        d[2, 0], d[2, 7], d[2, 9] = m2 * c2x, l1 * c2x, m2 * l1
        v[3] = m2 * l1 * c2y  # Ks
        d[3, 0], d[3, 7], d[3, 10] = m2 * c2y, l1 * c2y, m2 * l1
        v[4] = g * (m1 * c1x + m2 * l1)  # Gx1
        d[4, 0], d[4, 1], d[4, 3], d[4, 7] = g * m2, g * c1x, g * m1, g * l1
        v[5] = g * m1 * c1y  # Gy1
        d[5, 1], d[5, 4] = g * c1y, g * m1
        v[6] = g * m2 * c2x  # Gx2
        d[6, 7], d[6, 9] = g * c2x, g * m2
        v[7] = g * m2 * c2y  # Gy2
        d[7, 7], d[7, 10] = g * c2y, g * m2
        v[8], v[9] = d1, d2
        d[8, 5], d[9, 11] = 1.0, 1.0
        for q in range(12):
            if source[q] >= 0:
                for c in range(N_CONSTANTS):
                    jacobian[n, c, source[q]] += d[c, q]


@_jit
def constants_vjp(grad, jacobian, out):
    """``out[n] = grad[n] @ jacobian[n]``: the cotangent (N, M) of :func:`constants`'
    ``theta`` from that of its values (N, 10)."""
    out[:] = 0.0
    for n in range(grad.shape[0]):
        for c in range(grad.shape[1]):
            for m in range(out.shape[1]):
                out[n, m] += grad[n, c] * jacobian[n, c, m]


@_inline
def _terms(trig, w0, w1, c):
    """The step's intermediates from ``trig = (cos q0, sin q0, cos q1, sin q1)`` and the
    constants ``c`` (a 10-tuple): the angle ``q0 + q1``'s cosine and sine, ``M12``,
    ``Ks``-rotated ``kss``, the determinant, ``v = q̇0 + q̇1``, the right-hand sides ``r1, r2``
    and the accelerations ``a1, acc2`` (of :func:`physid.inference.pendulum.step`)."""
    c0, s0, c1, s1 = trig
    m11, m22, kc, ks, gx1, gy1, gx2, gy2, d1, d2 = c
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


@_inline
def _step_vjp(trig, w0, w1, c, dt, g):
    """The adjoint of one step from a state with rates ``w0, w1`` and trigonometric values
    ``trig``: given the cotangent ``g`` (a 4-tuple) of the state after the step, that of the
    state before it and the constants' (a 10-tuple)."""
    c0, s0, c1, s1 = trig
    m11, m22, _, _, gx1, gy1, gx2, gy2, d1, d2 = c
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
    gc = (
        r2 * y + bdet * m22,
        r1 * x + bdet * m11,
        bm12 * c1 + bkss * s1,
        bkss * c1 - bm12 * s1,
        -br1 * s0,
        -br1 * c0,
        -br2 * s2,
        -br2 * c2,
        -br1 * w0,
        (br1 - br2) * w1,
    )
    before = (
        bq0 - br1 * (gx1 * c0 - gy1 * s0) + ba2,
        bq1 + ba2 + bkss * m12 - bm12 * kss,
        bw0t - d1 * br1 - 2.0 * br2 * kss * w0 + bv,
        bw1t + d2 * (br1 - br2) + bv,
    )
    return before, gc


@_inline
def _constants(lanes, at, j):
    """Lane ``j``'s constants from a block of packed lanes starting at ``at``."""
    return (
        lanes[at + 4 * BLOCK + j], lanes[at + 5 * BLOCK + j], lanes[at + 6 * BLOCK + j],
        lanes[at + 7 * BLOCK + j], lanes[at + 8 * BLOCK + j], lanes[at + 9 * BLOCK + j],
        lanes[at + 10 * BLOCK + j], lanes[at + 11 * BLOCK + j], lanes[at + 12 * BLOCK + j],
        lanes[at + 13 * BLOCK + j],
    )  # fmt: skip


@_inline
def _store(grads, at, g, gc):
    """A lane's cotangents into its block's rows (``at`` its first): the state's ``g`` set,
    the constants' ``gc`` added; each entry by name (see ``_forward``)."""
    grads[at] = g[0]
    grads[at + BLOCK] = g[1]
    grads[at + 2 * BLOCK] = g[2]
    grads[at + 3 * BLOCK] = g[3]
    grads[at + 4 * BLOCK] += gc[0]
    grads[at + 5 * BLOCK] += gc[1]
    grads[at + 6 * BLOCK] += gc[2]
    grads[at + 7 * BLOCK] += gc[3]
    grads[at + 8 * BLOCK] += gc[4]
    grads[at + 9 * BLOCK] += gc[5]
    grads[at + 10 * BLOCK] += gc[6]
    grads[at + 11 * BLOCK] += gc[7]
    grads[at + 12 * BLOCK] += gc[8]
    grads[at + 13 * BLOCK] += gc[9]


@_jit
def _pack(s0, consts, lanes):
    """Lanes ``s0`` (L, 4) and ``consts`` (L, 10) into blocks (``lanes``, flat (blocks, 14,
    BLOCK)); the padding repeats the last lane."""
    n = s0.shape[0]
    for slot in range(lanes.shape[0] // _ROWS):
        block, j = slot // BLOCK, slot % BLOCK
        lane = min(slot, n - 1)
        at = block * _ROWS * BLOCK + j
        for i in range(4):
            lanes[at + i * BLOCK] = s0[lane, i]
        for i in range(N_CONSTANTS):
            lanes[at + (4 + i) * BLOCK] = consts[lane, i]


@_jit
def _targets(measured, index, out):
    """The measurements of every lane (``index`` their rows of ``measured`` (M, T, 4)) in the
    blocks' order (``out``, flat (blocks, T, 4, BLOCK)): one gather per call, so that the loops
    over the lanes read them in order."""
    n_steps = measured.shape[1]
    for block in range(index.shape[0] // BLOCK):
        for t in range(n_steps):
            at = (block * n_steps + t) * 4 * BLOCK
            for j in range(BLOCK):
                row = measured[index[block * BLOCK + j], t]
                out[at + j] = row[0]
                out[at + BLOCK + j] = row[1]
                out[at + 2 * BLOCK + j] = row[2]
                out[at + 3 * BLOCK + j] = row[3]


@_jit
def _forward(lanes, tape, targets, weight, dt, squares):
    """Every block's steps, from the states in ``lanes`` (which end as the last states): the
    state after each step, the trigonometric values and the rates before it into ``tape``
    (flat (blocks, T, 10, BLOCK)). With ``targets`` (``_targets``; an empty array for none),
    ``Σ_t Σ_i (w_i (s_{t,i} − ŝ_{t,i}))²`` into ``squares`` (blocks × BLOCK,)."""
    n_blocks = lanes.shape[0] // (_ROWS * BLOCK)
    n_steps = tape.shape[0] // (n_blocks * _TAPE * BLOCK)
    fit = targets.shape[0] > 0
    for block in range(n_blocks):
        at = block * _ROWS * BLOCK
        for t in range(n_steps):
            out = (block * n_steps + t) * _TAPE * BLOCK
            # The state is read from and written to the same place (the block's rows of
            # ``lanes``): reading the tape's previous step while writing this one is a
            # dependence LLVM cannot measure through numba's index arithmetic.
            for j in range(BLOCK):
                q0, q1 = lanes[at + j], lanes[at + BLOCK + j]
                w0, w1 = lanes[at + 2 * BLOCK + j], lanes[at + 3 * BLOCK + j]
                s_0, c_0 = sincos(q0)
                s_1, c_1 = sincos(q1)
                here = (c_0, s_0, c_1, s_1)
                a1, acc2 = _terms(here, w0, w1, _constants(lanes, at, j))[-2:]
                tape[out + 8 * BLOCK + j] = w0
                tape[out + 9 * BLOCK + j] = w1
                w0 = w0 + dt * a1
                w1 = w1 + dt * (acc2 - a1)
                q0 = q0 + dt * w0
                q1 = q1 + dt * w1
                # Each entry by name: a tuple indexed in a loop is a stack array to LLVM,
                # which keeps the loop over the lanes scalar.
                tape[out + j] = q0
                tape[out + BLOCK + j] = q1
                tape[out + 2 * BLOCK + j] = w0
                tape[out + 3 * BLOCK + j] = w1
                tape[out + 4 * BLOCK + j] = c_0
                tape[out + 5 * BLOCK + j] = s_0
                tape[out + 6 * BLOCK + j] = c_1
                tape[out + 7 * BLOCK + j] = s_1
                lanes[at + j] = q0
                lanes[at + BLOCK + j] = q1
                lanes[at + 2 * BLOCK + j] = w0
                lanes[at + 3 * BLOCK + j] = w1
            if fit:
                given = (block * n_steps + t) * 4 * BLOCK
                for j in range(BLOCK):
                    r0 = weight[0] * (tape[out + j] - targets[given + j])
                    r1 = weight[1] * (tape[out + BLOCK + j] - targets[given + BLOCK + j])
                    r2 = weight[2] * (tape[out + 2 * BLOCK + j] - targets[given + 2 * BLOCK + j])
                    r3 = weight[3] * (tape[out + 3 * BLOCK + j] - targets[given + 3 * BLOCK + j])
                    squares[block * BLOCK + j] += r0 * r0 + r1 * r1 + r2 * r2 + r3 * r3


@_jit
def _backward(lanes, tape, steps, targets, weight, g_squares, dt, grads):
    """The adjoint of ``_forward`` (``lanes``: its constants). ``grads`` (flat (blocks, 14,
    BLOCK)) holds on entry the cotangents of the last states (rows 0–3) and zeros, and on
    return those of the start states and the constants; ``steps`` (flat (blocks, T, 4,
    BLOCK), or empty) adds the cotangents of every state; ``g_squares`` (blocks × BLOCK,) is
    that of the sums (unused without ``targets``)."""
    n_blocks = lanes.shape[0] // (_ROWS * BLOCK)
    n_steps = tape.shape[0] // (n_blocks * _TAPE * BLOCK)
    fit = targets.shape[0] > 0
    every = steps.shape[0] > 0
    extra = np.zeros(4 * BLOCK)  # what a step's state gets besides the next step's adjoint
    for block in range(n_blocks):
        at = block * _ROWS * BLOCK
        for t in range(n_steps - 1, -1, -1):
            # max(…, 0): LLVM cannot prove a reversed loop's index non-negative, and the
            # wrap-around select numba puts on every possibly negative index keeps the loop
            # over the lanes scalar.
            here = max((block * n_steps + t) * _TAPE * BLOCK, 0)
            given = max((block * n_steps + t) * 4 * BLOCK, 0)
            if every:
                for k in range(4 * BLOCK):
                    extra[k] = steps[given + k]
            if fit:  # 2 w² (s − ŝ) ḡ
                for i in range(4):
                    w2 = 2.0 * weight[i] * weight[i]
                    for j in range(BLOCK):
                        k = i * BLOCK + j
                        residual = w2 * (tape[here + k] - targets[given + k])
                        extra[k] = (extra[k] if every else 0.0) + residual * g_squares[
                            block * BLOCK + j]
            for j in range(BLOCK):
                g = (grads[at + j] + extra[j], grads[at + BLOCK + j] + extra[BLOCK + j],
                     grads[at + 2 * BLOCK + j] + extra[2 * BLOCK + j],
                     grads[at + 3 * BLOCK + j] + extra[3 * BLOCK + j])
                trig = (tape[here + 4 * BLOCK + j], tape[here + 5 * BLOCK + j],
                        tape[here + 6 * BLOCK + j], tape[here + 7 * BLOCK + j])
                w0, w1 = tape[here + 8 * BLOCK + j], tape[here + 9 * BLOCK + j]
                g, gc = _step_vjp(trig, w0, w1, _constants(lanes, at, j), dt, g)
                _store(grads, at + j, g, gc)


@_jit
def _unpack_steps(tape, n, out):
    """The states (``out``, (L, T, 4)) of the first ``n`` lanes of the tape."""
    n_steps = out.shape[1]
    for lane in range(n):
        block, j = lane // BLOCK, lane % BLOCK
        for t in range(n_steps):
            at = (block * n_steps + t) * _TAPE * BLOCK + j
            for i in range(4):
                out[lane, t, i] = tape[at + i * BLOCK]


@_jit
def _pack_steps(grad, steps):
    """Cotangents of every state (L, T, 4) into blocks (``steps``, zeros in the padding)."""
    n, n_steps = grad.shape[0], grad.shape[1]
    steps[:] = 0.0
    for lane in range(n):
        block, j = lane // BLOCK, lane % BLOCK
        for t in range(n_steps):
            at = (block * n_steps + t) * 4 * BLOCK + j
            for i in range(4):
                steps[at + i * BLOCK] = grad[lane, t, i]


@_jit
def _rows(packed, first, count, n, out, stride):
    """Rows ``first … first + count − 1`` of the first ``n`` lanes of blocks ``stride`` rows
    apart, as ``out`` (n, count)."""
    for lane in range(n):
        at = (lane // BLOCK) * stride * BLOCK + lane % BLOCK
        for i in range(count):
            out[lane, i] = packed[at + (first + i) * BLOCK]


@_jit
def _set_rows(values, first, packed):
    """The inverse of ``_rows`` on packed lanes: ``values`` (n, count) into rows
    ``first …`` of the first n lanes of ``packed``."""
    for lane in range(values.shape[0]):
        at = (lane // BLOCK) * _ROWS * BLOCK + lane % BLOCK
        for i in range(values.shape[1]):
            packed[at + (first + i) * BLOCK] = values[lane, i]


#: The last few measurements gathered into the blocks' order, with the measurements and rows
#: they came from (a likelihood gathers the same ones on every evaluation).
_GATHERED: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
#: How many :data:`_GATHERED` keeps.
_KEEP = 4


def _gathered(measured: np.ndarray, index: np.ndarray, slots: int) -> np.ndarray:
    """``_targets`` of ``measured`` (M, T, 4) for the lanes' rows ``index``, padded to
    ``slots`` lanes with the last lane's: reused when an earlier call gathered equal
    measurements for equal rows (compared by value, a few thousand numbers against the
    gather's hundreds of thousands), else gathered and remembered (read-only)."""
    for rows, lanes, targets in _GATHERED:
        if np.array_equal(lanes, index) and np.array_equal(rows, measured):
            return targets
    targets = np.empty(slots * measured.shape[1] * 4)
    _targets(measured, np.concatenate((index, np.full(slots - len(index), index[-1]))), targets)
    targets.flags.writeable = False
    _GATHERED.insert(0, (measured.copy(), index.copy(), targets))
    del _GATHERED[_KEEP:]
    return targets


def _blocks(n: int) -> int:
    return -(-n // BLOCK)


def forward(
    s0: np.ndarray, consts: np.ndarray, fixed: tuple, dt: float, n_steps: int, fit: bool
) -> tuple[np.ndarray, np.ndarray, tuple]:
    """Roll the lanes ``s0`` (L, 4) with constants ``consts`` (L, 10) out for ``n_steps``:
    the states (L, T, 4), or with ``fit`` the last states (L, 4); each lane's sum of squared
    weighted residuals (L,) against the measurements of ``fixed = (measured, index, weight)``
    (``measured`` (M, T, 4) of lane ``l`` at row ``index[l]``; zeros without them); and the tape
    :func:`backward` needs (the :class:`~physid.inference.lanes.LaneKernel` contract)."""
    measured, index, weight = fixed
    n = s0.shape[0]
    slots = _blocks(n) * BLOCK
    lanes = np.empty(slots * _ROWS)
    _pack(s0, consts, lanes)
    targets = _gathered(measured, index, slots) if measured.shape[0] else np.empty(0)
    tape = np.empty(slots * n_steps * _TAPE)
    squares = np.zeros(slots)
    constants = lanes.copy()  # the forward pass leaves the last states in ``lanes``
    _forward(lanes, tape, targets, weight, dt, squares)
    if fit:
        states = np.empty((n, 4))
        _rows(lanes, 0, 4, n, states, _ROWS)
    else:
        states = np.empty((n, n_steps, 4))
        _unpack_steps(tape, n, states)
    return states, squares[:n].copy(), (constants, tape, targets, weight, dt, n, n_steps)


def backward(tape: tuple, grad: np.ndarray, g_squares: np.ndarray) -> tuple[np.ndarray, ...]:
    """The adjoint of :func:`forward`: given the cotangents ``grad`` of the states (L, T, 4),
    or of the last state (L, 1, 4), and ``g_squares`` (L,) of the sums, those of the start
    states (L, 4) and of the constants (L, 10)."""
    lanes, states, targets, weight, dt, n, n_steps = tape
    slots = _blocks(n) * BLOCK
    grads = np.zeros(slots * _ROWS)
    if grad.shape[1] == n_steps:  # every state's (also the last's, for one step)
        steps = np.empty(slots * n_steps * 4)
        _pack_steps(grad, steps)
    else:
        steps = np.empty(0)
        _set_rows(grad[:, 0], 0, grads)
    g_sq = np.zeros(slots)
    g_sq[:n] = g_squares
    _backward(lanes, states, steps, targets, weight, g_sq, dt, grads)
    g_s0, g_consts = np.empty((n, 4)), np.empty((n, N_CONSTANTS))
    _rows(grads, 0, 4, n, g_s0, _ROWS)
    _rows(grads, 4, N_CONSTANTS, n, g_consts, _ROWS)
    return g_s0, g_consts
