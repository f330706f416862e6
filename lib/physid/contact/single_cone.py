"""One spatial contact per sample, compiled: the direct path of :mod:`physid.contact.fast`.

A sample with one spatial contact (``k = 3``, ``C = 1``, ``μ > 0``) is the problem::

    minimise  ½ fᵀ A f + cᵀ f   subject to  f_n ≥ lb  and  ‖f_t‖ ≤ μ f_n,

whose minimiser lies in the interior (``f = -A⁻¹c``), on the face ``f_n = lb`` inside the cone,
at the apex (``lb = 0``), on the cone's surface, or on its rim at the bound; on the last two
the tangential direction is one angle θ: :data:`ANGLE_STEPS` Newton steps from every local
minimum of a grid of :data:`ANGLES`, the lowest end. The first candidate that is feasible fixes
the active set and starts Newton's method on that set's KKT equations ``R(y, θ) = 0``,
``y = (f, λ_l, λ_c)``, whose result is verified as the interior point's polish is
(``physid.contact.fast._verified``). ``physid.contact.fast._single_cone`` states the same
steps in batched tensor operations, which run off the CPU and which the tests hold this
module to. Where A is singular and the minimisers form a segment (the gyroscope under CM as
stated), the path may end at an end of the segment, where the cone's surface pins it, and verify
there: a minimiser, with the one-sided derivative of that end.

Here every sample is one compiled call (numba's ``@njit``), with no tensor operation and no
host synchronisation per Newton step, and the impulse's derivative is the implicit function
theorem's, ``df/dθ = -(J⁻¹)_f ∂R/∂θ`` with the KKT Jacobian ``J`` at the solution, computed by
a second compiled call in the backward pass (``_SingleCone``). The gyroscope's contact
problems take this path: two per contact step.
"""

from __future__ import annotations

import math

import numba
import numpy as np
import torch
from torch import Tensor

from physid.core.linalg import solve_in_place

__all__ = ["ANGLES", "ANGLE_STEPS", "MAX_CONDITION", "VERIFY_TOL", "solve"]

#: Angles of the grid on the cone's surface (or its rim) (here and in
#: ``physid.contact.fast._single_cone``).
ANGLES = 32
#: Newton steps on the angle from each local minimum of the grid.
ANGLE_STEPS = 4
#: Largest condition number (1-norm) of a KKT Jacobian treated as nonsingular (here and in
#: the polish of :mod:`physid.contact.fast`).
MAX_CONDITION = 1e11
#: Relative tolerance of the verification of a polished point (here and in the polish).
VERIFY_TOL = 1e-8

_HUGE = np.finfo(np.float64).max

_jit = numba.njit(cache=True, fastmath=False, nogil=True)
_inline = numba.njit(cache=True, fastmath=False, nogil=True, inline="always")


@_inline
def _dot3(a, b):
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


@_inline
def _matvec3(A, x, out):
    for i in range(3):
        out[i] = A[i, 0] * x[0] + A[i, 1] * x[1] + A[i, 2] * x[2]


@_jit
def _solve(K, rhs, n, out, W):
    """``out = K[:n, :n]⁻¹ rhs[:n]`` (NaN where K is singular); ``W`` a work array."""
    for i in range(n):
        for j in range(n):
            W[i, j] = K[i, j]
        W[i, n] = rhs[i]
    ok = solve_in_place(W[:, :n], W[:, n:], n, 1, 0.0)
    for i in range(n):
        out[i] = W[i, n] if ok else np.nan
    return ok


