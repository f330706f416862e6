"""The LCP contact model with Newton's restitution: the paper's data baseline (Appendices D, K).

One impulse per collision (no compression/restitution split), with a polyhedral friction cone
of ``D`` directions ``d_j`` per contact (2 in the plane, exact there; 4 in space, as the
authors' LCP baseline) and Newton's kinematic restitution: the normal velocity after the impulse
must be at least ``h = max(v*_n, -e v_n)``, v_n being the normal velocity before it. With
``f = (f_n, Σ_j β_j d_j)`` per contact and ``v⁺ = v + A f`` in contact space, the complementarity
problem (Stewart & Trinkle 1996, Anitescu & Potra 1997) is

    0 ≤ f_n ⊥ v⁺_n - h ≥ 0,   0 ≤ β ⊥ Dᵀ v⁺_t + γ 𝟙 ≥ 0,   0 ≤ γ ⊥ μ f_n - 𝟙ᵀ β ≥ 0,

solved per sample by Lemke's complementary pivoting (:func:`lemke`). It is used only to generate
data and to compare the two restitution hypotheses, so it has no gradient.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

from physid.contact.model import COMPENSATION, ContactSpace, SolverLog
from physid.contact.reference import ContactSolverError
from physid.core.validate import check_count, check_in_range


def lemke(M: np.ndarray, q: np.ndarray, max_pivots: int = 500, tol: float = 1e-12) -> np.ndarray:
    """Solve the LCP ``w = M z + q``, ``w, z ≥ 0``, ``wᵀz = 0`` by Lemke's algorithm.

    Args:
        M: ``(n, n)`` matrix.
        q: ``(n,)`` vector.
        max_pivots: pivot limit.
        tol: pivot tolerance.

    Returns:
        ``z``.

    Raises:
        physid.contact.reference.ContactSolverError: on ray termination or at the pivot limit.
    """
    n = len(q)
    if (q >= 0).all():
        return np.zeros(n)
    # Tableau of I w - M z - 𝟙 z0 = q over the columns (w, z, z0, rhs).
    T = np.hstack([np.eye(n), -M, -np.ones((n, 1)), q[:, None]]).astype(float)
    basis = list(range(n))
    artificial = 2 * n

    def pivot(row: int, col: int) -> None:
        T[row] /= T[row, col]
        others = np.arange(n) != row
        T[others] -= np.outer(T[others, col], T[row])

    row = int(np.argmin(q))
    pivot(row, artificial)
    leaving, basis[row] = basis[row], artificial
    for _ in range(max_pivots):
        entering = leaving + n if leaving < n else leaving - n
        col = T[:, entering]
        candidates = col > tol
        if not candidates.any():
            raise ContactSolverError("Lemke's algorithm ended on a ray (no LCP solution found)")
        ratios = np.full(n, np.inf)
        ratios[candidates] = T[candidates, -1] / col[candidates]
        best = ratios.min()
        ties = np.flatnonzero(ratios <= best + tol * max(1.0, abs(best)))
        row = next((int(r) for r in ties if basis[r] == artificial), int(ties[0]))
        pivot(row, entering)
        leaving, basis[row] = basis[row], entering
        if leaving == artificial:
            values = np.zeros(2 * n + 1)
            values[basis] = T[:, -1]
            return values[n : 2 * n]
    raise ContactSolverError(f"Lemke's algorithm did not finish in {max_pivots} pivots")


def friction_directions(k: int, count: int) -> np.ndarray:
    """``(k - 1, count)`` unit tangent directions spread evenly around the normal."""
    if k == 2:
        return np.array([[1.0, -1.0]])
    angles = 2 * np.pi * np.arange(count) / count
    return np.stack([np.cos(angles), np.sin(angles)])


@dataclass(frozen=True)
class LCPResolution:
    """The impulse ``(B, C, k)`` of the LCP model and the contact-space velocity after it."""

    impulse: Tensor
    velocity_after: Tensor


@dataclass(frozen=True)
class LCPModel:
    """Newton's restitution with a polyhedral friction cone, solved by Lemke's algorithm.

    Attributes:
        directions: friction directions per spatial contact (k = 3); planar contacts use 2.
        compensation: fraction of a penetration removed per step (the target v*), in [0, 1].
        authors_target: project v* as the authors' code does
            (:func:`~physid.contact.model.authors_target`), as for the contact model.
    """

    directions: int = 4
    compensation: float = COMPENSATION
    authors_target: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "directions", check_count("directions", self.directions, 3))
        compensation = check_in_range("compensation", self.compensation, 0.0, 1.0)
        object.__setattr__(self, "compensation", compensation)
        if not isinstance(self.authors_target, bool):
            raise TypeError(f"authors_target must be True or False, got {self.authors_target!r}")

    def lcp(self, A: np.ndarray, v: np.ndarray, target: np.ndarray, mu, cor, k: int):
        """The LCP ``(M, q)`` of one sample and the map E from its unknowns to f."""
        C = len(mu)
        if k == 1:
            h = np.maximum(target, -cor * v)
            return A, v - h, np.eye(C)
        D = friction_directions(k, self.directions)
        nd = D.shape[1]
        E = np.zeros((C * k, C * (1 + nd)))
        for i in range(C):
            E[i * k, i] = 1.0
            E[i * k + 1 : (i + 1) * k, C + i * nd : C + (i + 1) * nd] = D
        A_bar = E.T @ A @ E
        w0 = E.T @ v
        v_n = v.reshape(C, k)[:, 0]
        h = np.maximum(target.reshape(C, k)[:, 0], -cor * v_n)
        ones = np.kron(np.eye(C), np.ones((nd, 1)))  # (C·nd, C)
        size = C * (2 + nd)
        M = np.zeros((size, size))
        M[: C * (1 + nd), : C * (1 + nd)] = A_bar
        M[C : C * (1 + nd), C * (1 + nd) :] = ones
        M[C * (1 + nd) :, :C] = np.diag(mu)
        M[C * (1 + nd) :, C : C * (1 + nd)] = -ones.T
        q = np.concatenate([w0[:C] - h, w0[C:], np.zeros(C)])
        return M, q, E

    def group_limit(self, k: int, device: torch.device) -> int:
        """0: the integrator groups samples by their padded contact count (each problem is
        solved alone, so merging the groups would only add dummy contacts)."""
        return 0

    def resolve(self, space: ContactSpace, log: SolverLog | None = None) -> LCPResolution:
        """The LCP impulse of every sample of ``space`` (numpy, per sample, no gradient)."""
        log = SolverLog() if log is None else log
        B, C, k = space.batch, space.n_contacts, space.k
        log.contact_counts[C] = log.contact_counts.get(C, 0) + B
        log.padded += space.padding
        A = space.A.detach().cpu().numpy()
        v = space.velocity.detach().cpu().numpy()
        target = space.target.detach().cpu().numpy()
        mu = space.mu.detach().cpu().numpy()
        cor = space.cor.detach().cpu().numpy()
        impulses = np.zeros((B, C * k))
        for b in range(B):
            M, q, E = self.lcp(A[b], v[b], target[b], mu[b], cor[b], k)
            z = lemke(M, q)
            impulses[b] = E @ z[: E.shape[1]]
        log.lcp += B
        f = torch.as_tensor(impulses, dtype=space.velocity.dtype, device=space.velocity.device)
        after = space.velocity + (space.A @ f[..., None])[..., 0]
        return LCPResolution(impulse=f.reshape(B, C, k), velocity_after=after)
