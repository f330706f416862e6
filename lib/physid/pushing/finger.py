"""The finger: a kinematic disc that pushes, its contact with the object and what it records.

The authors pushed in Bullet with a finger box of 3 × 3 × 10 cm, ``lateralFriction`` 2.0,
driven at constant velocity (``resetBaseVelocity`` before every step). Here the finger is a disc
of radius :data:`FINGER_RADIUS` (half the authors' 3 cm width) in the engines and an upright
cylinder of the same radius in pybullet, so both simulators push with the same shape; it moves at
the push velocity whatever the object does (it is kinematic).

Contact. Every step the engines find the point of the object's outer boundary (its exposed cell
faces, :meth:`~physid.pushing.objects.CellObject.exposed_faces`) nearest the finger's centre:
the contact normal ``n`` points from the finger's centre to that point (the face's inward
normal, or towards a corner), and the gap is that distance minus the radius. The contact is
one-sided (``λ_n ≥ 0``), inelastic (restitution 0: the relative normal velocity closes the gap
over one step, ``n·(v_c − u) ≥ −gap/Δt``) and has Coulomb friction ``|λ_t| ≤ μ_c λ_n`` with the
finger–object coefficient ``μ_c``, the ``friction`` of :class:`Finger`. Bullet multiplies the
two bodies' coefficients; the authors' finger had 2.0 and their cells Bullet's default 0.5, so
:data:`FINGER_FRICTION` = 2.0 × 0.5 = 1.0. It is a property of the object's sides, not of the
cells' friction with the table (the parameters being identified).

Records. For every push the engines and pybullet record, per step, whether the finger touches,
the normal impulse, the contact point in the object frame and the *side* it lies on (a maximal
straight run of exposed faces, :func:`face_sides`); :func:`contact_events` reduces them to the
events that break §6's assumptions: the finger slid along the object, lost contact, or changed
side.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

from physid.core.validate import check_nonnegative, check_positive
from physid.pushing.objects import CellObject, check_object

__all__ = [
    "COUPLED",
    "FINGER",
    "FINGER_FRICTION",
    "FINGER_RADIUS",
    "FREE",
    "LOCK",
    "MODE_NAMES",
    "SLIDE",
    "SLIDE_TOLERANCE",
    "STICK",
    "ContactEvents",
    "ContactRecord",
    "FaceGeometry",
    "Finger",
    "FingerRows",
    "Recorder",
    "check_finger",
    "contact_events",
    "face_sides",
    "finger_contact",
]

#: Radius of the finger (m): half the width of the authors' 3 cm finger.
FINGER_RADIUS = 0.015
#: Finger–object Coulomb coefficient: the authors' finger (2.0) times their cells' Bullet default
#: (0.5), multiplied as Bullet combines them.
FINGER_FRICTION = 1.0
#: The finger counts as having slid when its contact point moves this far (m) along the object.
SLIDE_TOLERANCE = 2e-3
# How the rigid formulation solved a step with the finger (``ContactRecord.mode``), by the
# exact line solver except the last; the LCP formulation always uses the last.
#: Mode: no force from the finger.
FREE = 0
#: Mode: the finger sticks.
STICK = 1
#: Mode: the finger slides.
SLIDE = 2
#: Mode: the finger slides while the motion locks a cell's velocity where its friction switches
#: direction.
LOCK = 3
#: Mode: the coupled interior-point LCP (the fallback, counted).
COUPLED = 4
#: Names of the modes, in order.
MODE_NAMES = ("free", "stick", "slide", "lock", "coupled")


@dataclass(frozen=True)
class Finger:
    """A disc finger: ``radius`` (m, > 0) and finger–object friction ``friction`` (>= 0)."""

    radius: float = FINGER_RADIUS
    friction: float = FINGER_FRICTION

    def __post_init__(self) -> None:
        object.__setattr__(self, "radius", check_positive("finger.radius", self.radius))
        object.__setattr__(
            self, "friction", check_nonnegative("finger.friction", self.friction)
        )


#: The finger every push uses unless told otherwise.
FINGER = Finger()


def check_finger(finger: object, name: str = "finger") -> Finger:
    """``finger`` if it is a :class:`Finger`; else a TypeError naming ``name``."""
    if not isinstance(finger, Finger):
        raise TypeError(f"{name} must be a Finger, got {type(finger).__name__}")
    return finger


def face_sides(obj: CellObject) -> np.ndarray:
    """Side index (F,) of each exposed face: faces with the same inward normal, on the same line
    and touching end to end form one straight side of the outline."""
    return _face_sides(check_object(obj))


def _face_sides(obj: CellObject) -> np.ndarray:
    """:func:`face_sides` of an ``obj`` already checked (computed once per object)."""
    return obj.memo("face_sides", lambda: _find_sides(obj))


def _find_sides(obj: CellObject) -> np.ndarray:
    _, mids, normals = obj.exposed_faces()
    tangent = np.stack([-normals[:, 1], normals[:, 0]], 1)
    offset = np.round(np.sum(mids * normals, 1) / obj.cell_side * 2).astype(int)
    along = np.sum(mids * tangent, 1) / obj.cell_side
    key = np.round(normals).astype(int)
    sides = np.full(len(mids), -1)
    count = 0
    groups: dict[tuple[int, int, int], list[int]] = {}
    for f in range(len(mids)):
        groups.setdefault((key[f, 0], key[f, 1], offset[f]), []).append(f)
    for faces in groups.values():
        faces.sort(key=lambda f: along[f])
        sides[faces[0]] = count
        for prev, f in zip(faces, faces[1:], strict=False):
            if along[f] - along[prev] > 1.5:  # a gap along the line starts a new side
                count += 1
            sides[f] = count
        count += 1
    return sides


@dataclass(frozen=True)
class FaceGeometry:
    """The exposed faces of an object as tensors: pushed ``cell`` (F,), midpoint ``mid`` (F, 2),
    inward ``normal`` (F, 2), ``side`` (F,) and the half length of a face ``half`` (m)."""

    cell: Tensor
    mid: Tensor
    normal: Tensor
    side: Tensor
    half: float

    @classmethod
    def of(cls, obj: CellObject, like: Tensor) -> FaceGeometry:
        """The faces of ``obj`` with the dtype and device of ``like`` (made once per object,
        dtype and device)."""
        def make() -> FaceGeometry:
            cells, mids, normals = obj.exposed_faces()
            return cls(
                cell=torch.tensor(cells, device=like.device),
                mid=torch.tensor(mids, dtype=like.dtype, device=like.device),
                normal=torch.tensor(normals, dtype=like.dtype, device=like.device),
                side=torch.tensor(_face_sides(obj), device=like.device),
                half=obj.cell_side / 2,
            )

        return obj.memo(f"faces {like.dtype} {like.device}", make)

    @functools.cached_property
    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Midpoints, normals (float64) and sides (int64) as numpy arrays, for the compiled
        step."""
        return (np.ascontiguousarray(self.mid.cpu().numpy(), dtype=np.float64),
                np.ascontiguousarray(self.normal.cpu().numpy(), dtype=np.float64),
                self.side.cpu().numpy().astype(np.int64))

    def nearest(self, point: Tensor) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        """For object-frame points ``(B, 2)``: the nearest face (B,), the nearest boundary point
        (B, 2), its distance (B,) and the unit normal from the point towards it (B, 2).

        Differentiable in ``point`` (the choice of face is not); the nearest point is the
        projection onto the face clamped to its ends, so near a corner the normal turns."""
        tangent = torch.stack([-self.normal[:, 1], self.normal[:, 0]], 1)  # (F, 2)
        rel = point.unsqueeze(1) - self.mid  # (B, F, 2)
        along = (rel * tangent).sum(2).clamp(-self.half, self.half)
        closest = self.mid + along.unsqueeze(2) * tangent
        dist = (closest - point.unsqueeze(1)).norm(dim=2)
        with torch.no_grad():
            face = dist.argmin(1)
        idx = torch.arange(len(point), device=point.device)
        near = closest[idx, face]
        gap = dist[idx, face]
        toward = (near - point) / gap.clamp(min=1e-12).unsqueeze(1)
        return face, near, gap, toward