@_jit
def _invert(J, out, W):
    """``out = J⁻¹`` and whether J is nonsingular with a 1-norm condition number below
    :data:`MAX_CONDITION` (else ``out`` is zero), as :func:`physid.contact.fast._inverse`;
    ``W`` a work array."""
    n = J.shape[0]
    for i in range(n):
        for j in range(n):
            W[i, j] = J[i, j]
            W[i, n + j] = 1.0 if i == j else 0.0
    ok = solve_in_place(W[:, :n], W[:, n:], n, n, 0.0)
    if ok:
        norm_j = norm_inv = 0.0
        for j in range(n):
            sj = si = 0.0
            for i in range(n):
                out[i, j] = W[i, n + j]
                sj += abs(J[i, j])
                si += abs(W[i, n + j])
            norm_j = max(norm_j, sj)
            norm_inv = max(norm_inv, si)
        cond = norm_j * norm_inv
        ok = math.isfinite(cond) and cond < MAX_CONDITION
    if not ok:
        out[:] = 0.0
    return ok


@_inline
def _direction(f, u):
    """u = (0, f_t / ‖f_t‖) (zero where f_t = 0) and ‖f_t‖."""
    norm = math.sqrt(f[1] * f[1] + f[2] * f[2])
    safe = norm if norm > 0 else 1.0
    u[0] = 0.0
    u[1] = f[1] / safe
    u[2] = f[2] / safe
    return norm


@_jit
def _residual(A, c, mu, lb, rows, surface, apex, y, R):
    """R(y) of the active set (:func:`physid.contact.fast._kkt_residual` for one contact)."""
    f = y[:3]
    u = np.empty(3)
    grad = np.empty(3)
    _matvec3(A, f, grad)
    norm = _direction(f, u)
    lam_l, lam_c = y[3], y[4]
    for i in range(3):
        grad[i] += c[i]
        stat = grad[i] - lam_c * ((mu if i == 0 else 0.0) - u[i])
        if i == 0:
            stat -= lam_l
        R[i] = f[i] if apex else stat
    R[3] = f[0] - lb if rows else lam_l
    R[4] = mu * f[0] - norm if surface else lam_c


@_jit
def _jacobian(A, mu, rows, surface, apex, y, J):
    """∂R/∂y (:func:`physid.contact.fast._kkt_jacobian` for one contact)."""
    f = y[:3]
    u = np.empty(3)
    norm = _direction(f, u)
    safe = norm if norm > 0 else 1.0
    J[:] = 0.0
    lam_c = y[4]
    for i in range(3):
        for j in range(3):
            J[i, j] = A[i, j]
            if surface:
                proj = (1.0 if i == j else 0.0) - u[i] * u[j] - (1.0 if i == j == 0 else 0.0)
                J[i, j] += lam_c / safe * proj
        J[i, 4] = -((mu if i == 0 else 0.0) - u[i])
    J[0, 3] = -1.0
    if surface:
        for j in range(3):
            J[4, j] = (mu if j == 0 else 0.0) - u[j]
    else:
        J[4, 4] = 1.0
    if apex:
        for i in range(3):
            for j in range(5):
                J[i, j] = 1.0 if i == j else 0.0
    if rows:
        J[3, 0] = 1.0
    else:
        J[3, 3] = 1.0


@_jit
def _verified(A, c, mu, lb, apex, y):
    """Primal and dual feasibility (:func:`physid.contact.fast._verified` for one contact)."""
    tol = VERIFY_TOL
    f_max = max(abs(y[0]), abs(y[1]), abs(y[2]))
    scale_f = 1.0 + f_max + abs(lb)
    scale_v = 1.0 + max(abs(c[0]), abs(c[1]), abs(c[2]))
    grad = np.empty(3)
    _matvec3(A, y[:3], grad)
    for i in range(3):
        grad[i] += c[i]
    ok = y[0] - lb >= -tol * scale_f
    ok = ok and y[3] >= -tol * scale_v
    if apex:
        ok = ok and grad[0] - mu * math.sqrt(grad[1] ** 2 + grad[2] ** 2) >= -tol * scale_v
    ok = ok and mu * y[0] - math.sqrt(y[1] ** 2 + y[2] ** 2) >= -tol * scale_f
    return ok and y[4] >= -tol * scale_v


