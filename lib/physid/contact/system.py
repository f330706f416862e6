"""The interface shared by the five systems with contact (:mod:`physid.contact.planar`, …).

A system fixes the bodies (points, inverse mass matrix, equality constraints, potential) and a
list of P *candidate contacts* in a fixed order, e.g. the 10 ball pairs then the 20 ball–wall
pairs of the bouncing balls. Collision detection (:meth:`ContactSystem.detect`) evaluates every
candidate's signed distance d (negative: penetration) and its contact Jacobian rows (normal,
then tangents), for a batch of configurations. The friction and restitution coefficients of a
task are given per candidate, so homogeneous and heterogeneous tasks share the systems.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

from physid.contact.mechanics import Constraints, kinetic_energy


@dataclass(frozen=True)
class Detection:
    """Signed distances ``(B, P)`` and contact Jacobians ``(B, P, k, N)`` of all candidates."""

    distance: Tensor
    jacobian: Tensor


class ContactSystem:
    """Base class: bodies, candidate contacts and their detection.

    Subclasses set the attributes below in ``__init__`` and implement :meth:`potential`,
    :meth:`force`, :meth:`detect` and :meth:`sample_state`.

    Attributes:
        name: a short name.
        dim: spatial dimension d of the points.
        contact_dim: components per contact k (1 limit, 2 planar, 3 spatial).
        n_points: number of points n; the state has N = n·d coordinates.
        points_per_body: points per body, stored body after body (1 for point masses, 3 for a
            disk: centre and two unit axis points, 4 for a 3-D rigid body).
        inv_mass: ``(N, N)`` inverse mass matrix (float64).
        constraints: the equality constraints, or None.
        candidates: names of the P candidate contacts, in order.
        gravity: gravitational acceleration (m/s²; 0 for a system without gravity).
        radii: ``(n_bodies,)`` body radii for systems of round bodies, else None.
        drawing: the name of the system's entry in :data:`physid.contact.drawing.DRAWINGS`.
    """

    name: str
    dim: int
    contact_dim: int
    n_points: int
    points_per_body: int = 1
    inv_mass: Tensor
    constraints: Constraints | None
    candidates: tuple[str, ...]
    gravity: float = 0.0
    radii: Tensor | None = None
    drawing: str

    @property
    def n_coords(self) -> int:
        return self.n_points * self.dim

    @property
    def n_candidates(self) -> int:
        return len(self.candidates)

    @property
    def n_bodies(self) -> int:
        """The number of bodies (the points grouped ``points_per_body`` at a time)."""
        return self.n_points // self.points_per_body

    def interacting_pairs(self) -> list[tuple[int, int]]:
        """The ordered pairs of bodies that can act on each other: every pair here; the rope's
        chain neighbours only."""
        n = self.n_bodies
        return [(i, j) for i in range(n) for j in range(n) if i != j]

    @property
    def device(self) -> torch.device:
        return self.inv_mass.device

    @property
    def mass_matrix(self) -> Tensor:
        """M = (M⁻¹)⁻¹."""
        return torch.linalg.inv(self.inv_mass)

    def potential(self, x: Tensor) -> Tensor:
        """Potential energy, ``(B,)``."""
        raise NotImplementedError

    def force(self, x: Tensor) -> Tensor:
        """``-∇V``, ``(B, N)``."""
        raise NotImplementedError

    def detect(self, x: Tensor) -> Detection:
        """Signed distances and Jacobians of every candidate contact."""
        raise NotImplementedError

    def sample_state(self, n: int, rng: np.random.Generator) -> tuple[Tensor, Tensor]:
        """``n`` random collision-free initial states ``(x, v)``, each ``(n, N)``."""
        raise NotImplementedError

    def energy(self, x: Tensor, v: Tensor) -> Tensor:
        """Total energy ½ vᵀ M v + V(x), ``(B,)``."""
        return kinetic_energy(v, self.mass_matrix) + self.potential(x)

    def constraint_jacobian(self, x: Tensor) -> Tensor | None:
        """``(B, E, N)`` Jacobian of the equality constraints, or None."""
        return None if self.constraints is None else self.constraints.jacobian(x)

    def _tensor(self, values) -> Tensor:
        return torch.as_tensor(np.asarray(values), dtype=torch.float64, device=self.device)


def reject_sample(
    draw, valid, n: int, rng: np.random.Generator, what: str, max_rounds: int = 200
) -> np.ndarray:
    """``n`` draws of ``draw(rng, size)`` that pass ``valid`` (rejection sampling)."""
    kept: list[np.ndarray] = []
    total = 0
    for _ in range(max_rounds):
        batch = draw(rng, max(4 * n, 256))
        good = batch[valid(batch)]
        kept.append(good)
        total += len(good)
        if total >= n:
            return np.concatenate(kept)[:n]
    raise RuntimeError(f"could not draw {n} valid initial states for {what}")


def rot90(e: Tensor) -> Tensor:
    """The planar unit vectors ``e`` rotated by +90°: (x, y) → (-y, x)."""
    return torch.stack([-e[..., 1], e[..., 0]], -1)
