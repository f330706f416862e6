"""The "real world" of the box experiment: pybullet's Franka Panda shaking the box.

The arm is pybullet's bundled ``franka_panda/panda.urdf`` with its hand and fingers removed
(and every visual and collision shape: nothing touches anything). At its flange (the link
``panda_link8``) a universal joint carries the box, written into the URDF at run time:

* ``box_joint_x``: revolute about the flange's ``x`` axis, at :data:`JOINT_OFFSET` along the
  flange's ``z`` axis (the joint centre ``O``), to a tiny cross link (:data:`CROSS_MASS`);
* ``box_joint_y``: revolute about the cross link's ``y`` axis, at ``O``, to the box link, whose
  frame is the box frame of :mod:`physid.inference.box` (``z`` into the box). Its inertial is
  the box with the weights folded in (one rigid body): total mass, centre of mass and the
  inertia about the centre of mass, read with ``URDF_USE_INERTIA_FROM_FILE``.

So the box is on a true 2-DOF joint (reduced coordinates, no soft constraint), and its angles
``α, β`` are the pybullet joint positions. The U-joint's motors are disabled (velocity control
with force 0) and its viscous damping is applied as a torque ``−d q̇`` before every step
(torque control); the links' linear and angular damping are 0.

The arm is driven kinematically along :data:`MOTION`: it starts on the plan (joint states
reset), then before each fine step (``1/FINE_RATE`` s) velocity motors with a large force
(:data:`ARM_FORCE`) are given the velocity that lands each arm joint on the plan's position at
the end of the step (measured: within 3e-7 rad of the plan throughout). Resetting the arm's
joint states before every step instead disturbs the box (at rest, in equilibrium, pybullet
then swings it up to 0.05 rad/s within 0.3 s), so the joints are reset only once.

The plan follows the paper ("joints 6 and 7 to joint-space offsets of 0.1 and −0.1 radians,
in sequence", MoveIt's time parameterisation with velocity scaling 0.1): starting from the
Panda's home pose (the flange's ``z`` axis pointing down, the box hanging at rest at its equilibrium
angles), joint 6 moves by +0.1 rad, then joint 7 by −0.1 rad, each with a trapezoidal
velocity profile (MoveIt's velocity scaling 0.1 of the joint's 2.61 rad/s, acceleration
scaling 0.1 of its 20 rad/s²), 3 s in all. Joint 7 turns the flange about its own (vertical)
axis, so most of the swing comes from joint 6; the box swings by about 0.09 rad relative to
the mount.

Recording, every ``dt`` (a multiple of the fine step), at ``t_n = n dt``: the U-joint state
``[α, β, α̇, β̇]`` (joint states), the four points of the box (from the box link's frame, read
with forward kinematics) and the input ``u[n]`` of :data:`physid.inference.box.INPUT_LAYOUT`:
the joint centre's position ``p`` and the mount rotation ``R`` at ``t_n`` (the flange's frame,
forward kinematics), the mount's angular velocity ``ω_m`` at ``t_n`` (the link state), and the
accelerations as the mean over the model's step ``[t_n, t_n + dt]``:
``a = (v(t_{n+1}) − v(t_n)) / dt`` and ``ω̇_m = (ω_m(t_{n+1}) − ω_m(t_n)) / dt``, with the joint
centre's velocity ``v`` from the link state (``v_com + ω_m × (p − p_com)``). The mean over
the step is what the semi-implicit Euler velocity update of the model integrates.
"""

from __future__ import annotations

import math
import os
import re
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from physid.core.constants import GRAVITY
from physid.core.quiet_bullet import import_pybullet
from physid.core.validate import check_nonnegative, check_positive, check_seed
from physid.inference.box import (
    BOTTOM,
    BOX_MASS,
    INPUT_SIZE,
    LID_OFFSET,
    PHASE1_LIMITS,
    PHASE2_LIMITS,
    TRUE_BOX,
    WEIGHT_MASS,
    ShakenBox,
    hanging_angles,
)

