"""What identification learns from: ground-truth maps, pose fits, restarts of a push from an
observed pose and twist, and pushes observed in pybullet (small objects, short pushes)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import physid.pushing.observations as observations
from physid.pushing import (
    from_mask,
    load_object,
    random_pushes,
    rectangle,
    simulate,
    simulate_bullet,
)
from physid.pushing.bullet import BULLET_DT
from physid.pushing.observations import (
    FRICTION_FACTOR,
    MASS_FACTOR,
    OBSERVATION_PERIOD,
    Observations,
    draw_truth,
    fit_poses,
    make_experiment,
    observe,
)
from tests.pushing.twists import engine_twist

pytestmark = pytest.mark.usefixtures("one_torch_thread")

F64 = torch.float64
DT = 0.01


@pytest.fixture(scope="module")
def box():
    """2 × 3 cells of 2 cm."""
    return rectangle(2, 3, 0.02, 0.05, 0.4)


# --- restarts from an observed pose and twist ---------------------------------------------------


@pytest.mark.parametrize(
    ("formulation", "rows", "cols", "n_push", "steps"),
    [("rigid", 2, 3, 3, (10, 15, 20)), ("lcp", 1, 2, 1, (12,))],
)
def test_restart_from_fitted_pose_and_twist_continues_the_push(formulation, rows, cols, n_push,
                                                               steps):
    """Uniform masses (centre of mass on the frame's origin): a push restarted at step t from
    its fitted pose, its twist and the finger t·dt into the push follows the same path."""
    obj = rectangle(rows, cols, 0.02, 0.05, 0.4)
    pushes = random_pushes(obj, n_push, seed=1, duration=0.3)
    full = simulate(obj, pushes, formulation, dt=DT)
    poses = fit_poses(obj, full.positions)
    moved = 0.0
    for t in steps:
        twist = engine_twist(poses[:, t - 1], poses[:, t], DT)
        moved = max(moved, float(twist.abs().max()))
        restart = simulate(obj, pushes, formulation, dt=DT, duration=0.3 - t * DT,
                           initial_pose=poses[:, t], initial_velocity=twist,
                           start_time=torch.full((n_push,), t * DT, dtype=F64))
        error = (restart.positions - full.positions[:, t:]).norm(dim=-1).max()
        assert float(error) < 1e-5, (t, float(error))
    assert moved > 0.5  # the restarts are from a moving object, not a resting one


def test_restart_without_the_finger_offset_differs(box):
    """The control: forgetting ``start_time`` (the finger back at its start) changes the path."""
    pushes = random_pushes(box, 1, seed=1, duration=0.3)
    full = simulate(box, pushes, dt=DT)
    poses = fit_poses(box, full.positions)
    t = 12
    restart = simulate(box, pushes, dt=DT, duration=0.3 - t * DT, initial_pose=poses[:, t],
                       initial_velocity=engine_twist(poses[:, t - 1], poses[:, t], DT))
    assert float((restart.positions - full.positions[:, t:]).norm(dim=-1).max()) > 1e-3


@pytest.mark.parametrize("formulation", ["rigid", "lcp"])
def test_initial_pose_of_a_free_slide_is_a_rigid_motion(formulation):
    """A free slide started at a pose is the slide from the world frame, rotated and moved.

    The friction polygon D is fixed in the world: its symmetries are turns by 2π / 4 (and
    any translation), so those are the poses tried; a turn by 2π / 8 with 8 directions too."""
    obj = from_mask([[1, 1]], 0.02, [0.01, 0.03], [0.3, 0.6]) if formulation == "lcp" else \
        from_l_shape()
    twists = torch.tensor([[2.0, 0.3, -0.1], [-1.0, 0.1, 0.25]], dtype=F64)
    pose = torch.tensor([[math.pi / 2, 0.05, -0.02], [-math.pi, -0.1, 0.3]], dtype=F64)
    dirs = 4
    if formulation == "rigid":
        twists, pose = twists.repeat(2, 1), pose.repeat(2, 1)
        pose[2:, 0] = torch.tensor([math.pi / 4, -3 * math.pi / 4], dtype=F64)
        dirs = 8
    still = simulate(obj, None, formulation, dt=DT, duration=0.1, initial_velocity=twists,
                     friction_dirs=dirs)
    # The same slide in the rotated frame: its twist rotated too.
    c, s = torch.cos(pose[:, 0]), torch.sin(pose[:, 0])
    rot = torch.stack([torch.stack([c, -s], -1), torch.stack([s, c], -1)], -2)  # (B, 2, 2)
    rotated = torch.cat([twists[:, :1], (rot @ twists[:, 1:, None])[..., 0]], 1)
    moved = simulate(obj, None, formulation, dt=DT, duration=0.1, initial_velocity=rotated,
                     initial_pose=pose, friction_dirs=dirs)
    expected = torch.einsum("bij,bskj->bski", rot, still.positions) + pose[:, None, None, 1:]
    torch.testing.assert_close(moved.positions, expected, atol=1e-10, rtol=0)
    assert float((still.positions[:, -1] - still.positions[:, 0]).norm(dim=-1).min()) > 1e-3


def from_l_shape():
    return from_mask([[1, 1, 1], [1, 0, 0]], 0.02, [0.01, 0.02, 0.03, 0.015],
                     [0.3, 0.5, 0.4, 0.7])


# --- fit_poses ------------------------------------------------------------------------------------


def test_fit_poses_recovers_poses_exactly_and_batches():
    obj = from_l_shape()
    rng = np.random.default_rng(0)
    yaw = torch.as_tensor(rng.uniform(-math.pi, math.pi, (4, 5)))
    shift = torch.as_tensor(rng.uniform(-1, 1, (4, 5, 2)))
    c, s = torch.cos(yaw), torch.sin(yaw)
    rot = torch.stack([torch.stack([c, -s], -1), torch.stack([s, c], -1)], -2)
    positions = torch.einsum("abij,kj->abki", rot, obj.centres) + shift.unsqueeze(-2)
    poses = fit_poses(obj, positions)
    assert poses.shape == (4, 5, 3)
    torch.testing.assert_close(poses, torch.cat([yaw.unsqueeze(-1), shift], -1), atol=1e-12,
                               rtol=0)
    # One pose at a time gives the same.
    torch.testing.assert_close(fit_poses(obj, positions[2, 3]), poses[2, 3], atol=1e-15, rtol=0)
    # The centres themselves sit at the identity pose.
    torch.testing.assert_close(fit_poses(obj, obj.centres), torch.zeros(3, dtype=F64),
                               atol=1e-15, rtol=0)


def test_fit_poses_is_least_squares_on_noisy_positions():
    """Noise on the cells: the fit is no worse than the true pose (Procrustes optimality)."""
    obj = from_l_shape()
    gen = torch.Generator().manual_seed(1)
    true = torch.tensor([1.2, 0.3, -0.4], dtype=F64)
    c, s = math.cos(1.2), math.sin(1.2)
    rot = torch.tensor([[c, -s], [s, c]], dtype=F64)
    noisy = obj.centres @ rot.T + true[1:] + 1e-3 * torch.randn(len(obj), 2, generator=gen,
                                                                 dtype=F64)

    def cost(pose):
        c, s = torch.cos(pose[0]), torch.sin(pose[0])
        r = torch.stack([torch.stack([c, -s]), torch.stack([s, c])])
        return float(((obj.centres @ r.T + pose[1:] - noisy) ** 2).sum())

    fitted = fit_poses(obj, noisy)
    assert cost(fitted) <= cost(true)
    for delta in (1e-4, -1e-4):
        for i in range(3):
            assert cost(fitted) <= cost(fitted + delta * torch.eye(3, dtype=F64)[i])


@pytest.mark.parametrize(
    ("positions", "error"),
    [
        (torch.zeros(4, 2, dtype=F64)[:3], ValueError),
        (torch.zeros(4, 3, dtype=F64), ValueError),
        (torch.zeros(2, dtype=F64), ValueError),
        (torch.zeros(4, 2, dtype=torch.float32), TypeError),
        (torch.full((4, 2), math.nan, dtype=F64), ValueError),
        (np.zeros((4, 2)), TypeError),
    ],
)
def test_fit_poses_rejects_bad_positions(positions, error):
    with pytest.raises(error, match=r"^positions\b"):
        fit_poses(from_l_shape(), positions)


def test_fit_poses_rejects_a_non_object():
    with pytest.raises(TypeError, match=r"^obj\b"):
        fit_poses("box", torch.zeros(4, 2, dtype=F64))


# --- draw_truth -----------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["ranch", "crimp"])
def test_draw_truth_per_region_within_the_factors(name):
    obj = load_object(name)
    masses, frictions = draw_truth(obj, 3)
    again = draw_truth(obj, 3)
    other = draw_truth(obj, 4)
    torch.testing.assert_close(masses, again[0], atol=0, rtol=0)
    torch.testing.assert_close(frictions, again[1], atol=0, rtol=0)
    assert not torch.equal(masses, other[0])
    assert masses.shape == frictions.shape == (len(obj),)
    assert masses.dtype == frictions.dtype == F64
    # The object is untouched.
    assert not torch.equal(masses, obj.masses)
    mass_factor = masses / obj.masses
    regions = np.array(obj.regions)
    assert len(set(obj.regions)) == 2
    for region in set(obj.regions):
        cells = torch.as_tensor(regions == region)
        factor = mass_factor[cells]
        assert float(factor.max() - factor.min()) < 1e-12 * float(factor.max())
        assert MASS_FACTOR[0] <= float(factor[0]) <= MASS_FACTOR[1]
        assert len(set(frictions[cells].tolist())) == 1
        base = obj.frictions[cells]
        if float(base[0]) == 0.0:
            assert float(frictions[cells].abs().max()) == 0.0
        else:
            f = float(frictions[cells][0] / base[0])
            assert FRICTION_FACTOR[0] <= f <= FRICTION_FACTOR[1]
    if name == "ranch":  # the floating shaft keeps no friction
        assert float(frictions[torch.as_tensor(regions == "m")].abs().max()) == 0.0


def test_draw_truth_factors_spread_over_seeds():
    """Over many seeds the factors fill their ranges (not one constant, not out of range)."""
    obj = rectangle(1, 2, 0.02, 0.01, 0.4)
    factors = np.array([[float(m[0] / 0.01), float(f[0] / 0.4)]
                        for m, f in (draw_truth(obj, seed) for seed in range(200))])
    assert factors[:, 0].min() >= MASS_FACTOR[0] and factors[:, 0].max() <= MASS_FACTOR[1]
    assert factors[:, 1].min() >= FRICTION_FACTOR[0] and factors[:, 1].max() <= FRICTION_FACTOR[1]
    # log-uniform masses: about half below 1 (the geometric centre of 0.5 and 2).
    assert 0.35 < float(np.mean(factors[:, 0] < 1.0)) < 0.65
    assert factors[:, 0].max() > 1.8 and factors[:, 0].min() < 0.55
    assert factors[:, 1].max() > 1.2 and factors[:, 1].min() < 0.8


def test_draw_truth_rejects():
    obj = rectangle(1, 2, 0.02, 0.01, 0.4)
    with pytest.raises(ValueError, match=r"^seed\b"):
        draw_truth(obj, -1)
    with pytest.raises(ValueError, match=r"^seed\b"):
        draw_truth(obj, None)
    with pytest.raises(TypeError, match=r"^obj\b"):
        draw_truth("ranch", 0)


# --- observe, in pybullet (tiny objects) ----------------------------------------------------------


def test_observe_reads_poses_and_twists_of_the_pybullet_run(box, monkeypatch):
    monkeypatch.setenv("PHYSID_CACHE", "off")
    pushes = random_pushes(box, 2, seed=0, duration=0.15)
    data = observe(box, pushes, box.masses, box.frictions)
    assert isinstance(data, Observations) and len(data) == 2
    torch.testing.assert_close(data.times, torch.tensor([0.0, 0.05, 0.1, 0.15], dtype=F64))
    assert data.positions.shape == (2, 4, len(box), 2)
    assert data.poses.shape == data.twists.shape == (2, 4, 3)
    torch.testing.assert_close(data.poses, fit_poses(box, data.positions))
    assert float(data.twists[:, 0].abs().max()) == 0.0
    # At rest at the start, on the world frame (to pybullet's settling).
    assert float((data.positions[:, 0] - box.centres).norm(dim=-1).max()) < 1e-5
    # The twists are backward differences over one pybullet step: check against a direct run.
    times = [0.1 - BULLET_DT, 0.1, 0.15 - BULLET_DT, 0.15]
    direct = simulate_bullet(box, pushes, times, box.masses, box.frictions).positions
    torch.testing.assert_close(direct[:, [1, 3]], data.positions[:, 2:], atol=1e-12, rtol=0)
    poses = fit_poses(box, direct)
    turn = poses[:, 1::2, 0] - poses[:, 0::2, 0]
    torch.testing.assert_close(data.twists[:, 2:, 0], turn / BULLET_DT, atol=1e-8, rtol=0)
    torch.testing.assert_close(data.twists[:, 2:, 1:],
                               (poses[:, 1::2, 1:] - poses[:, 0::2, 1:]) / BULLET_DT,
                               atol=1e-8, rtol=0)
    # The pushes move the box by now, and the flags are booleans per push.
    assert float(data.twists[:, -1].abs().max()) > 0.05
    for flags in (data.slid, data.lost_contact, data.changed_side, data.assumptions_hold):
        assert flags.shape == (2,) and flags.dtype == torch.bool
    # subset keeps the pushes' rows.
    part = data.subset([1])
    assert part.pushes == (pushes[1],)
    torch.testing.assert_close(part.twists, data.twists[1:])
    torch.testing.assert_close(part.times, data.times)
    for bad in ([], [2], [-1]):
        with pytest.raises(ValueError, match=r"^indices\b"):
            data.subset(bad)


def test_observe_twists_follow_a_turning_push(box, monkeypatch):
    """The yaw rate is read with its sign across ±π (the wrap of the backward difference)."""
    monkeypatch.setenv("PHYSID_CACHE", "off")
    pushes = random_pushes(box, 3, seed=4, duration=0.2)
    data = observe(box, pushes, box.masses, box.frictions)
    # Compare to the mean yaw rate over the last observation interval: same sign, same order.
    rate = (data.poses[:, -1, 0] - data.poses[:, -2, 0]) / OBSERVATION_PERIOD
    turning = rate.abs() > 0.5
    assert bool(turning.any())
    assert bool((torch.sign(data.twists[turning, -1, 0]) == torch.sign(rate[turning])).all())


@pytest.fixture
def no_bullet(monkeypatch):
    """Fail if pybullet is reached: the checks come first."""
    monkeypatch.setenv("PHYSID_CACHE", "off")

    def fail(*args, **kwargs):
        raise AssertionError("simulate_bullet was called")

    monkeypatch.setattr(observations, "simulate_bullet", fail)


def raises(error, argument, call, /, *args, **kwargs):
    with pytest.raises(error, match=rf"^{argument}\b"):
        call(*args, **kwargs)


def test_observe_rejects_before_simulating(box, no_bullet):
    pushes = random_pushes(box, 2, seed=0, duration=0.1)
    k = len(box)
    masses, frictions = box.masses, box.frictions
    raises(ValueError, "pushes", observe, box, [], masses, frictions)
    raises(ValueError, "pushes", observe, box, [pushes[0], "push"], masses, frictions)
    mixed = [pushes[0], random_pushes(box, 1, seed=0, duration=0.15)[0]]
    raises(ValueError, "pushes", observe, box, mixed, masses, frictions)
    raises(ValueError, "pushes", observe, box, random_pushes(box, 1, seed=0, duration=0.07),
           masses, frictions)
    raises(ValueError, "masses", observe, box, pushes, torch.ones(k - 1, dtype=F64), frictions)
    raises(ValueError, "masses", observe, box, pushes, torch.full((k,), math.nan, dtype=F64),
           frictions)
    raises(ValueError, "masses", observe, box, pushes, torch.zeros(k, dtype=F64), frictions)
    raises(TypeError, "masses", observe, box, pushes, torch.ones(k), frictions)
    raises(ValueError, "frictions", observe, box, pushes, masses, -torch.ones(k, dtype=F64))
    raises(ValueError, "frictions", observe, box, pushes, masses,
           torch.full((k,), math.inf, dtype=F64))
    raises(TypeError, "obj", observe, "box", pushes, masses, frictions)
    raises(ValueError, "setup", observe, box, pushes, masses, frictions, setup="glass")
    raises(ValueError, "setup", observe, box, pushes, masses, frictions, world="rigid",
           setup="authors")


@pytest.mark.parametrize(
    ("kwargs", "name", "error"),
    [
        ({"name": "spanner"}, "name", ValueError),
        ({"name": None}, "name", ValueError),
        ({"index": -1}, "index", ValueError),
        ({"index": 1.0}, "index", TypeError),
        ({"n_train": 0}, "n_train", ValueError),
        ({"n_test": -1}, "n_test", ValueError),
        ({"duration": 0.0}, "duration", ValueError),
        ({"duration": -0.5}, "duration", ValueError),
        ({"duration": math.nan}, "duration", ValueError),
        ({"seed": None}, "seed", ValueError),
        ({"seed": -3}, "seed", ValueError),
    ],
)
def test_make_experiment_rejects_before_simulating(no_bullet, kwargs, name, error):
    args = {"name": "crimp", "index": 0, "n_train": 1, "n_test": 1, "duration": 0.1}
    raises(error, name, make_experiment, **{**args, **kwargs})


def test_make_experiment_is_reproducible(monkeypatch):
    """Crimp, one training and one test push of 0.1 s: the same experiment twice, and another
    index draws another map and other pushes."""
    monkeypatch.setenv("PHYSID_CACHE", "off")
    first = make_experiment("crimp", 0, 1, 1, 0.1)
    assert len(first.train) == len(first.test) == 1
    assert first.train.pushes != first.test.pushes
    assert first.name == "crimp" and first.index == 0
    base = load_object("crimp")
    factor = first.obj.masses / base.masses
    assert MASS_FACTOR[0] <= float(factor.min()) and float(factor.max()) <= MASS_FACTOR[1]
    assert not torch.equal(first.obj.masses, base.masses)
    second = make_experiment("crimp", 0, 1, 1, 0.1)
    torch.testing.assert_close(second.train.positions, first.train.positions, atol=0, rtol=0)
    torch.testing.assert_close(second.obj.masses, first.obj.masses, atol=0, rtol=0)
    assert second.test.pushes == first.test.pushes
    other = make_experiment("crimp", 1, 1, 1, 0.1)
    assert not torch.equal(other.obj.masses, first.obj.masses)
    assert other.train.pushes != first.train.pushes


def test_observe_runs_hit_the_disk_cache(box, tmp_path, monkeypatch):
    """The second identical observation is read from the cache, without pybullet."""
    monkeypatch.setenv("PHYSID_CACHE", str(tmp_path))
    pushes = random_pushes(box, 1, seed=0, duration=0.1)
    first = observe(box, pushes, box.masses, box.frictions)
    monkeypatch.setattr(observations, "simulate_bullet",
                        lambda *a, **k: pytest.fail("simulate_bullet ran: the cache missed"))
    same = rectangle(2, 3, 0.02, 0.05, 0.4)  # an equal object, built again
    again = observe(same, pushes, same.masses.clone(), same.frictions.clone())
    torch.testing.assert_close(again.positions, first.positions, atol=0, rtol=0)
