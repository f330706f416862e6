"""The chapter's drivers on a tiny run (the chapter itself runs them at every scale)."""

import pytest
import torch

from physid.contact import experiments as ex
from physid.scales import SCALES

torch.set_default_dtype(torch.float64)


@pytest.fixture(scope="module")
def runs():
    return ex.run_tasks((6, 1, 1), seed=0, names=("CP3", "Gyro"), progress=False)


def test_sizes_cover_every_scale():
    for scale in SCALES:
        assert ex.sizes(scale).data[0] >= 1
    assert ex.sizes("default").data == (800, 100, 100)
    with pytest.raises(ValueError, match="SCALE must be one of"):
        ex.sizes("huge")


def test_runs_record_their_contact_events(runs):
    for run in runs.values():
        assert run.events and run.seconds > 0
        total = sum(b.space.batch for b in ex.stack_events(run.events))
        assert total == sum(e.space.batch for e in run.events)
    assert sum(b.space.batch for b in ex.stack_events(runs["CP3"].events, limit=5)) == 5


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
    study = ex.penetration_study()
    assert study["with"][-1] < 0.25 * study["without"][-1]
    assert study["with"][-1] < 1.5 * study["equilibrium"]