__all__ = [
    "ARM_FORCE",
    "CROSS_MASS",
    "FINE_RATE",
    "HOME",
    "JOINT_OFFSET",
    "MOTION",
    "BoxRecording",
    "Motion",
    "box_urdf",
    "record",
]

_BOX_PARAMETERS = tuple(PHASE1_LIMITS)
_WEIGHT_PARAMETERS = tuple(PHASE2_LIMITS)

#: Distance (m) from the flange (``panda_link8``) to the joint centre along the flange ``z``.
JOINT_OFFSET: float = 0.04
#: Mass (kg) of the universal joint's cross link (tiny, so the box dominates).
CROSS_MASS: float = 1e-4
#: The pybullet steps per second.
FINE_RATE: int = 1000
#: Maximum force (N·m) of the arm's velocity motors that hold the prescribed motion.
ARM_FORCE: float = 1e4
#: The Panda's home pose (rad): the flange points down.
HOME: tuple[float, ...] = (0.0, -math.pi / 4, 0.0, -3 * math.pi / 4, 0.0, math.pi / 2, math.pi / 4)


@dataclass(frozen=True)
class Motion:
    """A sequence of single-joint moves of the arm from ``start``.

    ``segments`` are ``(joint index (0-based), offset (rad), start time (s))``; each move has a
    trapezoidal velocity profile with ``max_velocity`` and ``max_acceleration``; the recording
    lasts ``duration`` seconds.
    """

    start: tuple[float, ...]
    segments: tuple[tuple[int, float, float], ...]
    max_velocity: float
    max_acceleration: float
    duration: float

    def profile(self, t: float) -> tuple[np.ndarray, np.ndarray]:
        """Joint positions and velocities (7,) at time ``t``."""
        q = np.array(self.start, dtype=float)
        qd = np.zeros(7)
        for joint, offset, start in self.segments:
            s, v = _trapezoid(t - start, abs(offset), self.max_velocity, self.max_acceleration)
            q[joint] += math.copysign(s, offset)
            qd[joint] += math.copysign(v, offset)
        return q, qd


def _trapezoid(t: float, distance: float, vmax: float, amax: float) -> tuple[float, float]:
    """Distance covered and speed at time ``t`` of a rest-to-rest trapezoidal move."""
    if t <= 0:
        return 0.0, 0.0
    ta = min(vmax / amax, math.sqrt(distance / amax))
    v = amax * ta
    tc = (distance - amax * ta * ta) / v
    total = 2 * ta + tc
    if t >= total:
        return distance, 0.0
    if t < ta:
        return 0.5 * amax * t * t, amax * t
    if t < ta + tc:
        return 0.5 * amax * ta * ta + v * (t - ta), v
    r = total - t
    return distance - 0.5 * amax * r * r, amax * r


#: The paper's motion: joint 6 by +0.1 rad, then joint 7 by −0.1 rad, MoveIt-like scaling 0.1.
MOTION = Motion(
    start=HOME,
    segments=((5, 0.1, 0.2), (6, -0.1, 1.6)),
    max_velocity=0.1 * 2.61,
    max_acceleration=0.1 * 20.0,
    duration=3.0,
)


@dataclass(frozen=True)
class BoxRecording:
    """A pybullet recording of the shaken box.

    Attributes:
        states: the U-joint states ``[α, β, α̇, β̇]`` (T+1, 4), row 0 the start.
        inputs: the mount inputs (T, 21), :data:`physid.inference.box.INPUT_LAYOUT`.
        points: the four world points ``[p_o, p_x, p_y, p_z]`` (T+1, 12).
        dt: the recording interval (s).
        duration: ``T dt`` (s).
        weights: the weights' positions (``w1x … w2y``), or None for the empty box.
        box: the empty box's parameters (:data:`physid.inference.box.TRUE_BOX` names).
    """

    states: np.ndarray
    inputs: np.ndarray
    points: np.ndarray
    dt: float
    duration: float
    weights: dict[str, float] | None
    box: dict[str, float]


