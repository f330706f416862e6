"""Small contact problems solved exactly by enumerating their active sets.

The contact problems of :mod:`physid.contact.fast`::

    minimise    ½ fᵀ A f + cᵀ f
    subject to  g_i,1 = lb_i − f_n,i ≤ 0,
                g_i,2 = f_t,i − μ_i f_n,i ≤ 0 and g_i,3 = −f_t,i − μ_i f_n,i ≤ 0 (k = 2),

have polyhedral constraints when ``k ≤ 2`` (a limit, or a planar contact whose friction cone is
two half-planes). With ``A`` positive definite the minimiser is unique, and it is the solution of
the Karush-Kuhn-Tucker (KKT) equations of its active set W::

    A f + c + Σ_{j ∈ W} ν_j ∇g_j = 0,   g_j(f) = 0 (j ∈ W),   ν_j = 0 (j ∉ W),

that is primal feasible (``g ≤ 0``) and dual feasible (``ν ≥ 0``): those conditions are
sufficient for a convex problem. A contact has 2 candidate sets (k = 1: free, at its bound) or 7
(k = 2: every subset of its three constraints with at most two members, since the three
gradients in the plane of ``(f_n, f_t)`` are never independent), so a problem of C contacts has
2^C or 7^C. For few contacts and small batches (:func:`supports`) all of them are solved at
once, as one batch of small linear systems with a fixed number of tensor operations and no
iteration, and each sample takes the first set that verifies (sets with fewer active
constraints first). The chosen system is then solved once more with gradients, so the
impulse's derivative with respect to ``(A, c, μ, lb)`` is that of the KKT equations of its
active set, the implicit-function-theorem derivative of :mod:`physid.contact.fast`'s polish.
The two differ only in the derivative with respect to ``lb`` of a contact at the apex with
``lb = 0``, where the polish may take either set and this module takes the bound's.

A sample where no set verifies (``A`` singular or nearly so, or a degenerate set the tolerances
cannot tell) is returned unsolved, for the interior point of :mod:`physid.contact.fast`.
"""

from __future__ import annotations

import itertools
from functools import lru_cache

import torch
from torch import Tensor

#: The largest contact count enumerated, by components per contact (k = 3, the spatial cone, is
#: not polyhedral and never enumerated): 2^8 sets of limits, 7^3 of planar contacts.
MAX_CONTACTS = {1: 8, 2: 3}
#: The largest batch of work enumerated, in (sets × samples × KKT size³): about 10 ms on one
#: thread, the interior point's cost at any size (one thread, forward and backward: batch 200 of
#: one planar contact 2.4 ms against 14.6 ms; 25 of two 8.7 ms against 14.5 ms; 200 of two 46 ms
#: against 32 ms).
MAX_WORK = 2e6
#: Relative tolerance of the verification (primal and dual feasibility, stationarity).
TOL = 1e-9


def set_count(C: int, k: int) -> int:
    """The candidate active sets of a problem of ``C`` contacts of ``k ≤ 2`` components."""
    return 2**C if k == 1 else 7**C


def supports(B: int, C: int, k: int) -> bool:
    """Whether a batch of ``B`` problems of ``C`` contacts of ``k`` components is enumerated."""
    if not 1 <= C <= MAX_CONTACTS.get(k, 0):
        return False
    size = C * (k + (1 if k == 1 else 3))  # the KKT system: impulses and multipliers
    return set_count(C, k) * B * size**3 <= MAX_WORK


@lru_cache(maxsize=16)
def _active_sets(C: int, k: int, device: torch.device) -> Tensor:
    """``(S, C, r)`` booleans: every candidate active set, r = 1 (k = 1) or 3 constraints per
    contact; sets with fewer active constraints first, and among those, fewer contacts held at
    the apex by their two cone sides rather than by the normal bound and one side.

    At the apex ``f = 0`` of a contact with ``lb = 0`` all three constraints are active and
    both kinds of set can verify; the one with the bound gives the derivative for ``lb``
    increasing from 0, the only direction a restitution bound ``lb = e·p_n`` moves in.
    """
    r = 1 if k == 1 else 3
    per_contact = [w for w in itertools.product((False, True), repeat=r) if sum(w) <= 2]
    apex = (False, True, True)

    def order(sets: tuple[tuple[bool, ...], ...]) -> tuple[int, int]:
        return sum(map(sum, sets)), sets.count(apex)

    sets = sorted(itertools.product(per_contact, repeat=C), key=order)
    return torch.tensor(sets, dtype=torch.bool, device=device)


