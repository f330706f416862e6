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
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

from physid.validate import check_count, check_positive, check_tensor

__all__ = ["LCPSolution", "SolverError", "solve_lcp"]


class SolverError(RuntimeError):
    """The interior-point iterations did not reach the requested residual."""


@dataclass(frozen=True)
class LCPSolution:
    """Solution of a batch of mixed LCPs; ``residual`` is the final KKT residual per item."""

    x: Tensor
    s: Tensor
    z: Tensor
    y: Tensor
    iterations: int
    residual: Tensor


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
    for iteration in range(max_iter + 1):
        rx, rz, ry = _residuals(Q, p, G, h, blocks, A, b, x, s, z, y)
        residual = _kkt_residual(rx, rz, ry, s, z)
        active = ~(residual <= tol)  # NaN stays active
        if not torch.isfinite(residual).all():
            bad = torch.nonzero(~torch.isfinite(residual)).flatten().tolist()
            raise SolverError(
                f"LCP solver produced non-finite iterates at iteration {iteration} "
                f"for batch items {bad[:10]}"
            )
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


class _LCPFunction(torch.autograd.Function):
    """OptNet-style implicit differentiation of the KKT conditions at the PDIPM solution."""

    @staticmethod
    def forward(ctx, stats, tol, max_iter, Q, p, G, h, A, b, *blocks):
        x, s, z, y, iterations, residual = _pdipm(Q, p, G, h, blocks, A, b, tol, max_iter)
        stats.update(iterations=iterations, residual=residual)
        ctx.save_for_backward(Q, G, A, x, s, z, y, *blocks)
        return x, z, y

    @staticmethod
    def backward(ctx, gx, gz, gy):
        Q, G, A, x, s, z, y, *blocks = ctx.saved_tensors
        gx = torch.zeros_like(x) if gx is None else gx
        gz = torch.zeros_like(z) if gz is None else gz
        gy = torch.zeros_like(y) if gy is None else gy
        ux, ut, uy = _Reduced(Q, G, A, blocks, s / z).adjoint(gx, gz, gy)
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
        return (None, None, None, *grads, *block_grads)


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
) -> LCPSolution:
    """Solve ``Qx + p + Gᵀz + Aᵀy = 0, Gx + s = h + Fz, Ax = b, 0 ≤ s ⊥ z ≥ 0`` (batched).

    Shapes: ``Q (B, n, n)``, ``p (B, n)``, ``G (B, m, n)``, ``h (B, m)``, ``A (B, neq, n)``,
    ``b (B, neq)``; a leading dimension of 1 broadcasts. ``F_blocks`` are ``(B or 1, count,
    size, size)`` tensors whose block-diagonal concatenation is ``F`` (``Σ count·size = m``);
    empty means ``F = 0``; a dense ``F`` is the single block ``F[:, None]``. The result is
    differentiable with respect to every tensor input (implicit differentiation, OptNet).

    Every tensor must be float64 (TypeError otherwise) and finite; ``tol`` > 0, ``max_iter``
    >= 1 (ValueError naming the argument). Convergence: the KKT residual
    ``max(‖r_x‖∞, ‖r_z‖∞, ‖r_y‖∞, max s⊙z)`` must fall to ``tol`` within ``max_iter``
    iterations, otherwise :class:`SolverError` reports it.
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
    n, m, neq = p.shape[-1], h.shape[-1], A.shape[-2]
    shapes = {"Q": (n, n), "p": (n,), "G": (m, n), "h": (m,), "A": (neq, n), "b": (neq,)}
    expanded = {}
    for name, t in tensors.items():
        if tuple(t.shape[1:]) != shapes[name] or t.shape[0] not in (1, batch):
            want = ", ".join(["B", *map(str, shapes[name])])
            raise ValueError(f"{name} must have shape ({want}), got {tuple(t.shape)}")
        expanded[name] = t.expand(batch, *shapes[name])
    blocks = list(F_blocks) or [h.new_zeros(1, m, 1, 1)]
    total = 0
    for i, blk in enumerate(blocks):
        check_tensor(f"F_blocks[{i}]", blk, dtype=torch.float64)
        if blk.dim() != 4 or blk.shape[-1] != blk.shape[-2] or blk.shape[0] not in (1, batch):
            raise ValueError(f"F_blocks[{i}] must have shape (B, count, size, size), got "
                             f"{tuple(blk.shape)}")
        total += blk.shape[1] * blk.shape[2]
    if total != m:
        raise ValueError(f"F_blocks cover {total} rows of z but h has m={m}")
    blocks = [blk.expand(batch, *blk.shape[1:]) for blk in blocks]
    stats: dict = {}
    e = expanded
    x, z, y = _LCPFunction.apply(
        stats, tol, max_iter, e["Q"], e["p"], e["G"], e["h"], e["A"], e["b"], *blocks
    )
    s = e["h"] + _block_mm(blocks, z.unsqueeze(-1)).squeeze(-1) - _mv(e["G"], x)
    return LCPSolution(x, s, z, y, stats["iterations"], stats["residual"])