@dataclass(frozen=True)
class ContactRecord:
    """What the finger did at every step of B pushes: ``touching`` (B, T) bool, the normal
    impulse ``normal_impulse`` (B, T) N·s, the contact point ``point`` (B, T, 2) in the object
    frame, its ``side`` (B, T) (−1 while not touching) and the object's ``yaw`` (B, T, rad);
    for the engines, ``mode`` (B, T) how each step was solved (:data:`MODE_NAMES`)."""

    touching: Tensor
    normal_impulse: Tensor
    point: Tensor
    side: Tensor
    yaw: Tensor
    mode: Tensor | None = None

    def __getitem__(self, index) -> ContactRecord:
        return ContactRecord(
            self.touching[index], self.normal_impulse[index], self.point[index],
            self.side[index], self.yaw[index], None if self.mode is None else self.mode[index],
        )


@dataclass(frozen=True)
class ContactEvents:
    """Per push (B,): the finger ``touched`` at all, ``slid`` along the object (it slipped more
    than ``tolerance`` m along a side), ``lost_contact`` (stopped touching after touching) and
    ``changed_side``; ``slip`` (B,) the largest slip (m) and ``min_normal_impulse`` over the push
    (N·s)."""

    touched: np.ndarray
    slid: np.ndarray
    lost_contact: np.ndarray
    changed_side: np.ndarray
    slip: np.ndarray
    min_normal_impulse: np.ndarray
    tolerance: float

    @property
    def assumptions_hold(self) -> np.ndarray:
        """Whether §6's assumptions held on each push (touched, and never slid, let go or
        changed side)."""
        return self.touched & ~(self.slid | self.lost_contact | self.changed_side)


