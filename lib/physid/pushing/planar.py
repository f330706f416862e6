"""Planar geometry of Part I's engines: rotations, the planar cross product, the exact SE(2)
flow of a constant twist, and the friction polygon of §5 (its directions ``D`` and its block of
``F``), shared by both formulations (:mod:`physid.pushing.lcp_engine`,
:mod:`physid.pushing.rigid_engine`).
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from physid.core.validate import check_count

__all__ = [
    "cross",
    "friction_block",
    "friction_directions",
    "perp",
    "rotate",
    "rotation",
    "se2_step",
]


def friction_directions(n_dirs: int, like: Tensor) -> Tensor:
    """The ``(n_dirs, 2)`` unit directions ``d_j`` of D, counter-clockwise from +x."""
    n_dirs = check_count("friction_dirs", n_dirs, minimum=3)
    angles = torch.arange(n_dirs, dtype=like.dtype, device=like.device) * (2 * math.pi / n_dirs)
    return torch.stack([torch.cos(angles), torch.sin(angles)], dim=1)


def friction_block(n_dirs: int, count: int, like: Tensor) -> Tensor:
    """``(1, count, n_dirs + 1, n_dirs + 1)`` blocks ``[[0, ζ], [−ζᵀ, 0]]`` of F (§5)."""
    blk = like.new_zeros(n_dirs + 1, n_dirs + 1)
    blk[:n_dirs, n_dirs] = 1.0
    blk[n_dirs, :n_dirs] = -1.0
    return blk.expand(1, count, n_dirs + 1, n_dirs + 1)


def rotation(theta: Tensor) -> Tensor:
    """Rotation matrices ``(..., 2, 2)`` of angles ``theta (...)``."""
    c, s = torch.cos(theta), torch.sin(theta)
    return torch.stack([c, -s, s, c], -1).unflatten(-1, (2, 2))


def rotate(theta: Tensor, vec: Tensor) -> Tensor:
    """Rotate ``vec (..., 2)`` by angles ``theta (...)``."""
    return (rotation(theta) @ vec.unsqueeze(-1)).squeeze(-1)


def perp(vec: Tensor) -> Tensor:
    """``ẑ × vec``: the velocity of offset ``vec`` under a unit angular velocity."""
    return vec @ vec.new_tensor([[0.0, 1.0], [-1.0, 0.0]])


def cross(a: Tensor, b: Tensor) -> Tensor:
    """Planar cross product ``a_x b_y − a_y b_x``."""
    return (perp(a) * b).sum(-1)


def se2_step(pos: Tensor, omega: Tensor, vel: Tensor, dt: float) -> Tensor:
    """Position after ``dt`` of a point moving with the rigid velocity field ``(ω, vel)``.

    ``pos + V(ω dt) vel dt`` with ``V(φ) = [[sin φ/φ, −(1−cos φ)/φ], [(1−cos φ)/φ, sin φ/φ]]``
    ``= (sin(φ/2)/(φ/2)) R(φ/2)``, applied as a complex multiplication.
    """
    half = omega * (dt / 2)
    flow = torch.polar(torch.sinc(half / math.pi) * dt, half)
    return pos + torch.view_as_real(flow * torch.complex(vel[..., 0], vel[..., 1]))