def _rigid_body(box: Mapping[str, float], weights: Mapping[str, float] | None):
    """Mass, centre of mass and inertia about it (box frame) of the box with its weights."""
    i_o = np.array(
        [
            [box["Ixx"], box["Ixy"], box["Ixz"]],
            [box["Ixy"], box["Iyy"], box["Iyz"]],
            [box["Ixz"], box["Iyz"], box["Izz"]],
        ]
    )
    mass = BOX_MASS
    moment = BOX_MASS * np.array([box["cx"], box["cy"], box["cz"]])
    if weights is not None:
        for wx, wy in (("w1x", "w1y"), ("w2x", "w2y")):
            r = np.array([weights[wx], weights[wy], BOTTOM])
            i_o = i_o + WEIGHT_MASS * (r @ r * np.eye(3) - np.outer(r, r))
            mass += WEIGHT_MASS
            moment = moment + WEIGHT_MASS * r
    com = moment / mass
    i_c = i_o - mass * (com @ com * np.eye(3) - np.outer(com, com))
    return mass, com, i_c


def _numbers(values) -> str:
    """Numbers as URDF attribute text (plain floats: numpy's repr is not a number there)."""
    return " ".join(repr(float(v)) for v in values)


def _revolute(name: str, parent: str, child: str, xyz, axis: str) -> str:
    """A URDF revolute joint without limits that matter (motors off; see :func:`record`)."""
    return f"""
  <joint name="{name}" type="revolute">
    <parent link="{parent}"/>
    <child link="{child}"/>
    <origin rpy="0 0 0" xyz="{_numbers(xyz)}"/>
    <axis xyz="{axis}"/>
    <limit effort="0" lower="-3.14" upper="3.14" velocity="100"/>
  </joint>"""


def _inertial_link(name: str, mass: float, com, inertia: np.ndarray) -> str:
    """A URDF link with only its inertial block: ``mass``, centre of mass ``com`` and
    ``inertia`` (3 × 3) about it."""
    i = inertia
    return f"""
  <link name="{name}">
    <inertial>
      <origin rpy="0 0 0" xyz="{_numbers(com)}"/>
      <mass value="{_numbers([mass])}"/>
      <inertia ixx="{_numbers([i[0, 0]])}" ixy="{_numbers([i[0, 1]])}" ixz="{_numbers([i[0, 2]])}"
               iyy="{_numbers([i[1, 1]])}" iyz="{_numbers([i[1, 2]])}" izz="{_numbers([i[2, 2]])}"/>
    </inertial>
  </link>"""


def box_urdf(box: Mapping[str, float], weights: Mapping[str, float] | None = None) -> str:
    """The URDF text of the Panda (no hand, no shapes) with the box on its universal joint."""
    import pybullet_data

    with open(os.path.join(pybullet_data.getDataPath(), "franka_panda", "panda.urdf")) as f:
        text = f.read()
    text = re.sub(r"<visual>.*?</visual>", "", text, flags=re.S)
    text = re.sub(r"<collision>.*?</collision>", "", text, flags=re.S)
    cut = text.index('<joint name="panda_hand_joint"')
    mass, com, i_c = _rigid_body(box, weights)
    extra = (
        _revolute("box_joint_x", "panda_link8", "box_cross", (0.0, 0.0, JOINT_OFFSET), "1 0 0")
        + _inertial_link("box_cross", CROSS_MASS, np.zeros(3), CROSS_MASS * 1e-4 * np.eye(3))
        + _revolute("box_joint_y", "box_cross", "box", (0.0, 0.0, 0.0), "0 1 0")
        + _inertial_link("box", mass, com, i_c)
        + "</robot>\n"
    )
    return text[:cut] + extra


def _rotation(quaternion) -> np.ndarray:
    """The rotation matrix of a pybullet quaternion ``(x, y, z, w)``, normalised first
    (pybullet's are unit to about 1e-7 only)."""
    q = np.asarray(quaternion, dtype=float)
    x, y, z, w = q / np.linalg.norm(q)
    return np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
            [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
            [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
        ]
    )


