"""The kNN KL estimator against the closed form, the MMD, and their bad input."""

from __future__ import annotations

import numpy as np
import pytest

from physid.inference.metrics import energy_score, gaussian_kl, knn_kl, mmd


def test_knn_kl_matches_the_gaussian_closed_form_in_both_directions():
    rng = np.random.default_rng(0)
    mp, cp = np.zeros(2), np.array([[1.0, 0.5], [0.5, 1.0]])
    mq, cq = np.array([0.5, -0.3]), np.array([[2.0, 0.0], [0.0, 0.5]])
    x = rng.multivariate_normal(mp, cp, 4000)
    y = rng.multivariate_normal(mq, cq, 4000)
    assert knn_kl(x, y) == pytest.approx(gaussian_kl(mp, cp, mq, cq), abs=0.08)
    assert knn_kl(y, x) == pytest.approx(gaussian_kl(mq, cq, mp, cp), abs=0.12)


def test_knn_kl_of_a_distribution_with_itself_is_near_zero_and_flattens_trajectories():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(2000, 3))
    y = rng.normal(size=(2000, 3))
    assert abs(knn_kl(x, y)) < 0.05
    trajectories = rng.normal(size=(50, 10, 4))
    assert np.isfinite(knn_kl(trajectories, trajectories + 0.1))


def test_closed_form_is_zero_for_equal_gaussians():
    assert gaussian_kl([1, 2], np.eye(2), [1, 2], np.eye(2)) == pytest.approx(0.0)


def test_knn_kl_needs_k_plus_one_samples():
    rng = np.random.default_rng(2)
    with pytest.raises(ValueError, match="p must hold at least"):
        knn_kl(rng.normal(size=(3, 2)), rng.normal(size=(10, 2)))
    with pytest.raises(ValueError, match="q must hold at least"):
        knn_kl(rng.normal(size=(10, 2)), rng.normal(size=(3, 2)))
    with pytest.raises(ValueError, match="dimension"):
        knn_kl(rng.normal(size=(10, 2)), rng.normal(size=(10, 3)))
    with pytest.raises(ValueError, match="p must be finite"):
        knn_kl(np.full((10, 2), np.nan), rng.normal(size=(10, 2)))
    with pytest.raises(ValueError, match="k must"):
        knn_kl(rng.normal(size=(10, 2)), rng.normal(size=(10, 2)), k=0)


def test_collapsed_set_gives_a_large_finite_divergence():
    rng = np.random.default_rng(3)
    truth = rng.normal(size=(200, 2))
    collapsed = np.zeros((50, 2)) + 1e-9 * rng.normal(size=(50, 2))
    assert knn_kl(truth, collapsed) > 0.5
    assert np.isfinite(knn_kl(collapsed, truth))


def test_mmd():
    rng = np.random.default_rng(4)
    x = rng.normal(size=(200, 2))
    assert mmd(x, x) == pytest.approx(0.0, abs=1e-12)
    near = mmd(x, rng.normal(size=(200, 2)))
    far = mmd(x, rng.normal(size=(200, 2)) + 2.0)
    assert 0 <= near < 0.02 < far
    with pytest.raises(ValueError, match="dimension"):
        mmd(x, rng.normal(size=(10, 3)))


def test_energy_score_of_one_sample_is_its_rms_distance():
    x = np.array([[1.0, 2.0, 3.0, 4.0]])
    y = np.array([[1.5, 2.0], [2.0, 5.0]])  # any shape with the sample's size
    assert energy_score(x, y) == pytest.approx(np.sqrt(np.mean((x[0] - y.ravel()) ** 2)))


def test_energy_score_in_one_dimension_is_the_crps_of_the_empirical_cdf():
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=7), 0.3
    grid = np.linspace(-8, 8, 400_001)
    cdf = (x[None] <= grid[:, None]).mean(1)
    crps = np.trapezoid((cdf - (grid >= y)) ** 2, grid)
    assert energy_score(x, np.array([y])) == pytest.approx(crps, abs=1e-4)


def test_energy_score_is_lowest_for_the_true_spread():
    rng = np.random.default_rng(1)
    ys = rng.normal(size=(300, 5))
    scores = {
        spread: np.mean([energy_score(spread * rng.normal(size=(50, 5)), y) for y in ys])
        for spread in (0.0, 0.3, 1.0, 3.0)
    }
    assert min(scores, key=scores.get) == 1.0


def test_energy_score_rejects_mismatched_sizes():
    with pytest.raises(ValueError, match="observation must have 4 entries"):
        energy_score(np.zeros((3, 4)), np.zeros(5))
