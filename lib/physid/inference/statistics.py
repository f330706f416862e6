"""The input statistics of the BayesSim baseline (Heiden et al., 2022, appendix §2.4).

BayesSim (Ramos, Possas & Fox, 2019) conditions its mixture density network on a fixed-length
statistic of a trajectory rather than on the trajectory itself. Heiden et al. compare four:

* :func:`downsampled`: every k-th state, concatenated (k = 20 for the pendulum).
* :func:`difference`: the statistic of BayesSim's Eq. 22: the differences of consecutive
  states ``Δs_t = s_{t+1} − s_t``, downsampled, followed by the mean and variance of the
  differences.
* :func:`summary`: per-dimension mean and variance, the cross-correlations between the
  dimensions and the auto-correlation of each dimension at lags 5, 10, 20, 50 and 100.
* :func:`signature`: the path signature of the trajectory truncated at depth 3 (pendulum) or 2
  (Panda), which Heiden et al. compute with the ``signatory`` package; here it is computed
  exactly in torch with Chen's identity.

Every statistic takes standardised observation trajectories ``y`` of shape (…, T, D), float64,
and returns features of shape (…, F); the leading axes are a batch. :data:`STATISTICS` maps
the names to the functions and :func:`features` dispatches on a name.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from physid.core.registry import Registry
from physid.core.validate import check_count, check_tensor

__all__ = [
    "DEFAULT_LAGS",
    "STATISTICS",
    "StatisticSpec",
    "difference",
    "downsampled",
    "features",
    "signature",
    "summary",
]

Tensor = torch.Tensor

#: The auto-correlation lags of the summary statistic (Heiden et al., 2022, appendix §2.4).
DEFAULT_LAGS: tuple[int, ...] = (5, 10, 20, 50, 100)


def _trajectories(y: Any) -> Tensor:
    """``y`` checked: a finite float64 tensor (…, T, D) with T >= 2 and D >= 1."""
    y = check_tensor("y", y, dtype=torch.float64)
    if y.dim() < 2:
        raise ValueError(f"y must have shape (..., T, D), got {tuple(y.shape)}")
    if y.shape[-2] < 2:
        raise ValueError(f"y must have at least T = 2 time steps, got shape {tuple(y.shape)}")
    if y.shape[-1] < 1:
        raise ValueError(f"y must have at least D = 1 dimension, got shape {tuple(y.shape)}")
    return y


def _flatten(x: Tensor) -> Tensor:
    """(…, n, D) to (…, n·D), time-major."""
    return x.reshape(*x.shape[:-2], -1)


def downsampled(y: Tensor, every: int) -> Tensor:
    """Every ``every``-th state of ``y`` (…, T, D), from the first, concatenated.

    Returns (…, ⌈T / every⌉ · D), time-major: ``y[..., ::every, :]`` flattened.
    """
    y = _trajectories(y)
    every = check_count("every", every, minimum=1)
    return _flatten(y[..., ::every, :])


def difference(y: Tensor, every: int) -> Tensor:
    """The difference statistic of BayesSim (Ramos et al., 2019, Eq. 22).

    With ``Δs_t = y_{t+1} − y_t`` for t = 0 … T−2 (differences of consecutive states at the
    full rate), the features are ``Δs_0, Δs_every, Δs_2·every, …`` flattened time-major,
    followed by the per-dimension mean and the per-dimension (population) variance of *all*
    T − 1 differences. Returns (…, ⌈(T − 1) / every⌉ · D + 2 D).
    """
    y = _trajectories(y)
    every = check_count("every", every, minimum=1)
    delta = y[..., 1:, :] - y[..., :-1, :]
    mean = delta.mean(-2)
    variance = delta.var(-2, unbiased=False)
    return torch.cat([_flatten(delta[..., ::every, :]), mean, variance], dim=-1)


def _check_lags(lags: Any, n_steps: int | None) -> tuple[int, ...]:
    """``lags`` as a tuple of integers in [1, n_steps − 1] (no upper bound when ``n_steps`` is
    None)."""
    if isinstance(lags, str | bytes) or not isinstance(lags, Sequence | torch.Tensor):
        raise TypeError(f"lags must be a sequence of integers, got {lags!r}")
    checked = tuple(check_count("lags", lag, minimum=1) for lag in lags)
    if n_steps is not None:
        for lag in checked:
            if lag >= n_steps:
                raise ValueError(
                    f"lags must be < T = {n_steps} (the trajectory length), got lag {lag}"
                )
    return checked


def _correlation(a: Tensor, b: Tensor) -> Tensor:
    """Pearson correlation of ``a`` and ``b`` along axis −2 (…, n, k) → (…, k).

    A constant series has no defined correlation; it is given 0, so that the features stay
    finite.
    """
    a = a - a.mean(-2, keepdim=True)
    b = b - b.mean(-2, keepdim=True)
    covariance = (a * b).sum(-2)
    scale = torch.sqrt((a * a).sum(-2) * (b * b).sum(-2))
    degenerate = scale <= torch.finfo(scale.dtype).tiny
    safe = torch.where(degenerate, torch.ones_like(scale), scale)
    return torch.where(degenerate, torch.zeros_like(covariance), covariance / safe)


def summary(y: Tensor, lags: Sequence[int] = DEFAULT_LAGS) -> Tensor:
    """Summary statistics of ``y`` (…, T, D), concatenated in this order:

    1. the mean of each dimension over time (D);
    2. the population variance of each dimension (D);
    3. the lag-0 Pearson correlation between every pair of dimensions i < j, row-major over
       the upper triangle (D (D − 1) / 2);
    4. the auto-correlation of each dimension at each lag ℓ, the Pearson correlation of
       ``y[:T−ℓ, d]`` with ``y[ℓ:, d]``, lag-major (``len(lags)`` · D).

    A correlation involving a constant series is 0. Every lag must be an integer in
    [1, T − 1], else a ValueError naming ``lags``: the number of features never depends on the
    data.
    """
    y = _trajectories(y)
    n_steps, dim = y.shape[-2], y.shape[-1]
    lags = _check_lags(lags, n_steps)
    parts = [y.mean(-2), y.var(-2, unbiased=False)]
    rows, cols = torch.triu_indices(dim, dim, offset=1)
    parts.append(_correlation(y[..., rows], y[..., cols]))
    for lag in lags:
        parts.append(_correlation(y[..., : n_steps - lag, :], y[..., lag:, :]))
    return torch.cat(parts, dim=-1)


def signature(y: Tensor, depth: int) -> Tensor:
    """The path signature of ``y`` (…, T, D), truncated at ``depth``, levels 1 … depth.

    The path is the piecewise-linear interpolation of the T points in R^D (no time channel is
    added, no basepoint). Level k holds the iterated integrals
    ``S^{i_1…i_k} = ∫_{t_1<…<t_k} dX^{i_1}_{t_1} … dX^{i_k}_{t_k}`` as a flattened D^k
    tensor (row-major in ``i_1 … i_k``), so the result has shape (…, D + D² + … + D^depth).

    It is exact: the signature of a straight segment with increment Δ is the truncated tensor
    exponential ``exp(Δ) = (1, Δ, Δ⊗Δ/2!, Δ⊗Δ⊗Δ/3!, …)``, and by Chen's identity the signature
    of a concatenation of paths is the truncated tensor product of their signatures. The
    T − 1 segments are multiplied in one at a time (T − 1 vectorised steps over the batch,
    Horner's scheme per level), so memory is that of the result only. Level 1 is the total
    increment; the antisymmetric part of level 2 is the Lévy area.
    """
    y = _trajectories(y)
    depth = check_count("depth", depth, minimum=1)
    batch, (n_steps, dim) = y.shape[:-2], y.shape[-2:]
    delta = (y[..., 1:, :] - y[..., :-1, :]).reshape(-1, n_steps - 1, dim)
    rows = delta.shape[0]
    # levels[k - 1]: (rows, D^k); level 0 is the scalar 1 and is not stored.
    levels = [delta.new_zeros(rows, dim**k) for k in range(1, depth + 1)]
    for t in range(n_steps - 1):
        step = delta[:, t, :]
        # S ← S ⊗ exp(Δ), highest level first so the lower levels are still the old ones:
        # (S ⊗ exp Δ)_k = S_k + (S_{k−1} + (S_{k−2} + (… + Δ/k) ⊗ Δ/(k − 2)) ⊗ Δ/(k − 1)) ⊗ Δ.
        for k in range(depth, 0, -1):
            acc = step / k
            for j in range(1, k):
                acc = _outer(levels[j - 1] + acc, step) / (k - j)
            levels[k - 1] = levels[k - 1] + acc
    return torch.cat(levels, dim=-1).reshape(*batch, -1)


def _outer(a: Tensor, b: Tensor) -> Tensor:
    """The tensor product of flattened (rows, D^i) and (rows, D^j) tensors: (rows, D^(i+j))."""
    return (a[:, :, None] * b[:, None, :]).reshape(a.shape[0], -1)


@dataclass(frozen=True)
class StatisticSpec:
    """A registered summary statistic: ``fn(y, **options)`` and the name of its one option."""

    name: str
    fn: Callable[..., Tensor]
    option: str


#: Every statistic by name: ``STATISTICS[name].fn(y, **options)`` with its ``option``:
#: ``every`` (downsampled, difference), ``lags`` (summary) or ``depth`` (signature).
STATISTICS: Registry[StatisticSpec] = Registry("statistic", StatisticSpec)
STATISTICS.add(StatisticSpec("downsampled", downsampled, "every"))
STATISTICS.add(StatisticSpec("difference", difference, "every"))
STATISTICS.add(StatisticSpec("summary", summary, "lags"))
STATISTICS.add(StatisticSpec("signature", signature, "depth"))


def features(name: str, y: Tensor, **options: Any) -> Tensor:
    """The statistic ``name`` (a key of :data:`STATISTICS`) of ``y`` (…, T, D), with its
    ``options``; an unknown name is a ValueError naming ``name``."""
    return STATISTICS.get(name, "name").fn(y, **options)
