"""A chain pendulum of point masses (bobs) hitting the ground ``y = -ground``: CP3.

Bob 0 is tethered to the origin, bob i to bob i-1, with link lengths ``l_i`` (distance
constraints). Gravity acts along -y. The candidate contacts are the bobs against the ground,
``d_i = y_i + ground - r_i``; the normal points down, from the bob to the ground, and the tangent
is rot90 of it, so the contact rows are ``(v_y, -v_x)`` of the bob.
"""

from __future__ import annotations

import numpy as np
from torch import Tensor

from physid.contact.mechanics import Constraints, inverse_mass_matrix
from physid.contact.system import ContactSystem, Detection, reject_sample
from physid.core.constants import GRAVITY
from physid.core.validate import check_array, check_nonnegative, check_positive


class ChainPendulum(ContactSystem):
    """A chain of bobs hanging from the origin above the ground.

    Args:
        masses: ``(n,)`` bob masses.
        lengths: ``(n,)`` link lengths (origin to bob 0, bob 0 to bob 1, …).
        radii: ``(n,)`` bob radii (for the contact with the ground only).
        ground: the ground is the line ``y = -ground``.
        gravity: gravitational acceleration.
        device: torch device.
    """

    drawing = "chain"

    def __init__(self, masses, lengths, radii, ground: float = 1.0, gravity=GRAVITY, device=None):
        masses = check_array("masses", masses, shape=(None,), positive=True)
        n = len(masses)
        if n < 1:
            raise ValueError("masses must name at least one bob, got none")
        lengths = check_array("lengths", lengths, shape=(n,), positive=True)
        radii = check_array("radii", radii, shape=(n,), positive=True)
        ground = check_positive("ground", ground)
        gravity = check_nonnegative("gravity", gravity)
        self.name = f"CP{n}"
        self.dim, self.contact_dim, self.n_points = 2, 2, n
        self.masses_np, self.lengths, self.radii_np = masses, lengths, radii
        self.ground, self.gravity = float(ground), float(gravity)
        self.inv_mass = inverse_mass_matrix(self._np_tensor(masses, device), None, dim=2)
        self.masses = self._np_tensor(masses, device)
        self.radii = self._np_tensor(radii, device)
        distances = [(0, -1, lengths[0])] + [(i, i - 1, lengths[i]) for i in range(1, n)]
        self.constraints = Constraints(dim=2, n_points=n, distances=distances)
        self.candidates = tuple(f"bob {i} – ground" for i in range(n))

    @staticmethod
    def _np_tensor(values, device):
        import torch

        return torch.as_tensor(values, dtype=torch.float64, device=device)

    def potential(self, x: Tensor) -> Tensor:
        y = x.reshape(x.shape[0], self.n_points, 2)[..., 1]
        return self.gravity * (self.masses * y).sum(-1)

    def force(self, x: Tensor) -> Tensor:
        f = x.new_zeros(x.shape[0], self.n_points, 2)
        f[..., 1] = -self.gravity * self.masses
        return f.flatten(1)

    def detect(self, x: Tensor) -> Detection:
        B, n = x.shape[0], self.n_points
        y = x.reshape(B, n, 2)[..., 1]
        distance = y + self.ground - self.radii
        J = x.new_zeros(B, n, 2, n, 2)
        for i in range(n):
            J[:, i, 0, i, 1] = 1.0  # e_nᵀ(0 - v) with e_n = (0, -1)
            J[:, i, 1, i, 0] = -1.0  # e_tᵀ(0 - v) with e_t = (1, 0)
        return Detection(distance=distance, jacobian=J.reshape(B, n, 2, 2 * n))

    def from_angles(self, phi: np.ndarray, omega: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Cartesian ``(x, v)`` from link angles measured from the downward vertical.

        Args:
            phi: ``(..., n)`` absolute link angles (link i points along ``(sin φ_i, -cos φ_i)``).
            omega: ``(..., n)`` absolute angular rates of the links (not relative to the
                previous link), as in the authors' code.
        """
        steps = self.lengths[:, None] * np.stack([np.sin(phi), -np.cos(phi)], -1)
        rates = (self.lengths * omega)[..., None] * np.stack([np.cos(phi), np.sin(phi)], -1)
        return np.cumsum(steps, -2), np.cumsum(rates, -2)

    def sample_state(self, n: int, rng: np.random.Generator) -> tuple[Tensor, Tensor]:
        """The authors' distribution: every link's absolute angle from the downward vertical
        U(0, 3.14) and its absolute angular rate N(0, 1), independently; states with a bob in
        the ground are redrawn."""
        k = self.n_points

        def draw(rng, size):
            return np.concatenate(
                [rng.uniform(0, 3.14, size=(size, k)), rng.normal(size=(size, k))], -1
            )

        def valid(s):
            x, _ = self.from_angles(s[:, :k], s[:, k:])
            return (x[..., 1] + self.ground - self.radii_np > 0).all(-1)

        states = reject_sample(draw, valid, n, rng, self.name)
        x, v = self.from_angles(states[:, :k], states[:, k:])
        return self._tensor(x.reshape(n, -1)), self._tensor(v.reshape(n, -1))
