"""Our double pendulum against the Tiny Differentiable Simulator (``pytinydiffsim``).

The TDS model is a two-link revolute chain built like TDS's compound pendulum
(``init_compound_pendulum`` in ``src/utils/pendulum.hpp``): both joints turn about the link
frame's ``x`` axis, each link points along its frame's ``y`` axis, gravity is ``-z``, and link
frames have the identity rotation at ``q = 0``. The plane of motion is TDS's ``y``-``z`` plane:
our world ``x`` (right) is TDS's ``y``, our world ``y`` (up) is TDS's ``z``.

==========================  ==============================================================
ours                        TDS
==========================  ==============================================================
joint 1 (base)              ``TinyLink`` 0, ``JOINT_REVOLUTE_X``, parent ``-1``, ``X_T = 0``
joint 2 at ``l1``           ``TinyLink`` 1, parent ``0``, ``X_T.translation = (0, l1, 0)``
``l2``                      not used (enters only as ``c2x = l2`` of a point mass)
``m_i``                     ``RigidBodyInertia.mass``
``c_ix`` (along the link)   ``RigidBodyInertia.com.y``
``c_iy`` (perpendicular)    ``RigidBodyInertia.com.z``
``I_i`` (about the COM)     ``RigidBodyInertia.inertia[0, 0]`` (``I_xx`` about the COM,
                            the joint axis; ``I_yy``, ``I_zz`` do not enter planar motion)
``d_i``                     ``TinyLink.damping`` (TDS adds ``tau -= damping * qd``)
gravity ``GRAVITY`` down    ``forward_dynamics(mb, Vector3(0, 0, -GRAVITY))``
``q0`` (from hanging down)  ``q[0] = q0 - π/2`` (TDS's ``q = 0`` points the link along ``+y``)
``q1`` (relative)           ``q[1] = q1``
``q̇0``, ``q̇1``              ``qd[0]``, ``qd[1]``
one step                    ``forward_dynamics`` then ``integrate_euler`` (semi-implicit)
==========================  ==============================================================

``c_iy`` is the ``+90°`` turn of ``c_ix`` in both (``y → z`` under a rotation about ``+x``), so
no sign changes. TDS's ``RigidBodyInertia`` takes the inertia about the centre of mass and
shifts it to the joint (``I + m [c]× [c]×ᵀ``), as our ``M11``, ``M22`` do.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence

import pytest
import torch

from physid.core.constants import GRAVITY
from physid.inference.pendulum import ALL_PARAMETERS, DEFAULTS, SIDEWAYS, DoublePendulum

tds = pytest.importorskip("pytinydiffsim")

DT = 1.0 / 400.0
STEPS = 800  # 2 s
TOLERANCE = 1e-9  # rad

#: Start states ``[q0, q1, q̇0, q̇1]``: sideways at rest, a kick from hanging, high energy.
STARTS: tuple[tuple[float, float, float, float], ...] = (
    SIDEWAYS,
    (0.0, 0.0, 3.0, -2.0),
    (2.5, -1.2, 0.5, 1.5),
    (-1.0, 2.0, -1.0, 0.0),
)

#: ``(point_mass, values)``: the values override :data:`DEFAULTS`.
CASES: dict[str, tuple[bool, dict[str, float]]] = {
    "point-mass": (True, {"l1": 0.3, "l2": 0.25, "m1": 0.2, "m2": 0.1, "d1": 0.0, "d2": 0.0}),
    "ibm-defaults": (False, {}),
    "compound": (
        False,
        {
            "l1": 0.2,
            "m1": 0.3,
            "I1": 0.01,
            "c1x": 0.08,
            "c1y": 0.03,
            "d1": 0.05,
            "m2": 0.15,
            "I2": 0.004,
            "c2x": 0.06,
            "c2y": -0.04,
            "d2": 0.02,
        },
    ),
    "compound-com-behind-joint": (
        False,
        {
            "l1": 0.12,
            "m1": 0.4,
            "I1": 0.003,
            "c1x": -0.05,
            "c1y": -0.02,
            "d1": 0.1,
            "m2": 0.08,
            "I2": 0.002,
            "c2x": 0.15,
            "c2y": 0.05,
            "d2": 0.01,
        },
    ),
}


def _ours(point_mass: bool, values: Mapping[str, float]) -> tuple[dict[str, float], torch.Tensor]:
    """The twelve effective quantities and our rollouts ``(len(STARTS), STEPS, 4)``."""
    model = DoublePendulum(names=ALL_PARAMETERS, dt=DT, point_mass=point_mass, compiled=False)
    merged = {**DEFAULTS, **values}
    theta = torch.tensor([merged[n] for n in ALL_PARAMETERS], dtype=torch.float64)
    physical = {n: float(v) for n, v in model.physical(theta).items()}
    states = model.simulate(theta, torch.tensor(STARTS, dtype=torch.float64), STEPS)
    return physical, states


def _tds_link(
    offset: float, mass: float, inertia: float, cx: float, cy: float, damping: float
) -> tds.TinyLink:
    """A TDS revolute-x link whose joint is ``offset`` along its parent's ``y`` axis."""
    joint = tds.TinySpatialTransform()
    joint.set_identity()
    joint.translation = tds.Vector3(0.0, offset, 0.0)
    about_com = tds.Matrix3()
    for i in range(3):
        for j in range(3):
            about_com[i, j] = inertia if i == j == 0 else 0.0
    rbi = tds.RigidBodyInertia(mass, tds.Vector3(0.0, cx, cy), about_com)
    link = tds.TinyLink(tds.JOINT_REVOLUTE_X, joint, rbi)
    link.damping = damping
    return link