def record(
    box: Mapping[str, float] | None = None,
    weights: Mapping[str, float] | None = None,
    dt: float = 0.01,
    noise: float = 0.0,
    seed: int = 0,
    motion: Motion = MOTION,
) -> BoxRecording:
    """Shake the box in pybullet along ``motion`` and record it every ``dt`` (module docstring).

    Args:
        box: the empty box's parameters (default :data:`~physid.inference.box.TRUE_BOX`);
            missing entries take the default. Must be physical.
        weights: the weights' positions ``{"w1x", "w1y", "w2x", "w2y"}``, or None (no weights).
        dt: the recording interval (s), a multiple of ``1 / FINE_RATE``.
        noise: standard deviation of Gaussian noise added to the recorded states (rad, rad/s)
            and, independently, to the points (m); the inputs are exact.
        seed: seeds the noise.
        motion: the arm's motion.
    """
    box = _check_box(box)
    weights = _check_weights(weights)
    dt = check_positive("dt", dt)
    ratio = dt * FINE_RATE
    if abs(ratio - round(ratio)) > 1e-9 or round(ratio) < 1:
        raise ValueError(f"dt must be a multiple of 1/{FINE_RATE} s, got {dt!r}")
    per = int(round(ratio))
    noise = check_nonnegative("noise", noise)
    seed = check_seed("seed", seed)
    if not isinstance(motion, Motion):
        raise TypeError(f"motion must be a Motion, got {type(motion).__name__}")
    n_steps = int(round(motion.duration / dt))
    if n_steps < 1:
        raise ValueError(f"dt must be below the motion's duration {motion.duration}, got {dt!r}")

    pb = import_pybullet()
    client = pb.connect(pb.DIRECT)
    try:
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "panda_box.urdf")
            with open(path, "w") as f:
                f.write(box_urdf(box, weights))
            robot = pb.loadURDF(
                path,
                useFixedBase=True,
                flags=pb.URDF_USE_INERTIA_FROM_FILE,
                physicsClientId=client,
            )
        return _run(pb, client, robot, box, weights, dt, per, n_steps, noise, seed, motion)
    finally:
        pb.disconnect(physicsClientId=client)