def _constraints(mu: Tensor, lb: Tensor, k: int) -> tuple[Tensor, Tensor]:
    """The constraints ``g = G f + h ≤ 0``: G ``(..., C·r, C·k)`` and h ``(..., C·r)``."""
    *batch, C = mu.shape
    if k == 1:
        G = -torch.eye(C, dtype=mu.dtype, device=mu.device).expand(*batch, C, C)
        return G, lb
    one = torch.ones_like(mu)
    zero = torch.zeros_like(mu)
    # Rows of one contact over its (f_n, f_t): (-1, 0), (-μ, 1), (-μ, -1).
    rows = torch.stack(
        [torch.stack([-one, zero], -1), torch.stack([-mu, one], -1), torch.stack([-mu, -one], -1)],
        -2,
    )  # (..., C, 3, 2)
    G = torch.zeros(*batch, C, 3, C, 2, dtype=mu.dtype, device=mu.device)
    index = torch.arange(C, device=mu.device)
    G[..., index, :, index, :] = rows.movedim(-3, 0)
    h = torch.stack([lb, zero, zero], -1)
    return G.reshape(*batch, 3 * C, 2 * C), h.reshape(*batch, 3 * C)


def _kkt_solve(A: Tensor, c: Tensor, G: Tensor, h: Tensor, active: Tensor):
    """Solve the KKT equations of the active sets ``active`` (broadcast with the problems)."""
    m, n = A.shape[-1], G.shape[-2]
    # (The shapes are (B, 1) and (S,), or (B,) and (B,): torch.broadcast_shapes costs more.)
    batch = max(A.shape[:-2], G.shape[:-2], c.shape[:-1], key=len)
    batch = (*batch[: len(batch) - active.dim() + 1], *active.shape[:-1])
    on = active.to(A.dtype).expand(*batch, n)
    G = G.expand(*batch, n, m)
    top = torch.cat([A.expand(*batch, m, m), G.mT * on[..., None, :]], -1)
    bottom = torch.cat([G * on[..., None], torch.diag_embed(1.0 - on)], -1)
    K = torch.cat([top, bottom], -2)
    rhs = torch.cat([-c.expand(*batch, m), -h.expand(*batch, n) * on], -1)
    y, info = torch.linalg.solve_ex(K, rhs)
    return y[..., :m], y[..., m : m + n], info


def solve(A: Tensor, c: Tensor, mu: Tensor, lb: Tensor, k: int) -> tuple[Tensor, Tensor]:
    """The exact minimiser of every sample whose active set verifies (module docstring).

    Args:
        A: ``(B, C·k, C·k)`` contact-space inverse inertia (scaled so that its entries are at
            most about one, as :func:`physid.contact.fast.solve` does).
        c: ``(B, C·k)`` linear term.
        mu: ``(B, C)`` friction coefficients (unused for ``k = 1``).
        lb: ``(B, C)`` lower bounds on the normal impulses.
        k: 1 or 2, with ``supports(B, C, k)``.

    Returns:
        ``(impulse, solved)``: ``(B, C, k)`` impulses, differentiable in all four inputs
        through the KKT equations of each sample's active set, and ``(B,)`` whether the sample
        verified (elsewhere the impulse is zero).
    """
    B, m = c.shape
    C = mu.shape[1]
    if not supports(B, C, k):
        raise ValueError(
            f"a batch of B={B!r} problems of C={C!r} contacts with k={k!r} is not enumerated"
        )
    sets = _active_sets(C, k, c.device).flatten(1)  # (S, n)
    with torch.no_grad():
        A0, c0, G0, h0 = A.detach(), c.detach(), *_constraints(mu.detach(), lb.detach(), k)
        f, nu, info = _kkt_solve(A0[:, None], c0[:, None], G0[:, None], h0[:, None], sets)
        scale_f = 1.0 + f.abs().amax(-1) + lb.detach().abs().amax(-1)[:, None]
        scale_v = 1.0 + c0.abs().amax(-1)[:, None]
        g = (G0[:, None] @ f[..., None])[..., 0] + h0[:, None]
        stationary = (A0[:, None] @ f[..., None])[..., 0] + c0[:, None]
        stationary = stationary + (G0.mT[:, None] @ nu[..., None])[..., 0]
        ok = (info == 0) & torch.isfinite(f).all(-1) & torch.isfinite(nu).all(-1)
        ok &= (g <= TOL * scale_f[..., None]).all(-1)
        ok &= (nu >= -TOL * scale_v[..., None]).all(-1)
        ok &= (stationary.abs() <= TOL * scale_v[..., None]).all(-1)
        ok &= torch.linalg.cholesky_ex(A0)[1][:, None] == 0  # a unique minimiser
        solved = ok.any(-1)
        first = ok.to(torch.int8).argmax(-1)  # the first verified set (fewest constraints)
    G, h = _constraints(mu, lb, k)
    f, _, _ = _kkt_solve(A, c, G, h, sets[first])
    f = torch.where(solved[:, None], f, torch.zeros_like(f))
    return f.reshape(B, C, k), solved
