"""Tests of the BayesSim input statistics (:mod:`physid.inference.statistics`)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import torch

from physid.inference.statistics import (
    DEFAULT_LAGS,
    STATISTICS,
    difference,
    downsampled,
    features,
    signature,
    summary,
)


def _paths(*shape: int, seed: int = 0) -> torch.Tensor:
    """Random-walk trajectories of the given shape (…, T, D), float64."""
    gen = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=gen, dtype=torch.float64).cumsum(-2)


def _levels(sig: np.ndarray, dim: int, depth: int) -> list[np.ndarray]:
    """A flat signature split into its levels, level k reshaped to (D,) * k."""
    out, start = [], 0
    for k in range(1, depth + 1):
        out.append(sig[start : start + dim**k].reshape((dim,) * k))
        start += dim**k
    assert start == sig.size
    return out


def _product(a: list[np.ndarray], b: list[np.ndarray]) -> list[np.ndarray]:
    """The truncated tensor product of two signatures given as level lists (level 0 = 1)."""
    depth = len(a)
    out = []
    for k in range(1, depth + 1):
        level = a[k - 1] + b[k - 1]
        for i in range(1, k):
            level = level + np.multiply.outer(a[i - 1], b[k - i - 1])
        out.append(level)
    return out


def _iterated_sums(points: np.ndarray, depth: int) -> list[np.ndarray]:
    """Brute force: for a piecewise-linear path with increments Δ_1 … Δ_n,
    S^{i_1…i_k} = Σ_{s_1 ≤ … ≤ s_k} Π_j Δ_{s_j}^{i_j} / Π_runs (run length)!, summed over
    non-decreasing segment indices (a run of equal indices contributes 1/m!)."""
    delta = np.diff(points, axis=0)
    n, dim = delta.shape
    out = []
    for k in range(1, depth + 1):
        level = np.zeros((dim,) * k)
        for word in itertools.product(range(dim), repeat=k):
            total = 0.0
            for segs in itertools.combinations_with_replacement(range(n), k):
                weight = 1.0
                for _, run in itertools.groupby(segs):
                    weight /= math.factorial(len(list(run)))
                term = weight
                for s, i in zip(segs, word, strict=True):
                    term *= delta[s, i]
                total += term
            level[word] = total
        out.append(level)
    return out


def _quadrature(points: np.ndarray) -> list[np.ndarray]:
    """Depth 3 from the integral equation dS = S ⊗ dX alone, with exact quadrature:
    level 2 by the trapezoid rule (its integrand is linear on a segment), level 3 by
    Simpson's rule (its integrand is quadratic on a segment)."""
    x0 = points[0]

    def step2(s2: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return s2 + np.multiply.outer(a - x0 + (b - a) / 2, b - a)

    dim = points.shape[1]
    s2 = np.zeros((dim, dim))
    s3 = np.zeros((dim, dim, dim))
    for a, b in zip(points[:-1], points[1:], strict=True):
        mid = (a + b) / 2
        s2_mid, s2_end = step2(s2, a, mid), step2(s2, a, b)
        s3 = s3 + np.multiply.outer((s2 + 4 * s2_mid + s2_end) / 6, b - a)
        s2 = s2_end
    return [points[-1] - x0, s2, s3]


# --- shapes and counts -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "options", "n_steps", "dim", "expected"),
    [
        ("downsampled", {"every": 20}, 400, 4, 80),
        ("downsampled", {"every": 3}, 10, 2, 8),
        ("difference", {"every": 20}, 400, 4, 88),
        ("difference", {"every": 1}, 5, 3, 18),
        ("summary", {}, 400, 4, 34),
        ("summary", {"lags": (1, 2)}, 10, 12, 24 + 66 + 24),
        ("signature", {"depth": 3}, 40, 4, 84),
        ("signature", {"depth": 2}, 40, 12, 156),
        ("signature", {"depth": 1}, 5, 3, 3),
    ],
)
def test_shapes_and_counts(name: str, options: dict, n_steps: int, dim: int, expected: int) -> None:
    y = _paths(2, 3, n_steps, dim)
    out = features(name, y, **options)
    assert out.shape == (2, 3, expected)
    assert out.dtype == torch.float64
    assert torch.isfinite(out).all()