def contact_events(
    record: ContactRecord, obj: CellObject, finger: Finger = FINGER,
    tolerance: float = SLIDE_TOLERANCE,
) -> ContactEvents:
    """Reduce a :class:`ContactRecord` of B pushes of ``obj`` by ``finger`` to their
    :class:`ContactEvents`.

    Slip is measured against rolling: the round finger does not turn, so while the object turns
    by ``Δψ`` the contact point moves ``r Δψ`` along the side without any slip (``p = f + r n``
    and the finger's material point at the contact stays on the object's). The slip over a run
    of touching steps on one side is ``Σ (Δp·t − r Δψ)`` with ``t = ẑ × n`` along the side."""
    check_object(obj)
    check_finger(finger)
    return _contact_events(record, obj, finger, check_positive("tolerance", tolerance))


def _contact_events(
    record: ContactRecord, obj: CellObject, finger: Finger, tolerance: float
) -> ContactEvents:
    """:func:`contact_events` with ``obj``, ``finger`` and ``tolerance`` already checked (the
    library's own callers, :mod:`physid.pushing.observations`)."""
    radius = finger.radius
    _, _, face_normals = obj.exposed_faces()
    sides = _face_sides(obj)
    side_normal = np.zeros((int(sides.max()) + 1, 2))
    side_normal[sides] = face_normals
    if record.touching.dim() == 1:
        record = record[None]
    touching = record.touching.detach().cpu().numpy().astype(bool)
    point = record.point.detach().cpu().numpy()
    side = record.side.detach().cpu().numpy()
    yaw = record.yaw.detach().cpu().numpy()
    impulse = record.normal_impulse.detach().cpu().numpy()
    batch = touching.shape[0]
    touched = touching.any(1)
    lost = np.zeros(batch, bool)
    changed = np.zeros(batch, bool)
    slip = np.zeros(batch)
    for b in range(batch):
        steps = np.nonzero(touching[b])[0]
        if len(steps) == 0:
            continue
        first, last = steps[0], steps[-1]
        lost[b] = not touching[b, first : last + 1].all() or last < touching.shape[1] - 1
        changed[b] = len(np.unique(side[b, steps])) > 1
        # Consecutive touching steps on one side: their contact points' slip.
        pairs = steps[:-1][(np.diff(steps) == 1) & (side[b, steps[1:]] == side[b, steps[:-1]])]
        if len(pairs) == 0:
            continue
        moved = point[b, pairs + 1] - point[b, pairs]
        normal = side_normal[side[b, pairs]]
        along = moved[:, 0] * -normal[:, 1] + moved[:, 1] * normal[:, 0]
        rolled = radius * np.angle(np.exp(1j * (yaw[b, pairs + 1] - yaw[b, pairs])))
        runs = np.cumsum(np.r_[0, np.diff(pairs) != 1])  # a new run after every break
        per_step = along - rolled
        for run in np.unique(runs):
            slip[b] = max(slip[b], np.abs(np.cumsum(per_step[runs == run])).max())
    return ContactEvents(
        touched=touched,
        slid=slip > tolerance,
        lost_contact=lost,
        changed_side=changed,
        slip=slip,
        min_normal_impulse=impulse.min(1),
        tolerance=tolerance,
    )


