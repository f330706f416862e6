"""The "real world": pybullet pushes of cell objects (the ground truth of §7.2).

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

The end-effector is kinematic: a mass-0 body driven at the push velocity by
``resetBaseVelocity`` before every ``stepSimulation`` (dt = 1/240 s, pybullet's default). It
holds the contact point at table height with a point-to-point constraint through a light slider
on a free vertical joint (assumptions 2–3 of §6: the contact point stays fixed on the object and
the end-effector stays in contact; at table height the push exerts no tipping moment, and the
slider keeps the end-effector from carrying weight: a direct pin was measured to carry 3–28 %
of it). A constraint is used instead of a contact because a compliant link would also make the
end-effector's contact soft. Gravity is :data:`physid.constants.GRAVITY`. The object settles
for ``settle_steps`` steps before the push starts; times count from the start of the push.

Remaining differences from the engines (the reality gap): while the object turns, Bullet's
normal loads still drift from ``M_i g`` (measured 0.75–1.13 × on a hammer push); its friction
is a circular cone at each of a cell's contact points, not the polygon of D (for 4 directions
the engines' friction is up to 1/√2 weaker for diagonal motion) and it includes each cell's
frictional torque; its time step is 1/240 s; its solver is iterative. Like the engines' contact,
the constraint can pull. pybullet silently drops links beyond 127; more cells raise ValueError.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
from torch import Tensor

from physid.constants import GRAVITY
from physid.pushing.objects import CellObject, check_frictions, check_masses, check_object
from physid.pushing.pushes import Push, contact_face
from physid.pushing.simulate import Trajectory, sample_indices
from physid.quiet_bullet import import_pybullet
from physid.validate import check_count, check_positive

p = import_pybullet()

__all__ = [
    "BULLET_DT",
    "MAX_FRICTION",
    "MAX_LINKS",
    "create_object",
    "create_pusher",
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
SLIDER_MASS = 1e-4  # kg, the end-effector's vertical slider


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
    shape = p.createCollisionShape(p.GEOM_BOX, halfExtents=[2, 2, 0.05], physicsClientId=client)
    table = p.createMultiBody(0, shape, -1, [0, 0, -0.05], physicsClientId=client)
    p.changeDynamics(table, -1, lateralFriction=TABLE_FRICTION, restitution=0.0,
                     rollingFriction=0.0, spinningFriction=0.0, physicsClientId=client)
    return table


def create_object(
    client: int, obj: CellObject, masses: Tensor | None = None, frictions: Tensor | None = None
) -> int:
    """``obj`` as a multibody with one link (cube of side a) per cell, resting on z = 0.

    Frictions above :data:`MAX_FRICTION` (Bullet's clamp of 10 on the combined coefficient)
    are refused."""
    check_object(obj)
    k = len(obj)
    if k > MAX_LINKS:
        raise ValueError(
            f"obj has {k} cells; pybullet supports at most {MAX_LINKS} links per multibody"
        )
    m = _numpy("masses", masses, obj.masses)
    mu = _numpy("frictions", frictions, obj.frictions)
    half = obj.cell_side / 2
    box = p.createCollisionShape(p.GEOM_BOX, halfExtents=[half] * 3, physicsClientId=client)
    centres = obj.centres.cpu().numpy()
    body = p.createMultiBody(
        baseMass=1e-7,
        baseCollisionShapeIndex=-1,
        basePosition=[0, 0, half],
        linkMasses=m.tolist(),
        linkCollisionShapeIndices=[box] * k,
        linkVisualShapeIndices=[-1] * k,
        linkPositions=[[x, y, 0] for x, y in centres],
        linkOrientations=[[0, 0, 0, 1]] * k,
        linkInertialFramePositions=[[0, 0, 0]] * k,
        linkInertialFrameOrientations=[[0, 0, 0, 1]] * k,
        linkParentIndices=[0] * k,
        linkJointTypes=[p.JOINT_FIXED] * k,
        linkJointAxis=[[0, 0, 1]] * k,
        physicsClientId=client,
    )
    for i in range(k):
        p.changeDynamics(body, i, lateralFriction=float(mu[i]), restitution=0.0,
                         rollingFriction=0.0, spinningFriction=0.0,
                         contactStiffness=CONTACT_STIFFNESS * float(m[i]),
                         contactDamping=CONTACT_DAMPING * float(m[i]),
                         linearDamping=0.0, angularDamping=0.0, physicsClientId=client)
    p.changeDynamics(body, -1, linearDamping=0.0, angularDamping=0.0, physicsClientId=client)
    return body


def create_pusher(client: int, obj: CellObject, body: int, push: Push) -> int:
    """The kinematic end-effector holding ``push.contact`` of the pushed cell (at table height).

    A mass-0 base (moved by ``resetBaseVelocity``) carries a light slider on a free vertical
    prismatic joint, and a point-to-point constraint ties the slider to the contact point: the
    end-effector drives the contact point horizontally but cannot carry the object's weight.
    """
    cell, _ = contact_face(obj, push)
    offset = np.asarray(push.contact) - obj.centres[cell].cpu().numpy()
    pivot = [float(offset[0]), float(offset[1]), -obj.cell_side / 2]
    state = p.getLinkState(body, cell, physicsClientId=client)
    start, _ = p.multiplyTransforms(state[4], state[5], pivot, [0, 0, 0, 1])
    pusher = p.createMultiBody(
        baseMass=0,
        baseCollisionShapeIndex=-1,
        basePosition=start,
        linkMasses=[SLIDER_MASS],
        linkCollisionShapeIndices=[-1],
        linkVisualShapeIndices=[-1],
        linkPositions=[[0, 0, 0]],
        linkOrientations=[[0, 0, 0, 1]],
        linkInertialFramePositions=[[0, 0, 0]],
        linkInertialFrameOrientations=[[0, 0, 0, 1]],
        linkParentIndices=[0],
        linkJointTypes=[p.JOINT_PRISMATIC],
        linkJointAxis=[[0, 0, 1]],
        physicsClientId=client,
    )
    p.setJointMotorControl2(pusher, 0, p.VELOCITY_CONTROL, force=0, physicsClientId=client)
    p.createConstraint(pusher, 0, body, cell, p.JOINT_POINT2POINT, [0, 0, 0], [0, 0, 0], pivot,
                       physicsClientId=client)
    return pusher


def _cell_positions(client: int, body: int, k: int) -> np.ndarray:
    states = p.getLinkStates(body, list(range(k)), physicsClientId=client)
    return np.array([s[0][:2] for s in states])


def _one_push(obj, push, indices, masses, frictions, time_step, settle_steps, gravity):
    client = p.connect(p.DIRECT)
    try:
        p.setGravity(0, 0, -gravity, physicsClientId=client)
        p.setTimeStep(time_step, physicsClientId=client)
        create_table(client)
        body = create_object(client, obj, masses, frictions)
        for _ in range(settle_steps):
            p.stepSimulation(physicsClientId=client)
        pusher = create_pusher(client, obj, body, push)
        k, wanted = len(obj), set(indices)
        recorded = {0: _cell_positions(client, body, k)} if 0 in wanted else {}
        velocity = [*push.velocity, 0.0]
        for step in range(1, max(indices) + 1):
            p.resetBaseVelocity(pusher, linearVelocity=velocity, physicsClientId=client)
            p.stepSimulation(physicsClientId=client)
            if step in wanted:
                recorded[step] = _cell_positions(client, body, k)
        return np.stack([recorded[i] for i in indices])
    finally:
        p.disconnect(client)


def simulate_bullet(
    obj: CellObject,
    push: Push | Sequence[Push],
    sample_times: Sequence[float] | Tensor,
    masses: Tensor | None = None,
    frictions: Tensor | None = None,
    *,
    time_step: float = BULLET_DT,
    settle_steps: int = 48,
    gravity: float = GRAVITY,
) -> Trajectory:
    """Cell world positions recorded by pybullet at ``sample_times`` (multiples of
    ``time_step`` within the push), shaped like :func:`physid.pushing.simulate.simulate`'s:
    (S, k, 2) for one push, (B, S, k, 2) for a sequence. Each push runs in its own
    ``p.connect(p.DIRECT)`` client, disconnected afterwards.

    ``time_step`` (s) and ``gravity`` (m/s²) must be > 0, ``settle_steps`` >= 0. Frictions
    must lie in [0, :data:`MAX_FRICTION`]: Bullet clamps the product of the cell's and the
    table's coefficients to 10, so a larger value would be silently capped. Every argument is
    checked before pybullet starts (ValueError or TypeError naming it).
    """
    check_object(obj)
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
    _numpy("masses", masses, obj.masses)
    _numpy("frictions", frictions, obj.frictions)
    if len(obj) > MAX_LINKS:
        raise ValueError(
            f"obj has {len(obj)} cells; pybullet supports at most {MAX_LINKS} links per multibody"
        )
    for q in pushes:
        contact_face(obj, q)
        sample_indices(sample_times, time_step, q.duration)
    runs = []
    for q in pushes:
        indices = sample_indices(sample_times, time_step, q.duration)
        runs.append(_one_push(obj, q, indices, masses, frictions, time_step, settle_steps, gravity))
    positions = torch.as_tensor(np.stack(runs), dtype=torch.float64)
    times = torch.tensor(indices, dtype=torch.float64) * time_step
    return Trajectory(times, positions[0] if single else positions)
