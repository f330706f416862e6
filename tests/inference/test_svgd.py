"""SVGD and CSVGD on closed-form targets: moments, mode coverage, the limits."""

from __future__ import annotations

import pytest
import torch

from physid.inference.likelihood import GaussianTarget, MixtureTarget
from physid.inference.svgd import CSVGD, SVGD, RBFKernel, median_bandwidth, svgd_direction

MEAN = [0.45, 0.55]
COV = [[0.010, 0.006], [0.006, 0.020]]


@pytest.mark.parametrize("cls", [SVGD, CSVGD])
def test_gaussian_moments(cls):
    target = GaussianTarget(MEAN, COV)
    estimator = cls(target, n_particles=100, stepsize=0.01)
    estimator.run(1000, progress=False)
    x = estimator.particles
    torch.testing.assert_close(
        x.mean(0), torch.tensor(MEAN, dtype=torch.float64), atol=0.01, rtol=0
    )
    cov = torch.cov(x.T)
    expected = torch.tensor(COV, dtype=torch.float64)
    assert torch.all((cov.diagonal() / expected.diagonal() - 1).abs() < 0.25)
    corr = cov[0, 1] / cov.diagonal().prod().sqrt()
    expected_corr = expected[0, 1] / expected.diagonal().prod().sqrt()
    assert abs(corr - expected_corr) < 0.1


@pytest.mark.parametrize("cls", [SVGD, CSVGD])
def test_mixture_covers_both_modes(cls):
    target = MixtureTarget([[0.3, 0.3], [0.7, 0.7]], std=0.06)
    estimator = cls(target, n_particles=100, stepsize=0.01)
    estimator.run(800, progress=False)
    x = estimator.particles
    nearest = ((x[:, None] - target.means) ** 2).sum(-1).argmin(1)
    share = nearest.double().mean().item()
    assert 0.3 < share < 0.7
    for k in range(2):
        spread = x[nearest == k].std(0)
        assert torch.all((spread / 0.06 - 1).abs() < 0.35)


def test_csvgd_keeps_particles_in_the_limits_where_svgd_would_leave():
    """The density's mass lies beyond the upper limit of z1: CSVGD's limit multipliers hold
    the particles at the limit, within a small tolerance."""
    target = GaussianTarget([1.1, 0.5], [[0.01, 0.0], [0.0, 0.01]])
    estimator = CSVGD(target, n_particles=50, stepsize=0.01, penalty=10.0, multiplier_stepsize=1.0)
    estimator.run(600, progress=False)
    x = estimator.particles
    assert x[:, 0].max() < 1.02
    assert x[:, 0].mean() > 0.9
    assert (estimator.multipliers[:, 0] < 0).any()  # g_lim = clamp(z) - z < 0 above the box


def test_svgd_projects_into_the_limits():
    target = GaussianTarget([1.1, 0.5], [[0.01, 0.0], [0.0, 0.01]])
    estimator = SVGD(target, n_particles=20, stepsize=0.02)
    estimator.run(100, progress=False)
    assert estimator.particles[:, 0].max() <= 1.0


def test_kernel_and_direction():
    x = torch.tensor([[0.0, 0.0], [1.0, 0.0], [0.0, 2.0]], dtype=torch.float64)
    k, h = RBFKernel().gram(x)
    assert h == pytest.approx(median_bandwidth(x)) and h == pytest.approx(
        4 / torch.log(torch.tensor(4.0)).item()
    )
    torch.testing.assert_close(k.diagonal(), torch.ones(3, dtype=torch.float64))
    # With zero scores the direction is pure repulsion: particles move apart.
    phi = svgd_direction(x, torch.zeros_like(x))
    assert phi[0] @ (x[0] - x[1:].mean(0)) > 0
    assert median_bandwidth(x[:1]) == 1.0