@dataclass(frozen=True)
class FingerRows:
    """The finger's rows of a step's mixed LCP (module docstring), for ``n`` velocity unknowns.

    ``z = [λ_n, λ_+, λ_−, η]`` per push: the normal impulse, the friction impulses along ``±t``
    and the friction slack. ``G (B, 4, n)`` and ``h (B, 4)`` give ``s = h − G x + F z``:

    * ``s_n = n·(J x − u) + gap/Δt ≥ 0 ⊥ λ_n ≥ 0`` (one-sided, inelastic, closes the gap);
    * ``ρ_± = ±t·(J x − u) + η ≥ 0 ⊥ λ_± ≥ 0`` (friction opposes the slip, as D of §5);
    * ``ξ = μ_c λ_n − λ_+ − λ_− ≥ 0 ⊥ η ≥ 0`` (Coulomb: ``μ_c`` is the coupling entry of ``F``).

    ``block (1, 1, 4, 4)`` is ``F``'s block without ``μ_c``; ``mu (B, 1)`` goes in as a
    :class:`~physid.pushing.lcp.Coupling` at row 3, column 0.
    """

    G: Tensor
    h: Tensor
    block: Tensor
    mu: Tensor

    #: Position of the friction bound's row and of the normal impulse's column in the block.
    BOUND_ROW = 3
    NORMAL_COL = 0

    @classmethod
    def build(
        cls, J: Tensor, normal: Tensor, gap: Tensor, velocity: Tensor, friction: float,
        dt: float,
    ) -> FingerRows:
        """Rows for the contact Jacobian ``J (B, 2, n)`` (object velocities to the velocity of
        the contact point), the unit normal into the object ``normal (B, 2)``, the ``gap (B,)``
        (m, negative when overlapping), the finger's ``velocity (B, 2)`` and ``friction``."""
        tangent = torch.stack([-normal[:, 1], normal[:, 0]], 1)
        jn = (normal.unsqueeze(2) * J).sum(1)
        jt = (tangent.unsqueeze(2) * J).sum(1)
        un = (normal * velocity).sum(1)
        ut = (tangent * velocity).sum(1)
        G = torch.stack([-jn, -jt, jt, torch.zeros_like(jn)], 1)
        h = torch.stack([gap / dt - un, -ut, ut, torch.zeros_like(un)], 1)
        block = J.new_zeros(1, 1, 4, 4)
        block[0, 0, 1, 3] = block[0, 0, 2, 3] = 1.0
        block[0, 0, 3, 1] = block[0, 0, 3, 2] = -1.0
        mu = J.new_full((J.shape[0], 1), float(friction))
        return cls(G=G, h=h, block=block, mu=mu)


def finger_contact(
    faces: FaceGeometry, finger: Finger, centre: Tensor, turn: Tensor, origin: Tensor
) -> tuple[Tensor, Tensor, Tensor, Tensor, Tensor]:
    """Where a finger with its centre at ``centre (B, 2)`` (world) is nearest the object at
    ``origin (B, 2)`` turned by the unit complex ``turn (B,)``: the nearest face (B,), the
    contact point in the object frame (B, 2), the gap (B,, m), the world normal into the object
    (B, 2) and the contact point's offset from the origin (B, 2), differentiable in the pose."""
    rel = torch.view_as_real(torch.view_as_complex((centre - origin).contiguous()) * turn.conj())
    face, near, dist, toward = faces.nearest(rel)
    normal = torch.view_as_real(turn * torch.view_as_complex(toward.contiguous()))
    arm = torch.view_as_real(turn * torch.view_as_complex(near.contiguous()))
    return face, near, dist - finger.radius, normal, arm


class Recorder:
    """Collects the finger's :class:`ContactRecord` step by step (inside the engines)."""

    def __init__(self, batch: int, like: Tensor):
        self.normal: list[Tensor] = []
        self.point: list[Tensor] = []
        self.side: list[Tensor] = []
        self.mode: list[Tensor] = []
        self.yaw: list[Tensor] = []
        self.last_normal = like.new_zeros(batch)

    def add(self, normal: Tensor, point: Tensor, side: Tensor, yaw: Tensor,
            mode: Tensor | int) -> None:
        """One step: normal impulses (B,), contact points (B, 2), sides (B,), the object's yaw
        at the step's start (B,) and how the step was solved."""
        self.yaw.append(yaw.detach())
        normal = normal.detach()
        self.last_normal = normal
        self.normal.append(normal)
        self.point.append(point.detach())
        self.side.append(torch.where(normal > 0, side, -1))
        self.mode.append(torch.as_tensor(mode, device=normal.device).expand(len(normal)))

    def stack(self) -> ContactRecord:
        """The record of every step so far."""
        normal = torch.stack(self.normal, 1)
        return ContactRecord(
            touching=normal > 0, normal_impulse=normal, point=torch.stack(self.point, 1),
            side=torch.stack(self.side, 1), yaw=torch.stack(self.yaw, 1),
            mode=torch.stack(self.mode, 1),
        )
