"""Stein variational gradient descent (SVGD) and its constrained variant (CSVGD).

SVGD (Liu & Wang, 2016) moves N particles along ::

    φ(x_i) = (1/N) Σ_j [ k(x_j, x_i) ∇ log p(x_j) + ∇_{x_j} k(x_j, x_i) ],

an attraction towards high density weighted by the kernel, plus a repulsion that keeps the
particles apart. The kernel is an object (:class:`Kernel`): given the particles it returns the
Gram matrix and the summed repulsion. The default, :class:`RBFKernel`, is the RBF
``k(x, y) = exp(−‖x − y‖² / h)`` with the median heuristic
``h = med(‖x_i − x_j‖²) / log(N + 1)`` times a bandwidth factor, on the target's normalised
coordinates; another kernel is passed as ``SVGD(..., kernel=...)``. The step is Liu & Wang's
AdaGrad with momentum.

CSVGD (Heiden et al., 2022) adds the modified differential method of multipliers (Platt & Barr,
1988) for equality constraints ``g(x) = 0`` (the parameter limits and the multiple-shooting
defects):

    ẋ = φ(x) − Σ_c (λ_c + c·g_c(x)) ∇g_c(x),      λ̇_c = g_c(x),

with one multiplier per particle and constraint. The limit constraint is
``g_lim = clamp(z, 0, 1) − z`` (zero inside the box, so it acts only on a particle that left
it); the defects are ``g_def = ‖s^s − s‖² / σ_def²``. Plain SVGD keeps the particles inside the
limits by projection instead.
"""

from __future__ import annotations

import math
from typing import Protocol, runtime_checkable

import torch

from physid.core.target import Target
from physid.core.validate import check_number, check_positive, check_tensor
from physid.inference.base import AdaGrad, Estimator, Tensor, register


@runtime_checkable
class Kernel(Protocol):
    """An SVGD kernel: the two sums of Eq. (inf-svgd) need only these two terms."""

    def __call__(self, x: Tensor) -> tuple[Tensor, Tensor]:
        """For particles ``x`` (N, D): the Gram matrix ``K[j, i] = k(x_j, x_i)`` (N, N) and
        the repulsion ``Σ_j ∇_{x_j} k(x_j, x_i)`` of every particle ``i`` (N, D)."""
        ...


def median_bandwidth(x: Tensor) -> float:
    """``h = med(‖x_i − x_j‖²) / log(N + 1)`` over the pairs i < j (1 for a single particle)."""
    x = check_tensor("x", x, shape=(None, None))
    n = x.shape[0]
    if n < 2:
        return 1.0
    d2 = torch.cdist(x, x).pow(2)
    pairs = d2[torch.triu_indices(n, n, 1).unbind(0)]
    h = pairs.median().item() / math.log(n + 1)
    return h if h > 0 else 1.0


class RBFKernel:
    """The RBF kernel ``k(x, y) = exp(−‖x − y‖² / h)``.

    Args:
        bandwidth_factor: multiplies the median heuristic :func:`median_bandwidth` (1: Liu &
            Wang's rule).
        bandwidth: a fixed ``h`` instead of the heuristic (then the factor is not used).
    """

    def __init__(self, bandwidth_factor: float = 1.0, bandwidth: float | None = None):
        self.bandwidth_factor = check_positive("bandwidth_factor", bandwidth_factor)
        self.bandwidth = None if bandwidth is None else check_positive("bandwidth", bandwidth)

    def __repr__(self) -> str:
        return f"RBFKernel(bandwidth_factor={self.bandwidth_factor}, bandwidth={self.bandwidth})"

    def gram(self, x: Tensor) -> tuple[Tensor, float]:
        """The Gram matrix ``K[j, i] = k(x_j, x_i)`` of particles ``x`` (N, D) and the ``h``
        used."""
        h = self.bandwidth
        if h is None:
            h = self.bandwidth_factor * median_bandwidth(x)
        return torch.exp(-torch.cdist(x, x).pow(2) / h), h

    def __call__(self, x: Tensor) -> tuple[Tensor, Tensor]:
        k, h = self.gram(x)
        # Σ_j ∇_{x_j} k(x_j, x_i) = (2/h) Σ_j k_ji (x_i − x_j)
        return k, (2.0 / h) * (x * k.sum(0)[:, None] - k.T @ x)


def check_kernel(kernel: Kernel | None) -> Kernel:
    """``kernel`` if it is a :class:`Kernel`; None gives the default :class:`RBFKernel`."""
    if kernel is None:
        return RBFKernel()
    if not isinstance(kernel, Kernel):
        raise TypeError(f"kernel must be a Kernel (callable on the particles), got {kernel!r}")
    return kernel


def svgd_direction(x: Tensor, grad_logp: Tensor, kernel: Kernel | None = None) -> Tensor:
    """The SVGD update direction φ(x_i) of Eq. (inf-svgd) for every particle (N, D).

    ``grad_logp`` (N, D) holds ``∇ log p`` at each particle ``x`` (N, D); ``kernel`` gives
    the Gram matrix and the repulsion (default: :class:`RBFKernel` with the median heuristic).
    """
    kernel = check_kernel(kernel)
    check_tensor("x", x, shape=(None, None))
    check_tensor("grad_logp", grad_logp, shape=tuple(x.shape), dtype=x.dtype)
    k, repulsion = kernel(x)
    attraction = k.T @ grad_logp
    return (attraction + repulsion) / x.shape[0]


