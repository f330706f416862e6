"""Batched primal–dual interior-point solver for mixed LCPs, with implicit gradients.

The problem (the form of Eq. (2) of Song & Boularias, as solved by lcp-physics) is: find
``x, s, z, y`` with

    Q x + p + Gᵀ z + Aᵀ y = 0,    G x + s = h + F z,    A x = b,
    s ≥ 0,  z ≥ 0,  s ⊙ z = 0,

batched over a leading dimension. The solver is Mehrotra's predictor–corrector primal–dual
interior-point method (Mattingley & Boyd 2012, as in qpth/OptNet and lcp-physics' ``pdipm``),
in float64. Each Newton system is reduced by eliminating ``ds`` and ``dz``: ``F`` is given as
a block-diagonal matrix (a list of ``(batch, count, size, size)`` block tensors laid out one
after the other along ``z``), so ``(diag(s/z) + F)⁻¹`` is a batch of small inverses and the
linear algebra left is a dense ``(n + neq)`` saddle system.

Gradients come from implicit differentiation of the optimality (KKT) conditions at the
solution (Amos & Kolter 2017, OptNet), not from unrolling the iterations: the backward pass
solves one transposed reduced KKT system.

Friction bounded by an unknown normal impulse (the ``μ_f`` entry of Figure 2, ``ξ = μ λ_n −
ζᵀλ_t``) puts ``μ`` in ``F`` off the skew-symmetric pattern, and the LCP is no longer monotone:
interior-point iterations can stall on it. A :class:`Coupling` names those entries; the solver
then treats the normal impulse as a scalar unknown per item, as staggered projections do
(Kaufman et al. 2008): with ``μ λ̂_n`` moved into ``h`` the LCP left is monotone, and its normal
multiplier ``Φ(λ̂_n)`` must equal ``λ̂_n``. Fixed-point steps bracket the root of
``Φ(λ̂) − λ̂``, regula falsi (the Illinois variant) closes it, and a bracket that collapses onto
a jump of ``Φ`` mixes the multipliers of its two sides (:class:`SolverError` if none of this
converges within ``max_rounds``). The gradient is the implicit derivative of the *coupled* KKT
conditions at that solution, so it is exact for the LCP as written, ``μ`` included.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

from physid.core.validate import check_count, check_positive, check_tensor

__all__ = ["Coupling", "LCPSolution", "SolverError", "solve_lcp"]


#: The backward pass clamps the complementarity ratios s/z to [BACKWARD_RATIO, 1/BACKWARD_RATIO].
BACKWARD_RATIO = 1e-8


class SolverError(RuntimeError):
    """The interior-point iterations did not reach the requested residual, or diverged."""


@dataclass(frozen=True)
class LCPSolution:
    """Solution of a batch of mixed LCPs; ``residual`` is the final KKT residual per item."""

    x: Tensor
    s: Tensor
    z: Tensor
    y: Tensor
    iterations: int
    residual: Tensor
    rounds: int = 1


@dataclass(frozen=True)
class Coupling:
    """Entries ``F[bound, normal] = μ`` of one block of ``F``: in every item of block
    ``block`` (shape ``(B, count, size, size)``), the row ``row`` (a friction bound ``ξ``) gets
    ``μ`` times the multiplier of column ``col`` (its normal impulse). ``mu (B, count)`` >= 0;
    ``start (B, count)`` an optional first guess of those normal multipliers (default 0)."""

    block: int
    row: int
    col: int
    mu: Tensor
    start: Tensor | None = None


def _block_mm(blocks: Sequence[Tensor], v: Tensor, transpose: bool = False) -> Tensor:
    """``blockdiag(blocks) @ v`` for ``v`` of shape ``(B, m, r)``."""
    out, offset, batch, cols = [], 0, v.shape[0], v.shape[-1]
    for blk in blocks:
        count, size = blk.shape[-3], blk.shape[-1]
        part = v[:, offset : offset + count * size].reshape(batch, count, size, cols)
        mat = blk.mT if transpose else blk
        out.append((mat @ part).reshape(batch, count * size, cols))
        offset += count * size
    return torch.cat(out, dim=1)


def _block_inverse(blocks: Sequence[Tensor], d: Tensor) -> list[Tensor]:
    """Blocks of ``(diag(d) + F)⁻¹`` (``inv_ex``: a singular block gives non-finite values)."""
    out, offset, batch = [], 0, d.shape[0]
    for blk in blocks:
        count, size = blk.shape[-3], blk.shape[-1]
        diag = d[:, offset : offset + count * size].reshape(batch, count, size)
        if size == 1:
            out.append(1.0 / (blk + diag.unsqueeze(-1)))
        else:
            out.append(torch.linalg.inv_ex(blk + torch.diag_embed(diag))[0])
        offset += count * size
    return out


def _mv(mat: Tensor, vec: Tensor) -> Tensor:
    return (mat @ vec.unsqueeze(-1)).squeeze(-1)


class _Reduced:
    """The KKT system reduced to ``[[Q + Gᵀ W G, Aᵀ], [A, 0]]`` with ``W = (D + F)⁻¹``."""

    def __init__(self, Q: Tensor, G: Tensor, A: Tensor, blocks: Sequence[Tensor], d: Tensor):
        self.G, self.n, self.neq = G, Q.shape[-1], A.shape[-2]
        self.W = _block_inverse(blocks, d)
        K = Q + G.mT @ _block_mm(self.W, G)
        if self.neq:
            zeros = K.new_zeros(K.shape[0], self.neq, self.neq)
            K = torch.cat([torch.cat([K, A.mT], 2), torch.cat([A, zeros], 2)], 1)
        self.lu, self.pivots, _ = torch.linalg.lu_factor_ex(K)

    def _saddle(self, top: Tensor, bottom: Tensor, adjoint: bool) -> tuple[Tensor, Tensor]:
        rhs = torch.cat([top, bottom], 1) if self.neq else top
        sol = torch.linalg.lu_solve(self.lu, self.pivots, rhs.unsqueeze(-1), adjoint=adjoint)
        sol = sol.squeeze(-1)
        return sol[:, : self.n], sol[:, self.n :]

    def newton(self, rx, rz, ry, rs, s, z):
        """Solve Q dx + Gᵀdz + Aᵀdy = −rx, G dx + ds − F dz = −rz, A dx = −ry, z ds + s dz = −rs."""
        t = rz - rs / z
        wt = _block_mm(self.W, t.unsqueeze(-1)).squeeze(-1)
        dx, dy = self._saddle(-rx - _mv(self.G.mT, wt), -ry, adjoint=False)
        dz = _block_mm(self.W, (_mv(self.G, dx) + t).unsqueeze(-1)).squeeze(-1)
        ds = (-rs - s * dz) / z
        return dx, ds, dz, dy

    def adjoint(self, gx: Tensor, gz: Tensor, gy: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """Solve the transposed KKT system; returns ``u_x``, ``ũ = z ⊙ u_z`` and ``u_y``."""
        wtg = _block_mm(self.W, gz.unsqueeze(-1), transpose=True).squeeze(-1)
        ux, uy = self._saddle(gx + _mv(self.G.mT, wtg), gy, adjoint=True)
        ut = _block_mm(self.W, (gz - _mv(self.G, ux)).unsqueeze(-1), transpose=True)
        return ux, ut.squeeze(-1), uy


def _max_step(v: Tensor, dv: Tensor) -> Tensor:
    ratio = torch.where(dv < 0, -v / dv.clamp(max=-1e-300), torch.full_like(v, torch.inf))
    return ratio.amin(1)


def _residuals(Q, p, G, h, blocks, A, b, x, s, z, y):
    rx = _mv(Q, x) + p + _mv(G.mT, z) + _mv(A.mT, y)
    rz = _mv(G, x) + s - h - _block_mm(blocks, z.unsqueeze(-1)).squeeze(-1)
    ry = _mv(A, x) - b
    return rx, rz, ry


def _kkt_residual(rx: Tensor, rz: Tensor, ry: Tensor, s: Tensor, z: Tensor) -> Tensor:
    parts = [rx.abs().amax(1), rz.abs().amax(1), (s * z).amax(1)]
    if ry.shape[1]:
        parts.append(ry.abs().amax(1))
    return torch.stack(parts, 1).amax(1)


def _pdipm(Q, p, G, h, blocks, A, b, tol: float, max_iter: int):
    """Mehrotra predictor–corrector iterations; every input is a detached float64 tensor."""
    batch, m = h.shape
    ones = h.new_ones(batch, m)
    # Initial point: the Newton step from zero with s = z = 1, then shifted into s, z > 0.
    init = _Reduced(Q, G, A, blocks, ones)
    x, _, z, y = init.newton(p, -h, -b, torch.zeros_like(h), ones, ones)
    s = -z

    def shift(v: Tensor) -> Tensor:
        low = v.amin(1, keepdim=True)
        return torch.where(low < 1e-8, v + 1.0 - low, v)

    s, z = shift(s), shift(z)
    previous: tuple[Tensor, ...] = ()
    for iteration in range(max_iter + 1):
        rx, rz, ry = _residuals(Q, p, G, h, blocks, A, b, x, s, z, y)
        residual = _kkt_residual(rx, rz, ry, s, z)
        active = ~(residual <= tol)  # NaN stays active
        if not torch.isfinite(residual).all():
            _diverged(iteration, ~torch.isfinite(residual), previous, tol)
        previous = (residual, rx, rz, ry, x, s, z, y)
        if not active.any():
            return x, s, z, y, iteration, residual
        if iteration == max_iter:
            worst = residual.max().item()
            items = torch.nonzero(active).flatten().tolist()
            raise SolverError(
                f"LCP solver did not converge: KKT residual {worst:.3e} > tol {tol:.1e} after "
                f"{max_iter} iterations ({len(items)} of {batch} batch items, e.g. {items[:10]})"
            )
        comp = s * z
        mu = comp.mean(1, keepdim=True)
        red = _Reduced(Q, G, A, blocks, s / z)
        dx, ds, dz, dy = red.newton(rx, rz, ry, comp, s, z)
        alpha = torch.minimum(_max_step(s, ds), _max_step(z, dz)).clamp(max=1.0).unsqueeze(1)
        mu_aff = ((s + alpha * ds) * (z + alpha * dz)).mean(1, keepdim=True)
        sigma = (mu_aff / mu) ** 3
        dx, ds, dz, dy = red.newton(rx, rz, ry, comp + ds * dz - sigma * mu, s, z)
        alpha = (0.99 * torch.minimum(_max_step(s, ds), _max_step(z, dz))).clamp(max=1.0)
        alpha = torch.where(active, alpha, torch.zeros_like(alpha)).unsqueeze(1)
        keep = ~active.unsqueeze(1)
        x = torch.where(keep, x, x + alpha * dx)
        s = torch.where(keep, s, s + alpha * ds)
        z = torch.where(keep, z, z + alpha * dz)
        y = torch.where(keep, y, y + alpha * dy)
    raise AssertionError("unreachable")  # pragma: no cover


def _diverged(iteration: int, bad: Tensor, previous: tuple[Tensor, ...], tol: float) -> None:
    """Raise the :class:`SolverError` of iterates that left the floating-point range.

    Interior-point iterates of an LCP with no solution grow without bound (the multipliers
    ``z`` when the constraints are infeasible, ``x`` and ``s`` when the problem is unbounded)
    while the residual of the equations stalls: the error gives both at the last finite
    iteration (``previous``: its KKT residual, ``r_x, r_z, r_y`` and ``x, s, z, y``).
    Non-finite values at the start point mean that the first Newton system was singular.
    """
    items = torch.nonzero(bad).flatten().tolist()
    if iteration == 0:
        raise SolverError(
            f"LCP solver: the KKT system at the start point is singular for batch items "
            f"{items[:10]} (e.g. linearly dependent rows of A, or an x that neither Q nor the "
            f"constraints determine)"
        )
    residual, *rest = (t[bad] for t in previous)
    equations = max(r.abs().amax().item() if r.numel() else 0.0 for r in rest[:3])
    size = max(v.abs().amax().item() if v.numel() else 0.0 for v in rest[3:])
    raise SolverError(
        f"LCP has no solution (infeasible or unbounded): the interior-point iterates diverged "
        f"to non-finite values at iteration {iteration} for batch items {items[:10]}; at "
        f"iteration {iteration - 1} they had grown to {size:.3e} while the residual of the "
        f"equations was still {equations:.3e} (KKT residual {residual.max().item():.3e} > tol "
        f"{tol:.1e})"
    )


def _column(values: Tensor, like: Tensor) -> Tensor:
    """``values (B,)`` shaped to broadcast against ``like (B, …)``."""
    return values.reshape(-1, *([1] * (like.dim() - 1)))


def _staggered(Q, p, G, h, blocks, A, b, tol: float, max_iter: int, coupling: _Coupled):
    """Solve the coupled LCP as a scalar root per item (see the module docstring).

    With ``μ λ̂_n`` moved into ``h`` the LCP is monotone; its normal multiplier ``Φ(λ̂_n)``
    defines ``r(λ̂) = Φ(λ̂) − λ̂``, with ``r(0) ≥ 0`` and ``r < 0`` for large ``λ̂`` (a finger
    that may hold any friction needs a bounded push). Fixed-point steps ``λ̂ ← Φ(λ̂)`` run until
    a sign change brackets the root, then the Illinois variant of regula falsi closes it (or
    the bracket collapses onto a jump of ``Φ``, where the two sides' multipliers are mixed).
    One coupled normal per item (``count = 1``)."""
    mono = list(blocks)
    blk = mono[coupling.block].clone()
    blk[:, :, coupling.row, coupling.col] = 0.0
    mono[coupling.block] = blk
    normal, bound, mu = coupling.normal, coupling.bound, coupling.mu
    batch = Q.shape[0]
    guess = coupling.start[:, 0].clone()
    nan = torch.full_like(guess, torch.nan)
    lo_g, lo_r, hi_g, hi_r = nan.clone(), nan.clone(), nan.clone(), nan.clone()
    last_side = torch.zeros(batch, dtype=torch.long, device=Q.device)
    out: list[Tensor] = []
    lo_sol: list[Tensor] = []
    hi_sol: list[Tensor] = []
    lo_phi, hi_phi = nan.clone(), nan.clone()
    residual = h.new_zeros(batch)
    iterations = 0
    active = torch.ones(batch, dtype=torch.bool, device=Q.device)
    for rounds in range(1, coupling.max_rounds + 1):
        i = torch.nonzero(active).flatten()
        h_round = h[i].index_add(1, bound, mu[i] * guess[i].unsqueeze(1))
        part = [blk_[i] for blk_ in mono]
        solution = _pdipm(Q[i], p[i], G[i], h_round, part, A[i], b[i], tol, max_iter)
        x, s_, z, y, its, res = solution
        iterations += its
        if not out:
            for value in (x, s_, z, y):
                out.append(value.new_zeros(batch, *value.shape[1:]))
                lo_sol.append(value.new_zeros(batch, *value.shape[1:]))
                hi_sol.append(value.new_zeros(batch, *value.shape[1:]))
        residual[i] = res
        phi = z[:, normal[0]]
        r = phi - guess[i]
        done = r.abs() <= coupling.tol * (1.0 + guess[i].abs())
        g_i = guess[i]
        up = r > 0
        for k, value in enumerate((x, s_, z, y)):
            out[k][i] = value
            lo_sol[k][i] = torch.where(_column(up, value), value, lo_sol[k][i])
            hi_sol[k][i] = torch.where(_column(~up, value), value, hi_sol[k][i])
        # Update the bracket: lo has r > 0, hi has r < 0; Illinois halves the stale end.
        lo_phi[i] = torch.where(up, phi, lo_phi[i])
        hi_phi[i] = torch.where(~up, phi, hi_phi[i])
        lo_g[i] = torch.where(up, g_i, lo_g[i])
        lo_r[i] = torch.where(up, r, torch.where(last_side[i] == -1, lo_r[i] / 2, lo_r[i]))
        hi_g[i] = torch.where(~up, g_i, hi_g[i])
        hi_r[i] = torch.where(~up, r, torch.where(last_side[i] == 1, hi_r[i] / 2, hi_r[i]))
        last_side[i] = torch.where(up, 1, -1)
        bracketed = ~torch.isnan(lo_g[i]) & ~torch.isnan(hi_g[i])
        falsi = (lo_g[i] * hi_r[i] - hi_g[i] * lo_r[i]) / (hi_r[i] - lo_r[i])
        guess[i] = torch.where(bracketed, falsi, (g_i + r).clamp(min=0.0))
        # A bracket that collapses onto a jump of Φ: x is continuous there, and the
        # multipliers of the two sides mix into the ones with λ_n = λ̂ (both solve the LCP of
        # the same x, whose multipliers form a convex set).
        collapsed = bracketed & ~done & ((hi_g[i] - lo_g[i]).abs() <= 1e-12 * (1.0 + g_i.abs()))
        if collapsed.any():
            j = i[collapsed]
            target = 0.5 * (lo_g[j] + hi_g[j])
            share = ((target - hi_phi[j]) / (lo_phi[j] - hi_phi[j])).clamp(0.0, 1.0)
            for k in range(4):
                mix = _column(share, lo_sol[k][j]) * lo_sol[k][j]
                out[k][j] = mix + (1.0 - _column(share, lo_sol[k][j])) * hi_sol[k][j]
        active[i] = ~(done | collapsed)
        if not active.any():
            return (*out, iterations, residual, rounds)
    worst = (hi_g - lo_g).abs()[active].nan_to_num(torch.inf).amax().item()
    raise SolverError(
        f"coupled friction bounds did not converge: after {coupling.max_rounds} rounds the "
        f"normal impulses of {int(active.sum())} of {batch} items are still bracketed no "
        f"closer than {worst:.3e}"
    )


@dataclass(frozen=True)
class _Coupled:
    """A :class:`Coupling` resolved to global indices of ``z`` for the solver."""

    block: int
    row: int
    col: int
    normal: Tensor
    bound: Tensor
    mu: Tensor
    start: Tensor
    tol: float
    max_rounds: int


class _LCPFunction(torch.autograd.Function):
    """OptNet-style implicit differentiation of the KKT conditions at the PDIPM solution."""

    @staticmethod
    def forward(ctx, stats, tol, max_iter, coupling, Q, p, G, h, A, b, *blocks):
        if coupling is None:
            x, s, z, y, iterations, residual = _pdipm(Q, p, G, h, blocks, A, b, tol, max_iter)
            rounds = 1
        else:
            x, s, z, y, iterations, residual, rounds = _staggered(
                Q, p, G, h, blocks, A, b, tol, max_iter, coupling
            )
        stats.update(iterations=iterations, residual=residual, rounds=rounds)
        ctx.save_for_backward(Q, G, A, x, s, z, y, *blocks)
        return x, z, y

    @staticmethod
    def backward(ctx, gx, gz, gy):
        Q, G, A, x, s, z, y, *blocks = ctx.saved_tensors
        gx = torch.zeros_like(x) if gx is None else gx
        gz = torch.zeros_like(z) if gz is None else gz
        gy = torch.zeros_like(y) if gy is None else gy
        # The complementarity ratios s/z span ~1e±13 at a converged solution; with a coupled
        # (non-skew) F their raw block inverses cancel catastrophically (measured: 3e-3 relative
        # error of dx/dh on a sliding block). Clamped to [1e-8, 1e8], the adjoint is exact to
        # about 1e-8 instead.
        ratio = (s / z).clamp(BACKWARD_RATIO, 1.0 / BACKWARD_RATIO)
        ux, ut, uy = _Reduced(Q, G, A, blocks, ratio).adjoint(gx, gz, gy)
        outer = torch.einsum
        grads = [
            -outer("bi,bj->bij", ux, x),  # Q
            -ux,  # p
            outer("bi,bj->bij", ut, x) - outer("bi,bj->bij", z, ux),  # G
            -ut,  # h
            -outer("bi,bj->bij", uy, x) - outer("bi,bj->bij", y, ux),  # A
            uy,  # b
        ]
        offset, block_grads = 0, []
        for blk in blocks:
            count, size = blk.shape[-3], blk.shape[-1]
            u_b = ut[:, offset : offset + count * size].reshape(-1, count, size)
            z_b = z[:, offset : offset + count * size].reshape(-1, count, size)
            block_grads.append(-outer("bci,bcj->bcij", u_b, z_b))
            offset += count * size
        return (None, None, None, None, *grads, *block_grads)


def solve_lcp(
    Q: Tensor,
    p: Tensor,
    G: Tensor,
    h: Tensor,
    F_blocks: Sequence[Tensor] = (),
    A: Tensor | None = None,
    b: Tensor | None = None,
    *,
    tol: float = 1e-10,
    max_iter: int = 60,
    coupling: Coupling | None = None,
    max_rounds: int = 100,
) -> LCPSolution:
    """Solve ``Qx + p + Gᵀz + Aᵀy = 0, Gx + s = h + Fz, Ax = b, 0 ≤ s ⊥ z ≥ 0`` (batched).

    Shapes: ``Q (B, n, n)``, ``p (B, n)``, ``G (B, m, n)``, ``h (B, m)``, ``A (B, neq, n)``,
    ``b (B, neq)``; a leading dimension of 1 broadcasts. ``F_blocks`` are ``(B or 1, count,
    size, size)`` tensors whose block-diagonal concatenation is ``F`` (``Σ count·size = m``);
    empty means ``F = 0``; a dense ``F`` is the single block ``F[:, None]``. The result is
    differentiable with respect to every tensor input (implicit differentiation, OptNet).

    Every tensor must be float64 (TypeError otherwise) and finite; ``tol`` > 0, ``max_iter``
    >= 1 (ValueError naming the argument). ``n`` is the size of ``Q``, ``m`` that of ``h`` and
    ``neq`` the rows of ``A``; a tensor of another shape is a ValueError naming it and the
    tensor its size comes from, with both shapes. Convergence: the KKT residual
    ``max(‖r_x‖∞, ‖r_z‖∞, ‖r_y‖∞, max s⊙z)`` must fall to ``tol`` within ``max_iter``
    iterations, otherwise :class:`SolverError` reports it; an LCP with no solution (infeasible
    constraints, or unbounded) makes the iterates diverge, which :class:`SolverError` reports
    as such, with the residual they stalled at. With a ``coupling`` (friction
    bounded by unknown normal impulses) the entries it names are added to ``F`` and the
    coupled LCP is solved by at most ``max_rounds`` rounds of the scalar root search (module
    docstring); ``rounds`` of the result counts them.
    """
    tol = check_positive("tol", tol)
    max_iter = check_count("max_iter", max_iter)
    check_tensor("Q", Q, shape=(None, None, None), dtype=torch.float64)
    if A is None:
        A = Q.new_zeros(Q.shape[0], 0, Q.shape[-1])
        b = Q.new_zeros(Q.shape[0], 0)
    elif b is None:
        raise ValueError("b must be given together with A")
    tensors = {"Q": Q, "p": p, "G": G, "h": h, "A": A, "b": b}
    for name, t in tensors.items():
        check_tensor(name, t, dtype=torch.float64)
        if t.dim() < 2:
            raise ValueError(f"{name} must have a leading batch dimension, got {tuple(t.shape)}")
    batch = max(t.shape[0] for t in tensors.values())
    if Q.shape[-1] != Q.shape[-2]:
        raise ValueError(f"Q must have shape (B, n, n), got {tuple(Q.shape)}")
    # n comes from Q, m from h and neq from A: a size that disagrees names both tensors.
    n, m, neq = Q.shape[-1], h.shape[-1], A.shape[-2]
    shapes = {"Q": (n, n), "p": (n,), "G": (m, n), "h": (m,), "A": (neq, n), "b": (neq,)}
    sources = {"Q": (), "p": ("Q",), "G": ("Q", "h"), "h": (), "A": ("Q",), "b": ("A",)}
    expanded = {}
    for name, t in tensors.items():
        if tuple(t.shape[1:]) != shapes[name]:
            want = ", ".join(["B", *map(str, shapes[name])])
            given = " and ".join(f"{s} of shape {tuple(tensors[s].shape)}" for s in sources[name])
            match = f" to match {given}" if given else ""
            raise ValueError(f"{name} must have shape ({want}){match}, got {tuple(t.shape)}")
        if t.shape[0] not in (1, batch):
            raise ValueError(
                f"{name} must have a leading dimension of 1 or the batch size {batch} (the "
                f"largest given), got shape {tuple(t.shape)}"
            )
        expanded[name] = t.expand(batch, *shapes[name])
    blocks = list(F_blocks) or [h.new_zeros(1, m, 1, 1)]
    total = 0
    for i, blk in enumerate(blocks):
        check_tensor(f"F_blocks[{i}]", blk, dtype=torch.float64)
        if blk.dim() != 4 or blk.shape[-1] != blk.shape[-2] or blk.shape[0] not in (1, batch):
            raise ValueError(
                f"F_blocks[{i}] must have shape (B, count, size, size), got {tuple(blk.shape)}"
            )
        total += blk.shape[1] * blk.shape[2]
    if total != m:
        raise ValueError(f"F_blocks cover {total} rows of z but h has m={m}")
    blocks = [blk.expand(batch, *blk.shape[1:]) for blk in blocks]
    coupled = None
    if coupling is not None:
        blocks, coupled = _couple(
            blocks, coupling, batch, tol, check_count("max_rounds", max_rounds)
        )
    stats: dict = {}
    e = expanded
    x, z, y = _LCPFunction.apply(
        stats, tol, max_iter, coupled, e["Q"], e["p"], e["G"], e["h"], e["A"], e["b"], *blocks
    )
    s = e["h"] + _block_mm(blocks, z.unsqueeze(-1)).squeeze(-1) - _mv(e["G"], x)
    return LCPSolution(x, s, z, y, stats["iterations"], stats["residual"], stats["rounds"])


def _couple(
    blocks: list[Tensor], coupling: Coupling, batch: int, tol: float, max_rounds: int
) -> tuple[list[Tensor], _Coupled]:
    """Add ``μ`` to its entries of ``F`` (differentiably) and resolve the coupled rows."""
    if not isinstance(coupling, Coupling):
        raise TypeError(f"coupling must be a Coupling, got {type(coupling).__name__}")
    if not 0 <= coupling.block < len(blocks):
        raise ValueError(f"coupling.block must index F_blocks, got {coupling.block}")
    blk = blocks[coupling.block]
    count, size = blk.shape[1], blk.shape[-1]
    for name in ("row", "col"):
        if not 0 <= getattr(coupling, name) < size:
            raise ValueError(
                f"coupling.{name} must lie in [0, {size}), got {getattr(coupling, name)}"
            )
    if count != 1:
        raise ValueError(f"coupling supports one coupled normal per item, got count={count}")
    check_tensor(
        "coupling.mu", coupling.mu, shape=(None, count), dtype=torch.float64, nonnegative=True
    )
    mu = coupling.mu.expand(batch, count)
    start = mu.new_zeros(batch, count)
    if coupling.start is not None:
        check_tensor("coupling.start", coupling.start, shape=(None, count), dtype=torch.float64)
        start = coupling.start.detach().expand(batch, count).clamp(min=0.0)
    offset = sum(b.shape[1] * b.shape[2] for b in blocks[: coupling.block])
    first = offset + size * torch.arange(count, device=mu.device)
    entry = torch.zeros(size, size, dtype=mu.dtype, device=mu.device)
    entry[coupling.row, coupling.col] = 1.0
    blocks = list(blocks)
    blocks[coupling.block] = blk + mu[:, :, None, None] * entry
    coupled = _Coupled(
        block=coupling.block,
        row=coupling.row,
        col=coupling.col,
        normal=first + coupling.col,
        bound=first + coupling.row,
        mu=mu.detach(),
        start=start,
        tol=max(tol, 1e-9) * 10,
        max_rounds=max_rounds,
    )
    return blocks, coupled
