"""The Part I chapter's drivers and explorer helpers."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from physid.pushing import contact_face, load_object, simulate
from physid.pushing import experiments as ex
from physid.pushing.figures import boundary_push

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def test_sample_times_lie_on_both_grids():
    times = ex.sample_times(1.0)
    assert len(times) == 21 and times[-1] == pytest.approx(1.0)
    for step in (0.01, 1 / 240):
        assert np.allclose(np.round(times / step) * step, times)
    with pytest.raises(ValueError, match="duration must be a multiple"):
        ex.sample_times(0.33)


def test_sliding_check_shows_the_square_of_four_directions():
    check = ex.sliding_check(v0=0.5, mu=0.5, dt=1e-3)
    assert check.distances[4][0] / check.coulomb == pytest.approx(1.0, abs=0.01)
    assert check.distances[4].max() / check.coulomb == pytest.approx(math.sqrt(2), rel=0.01)
    assert check.distances[16].max() / check.coulomb < 1.03
    assert check.worst_deviation(4) == pytest.approx(math.sqrt(2) - 1, abs=0.01)
    assert check.worst_deviation(16) < 0.02
    np.testing.assert_allclose(np.degrees(check.angles), np.linspace(0, 45, 9))


def test_bullet_gap_restores_the_callers_thread_count():
    threads = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        (gap,) = ex.bullet_gap(("crimp",), 1, ex.SAMPLE_PERIOD, seed=3, dirs=(4,))
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(threads)
    assert gap.errors[4].shape == (1, 2) and np.isfinite(gap.errors[4]).all()


def test_free_slides_batch_over_initial_velocities():
    cell = load_object("book").with_params()
    velocity = torch.tensor([[0.0, 0.3, 0.0], [0.0, 0.0, 0.3]], dtype=torch.float64)
    traj = simulate(cell, None, duration=0.2, initial_velocity=velocity, progress=False)
    assert traj.positions.shape[0] == 2
    moved = (traj.final - traj.positions[:, 0]).mean(dim=1)
    assert moved[0, 0] > 0 and abs(float(moved[0, 1])) < 1e-9
    assert moved[1, 1] > 0 and abs(float(moved[1, 0])) < 1e-9


def test_centred_push_translates_and_offset_push_turns():
    turns = ex.push_turns(offset=0.04, duration=0.5)
    assert np.abs(turns.yaw[0]).max() < 1e-9
    assert turns.yaw[1, -1] > 0.05


def test_boundary_pushes_point_into_the_object():
    hammer = load_object("hammer")
    for position in np.linspace(0, 0.99, 7):
        for angle in (-0.3, 0.0, 0.3):
            contact_face(hammer, boundary_push(hammer, position, angle))


def test_bullet_gap_rejects_no_pushes():
    with pytest.raises(ValueError, match="n_pushes"):
        ex.bullet_gap(("hammer",), 0, 0.5, seed=0)
    with pytest.raises(ValueError, match="SCALE"):
        ex.sizes("huge")
