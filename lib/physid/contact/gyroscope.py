"""A gyroscope on a pivot hitting a wall: a 3-D rigid body with a second-order friction cone.

The body is 4 points (``points_per_body = 4``): point 0 is the centre of mass x_0, and points 1,
2, 3 are the unit axis points ``x_k = x_0 + R e_k`` along the body x-, y- and z-axes (z is the
symmetry axis). Its pivot, at body coordinates ``(0, 0, -com_offset)`` from the centre, is held at
the origin by the linear joint ``x_0 - com_offset (x_3 - x_0) = 0``; six distance constraints
keep the frame rigid and orthonormal. Gravity acts along -z on the centre. The disk's rim, of
radius ``rim_radius`` in the body's x–y plane through the centre, is discretised into
``rim_points`` points at angles ``2πj / rim_points`` (the authors use ``0.314 j``, 0.05 % less);
the wall is the plane ``y = -wall``. The single candidate contact is the rim point closest to the
wall, ``d = min_j p_j,y + wall``, with the axes of the authors' code: ``e_n = (0, -1, 0)``,
``e_t1 = (-1, 0, 0)``, ``e_t2 = (0, 0, -1)``.

Because the pivot is fixed, the contact point moves as ``ω × p`` and cannot move along ``p``:
the 3 × 3 contact-space inverse inertia has rank 2, so problems (5) and (7) have a unique
velocity but not a unique impulse under CM (see the chapter).

Orientations are intrinsic z–x–z Euler angles (φ, θ, ψ), ``R = R_z(φ) R_x(θ) R_z(ψ)``, the
convention of the authors' code (scipy's ``"ZXZ"``), with the rates (φ̇, θ̇, ψ̇) of the angles.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from torch import Tensor

from physid.contact.mechanics import Constraints, inverse_mass_matrix
from physid.contact.system import ContactSystem, Detection, reject_sample
from physid.core.constants import GRAVITY
from physid.core.validate import check_array, check_count, check_nonnegative, check_positive


def euler_zxz(phi: np.ndarray, theta: np.ndarray, psi: np.ndarray) -> np.ndarray:
    """Rotation matrices R_z(φ) R_x(θ) R_z(ψ) (intrinsic z–x–z Euler angles), ``(..., 3, 3)``.

    Column k of R is body axis k in space coordinates.
    """

    def rz(a):
        c, s = np.cos(a), np.sin(a)
        z, o = np.zeros_like(a), np.ones_like(a)
        return np.stack(
            [np.stack([c, -s, z], -1), np.stack([s, c, z], -1), np.stack([z, z, o], -1)], -2
        )

    def rx(a):
        c, s = np.cos(a), np.sin(a)
        z, o = np.zeros_like(a), np.ones_like(a)
        return np.stack(
            [np.stack([o, z, z], -1), np.stack([z, c, -s], -1), np.stack([z, s, c], -1)], -2
        )

    return rz(phi) @ rx(theta) @ rz(psi)


class Gyroscope(ContactSystem):
    """A pivoted spinning disk next to a wall.

    Args:
        mass: body mass.
        moments: per-unit-mass second moments along the three body axes.
        com_offset: distance from the pivot to the centre of mass along the body z-axis.
        rim_radius: radius of the rim.
        rim_points: points discretising the rim.
        wall: the wall is the plane y = -wall.
        gravity: gravitational acceleration.
        device: torch device.
    """

    drawing = "gyroscope"

    def __init__(
        self,
        mass: float = 0.1,
        moments=(0.24, 0.24, 0.04),
        com_offset: float = 0.5,
        rim_radius: float = 0.3,
        rim_points: int = 20,
        wall: float = 0.33,
        gravity: float = GRAVITY,
        device=None,
    ) -> None:
        mass = check_positive("mass", mass)
        moments = check_array("moments", moments, shape=(3,), positive=True).tolist()
        com_offset = check_positive("com_offset", com_offset)
        rim_radius = check_positive("rim_radius", rim_radius)
        wall = check_positive("wall", wall)
        rim_points = check_count("rim_points", rim_points, minimum=3)
        gravity = check_nonnegative("gravity", gravity)
        self.name = "Gyro"
        self.dim, self.contact_dim, self.n_points = 3, 3, 4
        # One body: point 0 is the centre of mass, points 1–3 the unit body x-, y-, z-axis points.
        self.points_per_body = 4
        self.mass, self.com_offset, self.gravity = float(mass), float(com_offset), float(gravity)
        self.rim_radius, self.wall = float(rim_radius), float(wall)
        self.inv_mass = inverse_mass_matrix(
            torch.tensor([mass], dtype=torch.float64, device=device),
            torch.tensor([moments], dtype=torch.float64, device=device),
            dim=3,
            points_per_body=4,
        )
        rigid = [(k, 0, 1.0) for k in (1, 2, 3)]
        rigid += [(1, 2, math.sqrt(2)), (1, 3, math.sqrt(2)), (2, 3, math.sqrt(2))]
        pivot = [1 + com_offset, 0.0, 0.0, -com_offset]
        self.constraints = Constraints(dim=3, n_points=4, distances=rigid, linear=[pivot])
        angles = torch.arange(rim_points, dtype=torch.float64, device=device)
        angles = angles * (2 * math.pi / rim_points)
        c = rim_radius * torch.stack([torch.cos(angles), torch.sin(angles)], -1)
        # c̃ of each rim point over the 4 points: (1 - c1 - c2, c1, c2, 0).
        self.rim_weights = torch.cat(
            [1 - c.sum(-1, keepdim=True), c, torch.zeros_like(c[:, :1])], -1
        )
        self.frame = torch.tensor(
            [[0.0, -1.0, 0.0], [-1.0, 0.0, 0.0], [0.0, 0.0, -1.0]], device=device
        ).double()
        self.candidates = ("rim – wall",)

    def potential(self, x: Tensor) -> Tensor:
        return self.mass * self.gravity * x[:, 2]

    def force(self, x: Tensor) -> Tensor:
        f = torch.zeros_like(x)
        f[:, 2] = -self.mass * self.gravity
        return f

    def rim(self, x: Tensor) -> Tensor:
        """``(B, rim_points, 3)`` rim point positions."""
        return self.rim_weights @ x.reshape(x.shape[0], 4, 3)

    def detect(self, x: Tensor) -> Detection:
        B = x.shape[0]
        heights = self.rim(x)[..., 1] + self.wall
        distance, index = heights.min(-1)
        weights = self.rim_weights[index]  # (B, 4)
        # Rows -e_rowᵀ v_p, with v_p = Σ_q c̃_q v_q.
        J = -weights[:, None, :, None] * self.frame[None, :, None, :]
        return Detection(distance=distance[:, None], jacobian=J.reshape(B, 1, 3, 12))

    def from_euler(self, angles: np.ndarray, rates: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Cartesian ``(x, v)`` from z–x–z Euler angles (φ, θ, ψ) and their rates.

        The angular velocity in space is ``ω = φ̇ e_z + θ̇ R_z(φ) e_x + ψ̇ R e_z`` (the line of
        nodes is ``R_z(φ) e_x``), and every point moves as ``ω × x`` about the pivot.
        """
        phi, theta, psi = angles[..., 0], angles[..., 1], angles[..., 2]
        R = euler_zxz(phi, theta, psi)
        axes = np.swapaxes(R, -1, -2)  # rows: body axes in space
        centre = self.com_offset * axes[..., 2, :]
        points = np.concatenate([centre[..., None, :], centre[..., None, :] + axes], -2)
        z = np.zeros_like(phi)
        node = np.stack([np.cos(phi), np.sin(phi), z], -1)  # R_z(φ) e_x
        omega = (
            rates[..., :1] * np.stack([z, z, np.ones_like(z)], -1)
            + rates[..., 1:2] * node
            + rates[..., 2:3] * axes[..., 2, :]
        )
        velocities = np.cross(omega[..., None, :], points)
        return points, velocities

    def sample_state(self, n: int, rng: np.random.Generator) -> tuple[Tensor, Tensor]:
        """Random initial states with the authors' distribution, clear of the wall.

        Euler angles φ, θ, ψ ~ U(-1.5, 1.5) rad; rates φ̇ ~ U(-4.5, 4.5), θ̇ ~ U(-0.3, 0.3) and
        spin ψ̇ = ±1.5 (N(0, 1) + 7) rad/s with an equiprobable sign; states whose rim touches
        the wall are redrawn.
        """

        def draw(rng, size):
            angles = rng.uniform(-1.5, 1.5, size=(size, 3))
            sign = rng.choice([-1.0, 1.0], size)
            spin = sign * 1.5 * (rng.normal(size=size) + 7)
            rates = np.stack([rng.uniform(-4.5, 4.5, size), rng.uniform(-0.3, 0.3, size), spin], -1)
            return np.concatenate([angles, rates], -1)

        def valid(s):
            x, _ = self.from_euler(s[:, :3], s[:, 3:])
            rim = self.rim_weights.cpu().numpy() @ x
            return (rim[..., 1] + self.wall > 0).all(-1)

        states = reject_sample(draw, valid, n, rng, self.name)
        x, v = self.from_euler(states[:, :3], states[:, 3:])
        return self._tensor(x.reshape(n, -1)), self._tensor(v.reshape(n, -1))
