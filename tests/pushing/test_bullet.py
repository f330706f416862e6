"""The pybullet ground truth: the multibody and its skin, its limits, and pushes by the finger."""

from __future__ import annotations

import math

import numpy as np
import pybullet as p
import pytest
import torch

from physid.core.constants import GRAVITY
from physid.pushing import (
    MAX_LINKS,
    OBJECT_NAMES,
    Push,
    from_mask,
    load_object,
    rectangle,
    simulate_bullet,
)
from physid.pushing.bullet import (
    CONTACT_STIFFNESS,
    FINGER_LATERAL_FRICTION,
    SETUPS,
    SKIN_MASS,
    BulletSetup,
    create_finger,
    create_object,
    create_table,
)
from physid.pushing.finger import FINGER, Finger, contact_events, face_sides
from physid.pushing.pushes import random_pushes

#: A uniform box: x in [−0.06, 0.06], y in [−0.04, 0.04].
BOX = rectangle(4, 6, 0.02, 0.01, 0.4)
CENTRED = Push((0.0, -0.04), (0.0, 1.0), duration=0.5)
#: A comb of 20 teeth: 59 cells whose outline takes 21 boxes, more than one compound holds.
COMB = from_mask([[1] * 39, [1, 0] * 19 + [1]], 0.02, 0.01, 0.4, name="comb")


@pytest.fixture
def client():
    cid = p.connect(p.DIRECT)
    yield cid
    p.disconnect(cid)


def test_multibody_has_one_link_per_cell_and_a_rigid_skin(client):
    obj = from_mask([[1, 1, 1], [1, 1, 0]], 0.02, [0.01, 0.02, 0.01, 0.03, 0.015],
                    [0.3, 0.5, 0.0, 0.2, 0.6])
    table = create_table(client)
    body = create_object(client, obj, finger=Finger(friction=0.8))
    k = len(obj)
    assert p.getNumJoints(body, physicsClientId=client) == k + 1
    assert p.getDynamicsInfo(table, -1, physicsClientId=client)[1] == 1.0
    for i in range(k):
        info = p.getDynamicsInfo(body, i, physicsClientId=client)
        assert info[0] == pytest.approx(obj.masses[i].item())
        assert info[1] == pytest.approx(obj.frictions[i].item())
        assert info[9] == pytest.approx(CONTACT_STIFFNESS * obj.masses[i].item())
        position = p.getLinkState(body, i, physicsClientId=client)[4]
        np.testing.assert_allclose(position[:2], obj.centres[i].numpy(), atol=1e-12)
    skin = p.getDynamicsInfo(body, k, physicsClientId=client)
    assert skin[0] == SKIN_MASS
    assert skin[1] * FINGER_LATERAL_FRICTION == pytest.approx(0.8)  # Bullet's product
    assert skin[9] == -1.0  # no contact stiffness: rigid
    low, high = p.getAABB(body, k, physicsClientId=client)
    centres = obj.centres.numpy()  # the footprint, from a quarter of the side up to the top
    np.testing.assert_allclose(low, [*(centres.min(0) - 0.01), 0.005], atol=1e-9)
    np.testing.assert_allclose(high, [*(centres.max(0) + 0.01), 0.02], atol=1e-9)


@pytest.mark.parametrize("name", [*OBJECT_NAMES, "comb"])
def test_the_skin_boxes_tile_the_footprint(name):
    obj = COMB if name == "comb" else load_object(name)
    centres, halves = obj.rectangles()
    cells = obj.centres.numpy()
    inside = (np.abs(cells[:, None] - centres) < halves).all(-1)  # cell centre in which box
    assert (inside.sum(1) == 1).all()
    np.testing.assert_allclose((4 * halves.prod(1)).sum(), len(obj) * obj.cell_side**2)
    assert len(centres) <= {"toolbox": 1, "book": 1, "hammer": 3, "crimp": 3}.get(name, 21)


def test_an_outline_of_more_than_16_boxes_takes_several_skin_links(client):
    assert len(COMB.rectangles()[0]) == 21
    body = create_object(client, COMB)
    assert p.getNumJoints(body, physicsClientId=client) == len(COMB) + 2
    boxes = [p.getAABB(body, i, physicsClientId=client) for i in (len(COMB), len(COMB) + 1)]
    low, high = np.min([b[0] for b in boxes], 0), np.max([b[1] for b in boxes], 0)
    centres = COMB.centres.numpy()
    np.testing.assert_allclose(low[:2], centres.min(0) - 0.01, atol=1e-9)
    np.testing.assert_allclose(high[:2], centres.max(0) + 0.01, atol=1e-9)


def test_each_cell_carries_its_own_weight_and_the_skin_none(client):
    obj = from_mask(np.ones((3, 6), bool), 0.02, 0.01, 0.4)
    obj = obj.with_params(masses=torch.where(obj.centres[:, 0] < 0, 0.04, 0.01).double())
    p.setGravity(0, 0, -GRAVITY, physicsClientId=client)
    table = create_table(client)
    body = create_object(client, obj)
    for _ in range(96):
        p.stepSimulation(physicsClientId=client)
    load = np.zeros(len(obj) + 1)
    for contact in p.getContactPoints(body, table, physicsClientId=client):
        load[contact[3]] += contact[9]
    np.testing.assert_allclose(load[:-1], obj.masses.numpy() * GRAVITY, rtol=0.03)
    assert not p.getContactPoints(body, table, len(obj), -1, physicsClientId=client)


