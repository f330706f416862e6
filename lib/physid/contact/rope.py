"""A rope of point masses with bend and stretch limits: contacts that are limit constraints.

Node 0 hangs from the origin by a spring and node i from node i-1; with link lengths ``l_i`` and
rest length ``l₀``, the potential is ``V = k Σ_i (l_i - l₀)² + Σ_i m_i g y_i`` (no ½, as in the
authors' code). Each link has the absolute angle ``q_i`` measured from the downward vertical
(direction ``(sin q, -cos q)``, the authors' convention); the limits are
``|q_i - q_{i-1}| ≤ bend`` (``n - 1`` candidates, then) ``stretch_min l₀ ≤ l_i ≤ stretch_max l₀``
(``n`` candidates), each a one-component contact (k = 1) with signed distance
``h = bend - |Δq|`` or ``h = min(l - stretch_min l₀, stretch_max l₀ - l)`` and Jacobian row ∇h,
so that ∇h·v > 0 moves back into the allowed range. The relative angles Δq do not depend on the
direction the angles are measured from.

The paper's Rope task is the 200-node rope with k = 50 (the authors' ``ER200k50``); its
scalability study uses 50, 100 and 200 nodes (see :func:`physid.contact.tasks.rope_task`).
"""

from __future__ import annotations

import math

import numpy as np
import torch
from torch import Tensor

from physid.contact.mechanics import inverse_mass_matrix
from physid.contact.system import ContactSystem, Detection, reject_sample
from physid.core.constants import GRAVITY
from physid.core.validate import check_array, check_count, check_nonnegative, check_positive


