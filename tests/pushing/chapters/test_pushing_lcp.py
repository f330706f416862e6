"""The Part I chapter's drivers and explorer helpers."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from physid.pushing import (
    Push,
    contact_face,
    load_object,
    random_pushes,
    rectangle,
    simulate,
    simulate_bullet,
)
from physid.pushing.chapters import pushing_lcp as ex
from physid.pushing.chapters.pushing_lcp_figures import boundary_push, draw_push, plot_push
from physid.pushing.finger import FINGER, MODE_NAMES, ContactEvents, Finger
from physid.pushing.pushes import check_reachable, finger_start

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
        (gap,) = ex.bullet_gap(("crimp",), 1, ex.SAMPLE_PERIOD, seed=3, models=("4 directions",))
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(threads)
    assert list(gap.errors) == ["4 directions"]
    assert gap.errors["4 directions"].shape == (1, 2)
    assert np.isfinite(gap.errors["4 directions"]).all()


def test_friction_models_are_the_paper_s_d_sixteen_and_the_isotropic_polygon():
    assert list(ex.FRICTION_MODELS.values()) == [4, 16, ex.ISOTROPIC_DIRS]
    assert ex.ISOTROPIC_DIRS == 64
    assert "isotropic" in list(ex.FRICTION_MODELS)[-1]
    assert 1 / math.cos(math.pi / ex.ISOTROPIC_DIRS) < 1.0013


@pytest.fixture(scope="module")
def crimp_gap():
    with torch.no_grad():
        (gap,) = ex.bullet_gap(("crimp",), 2, 0.3, seed=1)
    return gap


def test_bullet_gap_records_errors_events_and_modes_per_model(crimp_gap):
    gap = crimp_gap
    models = list(ex.FRICTION_MODELS)
    assert list(gap.errors) == models == list(gap.events) == list(gap.modes)
    steps = round(0.3 / 0.01)
    for model in models:
        assert gap.errors[model].shape == (2, len(gap.times))
        assert gap.final(model).shape == (2,)
        # the error starts at zero: both simulators start from the drawing
        assert np.abs(gap.errors[model][:, 0]).max() < 2e-3
        assert gap.modes[model].sum() == 2 * steps
        assert gap.modes[model].shape == (len(MODE_NAMES),)
        assert gap.events[model].touched.all()
        assert gap.min_normal_impulse[model] >= 0.0
        assert gap.seconds[model] > 0
    # before the finger arrives (one radius at 0.2 m/s) the steps are free
    assert gap.modes["4 directions"][MODE_NAMES.index("free")] >= 2 * 7
    assert gap.bullet_events.touched.all()
    assert set(ex.event_counts(gap.bullet_events)) == {
        "touched", "slid", "lost contact", "changed side", "assumptions hold"
    }
    agree = ex.events_agree(gap.bullet_events, gap.events["4 directions"])
    assert set(agree) == set(ex.EVENT_NAMES.values())
    assert all(0 <= count <= 2 for count in agree.values())


def test_event_counts_and_agreement_count_pushes():
    touched = np.array([True, True, True, False])
    events = ContactEvents(
        touched=touched, slid=np.array([True, False, False, False]),
        lost_contact=np.array([False, True, False, False]),
        changed_side=np.array([True, False, False, False]), slip=np.zeros(4),
        min_normal_impulse=np.zeros(4), tolerance=2e-3,
    )
    counts = ex.event_counts(events)
    assert counts == {"touched": 3, "slid": 1, "lost contact": 1, "changed side": 1,
                      "assumptions hold": 1}
    assert ex.events_agree(events, events) == {"slid": 4, "lost contact": 4, "changed side": 4}
    other = ContactEvents(
        touched=touched, slid=np.zeros(4, bool), lost_contact=np.zeros(4, bool),
        changed_side=np.zeros(4, bool), slip=np.zeros(4), min_normal_impulse=np.zeros(4),
        tolerance=2e-3,
    )
    assert ex.events_agree(events, other) == {"slid": 3, "lost contact": 3, "changed side": 3}
    with pytest.raises(ValueError, match="same pushes"):
        ex.events_agree(events, ContactEvents(
            touched=touched[:2], slid=np.zeros(2, bool), lost_contact=np.zeros(2, bool),
            changed_side=np.zeros(2, bool), slip=np.zeros(2), min_normal_impulse=np.zeros(2),
            tolerance=2e-3,
        ))


def test_formulation_gap_compares_positions_impulses_and_events():
    hammer = load_object("hammer")
    pushes = random_pushes(hammer, 1, seed=0, duration=0.2)
    gap = ex.formulation_gap(hammer, pushes)
    assert gap.max_difference < 1e-6 and gap.max_stretch < 1e-6
    assert gap.max_travel > 1e-3  # the finger reached the hammer and moved it
    assert set(gap.min_normal_impulse) == {"lcp", "rigid"}
    assert min(gap.min_normal_impulse.values()) >= 0.0
    assert gap.modes.sum() == 20 and gap.modes[MODE_NAMES.index("coupled")] == 0
    assert gap.events["rigid"].touched.all() and gap.events["lcp"].touched.all()
    assert gap.events_agree["slid"] == 1


def test_mode_counts_need_an_engine_record():
    crimp = load_object("crimp")
    (push,) = random_pushes(crimp, 1, seed=0, duration=0.05)
    record = simulate_bullet(crimp, [push], [0.0, 0.05]).contact
    with pytest.raises(ValueError, match="record"):
        ex.mode_counts(record)


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


def test_explorer_draws_the_reason_of_an_unreachable_push():
    import matplotlib.pyplot as plt

    ranch = load_object("ranch")
    unreachable = None
    for position in np.linspace(0, 0.99, 12):
        try:
            check_reachable(ranch, boundary_push(ranch, position, 0.0))
        except ValueError:
            unreachable = position
            break
    assert unreachable is not None, "every explorer push of the wrench is reachable"
    fig = draw_push("ranch", unreachable, 0.0)
    try:
        assert "No push" in fig.axes[0].get_title()
    finally:
        plt.close(fig)


def test_plot_push_draws_the_finger_at_its_start_and_end():
    import matplotlib.pyplot as plt
    from matplotlib.patches import Circle

    box = rectangle(2, 3, 0.02, 0.01, 0.4, name="box")
    push = Push((0.0, -0.02), (0.0, 1.0), duration=0.2)
    fig = plot_push(box, push, finger=Finger(friction=0.3))
    try:
        discs = [p for p in fig.axes[0].patches if isinstance(p, Circle)]
        assert len(discs) == 2
        start = finger_start(push)
        np.testing.assert_allclose(discs[0].center, start)
        np.testing.assert_allclose(discs[1].center, start + np.array([0.0, 0.2 * 0.2]))
        assert discs[0].radius == FINGER.radius
        assert "finger friction 0.30" in fig.axes[0].get_title()
    finally:
        plt.close(fig)


def test_bullet_gap_rejects_no_pushes():
    with pytest.raises(ValueError, match="n_pushes"):
        ex.bullet_gap(("hammer",), 0, 0.5, seed=0)
    with pytest.raises(ValueError, match="models"):
        ex.bullet_gap(("hammer",), 1, 0.5, seed=0, models=("disc",))
    with pytest.raises(ValueError, match="models"):
        ex.bullet_gap(("hammer",), 1, 0.5, seed=0, models=())
    with pytest.raises(TypeError, match="models"):
        ex.bullet_gap(("hammer",), 1, 0.5, seed=0, models="4 directions")
    with pytest.raises(ValueError, match="SCALE"):
        ex.SIZES["huge"]