def test_the_finger_touches_only_the_skin_and_barely_enters_it(client):
    obj = load_object("hammer")
    push = random_pushes(obj, 1, seed=0, duration=0.5)[0]
    p.setGravity(0, 0, -GRAVITY, physicsClientId=client)
    table = create_table(client)
    body = create_object(client, obj)
    finger = create_finger(client, obj, body, push)
    start = p.getBasePositionAndOrientation(finger, physicsClientId=client)[0]
    aimed, direction = np.asarray(push.contact), np.asarray(push.direction)
    np.testing.assert_allclose(start[:2], aimed - 2 * FINGER.radius * direction)
    depth, touched = 0.0, 0
    for _ in range(120):
        p.resetBaseVelocity(finger, [*push.velocity, 0.0], physicsClientId=client)
        p.stepSimulation(physicsClientId=client)
        points = p.getContactPoints(finger, body, physicsClientId=client)
        assert {c[4] for c in points} <= {len(obj)}  # the skin, never a cell
        depth = max([depth] + [-c[8] for c in points])
        touched += any(c[9] > 0 for c in points)
        assert not p.getContactPoints(body, table, len(obj), -1, physicsClientId=client)
    assert touched > 60
    assert depth < 1e-3


def test_objects_beyond_126_cells_raise(client):
    big = rectangle(1, 127, 0.02, 0.01, 0.4)
    assert len(big) == MAX_LINKS
    with pytest.raises(ValueError, match=r"^obj has 127 cells and needs 1 skin link"):
        create_object(client, big)
    with pytest.raises(ValueError, match=r"^obj has 127 cells .* at most 127 links"):
        simulate_bullet(big, Push((0.0, -0.01), (0.0, 1.0)), [1.0])


def test_bad_arguments_raise():
    box = rectangle(2, 3, 0.02, 0.01, 0.4)
    push = Push((0.0, -0.02), (0.0, 1.0), duration=0.1)
    with pytest.raises(ValueError, match="sample_times must be multiples of 0.00416667"):
        simulate_bullet(box, push, [0.01])
    with pytest.raises(ValueError, match="masses must be > 0"):
        simulate_bullet(box, push, [0.1], masses=torch.zeros(6, dtype=torch.float64))
    with pytest.raises(ValueError, match=r"push\.direction .* does not point into"):
        simulate_bullet(box, Push((0.0, -0.02), (0.0, -1.0)), [0.1])
    with pytest.raises(TypeError, match="^finger must be a Finger"):
        simulate_bullet(box, push, [0.1], finger=0.015)


def test_setups_are_checked_before_any_work():
    box = rectangle(2, 3, 0.02, 0.01, 0.4)
    push = Push((0.0, -0.02), (0.0, 1.0), duration=0.1)
    assert SETUPS.names()[0] == "book" and SETUPS["book"] == BulletSetup("book", SETUPS[
        "book"].label)
    with pytest.raises(ValueError, match="^setup must be one of"):
        simulate_bullet(box, push, [0.1], setup="glass")
    with pytest.raises(TypeError, match="^setup must be a BulletSetup"):
        simulate_bullet(box, push, [0.1], setup=3)
    with pytest.raises(ValueError, match="^finger_shape must be one of"):
        BulletSetup("cone", "a cone", finger_shape="cone")
    with pytest.raises(ValueError, match="^table_stiffness must be > 0"):
        BulletSetup("soft", "too soft", table_stiffness=0.0)


def test_the_setups_make_the_finger_and_table_they_name(client):
    obj = load_object("hammer")
    push = random_pushes(obj, 1, seed=0, duration=0.5)[0]
    body = create_object(client, obj, setup="authors")
    assert p.getDynamicsInfo(body, 0, physicsClientId=client)[9] == -1.0  # rigid table contact
    finger = create_finger(client, obj, body, push, setup="authors")
    assert p.getCollisionShapeData(finger, -1, physicsClientId=client)[0][2] == p.GEOM_BOX
    yaw = p.getEulerFromQuaternion(
        p.getBasePositionAndOrientation(finger, physicsClientId=client)[1])[2]
    assert yaw == pytest.approx(math.atan2(push.direction[1], push.direction[0]))
    soft = create_object(client, obj, setup="soft-table")
    info = p.getDynamicsInfo(soft, 0, physicsClientId=client)
    assert info[9] == pytest.approx(0.1 * CONTACT_STIFFNESS * obj.masses[0].item())


