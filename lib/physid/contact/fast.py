"""A batched exact solver for the contact problems, with implicit-function-theorem gradients.

Both phases of the contact model (problems (5) and (7) of Zhong et al. 2021, see
:mod:`physid.contact.model`) are instances of one conic program per sample,

    minimise  ½ fᵀ A f + cᵀ f
    subject to  f_n,i ≥ lb_i  and  ‖f_t,i‖ ≤ μ_i f_n,i   for every contact i,

with ``f`` stacked per contact as (normal, tangent(s)) and ``k`` components per contact: ``k = 1``
is a limit constraint (no friction), ``k = 2`` a planar frictional contact, where the cone
``|f_t| ≤ μ f_n`` is two half-planes, and ``k = 3`` a spatial contact with a true second-order
cone. A contact with μ = 0 has ``f_t = 0``.

The solution is found in two stages.

1. **Interior point (no gradient).** A primal-dual interior-point method with Nesterov-Todd
   scaling and Mehrotra's predictor-corrector (the method of CVXOPT's ``coneqp``, Vandenberghe
   2010) on the product of the orthant (``f_n ≥ lb``) and one second-order cone per contact
   (``(μ f_n, f_t) ∈ Q^k``; for ``k = 2`` this cone is exactly the two half-planes). It is
   batched over samples, with per-sample step lengths and convergence masks.
2. **Active-set polish (differentiable).** From the interior-point solution every constraint is
   classified (inactive, normal bound active, on the cone's surface, at the apex ``f = 0``) and
   the Karush-Kuhn-Tucker (KKT) equations of that active set, ``R(y, θ) = 0`` with
   ``y = (f, λ)``, are solved by Newton's method to machine precision. A last Newton step
   ``y = y* − J⁻¹ R(y*, θ)`` with ``y*`` and the Jacobian ``J`` detached returns the same
   value and, by the implicit function theorem, the exact derivative ``dy/dθ = −J⁻¹ ∂R/∂θ``
   of the solution with respect to ``θ = (A, c, μ, lb)``, through plain autograd.

A polished solution is verified (primal and dual feasibility of every constraint); it is then
the exact optimum of the convex problem. At μ = 0 the cone degenerates to a ray and the solution
is not differentiable in μ: the polish treats such a contact as sliding on the edge of its cone,
opposite its tangential reaction, which gives the one-sided derivative on the admissible side
μ ≥ 0 (and the same impulse). The same rule resolves cones too thin for the interior point to
tell their edges apart (μ down to about 1e-9 in the plane and 1e-7 in space).

Where the KKT system of the active set is singular, which happens when ``A`` is singular and
the minimiser is not unique (the gyroscope's pivoted contact under the unregularised model), the
interior-point solution is returned without a gradient and flagged in
:attr:`FastSolution.polished`; :mod:`physid.contact.model` then falls back to cvxpylayers where
a gradient is needed.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import torch
from torch import Tensor

from physid.contact import active_sets, single_cone
from physid.core.validate import check_count, check_positive, check_tensor

#: Classifications tried in turn for the samples whose polish does not verify: the threshold on
#: the scaled ratio multiplier / slack of an active constraint, and the relative distance to a
#: cone's boundary below which s and z count as on its surface (:func:`_classify`).
_CLASSIFICATIONS = ((1.0, 1e-6), (1.0, 1e-4), (1.0, 1e-8), (1e-2, 1e-5), (1e2, 1e-5), (1.0, 1e-3))
#: Interior-point iterations after which the polish is tried before the interior point has
#: converged: a polish that verifies is the exact optimum whatever the iterate it started from,
#: so the samples it solves stop there (most need about half the iterations of the tolerance).
_EARLY_POLISH = (6, 9)
#: The classifications tried at those early attempts.
_EARLY_CLASSIFICATIONS = _CLASSIFICATIONS[:1]
#: Largest condition number (1-norm) of a polish KKT matrix treated as nonsingular.
_MAX_CONDITION = single_cone.MAX_CONDITION


@dataclass(frozen=True)
class FastSolution:
    """Solutions of a batch of contact problems.

    Attributes:
        impulse: ``(B, C, k)`` optimal impulses; differentiable where ``polished``.
        polished: ``(B,)`` whether the active-set polish succeeded and was verified (the
            impulse is then exact and carries the implicit gradient).
        converged: ``(B,)`` whether the interior-point stage met its tolerance (or the sample's
            active set verified in the enumeration).
        iterations: interior-point iterations run for the batch (0 where every sample was
            enumerated).
        enumerated: ``(B,)`` whether the sample was solved directly, without the interior
            point: by enumerating its active sets (:mod:`physid.contact.active_sets`) or, for a
            single spatial contact, on the pieces of its cone (then also ``polished``).
    """

    impulse: Tensor
    polished: Tensor
    converged: Tensor
    iterations: int
    enumerated: Tensor


# ---------------------------------------------------------------------------------------------
# Second-order cone algebra on the last dimension (x = (x0, x1)).


@lru_cache(maxsize=16)
def _signs(k: int, dtype: torch.dtype, device: torch.device) -> Tensor:
    """The diagonal (1, -1, ..., -1) of J, cached (one tensor op fewer per use)."""
    out = -torch.ones(k, dtype=dtype, device=device)
    out[0] = 1.0
    return out


def _norm(x: Tensor) -> Tensor:
    return torch.linalg.vector_norm(x, dim=-1)


def _jdot(x: Tensor, y: Tensor) -> Tensor:
    return (x * y * _signs(x.shape[-1], x.dtype, x.device)).sum(-1)


def _jnorm2(x: Tensor) -> Tensor:
    """xᵀJx = (x0 - ‖x1‖)(x0 + ‖x1‖), without the cancellation of x0² - ‖x1‖² at the surface."""
    tail = _norm(x[..., 1:])
    return (x[..., 0] - tail) * (x[..., 0] + tail)


def _jprod(x: Tensor, y: Tensor) -> Tensor:
    """Jordan product x ∘ y = (xᵀy, x0 y1 + y0 x1)."""
    head = (x * y).sum(-1, keepdim=True)
    tail = x[..., :1] * y[..., 1:] + y[..., :1] * x[..., 1:]
    return torch.cat([head, tail], -1)


def _jdiv(lam: Tensor, v: Tensor) -> Tensor:
    """The u with lam ∘ u = v (lam in the interior of the cone)."""
    det = _jnorm2(lam)
    u0 = (lam[..., 0] * v[..., 0] - (lam[..., 1:] * v[..., 1:]).sum(-1)) / det
    u1 = (v[..., 1:] - u0[..., None] * lam[..., 1:]) / lam[..., :1]
    return torch.cat([u0[..., None], u1], -1)


def _flip(x: Tensor) -> Tensor:
    """J x with J = diag(1, -1, ..., -1)."""
    return x * _signs(x.shape[-1], x.dtype, x.device)


def _cone_step(x: Tensor, dx: Tensor) -> Tensor:
    """Largest α ≥ 0 with x + α dx in the second-order cone (inf if unbounded), x interior."""
    a = _jdot(dx, dx)
    b = _jdot(x, dx)
    c = _jnorm2(x)
    disc = b * b - a * c
    exits = (a < 0) | ((b < 0) & (disc >= 0))
    root = c / (torch.sqrt(disc.clamp_min(0.0)) - b)
    return torch.where(exits, root, torch.full_like(root, torch.inf))


def _orthant_step(x: Tensor, dx: Tensor) -> Tensor:
    ratio = torch.where(dx < 0, -x / dx, torch.full_like(x, torch.inf))
    return ratio


@dataclass(frozen=True)
class _Scaling:
    """Nesterov-Todd scaling, W z = W⁻¹ s = λ, for the linear rows and for the cones."""

    w_l: Tensor  # (B, C, r)
    lam_l: Tensor  # (B, C, r)
    vbar: Tensor | None  # (B, C, 3): W = β (2 v̄ v̄ᵀ - J) on each cone
    beta: Tensor | None  # (B, C)
    lam_q: Tensor | None  # (B, C, 3)

    def apply_q(self, x: Tensor) -> Tensor:
        """W x on the cones."""
        vx = (self.vbar * x).sum(-1, keepdim=True)
        return self.beta[..., None] * (2 * self.vbar * vx - _flip(x))

    def apply_q_inv(self, x: Tensor) -> Tensor:
        """W⁻¹ x = β⁻¹ (2 J v̄ v̄ᵀ J - J) x on the cones."""
        jv = _flip(self.vbar)
        return (2 * jv * (jv * x).sum(-1, keepdim=True) - _flip(x)) / self.beta[..., None]

    def q_inv_squared(self) -> Tensor:
        """W⁻² on the cones as (B, C, k, k) matrices."""
        k = self.vbar.shape[-1]
        jmat = torch.diag(_signs(k, self.vbar.dtype, self.vbar.device))
        jv = _flip(self.vbar)
        w_inv = (2 * jv[..., :, None] * jv[..., None, :] - jmat) / self.beta[..., None, None]
        return w_inv @ w_inv


def _nt_scaling(s_l: Tensor, z_l: Tensor, s_q: Tensor | None, z_q: Tensor | None) -> _Scaling:
    w_l = torch.sqrt(s_l / z_l)
    lam_l = torch.sqrt(s_l * z_l)
    if s_q is None:
        return _Scaling(w_l, lam_l, None, None, None)
    s_norm = torch.sqrt(_jnorm2(s_q))
    z_norm = torch.sqrt(_jnorm2(z_q))
    s_bar = s_q / s_norm[..., None]
    z_bar = z_q / z_norm[..., None]
    gamma = torch.sqrt((1 + (s_bar * z_bar).sum(-1)) / 2)
    # The scaling point w̄ satisfies (2 w̄w̄ᵀ - J) z̄ = s̄; W is its square root β (2 v̄v̄ᵀ - J).
    w_point = (s_bar + _flip(z_bar)) / (2 * gamma[..., None])
    vbar = (w_point + _unit(s_q.shape[-1], s_q)) / torch.sqrt(2 * (w_point[..., :1] + 1))
    beta = torch.sqrt(s_norm / z_norm)
    partial = _Scaling(w_l, lam_l, vbar, beta, None)
    return _Scaling(w_l, lam_l, vbar, beta, partial.apply_q(z_q))


# ---------------------------------------------------------------------------------------------
# The conic program. Per contact, linear rows Γ f ≥ h (slack s_l = Γ f - h ≥ 0):
#   k = 1:  f_n ≥ lb
#   k = 2:  f_n ≥ lb,  μ f_n - f_t ≥ 0,  μ f_n + f_t ≥ 0      (the cone as two half-planes)
#   k = 3:  f_n ≥ lb, and the cone s_q = D_μ f = (μ f_n, f_t) ∈ Q³.
# A frictional contact with μ = 0 has f_t = 0 by elimination; its friction rows (or cone) are
# replaced by dummies that are always satisfied (Γ = 0, slack 1).


def _unit(k: int, like: Tensor) -> Tensor:
    e = torch.zeros(k, dtype=like.dtype, device=like.device)
    e[0] = 1.0
    return e


def _block_diag(blocks: Tensor) -> Tensor:
    """(B, C, k, k) blocks as (B, C·k, C·k) block-diagonal matrices."""
    B, C, k, _ = blocks.shape
    if C == 1:
        return blocks.reshape(B, k, k)
    eye = torch.eye(C, dtype=blocks.dtype, device=blocks.device)
    return (blocks[:, :, :, None, :] * eye[None, :, None, :, None]).reshape(B, C * k, C * k)


def _matvec(A: Tensor, x: Tensor) -> Tensor:
    """A @ x for x of shape (B, C, k) and A of shape (B, C·k, C·k)."""
    return (A @ x.reshape(x.shape[0], -1, 1)).reshape(x.shape)


@dataclass(frozen=True)
class _Problem:
    A: Tensor  # (B, m, m); rows and columns of fixed tangents replaced by the identity
    c: Tensor  # (B, C, k); zero on fixed tangents
    mu: Tensor  # (B, C)
    lb: Tensor  # (B, C)
    fixed: Tensor  # (B, C) bool: a frictional contact with μ = 0, so f_t = 0
    rows: Tensor  # (B, C, r, k) Γ
    h: Tensor  # (B, C, r)
    dvec: Tensor  # (B, C, k) the diagonal of D_μ: (μ, 1, ..., 1), zero on fixed contacts

    @property
    def k(self) -> int:
        return self.c.shape[-1]

    @property
    def has_cone(self) -> bool:
        return self.k == 3

    def scale_mu(self, x: Tensor) -> Tensor:
        """D_μ x = (μ x_n, x_t) per contact, zero on the fixed contacts."""
        return x * self.dvec

    def d_mu(self) -> Tensor:
        """D_μ as (B, C, k, k) diagonal matrices."""
        return torch.diag_embed(self.dvec)

    def h_q(self) -> Tensor:
        return self.fixed[..., None] * _unit(self.k, self.c)

    def row_dot(self, x: Tensor) -> Tensor:
        """Γ x per contact, (B, C, r)."""
        return (self.rows @ x[..., None])[..., 0]

    def row_adjoint(self, v: Tensor) -> Tensor:
        """Γᵀ v per contact, (B, C, k)."""
        return (self.rows.transpose(-1, -2) @ v[..., None])[..., 0]

    def residuals(self, x, s_l, z_l, s_q, z_q):
        """Dual residual A x + c - Γᵀ z_l - D_μ z_q and primal residuals s - (G x - h)."""
        r_x = _matvec(self.A, x) + self.c - self.row_adjoint(z_l)
        r_l = s_l - self.row_dot(x) + self.h
        r_q = None
        if self.has_cone:
            r_x = r_x - self.scale_mu(z_q)
            r_q = s_q - self.scale_mu(x) - self.h_q()
        return r_x, r_l, r_q

    def solve_newton(self, scaling: _Scaling, r_x, r_l, r_q, d_l, d_q):
        """The search direction for complementarity right-hand side ``d`` (in scaled space).

        With W dz + W⁻¹ ds = u = λ ⧵ d and the constraint map G = -(Γ, D_μ), the reduced
        system is (A + Gᵀ W⁻² G) dx = -r_x - Gᵀ (W⁻² r + W⁻¹ u); then
        dz = W⁻² (G dx + r) + W⁻¹ u and ds = -G dx - r.
        """
        B, C, k = r_x.shape
        u_l = d_l / scaling.lam_l
        inv_w2 = 1 / scaling.w_l**2
        rhs = -r_x + self.row_adjoint(r_l * inv_w2 + u_l / scaling.w_l)
        blocks = self.rows.transpose(-1, -2) @ (inv_w2[..., None] * self.rows)
        if self.has_cone:
            u_q = _jdiv(scaling.lam_q, d_q)
            w_inv2 = scaling.q_inv_squared()
            v_q = (w_inv2 @ r_q[..., None]).squeeze(-1) + scaling.apply_q_inv(u_q)
            rhs = rhs + self.scale_mu(v_q)
            d_mu = self.d_mu()
            blocks = blocks + d_mu @ w_inv2 @ d_mu
        H = self.A + _block_diag(blocks)
        dx = torch.linalg.solve_ex(H, rhs.reshape(B, -1))[0].reshape(B, C, k)
        g_l = -self.row_dot(dx)
        dz_l = (g_l + r_l) * inv_w2 + u_l / scaling.w_l
        ds_l = -g_l - r_l
        ds_q = dz_q = None
        if self.has_cone:
            g_q = -self.scale_mu(dx)
            dz_q = (w_inv2 @ (g_q + r_q)[..., None]).squeeze(-1) + scaling.apply_q_inv(u_q)
            ds_q = -g_q - r_q
        return dx, ds_l, dz_l, ds_q, dz_q


def _prepare(A: Tensor, c: Tensor, mu: Tensor, lb: Tensor, k: int, eliminate: bool) -> _Problem:
    """The structured problem.

    With ``eliminate``, the interior point's form: frictional contacts with μ = 0 get f_t = 0 by
    elimination (identity rows in A, dummy friction constraints). Without, the problem as it is,
    for the polish, which treats those contacts as sliding on the edge of their cone.
    """
    B, C = mu.shape
    fixed = (mu == 0) & (k >= 2)
    c = c.reshape(B, C, k)
    live = torch.ones_like(mu)
    if eliminate and k >= 2 and bool(fixed.any()):
        tangent = torch.zeros(B, C, k, dtype=torch.bool, device=A.device)
        tangent[..., 1:] = fixed[..., None]
        flat = tangent.reshape(B, -1)
        keep = ~flat
        eye = torch.eye(C * k, dtype=A.dtype, device=A.device).expand_as(A)
        A = torch.where(keep[:, :, None] & keep[:, None, :], A, eye * flat[:, :, None])
        c = torch.where(tangent, torch.zeros_like(c), c)
        live = (~fixed).to(mu.dtype)
    zero = torch.zeros_like(mu)
    if k == 2:
        rows = torch.stack(
            [
                torch.stack([torch.ones_like(mu), zero], -1),
                torch.stack([mu, -live], -1),
                torch.stack([mu, live], -1),
            ],
            -2,
        )
        h = torch.stack([lb, -(1 - live), -(1 - live)], -1)
    else:
        rows = _unit(k, mu).expand(B, C, 1, k)
        h = lb[..., None]
    dvec = torch.cat([mu[..., None], torch.ones_like(c[..., 1:])], -1)
    dvec = torch.where(fixed[..., None], torch.zeros_like(dvec), dvec)
    return _Problem(A=A, c=c, mu=mu, lb=lb, fixed=fixed, rows=rows, h=h, dvec=dvec)


def _shift(v_l: Tensor, v_q: Tensor | None) -> Tensor:
    """Per sample, the shift t with v + t e strictly inside the cones (CVXOPT's start)."""
    worst = (-v_l).flatten(1).amax(-1)
    if v_q is not None:
        cone_min = v_q[..., 0] - v_q[..., 1:].norm(dim=-1)
        worst = torch.maximum(worst, (-cone_min).amax(-1))
    scale = 1.0 + v_l.abs().flatten(1).amax(-1)
    return torch.where(worst >= -1e-8 * scale, 1.0 + worst, torch.zeros_like(worst))


@dataclass
class _IPState:
    """The iterates of :func:`_interior_point` between two of its runs (it can be resumed)."""

    x: Tensor
    s_l: Tensor
    z_l: Tensor
    s_q: Tensor | None
    z_q: Tensor | None
    converged: Tensor
    stalled: Tensor
    iterations: int = 0

    @property
    def finished(self) -> bool:
        """Every sample converged or stalled."""
        return bool((self.converged | self.stalled).all())


def _interior_start(prob: _Problem) -> _IPState:
    """CVXOPT's start: (A + GᵀG) x = -c + Gᵀh, s = h - G x and z = -s, shifted into the cones."""
    A, c = prob.A, prob.c
    B, C, k = c.shape
    e_n = _unit(k, c)
    cone = prob.has_cone
    # Start: (A + GᵀG) x = -c + Gᵀh, s = h - G x and z = -s, both shifted into the cones.
    gtg = prob.rows.transpose(-1, -2) @ prob.rows
    if cone:
        d_mu = prob.d_mu()
        gtg = gtg + d_mu @ d_mu
    rhs = -c + prob.row_adjoint(prob.h)
    x = torch.linalg.solve_ex(A + _block_diag(gtg), rhs.reshape(B, -1))[0].reshape(B, C, k)
    s_l = prob.row_dot(x) - prob.h
    s_q = prob.scale_mu(x) + prob.h_q() if cone else None
    z_l, z_q = -s_l, (-s_q if cone else None)
    shift_s, shift_z = _shift(s_l, s_q), _shift(z_l, z_q)
    s_l = s_l + shift_s[:, None, None]
    z_l = z_l + shift_z[:, None, None]
    if cone:
        s_q = s_q + shift_s[:, None, None] * e_n
        z_q = z_q + shift_z[:, None, None] * e_n
    converged = torch.zeros(B, dtype=torch.bool, device=c.device)
    return _IPState(x, s_l, z_l, s_q, z_q, converged, torch.zeros_like(converged))


def _interior_point(
    prob: _Problem, tol: float, max_iter: int, state: _IPState, done: Tensor | None = None
) -> _IPState:
    """Mehrotra predictor-corrector with Nesterov-Todd scaling from ``state``; no gradient.

    Runs until every sample converged, stalled or is ``done`` (solved otherwise: those keep
    their iterates), or until ``state.iterations`` reaches ``max_iter``; returns the new state.
    """
    c = prob.c
    B, C, k = c.shape
    e_n = _unit(k, c)
    cone = prob.has_cone
    x, s_l, z_l, s_q, z_q = state.x, state.s_l, state.z_l, state.s_q, state.z_q
    stalled, iterations = state.stalled, state.iterations
    done = torch.zeros_like(stalled) if done is None else done
    degree = s_l[0].numel() + (C if cone else 0)
    scale_c = 1.0 + c.abs().flatten(1).amax(-1)
    converged = state.converged
    while iterations < max_iter:
        r_x, r_l, r_q = prob.residuals(x, s_l, z_l, s_q, z_q)
        gap = (s_l * z_l).flatten(1).sum(-1)
        pres = r_l.abs().flatten(1).amax(-1)
        if cone:
            gap = gap + (s_q * z_q).sum((-1, -2))
            pres = torch.maximum(pres, r_q.abs().flatten(1).amax(-1))
        scale_f = 1.0 + x.abs().flatten(1).amax(-1) + prob.lb.abs().amax(-1)
        converged = (
            (r_x.abs().flatten(1).amax(-1) <= tol * scale_c)
            & (pres <= tol * scale_f)
            & (gap.abs() <= tol * scale_c * scale_f)
        )
        if bool((converged | stalled | done).all()):
            break
        iterations += 1
        scaling = _nt_scaling(s_l, z_l, s_q, z_q)
        lam_sq_q = _jprod(scaling.lam_q, scaling.lam_q) if cone else None
        aff = prob.solve_newton(scaling, r_x, r_l, r_q, -(scaling.lam_l**2), _neg(lam_sq_q))
        alpha_aff = _max_step(s_l, z_l, s_q, z_q, aff).clamp(max=1.0)
        gap_aff = _gap_after(s_l, z_l, s_q, z_q, aff, alpha_aff)
        sigma = (gap_aff / gap).clamp(0.0, 1.0) ** 3
        target = sigma * gap / degree
        _, ds_l, dz_l, ds_q, dz_q = aff
        d_l = -(scaling.lam_l**2) + target[:, None, None] - ds_l * dz_l
        d_q = None
        if cone:
            corr = _jprod(scaling.apply_q_inv(ds_q), scaling.apply_q(dz_q))
            d_q = -lam_sq_q + target[:, None, None] * e_n - corr
        step = prob.solve_newton(scaling, r_x, r_l, r_q, d_l, d_q)
        alpha = (0.99 * _max_step(s_l, z_l, s_q, z_q, step)).clamp(max=1.0)
        alpha = alpha[:, None, None]
        dx, ds_l, dz_l, ds_q, dz_q = step
        new = [x + alpha * dx, s_l + alpha * ds_l, z_l + alpha * dz_l]
        if cone:
            new += [s_q + alpha * ds_q, z_q + alpha * dz_q]
        # A sample stops where it converged or where rounding would leave the interior.
        stalled |= ~_interior(*new)
        keep = (converged | stalled | done)[:, None, None]
        x, s_l, z_l = (
            torch.where(keep, old, upd) for old, upd in zip((x, s_l, z_l), new[:3], strict=True)
        )
        if cone:
            s_q = torch.where(keep, s_q, new[3])
            z_q = torch.where(keep, z_q, new[4])
    return _IPState(x, s_l, z_l, s_q, z_q, converged, stalled, iterations)


def _interior(x, s_l, z_l, s_q=None, z_q=None) -> Tensor:
    """Per sample: all finite and (s, z) strictly inside their cones."""
    ok = torch.isfinite(x).flatten(1).all(-1)
    ok &= ((s_l > 0) & (z_l > 0)).flatten(1).all(-1)
    if s_q is not None:
        for v in (s_q, z_q):
            ok &= ((v[..., 0] > 0) & (_jnorm2(v) > 0)).all(-1)
    return ok


def _neg(x: Tensor | None) -> Tensor | None:
    return None if x is None else -x


def _max_step(s_l, z_l, s_q, z_q, step) -> Tensor:
    _, ds_l, dz_l, ds_q, dz_q = step
    alpha = torch.minimum(_orthant_step(s_l, ds_l), _orthant_step(z_l, dz_l)).flatten(1)
    alpha = alpha.amin(-1)
    if s_q is not None:
        cone = torch.minimum(_cone_step(s_q, ds_q), _cone_step(z_q, dz_q)).amin(-1)
        alpha = torch.minimum(alpha, cone)
    return alpha


def _gap_after(s_l, z_l, s_q, z_q, step, alpha) -> Tensor:
    _, ds_l, dz_l, ds_q, dz_q = step
    a = alpha[:, None, None]
    gap = ((s_l + a * ds_l) * (z_l + a * dz_l)).flatten(1).sum(-1)
    if s_q is not None:
        gap = gap + ((s_q + a * ds_q) * (z_q + a * dz_q)).sum((-1, -2))
    return gap


# ---------------------------------------------------------------------------------------------
# Active-set polish: Newton on the KKT equations of the identified active set,
#   stationarity  A f + c - Γᵀ λ_l - λ_c (μ e_n - u) = 0,   u = (0, f_t / ‖f_t‖),
#   active rows   Γ f = h,   active cone   μ f_n = ‖f_t‖,   inactive multipliers = 0,
# and f = 0 for a contact at the apex of its cone. A frictional contact with μ = 0 and a
# tangential reaction ν = (A f + c)_t ≠ 0 is treated as sliding on the edge of its cone, in the
# direction u₀ = -ν / ‖ν‖: its friction is f_t = μ f_n u₀, so the derivative with respect to μ is
# the one-sided derivative on the feasible side μ ≥ 0 (the solution is not differentiable there).
# For k = 2 that edge is one of the two half-planes; for k = 3 the direction is frozen.


@dataclass(frozen=True)
class _ActiveSet:
    rows: Tensor  # (B, C, r) active linear rows
    surface: Tensor  # (B, C) on the cone's surface with f_t ≠ 0 (k = 3)
    apex: Tensor  # (B, C) f = 0 (both half-planes active for k = 2)
    directional: Tensor  # (B, C) μ = 0 and k = 3: f_t = μ f_n u₀
    u0: Tensor  # (B, C, k) the frozen direction (0 on the normal)


def _classify(
    prob: _Problem, full: _Problem, x, s_l, z_l, s_q, z_q, active_ratio, surface_distance
) -> _ActiveSet:
    """Active constraints from the ratio multiplier / (‖A‖ · slack) at the interior point.

    With strict complementarity one of the two tends to zero, so the ratio tends to 0 for an
    inactive and to infinity for an active constraint; ‖A‖ makes it dimensionless. Contacts
    with μ = 0 get the sliding edge of the reaction ν of the unreduced problem ``full``.
    """
    kappa = prob.A.abs().flatten(1).amax(-1).clamp_min(1e-300)[:, None, None]
    rows = z_l > active_ratio * kappa * s_l
    fixed = prob.fixed
    none = torch.zeros_like(rows[..., 0])
    nu = (_matvec(full.A, x) + full.c) * (torch.arange(prob.k, device=x.device) > 0)
    u0 = torch.zeros_like(x)
    directional = none
    # The apex f = 0 needs the normal bound active at lb = 0.
    scale = 1.0 + x.abs().flatten(1).amax(-1, keepdim=True)
    at_zero = rows[..., 0] & (prob.lb.abs() <= 1e-12 * scale)
    if prob.k == 2:
        # μ = 0, or both half-planes apparently active away from the apex (a cone too thin for
        # the interior point to tell its edges apart): slide on the edge opposite the reaction.
        both = rows[..., 1] & rows[..., 2]
        apex = ~fixed & both & at_zero
        edge = fixed | (both & ~at_zero)
        sliding = nu[..., 1] >= 0
        rows = rows.clone()
        rows[..., 1] = torch.where(edge, ~sliding, rows[..., 1])
        rows[..., 2] = torch.where(edge, sliding, rows[..., 2])
        surface = none
    elif prob.has_cone:
        # On the surface both s and z tend to the cone's boundary; on the central path near
        # the apex or the interior, s ∝ J z, so both stay away from it.
        distance = torch.maximum(_boundary_distance(s_q), _boundary_distance(z_q))
        surface = ~fixed & (distance < surface_distance)
        ratio = z_q[..., 0] / (kappa[..., 0] * s_q[..., 0])
        # Away from the apex, a pinched cone is too thin to resolve: it is its surface.
        pinched = ~fixed & ~surface & (ratio > active_ratio)
        apex = pinched & at_zero
        surface = surface | (pinched & ~at_zero)
        norm = nu.norm(dim=-1, keepdim=True)
        u0 = torch.where(fixed[..., None] & (norm > 0), -nu / norm.clamp_min(1e-300), u0)
        directional = fixed
    else:
        apex = surface = none
    return _ActiveSet(
        rows=rows & ~apex[..., None],
        surface=surface,
        apex=apex,
        directional=directional,
        u0=u0,
    )


def _boundary_distance(x: Tensor) -> Tensor:
    """(x0 - ‖x1‖) / x0: 0 on the cone's boundary, 1 on its axis."""
    return (x[..., 0] - x[..., 1:].norm(dim=-1)) / x[..., 0]


def _tangent_direction(f: Tensor, act: _ActiveSet) -> tuple[Tensor, Tensor]:
    """(u, ‖f_t‖) with u = (0, f_t / ‖f_t‖) per contact (u₀ where frozen, 0 where f_t = 0)."""
    norm = f[..., 1:].norm(dim=-1)
    safe = torch.where(norm > 0, norm, torch.ones_like(norm))
    u = torch.cat([torch.zeros_like(f[..., :1]), f[..., 1:] / safe[..., None]], -1)
    return torch.where(act.directional[..., None], act.u0, u), norm


def _kkt_residual(prob: _Problem, act: _ActiveSet, f, lam_l, lam_c) -> Tensor:
    """R(y, θ) of the active set, stacked as (B, C·k + C·r [+ C])."""
    grad = _matvec(prob.A, f) + prob.c
    stat = grad - prob.row_adjoint(lam_l)
    r_rows = torch.where(act.rows, prob.row_dot(f) - prob.h, lam_l)
    parts = [r_rows.flatten(1)]
    if prob.has_cone:
        e_n = _unit(prob.k, f)
        u, norm = _tangent_direction(f, act)
        stat = stat - lam_c[..., None] * (prob.mu[..., None] * e_n - u)
        r_cone = torch.where(act.surface, prob.mu * f[..., 0] - norm, lam_c)
        r_cone = torch.where(act.directional, lam_c + (act.u0 * grad).sum(-1), r_cone)
        parts.append(r_cone)
        # Frozen direction: the tangent rows become f_t - μ f_n u₀ = 0.
        frozen = f - (prob.mu * f[..., 0])[..., None] * act.u0
        tangent = act.directional[..., None] & (torch.arange(prob.k, device=f.device) > 0)
        stat = torch.where(tangent, frozen, stat)
    stat = torch.where(act.apex[..., None], f, stat)
    return torch.cat([stat.flatten(1)] + parts, -1)


def _kkt_jacobian(prob: _Problem, act: _ActiveSet, f, lam_l, lam_c) -> Tensor:
    """∂R/∂y of :func:`_kkt_residual` (analytic, detached)."""
    B, C, k = f.shape
    r = prob.rows.shape[-2]
    m, n_l = C * k, C * r
    n_y = m + n_l + (C if prob.has_cone else 0)
    eye_c = torch.eye(C, dtype=f.dtype, device=f.device)
    # Γ as a (B, C·r, C·k) block-diagonal matrix.
    gamma = (prob.rows[:, :, :, None, :] * eye_c[None, :, None, :, None]).reshape(B, n_l, m)
    J = f.new_zeros(B, n_y, n_y)
    J_ff = prob.A.clone()
    J[:, :m, m : m + n_l] = -gamma.transpose(1, 2)
    if prob.has_cone:
        u, norm = _tangent_direction(f, act)
        safe = torch.where(norm > 0, norm, torch.ones_like(norm))
        e_n = _unit(k, f)
        eye_k = torch.eye(k, dtype=f.dtype, device=f.device)
        proj = eye_k - u[..., :, None] * u[..., None, :] - e_n[:, None] * e_n[None, :]
        curv = (lam_c / safe * act.surface)[..., None, None] * proj
        J_ff = J_ff + _block_diag(curv)
        grad_c = prob.mu[..., None] * e_n - u  # (B, C, k)
        grad_mat = (grad_c[:, :, None, :] * eye_c[None, :, :, None]).reshape(B, C, m)
        J[:, :m, m + n_l :] = -grad_mat.transpose(1, 2)
        rows_c = torch.cat([grad_mat, f.new_zeros(B, C, n_l + C)], -1)
        rows_c_free = torch.cat([f.new_zeros(B, C, m + n_l), eye_c.expand(B, C, C)], -1)
        cone_rows = torch.where(act.surface[..., None], rows_c, rows_c_free)
        # Frozen direction: ∂(λ_c + u₀ᵀ(A f + c))/∂f = u₀ᵀ A on the contact's rows.
        u0_mat = (act.u0[:, :, None, :] * eye_c[None, :, :, None]).reshape(B, C, m)
        rows_dir = torch.cat([u0_mat @ prob.A, f.new_zeros(B, C, n_l), eye_c.expand(B, C, C)], -1)
        J[:, m + n_l :, :] = torch.where(act.directional[..., None], rows_dir, cone_rows)
    J[:, :m, :m] = J_ff
    if prob.has_cone:
        # Frozen direction: rows f_t - μ f_n u₀ (∂/∂f_t = I, ∂/∂f_n = -μ u₀).
        block = torch.eye(k, dtype=f.dtype, device=f.device).expand(B, C, k, k).clone()
        block[..., 0] = -prob.mu[..., None] * act.u0
        block[..., 0, 0] = 1.0
        frozen = torch.cat([_block_diag(block), f.new_zeros(B, m, n_y - m)], -1)
        tangent = (act.directional[..., None] & (torch.arange(k, device=f.device) > 0)).reshape(
            B, m, 1
        )
        J[:, :m, :] = torch.where(tangent, frozen, J[:, :m, :])
    apex_rows = act.apex[..., None].expand(B, C, k).reshape(B, m, 1)
    eye_rows = torch.cat([torch.eye(m, dtype=f.dtype, device=f.device), f.new_zeros(m, n_y - m)], 1)
    J[:, :m, :] = torch.where(apex_rows, eye_rows, J[:, :m, :])
    rows_active = torch.cat([gamma, f.new_zeros(B, n_l, n_y - m)], -1)
    eye_l = torch.eye(n_l, dtype=f.dtype, device=f.device)
    rows_free = torch.cat([f.new_zeros(n_l, m), eye_l, f.new_zeros(n_l, n_y - m - n_l)], -1)
    J[:, m : m + n_l, :] = torch.where(act.rows.reshape(B, n_l, 1), rows_active, rows_free)
    return J


def _split(prob: _Problem, y: Tensor):
    B, C, k = prob.c.shape
    r = prob.rows.shape[-2]
    m, n_l = C * k, C * r
    f = y[:, :m].reshape(B, C, k)
    lam_l = y[:, m : m + n_l].reshape(B, C, r)
    lam_c = y[:, m + n_l :] if prob.has_cone else None
    return f, lam_l, lam_c


def _verified(prob: _Problem, act: _ActiveSet, f, lam_l, lam_c, tol: float) -> Tensor:
    """Primal and dual feasibility of a polished point (then it is the convex optimum)."""
    scale_f = 1.0 + f.abs().flatten(1).amax(-1) + prob.lb.abs().amax(-1)
    scale_v = 1.0 + prob.c.abs().flatten(1).amax(-1)
    ok = (prob.row_dot(f) - prob.h >= -tol * scale_f[:, None, None]).flatten(1).all(-1)
    ok &= (lam_l >= -tol * scale_v[:, None, None]).flatten(1).all(-1)
    grad = _matvec(prob.A, f) + prob.c
    dual_apex = grad[..., 0] - prob.mu * grad[..., 1:].norm(dim=-1) >= -tol * scale_v[:, None]
    ok &= (~act.apex | dual_apex).all(-1)
    if prob.has_cone:
        norm = f[..., 1:].norm(dim=-1)
        ok &= (prob.mu * f[..., 0] - norm >= -tol * scale_f[:, None]).all(-1)
        ok &= (lam_c >= -tol * scale_v[:, None]).all(-1)
    return ok


def _inverse(J: Tensor) -> tuple[Tensor, Tensor]:
    """J⁻¹ and whether J is nonsingular (1-norm condition number below the limit)."""
    J_inv, info = torch.linalg.inv_ex(J)
    cond = J.abs().sum(-2).amax(-1) * J_inv.abs().sum(-2).amax(-1)
    ok = (info == 0) & torch.isfinite(cond) & (cond < _MAX_CONDITION)
    return torch.where(ok[:, None, None], J_inv, torch.zeros_like(J_inv)), ok


def _initial_multipliers(full: _Problem, act: _ActiveSet, x, z_l, z_q) -> Tensor:
    """(f, λ_l, λ_c) from the interior point; contacts with μ = 0 get λ = ‖ν‖."""
    nu = (_matvec(full.A, x) + full.c)[..., 1:].norm(dim=-1)
    lam_l = torch.where(act.rows, z_l, torch.zeros_like(z_l))
    if full.k == 2:
        lam_l = torch.where(full.fixed[..., None] & act.rows, nu[..., None], lam_l)
    parts = [x.flatten(1), lam_l.flatten(1)]
    if full.has_cone:
        lam_c = torch.where(act.surface, z_q[..., 0], torch.zeros_like(z_q[..., 0]))
        parts.append(torch.where(act.directional, nu, lam_c))
    return torch.cat(parts, -1)


def _polish(full: _Problem, act: _ActiveSet, x, z_l, z_q, newton_steps: int):
    """Newton on the active set's KKT equations from the interior point; no gradient.

    Returns the solution y = (f, λ), the inverse KKT Jacobian there (zero where singular) and
    whether the result is verified.
    """
    return _newton(full, act, _initial_multipliers(full, act, x, z_l, z_q), newton_steps)


def _newton(full: _Problem, act: _ActiveSet, y: Tensor, newton_steps: int):
    """Newton on the KKT equations of ``act`` from ``y`` = (f, λ); no gradient. Returns the
    solution, the inverse KKT Jacobian there (zero where singular) and whether it verifies."""
    for _ in range(newton_steps if full.has_cone else 1):
        R = _kkt_residual(full, act, *_split(full, y))
        if full.has_cone and bool((R.abs().amax(-1) <= 1e-14 * (1 + y.abs().amax(-1))).all()):
            break
        J_inv, _ = _inverse(_kkt_jacobian(full, act, *_split(full, y)))
        y = y - (J_inv @ R[..., None])[..., 0]
    J_inv, ok = _inverse(_kkt_jacobian(full, act, *_split(full, y)))
    ok &= torch.isfinite(y).all(-1)
    ok &= _verified(full, act, *_split(full, y), tol=single_cone.VERIFY_TOL)
    return y, J_inv, ok


def _merge(old: _ActiveSet, new: _ActiveSet, take: Tensor) -> _ActiveSet:
    """Per sample, ``new`` where ``take`` else ``old``."""
    pick = lambda a, b: torch.where(take.reshape(-1, *([1] * (a.dim() - 1))), a, b)  # noqa: E731
    return _ActiveSet(
        rows=pick(new.rows, old.rows),
        surface=pick(new.surface, old.surface),
        apex=pick(new.apex, old.apex),
        directional=pick(new.directional, old.directional),
        u0=pick(new.u0, old.u0),
    )


def solve(
    A: Tensor,
    c: Tensor,
    mu: Tensor,
    lb: Tensor,
    k: int,
    tol: float = 1e-9,
    max_iter: int = 50,
    newton_steps: int = 8,
    direct: bool = True,
) -> FastSolution:
    """Solve ``min ½ fᵀAf + cᵀf`` s.t. ``f_n,i ≥ lb_i``, ``‖f_t,i‖ ≤ μ_i f_n,i`` for a batch.

    Two kinds of problem are solved directly first: small batches of few polyhedral contacts
    (:func:`physid.contact.active_sets.supports`) by enumerating their active sets
    (:mod:`physid.contact.active_sets`: no iteration), and a single spatial contact with μ > 0
    by locating its minimiser on the pieces of its cone (interior, bound, apex, surface, rim:
    one angle to search on the last two) and polishing it there. On the CPU both are compiled
    calls (:mod:`physid.contact.active_sets`, :mod:`physid.contact.single_cone`) with
    hand-written adjoints; elsewhere they run as batched tensor operations. The samples that do not
    verify on these paths, and all others, go through the interior point and the polish of
    the module docstring.

    Args:
        A: ``(B, C·k, C·k)`` symmetric positive semi-definite contact-space inverse inertia.
        c: ``(B, C·k)`` linear term (a contact-space velocity).
        mu: ``(B, C)`` non-negative friction coefficients (ignored for ``k = 1``).
        lb: ``(B, C)`` lower bounds on the normal impulses.
        k: components per contact (1, 2 or 3).
        tol: relative tolerance of the interior-point stage.
        max_iter: interior-point iteration limit.
        newton_steps: polish Newton iterations for ``k = 3`` (the polish is linear for
            ``k ≤ 2``).
        direct: try the direct paths first where they apply (False: the interior point for
            every sample).

    Returns:
        A :class:`FastSolution`; its ``impulse`` is differentiable in all four inputs where
        ``polished`` is true, through the implicit function theorem.
    """
    k = check_count("k", k, minimum=1, maximum=3)
    check_positive("tol", tol)
    check_count("max_iter", max_iter)
    check_count("newton_steps", newton_steps)
    if not isinstance(direct, bool):
        raise TypeError(f"direct must be a bool, got {type(direct).__name__}")
    for name, value, dims in (("A", A, 3), ("c", c, 2), ("mu", mu, 2), ("lb", lb, 2)):
        shape = (None,) * dims
        check_tensor(name, value, shape=shape, dtype=torch.float64, nonnegative=name == "mu")
    B, m = c.shape
    C = mu.shape[1]
    if m != C * k or A.shape != (B, m, m) or lb.shape != (B, C) or mu.shape[0] != B:
        raise ValueError(
            f"inconsistent shapes: A {tuple(A.shape)}, c {tuple(c.shape)}, "
            f"mu {tuple(mu.shape)}, lb {tuple(lb.shape)}, k={k!r}"
        )
    return _solve(A, c, mu, lb, k, tol, max_iter, newton_steps, direct)


def _solve(A: Tensor, c: Tensor, mu: Tensor, lb: Tensor, k: int, tol: float = 1e-9,
           max_iter: int = 50, newton_steps: int = 8, direct: bool = True) -> FastSolution:
    """:func:`solve` of arguments already checked (by :func:`solve`, or built by
    :class:`~physid.contact.model.ContactModel` from a space the library made)."""
    B, m = c.shape
    C = mu.shape[1]
    # Everything is solved for the equivalent problem in f' = κ f with A' = A / κ and
    # lb' = κ lb (κ the largest entry of A, detached), whose entries are of the order of a
    # velocity whatever the masses: the tolerances and the polish's conditioning then hold over
    # the range of inverse inertias that training explores.
    kappa = A.detach().abs().flatten(1).amax(-1).clamp_min(1e-300)
    A_s, lb_s = A / kappa[:, None, None], lb * kappa[:, None]
    enumerated = torch.zeros(B, dtype=torch.bool, device=c.device)
    if direct and active_sets.supports(B, C, k, compiled=c.device.type == "cpu"):
        f, enumerated = active_sets.solve(A_s, c, mu, lb_s, k)
    elif direct and k == 3 and C == 1:
        cone = single_cone.solve if c.device.type == "cpu" else _single_cone
        f, enumerated = cone(A_s, c, mu, lb_s, newton_steps)
    if not bool(enumerated.any()):  # every sample, without gathering and scattering them
        f, polished, converged, iterations = _interior_polish(
            A_s, c, mu, lb_s, k, tol, max_iter, newton_steps
        )
    else:
        polished, converged, iterations = enumerated, enumerated, 0
        if not bool(enumerated.all()):
            rest = (~enumerated).nonzero()[:, 0]
            f_rest, ok, conv, iterations = _interior_polish(
                A_s[rest], c[rest], mu[rest], lb_s[rest], k, tol, max_iter, newton_steps
            )
            f = f.index_put((rest,), f_rest)
            polished = polished.index_put((rest,), ok)
            converged = converged.index_put((rest,), conv)
    return FastSolution(
        impulse=f / kappa[:, None, None],
        polished=polished,
        converged=converged,
        iterations=iterations,
        enumerated=enumerated,
    )


def _interior_polish(
    A_s: Tensor,
    c: Tensor,
    mu: Tensor,
    lb_s: Tensor,
    k: int,
    tol: float,
    max_iter: int,
    newton_steps: int,
) -> tuple[Tensor, Tensor, Tensor, int]:
    """The interior point and the polish (module docstring) of scaled problems: the impulses
    (polished, else the interior point's), and whether polished, converged, the iterations."""
    with torch.no_grad():
        args = (A_s.detach(), c.detach(), mu.detach(), lb_s.detach(), k)
        full0 = _prepare(*args, eliminate=False)
        reduced = _prepare(*args, eliminate=True)
        state = _interior_start(reduced)
        ok = act = y = J_inv = None
        for budget in (*_EARLY_POLISH, max_iter):
            budget = min(budget, max_iter)
            state = _interior_point(reduced, tol, budget, state, done=ok)
            # Final: the iteration limit, or every sample converged, stalled or verified.
            final = budget >= max_iter or state.iterations < budget
            x, s_l, z_l, s_q, z_q = state.x, state.s_l, state.z_l, state.s_q, state.z_q
            for setting in _CLASSIFICATIONS if final else _EARLY_CLASSIFICATIONS:
                act_try = _classify(reduced, full0, x, s_l, z_l, s_q, z_q, *setting)
                y_try, J_inv_try, good = _polish(full0, act_try, x, z_l, z_q, newton_steps)
                if not final:
                    # At μ = 0 the derivative in μ follows the direction of the tangential
                    # reaction at the interior point, which only the converged one pins down.
                    good = good & ~full0.fixed.any(-1)
                if ok is None:
                    ok, act, y, J_inv = good, act_try, y_try, J_inv_try
                else:
                    take = good & ~ok
                    act = _merge(act, act_try, take)
                    y = torch.where(take[:, None], y_try, y)
                    J_inv = torch.where(take[:, None, None], J_inv_try, J_inv)
                    ok = ok | good
                if bool(ok.all()):
                    break
            if final or bool(ok.all()):
                break
        converged, iterations = state.converged | ok, state.iterations
        J_inv = torch.where(ok[:, None, None], J_inv, torch.zeros_like(J_inv))
        y = torch.where(ok[:, None], y, torch.zeros_like(y))
    f = _implicit_step(A_s, c, mu, lb_s, k, act, y, J_inv)
    return torch.where(ok[:, None, None], f, x), ok, converged, iterations


def _implicit_step(A_s, c, mu, lb_s, k: int, act: _ActiveSet, y: Tensor, J_inv: Tensor) -> Tensor:
    """The differentiable Newton step ``y - J⁻¹ R(y, θ)`` with ``y`` and ``J⁻¹`` detached: the
    same impulse, with the implicit-function-theorem derivative in ``θ = (A, c, μ, lb)``."""
    full = _prepare(A_s, c, mu, lb_s, k, eliminate=False)
    R = _kkt_residual(full, act, *_split(full, y))
    return _split(full, y - (J_inv @ R[..., None])[..., 0])[0]


def _angle_terms(A: Tensor, c: Tensor, mu: Tensor, theta: Tensor):
    """a = dᵀc and b = dᵀAd with d = (1, μ cos θ, μ sin θ), and their first two derivatives
    in θ; ``A`` (B, 3, 3), ``c`` (B, 3), ``mu`` (B,), ``theta`` (B, n)."""
    cos, sin = torch.cos(theta), torch.sin(theta)
    one, zero = torch.ones_like(theta), torch.zeros_like(theta)
    m = mu[:, None]
    d = torch.stack([one, m * cos, m * sin], -1)  # (B, n, 3)
    d1 = torch.stack([zero, -m * sin, m * cos], -1)
    d2 = torch.stack([zero, -m * cos, -m * sin], -1)
    Ad, Ad1 = d @ A.mT, d1 @ A.mT
    a, a1, a2 = d @ c[:, :, None], d1 @ c[:, :, None], d2 @ c[:, :, None]
    b = (d * Ad).sum(-1)
    b1 = 2 * (d1 * Ad).sum(-1)
    b2 = 2 * ((d2 * Ad).sum(-1) + (d1 * Ad1).sum(-1))
    return d, a[..., 0], a1[..., 0], a2[..., 0], b, b1, b2


def _best_angle(A: Tensor, c: Tensor, mu: Tensor, lb: Tensor, rim: bool) -> Tensor:
    """The angle θ of the tangential direction minimising the objective on the cone's surface
    (``rim`` False: f = n d(θ) with the best n = -a/b, objective -a²/2b where a < 0) or on its
    rim at the bound (f = lb d(θ), objective lb² b/2 + lb a): Newton from the local minima of
    a grid, the best end."""
    grid = torch.arange(single_cone.ANGLES, dtype=A.dtype, device=A.device) * (
        2 * torch.pi / single_cone.ANGLES
    )
    theta = grid.expand(A.shape[0], -1)

    def value(theta: Tensor):
        _, a, a1, a2, b, b1, b2 = _angle_terms(A, c, mu, theta)
        if rim:
            L = lb[:, None]
            return L * L * b / 2 + L * a, L * L * b1 / 2 + L * a1, L * L * b2 / 2 + L * a2
        phi = torch.where(a < 0, -a * a / (2 * b), torch.full_like(a, torch.inf))
        g = -a * a1 / b + a * a * b1 / (2 * b * b)
        h = -(a1 * a1 + a * a2) / b + 2 * a * a1 * b1 / b**2 + a * a * b2 / (2 * b**2)
        return phi, g, h - a * a * b1 * b1 / b**3

    def newton(theta: Tensor) -> Tensor:
        for _ in range(single_cone.ANGLE_STEPS):
            _, g, h = value(theta)
            step = torch.where(h > 0, g / h.clamp_min(1e-300), torch.zeros_like(g))
            theta = theta - step.clamp(-0.5, 0.5)
        return theta

    # Newton from every local minimum of the grid, the lowest end (A nearly singular can make
    # two local minima differ by less than the grid resolves); from the first angle where no
    # grid value is finite.
    phi, _, _ = value(theta)
    local = torch.isfinite(phi) & (phi <= phi.roll(1, 1)) & (phi <= phi.roll(-1, 1))
    ends = newton(theta)
    end_phi = value(ends)[0].nan_to_num(posinf=torch.finfo(phi.dtype).max)
    best = torch.where(local, end_phi, torch.full_like(end_phi, torch.inf)).argmin(1)
    chosen = ends.gather(1, best[:, None])[:, 0]
    return torch.where(local.any(1), chosen, newton(theta[:, :1])[:, 0])


def _single_cone(A_s, c, mu, lb_s, newton_steps: int) -> tuple[Tensor, Tensor]:
    """One spatial contact per sample (k = 3, C = 1, μ > 0) without the interior point, in
    batched tensor operations (off the CPU; :mod:`physid.contact.single_cone` is the same
    compiled).

    The minimiser lies in the interior (f = -A⁻¹c), on the face f_n = lb inside the cone, at
    the apex (lb = 0), on the cone's surface, or on its rim at the bound; on the last two the
    tangential direction is the one angle left, found by :func:`_best_angle`. The first of
    these that is feasible (and dual feasible where that is cheap to tell) gives the active
    set and a starting point for the polish's Newton iterations, whose result is verified as
    the interior point's is. Returns the impulses (differentiable, through the implicit step)
    and whether each sample verified.
    """
    with torch.no_grad():
        A0, c0, mu0, lb0 = A_s.detach(), c.detach(), mu.detach(), lb_s.detach()
        full = _prepare(A0, c0, mu0, lb0, 3, eliminate=False)
        m0, l0 = mu0[:, 0], lb0[:, 0]
        scale = 1.0 + c0.abs().amax(-1) + l0.abs()
        tol = 1e-12 * scale

        def inside(f: Tensor) -> Tensor:
            return (f[:, 0] - l0 >= -tol) & (m0 * f[:, 0] - f[:, 1:].norm(dim=-1) >= -tol)

        interior = torch.linalg.solve_ex(A0, -c0)[0]
        tangent = torch.linalg.solve_ex(A0[:, 1:, 1:], -(c0[:, 1:] + A0[:, 1:, 0] * l0[:, None]))[0]
        face = torch.cat([l0[:, None], tangent], -1)
        face_ok = inside(face) & ((A0 @ face[..., None])[:, 0, 0] + c0[:, 0] >= -tol)
        apex_ok = (l0.abs() <= 1e-12 * scale) & (c0[:, 0] - m0 * c0[:, 1:].norm(dim=-1) >= -tol)
        theta = _best_angle(A0, c0, m0, l0, rim=False)
        d, a, *_, b, _, _ = _angle_terms(A0, c0, m0, theta[:, None])
        surface = (-a / b)[:, :, None] * d  # (B, 1, 3)
        surface = surface[:, 0]
        rim_theta = _best_angle(A0, c0, m0, l0, rim=True)
        rim = l0[:, None] * _angle_terms(A0, c0, m0, rim_theta[:, None])[0][:, 0]
        take_interior = inside(interior)
        take_face = ~take_interior & face_ok
        take_apex = ~take_interior & ~take_face & apex_ok
        take_surface = ~take_interior & ~take_face & ~take_apex & (a[:, 0] < 0) & inside(surface)
        take_rim = ~take_interior & ~take_face & ~take_apex & ~take_surface
        f = torch.where(take_interior[:, None], interior, rim)
        f = torch.where(take_face[:, None], face, f)
        f = torch.where(take_apex[:, None], torch.zeros_like(f), f)
        f = torch.where(take_surface[:, None], surface, f)
        act = _ActiveSet(
            rows=(take_face | take_rim)[:, None, None],
            surface=(take_surface | take_rim)[:, None],
            apex=take_apex[:, None],
            directional=torch.zeros_like(take_apex)[:, None],
            u0=torch.zeros_like(f)[:, None],
        )
        # Multipliers from the stationarity A f + c = Γᵀλ_l + λ_c (μ e_n - u).
        grad = (A0 @ f[..., None])[..., 0] + c0
        norm = f[:, 1:].norm(dim=-1, keepdim=True)
        u = f[:, 1:] / torch.where(norm > 0, norm, torch.ones_like(norm))
        lam_c = torch.where(act.surface[:, 0], -(grad[:, 1:] * u).sum(-1), torch.zeros_like(m0))
        lam_l = torch.where(act.rows[:, 0, 0], grad[:, 0] - m0 * lam_c, torch.zeros_like(m0))
        y = torch.cat([f, lam_l[:, None], lam_c[:, None]], -1)
        y, J_inv, ok = _newton(full, act, y, newton_steps)
        ok &= ~full.fixed[:, 0]
        y = torch.where(ok[:, None], y, torch.zeros_like(y))
        J_inv = torch.where(ok[:, None, None], J_inv, torch.zeros_like(J_inv))
    f = _implicit_step(A_s, c, mu, lb_s, 3, act, y, J_inv)
    return torch.where(ok[:, None, None], f, torch.zeros_like(f)), ok