@pytest.mark.parametrize(
    ("name", "options"),
    [
        ("downsampled", {"every": 4}),
        ("difference", {"every": 4}),
        ("summary", {"lags": (1, 3)}),
        ("signature", {"depth": 3}),
    ],
)
def test_batched_equals_one_by_one_and_is_deterministic(name: str, options: dict) -> None:
    y = _paths(2, 3, 12, 3, seed=1)
    out = STATISTICS[name].fn(y, **options)
    for i, j in itertools.product(range(2), range(3)):
        single = STATISTICS[name].fn(y[i, j], **options)
        torch.testing.assert_close(out[i, j], single, rtol=1e-12, atol=1e-12)
    assert torch.equal(out, STATISTICS[name].fn(y.clone(), **options))


# --- downsampled and difference --------------------------------------------------------------


def test_downsampled_values() -> None:
    y = torch.arange(14.0, dtype=torch.float64).reshape(7, 2)
    assert downsampled(y, every=3).tolist() == [0, 1, 6, 7, 12, 13]
    assert downsampled(y, every=1).tolist() == y.flatten().tolist()
    assert downsampled(y, every=100).tolist() == [0, 1]


def test_difference_is_eq22() -> None:
    y = _paths(9, 2, seed=2)
    yn = y.numpy()
    delta = np.diff(yn, axis=0)  # 8 differences of consecutive states
    expected = np.concatenate([delta[::3].ravel(), delta.mean(0), delta.var(0)])
    np.testing.assert_allclose(difference(y, every=3).numpy(), expected, rtol=1e-12)


# --- summary ---------------------------------------------------------------------------------


def test_summary_against_numpy() -> None:
    y = _paths(30, 4, seed=3)
    yn = y.numpy()
    lags = (1, 5, 20)
    out = summary(y, lags=lags).numpy()
    corr = np.corrcoef(yn.T)
    rows, cols = np.triu_indices(4, k=1)
    auto = [np.corrcoef(yn[:-lag, d], yn[lag:, d])[0, 1] for lag in lags for d in range(4)]
    expected = np.concatenate([yn.mean(0), yn.var(0), corr[rows, cols], auto])
    np.testing.assert_allclose(out, expected, rtol=1e-10, atol=1e-12)


def test_summary_default_lags_and_constant_channel() -> None:
    y = _paths(120, 3, seed=4)
    y[:, 1] = 2.5  # a constant channel has no correlation: 0, not NaN
    out = summary(y)
    assert out.shape == (6 + 3 + 3 * len(DEFAULT_LAGS),)
    assert torch.isfinite(out).all()
    assert out[4] == 0.0  # variance of channel 1
    assert out[6] == 0.0 and out[8] == 0.0  # correlations (0, 1) and (1, 2)


# --- signature -------------------------------------------------------------------------------


def test_signature_level1_is_increment_and_level2_symmetric_part() -> None:
    y = _paths(15, 3, seed=5)
    level1, level2 = _levels(signature(y, depth=2).numpy(), 3, 2)
    increment = (y[-1] - y[0]).numpy()
    np.testing.assert_allclose(level1, increment, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(
        (level2 + level2.T) / 2, np.outer(increment, increment) / 2, rtol=1e-10, atol=1e-12
    )


@pytest.mark.parametrize(("side", "orientation"), [(1.0, 1.0), (2.5, -1.0)])
def test_signature_levy_area_of_a_square(side: float, orientation: float) -> None:
    corners = np.array([[0, 0], [1, 0], [1, 1], [0, 1], [0, 0]], dtype=float) * side
    if orientation < 0:
        corners = corners[::-1].copy()  # clockwise
    corners = corners + np.array([3.0, -1.0])  # the signature ignores translation
    level1, level2 = _levels(signature(torch.from_numpy(corners), depth=2).numpy(), 2, 2)
    np.testing.assert_allclose(level1, 0.0, atol=1e-12)
    levy_area = (level2[0, 1] - level2[1, 0]) / 2
    assert levy_area == pytest.approx(orientation * side**2, rel=1e-12)
    np.testing.assert_allclose((level2 + level2.T) / 2, 0.0, atol=1e-12)


def test_signature_against_brute_force_iterated_sums() -> None:
    for seed in range(3):
        points = _paths(3, 2, seed=10 + seed).numpy()
        ours = _levels(signature(torch.from_numpy(points), depth=3).numpy(), 2, 3)
        for got, want in zip(ours, _iterated_sums(points, 3), strict=True):
            np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)


