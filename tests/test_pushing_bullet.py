"""The pybullet ground truth: the multibody it builds, its limits, and a push against the engine."""

from __future__ import annotations

import numpy as np
import pybullet as p
import pytest
import torch

from physid.pushing import MAX_LINKS, Push, from_mask, rectangle, simulate, simulate_bullet
from physid.pushing.bullet import CONTACT_STIFFNESS, create_object, create_table


@pytest.fixture
def client():
    cid = p.connect(p.DIRECT)
    yield cid
    p.disconnect(cid)


def test_multibody_has_one_link_per_cell_with_its_mass_and_friction(client):
    obj = from_mask([[1, 1, 1], [1, 1, 0]], 0.02, [0.01, 0.02, 0.01, 0.03, 0.015],
                    [0.3, 0.5, 0.0, 0.2, 0.6])
    table = create_table(client)
    body = create_object(client, obj)
    assert p.getNumJoints(body, physicsClientId=client) == len(obj)
    assert p.getDynamicsInfo(table, -1, physicsClientId=client)[1] == 1.0
    for i in range(len(obj)):
        info = p.getDynamicsInfo(body, i, physicsClientId=client)
        assert info[0] == pytest.approx(obj.masses[i].item())
        assert info[1] == pytest.approx(obj.frictions[i].item())
        assert info[9] == pytest.approx(CONTACT_STIFFNESS * obj.masses[i].item())
        position = p.getLinkState(body, i, physicsClientId=client)[4]
        np.testing.assert_allclose(position[:2], obj.centres[i].numpy(), atol=1e-12)


def test_each_cell_carries_its_own_weight(client):
    obj = from_mask(np.ones((3, 6), bool), 0.02, 0.01, 0.4)
    obj = obj.with_params(masses=torch.where(obj.centres[:, 0] < 0, 0.04, 0.01).double())
    p.setGravity(0, 0, -9.81, physicsClientId=client)
    table = create_table(client)
    body = create_object(client, obj)
    for _ in range(96):
        p.stepSimulation(physicsClientId=client)
    load = np.zeros(len(obj))
    for contact in p.getContactPoints(body, table, physicsClientId=client):
        load[contact[3]] += contact[9]
    np.testing.assert_allclose(load, obj.masses.numpy() * 9.81, rtol=0.03)


def test_more_than_127_cells_raise(client):
    big = rectangle(8, 16, 0.02, 0.01, 0.4)  # 128 cells
    assert len(big) == MAX_LINKS + 1
    with pytest.raises(ValueError, match="128 cells; pybullet supports at most 127 links"):
        create_object(client, big)
    with pytest.raises(ValueError, match="at most 127 links"):
        simulate_bullet(big, Push((0.0, -0.08), (0.0, 1.0)), [1.0])


def test_bad_arguments_raise():
    box = rectangle(2, 3, 0.02, 0.01, 0.4)
    push = Push((0.0, -0.02), (0.0, 1.0), duration=0.1)
    with pytest.raises(ValueError, match="sample_times must be multiples of 0.00416667"):
        simulate_bullet(box, push, [0.01])
    with pytest.raises(ValueError, match="masses must be > 0"):
        simulate_bullet(box, push, [0.1], masses=torch.zeros(6, dtype=torch.float64))
    with pytest.raises(ValueError, match=r"push\.direction .* does not point into"):
        simulate_bullet(box, Push((0.0, -0.02), (0.0, -1.0)), [0.1])


def test_push_matches_the_rigid_engine_and_its_shapes():
    box = rectangle(4, 6, 0.02, 0.01, 0.4)  # x in [−0.06, 0.06], y in [−0.04, 0.04]
    pushes = [Push((0.0, -0.04), (0.0, 1.0), duration=0.5),
              Push((0.04, -0.04), (0.0, 1.0), duration=0.5)]
    times = [0.0, 0.25, 0.5]
    bullet = simulate_bullet(box, pushes, times)
    engine = simulate(box, pushes, sample_times=times)
    assert bullet.positions.shape == engine.positions.shape == (2, 3, 24, 2)
    torch.testing.assert_close(bullet.times, engine.times)
    # The centred push translates the box by speed × time without turning it.
    shift = bullet.positions[0, -1] - box.centres
    np.testing.assert_allclose(shift.mean(0).numpy(), [0.0, 0.1], atol=2e-3)
    assert float(shift.std(0).max()) < 1e-3
    # Both pushes end within a few millimetres of the engine (the gap of the friction models).
    gap = (bullet.positions - engine.positions).norm(dim=-1).mean(-1)
    assert float(gap.max()) < 5e-3
    single = simulate_bullet(box, pushes[0], times)
    assert single.positions.shape == (3, 24, 2)
    assert float((single.positions - bullet.positions[0]).abs().max()) < 1e-9