@_inline
def _quad(A, x0, x1, x2, y0, y1, y2):
    """xᵀ A y for x = (x0, x1, x2), y = (y0, y1, y2)."""
    return (x0 * (A[0, 0] * y0 + A[0, 1] * y1 + A[0, 2] * y2)
            + x1 * (A[1, 0] * y0 + A[1, 1] * y1 + A[1, 2] * y2)
            + x2 * (A[2, 0] * y0 + A[2, 1] * y1 + A[2, 2] * y2))


@_jit
def _angle_value(A, c, mu, lb, theta, rim, out):
    """The objective on the surface (``rim`` False: f = n d(θ) with the best n) or on the rim
    (f = lb d(θ)) and its first two derivatives in θ, into ``out``, with d = (1, μ cos θ,
    μ sin θ), a = dᵀc and b = dᵀAd (:func:`physid.contact.fast._best_angle`); returns a, b."""
    cos, sin = math.cos(theta), math.sin(theta)
    d0, d1, d2 = 1.0, mu * cos, mu * sin  # d and its derivatives in θ: e = d', g = d''
    e1, e2 = -mu * sin, mu * cos
    g1, g2 = -mu * cos, -mu * sin
    a = d0 * c[0] + d1 * c[1] + d2 * c[2]
    a1 = e1 * c[1] + e2 * c[2]
    a2 = g1 * c[1] + g2 * c[2]
    b = _quad(A, d0, d1, d2, d0, d1, d2)
    b1 = 2 * _quad(A, d0, d1, d2, 0.0, e1, e2)
    b2 = 2 * (_quad(A, d0, d1, d2, 0.0, g1, g2) + _quad(A, 0.0, e1, e2, 0.0, e1, e2))
    if rim:
        out[0] = lb * lb * b / 2 + lb * a
        out[1] = lb * lb * b1 / 2 + lb * a1
        out[2] = lb * lb * b2 / 2 + lb * a2
    else:
        out[0] = -a * a / (2 * b) if a < 0 else np.inf
        out[1] = -a * a1 / b + a * a * b1 / (2 * b * b)
        h = -(a1 * a1 + a * a2) / b + 2 * a * a1 * b1 / b**2 + a * a * b2 / (2 * b**2)
        out[2] = h - a * a * b1 * b1 / b**3
    return a, b


@_jit
def _best_angle(A, c, mu, lb, rim):
    """The best angle: :data:`ANGLE_STEPS` Newton steps from every local minimum of a grid of
    :data:`ANGLES`, the lowest of their ends (from the grid's first angle where no value is
    finite). With A nearly singular (CM's least-norm term) two local minima can differ by
    less than the grid resolves, and only one is the minimiser."""
    out = np.empty(3)
    values = np.empty(ANGLES)
    for i in range(ANGLES):
        _angle_value(A, c, mu, lb, i * (2 * math.pi / ANGLES), rim, out)
        values[i] = out[0]
    best, best_value = 0.0, np.inf
    found = False
    for i in range(ANGLES):
        v = values[i]
        if not (math.isfinite(v) and v <= values[i - 1] and v <= values[(i + 1) % ANGLES]):
            continue
        theta = _newton_angle(A, c, mu, lb, i * (2 * math.pi / ANGLES), rim, out)
        _angle_value(A, c, mu, lb, theta, rim, out)
        end = out[0] if out[0] < np.inf else _HUGE  # NaN and ∞ last, the first of them kept
        if not found or end < best_value:
            best, best_value, found = theta, end, True
    if not found:
        best = _newton_angle(A, c, mu, lb, 0.0, rim, out)
    return best


@_inline
def _newton_angle(A, c, mu, lb, theta, rim, out):
    for _ in range(ANGLE_STEPS):
        _angle_value(A, c, mu, lb, theta, rim, out)
        g, h = out[1], out[2]
        step = g / max(h, 1e-300) if h > 0 else 0.0
        theta -= min(max(step, -0.5), 0.5)
    return theta


@_inline
def _inside(f, lb, mu, tol):
    return f[0] - lb >= -tol and mu * f[0] - math.sqrt(f[1] ** 2 + f[2] ** 2) >= -tol


