"""Bouncing point masses (BP) and bouncing disks (BD) in the unit box.

The box has four walls ``a x + b y + c = 0`` with inward normal (a, b): left x = 0, bottom y = 0,
right x = 1, top y = 1. The candidate contacts are the ball pairs (0,1), (0,2), …, (3,4), then
ball·4 + wall for every ball and wall, the order of the authors' code (30 for five balls).

Signed distances use the centres only: ``‖x_i - x_j‖ - (r_i + r_j)`` for a pair and
``a x + b y + c - r`` for a wall. The normal e_n points from body i to body j (or to the wall)
and e_t = rot90(e_n); the contact rows are ``e_nᵀ (v_pj - v_pi)`` and ``e_tᵀ (v_pj - v_pi)``,
with ``v_p`` the velocity of the contact point (zero for a wall), so a positive normal velocity
separates. A disk is its centre plus two unit axis points, and the velocity of its rim point
``x_0 + r n̂`` is ``Σ_q c̃_q v_q`` with ``c̃ = (1 - c_1 - c_2, c_1, c_2)``, ``c_k = r n̂·(x_k - x_0)``.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from torch import Tensor

from physid.contact.mechanics import Constraints, inverse_mass_matrix
from physid.contact.system import ContactSystem, Detection, reject_sample, rot90
from physid.core.validate import check_array

#: The walls left, bottom, right and top, as (a, b, c) of a x + b y + c = 0 with inward
#: normal (a, b).
WALLS = ((1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (-1.0, 0.0, 1.0), (0.0, -1.0, 1.0))
WALL_NAMES = ("left", "bottom", "right", "top")


def _check_bodies(masses, radii) -> tuple[np.ndarray, np.ndarray]:
    masses = check_array("masses", masses, shape=(None,), positive=True)
    if len(masses) < 1:
        raise ValueError("masses must name at least one body, got none")
    radii = check_array("radii", radii, shape=(len(masses),), positive=True)
    if (radii >= 0.5).any():
        raise ValueError(f"radii must be < 0.5 (the box is the unit square), got {radii}")
    return masses, radii


class BouncingBodies(ContactSystem):
    """Balls (``disks=False``: point masses) or rotating disks in the unit box, without gravity.

    Args:
        masses: ``(n_b,)`` masses.
        radii: ``(n_b,)`` radii.
        disks: whether the bodies are disks (3 points each: centre and two unit axis points,
            per-unit-mass moments r²/4) rather than point masses.
        device: torch device of the system's tensors.
    """

    drawing = "bodies"

    def __init__(self, masses, radii, disks: bool = False, device=None) -> None:
        masses, radii = _check_bodies(masses, radii)
        if not isinstance(disks, bool):
            raise TypeError(f"disks must be True or False, got {disks!r}")
        n_b = len(masses)
        self.disks = disks
        self.points_per_body = 3 if disks else 1
        self.name = ("BD" if disks else "BP") + str(n_b)
        self.dim, self.contact_dim = 2, 2
        self.n_points = n_b * self.points_per_body
        moments = np.repeat((radii**2 / 4)[:, None], 2, 1) if disks else None
        self.inv_mass = inverse_mass_matrix(
            torch.as_tensor(masses, device=device),
            None if moments is None else torch.as_tensor(moments, device=device),
            dim=2,
            points_per_body=self.points_per_body,
        )
        self.masses, self.radii_np = masses, radii
        self.radii = torch.as_tensor(radii, device=device)
        self.pairs = [(i, j) for i in range(n_b) for j in range(i + 1, n_b)]
        if disks:
            distances = []
            for b in range(n_b):
                p = 3 * b
                distances += [(p + 1, p, 1.0), (p + 2, p, 1.0), (p + 1, p + 2, math.sqrt(2))]
            self.constraints = Constraints(dim=2, n_points=self.n_points, distances=distances)
        else:
            self.constraints = None
        self.candidates = tuple(f"ball {i} – ball {j}" for i, j in self.pairs) + tuple(
            f"ball {b} – {w} wall" for b in range(n_b) for w in WALL_NAMES
        )
        # The candidates' constants, made once (detection runs at every step): each pair's
        # bodies, each wall contact's body and wall, and one-hot maps from a contact to its
        # body, which place a contact's Jacobian rows without an indexed write.
        self._pair_i = torch.tensor([i for i, _ in self.pairs], dtype=torch.long, device=device)
        self._pair_j = torch.tensor([j for _, j in self.pairs], dtype=torch.long, device=device)
        self._wall_body = torch.arange(n_b, device=device).repeat_interleave(4)
        self._walls = torch.tensor(WALLS, dtype=torch.float64, device=device).repeat(n_b, 1)
        eye = torch.eye(n_b, dtype=torch.float64, device=device)
        self._on_i, self._on_j = eye[self._pair_i], eye[self._pair_j]
        self._on_wall = eye[self._wall_body]
        # The signed incidence of every candidate: +1 on the body its normal points to, -1 on
        # the body it leaves (a wall contact leaves its body): a point mass's rows are its
        # frame times this, in one product.
        self._incidence = torch.cat([self._on_j - self._on_i, -self._on_wall])
        self._wall_normals = (-self._walls[:, :2]).expand(1, -1, -1)

    def potential(self, x: Tensor) -> Tensor:
        return x.new_zeros(x.shape[0])

    def force(self, x: Tensor) -> Tensor:
        return torch.zeros_like(x)

    def centres(self, x: Tensor) -> Tensor:
        """``(B, n_b, 2)`` body centres."""
        return x.reshape(x.shape[0], self.n_bodies, self.points_per_body, 2)[:, :, 0]

    def _point_weights(self, x: Tensor, body: Tensor, offset: Tensor) -> Tensor:
        """c̃ of the point ``x_0 + offset`` of each body, ``(B, K, points_per_body)``.

        Args:
            x: ``(B, N)`` coordinates.
            body: ``(K,)`` body index per contact.
            offset: ``(B, K, 2)`` offset from the body's centre to the contact point.
        """
        if not self.disks:
            return offset.new_ones(*offset.shape[:2], 1)
        pts = x.reshape(x.shape[0], self.n_bodies, 3, 2)[:, body]  # (B, K, 3, 2)
        axes = pts[:, :, 1:] - pts[:, :, :1]
        c = (axes * offset[:, :, None]).sum(-1)  # (B, K, 2)
        return torch.cat([1 - c.sum(-1, keepdim=True), c], -1)

    def detect(self, x: Tensor) -> Detection:
        """Signed distances and contact rows of every candidate (the module docstring), with
        each candidate's rows ``frame ⊗ (c̃_j ⊗ incidence_j − c̃_i ⊗ incidence_i)`` made in one
        product for all candidates."""
        B = x.shape[0]
        centres = self.centres(x)
        i, j, radii = self._pair_i, self._pair_j, self.radii
        diff = centres[:, j] - centres[:, i]
        dist = diff.norm(dim=-1)
        e_pair = diff / dist[..., None]
        body, wall = self._wall_body, self._walls  # (4 n_b,), (4 n_b, 3)
        d_wall = (centres[:, body] * wall[:, :2]).sum(-1) + wall[:, 2] - radii[body]
        e_n = torch.cat([e_pair, self._wall_normals.expand(B, -1, -1)], 1)  # (B, K, 2)
        if self.disks:
            e_wall = self._wall_normals.expand(B, -1, -1)
            leaves = self._point_weights(x, i, radii[i][:, None] * e_pair)
            reaches = self._point_weights(x, j, -radii[j][:, None] * e_pair)
            at_wall = self._point_weights(x, body, radii[body][:, None] * e_wall)
            point = torch.cat([
                self._on_j[:, :, None] * reaches[:, :, None] - self._on_i[:, :, None]
                * leaves[:, :, None],
                -self._on_wall[:, :, None] * at_wall[:, :, None],
            ], 1)  # (B, K, n_b, 3)
        else:
            point = self._incidence[None, :, :, None]  # (1, K, n_b, 1)
        frame = torch.stack([e_n, rot90(e_n)], -2)  # (B, K, 2 rows, 2 coords)
        rows = frame[:, :, :, None, None, :] * point[:, :, None, :, :, None]
        K = e_n.shape[1]
        return Detection(
            distance=torch.cat([dist - radii[i] - radii[j], d_wall], 1),
            jacobian=rows.reshape(B, K, 2, self.n_coords),
        )

    def sample_state(self, n: int, rng: np.random.Generator) -> tuple[Tensor, Tensor]:
        """Random states: centres uniform in the box (at least a radius from every wall),
        without overlaps. BP: v ~ N(0,1); BD: v ~ 0.5 N(0,1), θ ~ U(0, 2π), ω ~ 0.5 N(0,1)."""
        n_b, radii = self.n_bodies, self.radii_np

        def draw(rng, size):
            unit = rng.uniform(0, 1, size=(size, n_b, 2))
            return radii[:, None] + (1 - 2 * radii[:, None]) * unit

        def valid(c):
            apart = np.ones(len(c), bool)
            for a, b in self.pairs:
                apart &= np.linalg.norm(c[:, a] - c[:, b], axis=-1) > radii[a] + radii[b]
            return apart

        centres = reject_sample(draw, valid, n, rng, self.name)
        if not self.disks:
            v = rng.normal(size=(n, n_b, 2))
            return self._tensor(centres.reshape(n, -1)), self._tensor(v.reshape(n, -1))
        v0 = 0.5 * rng.normal(size=(n, n_b, 2))
        theta = rng.uniform(0, 2 * np.pi, size=(n, n_b))
        omega = 0.5 * rng.normal(size=(n, n_b))
        e1 = np.stack([np.cos(theta), np.sin(theta)], -1)
        e2 = np.stack([-np.sin(theta), np.cos(theta)], -1)
        x = np.stack([centres, centres + e1, centres + e2], 2)
        v = np.stack([v0, v0 + omega[..., None] * e2, v0 - omega[..., None] * e1], 2)
        return self._tensor(x.reshape(n, -1)), self._tensor(v.reshape(n, -1))