class Rope(ContactSystem):
    """A chain of ``n_nodes`` masses joined by stiff springs, with angle and length limits.

    Args:
        n_nodes: number of nodes (10, the authors' code default; the paper's task uses 200).
        mass: mass of each node.
        rest_length: rest length l₀ of each link.
        stiffness: spring constant k of V = k (l - l₀)².
        bend: bend limit (rad).
        stretch: (min, max) link length as multiples of l₀.
        gravity: gravitational acceleration.
        device: torch device.
    """

    drawing = "rope"

    def __init__(
        self,
        n_nodes: int = 10,
        mass: float = 0.1,
        rest_length: float = 0.05,
        stiffness: float = 50.0,
        bend: float = 0.3,
        stretch: tuple[float, float] = (0.8, 1.2),
        gravity: float = GRAVITY,
        device=None,
    ) -> None:
        n_nodes = check_count("n_nodes", n_nodes, minimum=2)
        mass = check_positive("mass", mass)
        rest_length = check_positive("rest_length", rest_length)
        stiffness = check_positive("stiffness", stiffness)
        bend = check_positive("bend", bend)
        gravity = check_nonnegative("gravity", gravity)
        low, high = check_array("stretch", stretch, shape=(2,), positive=True).tolist()
        if not low < 1 < high:
            raise ValueError(f"stretch must be (min < 1, max > 1), got {stretch!r}")
        stretch = (low, high)
        self.name = f"Rope{n_nodes}"
        self.dim, self.contact_dim, self.n_points = 2, 1, n_nodes
        self.mass, self.rest_length, self.stiffness = float(mass), float(rest_length), stiffness
        self.bend, self.stretch, self.gravity = float(bend), stretch, float(gravity)
        self.inv_mass = inverse_mass_matrix(
            torch.full((n_nodes,), float(mass), dtype=torch.float64, device=device), None, 2
        )
        self.constraints = None
        self.candidates = tuple(f"bend {i}" for i in range(1, n_nodes)) + tuple(
            f"stretch {i}" for i in range(n_nodes)
        )

    def interacting_pairs(self) -> list[tuple[int, int]]:
        """Chain neighbours only, both ways: node i with i + 1, then i + 1 with i."""
        pairs = [(i, i + 1) for i in range(self.n_bodies - 1)]
        return pairs + [(j, i) for i, j in pairs]

    def _links(self, x: Tensor) -> Tensor:
        """``(B, n, 2)`` link vectors, from the origin to node 0, then node i-1 to node i."""
        nodes = x.reshape(x.shape[0], self.n_points, 2)
        return torch.diff(nodes, dim=1, prepend=torch.zeros_like(nodes[:, :1]))

    def potential(self, x: Tensor) -> Tensor:
        lengths = self._links(x).norm(dim=-1)
        y = x.reshape(x.shape[0], self.n_points, 2)[..., 1]
        spring = self.stiffness * ((lengths - self.rest_length) ** 2).sum(-1)
        return spring + self.mass * self.gravity * y.sum(-1)

    def _scatter(self, link_grad: Tensor) -> Tensor:
        """Gradients w.r.t. link vectors ``(B, ..., n, 2)`` as gradients w.r.t. the nodes."""
        # Link i = node_i - node_{i-1}: node i gets +g_i and node i gets -g_{i+1}.
        nodes = link_grad.clone()
        nodes[..., :-1, :] -= link_grad[..., 1:, :]
        return nodes

    def force(self, x: Tensor) -> Tensor:
        links = self._links(x)
        lengths = links.norm(dim=-1, keepdim=True)
        grad = 2 * self.stiffness * (lengths - self.rest_length) * links / lengths
        f = -self._scatter(grad)
        f[..., 1] -= self.mass * self.gravity
        return f.flatten(1)

    def detect(self, x: Tensor) -> Detection:
        B, n = x.shape[0], self.n_points
        links = self._links(x)
        length2 = (links**2).sum(-1)
        angle = torch.atan2(links[..., 1], links[..., 0])
        # ∂q/∂link = (-dy, dx) / l².
        dq = torch.stack([-links[..., 1], links[..., 0]], -1) / length2[..., None]
        rel = torch.remainder(angle[:, 1:] - angle[:, :-1] + math.pi, 2 * math.pi) - math.pi
        sign = torch.sign(rel)
        bend_d = self.bend - rel.abs()
        eye = torch.eye(n, dtype=x.dtype, device=x.device)
        # ∇h = -sign(Δq) (∂q_i - ∂q_{i-1}) over the links, for the n - 1 bends.
        link_grad = (eye[1:, :, None] - eye[:-1, :, None]) * dq[:, None]  # (B, n-1, n, 2)
        bend_J = self._scatter(-sign[..., None, None] * link_grad)
        lengths = length2.sqrt()
        low = lengths - self.stretch[0] * self.rest_length
        high = self.stretch[1] * self.rest_length - lengths
        stretch_d = torch.minimum(low, high)
        direction = torch.where(low <= high, 1.0, -1.0)
        unit = links / lengths[..., None]
        stretch_J = self._scatter(direction[..., None, None] * eye[:, :, None] * unit[:, None])
        distance = torch.cat([bend_d, stretch_d], 1)
        J = torch.cat([bend_J, stretch_J], 1).reshape(B, 2 * n - 1, 1, 2 * n)
        return Detection(distance=distance, jacobian=J)

    def from_angles(self, q: np.ndarray, rates: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Cartesian ``(x, v)`` from link angles and their rates, links at rest length.

        Args:
            q: ``(..., n)`` absolute link angles from the downward vertical (link i points along
                ``(sin q_i, -cos q_i)``), as in the authors' code.
            rates: ``(..., n)`` absolute angular rates ``q̇_i`` of the links (not relative to the
                previous link): link i adds ``l₀ q̇_i (cos q_i, sin q_i)`` to the velocity of
                every node from i on.
        """
        d = np.stack([np.sin(q), -np.cos(q)], -1)
        dd = rates[..., None] * np.stack([np.cos(q), np.sin(q)], -1)
        return self.rest_length * np.cumsum(d, -2), self.rest_length * np.cumsum(dd, -2)

    def sample_state(self, n: int, rng: np.random.Generator) -> tuple[Tensor, Tensor]:
        """Random initial states with the authors' distribution.

        The first link's angle from the downward vertical is q₀ ~ U(0, 3.14), each further link
        turns by U(-bend, bend) from the previous one (so ``q_i = q₀ + Σ Δq``), the links are at
        rest length, and every link's absolute angular rate is N(0, 1) (independent, not summed
        along the rope). No limit is violated (the draws stay strictly inside the bend range).
        """
        k = self.n_points

        def draw(rng, size):
            q0 = rng.uniform(0, 3.14, size=(size, 1))
            rel = rng.uniform(-self.bend, self.bend, size=(size, k - 1))
            rates = rng.normal(size=(size, k))
            return np.concatenate([q0, rel, rates], -1)

        def valid(s):
            return np.abs(s[:, 1:k]) < self.bend

        states = reject_sample(draw, lambda s: valid(s).all(-1), n, rng, self.name)
        q = np.cumsum(states[:, :k], -1)
        x, v = self.from_angles(q, states[:, k:])
        return self._tensor(x.reshape(n, -1)), self._tensor(v.reshape(n, -1))
