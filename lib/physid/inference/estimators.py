"""The baselines of Heiden et al. (2022) behind the shared :class:`~physid.inference.base.Estimator`
interface; importing this module registers every estimator of the chapter
(:func:`~physid.inference.base.register`; SVGD and CSVGD first, from
:mod:`~physid.inference.svgd`), and :data:`ESTIMATORS` and :func:`make_estimator` read the
registry.

* :class:`SGLD`: preconditioned stochastic-gradient Langevin dynamics (Li et al., 2016), one
  chain from the centre of the limits (here with exact gradients).
* :class:`CEM`: the cross-entropy method with a 3-component Gaussian mixture.
* :class:`Emcee`: the affine-invariant ensemble sampler of the ``emcee`` package.
* :class:`NUTS`: the No-U-Turn sampler of ``pyro-ppl``, one chain from the centre, on the
  logit of the normalised parameters (so the box needs no rejection).
* :class:`BayesSim`: likelihood-free inference: a mixture density network (2 × 24 tanh units,
  as in BayesSim) trained on simulations from the prior, then conditioned on the references.
  An iteration is one training epoch.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from physid.core.target import Target
from physid.core.validate import check_choice, check_count, check_number, check_positive
from physid.inference.base import (
    REGISTRY,
    ChainEstimator,
    Estimator,
    Scaled,
    Tensor,
    register,
)
from physid.inference.likelihood import TrajectoryLikelihood
from physid.inference.statistics import DEFAULT_LAGS, STATISTICS, features
from physid.inference.svgd import CSVGD, SVGD  # noqa: F401 - registers them, first


@register("SGLD", options={"stepsize": 3e-3}, paper_order=3)
class SGLD(ChainEstimator):
    """Preconditioned SGLD: ``x ← x + ε/2 G ∇log p + N(0, ε G)``, ``G`` from RMSprop.

    ``G = 1 / (eps + sqrt(v))`` per coordinate, ``v`` the running mean of the squared
    gradient, capped at ``max_noise² / ε``: a coordinate whose gradient is (nearly) zero would
    otherwise get ``G ≈ 1 / eps`` and jump between its limits; capped, its noise is at most
    ``max_noise`` (normalised units) per step. The cap binds only where ``sqrt(v)`` is below
    ``ε / max_noise²``. The parameter block is projected into the limits after each step.
    """

    def __init__(
        self,
        target: Target,
        n_particles: int = 100,
        seed: int = 0,
        x0: Tensor | None = None,
        stepsize: float = 1e-3,
        alpha: float = 0.99,
        eps: float = 1e-5,
        max_noise: float = 0.05,
    ):
        super().__init__(target, n_particles, seed, x0)
        self.stepsize = check_positive("stepsize", stepsize)
        self.alpha = check_number("alpha", alpha, low=0.0, high=1.0, high_open=True)
        self.eps = check_positive("eps", eps)
        self.max_noise = check_positive("max_noise", max_noise)

    def _start(self, x0: Tensor) -> None:
        super()._start(x0)
        self.v: Tensor | None = None

    def _step(self) -> None:
        grad = self.target.log_density_and_grad(self.x[None])[1][0]
        sq = grad**2
        self.v = sq if self.v is None else self.alpha * self.v + (1 - self.alpha) * sq
        precond = (1.0 / (self.eps + self.v.sqrt())).clamp(max=self.max_noise**2 / self.stepsize)
        noise = torch.randn(self.x.shape, generator=self.generator, dtype=torch.float64)
        x = self.x + 0.5 * self.stepsize * precond * grad + (self.stepsize * precond).sqrt() * noise
        self._accept(self.target.project(x[None])[0])


@register("CEM", options={"components": 3, "elite_fraction": 0.2}, paper_order=5)
class CEM(Estimator):
    """The cross-entropy method: sample a Gaussian mixture, refit it to the elite fraction.

    Args:
        components: mixture components (3 in the paper).
        elite_fraction: the share of the population the mixture is refitted to.
    """

    def __init__(
        self,
        target: Target,
        n_particles: int = 100,
        seed: int = 0,
        x0: Tensor | None = None,
        components: int = 3,
        elite_fraction: float = 0.2,
    ):
        super().__init__(target, n_particles, seed, x0)
        self.components = check_count("components", components)
        fraction = check_number("elite_fraction", elite_fraction, low=0.0, high=1.0, low_open=True)
        self.n_elite = max(self.components + 1, int(round(fraction * self.n_particles)))
        if self.n_elite > self.n_particles:
            raise ValueError(
                f"n_particles must be >= components + 1 = {self.components + 1} for CEM's "
                f"mixture fit, got {self.n_particles}"
            )

    def _start(self, x0: Tensor) -> None:
        self.x = x0
        self.scores = self._score(x0)

    def _score(self, x: Tensor) -> Tensor:
        with torch.no_grad():
            value = self.target.log_density(x) + self.target.log_prior(x)
        return torch.nan_to_num(value, nan=-math.inf)

    def _step(self) -> None:
        from sklearn.mixture import GaussianMixture

        order = torch.argsort(self.scores, descending=True)
        elite = self.x[order[: self.n_elite]].numpy()
        mixture = GaussianMixture(
            self.components,
            covariance_type="full",
            reg_covar=1e-8,
            random_state=int(self.rng.integers(2**31)),
        ).fit(elite)
        sample = mixture.sample(self.n_particles)[0]
        self.x = torch.as_tensor(
            sample[self.rng.permutation(self.n_particles)], dtype=torch.float64
        )
        self.scores = self._score(self.x)

    @property
    def particles(self) -> Tensor:
        return self.x


@register("Emcee", paper_order=2)
class Emcee(Estimator):
    """``emcee``'s ensemble sampler; the walkers are the particles.

    Its stretch move needs at least ``2·dim`` walkers: fewer ``n_particles`` than that are
    raised to ``2·dim`` (the multiple-shooting targets have tens of dimensions), and
    :meth:`diagnostics` reports the count asked for and the count run.
    """

    def __init__(
        self, target: Target, n_particles: int = 100, seed: int = 0, x0: Tensor | None = None
    ):
        if not isinstance(target, Target):
            raise TypeError(f"target must be a Target, got {type(target).__name__}")
        self.requested = check_count("n_particles", n_particles)
        super().__init__(target, max(self.requested, 2 * target.dim), seed, x0)

    def diagnostics(self) -> dict[str, object]:
        """The walkers asked for and the walkers run (at least ``2·dim``)."""
        return {"walkers_requested": self.requested, "walkers": self.n_particles}

    def _log_prob(self, x: np.ndarray) -> np.ndarray:
        xt = torch.as_tensor(x, dtype=torch.float64)
        prior = self.target.log_prior(xt)
        value = torch.full_like(prior, -math.inf)
        inside = torch.isfinite(prior)
        if inside.any():
            with torch.no_grad():
                value[inside] = self.target.log_density(xt[inside])
        return torch.nan_to_num(value, nan=-math.inf, posinf=-math.inf).numpy()

    def _start(self, x0: Tensor) -> None:
        import emcee

        self.sampler = emcee.EnsembleSampler(
            self.n_particles, self.target.dim, self._log_prob, vectorize=True
        )
        self.sampler.random_state = np.random.RandomState(self.seed).get_state()
        self.state = emcee.State(x0.numpy(), log_prob=self._log_prob(x0.numpy()))

    def _step(self) -> None:
        # emcee checks the ensemble's conditioning whenever sampling starts; here it starts at
        # every step, and only the first is a start: a concentrated ensemble later is fine.
        self.state = next(
            self.sampler.sample(
                self.state, iterations=1, store=False, skip_initial_state_check=self.iteration > 0
            )
        )

    @property
    def particles(self) -> Tensor:
        return torch.as_tensor(self.state.coords, dtype=torch.float64)


@register(
    "NUTS",
    paper_order=4,
    scales={
        "quick": Scaled(6, {"warmup_steps": 3, "max_tree_depth": 3}),
        "default": Scaled(150, {"warmup_steps": 50, "max_tree_depth": 4}),
        "paper": Scaled(2000, {"warmup_steps": 200, "max_tree_depth": 6}),
    },
    smoke={"warmup_steps": 2, "max_tree_depth": 2},
)
class NUTS(ChainEstimator):
    """``pyro``'s NUTS on ``u = logit(z)`` (parameters) and the raw auxiliary variables.

    Args:
        warmup_steps: iterations that adapt the step size and mass matrix.
        max_tree_depth: caps the leapfrog steps per iteration at ``2^depth − 1``.
    """

    def __init__(
        self,
        target: Target,
        n_particles: int = 100,
        seed: int = 0,
        x0: Tensor | None = None,
        warmup_steps: int = 100,
        max_tree_depth: int = 6,
    ):
        super().__init__(target, n_particles, seed, x0)
        self.warmup_steps = check_count("warmup_steps", warmup_steps, 0)
        self.max_tree_depth = check_count("max_tree_depth", max_tree_depth)

    def _to_x(self, u: Tensor) -> tuple[Tensor, Tensor]:
        m = self.target.n_params
        z = torch.sigmoid(u[..., :m])
        log_jac = (
            torch.nn.functional.logsigmoid(u[..., :m]) + torch.nn.functional.logsigmoid(-u[..., :m])
        ).sum(-1)
        return torch.cat((z, u[..., m:]), -1), log_jac

    def _potential(self, params: dict[str, Tensor]) -> Tensor:
        u = params["u"]
        if not torch.isfinite(u).all():  # a diverging trajectory: reject it
            return torch.nan_to_num(u * 0.0, nan=0.0).sum() + 1e30
        x, log_jac = self._to_x(u)
        value = self.target.log_density(x[None])[0] + log_jac
        return torch.nan_to_num(-value, nan=1e30, posinf=1e30)

    def _start(self, x0: Tensor) -> None:
        from pyro.infer import NUTS as PyroNUTS

        super()._start(x0)
        m = self.target.n_params
        z = x0[0, :m].clamp(1e-6, 1 - 1e-6)
        u0 = torch.cat((torch.log(z) - torch.log1p(-z), x0[0, m:]))
        self.kernel = PyroNUTS(
            potential_fn=self._potential,
            adapt_step_size=True,
            adapt_mass_matrix=True,
            max_tree_depth=self.max_tree_depth,
            full_mass=False,
        )
        self.kernel.initial_params = {"u": u0}
        with self.own_torch_rng():
            self.kernel.setup(self.warmup_steps)
        self.params = {"u": u0}

    def _step(self) -> None:
        with self.own_torch_rng():
            self.params = self.kernel.sample(self.params)
        self._accept(self._to_x(self.params["u"].detach())[0])


class _MDN(torch.nn.Module):
    """A mixture density network ``q(z | features)`` with full-covariance components."""

    def __init__(self, n_in: int, n_out: int, components: int, hidden: int = 24):
        super().__init__()
        self.n_out, self.components = n_out, components
        self.body = torch.nn.Sequential(
            torch.nn.Linear(n_in, hidden),
            torch.nn.Tanh(),
            torch.nn.Linear(hidden, hidden),
            torch.nn.Tanh(),
        )
        self.n_tril = n_out * (n_out + 1) // 2
        self.head = torch.nn.Linear(hidden, components * (1 + n_out + self.n_tril))

    def forward(self, features: Tensor) -> torch.distributions.Distribution:
        h = self.head(self.body(features))
        k, m = self.components, self.n_out
        logits = h[:, :k]
        means = h[:, k : k + k * m].reshape(-1, k, m)
        raw = h[:, k + k * m :].reshape(-1, k, self.n_tril)
        rows, cols = torch.tril_indices(m, m)
        tril = torch.zeros(h.shape[0], k, m, m, dtype=h.dtype)
        diag = rows == cols
        values = torch.where(diag, torch.nn.functional.softplus(raw) + 1e-4, raw)
        tril[..., rows, cols] = values
        return torch.distributions.MixtureSameFamily(
            torch.distributions.Categorical(logits=logits),
            torch.distributions.MultivariateNormal(means, scale_tril=tril),
        )


@register(
    "BayesSim",
    paper_order=6,
    options={"every": 20},
    scales={  # iterations: training epochs; the paper's runs: 10,000 simulations, 3,000 epochs
        "quick": Scaled(12, {"n_simulations": 200}),
        "default": Scaled(500, {"n_simulations": 2000}),
        "paper": Scaled(3000, {"n_simulations": 10000}),
    },
    smoke={"n_simulations": 64, "every": 5, "batch_size": 32},
)
class BayesSim(Estimator):
    """Likelihood-free inference with a mixture density network (BayesSim, Ramos et al. 2019).

    Simulates ``n_simulations`` single-shooting trajectories from parameters drawn from the
    prior, reduces each standardised observation trajectory to an input statistic of
    :mod:`physid.inference.statistics` (``statistic``: every ``every``-th observation by
    default, BayesSim's "downsampled" input; ``"difference"``, ``"summary"`` or
    ``"signature"`` truncated at ``depth``; the summary's lags are those of the paper shorter
    than the trajectory), and fits ``q(z | features)`` by maximum
    likelihood with Adam. The particles are draws from ``q`` given each reference trajectory
    (an equal share per reference: the mixture, or "sum", posterior), redrawn until they fall
    inside the limits. Simulations that blow up are left out of the training set and counted
    (:meth:`diagnostics`). Only single-shooting trajectory targets qualify.
    """

    def __init__(
        self,
        target: TrajectoryLikelihood,
        n_particles: int = 100,
        seed: int = 0,
        x0: Tensor | None = None,
        n_simulations: int = 2000,
        statistic: str = "downsampled",
        every: int = 20,
        depth: int = 3,
        components: int = 3,
        hidden: int = 24,
        lr: float = 1e-3,
        batch_size: int = 200,
    ):
        if not isinstance(target, TrajectoryLikelihood) or target.windows != 1:
            raise ValueError("target must be a single-shooting TrajectoryLikelihood for BayesSim")
        super().__init__(target, n_particles, seed, x0)
        self.n_simulations = check_count("n_simulations", n_simulations, 2)
        self.statistic = check_choice("statistic", statistic, tuple(STATISTICS))
        self.every = check_count("every", every, 1, target.n_steps)
        self.depth = check_count("depth", depth)
        self.components = check_count("components", components)
        self.hidden = check_count("hidden", hidden)
        self.lr = check_positive("lr", lr)
        self.batch_size = check_count("batch_size", batch_size)

    def features(self, trajectories: Tensor) -> Tensor:
        """The input statistic of (…, T+1, S) finite trajectories' standardised
        observations (…, F)."""
        measured = self.target.observations(trajectories)
        options = {
            "downsampled": {"every": self.every},
            "difference": {"every": self.every},
            "summary": {"lags": tuple(lag for lag in DEFAULT_LAGS if lag < measured.shape[-2])},
            "signature": {"depth": self.depth},
        }[self.statistic]
        return features(self.statistic, measured, **options)

    def diagnostics(self) -> dict[str, object]:
        """The mean training loss of each epoch so far and the simulations left out of the
        training set because they blew up."""
        return {"losses": list(self.losses), "unstable_simulations": self.unstable}

    def _start(self, x0: Tensor) -> None:
        m = self.target.n_params
        z = torch.rand((self.n_simulations, m), generator=self.generator, dtype=torch.float64)
        theta = self.target.parameters(z)
        trajectories = self.target.rollouts(theta)[:, 0]  # the first reference's start state
        good = torch.isfinite(trajectories).flatten(1).all(1)
        self.unstable = int((~good).sum())
        if int(good.sum()) < 2:
            raise ValueError(
                f"n_simulations: only {int(good.sum())} of {self.n_simulations} simulations "
                "from the prior stayed finite; BayesSim needs at least 2"
            )
        self.train_z, feats = z[good], self.features(trajectories[good])
        self.feat_mean, self.feat_std = feats.mean(0), feats.std(0).clamp_min(1e-6)
        self.train_x = (feats - self.feat_mean) / self.feat_std
        observed = self.features(self.target.data)
        self.observed = (observed - self.feat_mean) / self.feat_std
        with self.own_torch_rng():
            self.net = _MDN(self.train_x.shape[1], m, self.components, self.hidden).double()
        self.optimiser = torch.optim.Adam(self.net.parameters(), lr=self.lr)
        self.losses: list[float] = []
        self.x = self._draw()

    def _step(self) -> None:
        order = torch.randperm(len(self.train_z), generator=self.generator)
        total = 0.0
        for start in range(0, len(order), self.batch_size):
            batch = order[start : start + self.batch_size]
            loss = -self.net(self.train_x[batch]).log_prob(self.train_z[batch]).mean()
            self.optimiser.zero_grad()
            loss.backward()
            self.optimiser.step()
            total += loss.item() * len(batch)
        self.losses.append(total / len(order))
        self.x = self._draw()

    def _draw(self) -> Tensor:
        m = self.target.n_params
        refs = self.observed.shape[0]
        counts = [self.n_particles // refs + (r < self.n_particles % refs) for r in range(refs)]
        out = []
        with torch.no_grad(), self.own_torch_rng():
            for r, count in enumerate(counts):
                if count == 0:
                    continue
                q = self.net(self.observed[r : r + 1])
                kept = torch.empty((0, m), dtype=torch.float64)
                for _ in range(20):
                    draw = q.sample((4 * count,))[:, 0]
                    draw = draw[((draw >= 0) & (draw <= 1)).all(1)]
                    kept = torch.cat((kept, draw))[:count]
                    if len(kept) == count:
                        break
                if len(kept) < count:
                    extra = q.sample((count - len(kept),))[:, 0].clamp(0, 1)
                    kept = torch.cat((kept, extra))
                out.append(kept)
        return torch.cat(out)

    @property
    def particles(self) -> Tensor:
        return self.x


#: Every estimator class by name, in the order the chapter reports them (a view of
#: :data:`~physid.inference.base.REGISTRY`).
ESTIMATORS = REGISTRY.view("cls")


def make_estimator(name: str, target: Target, **options: object) -> Estimator:
    """The estimator ``name`` (a key of :data:`ESTIMATORS`) on ``target``."""
    return REGISTRY.get(name, "name").cls(target, **options)
