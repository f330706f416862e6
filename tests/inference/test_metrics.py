"""The kNN KL estimator against the closed form, the MMD, and their bad input."""

from __future__ import annotations

import numpy as np
import pytest

from physid.inference.metrics import gaussian_kl, knn_kl, mmd


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
