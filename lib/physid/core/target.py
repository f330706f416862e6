"""What every estimator works on: a :class:`Target`, with its parameters inside box
:class:`Limits`.

A target is a flat vector ``x`` per particle whose first ``n_params`` entries are the
simulation parameters, normalised to the unit box of their limits
(``z = (θ − θ_min) / (θ_max − θ_min)``), followed by any auxiliary variables (the shooting
states of multiple shooting, in standardised state units). A target gives its dimension, the
log-likelihood and the log-density with its gradient (differentiable), the box prior on the
parameter block (the limits, with their violation and projection), the equality constraints
CSVGD enforces, and start particles (a scrambled Sobol sequence over the limits, seeded). The
estimators of :mod:`physid.inference` use nothing else, so a target of any part works with them:
Part II's trajectory likelihoods (:mod:`physid.inference.likelihood`) and Part I's pushing loss
(:class:`physid.pushing.target.PushingTarget`).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import torch
from scipy.stats import qmc

from physid.core.validate import check_array, check_count, check_seed, check_tensor

Tensor = torch.Tensor

__all__ = ["Limits", "Target", "sobol_points"]


@dataclass(frozen=True)
class Limits:
    """Box limits of the estimated parameters (also the uniform prior).

    ``names`` are distinct parameter names, one per entry of ``lower`` and ``upper``; repeated
    names, a string or non-string names, mismatched lengths, non-finite limits and a ``lower``
    not below its ``upper`` are refused.
    """

    names: tuple[str, ...]
    lower: np.ndarray
    upper: np.ndarray

    def __post_init__(self) -> None:
        lower = check_array("lower", self.lower, finite=False).reshape(-1)
        upper = check_array("upper", self.upper, finite=False).reshape(-1)
        if isinstance(self.names, str) or not all(isinstance(n, str) for n in self.names):
            raise TypeError(f"names must be a sequence of parameter names, got {self.names!r}")
        duplicates = sorted(n for n, count in Counter(self.names).items() if count > 1)
        if duplicates:
            raise ValueError(f"names must be distinct, got {duplicates} more than once")
        object.__setattr__(self, "names", tuple(self.names))
        object.__setattr__(self, "lower", lower)
        object.__setattr__(self, "upper", upper)
        if not (len(self.names) == lower.size == upper.size) or lower.size == 0:
            raise ValueError(
                f"limits: names, lower and upper must have one entry per parameter, got "
                f"{len(self.names)}, {lower.size}, {upper.size}"
            )
        if not (np.isfinite(lower).all() and np.isfinite(upper).all()):
            raise ValueError("limits must be finite")
        bad = [n for n, lo, hi in zip(self.names, lower, upper, strict=True) if not lo < hi]
        if bad:
            raise ValueError(f"limits: min must be < max for every parameter; not for {bad}")

    @classmethod
    def from_dict(cls, limits: Mapping[str, tuple[float, float]]) -> Limits:
        names = tuple(limits)
        return cls(
            names, np.array([limits[n][0] for n in names]), np.array([limits[n][1] for n in names])
        )

    @property
    def dim(self) -> int:
        return len(self.names)

    @property
    def width(self) -> np.ndarray:
        return self.upper - self.lower

    def normalise(self, theta) -> Tensor:
        theta = torch.as_tensor(theta, dtype=torch.float64)
        return (theta - _t(self.lower).to(theta)) / _t(self.width).to(theta)

    def denormalise(self, z) -> Tensor:
        z = torch.as_tensor(z, dtype=torch.float64)
        return _t(self.lower).to(z) + _t(self.width).to(z) * z

    def sobol(self, n: int, seed: int = 0) -> np.ndarray:
        """``n`` points of a Sobol sequence over the box (physical units), scrambled by ``seed``.

        The paper starts its particles on the unscrambled sequence; scrambling (Owen's) keeps
        its even cover of the box and lets the seed choose the start.
        """
        return self.lower + self.width * sobol_points(self.dim, n, seed)

    def contains(self, theta) -> np.ndarray:
        theta = np.asarray(theta, dtype=float)
        return np.all((theta >= self.lower) & (theta <= self.upper), axis=-1)


def _pow2(n: int) -> int:
    return 1 << max(0, (n - 1).bit_length())


def sobol_points(dim: int, n: int, seed: int) -> np.ndarray:
    """The first ``n`` points (n, dim) in the unit cube of a Sobol sequence scrambled by
    ``seed``."""
    dim, n = check_count("dim", dim), check_count("n", n)
    sampler = qmc.Sobol(dim, scramble=True, seed=check_seed("seed", seed))
    return sampler.random(_pow2(n))[:n]


def _t(x) -> Tensor:
    return torch.as_tensor(np.asarray(x, dtype=float), dtype=torch.float64)


class Target:
    """What an estimator samples: ``x`` = (normalised parameters, auxiliary variables).

    Subclasses implement :meth:`log_likelihood` and may override :meth:`constraints` and
    :meth:`initial`. The prior is uniform over the unit box on the parameter block.
    """

    #: number of entries of ``x``
    dim: int
    #: the first ``n_params`` entries of ``x`` are the normalised parameters
    n_params: int

    def log_likelihood(self, x: Tensor) -> Tensor:
        """The log-likelihood of each particle (N,), differentiable in ``x`` (N, dim)."""
        return self._log_likelihood(self.check_x(x))

    def _log_likelihood(self, x: Tensor) -> Tensor:  # pragma: no cover - interface
        raise NotImplementedError

    def log_prior(self, x: Tensor) -> Tensor:
        """0 inside the unit box of the parameter block, ``-inf`` outside."""
        z = self.check_x(x)[..., : self.n_params]
        inside = ((z >= 0) & (z <= 1)).all(-1)
        return torch.where(inside, 0.0, -math.inf).to(x.dtype)

    def log_density(self, x: Tensor) -> Tensor:
        """The log-likelihood (and, for non-constrained samplers, the defect likelihood)."""
        return self._log_density(self.check_x(x))

    def _log_density(self, x: Tensor) -> Tensor:
        return self._log_likelihood(x)

    def log_density_and_grad(self, x: Tensor) -> tuple[Tensor, Tensor]:
        """:meth:`log_density` (N,) and its gradient (N, dim) in ``x``, the ``∇ log p`` of
        SVGD's Eq. (inf-svgd) and of SGLD, with non-finite entries (a blown-up rollout)
        zeroed."""
        x = self.check_x(x).detach().requires_grad_(True)
        value = self._log_density(x)
        (grad,) = torch.autograd.grad(value.sum(), x)
        return value.detach(), torch.nan_to_num(grad, nan=0.0, posinf=0.0, neginf=0.0)

    def constraints(self, x: Tensor) -> Tensor:
        """Equality constraints ``g(x) = 0`` that CSVGD enforces besides the limits: (N, C)."""
        return self.density_and_constraints(x)[1]

    def density_and_constraints(self, x: Tensor) -> tuple[Tensor, Tensor]:
        """:meth:`log_density` and :meth:`constraints` (N, C) from one evaluation."""
        x = self.check_x(x)
        return self._log_density(x), x.new_zeros(x.shape[:-1] + (0,))

    def limit_violation(self, x: Tensor) -> Tensor:
        """``g_lim = clamp(z, 0, 1) − z`` on the parameter block (zero inside the box)."""
        z = self.check_x(x)[..., : self.n_params]
        return z.clamp(0.0, 1.0) - z

    def project(self, x: Tensor) -> Tensor:
        """``x`` with the parameter block clamped into the unit box."""
        x = self.check_x(x)
        return torch.cat((x[..., : self.n_params].clamp(0.0, 1.0), x[..., self.n_params :]), -1)

    def initial(self, n: int, seed: int = 0) -> Tensor:
        """``n`` start particles: parameters on a Sobol sequence over the box scrambled by
        ``seed``, then :meth:`auxiliary` (none here)."""
        z = torch.as_tensor(sobol_points(self.n_params, n, seed), dtype=torch.float64)
        return torch.cat((z, self.auxiliary(z, seed)), 1)

    def centre(self, seed: int = 0) -> Tensor:
        """The single-chain start (dim,): the centre of the box, then :meth:`auxiliary`."""
        z = torch.full((1, self.n_params), 0.5, dtype=torch.float64)
        return torch.cat((z, self.auxiliary(z, seed)), 1)[0]

    def auxiliary(self, z: Tensor, seed: int = 0) -> Tensor:
        """Start values (N, dim − n_params) of the auxiliary variables for parameters ``z``."""
        if self.dim != self.n_params:  # pragma: no cover - interface
            raise NotImplementedError("targets with auxiliary variables override auxiliary()")
        return z.new_zeros((z.shape[0], 0))

    def parameters(self, x: Tensor) -> Tensor:
        """The parameters (N, n_params) of the particles ``x``: here the normalised ones."""
        return self.check_x(x)[..., : self.n_params]

    def check_x(self, x: Tensor, name: str = "x") -> Tensor:
        """``x`` as an (N, dim) float64 tensor of finite values, else an error naming it.

        A torch tensor must be float64 (a TypeError otherwise); arrays are converted.
        """
        if not isinstance(x, torch.Tensor):
            x = torch.from_numpy(check_array(name, x))
        return check_tensor(name, x, shape=(None, self.dim), dtype=torch.float64)

    def check_particles(self, x: Tensor, name: str = "x0") -> Tensor:
        """``x`` as an (N, dim) float64 tensor inside the limits, else a ValueError naming it."""
        x = self.check_x(x, name)
        if not torch.isfinite(self.log_prior(x)).all():
            raise ValueError(f"{name}: start particles must lie inside the parameter limits")
        return x