@register("SVGD", options={"stepsize": 0.02}, paper_order=1)
class SVGD(Estimator):
    """SVGD on ``target.log_density``; particles are projected into the limits after each step.

    Args:
        stepsize: AdaGrad step size (in normalised coordinates).
        kernel: the :class:`Kernel` (default: :class:`RBFKernel` with the median heuristic).
    """

    def __init__(
        self,
        target: Target,
        n_particles: int = 100,
        seed: int = 0,
        x0: Tensor | None = None,
        stepsize: float = 0.05,
        kernel: Kernel | None = None,
    ):
        super().__init__(target, n_particles, seed, x0)
        self.stepsize = check_positive("stepsize", stepsize)
        self.kernel = check_kernel(kernel)

    def _start(self, x0: Tensor) -> None:
        self.x = x0
        self.optimiser = AdaGrad(self.stepsize)

    def _step(self) -> None:
        grad = self.target.log_density_and_grad(self.x)[1]
        phi = svgd_direction(self.x, grad, self.kernel)
        self.x = self.target.project(self.x + self.optimiser(phi))

    @property
    def particles(self) -> Tensor:
        return self.x


@register(
    "CSVGD",
    paper_order=0,
    options={"stepsize": 0.02, "penalty": 1.0, "multiplier_stepsize": 0.1},
    multiple_shooting=True,
)
class CSVGD(SVGD):
    """SVGD with the modified differential method of multipliers for the limits and defects.

    The SVGD direction and the defect term, ``φ − Σ (λ + c g_def) ∇g_def``, take the AdaGrad
    step of SVGD; the limit term ``−Σ (λ + c_lim g_lim) ∇g_lim`` takes a plain step of the same
    size. AdaGrad rescales every coordinate of its direction to about the step size, whatever
    the magnitude of the log-likelihood gradient, so a limit force inside it would have to
    outgrow gradients of 10³–10⁵ before it could turn a particle back; outside it, the limit
    force acts in the units of the normalised parameters.

    Args:
        penalty: the MDMM damping ``c`` of the defect constraints.
        multiplier_stepsize: the step of ``λ ← λ + ε_λ g`` for the defects.
        limit_penalty: ``c_lim``; a particle 1 % of the range outside is pushed back by
            ``stepsize · c_lim / 100`` per iteration.
        limit_multiplier_stepsize: the step of the limit multipliers.
    """

    def __init__(
        self,
        target: Target,
        n_particles: int = 100,
        seed: int = 0,
        x0: Tensor | None = None,
        stepsize: float = 0.05,
        kernel: Kernel | None = None,
        penalty: float = 1.0,
        multiplier_stepsize: float = 0.1,
        limit_penalty: float = 100.0,
        limit_multiplier_stepsize: float = 1.0,
    ):
        super().__init__(target, n_particles, seed, x0, stepsize, kernel)
        self.penalty = check_number("penalty", penalty, low=0.0)
        self.multiplier_stepsize = check_positive("multiplier_stepsize", multiplier_stepsize)
        self.limit_penalty = check_number("limit_penalty", limit_penalty, low=0.0)
        self.limit_multiplier_stepsize = check_positive(
            "limit_multiplier_stepsize", limit_multiplier_stepsize
        )

    def _start(self, x0: Tensor) -> None:
        super()._start(x0)
        self.multipliers: Tensor | None = None

    def constraint_values(self, x: Tensor) -> tuple[Tensor, Tensor]:
        """``log_density(x)`` and all constraints (N, C): the limits, then the target's own."""
        logp, g_lim, g_other = self._values(x)
        return logp, torch.cat((g_lim, g_other), -1)

    def _values(self, x: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        logp, g_other = self.target.density_and_constraints(x)
        return logp, self.target.limit_violation(x), g_other

    def _step(self) -> None:
        x = self.x.detach().requires_grad_(True)
        logp, g_lim, g_def = self._values(x)
        n_lim = g_lim.shape[-1]
        g = torch.cat((g_lim, g_def), -1).detach()
        if self.multipliers is None:
            self.multipliers = torch.zeros_like(g)
        lam_lim, lam_def = self.multipliers[:, :n_lim], self.multipliers[:, n_lim:]
        # The limit force never touches the simulation: its own (cheap) backward pass.
        (limit_force,) = torch.autograd.grad(
            ((lam_lim + self.limit_penalty * g_lim.detach()) * g_lim).sum(), x, retain_graph=True
        )
        if g_def.shape[-1]:
            (grad_logp,) = torch.autograd.grad(logp.sum(), x, retain_graph=True)
            weight = lam_def + self.penalty * g_def.detach()
            (defect_force,) = torch.autograd.grad((weight * g_def).sum(), x)
        else:
            (grad_logp,) = torch.autograd.grad(logp.sum(), x)
            defect_force = torch.zeros_like(x)
        clean = lambda t: torch.nan_to_num(t, nan=0.0, posinf=0.0, neginf=0.0)  # noqa: E731
        phi = svgd_direction(self.x, clean(grad_logp), self.kernel)
        update = self.optimiser(phi - clean(defect_force)) - self.stepsize * clean(limit_force)
        self.x = (self.x + update).detach()
        rate = torch.full_like(g[0], self.multiplier_stepsize)
        rate[:n_lim] = self.limit_multiplier_stepsize
        self.multipliers = self.multipliers + rate * clean(g)