def _run(pb, client, robot, box, weights, dt, per, n_steps, noise, seed, motion) -> BoxRecording:
    kw = {"physicsClientId": client}
    pb.setGravity(0, 0, -GRAVITY, **kw)
    pb.setTimeStep(1.0 / FINE_RATE, **kw)
    names = {
        pb.getJointInfo(robot, j, **kw)[1].decode(): j for j in range(pb.getNumJoints(robot, **kw))
    }
    arm = [names[f"panda_joint{i}"] for i in range(1, 8)]
    flange = names["panda_joint8"]  # the fixed joint whose child link is panda_link8
    ujoint = [names["box_joint_x"], names["box_joint_y"]]
    box_link = ujoint[1]
    for link in range(-1, pb.getNumJoints(robot, **kw)):
        pb.changeDynamics(
            robot, link, linearDamping=0.0, angularDamping=0.0, jointDamping=0.0, **kw
        )
    pb.setJointMotorControlArray(robot, ujoint, pb.VELOCITY_CONTROL, forces=[0.0, 0.0], **kw)

    def reset_arm(t: float) -> None:
        q, qd = motion.profile(t)
        for j, qj, vj in zip(arm, q, qd, strict=True):
            pb.resetJointState(robot, j, qj, vj, **kw)

    def drive_arm(t: float) -> None:
        # Velocity motors that land the joints on the plan at the end of the step.
        target, _ = motion.profile(t + 1.0 / FINE_RATE)
        now = np.array([js[0] for js in pb.getJointStates(robot, arm, **kw)])
        pb.setJointMotorControlArray(
            robot,
            arm,
            pb.VELOCITY_CONTROL,
            targetVelocities=list((target - now) * FINE_RATE),
            forces=[ARM_FORCE] * 7,
            **kw,
        )

    def mount() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        state = pb.getLinkState(
            robot, flange, computeLinkVelocity=1, computeForwardKinematics=1, **kw
        )
        rot = _rotation(state[5])
        p = np.asarray(state[4]) + rot[:, 2] * JOINT_OFFSET
        omega = np.asarray(state[7])
        v = np.asarray(state[6]) + np.cross(omega, p - np.asarray(state[0]))
        return p, rot, v, omega

    def box_state() -> tuple[np.ndarray, np.ndarray]:
        js = pb.getJointStates(robot, ujoint, **kw)
        s = np.array([js[0][0], js[1][0], js[0][1], js[1][1]])
        link = pb.getLinkState(robot, box_link, computeForwardKinematics=1, **kw)
        rot = _rotation(link[5])
        origin = np.asarray(link[4]) + LID_OFFSET * rot[:, 2]
        pts = np.concatenate([origin, origin + rot[:, 0], origin + rot[:, 1], origin + rot[:, 2]])
        return s, pts

    # Start: the home pose, the box at rest at its equilibrium.
    reset_arm(0.0)
    _, rot0, _, _ = mount()
    mass, com, _ = _rigid_body(box, weights)
    alpha, beta = hanging_angles(com, rot0.T @ np.array([0.0, 0.0, -1.0]))
    pb.resetJointState(robot, ujoint[0], alpha, 0.0, **kw)
    pb.resetJointState(robot, ujoint[1], beta, 0.0, **kw)

    damping = np.array([box["d1"], box["d2"]])
    states = np.empty((n_steps + 1, 4))
    points = np.empty((n_steps + 1, 12))
    kin = []  # (p, R, v, ω) at the recorded times
    for n in range(n_steps + 1):
        states[n], points[n] = box_state()
        kin.append(mount())
        if n == n_steps:
            break
        for k in range(per):
            t = (n * per + k) / FINE_RATE
            drive_arm(t)
            js = pb.getJointStates(robot, ujoint, **kw)
            torque = -damping * np.array([js[0][1], js[1][1]])
            pb.setJointMotorControlArray(
                robot, ujoint, pb.TORQUE_CONTROL, forces=list(torque), **kw
            )
            pb.stepSimulation(**kw)
    inputs = np.empty((n_steps, INPUT_SIZE))
    for n in range(n_steps):
        p, rot, v, omega = kin[n]
        _, _, v1, omega1 = kin[n + 1]
        inputs[n] = np.concatenate([p, (v1 - v) / dt, rot.reshape(9), omega, (omega1 - omega) / dt])
    if noise > 0:
        rng = np.random.default_rng(seed)
        states = states + noise * rng.standard_normal(states.shape)
        points = points + noise * rng.standard_normal(points.shape)
    return BoxRecording(
        states=states,
        inputs=inputs,
        points=points,
        dt=dt,
        duration=n_steps * dt,
        weights=None if weights is None else dict(weights),
        box=dict(box),
    )


def _check_box(box) -> dict[str, float]:
    if box is None:
        return dict(TRUE_BOX)
    if not isinstance(box, Mapping):
        raise TypeError(f"box must be a mapping of parameter names to values, got {box!r}")
    bad = [k for k in box if k not in _BOX_PARAMETERS]
    if bad:
        raise ValueError(f"box names unknown parameters {bad}; expected some of {_BOX_PARAMETERS}")
    values = {**TRUE_BOX, **box}
    # Physical checks (and finiteness) through the model's own check.
    import torch

    theta = torch.tensor([values[k] for k in _BOX_PARAMETERS], dtype=torch.float64)
    try:
        ShakenBox(names=_BOX_PARAMETERS).check_theta(theta)
    except ValueError as error:
        raise ValueError(f"box is not physical: {error}") from None
    return {k: float(values[k]) for k in _BOX_PARAMETERS}


def _check_weights(weights) -> dict[str, float] | None:
    if weights is None:
        return None
    if not isinstance(weights, Mapping) or set(weights) != set(_WEIGHT_PARAMETERS):
        raise ValueError(
            f"weights must be None or a mapping with keys {_WEIGHT_PARAMETERS}, got {weights!r}"
        )
    out = {}
    for k in _WEIGHT_PARAMETERS:
        v = float(weights[k])
        if not math.isfinite(v):
            raise ValueError(f"weights[{k!r}] must be finite, got {weights[k]!r}")
        out[k] = v
    return out
