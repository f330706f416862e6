"""The chapter's drivers on a tiny run (the chapter itself runs them at every scale)."""

import pytest

from physid.contact import events
from physid.contact.chapters import contact_model as ex
from physid.contact.chapters import contact_model_gallery as sims
from physid.contact.chapters import contact_model_timing as timing
from physid.core.scales import SCALES

#: The contact library computes in float64; tensors made here without a dtype follow.
pytestmark = pytest.mark.usefixtures("float64_default")


@pytest.fixture(scope="module")
def runs():
    return ex.run_tasks((6, 1, 1), seed=0, names=("CP3", "Gyro"), progress=False)


def test_sizes_cover_every_scale():
    for scale in SCALES:
        assert ex.SIZES[scale].data[0] >= 1
    assert ex.SIZES["default"].data == (800, 100, 100)
    with pytest.raises(ValueError, match="SCALE must be one of"):
        ex.SIZES["huge"]


def test_runs_record_their_contact_events(runs):
    for run in runs.values():
        assert run.events and run.seconds > 0
        total = sum(b.space.batch for b in events.stack_events(run.events))
        assert total == sum(e.space.batch for e in run.events)
    assert sum(b.space.batch for b in events.stack_events(runs["CP3"].events, limit=5)) == 5


def test_poisson_never_gains_and_newton_does(runs):
    study = ex.restitution_study(runs["CP3"], mu=0.5, cor=1.0)
    assert len(study.poisson) > 0
    assert study.max_relative_gain("poisson") <= 1e-9
    assert study.gain_fraction("newton") > 0


def test_contact_inverse_inertia_is_psd_and_singular_for_the_gyroscope(runs):
    rows = {r["task"]: r for r in ex.psd_rows(runs)}
    assert rows["CP3"]["min λ_min/λ_max"] > 0
    assert rows["Gyro"]["singular (λ_min/λ_max < 1e-10)"] == 1.0
    assert rows["Gyro"]["min λ_min/λ_max"] > -1e-12


def test_cmr_removes_the_ambiguity_of_the_gyroscope(runs):
    out = ex.uniqueness_study(runs["Gyro"])
    assert out["rank-deficient A"] == 1.0
    if out["non-unique"]:
        assert out["CMr final velocity"] < 1e-6


def test_penetration_compensation_bounds_the_resting_penetration():
    study = sims.penetration_study()
    assert study["with"][-1] < 0.25 * study["without"][-1]
    assert study["with"][-1] < 1.5 * study["equilibrium"]


def test_timing_is_interleaved_with_ratios_per_repeat(runs):
    timings = timing.time_resolutions(runs["CP3"], (1, 2), repeat=5, seed=0, window=0.01)
    assert [t.batch for t in timings] == [1, 2]
    for t in timings:
        assert set(t.seconds) == set(timing.CONTENDERS)
        assert all(len(s.samples) == 5 for s in t.seconds.values())
        assert len(t.speedup("cvxpylayers, per sample").samples) == 5
    row = timing.timing_rows(timings)[-1]
    assert row["batch"] == 2 and row["× per sample, median"] > 0


def test_energy_budget_splits_impulses_from_the_flight():
    rows = sims.energy_budget(cor=1.0, mu=0.0, refinements=2)
    assert len(rows) == 4
    for row in rows:
        total = row["at impulses (J)"] + row["between impulses (J)"]
        assert total == pytest.approx(row["total change (J)"])
    # The RK4 drift between impulses shrinks with the step; the elastic impulses barely act.
    assert abs(rows[2]["between impulses (J)"]) < abs(rows[0]["between impulses (J)"]) / 4
    assert abs(rows[0]["at impulses (J)"]) < 0.1 * abs(rows[0]["between impulses (J)"])


def test_the_authors_projection_of_the_target_differs_only_under_constraints(runs):
    """The chapter's table: both tasks here have equality constraints; a constrained run's
    target projected as the authors' code does changes the velocity after some impulse, and
    the rows count every recorded contact."""
    rows = {r["task"]: r for r in ex.target_projection_rows(runs, names=("CP3", "Gyro"))}
    for name, row in rows.items():
        assert row["equality constraints"] == "yes"
        assert row["contacts"] == sum(
            b.space.batch * b.space.n_contacts for b in events.stack_events(runs[name].events)
        )
        assert 0 <= row["median difference (m/s)"] <= row["largest difference (m/s)"]
    assert rows["CP3"]["largest difference (m/s)"] > 1e-6