def test_a_box_finger_pushes_a_face_flat_and_keeps_the_object_from_turning():
    """A centred push by the disc and by the box move the box alike; an off-centre push turns
    it less with the box's flat face against the object's than with the disc."""
    times = [0.0, 0.5]
    off = Push((0.04, -0.04), (0.0, 1.0), duration=0.5)
    disc = simulate_bullet(BOX, [CENTRED, off], times)
    box = simulate_bullet(BOX, [CENTRED, off], times, setup="box-finger")
    np.testing.assert_allclose(box.positions[0, -1].numpy(), disc.positions[0, -1].numpy(),
                               atol=2e-3)
    assert bool(box.contact.touching[0, -100:].all())

    def turn(run):
        start, end = run.positions[1, 0].numpy(), run.positions[1, -1].numpy()
        a, b = start[-1] - start[0], end[-1] - end[0]
        return abs(math.atan2(a[0] * b[1] - a[1] * b[0], a @ b))

    assert turn(box) < turn(disc)


def test_a_centred_push_translates_without_turning():
    times = [0.0, 0.25, 0.5]
    off = Push((0.04, -0.04), (0.0, 1.0), duration=0.5)
    bullet = simulate_bullet(BOX, [CENTRED, off], times)
    assert bullet.positions.shape == (2, 3, 24, 2)
    torch.testing.assert_close(bullet.times, torch.tensor(times, dtype=torch.float64))
    # The finger starts one radius short of the face: the box moves 0.1 − 0.015 m.
    shift = bullet.positions[0, -1] - BOX.centres
    np.testing.assert_allclose(shift.mean(0).numpy(), [0.0, 0.085], atol=1e-3)
    assert float(shift.std(0).max()) < 1e-3
    record = bullet.contact
    assert record.touching.shape == record.normal_impulse.shape == (2, 120)
    assert record.point.shape == (2, 120, 2)
    bottom = face_sides(BOX)[np.argmin(BOX.exposed_faces()[1][:, 1])]  # the side at y = −0.04
    touching = record.touching[0]
    assert bool(touching[-100:].all())
    assert set(record.side[0][touching].tolist()) == {int(bottom)}
    assert set(record.side[0][~touching].tolist()) <= {-1}
    np.testing.assert_allclose(record.point[0][touching].numpy(), [[0.0, -0.04]] * int(
        touching.sum()), atol=2e-4)
    events = contact_events(record[:1], BOX)
    assert bool(events.assumptions_hold[0])
    single = simulate_bullet(BOX, CENTRED, times)
    assert single.positions.shape == (3, 24, 2)
    assert single.contact.touching.shape == (120,)
    assert float((single.positions - bullet.positions[0]).abs().max()) < 1e-9


def test_the_finger_never_pulls():
    obj = load_object("hammer")
    pushes = random_pushes(obj, 3, seed=1, duration=0.5)
    record = simulate_bullet(obj, pushes, [0.5]).contact
    assert float(record.normal_impulse.min()) >= 0.0
    assert bool((record.normal_impulse[~record.touching] == 0).all())
    assert bool(record.touching.any(1).all())


def test_a_glancing_finger_slides_without_friction_and_sticks_with_it():
    angle = math.radians(20.0)  # the edge of the cone: tan 20° < the default friction 1.0
    direction = (math.sin(angle), math.cos(angle))
    # Aimed so that the box translates without turning (a turn would roll the disc along the face).
    push = Push((-0.04 * math.tan(angle), -0.04), direction, duration=0.5)
    sticky = simulate_bullet(BOX, push, [0.5])
    slippery = simulate_bullet(BOX, push, [0.5], finger=Finger(friction=0.0))
    assert FINGER.friction > math.tan(angle)
    stuck = contact_events(sticky.contact, BOX)
    slid = contact_events(slippery.contact, BOX, Finger(friction=0.0))
    assert bool(stuck.assumptions_hold[0])
    assert slid.slid[0] and not slid.lost_contact[0] and not slid.changed_side[0]
    along = slippery.contact.point[slippery.contact.touching, 0]
    assert float(along.max() - along.min()) > 0.01
    # Held by friction, the box follows the finger's direction; without, it is pushed along +y.
    for run, across in ((sticky, (0.0, 5e-3)), (slippery, (1e-2, 1.0))):
        shift = (run.final - BOX.centres).mean(0).numpy()
        assert float(np.dot(shift, direction)) > 0.075
        sideways = direction[0] * shift[1] - direction[1] * shift[0]
        assert across[0] <= abs(float(sideways)) <= across[1]


def test_importing_the_part_does_not_import_pybullet():
    """pybullet is loaded when a pybullet function is first called, not on import."""
    import subprocess
    import sys

    code = "import sys, physid.pushing; print('pybullet' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0 and result.stdout.strip() == "False", result.stderr


def test_a_prepared_push_steps_like_simulate_bullet():
    """Timing Bullet's stepping alone (the benchmark) runs the same physics."""
    from physid.pushing.bullet import PreparedPush
    from physid.pushing.chapters.pushing_identify import block

    obj, push = block(10)
    push = Push(push.contact, push.direction, push.speed, 0.1)
    final = PreparedPush(obj, push).run()
    reference = simulate_bullet(obj, push, [0.1], settle_steps=0).positions[-1].numpy()
    np.testing.assert_allclose(final, reference, atol=1e-12)
    with pytest.raises(TypeError, match="push"):
        PreparedPush(obj, [push])
