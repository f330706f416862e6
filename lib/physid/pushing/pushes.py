"""Pushing actions: a straight, constant-velocity push of the end-effector (§6–7.2).

A :class:`Push` starts with the end-effector touching the object at ``contact`` (a point on an
outer cell face, object frame) and moves it along the unit ``direction`` (pointing into the
object) at ``speed`` for ``duration`` seconds. The object starts at rest with its frame on the
world frame, so both vectors are also world vectors at t = 0.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

from physid.pushing.objects import CellObject, check_object
from physid.validate import (
    check_array,
    check_count,
    check_number,
    check_positive,
    check_seed,
)

__all__ = [
    "CONTACT_SPREAD",
    "MAX_PUSH_ANGLE",
    "PUSH_DURATION",
    "PUSH_SPEED",
    "Push",
    "PushBatch",
    "contact_face",
    "random_pushes",
]


#: The end-effector speed of §6 ("around 0.2 m/s"), m/s: the default of every push.
PUSH_SPEED = 0.2
#: The default push duration (s).
PUSH_DURATION = 1.0
#: Random pushes start on the middle ``2 × CONTACT_SPREAD`` of a face (away from its corners).
CONTACT_SPREAD = 0.3
#: Random push directions lie within this angle (rad) of the face's inward normal.
MAX_PUSH_ANGLE = math.radians(20.0)


def _finite_pair(name: str, value: Sequence[float]) -> tuple[float, float]:
    pair = check_array(name, value, shape=(2,))
    return (float(pair[0]), float(pair[1]))


@dataclass(frozen=True)
class Push:
    """A push: contact point (m, object frame), unit direction, speed (m/s), duration (s)."""

    contact: tuple[float, float]
    direction: tuple[float, float]
    speed: float = PUSH_SPEED
    duration: float = PUSH_DURATION

    def __post_init__(self) -> None:
        object.__setattr__(self, "contact", _finite_pair("contact", self.contact))
        direction = _finite_pair("direction", self.direction)
        if abs(math.hypot(*direction) - 1.0) > 1e-9:
            raise ValueError(f"direction must be a unit vector, got {direction!r}")
        object.__setattr__(self, "direction", direction)
        object.__setattr__(self, "speed", check_positive("speed", self.speed))
        object.__setattr__(self, "duration", check_positive("duration", self.duration))

    @property
    def velocity(self) -> tuple[float, float]:
        """End-effector velocity (m/s), world frame."""
        return (self.speed * self.direction[0], self.speed * self.direction[1])


def contact_face(obj: CellObject, push: Push) -> tuple[int, np.ndarray]:
    """The pushed cell and the inward unit normal of the face under ``push.contact``.

    ValueError if the contact point is not on the object's outer boundary or the direction does
    not point into the object there. At a corner the face most opposed to the push is taken.
    """
    check_object(obj)
    if not isinstance(push, Push):
        raise TypeError(f"push must be a Push, got {type(push).__name__}")
    cells, mids, normals = obj.exposed_faces()
    point = np.asarray(push.contact)
    offset = point - mids
    normal_gap = np.abs(np.sum(offset * normals, axis=1))
    along = np.abs(offset[:, 0] * normals[:, 1] - offset[:, 1] * normals[:, 0])
    tol = 1e-6 * obj.cell_side
    on_face = (normal_gap <= tol) & (along <= obj.cell_side / 2 + tol)
    if not on_face.any():
        raise ValueError(
            f"push.contact {push.contact} is not on the outer boundary of {obj.name!r} "
            f"(nearest face {normal_gap.min():.3g} m away)"
        )
    into = normals[on_face] @ np.asarray(push.direction)
    best = int(np.argmax(into))
    if into[best] <= 1e-9:
        raise ValueError(
            f"push.direction {push.direction} does not point into {obj.name!r} at contact "
            f"{push.contact} (inward normal {tuple(normals[on_face][best])})"
        )
    return int(cells[on_face][best]), normals[on_face][best]


def random_pushes(
    obj: CellObject,
    n: int,
    seed: int,
    *,
    speed: float = PUSH_SPEED,
    duration: float = PUSH_DURATION,
    max_angle: float = MAX_PUSH_ANGLE,
) -> list[Push]:
    """``n`` random pushes of ``obj`` drawn with ``numpy.random.default_rng(seed)``.

    Each picks an outer face uniformly, a contact point uniformly on its middle
    ``2 × CONTACT_SPREAD`` (60 %, away from the corners) and a direction within ``±max_angle``
    (rad) of the inward normal. ``seed`` is required (None is refused: the pushes must be
    reproducible).
    """
    check_object(obj)
    n = check_count("n", n)
    seed = check_seed("seed", seed)
    speed = check_positive("speed", speed)
    duration = check_positive("duration", duration)
    max_angle = check_number("max_angle", max_angle, low=0.0, high=math.pi / 2, high_open=True)
    rng = np.random.default_rng(seed)
    _, mids, normals = obj.exposed_faces()
    faces = rng.integers(len(mids), size=n)
    fractions = rng.uniform(-CONTACT_SPREAD, CONTACT_SPREAD, size=n)
    angles = rng.uniform(-max_angle, max_angle, size=n)
    pushes = []
    for face, fraction, angle in zip(faces, fractions, angles, strict=True):
        nx, ny = normals[face]
        contact = mids[face] + fraction * obj.cell_side * np.array([-ny, nx])
        c, s = math.cos(angle), math.sin(angle)
        pushes.append(Push(tuple(contact), (c * nx - s * ny, s * nx + c * ny), speed, duration))
    return pushes


@dataclass(frozen=True)
class PushBatch:
    """A batch of pushes as tensors for the engines: the pushed cell ``cell`` (B,), ``contact``
    (B, 2) and inward ``normal`` (B, 2) in the object frame, world ``velocity`` (B, 2)."""

    cell: Tensor
    contact: Tensor
    normal: Tensor
    velocity: Tensor
    duration: float

    def __len__(self) -> int:
        return len(self.cell)

    @classmethod
    def from_pushes(
        cls, obj: CellObject, pushes: Sequence[Push], device: torch.device | str = "cpu"
    ) -> PushBatch:
        """Validate ``pushes`` against ``obj`` (they must share one duration) and stack them."""
        if not all(isinstance(q, Push) for q in pushes):
            raise TypeError(f"pushes must all be Push objects, got {list(pushes)!r}")
        if not pushes:
            raise ValueError("pushes must hold at least one Push")
        durations = {p.duration for p in pushes}
        if len(durations) != 1:
            raise ValueError(f"pushes must share one duration, got {sorted(durations)}")
        faces = [contact_face(obj, p) for p in pushes]

        def stack(rows) -> Tensor:
            return torch.tensor(np.array(rows, dtype=float), dtype=torch.float64, device=device)

        return cls(
            cell=torch.tensor([f[0] for f in faces], device=device),
            contact=stack([p.contact for p in pushes]),
            normal=stack([f[1] for f in faces]),
            velocity=stack([p.velocity for p in pushes]),
            duration=durations.pop(),
        )