def test_signature_against_quadrature_of_the_integral_equation() -> None:
    points = _paths(7, 3, seed=6).numpy()
    ours = _levels(signature(torch.from_numpy(points), depth=3).numpy(), 3, 3)
    for got, want in zip(ours, _quadrature(points), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10)


def test_signature_chen_identity() -> None:
    y = _paths(11, 3, seed=7)
    first, second = y[:5], y[4:]  # sharing the point y[4]
    whole = _levels(signature(y, depth=3).numpy(), 3, 3)
    a = _levels(signature(first, depth=3).numpy(), 3, 3)
    b = _levels(signature(second, depth=3).numpy(), 3, 3)
    for got, want in zip(whole, _product(a, b), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10)


def test_signature_of_reversed_path_is_inverse() -> None:
    y = _paths(9, 2, seed=8)
    forward = _levels(signature(y, depth=3).numpy(), 2, 3)
    backward = _levels(signature(y.flip(0), depth=3).numpy(), 2, 3)
    for level in _product(forward, backward):
        np.testing.assert_allclose(level, 0.0, atol=1e-10)


def test_signature_reparametrisation_and_scaling() -> None:
    y = _paths(6, 3, seed=9)
    # Extra points on the straight segment y[2] → y[3] (a midpoint, then one at 90 %).
    refined = torch.cat(
        [y[:3], (0.5 * (y[2] + y[3]))[None], (0.1 * y[2] + 0.9 * y[3])[None], y[3:]]
    )
    stalled = torch.cat([y[:4], y[3:]])  # a repeated point: a zero-length segment
    sig = signature(y, depth=3)
    torch.testing.assert_close(signature(refined, depth=3), sig, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(signature(stalled, depth=3), sig, rtol=1e-12, atol=1e-12)
    scaled = _levels(signature(2.0 * y + 7.0, depth=3).numpy(), 3, 3)
    for k, (got, want) in enumerate(zip(scaled, _levels(sig.numpy(), 3, 3), strict=True), 1):
        np.testing.assert_allclose(got, 2.0**k * want, rtol=1e-12, atol=1e-12)


def test_signature_deeper_levels_agree_with_shallower() -> None:
    y = _paths(2, 8, 2, seed=11)
    deep = signature(y, depth=4)
    assert deep.shape == (2, 2 + 4 + 8 + 16)
    torch.testing.assert_close(deep[..., :14], signature(y, depth=3), rtol=0, atol=0)
    # A straight line: level k is Δ^{⊗k} / k!.
    line = torch.linspace(0, 1, 5, dtype=torch.float64)[:, None] * torch.tensor([1.0, -2.0])
    levels = _levels(signature(line, depth=4).numpy(), 2, 4)
    power = np.ones(())
    for k, level in enumerate(levels, 1):
        power = np.multiply.outer(power, np.array([1.0, -2.0]))
        np.testing.assert_allclose(level, power / math.factorial(k), rtol=1e-12, atol=1e-12)


# --- errors ----------------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(STATISTICS))
def test_non_finite_and_short_inputs_are_refused(name: str) -> None:
    options = {"downsampled": {"every": 2}, "difference": {"every": 2}}.get(name, {})
    options = {"signature": {"depth": 2}, "summary": {"lags": (1,)}}.get(name, options)
    y = _paths(5, 2)
    y[2, 1] = float("nan")
    with pytest.raises(ValueError, match="y"):
        features(name, y, **options)
    with pytest.raises(ValueError, match="y"):
        features(name, _paths(1, 2), **options)
    with pytest.raises(ValueError, match="y"):
        features(name, torch.zeros(5, dtype=torch.float64), **options)
    with pytest.raises(TypeError, match="y"):
        features(name, _paths(5, 2).float(), **options)


def test_option_errors() -> None:
    y = _paths(10, 2)
    with pytest.raises(ValueError, match="every"):
        downsampled(y, every=0)
    with pytest.raises(ValueError, match="every"):
        difference(y, every=-1)
    with pytest.raises(TypeError, match="every"):
        downsampled(y, every=2.0)
    with pytest.raises(ValueError, match="depth"):
        signature(y, depth=0)
    with pytest.raises(ValueError, match="lags"):
        summary(y, lags=(5, 10))
    with pytest.raises(ValueError, match="lags"):
        summary(y, lags=(0,))
    with pytest.raises(TypeError, match="lags"):
        summary(y, lags=3)
    with pytest.raises(ValueError, match="name"):
        features("wavelet", y)