def _tds_rollout(p: Mapping[str, float], s0: Sequence[float]) -> torch.Tensor:
    """TDS's states ``(STEPS, 4)`` in our convention, for the twelve quantities ``p``."""
    mb = tds.TinyMultiBody(False)  # fixed base
    links = (
        _tds_link(0.0, p["m1"], p["I1"], p["c1x"], p["c1y"], p["d1"]),
        _tds_link(p["l1"], p["m2"], p["I2"], p["c2x"], p["c2y"], p["d2"]),
    )
    for parent, link in enumerate(links, start=-1):
        mb.attach_link(link, parent, True)
    mb.initialize()
    mb.q[0], mb.q[1] = s0[0] - math.pi / 2, s0[1]
    mb.qd[0], mb.qd[1] = s0[2], s0[3]
    gravity = tds.Vector3(0.0, 0.0, -GRAVITY)
    out = []
    for _ in range(STEPS):
        tds.forward_dynamics(mb, gravity)
        tds.integrate_euler(mb, DT)
        out.append((mb.q[0] + math.pi / 2, mb.q[1], mb.qd[0], mb.qd[1]))
    return torch.tensor(out, dtype=torch.float64)


def _max_angle_difference(p: Mapping[str, float], ours: torch.Tensor) -> list[float]:
    """max ``|Δq|`` over 2 s between TDS (quantities ``p``) and ``ours``, per start state."""
    return [
        (_tds_rollout(p, s0)[:, :2] - mine[:, :2]).abs().max().item()
        for s0, mine in zip(STARTS, ours, strict=True)
    ]


@pytest.mark.parametrize("case", list(CASES))
def test_matches_tds(case: str) -> None:
    physical, ours = _ours(*CASES[case])
    differences = _max_angle_difference(physical, ours)
    assert max(differences) <= TOLERANCE, f"{case}: max |Δq| per start {differences}"


def _joint2_at_l2(p: dict[str, float]) -> dict[str, float]:
    return {**p, "l1": p["l2"]}


def _c_y_flipped(p: dict[str, float]) -> dict[str, float]:
    return {**p, "c1y": -p["c1y"], "c2y": -p["c2y"]}


def _inertia_about_joint(p: dict[str, float]) -> dict[str, float]:
    return {
        **p,
        "I1": p["I1"] + p["m1"] * (p["c1x"] ** 2 + p["c1y"] ** 2),
        "I2": p["I2"] + p["m2"] * (p["c2x"] ** 2 + p["c2y"] ** 2),
    }


@pytest.mark.parametrize(
    "wrong", [_joint2_at_l2, _c_y_flipped, _inertia_about_joint], ids=lambda f: f.__name__
)
def test_wrong_mapping_is_detected(wrong: Callable[[dict[str, float]], dict[str, float]]) -> None:
    """A plausible mapping mistake moves TDS's angles by far more than the tolerance."""
    physical, ours = _ours(*CASES["compound"])
    assert min(_max_angle_difference(wrong(physical), ours)) > 1e-3