@_jit
def _forward(A, c, mu, lb, newton_steps):
    """Every sample's solution ``y (B, 5)``, the inverse KKT Jacobian there ``(B, 5, 5)``,
    whether it verified, and its active set (the bound's row, the surface, the apex)."""
    B = c.shape[0]
    Y = np.zeros((B, 5))
    J_inv = np.zeros((B, 5, 5))
    ok = np.zeros(B, np.bool_)
    rows = np.zeros(B, np.bool_)
    surface = np.zeros(B, np.bool_)
    apex = np.zeros(B, np.bool_)
    interior = np.empty(3)
    face = np.empty(3)
    f = np.empty(3)
    grad = np.empty(3)
    u = np.empty(3)
    out = np.empty(3)
    y = np.empty(5)
    R = np.empty(5)
    step = np.empty(5)
    J = np.empty((5, 5))
    inv = np.empty((5, 5))
    W = np.empty((5, 10))
    sub = np.empty((2, 2))
    rhs = np.empty(3)
    tangent = np.empty(2)
    for b in range(B):
        Ab, cb, m0, l0 = A[b], c[b], mu[b], lb[b]
        if m0 == 0.0:  # a frictionless contact is left to the interior point
            continue
        scale = 1.0 + max(abs(cb[0]), abs(cb[1]), abs(cb[2])) + abs(l0)
        tol = 1e-12 * scale
        for i in range(3):
            rhs[i] = -cb[i]
        _solve(Ab, rhs, 3, interior, W)
        for i in range(2):
            rhs[i] = -(cb[1 + i] + Ab[1 + i, 0] * l0)
            for j in range(2):
                sub[i, j] = Ab[1 + i, 1 + j]
        _solve(sub, rhs, 2, tangent, W)
        face[0], face[1], face[2] = l0, tangent[0], tangent[1]
        face_ok = _inside(face, l0, m0, tol) and _dot3(Ab[0], face) + cb[0] >= -tol
        apex_ok = (abs(l0) <= 1e-12 * scale
                   and cb[0] - m0 * math.sqrt(cb[1] ** 2 + cb[2] ** 2) >= -tol)
        theta = _best_angle(Ab, cb, m0, l0, False)
        a, bb = _angle_value(Ab, cb, m0, l0, theta, False, out)
        n = -a / bb
        on_surface = np.array([n, n * m0 * math.cos(theta), n * m0 * math.sin(theta)])
        if _inside(interior, l0, m0, tol):
            f[:] = interior
            row, surf, top = False, False, False
        elif face_ok:
            f[:] = face
            row, surf, top = True, False, False
        elif apex_ok:
            f[:] = 0.0
            row, surf, top = False, False, True
        elif a < 0 and _inside(on_surface, l0, m0, tol):
            f[:] = on_surface
            row, surf, top = False, True, False
        else:
            rim = _best_angle(Ab, cb, m0, l0, True)
            f[0], f[1], f[2] = l0, l0 * m0 * math.cos(rim), l0 * m0 * math.sin(rim)
            row, surf, top = True, True, False
        # Multipliers from the stationarity A f + c = λ_l e_n + λ_c (μ e_n - u).
        _matvec3(Ab, f, grad)
        for i in range(3):
            grad[i] += cb[i]
        _direction(f, u)
        lam_c = -(grad[1] * u[1] + grad[2] * u[2]) if surf else 0.0
        lam_l = grad[0] - m0 * lam_c if row else 0.0
        y[0], y[1], y[2], y[3], y[4] = f[0], f[1], f[2], lam_l, lam_c
        for _ in range(newton_steps):
            _residual(Ab, cb, m0, l0, row, surf, top, y, R)
            r_max = y_max = 0.0
            for i in range(5):
                r_max = max(r_max, abs(R[i]))
                y_max = max(y_max, abs(y[i]))
            if r_max <= 1e-14 * (1 + y_max):
                break
            _jacobian(Ab, m0, row, surf, top, y, J)
            _invert(J, inv, W)  # zero where singular: the iterate stays
            for i in range(5):
                step[i] = 0.0
                for j in range(5):
                    step[i] += inv[i, j] * R[j]
            for i in range(5):
                y[i] -= step[i]
        _jacobian(Ab, m0, row, surf, top, y, J)
        good = _invert(J, inv, W)
        for i in range(5):
            good = good and math.isfinite(y[i])
        good = good and _verified(Ab, cb, m0, l0, top, y)
        if good:
            ok[b] = True
            rows[b], surface[b], apex[b] = row, surf, top
            Y[b] = y
            J_inv[b] = inv
    return Y, J_inv, ok, rows, surface, apex


