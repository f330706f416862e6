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

On the CPU the enumeration is one compiled call (numba's ``@njit``): per sample, the sets in
turn, each the KKT system of its active constraints alone (``m + |W|`` unknowns) solved by
Gaussian elimination with partial pivoting (:func:`physid.core.linalg.solve_in_place`), until
one verifies; the impulse then carries the
same implicit derivative through a hand-written adjoint (``_Enumerated``: the transposed
system of the chosen set, one more compiled call in the backward pass). That replaces about
130 small tensor operations a call, and autograd's walk back through them, by two calls: a
training step of CM-CD-CLNN on BP5 makes two such calls per rollout step (compression and
restitution; the integrator resolves the batch's samples in one group, padded to the largest
count, :meth:`physid.contact.model.ContactModel.group_limit`). As it works per sample and
stops at the first set that verifies, it takes any batch of up to :data:`MAX_COMPILED`
contacts (the batched form is bounded by its work over the whole batch, :data:`MAX_WORK`).
A contact that ``A`` couples to no other (a dummy of the padding, or a ball no other contact
touches) is solved alone first, and only the sets that agree with its own are tried: a
dummy needs its bound active, so without this a sample of one contact padded to four tried
the 79 sets of fewer than three active constraints first (the contact layer's forward on
BP5, 1.90 ms a call in groups by count, took 2.24 ms in one group without this, 1.43 ms with
it). Elsewhere (a GPU) the batched tensor form above runs; the tests hold the two
to each other.
"""

from __future__ import annotations

import itertools
from functools import lru_cache

import numba
import numpy as np
import torch
from torch import Tensor

from physid.core.linalg import solve_in_place

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


#: The largest contact count the compiled path (the CPU's) enumerates, by components per
#: contact, at any batch: it works per sample and stops at the first set that verifies, so its
#: cost is that of the sets with fewer active constraints than the solution's (at most 7⁴ small
#: systems, about 3 ms, for a sample where none verifies).
MAX_COMPILED = {1: 10, 2: 4}


def supports(B: int, C: int, k: int, compiled: bool = False) -> bool:
    """Whether a batch of ``B`` problems of ``C`` contacts of ``k`` components is enumerated,
    by the compiled path (``compiled``, on the CPU) or by the batched one."""
    if compiled:
        return 1 <= C <= MAX_COMPILED.get(k, 0)
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


_jit = numba.njit(cache=True, fastmath=False, nogil=True)


@numba.njit(cache=True, fastmath=False, nogil=True, inline="always")
def _rows(mu, lb, k, G, h):
    """The constraints ``g = G f + h ≤ 0`` of one sample into ``G (n, m)`` and ``h (n,)``
    (:func:`_constraints`)."""
    G[:] = 0.0
    for i in range(mu.shape[0]):
        if k == 1:
            G[i, i] = -1.0
            h[i] = lb[i]
        else:
            G[3 * i, 2 * i] = -1.0
            G[3 * i + 1, 2 * i] = -mu[i]
            G[3 * i + 1, 2 * i + 1] = 1.0
            G[3 * i + 2, 2 * i] = -mu[i]
            G[3 * i + 2, 2 * i + 1] = -1.0
            h[3 * i] = lb[i]
            h[3 * i + 1] = 0.0
            h[3 * i + 2] = 0.0


@numba.njit(cache=True, fastmath=False, nogil=True, inline="always")
def _kkt_matrix(A, G, h, c, active, K, y, which, transpose):
    """The KKT system of the active rows (their indices into ``which``): ``[[A, G_Wᵀ], [G_W,
    0]]`` (or its transpose) in ``K`` and ``(-c, -h_W)`` in ``y``; returns its size."""
    m = A.shape[0]
    na = 0
    for r in range(active.shape[0]):
        if active[r]:
            which[na] = r
            na += 1
    size = m + na
    for i in range(size):
        for j in range(size):
            K[i, j] = 0.0
    for i in range(m):
        for j in range(m):
            K[i, j] = A[j, i] if transpose else A[i, j]
        y[i] = -c[i]
    for a in range(na):
        r = which[a]
        for j in range(m):
            K[m + a, j] = G[r, j]
            K[j, m + a] = G[r, j]
        y[m + a] = -h[r]
    return na


@numba.njit(cache=True, fastmath=False, nogil=True, inline="always")
def _verified(A, G, h, c, y, which, na, tol, scale_v, lb_max):
    """Whether the KKT solution ``y`` of the active rows ``which[:na]`` is finite, primal
    feasible, dual feasible and stationary, to ``tol`` relative to the impulses' scale and to
    ``scale_v``."""
    m, n = A.shape[0], G.shape[0]
    f_max = 0.0
    for j in range(m + na):
        if not np.isfinite(y[j]):
            return False
        if j < m:
            f_max = max(f_max, abs(y[j]))
    scale_f = 1.0 + f_max + lb_max
    for r in range(n):  # primal feasibility
        g = h[r]
        for j in range(m):
            g += G[r, j] * y[j]
        if g > tol * scale_f:
            return False
    for a in range(na):  # dual feasibility
        if y[m + a] < -tol * scale_v:
            return False
    for i in range(m):  # stationarity
        st = c[i]
        for j in range(m):
            st += A[i, j] * y[j]
        for a in range(na):
            st += G[which[a], i] * y[m + a]
        if abs(st) > tol * scale_v:
            return False
    return True


@_jit
def _enumerate(A, c, mu, lb, sets, local, k, tol):
    """The first verified active set of every sample (:func:`solve`): impulses ``(B, m)``,
    multipliers ``(B, n)`` and the set's index (−1 where none verifies).

    A contact that ``A`` couples to no other (zero blocks: a dummy contact, or a body no other
    contact touches) is solved alone first, over its own sets ``local`` (``_active_sets(1,
    k)``), and only the sets that agree with its own are tried: the problem's minimiser is its
    own there. Where none of those verifies, every set is tried."""
    B, m = c.shape
    S, n = sets.shape
    C = mu.shape[1]
    r_c = n // C  # constraints per contact
    f = np.zeros((B, m))
    nu = np.zeros((B, n))
    chosen = np.full(B, -1, np.int64)
    G = np.zeros((n, m))
    h = np.zeros(n)
    K = np.zeros((m + n, m + n))
    Y = np.zeros((m + n, 1))  # the right-hand side of solve_in_place, seen as the vector y
    y = Y[:, 0]
    which = np.zeros(n, np.int64)
    L = np.zeros((m, m))
    own = np.full(C, -1, np.int64)
    for b in range(B):
        # A unique minimiser: A positive definite (the Cholesky factorisation exists).
        definite = True
        for j in range(m):
            d = A[b, j, j]
            for q in range(j):
                d -= L[j, q] * L[j, q]
            if not d > 0.0:
                definite = False
                break
            L[j, j] = np.sqrt(d)
            for i in range(j + 1, m):
                e = A[b, i, j]
                for q in range(j):
                    e -= L[i, q] * L[j, q]
                L[i, j] = e / L[j, j]
        if not definite:
            continue
        _rows(mu[b], lb[b], k, G, h)
        scale_v = 1.0
        for j in range(m):
            scale_v = max(scale_v, 1.0 + abs(c[b, j]))
        lb_max = 0.0
        for i in range(lb.shape[1]):
            lb_max = max(lb_max, abs(lb[b, i]))
        alone = False
        for i in range(C if C > 1 else 0):  # (one contact: its own sets are the problem's)
            own[i] = -1
            lo, hi = i * k, (i + 1) * k
            coupled = False
            for a in range(lo, hi):
                for j in range(m):
                    if (j < lo or j >= hi) and A[b, a, j] != 0.0:
                        coupled = True
            if coupled:
                continue
            A_i, c_i = A[b, lo:hi, lo:hi], c[b, lo:hi]
            G_i, h_i = G[i * r_c:(i + 1) * r_c, lo:hi], h[i * r_c:(i + 1) * r_c]
            for p in range(local.shape[0]):
                na = _kkt_matrix(A_i, G_i, h_i, c_i, local[p], K, y, which, False)
                if solve_in_place(K, Y, k + na, 1, 0.0) and _verified(
                        A_i, G_i, h_i, c_i, y, which, na, tol, scale_v, lb_max):
                    own[i] = p
                    alone = True
                    break
        for attempt in range(2 if alone else 1):
            for s in range(S):
                if attempt == 0 and alone:
                    agrees = True
                    for i in range(C):
                        if own[i] >= 0:
                            for q in range(r_c):
                                if sets[s, i * r_c + q] != local[own[i], q]:
                                    agrees = False
                    if not agrees:
                        continue
                na = _kkt_matrix(A[b], G, h, c[b], sets[s], K, y, which, False)
                if not solve_in_place(K, Y, m + na, 1, 0.0):
                    continue
                if _verified(A[b], G, h, c[b], y, which, na, tol, scale_v, lb_max):
                    chosen[b] = s
                    for j in range(m):
                        f[b, j] = y[j]
                    for a in range(na):
                        nu[b, which[a]] = y[m + a]
                    break
            if chosen[b] >= 0:
                break
    return f, nu, chosen


@_jit
def _adjoint(A, mu, f, nu, chosen, sets, k, grad):
    """The implicit derivative of the chosen sets' impulses: with ``(p, q)`` solving the
    transposed KKT system for ``(grad, 0)``, ``∂c = -p``, ``∂A = -p fᵀ``, ``∂h_W = -q`` and
    ``∂G_W = -(ν_W pᵀ + q fᵀ)``, gathered onto ``μ`` and ``lb`` through :func:`_rows`."""
    B, m = f.shape
    n = sets.shape[1]
    C = mu.shape[1]
    dA = np.zeros((B, m, m))
    dc = np.zeros((B, m))
    dmu = np.zeros((B, C))
    dlb = np.zeros((B, C))
    G = np.zeros((n, m))
    h = np.zeros(n)
    K = np.zeros((m + n, m + n))
    Y = np.zeros((m + n, 1))  # the right-hand side of solve_in_place, seen as the vector y
    y = Y[:, 0]
    which = np.zeros(n, np.int64)
    zero = np.zeros(m)
    no_bound = np.zeros(C)  # the bounds do not enter the adjoint's matrix
    for b in range(B):
        s = chosen[b]
        if s < 0:
            continue
        _rows(mu[b], no_bound, k, G, h)
        na = _kkt_matrix(A[b], G, h, zero, sets[s], K, y, which, True)
        for j in range(m):
            y[j] = grad[b, j]
        for a in range(na):
            y[m + a] = 0.0
        solve_in_place(K, Y, m + na, 1, 0.0)  # nonsingular: the forward pass solved the same system
        for i in range(m):
            dc[b, i] = -y[i]
            for j in range(m):
                dA[b, i, j] = -y[i] * f[b, j]
        for a in range(na):
            r = which[a]
            q = y[m + a]
            i, kind = (r, 0) if k == 1 else (r // 3, r % 3)
            if kind == 0:
                dlb[b, i] -= q
            else:  # ∂G[r, normal] = -(ν_r p_normal + q f_normal), and G[r, normal] = -μ_i
                normal = 2 * i
                dmu[b, i] += nu[b, r] * y[normal] + q * f[b, normal]
    return dA, dc, dmu, dlb


class _Enumerated(torch.autograd.Function):
    """The compiled enumeration (module docstring) with its implicit derivative."""

    @staticmethod
    def forward(ctx, A: Tensor, c: Tensor, mu: Tensor, lb: Tensor, k: int):
        cpu = torch.device("cpu")
        sets = _active_sets(mu.shape[1], k, cpu).flatten(1).numpy()
        local = _active_sets(1, k, cpu).flatten(1).numpy()
        arrays = [t.detach().numpy() for t in (A, c, mu, lb)]
        f, nu, chosen = _enumerate(*arrays, sets, local, k, TOL)
        ctx.save_for_backward(A, mu)
        ctx.state = (f, nu, chosen, sets, k)
        solved = torch.from_numpy(chosen >= 0)
        ctx.mark_non_differentiable(solved)
        return torch.from_numpy(f), solved

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, grad_f: Tensor, _grad_solved):
        A, mu = ctx.saved_tensors
        f, nu, chosen, sets, k = ctx.state
        grad = np.ascontiguousarray(grad_f.numpy())
        dA, dc, dmu, dlb = _adjoint(A.detach().numpy(), mu.detach().numpy(), f, nu, chosen, sets,
                                    k, grad)
        return (*(torch.from_numpy(t) for t in (dA, dc, dmu, dlb)), None)


def solve(A: Tensor, c: Tensor, mu: Tensor, lb: Tensor, k: int) -> tuple[Tensor, Tensor]:
    """The exact minimiser of every sample whose active set verifies (module docstring).

    Args:
        A: ``(B, C·k, C·k)`` contact-space inverse inertia (scaled so that its entries are at
            most about one, as :func:`physid.contact.fast.solve` does).
        c: ``(B, C·k)`` linear term.
        mu: ``(B, C)`` friction coefficients (unused for ``k = 1``).
        lb: ``(B, C)`` lower bounds on the normal impulses.
        k: 1 or 2, with ``supports(B, C, k, compiled)`` (``compiled`` on the CPU).

    Returns:
        ``(impulse, solved)``: ``(B, C, k)`` impulses, differentiable in all four inputs
        through the KKT equations of each sample's active set, and ``(B,)`` whether the sample
        verified (elsewhere the impulse is zero).
    """
    B, m = c.shape
    C = mu.shape[1]
    if not supports(B, C, k, compiled=c.device.type == "cpu"):
        raise ValueError(
            f"a batch of B={B!r} problems of C={C!r} contacts with k={k!r} is not enumerated"
        )
    if c.device.type == "cpu":
        f, solved = _Enumerated.apply(*(t.contiguous() for t in (A, c, mu, lb)), k)
        return f.reshape(B, C, k), solved
    return _solve_batched(A, c, mu, lb, k)


def _solve_batched(A: Tensor, c: Tensor, mu: Tensor, lb: Tensor, k: int) -> tuple[Tensor, Tensor]:
    """:func:`solve` as one batch of tensor operations over every sample and set (any device)."""
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
    # An unsolved sample's system may be singular: it solves I f = -c instead, so that its
    # (zero) impulse passes no NaN back to the inputs.
    eye = torch.eye(m, dtype=A.dtype, device=A.device)
    A = torch.where(solved[:, None, None], A, eye)
    f, _, _ = _kkt_solve(A, c, G, h, sets[first])
    f = torch.where(solved[:, None], f, torch.zeros_like(f))
    return f.reshape(B, C, k), solved
