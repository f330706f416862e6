"""Trajectory likelihoods: shooting, combination, normalisation, priors, bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from physid.core.target import Limits
from physid.inference.chapters.inference_synthetic import (
    length_limits,
    point_mass_model,
    simulate_references,
)
from physid.inference.likelihood import TrajectoryLikelihood, check_trajectories

TRUE = np.array([[1.5, 2.0], [2.5, 1.2]])


@pytest.fixture(scope="module")
def references():
    return simulate_references(point_mass_model(compiled=False), TRUE, 40)


def make(references, **options):
    return TrajectoryLikelihood(
        point_mass_model(compiled=False), references, length_limits(), **options
    )


def test_multiple_shooting_on_the_data_equals_single_shooting_at_the_truth(references):
    ss = make(references[:1])
    ms = make(references[:1], shooting_windows=4)
    assert ms.dim == 2 + 4 * 3 and ms.n_params == 2
    x = ms.on_reference(ms.limits.normalise(torch.tensor(TRUE[:1])).expand(3, 2))
    torch.testing.assert_close(ms.log_likelihood(x), ss.log_likelihood(x[:, :2]))
    torch.testing.assert_close(
        ms.constraints(x), torch.zeros(3, 12, dtype=torch.float64), atol=1e-9, rtol=0
    )
    expected = -0.5 * 40 * 4 * math.log(2 * math.pi * 0.1**2)
    assert ss.log_likelihood(x[:1, :2]).item() == pytest.approx(expected)


def test_squared_defects_and_the_defect_likelihood(references):
    ms = make(references[:1], shooting_windows=4, defect_form="squared")
    x = ms.initial(2)
    x[:, 2:] += 0.05
    g = ms.constraints(x)
    assert g.shape == (2, 3) and torch.all(g > 0)
    soft = make(references[:1], shooting_windows=4, defects="likelihood")
    assert soft.constraints(x).shape == (2, 0)
    drop = soft.log_likelihood(x) - soft.log_density(x)
    torch.testing.assert_close(drop, 0.5 * g.sum(-1) * (0.1**2 / soft.sigma_def**2))


def test_sum_is_a_mixture_and_product_a_sum_of_logs(references):
    x = torch.rand(5, 2, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    total_target = make(references, combine="sum")
    scale = (total_target.state_mean, total_target.state_std)
    each = torch.stack(
        [make(references[i : i + 1], state_scale=scale).log_likelihood(x) for i in range(2)], -1
    )
    total = total_target.log_likelihood(x)
    torch.testing.assert_close(total, torch.logsumexp(each, -1) - math.log(2))
    torch.testing.assert_close(make(references, combine="product").log_likelihood(x), each.sum(-1))


def test_states_are_standardised_and_the_prior_is_the_box(references):
    target = make(references)
    z = target.standardise(references.reshape(-1, 4))
    torch.testing.assert_close(z.mean(0), torch.zeros(4, dtype=torch.float64), atol=1e-12, rtol=0)
    torch.testing.assert_close(z.std(0), torch.ones(4, dtype=torch.float64))
    x = torch.tensor([[0.2, 0.3], [1.2, 0.3], [0.5, -0.1]], dtype=torch.float64)
    assert target.log_prior(x).tolist() == [0.0, -math.inf, -math.inf]
    torch.testing.assert_close(
        target.limit_violation(x)[1], torch.tensor([-0.2, 0.0], dtype=torch.float64)
    )
    assert target.project(x).min() >= 0 and target.project(x).max() <= 1


def test_gradient_of_the_likelihood_matches_finite_differences(references):
    target = make(references, shooting_windows=2)
    x = target.initial(2).requires_grad_(True)
    assert torch.autograd.gradcheck(lambda v: target.log_likelihood(v) / 1e3, (x,), atol=1e-5)


def test_start_shooting_states_follow_each_particles_own_rollout(references):
    ms = make(references, shooting_windows=4, shooting_spread=0.0)
    x = ms.initial(5, seed=2)
    # With no spread, each particle's windows join up: its defects vanish.
    torch.testing.assert_close(
        ms.constraints(x), torch.zeros(5, 12, dtype=torch.float64), atol=1e-9, rtol=0
    )
    noisy = make(references, shooting_windows=4, shooting_spread=0.1).initial(5, seed=2)
    spread = (noisy - x)[:, 2:]
    assert 0.03 < spread.std().item() < 0.3
    torch.testing.assert_close(noisy[:, :2], x[:, :2])


def test_sobol_start_is_seeded_and_inside_the_limits():
    limits = length_limits()
    a, b, c = limits.sobol(20, seed=0), limits.sobol(20, seed=0), limits.sobol(20, seed=1)
    np.testing.assert_array_equal(a, b)
    assert not np.allclose(a, c)
    assert limits.contains(a).all() and len(np.unique(a, axis=0)) == 20
    torch.testing.assert_close(
        limits.normalise(limits.denormalise(torch.tensor(a))), torch.tensor(a)
    )


def test_bad_limits():
    with pytest.raises(ValueError, match="min must be < max"):
        Limits(("l1", "l2"), np.array([0.5, 5.0]), np.array([5.0, 5.0]))
    with pytest.raises(ValueError, match="one entry per parameter"):
        Limits(("l1",), np.array([0.5, 0.1]), np.array([5.0, 5.0]))
    with pytest.raises(ValueError, match="limits name"):
        TrajectoryLikelihood(
            point_mass_model(), torch.zeros(1, 5, 4), Limits(("l2", "l1"), np.zeros(2), np.ones(2))
        )


def test_bad_trajectories(references):
    bad = references.clone()
    bad[0, 3, 1] = math.nan
    with pytest.raises(ValueError, match="trajectories contain NaN"):
        make(bad)
    with pytest.raises(ValueError, match="same length"):
        check_trajectories([references[0].numpy(), references[1, :-3].numpy()], 4)
    with pytest.raises(ValueError, match="trajectories must have shape"):
        check_trajectories(np.zeros((2, 5, 3)), 4)
    with pytest.raises(ValueError, match="shooting_windows"):
        make(references, shooting_windows=3)
    other = references.clone()
    other[1, 0, 0] = 0.3
    with pytest.raises(ValueError, match="share one start state"):
        make(other, shooting_windows=2)
    with pytest.raises(ValueError, match="combine"):
        make(references, combine="mean")
    with pytest.raises(ValueError, match="sigma_obs"):
        make(references, sigma_obs=0)


def test_start_particles_outside_the_limits_are_refused(references):
    from physid.inference.svgd import SVGD

    target = make(references)
    with pytest.raises(ValueError, match="x0: start particles must lie inside"):
        SVGD(target, n_particles=2, x0=torch.tensor([[0.5, 0.5], [1.5, 0.5]], dtype=torch.float64))
    with pytest.raises(ValueError, match="x0 must have shape"):
        SVGD(target, n_particles=2, x0=torch.zeros(2, 3, dtype=torch.float64))
    with pytest.raises(ValueError, match="x0 must have 2 rows"):
        SVGD(target, n_particles=2, x0=np.full((1, 2), 0.5))


def test_defect_rms_measures_how_far_the_windows_are_from_joining(references):
    ms = make(references[:1], shooting_windows=4, sigma_def=0.1)
    truth = ms.limits.normalise(torch.tensor(TRUE[:1])).expand(2, 2)
    x = ms.on_reference(truth)
    torch.testing.assert_close(ms.defect_rms(x), torch.zeros(2, dtype=torch.float64), atol=1e-7,
                               rtol=0)
    moved = x.clone()
    moved[:, 2:] += 0.05  # every shooting state off by half a σ_def
    assert ms.defect_rms(moved).min().item() > 0.3
    outside = moved.clone()
    outside[:, 0] = 1.5  # outside the limits: measured all the same
    assert torch.isfinite(ms.defect_rms(outside)).all()
    single = make(references[:1]).defect_rms(x[:, :2])
    assert torch.equal(single, torch.zeros(2, dtype=torch.float64))


def test_recorded_start_puts_the_shooting_states_near_the_record(references):
    ms = make(references[:1], shooting_windows=4, shooting_start="recorded", shooting_spread=0.0)
    z = torch.full((3, 2), 0.5, dtype=torch.float64)
    torch.testing.assert_close(ms.auxiliary(z), ms.on_reference(z)[:, 2:])
    with pytest.raises(ValueError, match="shooting_start"):
        make(references[:1], shooting_windows=4, shooting_start="middle")