@_jit
def _backward(Y, J_inv, ok, rows, surface, apex, grad):
    """The implicit derivative: with ``r = -(J⁻¹)_fᵀ ∂L/∂f``, ``∂A = r_stat fᵀ``,
    ``∂c = r_stat`` (off the apex), ``∂μ = -λ_c r_stat,n + f_n r_cone`` (on the surface) and
    ``∂lb = -r_bound`` (the bound active)."""
    B = Y.shape[0]
    dA = np.zeros((B, 3, 3))
    dc = np.zeros((B, 3))
    dmu = np.zeros(B)
    dlb = np.zeros(B)
    r = np.empty(5)
    for b in range(B):
        if not ok[b]:
            continue
        for i in range(5):
            acc = 0.0
            for j in range(3):
                acc += J_inv[b, j, i] * grad[b, j]
            r[i] = -acc
        if not apex[b]:
            for i in range(3):
                dc[b, i] = r[i]
                for j in range(3):
                    dA[b, i, j] = r[i] * Y[b, j]
            dmu[b] -= Y[b, 4] * r[0]
        if surface[b]:
            dmu[b] += Y[b, 0] * r[4]
        if rows[b]:
            dlb[b] = -r[3]
    return dA, dc, dmu, dlb


class _SingleCone(torch.autograd.Function):
    """:func:`solve`'s impulses with their implicit derivative."""

    @staticmethod
    def forward(ctx, A: Tensor, c: Tensor, mu: Tensor, lb: Tensor, newton_steps: int):
        Y, J_inv, ok, rows, surface, apex = _forward(
            *(t.detach().numpy() for t in (A, c, mu, lb)), newton_steps
        )
        ctx.state = (Y, J_inv, ok, rows, surface, apex)
        solved = torch.from_numpy(ok)
        ctx.mark_non_differentiable(solved)
        return torch.from_numpy(np.ascontiguousarray(Y[:, :3])), solved

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, grad_f: Tensor, _grad_solved):
        dA, dc, dmu, dlb = _backward(*ctx.state, np.ascontiguousarray(grad_f.numpy()))
        return (*(torch.from_numpy(t) for t in (dA, dc, dmu, dlb)), None)


def solve(A: Tensor, c: Tensor, mu: Tensor, lb: Tensor, newton_steps: int) -> tuple[Tensor, Tensor]:
    """The impulses ``(B, 1, 3)`` of single spatial contacts (module docstring), differentiable
    in ``(A, c, μ, lb)``, and ``(B,)`` whether each verified (elsewhere zero: μ = 0, or no
    candidate's Newton iterations verified; those are left to the interior point).

    Args:
        A: ``(B, 3, 3)`` scaled contact-space inverse inertia (on the CPU, float64).
        c: ``(B, 3)`` linear term.
        mu: ``(B, 1)`` friction coefficients.
        lb: ``(B, 1)`` lower bounds on the normal impulse.
        newton_steps: the most Newton iterations on the active set's KKT equations.
    """
    args = (t.contiguous() for t in (A, c, mu[:, 0], lb[:, 0]))
    f, solved = _SingleCone.apply(*args, newton_steps)
    return f[:, None], solved
