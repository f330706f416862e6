"""Consistency metrics between sample sets: the kNN KL-divergence estimator and the MMD.

The KL estimator is the one of Wang, Kulkarni & Verdú (2009), as used by Heiden et al. (2022):

    d̂_KL(P ‖ Q) = (d/n) Σ_i log(ν_k(i) / ρ_l(i)) + (1/n) Σ_i [ψ(l) − ψ(k)] + log(m / (n − 1)),

for samples X_1…X_n of P and Y_1…Y_m of Q in R^d; ``ν_k(i)`` is the distance from X_i to its
k-th nearest neighbour among the Y, ``ρ_l(i)`` to its l-th nearest neighbour among the other X.
With k = l = 3 the digamma term vanishes. On trajectories, ``d`` is the flattened dimension
(T × 4), which is why trajectory KL values run into the thousands.

:func:`energy_score` is a proper score of a sample set against one observation (Gneiting &
Raftery, 2007): lower is better, and in expectation it is lowest for samples drawn from the
distribution the observation came from, so, unlike the pooled KL above, it does not reward a
spread wider than the data's.
"""

from __future__ import annotations

import numpy as np
import torch
from scipy.spatial import cKDTree
from scipy.special import digamma

from physid.core.validate import check_array, check_count, check_positive

#: Distances are floored here, so a collapsed set gives a large but finite divergence.
MIN_DISTANCE = 1e-12


def _samples(x: np.ndarray, name: str) -> np.ndarray:
    """Samples (n, d): one axis means d = 1, more than two are flattened after the first."""
    if isinstance(x, torch.Tensor):
        x = x.detach().cpu().numpy()
    x = check_array(name, x)
    if x.ndim == 0:
        raise ValueError(f"{name} must hold samples along its first axis, got a scalar")
    if x.ndim == 1:
        x = x[:, None]
    if x.ndim != 2:
        x = x.reshape(x.shape[0], -1)
    return x


def knn_kl(p: np.ndarray, q: np.ndarray, k: int = 3, l: int = 3) -> float:  # noqa: E741
    """The kNN estimate of ``KL(P ‖ Q)`` from samples ``p`` (n, d) and ``q`` (m, d).

    Samples with more than two axes are flattened (trajectories (n, T, 4) → (n, 4T)). Needs
    ``n ≥ l + 1`` and ``m ≥ k``; a ValueError names the argument that is short.
    """
    k, l = check_count("k", k), check_count("l", l)  # noqa: E741 - the paper's names
    x, y = _samples(p, "p"), _samples(q, "q")
    n, d = x.shape
    m = y.shape[0]
    if n < l + 1:
        raise ValueError(f"p must hold at least l + 1 = {l + 1} samples, got {n}")
    if m < k + 1:
        raise ValueError(f"q must hold at least k + 1 = {k + 1} samples, got {m}")
    if y.shape[1] != d:
        raise ValueError(f"p and q must have the same dimension, got {d} and {y.shape[1]}")
    rho = cKDTree(x).query(x, k=l + 1)[0][:, l]  # the first neighbour is X_i itself
    nu = cKDTree(y).query(x, k=k)[0]
    nu = nu[:, k - 1] if nu.ndim == 2 else nu
    rho = np.maximum(rho, MIN_DISTANCE)
    nu = np.maximum(nu, MIN_DISTANCE)
    return float(d * np.mean(np.log(nu / rho)) + digamma(l) - digamma(k) + np.log(m / (n - 1)))


def gaussian_kl(
    mean_p: np.ndarray, cov_p: np.ndarray, mean_q: np.ndarray, cov_q: np.ndarray
) -> float:
    """Closed-form ``KL(N(mean_p, cov_p) ‖ N(mean_q, cov_q))``."""
    mp = check_array("mean_p", mean_p).reshape(-1)
    d = mp.size
    mq = check_array("mean_q", mean_q, shape=(d,))
    sp = check_array("cov_p", np.atleast_2d(cov_p), shape=(d, d))
    sq = check_array("cov_q", np.atleast_2d(cov_q), shape=(d, d))
    for name, cov in (("cov_p", sp), ("cov_q", sq)):
        if not (np.allclose(cov, cov.T) and np.linalg.eigvalsh(cov).min() > 0):
            raise ValueError(f"{name} must be symmetric positive definite, got {cov.tolist()}")
    sq_inv = np.linalg.inv(sq)
    diff = mq - mp
    return 0.5 * float(
        np.trace(sq_inv @ sp)
        + diff @ sq_inv @ diff
        - d
        + np.linalg.slogdet(sq)[1]
        - np.linalg.slogdet(sp)[1]
    )


def mmd(p: np.ndarray, q: np.ndarray, bandwidth: float | None = None) -> float:
    """Biased estimate of the squared MMD with an RBF kernel ``exp(−‖x − y‖² / h)``.

    ``h`` defaults to the median squared distance over the pooled samples.
    """
    x, y = _samples(p, "p"), _samples(q, "q")
    if bandwidth is not None:
        bandwidth = check_positive("bandwidth", bandwidth)
    if x.shape[0] < 1 or y.shape[0] < 1:
        raise ValueError("p and q must each hold at least one sample")
    if x.shape[1] != y.shape[1]:
        raise ValueError(f"p and q must have the same dimension, got {x.shape[1]}, {y.shape[1]}")
    pooled = np.concatenate((x, y))

    def sqdist(a, b):
        return np.maximum((a**2).sum(1)[:, None] + (b**2).sum(1)[None] - 2 * a @ b.T, 0.0)

    if bandwidth is None:
        d2 = sqdist(pooled, pooled)
        off = d2[np.triu_indices(len(pooled), 1)]
        bandwidth = float(np.median(off)) if off.size and np.median(off) > 0 else 1.0
    kxx = np.exp(-sqdist(x, x) / bandwidth).mean()
    kyy = np.exp(-sqdist(y, y) / bandwidth).mean()
    kxy = np.exp(-sqdist(x, y) / bandwidth).mean()
    return float(max(kxx + kyy - 2 * kxy, 0.0))


def energy_score(samples: np.ndarray, observation: np.ndarray) -> float:
    """The energy score ``E‖X − y‖ − ½ E‖X − X′‖`` of ``samples`` (n, …) against
    ``observation`` (…), with the root-mean-square norm ``‖v‖ = sqrt(mean(v²))``.

    The expectations are the sample means, the second over all ``n²`` pairs, the diagonal
    included (the score of the samples' empirical distribution). With the RMS norm the score
    is in the observation's units: one sample scores its RMS distance to the observation, and
    in one dimension the score is the CRPS of the samples' empirical distribution.
    """
    x = _samples(samples, "samples")
    y = check_array("observation", observation).reshape(-1)
    if x.shape[1] != y.size:
        raise ValueError(
            f"observation must have {x.shape[1]} entries like each sample, got {y.size}"
        )
    scale = 1.0 / np.sqrt(y.size)
    to_obs = np.sqrt(((x - y) ** 2).sum(1)) * scale
    between = (
        np.sqrt(np.maximum((x**2).sum(1)[:, None] + (x**2).sum(1)[None] - 2 * x @ x.T, 0.0)) * scale
    )
    return float(to_obs.mean() - 0.5 * between.mean())
