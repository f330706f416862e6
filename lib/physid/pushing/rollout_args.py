"""The arguments both engines' ``rollout`` functions share, checked in one place.

:func:`physid.pushing.lcp_engine.rollout` and :func:`physid.pushing.rigid_engine.rollout` take
the same tensors and settings; :func:`check_rollout_args` validates them at the entry point of
either, before any work, so a bad value is reported by name instead of surfacing as a solver
error or a NaN trajectory.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from physid.pushing.finger import FaceGeometry, Finger, check_finger
from physid.pushing.pushes import PushBatch
from physid.validate import check_count, check_positive, check_tensor

__all__ = ["RolloutSettings", "check_rollout_args"]


@dataclass(frozen=True)
class RolloutSettings:
    """The validated scalar settings of a rollout."""

    cell_side: float
    dt: float
    n_steps: int
    friction_dirs: int
    gravity: float
    tol: float
    finger: Finger


def check_rollout_args(
    centres: Tensor,
    masses: Tensor,
    frictions: Tensor,
    pushes: PushBatch | None,
    initial_velocity: Tensor,
    *,
    cell_side: float,
    dt: float,
    n_steps: int,
    friction_dirs: int,
    gravity: float,
    tol: float,
    finger: Finger,
    faces: FaceGeometry | None,
    initial_pose: Tensor | None = None,
) -> RolloutSettings:
    """Check shapes, dtypes (float64) and values; ValueError/TypeError naming the argument.

    ``centres (k, 2)``; ``masses (B, k)`` > 0; ``frictions (B, k)`` >= 0; ``initial_velocity
    (B, 3)`` finite; ``pushes`` None or a :class:`~physid.pushing.pushes.PushBatch` of B pushes;
    ``cell_side``, ``dt``, ``gravity``, ``tol`` > 0; ``n_steps`` >= 0; ``friction_dirs`` >= 3;
    ``finger`` a :class:`~physid.pushing.finger.Finger`; ``faces`` the object's
    :class:`~physid.pushing.finger.FaceGeometry` (required with pushes); ``initial_pose``
    None or ``(B, 3)`` finite ``[yaw, x, y]``.
    """
    check_tensor("centres", centres, shape=(None, 2), dtype=torch.float64)
    k = centres.shape[0]
    if k < 1:
        raise ValueError("centres must hold at least one cell, got shape (0, 2)")
    check_tensor("masses", masses, shape=(None, k), dtype=torch.float64, positive=True)
    batch = masses.shape[0]
    check_tensor("frictions", frictions, shape=(batch, k), dtype=torch.float64, nonnegative=True)
    check_tensor("initial_velocity", initial_velocity, shape=(batch, 3), dtype=torch.float64)
    if initial_pose is not None:
        check_tensor("initial_pose", initial_pose, shape=(batch, 3), dtype=torch.float64)
    if pushes is not None:
        if not isinstance(pushes, PushBatch):
            raise TypeError(f"pushes must be a PushBatch or None, got {type(pushes).__name__}")
        if len(pushes) != batch:
            raise ValueError(f"pushes must hold {batch} pushes (one per row of masses), got "
                             f"{len(pushes)}")
        if not isinstance(faces, FaceGeometry):
            raise TypeError(f"faces must be the object's FaceGeometry when pushing, got "
                            f"{type(faces).__name__}")
    return RolloutSettings(
        cell_side=check_positive("cell_side", cell_side),
        dt=check_positive("dt", dt),
        n_steps=check_count("n_steps", n_steps, minimum=0),
        friction_dirs=check_count("friction_dirs", friction_dirs, minimum=3),
        gravity=check_positive("gravity", gravity),
        tol=check_positive("tol", tol),
        finger=check_finger(finger),
    )
