"""The "real world": pybullet pushes of cell objects by a finger (the ground truth of §7.2).

Each :class:`~physid.pushing.objects.CellObject` becomes one multibody with one link per cell:
a cube of the cell's side, fixed to a massless, shapeless base, with the cell's mass and lateral
friction. Bullet multiplies the friction coefficients of the two bodies in contact (clamped to
10), so the table's ``lateralFriction`` is 1.0 and link ``i``'s is ``μ_i``: the effective
cell–table coefficient is ``μ_i``.

Normal loads. A rigid body resting on a plane at many points is statically indeterminate, and
Bullet's solver splits the weight between the links arbitrarily (measured on the hammer with
rigid contacts: 0 to 3 × ``M_i g`` per cell). The engines (and the paper) load each cell with its
own weight ``M_i g``, so each link's table contact is made compliant with a stiffness and damping
proportional to its mass (``CONTACT_STIFFNESS`` and ``CONTACT_DAMPING`` per kg): the object then
sinks evenly (about 0.3 mm) and every cell carries its weight (measured within 1 %).

The finger. As in the authors' setup, the finger is kinematic: a mass-0
upright cylinder of radius ``finger.radius`` and height :data:`FINGER_HEIGHT`, its bottom
:data:`FINGER_LIFT` above the table, started at :func:`~physid.pushing.pushes.finger_start`
(one finger width behind the aimed point) and driven at the push velocity by
``resetBaseVelocity`` before every ``stepSimulation`` (dt = 1/240 s, pybullet's default). Nothing
grips the object: the finger only pushes, through Bullet's one-sided contact.

The skin. ``contactStiffness`` applies to every contact of a link, so the compliant cells would
give the finger a soft contact too (centimetres of penetration). The multibody therefore has one
more link, a rigid *skin*: a compound of boxes with the object's footprint (the cells merged into
rectangles, :meth:`~physid.pushing.objects.CellObject.rectangles`: a pybullet compound holds at
most :data:`MAX_COMPOUND_SHAPES` boxes, so an outline of more rectangles takes one skin link per
16), from a quarter of the cell's side up to its top (it never reaches the table), of negligible
mass (:data:`SKIN_MASS`) and default (rigid) contact. The finger collides only with the skin (its
collisions with the cell links are disabled), so the cells carry the weight softly and the
finger pushes a rigid outline. The finger's ``lateralFriction`` is :data:`FINGER_LATERAL_FRICTION`
(the authors' 2.0) and the skin's ``finger.friction / 2.0``, so Bullet's product is the
finger–object coefficient ``finger.friction`` of the engines.

Records. At every step of a push the finger's contact with the skin is recorded in a
:class:`~physid.pushing.finger.ContactRecord`: it touches when a contact point carries a normal
force or lies within :data:`TOUCH_DISTANCE` of the skin; the normal impulse is the sum of the
points' normal forces times the time step; the contact point is their mean, in the object frame
(the base frame, x–y), and its side the side of the nearest exposed face (−1 while not
touching, when the point is the boundary point nearest the finger's centre, as in the engines).
Gravity is :data:`physid.core.constants.GRAVITY`. The object settles for ``settle_steps`` steps
before the push starts; times count from the start of the push. Cell positions are read with
forward kinematics: without it pybullet returns the link poses of the step before (0.8 mm behind
at 0.2 m/s).

Setups. What the "real world" is made of is a choice, registered in :data:`SETUPS` by name
(:class:`BulletSetup`): the finger's shape (the book's disc, or the authors' 3 × 3 × 10 cm box
of side ``2 × finger.radius``, turned face-on to the push) and the table contacts (compliant
with a stiffness and damping per kg of the cell, or Bullet's default rigid contact, the
authors'). ``"book"`` is the default everywhere; the identification chapter measures the others'
part in the model's floor.

Remaining differences from the engines (the reality gap): Bullet's friction is a circular cone
at each of a cell's several contact points, not the polygon of D (for 4 directions the engines'
friction is up to 1/√2 weaker for diagonal motion), and it includes each cell's frictional
torque; its time step is 1/240 s; its solver is iterative; while the object turns its normal
loads drift from ``M_i g`` (measured on 8 random hammer pushes: 0.2–1.7 × per cell, 1st–99th
percentile 0.4–1.35 ×; the former gripping pusher gave 0.3–1.8 × and 0.7–1.3 ×); the finger
touches the skin at mid-height, not at table height, which gives a small tipping moment; and
its friction also acts vertically, so while the object bobs on its compliant contacts the finger
can hold part of its weight (up to 25 % measured; ``anisotropicFriction`` on the skin cannot
remove it: it also cancelled the horizontal friction). The first touch overshoots by up to one
step of the finger's travel (0.65 mm at 0.2 m/s), recovered within about 20 steps; afterwards
the finger enters the skin by about 0.01 mm. pybullet silently drops links beyond 127: an object
whose cells and skin links exceed 127 (more than 126 cells for the objects of the book, whose
skin is one link) raises ValueError.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

from physid.core.constants import GRAVITY
from physid.core.quiet_bullet import import_pybullet
from physid.core.registry import Registry
from physid.core.validate import check_choice, check_count, check_positive
from physid.pushing.finger import (
    FINGER,
    ContactRecord,
    FaceGeometry,
    Finger,
    check_finger,
)
from physid.pushing.objects import CellObject, check_frictions, check_masses, check_object
from physid.pushing.pushes import (
    MAX_PUSH_ANGLE,
    MIN_CLEARANCE,
    Push,
    _finger_start,
    _reachable,
    finger_start,
)
from physid.pushing.simulate import Trajectory, sample_indices

__all__ = [
    "BULLET_DT",
    "SETUPS",
    "BulletSetup",
    "PreparedPush",
    "FINGER_HEIGHT",
    "FINGER_LATERAL_FRICTION",
    "FINGER_LIFT",
    "MAX_COMPOUND_SHAPES",
    "MAX_FRICTION",
    "MAX_LINKS",
    "SKIN_MASS",
    "TOUCH_DISTANCE",
    "create_finger",
    "create_object",
    "simulate_bullet",
]

MAX_LINKS = 127
BULLET_DT = 1.0 / 240.0
TABLE_FRICTION = 1.0
#: Bullet clamps the product of two friction coefficients to 10, so a cell's friction (times
#: the table's 1.0) above 10 would be silently capped: such frictions are refused.
MAX_FRICTION = 10.0 / TABLE_FRICTION
CONTACT_STIFFNESS = 1e4  # N/m per kg of the cell
CONTACT_DAMPING = 100.0  # N s/m per kg of the cell
#: The finger cylinder's height (m).
FINGER_HEIGHT = 0.10
#: The gap under the finger (m): it never touches the table.
FINGER_LIFT = 0.001
#: The finger's Bullet friction (the authors'); the skin's is ``finger.friction`` divided by it.
FINGER_LATERAL_FRICTION = 2.0
#: Mass (kg) of each link of the rigid skin the finger touches.
SKIN_MASS = 1e-6
#: pybullet's ``MAX_COMPOUND_COLLISION_SHAPES``: the boxes one compound shape can hold.
MAX_COMPOUND_SHAPES = 16
#: A finger–skin contact point this close (m) counts as touching, even without force.
TOUCH_DISTANCE = 1e-4


#: The finger shapes of a :class:`BulletSetup`.
FINGER_SHAPES = ("disc", "box")


@dataclass(frozen=True)
class BulletSetup:
    """How the pybullet world is made (module docstring, "Setups").

    ``finger_shape``: ``"disc"`` (an upright cylinder of radius ``finger.radius``) or ``"box"``
    (an upright square box of side ``2 × finger.radius``, a face towards the push direction).
    ``table_stiffness`` and ``table_damping``: each cell's table contact, per kg of the cell
    (N/m/kg, N s/m/kg); ``None`` for Bullet's default rigid contact. ``label`` names it in
    tables; ``source`` says whose choice it is."""

    name: str
    label: str
    finger_shape: str = "disc"
    table_stiffness: float | None = CONTACT_STIFFNESS
    table_damping: float = CONTACT_DAMPING
    source: str = "the book"

    def __post_init__(self) -> None:
        check_choice("finger_shape", self.finger_shape, FINGER_SHAPES)
        if self.table_stiffness is not None:
            object.__setattr__(self, "table_stiffness",
                               check_positive("table_stiffness", self.table_stiffness))
        object.__setattr__(self, "table_damping",
                           check_positive("table_damping", self.table_damping))


#: The pybullet setups by name; ``"book"`` is the default of every function here.
SETUPS: Registry[BulletSetup] = Registry("setup", BulletSetup)
SETUPS.add(BulletSetup("book", "disc finger, compliant table (the book's)"))
SETUPS.add(BulletSetup("box-finger", "box finger, compliant table", finger_shape="box",
                       source="the authors' finger"))
SETUPS.add(BulletSetup("stiff-table", "disc finger, table 10× stiffer",
                       table_stiffness=10 * CONTACT_STIFFNESS,
                       table_damping=10**0.5 * CONTACT_DAMPING))
SETUPS.add(BulletSetup("soft-table", "disc finger, table 10× softer",
                       table_stiffness=0.1 * CONTACT_STIFFNESS,
                       table_damping=0.1**0.5 * CONTACT_DAMPING))
SETUPS.add(BulletSetup("authors", "box finger, rigid table (the authors')", finger_shape="box",
                       table_stiffness=None, source="the authors' setup"))


def _setup(setup: object) -> BulletSetup:
    """``setup`` (a :class:`BulletSetup` or a name in :data:`SETUPS`) as a setup."""
    if isinstance(setup, BulletSetup):
        return setup
    if not isinstance(setup, str):
        raise TypeError(f"setup must be a BulletSetup or a name, got {type(setup).__name__}")
    return SETUPS.get(setup, "setup")


def _numpy(name: str, values, default: Tensor) -> np.ndarray:
    """Per-cell ``masses`` (> 0) or ``frictions`` (in [0, MAX_FRICTION]) as a numpy array."""
    if values is None:
        t = default
    elif isinstance(values, Tensor):
        t = values
    else:
        t = torch.as_tensor(np.asarray(values, dtype=float), dtype=torch.float64)
    if tuple(t.shape) != tuple(default.shape):
        raise ValueError(f"{name} must have shape {tuple(default.shape)}, got {tuple(t.shape)}")
    if name == "masses":
        check_masses(t, name)
    else:
        check_frictions(t, name, high=MAX_FRICTION)
    return t.detach().cpu().numpy()


def create_table(client: int) -> int:
    """A static 4 × 4 m table with its top at z = 0 and lateral friction 1."""
    p = import_pybullet()
    shape = p.createCollisionShape(p.GEOM_BOX, halfExtents=[2, 2, 0.05], physicsClientId=client)
    table = p.createMultiBody(0, shape, -1, [0, 0, -0.05], physicsClientId=client)
    p.changeDynamics(table, -1, lateralFriction=TABLE_FRICTION, restitution=0.0,
                     rollingFriction=0.0, spinningFriction=0.0, physicsClientId=client)
    return table


def _skin_boxes(obj: CellObject) -> list[tuple[np.ndarray, np.ndarray]]:
    """The skin's boxes, ``(centres, half sizes)`` in the object frame, in groups of at most
    :data:`MAX_COMPOUND_SHAPES`: one group per skin link."""
    centres, halves = obj.rectangles()
    return [
        (centres[i : i + MAX_COMPOUND_SHAPES], halves[i : i + MAX_COMPOUND_SHAPES])
        for i in range(0, len(centres), MAX_COMPOUND_SHAPES)
    ]


def _check_links(obj: CellObject) -> None:
    """ValueError naming ``obj`` if its cells and skin links exceed :data:`MAX_LINKS`."""
    skin = len(_skin_boxes(obj))
    if len(obj) + skin > MAX_LINKS:
        raise ValueError(
            f"obj has {len(obj)} cells and needs {skin} skin link(s); pybullet supports at most "
            f"{MAX_LINKS} links per multibody"
        )


def _check_finger(finger: object) -> Finger:
    """``finger`` if it is a :class:`Finger` whose friction Bullet can represent."""
    check_finger(finger)
    if finger.friction > MAX_FRICTION:
        raise ValueError(
            f"finger.friction must be <= {MAX_FRICTION:g} (Bullet's clamp), got {finger.friction}"
        )
    return finger


def create_object(
    client: int,
    obj: CellObject,
    masses: Tensor | None = None,
    frictions: Tensor | None = None,
    finger: Finger = FINGER,
    setup: BulletSetup | str = "book",
) -> int:
    """``obj`` as a multibody resting on z = 0: links ``0 … k−1`` are the cells (cubes of side
    a, table contacts as ``setup`` says), links ``k …`` (one for the objects of the book) the
    rigid skin the finger touches (module docstring), with friction
    ``finger.friction / FINGER_LATERAL_FRICTION``.

    Frictions above :data:`MAX_FRICTION` (Bullet's clamp of 10 on the combined coefficient)
    are refused; so are objects of more than ``MAX_LINKS − 1`` cells."""
    check_object(obj)
    _check_links(obj)
    _check_finger(finger)
    setup = _setup(setup)
    m = _numpy("masses", masses, obj.masses)
    mu = _numpy("frictions", frictions, obj.frictions)
    return _create_object(client, obj, m, mu, finger, setup)


def _create_object(
    client: int, obj: CellObject, m: np.ndarray, mu: np.ndarray, finger: Finger,
    setup: BulletSetup,
) -> int:
    """:func:`create_object` of arguments already checked: masses ``m`` and frictions ``mu``
    (k,) as numpy arrays (:func:`_numpy`)."""
    p = import_pybullet()
    k = len(obj)
    half = obj.cell_side / 2
    centres = obj.centres.cpu().numpy()
    box = p.createCollisionShape(p.GEOM_BOX, halfExtents=[half] * 3, physicsClientId=client)
    # The skin spans z from a/4 to a: in the base frame (at z = a/2), half height 3a/8 at +a/8.
    skins = [
        p.createCollisionShapeArray(
            shapeTypes=[p.GEOM_BOX] * len(where),
            halfExtents=[[hx, hy, 0.75 * half] for hx, hy in size],
            collisionFramePositions=[[x, y, 0.25 * half] for x, y in where],
            physicsClientId=client,
        )
        for where, size in _skin_boxes(obj)
    ]
    n = k + len(skins)
    body = p.createMultiBody(
        baseMass=1e-7,
        baseCollisionShapeIndex=-1,
        basePosition=[0, 0, half],
        linkMasses=[*m.tolist()] + [SKIN_MASS] * len(skins),
        linkCollisionShapeIndices=[box] * k + skins,
        linkVisualShapeIndices=[-1] * n,
        linkPositions=[[x, y, 0] for x, y in centres] + [[0, 0, 0]] * len(skins),
        linkOrientations=[[0, 0, 0, 1]] * n,
        linkInertialFramePositions=[[0, 0, 0]] * n,
        linkInertialFrameOrientations=[[0, 0, 0, 1]] * n,
        linkParentIndices=[0] * n,
        linkJointTypes=[p.JOINT_FIXED] * n,
        linkJointAxis=[[0, 0, 1]] * n,
        physicsClientId=client,
    )
    for i in range(k):
        soft = {} if setup.table_stiffness is None else dict(
            contactStiffness=setup.table_stiffness * float(m[i]),
            contactDamping=setup.table_damping * float(m[i]))
        p.changeDynamics(body, i, lateralFriction=float(mu[i]), restitution=0.0,
                         rollingFriction=0.0, spinningFriction=0.0, linearDamping=0.0,
                         angularDamping=0.0, physicsClientId=client, **soft)
    for link in range(k, n):
        p.changeDynamics(body, link, lateralFriction=finger.friction / FINGER_LATERAL_FRICTION,
                         restitution=0.0, rollingFriction=0.0, spinningFriction=0.0,
                         linearDamping=0.0, angularDamping=0.0, physicsClientId=client)
    p.changeDynamics(body, -1, linearDamping=0.0, angularDamping=0.0, physicsClientId=client)
    return body


def create_finger(
    client: int, obj: CellObject, body: int, push: Push, finger: Finger = FINGER,
    setup: BulletSetup | str = "book",
) -> int:
    """The kinematic finger of ``push``: a mass-0 upright cylinder (or, as ``setup`` says, a
    box face-on to the push) at :func:`~physid.pushing.pushes.finger_start`, its bottom
    :data:`FINGER_LIFT` above the table, that collides with the skin of ``body`` and with none
    of its cells."""
    return _create_finger(client, obj, body, finger_start(push, finger), finger, _setup(setup),
                          push.direction)


def _create_finger(
    client: int, obj: CellObject, body: int, start: np.ndarray, finger: Finger,
    setup: BulletSetup, direction: Sequence[float],
) -> int:
    """:func:`create_finger` of arguments already checked, its centre starting at ``start``
    (:func:`~physid.pushing.pushes.finger_start`), a box finger's face towards ``direction``."""
    p = import_pybullet()
    if setup.finger_shape == "box":
        r = finger.radius
        shape = p.createCollisionShape(p.GEOM_BOX, halfExtents=[r, r, FINGER_HEIGHT / 2],
                                       physicsClientId=client)
        yaw = float(np.arctan2(direction[1], direction[0]))
        turn = [0.0, 0.0, float(np.sin(yaw / 2)), float(np.cos(yaw / 2))]
    else:
        shape = p.createCollisionShape(p.GEOM_CYLINDER, radius=finger.radius,
                                       height=FINGER_HEIGHT, physicsClientId=client)
        turn = [0.0, 0.0, 0.0, 1.0]
    pusher = p.createMultiBody(
        baseMass=0,
        baseCollisionShapeIndex=shape,
        basePosition=[float(start[0]), float(start[1]), FINGER_LIFT + FINGER_HEIGHT / 2],
        baseOrientation=turn,
        physicsClientId=client,
    )
    p.changeDynamics(pusher, -1, lateralFriction=FINGER_LATERAL_FRICTION, restitution=0.0,
                     rollingFriction=0.0, spinningFriction=0.0, physicsClientId=client)
    for i in range(len(obj)):
        p.setCollisionFilterPair(pusher, body, -1, i, 0, physicsClientId=client)
    return pusher


def _cell_positions(client: int, body: int, k: int) -> np.ndarray:
    """The cells' world x–y (k, 2) now (without forward kinematics pybullet would return the
    link poses of the previous step)."""
    p = import_pybullet()
    states = p.getLinkStates(body, list(range(k)), computeForwardKinematics=1,
                             physicsClientId=client)
    return np.array([s[0][:2] for s in states])


def _finger_contact(
    client: int, pusher: int, body: int, time_step: float
) -> tuple[bool, float, np.ndarray | None]:
    """This step's contact of the finger with the skin (the only links of ``body`` it collides
    with): touching, normal impulse (N·s) and the mean world point (3,) of the touching
    contact points (None if none). Bullet finds them before it moves the bodies."""
    p = import_pybullet()
    points = p.getContactPoints(pusher, body, physicsClientId=client)
    force = np.array([c[9] for c in points])
    distance = np.array([c[8] for c in points])
    active = (force > 0) | (distance <= TOUCH_DISTANCE)
    if not active.any():
        return False, 0.0, None
    where = np.array([c[6] for c in points])[active]
    return True, float(force.sum()) * time_step, where.mean(0)


def _one_push(obj, push, finger, indices, m, mu, time_step, settle_steps, gravity, setup):
    """Cell positions (S, k, 2) at the step ``indices`` and the finger's touching (T,),
    normal impulse (T,) and contact point (T, 2, object frame) over steps 1 … max(indices);
    every argument already checked by :func:`simulate_bullet` (masses ``m`` and frictions
    ``mu`` as numpy arrays)."""
    p = import_pybullet()
    client = p.connect(p.DIRECT)
    try:
        p.setGravity(0, 0, -gravity, physicsClientId=client)
        p.setTimeStep(time_step, physicsClientId=client)
        create_table(client)
        body = _create_object(client, obj, m, mu, finger, setup)
        for _ in range(settle_steps):
            p.stepSimulation(physicsClientId=client)
        pusher = _create_finger(client, obj, body, _finger_start(push, finger), finger, setup,
                                push.direction)
        k, wanted = len(obj), set(indices)
        recorded = {0: _cell_positions(client, body, k)} if 0 in wanted else {}
        velocity = [*push.velocity, 0.0]
        touching, impulse, points, yaws = [], [], [], []
        for step in range(1, max(indices) + 1):
            # The poses Bullet's contact points belong to: the object frame is the base's, x–y.
            position, orientation = p.getBasePositionAndOrientation(body, physicsClientId=client)
            rotation = np.array(p.getMatrixFromQuaternion(orientation)).reshape(3, 3)
            yaws.append(np.arctan2(rotation[1, 0], rotation[0, 0]))
            centre = p.getBasePositionAndOrientation(pusher, physicsClientId=client)[0]
            p.resetBaseVelocity(pusher, linearVelocity=velocity, physicsClientId=client)
            p.stepSimulation(physicsClientId=client)
            touch, normal, point = _finger_contact(client, pusher, body, time_step)
            touching.append(touch)
            impulse.append(normal)
            where = np.asarray(centre if point is None else point) - position
            points.append((where @ rotation)[:2])
            if step in wanted:
                recorded[step] = _cell_positions(client, body, k)
        positions = np.stack([recorded[i] for i in indices])
        points = np.array(points).reshape(-1, 2)
        return positions, np.array(touching, bool), np.array(impulse), points, np.array(yaws)
    finally:
        p.disconnect(client)


def _record(obj: CellObject, touching, impulse, points, yaws) -> ContactRecord:
    """The :class:`ContactRecord` of B pushes from numpy touching, impulse (B, T), points
    (B, T, 2) and the object's yaw (B, T): where the finger does not touch, the point becomes
    the boundary point nearest the finger's centre; the side is the nearest face's (−1 while
    not touching)."""
    point = torch.as_tensor(points, dtype=torch.float64)
    touch = torch.as_tensor(touching)
    faces = FaceGeometry.of(obj, point)
    face, near, _, _ = faces.nearest(point.reshape(-1, 2))
    near, face = near.reshape(point.shape), face.reshape(touch.shape)
    return ContactRecord(
        touching=touch,
        normal_impulse=torch.as_tensor(impulse, dtype=torch.float64),
        point=torch.where(touch.unsqueeze(-1), point, near),
        side=torch.where(touch, faces.side[face], -1),
        yaw=torch.as_tensor(yaws, dtype=torch.float64),
    )


def simulate_bullet(
    obj: CellObject,
    push: Push | Sequence[Push],
    sample_times: Sequence[float] | Tensor,
    masses: Tensor | None = None,
    frictions: Tensor | None = None,
    *,
    finger: Finger = FINGER,
    time_step: float = BULLET_DT,
    settle_steps: int = 48,
    gravity: float = GRAVITY,
    setup: BulletSetup | str = "book",
) -> Trajectory:
    """Cell world positions recorded by pybullet at ``sample_times`` (multiples of
    ``time_step`` within the push), shaped like :func:`physid.pushing.simulate.simulate`'s:
    (S, k, 2) for one push, (B, S, k, 2) for a sequence, and the ``finger``'s
    :class:`~physid.pushing.finger.ContactRecord` at every step up to the last sample time
    (T = last sample time / ``time_step`` steps: (T,) or (B, T)). Each push runs in its own
    ``p.connect(p.DIRECT)`` client, disconnected afterwards.

    ``setup`` (a :class:`BulletSetup` or a name in :data:`SETUPS`) says how the world is made.
    ``time_step`` (s) and ``gravity`` (m/s²) must be > 0, ``settle_steps`` >= 0. Frictions
    (and ``finger.friction``) must lie in [0, :data:`MAX_FRICTION`]: Bullet clamps the product
    of two coefficients to 10, so a larger value would be silently capped. Every push must be
    reachable by the finger (:func:`~physid.pushing.pushes.check_reachable`). Every argument is
    checked before pybullet starts (ValueError or TypeError naming it).
    """
    check_object(obj)
    _check_finger(finger)
    setup = _setup(setup)
    time_step = check_positive("time_step", time_step)
    settle_steps = check_count("settle_steps", settle_steps, minimum=0)
    gravity = check_positive("gravity", gravity)
    single = isinstance(push, Push)
    if not single and (isinstance(push, str) or not isinstance(push, Sequence)):
        raise TypeError(f"push must be a Push or a sequence of pushes, got {push!r}")
    pushes = [push] if single else list(push)
    if not pushes:
        raise ValueError("push must be a Push or a non-empty sequence of pushes")
    if not all(isinstance(q, Push) for q in pushes):
        raise TypeError(f"push must hold only Push objects, got {pushes!r}")
    m = _numpy("masses", masses, obj.masses)
    mu = _numpy("frictions", frictions, obj.frictions)
    _check_links(obj)
    faces = obj.exposed_faces()
    for q in pushes:  # check_reachable's test; obj, the pushes and finger are checked above
        _reachable(obj, faces, q, finger, MIN_CLEARANCE, MAX_PUSH_ANGLE)
        # Checks sample_times against each push's duration; the indices are the same for all.
        indices = sample_indices(sample_times, time_step, q.duration)
    runs = [
        _one_push(obj, q, finger, indices, m, mu, time_step, settle_steps, gravity, setup)
        for q in pushes
    ]
    positions, touching, impulse, points, yaws = (
        np.stack(column) for column in zip(*runs, strict=True)
    )
    positions = torch.as_tensor(positions, dtype=torch.float64)
    record = _record(obj, touching, impulse, points, yaws)
    times = torch.tensor(indices, dtype=torch.float64) * time_step
    if single:
        return Trajectory(times, positions[0], contact=record[0])
    return Trajectory(times, positions, contact=record)


class PreparedPush:
    """One push's pybullet world, built but not stepped: for timing Bullet's stepping apart from
    making the world (``benchmarks/pushing.py``).

    Making it connects a ``p.DIRECT`` client and creates the table, the object (``masses``,
    ``frictions``) and the ``finger`` at its start, as :func:`simulate_bullet` does (without
    settling steps); :meth:`run` then steps the push (``resetBaseVelocity`` and
    ``stepSimulation`` only, no recording), returns the cells' final x–y (k, 2) and disconnects.
    Arguments are checked as :func:`simulate_bullet` checks them."""

    def __init__(
        self,
        obj: CellObject,
        push: Push,
        masses: Tensor | None = None,
        frictions: Tensor | None = None,
        *,
        finger: Finger = FINGER,
        time_step: float = BULLET_DT,
        gravity: float = GRAVITY,
    ):
        check_object(obj)
        _check_finger(finger)
        self.time_step = check_positive("time_step", time_step)
        gravity = check_positive("gravity", gravity)
        if not isinstance(push, Push):
            raise TypeError(f"push must be a Push, got {push!r}")
        m = _numpy("masses", masses, obj.masses)
        mu = _numpy("frictions", frictions, obj.frictions)
        _check_links(obj)
        _reachable(obj, obj.exposed_faces(), push, finger, MIN_CLEARANCE, MAX_PUSH_ANGLE)
        self.steps = round(push.duration / self.time_step)
        self.velocity = [*push.velocity, 0.0]
        self.k = len(obj)
        p = import_pybullet()
        self.client = p.connect(p.DIRECT)
        p.setGravity(0, 0, -gravity, physicsClientId=self.client)
        p.setTimeStep(self.time_step, physicsClientId=self.client)
        create_table(self.client)
        book = SETUPS["book"]
        self.body = _create_object(self.client, obj, m, mu, finger, book)
        self.pusher = _create_finger(self.client, obj, self.body, _finger_start(push, finger),
                                     finger, book, push.direction)

    def run(self) -> np.ndarray:
        """Step the whole push; the cells' final world x–y (k, 2)."""
        p = import_pybullet()
        if self.client is None:
            raise RuntimeError("this PreparedPush has already run")
        try:
            for _ in range(self.steps):
                p.resetBaseVelocity(self.pusher, linearVelocity=self.velocity,
                                    physicsClientId=self.client)
                p.stepSimulation(physicsClientId=self.client)
            return _cell_positions(self.client, self.body, self.k)
        finally:
            p.disconnect(self.client)
            self.client = None
