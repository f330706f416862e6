"""The exact engine twist between two poses, shared by the pushing tests that restart a push."""

from __future__ import annotations

import math

import torch


def engine_twist(before: torch.Tensor, after: torch.Tensor, dt: float) -> torch.Tensor:
    """The twist ``[ω, vx, vy]`` (origin, world axes) that moves the pose ``before`` to
    ``after`` in one engine step of ``dt`` (the inverse of ``se2_step``): a backward
    difference of the yaw, and of the origin corrected by the step's rotation."""
    d = after - before
    omega = (torch.remainder(d[..., 0] + math.pi, 2 * math.pi) - math.pi) / dt
    half = omega * (dt / 2)
    flow = torch.polar(torch.sinc(half / math.pi) * dt, half)
    v = torch.view_as_real(torch.complex(d[..., 1], d[..., 2]) / flow)
    return torch.cat([omega.unsqueeze(-1), v], -1)
