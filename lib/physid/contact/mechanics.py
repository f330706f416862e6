"""Cartesian mechanics with explicit constraints (Finzi et al. 2020), as used by Zhong et al.

Every body is a set of points in ``d`` dimensions: a point mass is one point; a rigid body is its
centre of mass (COM) plus one unit point along each body axis (``x_k = x_0 + R e_k``). The state
is the flat vector of all point coordinates ``x ∈ R^N`` (``N = n·d``) and their velocities.

**Inertia.** One parametrisation is used everywhere, in the dynamics and in the contact model
(the authors' code mixes an absolute and a per-unit-mass inertia, see the chapter). A body of
mass m with per-unit-mass second moments ``s_k`` (``∫ y_k² dm / m`` along body axis k; ``r²/4`` per
in-plane axis of a uniform disk of radius r) has kinetic energy
``½ m ‖v_0‖² + ½ Σ_k m s_k ‖v_k - v_0‖²``, so its point mass matrix is
``m [[1 + Σ s, -sᵀ], [-s, diag(s)]]`` and its inverse (:func:`body_inverse_mass`)

    M⁻¹ = (1/m) (𝟙𝟙ᵀ + diag(0, 1/s_1, …, 1/s_p)).

**Constraints.** Holonomic equality constraints Φ(x) = 0 (:class:`Constraints`): distances
``‖x_i - x_j‖² - l² = 0`` (to a fixed point for a tether) and linear joints
``Σ_p a_p x_p = 0``. With ``G = ∂Φ/∂x`` and the force ``F = -∇V``, the constrained Lagrangian
dynamics (CLNN, Finzi et al. 2020) are

    v̇ = M⁻¹ (F - Gᵀ λ),   (G M⁻¹ Gᵀ) λ = G M⁻¹ F + vᵀ ∇²Φ v,

the multiplier λ making the second time derivative of Φ vanish (:func:`acceleration`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

from physid.core.validate import check_tensor


def body_inverse_mass(mass: Tensor, moments: Tensor) -> Tensor:
    """Inverse point mass matrix ``(n_p, n_p)`` of one body, ``(1/m)(𝟙𝟙ᵀ + diag(0, 1/s))``.

    Args:
        mass: scalar tensor, the body's mass (> 0).
        moments: ``(n_p - 1,)`` per-unit-mass second moments along the body axes (> 0); empty
            for a point mass.
    """
    check_tensor("mass", mass, shape=(), dtype=None, positive=True)
    check_tensor("moments", moments, shape=(None,), dtype=mass.dtype, positive=True)
    n_p = moments.shape[0] + 1
    ones = torch.ones(n_p, n_p, dtype=mass.dtype, device=mass.device)
    diag = torch.cat([mass.new_zeros(1), 1 / moments])
    return (ones + torch.diag(diag)) / mass


def inverse_mass_matrix(
    masses: Tensor, moments: Tensor | None, dim: int, points_per_body: int = 1
) -> Tensor:
    """The ``(N, N)`` inverse mass matrix of bodies stored body after body.

    Args:
        masses: ``(n_b,)`` body masses.
        moments: ``(n_b, points_per_body - 1)`` per-unit-mass second moments, or None for
            point masses.
        dim: spatial dimension d; the matrix acts per dimension (``M⁻¹ ⊗ I_d``).
        points_per_body: points per body (1 for point masses).
    """
    if moments is None:
        moments = masses.new_zeros(masses.shape[0], 0)
    if moments.shape != (masses.shape[0], points_per_body - 1):
        raise ValueError(
            f"moments must have shape {(masses.shape[0], points_per_body - 1)}, "
            f"got {tuple(moments.shape)}"
        )
    blocks = [body_inverse_mass(m, s) for m, s in zip(masses, moments, strict=True)]
    points = torch.block_diag(*blocks)
    eye = torch.eye(dim, dtype=masses.dtype, device=masses.device)
    return torch.kron(points, eye)


@dataclass(frozen=True)
class Constraints:
    """Holonomic constraints of a point set in ``dim`` dimensions.

    Attributes:
        dim: spatial dimension.
        n_points: number of points.
        distances: ``(i, j, length)``: ``‖x_i - x_j‖ = length``; ``j = -1`` is the origin.
        linear: rows ``a`` of linear joints ``Σ_p a_p x_p = 0`` (one row per joint, applied to
            every coordinate, so ``dim`` constraints each).
    """

    dim: int
    n_points: int
    distances: Sequence[tuple[int, int, float]] = ()
    linear: Sequence[Sequence[float]] = ()

    def __post_init__(self) -> None:
        for i, j, length in self.distances:
            if not (0 <= i < self.n_points and -1 <= j < self.n_points and i != j):
                raise ValueError(f"distance constraint ({i}, {j}) names a missing point")
            if not length > 0:
                raise ValueError(f"distance constraint ({i}, {j}) needs a positive length")
        for row in self.linear:
            if len(row) != self.n_points:
                raise ValueError(f"a linear joint needs {self.n_points} coefficients, got {row}")

    @property
    def count(self) -> int:
        """Number of scalar constraints E."""
        return len(self.distances) + self.dim * len(self.linear)

    def _pairs(self, x: Tensor) -> Tensor:
        points = x.reshape(x.shape[0], self.n_points, self.dim)
        origin = torch.zeros_like(points[:, :1])
        padded = torch.cat([points, origin], 1)  # index -1 is the origin
        i = torch.tensor([p[0] for p in self.distances], device=x.device)
        j = torch.tensor([p[1] for p in self.distances], device=x.device)
        return padded[:, i] - padded[:, j]

    def residual(self, x: Tensor) -> Tensor:
        """Φ(x), ``(B, E)``."""
        parts = []
        if self.distances:
            lengths = x.new_tensor([p[2] for p in self.distances])
            parts.append((self._pairs(x) ** 2).sum(-1) - lengths**2)
        if self.linear:
            a = x.new_tensor(self.linear)
            points = x.reshape(x.shape[0], self.n_points, self.dim)
            parts.append(torch.einsum("ep,bpd->bed", a, points).flatten(1))
        return torch.cat(parts, -1)

    def jacobian(self, x: Tensor) -> Tensor:
        """G = ∂Φ/∂x, ``(B, E, N)``."""
        B = x.shape[0]
        parts = []
        if self.distances:
            diff = self._pairs(x)  # (B, D, d)
            G = x.new_zeros(B, len(self.distances), self.n_points + 1, self.dim)
            rows = torch.arange(len(self.distances), device=x.device)
            i = torch.tensor([p[0] for p in self.distances], device=x.device)
            j = torch.tensor([p[1] for p in self.distances], device=x.device)
            G[:, rows, i] += 2 * diff
            G[:, rows, j] -= 2 * diff
            parts.append(G[:, :, : self.n_points].flatten(2))
        if self.linear:
            a = x.new_tensor(self.linear)  # (L, n)
            eye = torch.eye(self.dim, dtype=x.dtype, device=x.device)
            lin = torch.einsum("ep,dk->edpk", a, eye).reshape(-1, self.n_points * self.dim)
            parts.append(lin.expand(B, -1, -1))
        return torch.cat(parts, 1)

    def curvature(self, x: Tensor, v: Tensor) -> Tensor:
        """vᵀ ∇²Φ v, ``(B, E)``: 2 ‖v_i - v_j‖² for a distance, 0 for a linear joint."""
        parts = []
        if self.distances:
            parts.append(2 * (self._pairs(v) ** 2).sum(-1))
        if self.linear:
            parts.append(v.new_zeros(v.shape[0], self.dim * len(self.linear)))
        return torch.cat(parts, -1)


def acceleration(
    x: Tensor, v: Tensor, inv_mass: Tensor, force: Tensor, constraints: Constraints | None
) -> Tensor:
    """The constrained acceleration ``M⁻¹ (F - Gᵀ λ)`` of the CLNN dynamics, ``(B, N)``."""
    free = force @ inv_mass.transpose(-1, -2) if inv_mass.dim() == 2 else _bmv(inv_mass, force)
    if constraints is None:
        return free
    G = constraints.jacobian(x)
    minv_gt = inv_mass @ G.transpose(1, 2)  # (B, N, E)
    gram = G @ minv_gt
    rhs = _bmv(G, free) + constraints.curvature(x, v)
    lam = torch.linalg.solve(gram, rhs)
    return free - _bmv(minv_gt, lam)


def _bmv(matrix: Tensor, vector: Tensor) -> Tensor:
    return (matrix @ vector[..., None])[..., 0]


def kinetic_energy(v: Tensor, mass_matrix: Tensor) -> Tensor:
    """½ vᵀ M v per sample, ``(B,)``."""
    return 0.5 * (v * (v @ mass_matrix.transpose(-1, -2))).sum(-1)
