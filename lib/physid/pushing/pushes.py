"""Pushing actions: a straight, constant-velocity push of the finger (§6–7.2).

A :class:`Push` aims the finger's centre line at ``contact`` (a point on an outer cell face,
object frame) and moves the finger along the unit ``direction`` (pointing into the object) at
``speed`` for ``duration`` seconds. The object starts at rest with its frame on the world frame,
so both vectors are also world vectors at t = 0.

The finger (a disc, :class:`~physid.pushing.finger.Finger`) starts one finger width behind the
aimed point, as the authors placed theirs 3 cm behind the contact pixel:
:func:`finger_start`. A push is *reachable* (:func:`check_reachable`) when the finger starts at
least :data:`MIN_CLEARANCE` away from the object, reaches the aimed face without touching any
other cell on the way, and its direction lies within :data:`MAX_PUSH_ANGLE` of the face's
inward normal.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
import torch
from torch import Tensor

from physid.core.validate import (
    check_array,
    check_count,
    check_nonnegative,
    check_number,
    check_positive,
    check_seed,
)
from physid.pushing.finger import FINGER, Finger, check_finger
from physid.pushing.objects import CellObject, check_object

__all__ = [
    "CONTACT_SPREAD",
    "MAX_PUSH_ANGLE",
    "MIN_CLEARANCE",
    "PUSH_DURATION",
    "PUSH_SPEED",
    "Push",
    "PushBatch",
    "check_reachable",
    "contact_face",
    "finger_start",
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
#: The finger must start at least this far (m) from every cell of the object.
MIN_CLEARANCE = 0.005
#: Slack (m, rad) of the reachability checks, for rounding.
_SLACK = 1e-9


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


def _face_under(obj: CellObject, faces, push: Push) -> tuple[int, np.ndarray]:
    """:func:`contact_face` given ``faces = obj.exposed_faces()``."""
    cells, mids, normals = faces
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


def _check_push(push: object) -> Push:
    if not isinstance(push, Push):
        raise TypeError(f"push must be a Push, got {type(push).__name__}")
    return push


def contact_face(obj: CellObject, push: Push) -> tuple[int, np.ndarray]:
    """The pushed cell and the inward unit normal of the face under ``push.contact``.

    ValueError if the contact point is not on the object's outer boundary or the direction does
    not point into the object there. At a corner the face most opposed to the push is taken.
    """
    check_object(obj)
    return _face_under(obj, obj.exposed_faces(), _check_push(push))


def finger_start(push: Push, finger: Finger = FINGER) -> np.ndarray:
    """The finger's centre (2,) at the start of ``push``: one finger width (``2 × radius``)
    behind the aimed point, ``contact − 2 radius direction`` (object frame = world frame)."""
    return _finger_start(_check_push(push), check_finger(finger))


def _finger_start(push: Push, finger: Finger) -> np.ndarray:
    """:func:`finger_start` of a ``push`` and ``finger`` already checked."""
    return np.asarray(push.contact) - 2.0 * finger.radius * np.asarray(push.direction)


def _point_square_distance(points: np.ndarray, centres: np.ndarray, half: float) -> np.ndarray:
    """Distance (..., k) from points (..., 2) to the axis-aligned squares of half side ``half``
    centred on ``centres`` (k, 2); 0 inside."""
    outside = np.abs(points[..., None, :] - centres) - half
    return np.linalg.norm(np.maximum(outside, 0.0), axis=-1)


def _segment_square_distance(
    a: np.ndarray, b: np.ndarray, centres: np.ndarray, half: float
) -> np.ndarray:
    """Exact distance (k,) from the segment ``a``–``b`` to each axis-aligned square.

    0 where the segment meets the square (slab test); otherwise the nearest pair of two convex
    polygons involves a vertex, so it is the least of the ends' distances to the square and the
    square's corners' distances to the segment."""
    d = b - a
    lo, hi = centres - half, centres + half
    parallel = d == 0.0
    between = (a >= lo) & (a <= hi)
    with np.errstate(divide="ignore", invalid="ignore"):
        t1, t2 = (lo - a) / d, (hi - a) / d
    enter = np.where(parallel, np.where(between, -np.inf, np.inf), np.minimum(t1, t2))
    leave = np.where(parallel, np.where(between, np.inf, -np.inf), np.maximum(t1, t2))
    meets = np.maximum(enter.max(1), 0.0) <= np.minimum(leave.min(1), 1.0)
    corners = centres[:, None, :] + half * np.array([[-1, -1], [-1, 1], [1, -1], [1, 1]])
    t = np.clip((corners - a) @ d / max(float(d @ d), 1e-300), 0.0, 1.0)
    to_corners = np.linalg.norm(a + t[..., None] * d - corners, axis=-1).min(1)
    ends = _point_square_distance(np.stack([a, b]), centres, half).min(0)
    return np.where(meets, 0.0, np.minimum(ends, to_corners))


def _reachable(
    obj: CellObject, faces, push: Push, finger: Finger, clearance: float, max_angle: float
) -> tuple[int, np.ndarray]:
    """:func:`check_reachable` of arguments already checked, given ``faces =
    obj.exposed_faces()``; the pushed cell and the inward normal of the aimed face."""
    cell, normal = _face_under(obj, faces, push)
    direction = np.asarray(push.direction)
    cosine = float(direction @ normal)
    angle = math.acos(min(cosine, 1.0))
    if angle > max_angle + _SLACK:
        raise ValueError(
            f"push direction {push.direction} is {math.degrees(angle):.1f}° from the inward "
            f"normal ({normal[0]:g}, {normal[1]:g}) of the aimed face of {obj.name!r} (at most "
            f"{math.degrees(max_angle):.1f}°)"
        )
    centres = obj.centres.cpu().numpy()
    half = obj.cell_side / 2
    start = _finger_start(push, finger)
    gaps = _point_square_distance(start, centres, half)
    if gaps.min() < finger.radius + clearance - _SLACK:
        i = int(gaps.argmin())
        raise ValueError(
            f"push starts inside or too close to {obj.name!r}: the finger's start centre "
            f"({start[0]:.4f}, {start[1]:.4f}) is {gaps[i]:.4g} m from cell {i} (at least radius "
            f"{finger.radius:g} + clearance {clearance:g} m needed)"
        )
    travel = max(2.0 * finger.radius - finger.radius / cosine, 0.0)
    gaps = _segment_square_distance(start, start + travel * direction, centres, half)
    if gaps.min() < finger.radius - _SLACK:
        i = int(gaps.argmin())
        raise ValueError(
            f"push approach path crosses cell {i} of {obj.name!r}: the finger (radius "
            f"{finger.radius:g} m) comes within {gaps[i]:.4g} m of it before touching the aimed "
            f"face of cell {cell}"
        )
    return cell, normal


def check_reachable(
    obj: CellObject,
    push: Push,
    finger: Finger = FINGER,
    clearance: float = MIN_CLEARANCE,
    max_angle: float = MAX_PUSH_ANGLE,
) -> None:
    """ValueError naming ``push`` unless the finger can make it.

    The finger (a disc of ``finger.radius``) starts at :func:`finger_start`, one finger width
    behind the aimed point. The push is reachable when (1) its direction lies within
    ``max_angle`` (rad) of the inward normal ``n`` of the aimed face (:func:`contact_face`);
    (2) the start disc is at least ``clearance`` (m) from every cell; (3) the disc swept along
    the direction from the start to where it first touches the aimed face's line (centre at
    ``contact − (radius / direction·n) direction``) stays clear of every cell (exact
    segment-to-square distances >= radius). The message says which condition failed.
    """
    check_object(obj)
    _check_push(push)
    check_finger(finger)
    clearance = check_nonnegative("clearance", clearance)
    max_angle = check_number("max_angle", max_angle, low=0.0, high=math.pi / 2, high_open=True)
    _reachable(obj, obj.exposed_faces(), push, finger, clearance, max_angle)


def random_pushes(
    obj: CellObject,
    n: int,
    seed: int,
    *,
    speed: float = PUSH_SPEED,
    duration: float = PUSH_DURATION,
    max_angle: float = MAX_PUSH_ANGLE,
    finger: Finger = FINGER,
    clearance: float = MIN_CLEARANCE,
) -> list[Push]:
    """``n`` random reachable pushes of ``obj`` drawn with ``numpy.random.default_rng(seed)``.

    Each candidate picks an outer face uniformly, a contact point uniformly on its middle
    ``2 × CONTACT_SPREAD`` (60 %, away from the corners) and a direction within ``±max_angle``
    (rad) of the inward normal (the cone). The finger starts one finger width (``2 ×
    finger.radius``) behind the contact point (:func:`finger_start`); candidates whose start
    disc is closer than ``clearance`` (m, :data:`MIN_CLEARANCE` = 5 mm) to a cell, or whose
    path to the aimed face crosses another cell, are rejected and drawn again
    (:func:`check_reachable`). ``seed`` is required (None is refused: the pushes must be
    reproducible); the first pushes of a seed do not depend on ``n``. ValueError naming
    ``obj`` if fewer than ``n`` of ``max(10_000, 100 n)`` candidates are reachable.
    """
    check_object(obj)
    n = check_count("n", n)
    seed = check_seed("seed", seed)
    speed = check_positive("speed", speed)
    duration = check_positive("duration", duration)
    max_angle = check_number("max_angle", max_angle, low=0.0, high=math.pi / 2, high_open=True)
    check_finger(finger)
    clearance = check_nonnegative("clearance", clearance)
    rng = np.random.default_rng(seed)
    faces = obj.exposed_faces()
    _, mids, normals = faces
    attempts, chunk = max(10_000, 100 * n), 64
    pushes: list[Push] = []
    for _ in range(0, attempts, chunk):
        picks = rng.integers(len(mids), size=chunk)
        fractions = rng.uniform(-CONTACT_SPREAD, CONTACT_SPREAD, size=chunk)
        angles = rng.uniform(-max_angle, max_angle, size=chunk)
        for face, fraction, angle in zip(picks, fractions, angles, strict=True):
            nx, ny = normals[face]
            contact = mids[face] + fraction * obj.cell_side * np.array([-ny, nx])
            c, s = math.cos(angle), math.sin(angle)
            push = Push(tuple(contact), (c * nx - s * ny, s * nx + c * ny), speed, duration)
            try:
                _reachable(obj, faces, push, finger, clearance, max_angle)
            except ValueError:
                continue
            pushes.append(push)
            if len(pushes) == n:
                return pushes
    raise ValueError(
        f"obj {obj.name!r} has too few reachable pushes: {len(pushes)} of {attempts} random "
        f"candidates were reachable, {n} wanted (finger radius {finger.radius:g} m, clearance "
        f"{clearance:g} m, max_angle {math.degrees(max_angle):.1f}°)"
    )


@dataclass(frozen=True)
class PushBatch:
    """A batch of pushes as tensors for the engines: the pushed cell ``cell`` (B,), the aimed
    ``contact`` (B, 2) and inward ``normal`` (B, 2) in the object frame, world ``velocity``
    (B, 2), the finger's world ``start`` centre (B, 2) (:func:`finger_start`) and the
    ``duration`` (s) they share."""

    cell: Tensor
    contact: Tensor
    normal: Tensor
    velocity: Tensor
    start: Tensor
    duration: float

    def __len__(self) -> int:
        return len(self.cell)

    def select(self, index: Tensor) -> PushBatch:
        """The pushes ``index`` (a LongTensor) of this batch."""
        return replace(self, cell=self.cell[index], contact=self.contact[index],
                       normal=self.normal[index], velocity=self.velocity[index],
                       start=self.start[index])

    @classmethod
    def from_pushes(
        cls,
        obj: CellObject,
        pushes: Sequence[Push],
        device: torch.device | str = "cpu",
        finger: Finger = FINGER,
    ) -> PushBatch:
        """Validate ``pushes`` against ``obj`` (they must share one duration and be reachable by
        ``finger``, :func:`check_reachable`: ValueError naming ``push``) and stack them."""
        return cls._from_pushes(check_object(obj), pushes, device, check_finger(finger))

    @classmethod
    def _from_pushes(
        cls, obj: CellObject, pushes: Sequence[Push], device: torch.device | str, finger: Finger
    ) -> PushBatch:
        """:meth:`from_pushes` with ``obj`` and ``finger`` already checked (by
        :func:`~physid.pushing.simulate.simulate`); ``pushes`` are checked here."""
        if not all(isinstance(q, Push) for q in pushes):
            raise TypeError(f"pushes must all be Push objects, got {list(pushes)!r}")
        if not pushes:
            raise ValueError("pushes must hold at least one Push")
        durations = {p.duration for p in pushes}
        if len(durations) != 1:
            raise ValueError(f"pushes must share one duration, got {sorted(durations)}")
        geometry = obj.exposed_faces()
        # Reachability depends on the object's shape, the push and the finger only: checked
        # once per object (a push that fails raises, and is not kept).
        faces = [
            obj.memo(("reachable", p, finger), lambda p=p: _reachable(
                obj, geometry, p, finger, MIN_CLEARANCE, MAX_PUSH_ANGLE))
            for p in pushes
        ]

        def stack(rows) -> Tensor:
            return torch.tensor(np.array(rows, dtype=float), dtype=torch.float64, device=device)

        return cls(
            cell=torch.tensor([f[0] for f in faces], device=device),
            contact=stack([p.contact for p in pushes]),
            normal=stack([f[1] for f in faces]),
            velocity=stack([p.velocity for p in pushes]),
            start=stack([_finger_start(p, finger) for p in pushes]),
            duration=durations.pop(),
        )
