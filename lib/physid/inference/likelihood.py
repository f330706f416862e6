"""Targets for the estimators: trajectory likelihoods with box priors, and analytic test targets.

Every estimator in :mod:`physid.inference.estimators` works on a
:class:`~physid.core.target.Target`: a flat vector ``x`` per particle whose first ``n_params``
entries are the simulation parameters, normalised to the unit box of their limits (``z = (θ − θ_min)
/ (θ_max − θ_min)``), followed by any auxiliary variables (the shooting states of multiple shooting,
in standardised state units). A target gives its dimension, the log-likelihood and the log-density
with its gradient (differentiable), the box prior on the parameter block (the limits, with their
violation and projection), the equality constraints CSVGD enforces, and start particles (a scrambled
Sobol sequence over the limits, seeded). The estimators use nothing else.

:class:`TrajectoryLikelihood` is the paper's likelihood of any
:class:`~physid.core.simulator.Simulator` (the double pendulum, or a model with a known
input ``u(t)`` and a partial measurement): Gaussian in (standardised) observation space, by
single shooting or by multiple shooting with defect constraints (its shooting layout:
``windows`` of ``horizon`` steps), over one or several reference trajectories combined as an
equal-weight mixture (a sum, through logsumexp) or as a product. The state, input and
observation sizes come from the simulator. :class:`GaussianTarget` and :class:`MixtureTarget`
are closed-form targets for tests.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import torch

from physid.core.simulator import ResidualSimulator, Simulator
from physid.core.target import Limits, Target
from physid.core.validate import (
    check_array,
    check_choice,
    check_count,
    check_nonnegative,
    check_positive,
    check_seed,
)

Tensor = torch.Tensor


class GaussianTarget(Target):
    """A Gaussian ``N(mean, cov)`` on the unit box (for tests: it should sit well inside)."""

    def __init__(self, mean: Sequence[float], cov: Sequence[Sequence[float]]):
        mean = check_array("mean", mean, shape=(None,))
        cov = check_array("cov", cov, shape=(mean.size, mean.size))
        if mean.size == 0:
            raise ValueError("mean must have at least one entry")
        if not (np.allclose(cov, cov.T) and np.linalg.eigvalsh(cov).min() > 0):
            raise ValueError(f"cov must be symmetric positive definite, got {cov.tolist()}")
        self.mean = torch.as_tensor(mean, dtype=torch.float64)
        self.cov = torch.as_tensor(cov, dtype=torch.float64)
        self.dim = self.n_params = self.mean.numel()
        self._dist = torch.distributions.MultivariateNormal(self.mean, self.cov)

    def _log_likelihood(self, x: Tensor) -> Tensor:
        return self._dist.log_prob(x)

    def sample(self, n: int, seed: int = 0) -> Tensor:
        n = check_count("n", n)
        generator = torch.Generator().manual_seed(check_seed("seed", seed))
        z = torch.randn((n, self.dim), generator=generator, dtype=torch.float64)
        return self.mean + z @ torch.linalg.cholesky(self.cov).T


class MixtureTarget(Target):
    """An equal-weight mixture of isotropic Gaussians (for tests of mode coverage)."""

    def __init__(self, means: Sequence[Sequence[float]], std: float):
        means = check_array("means", means, shape=(None, None))
        if means.size == 0:
            raise ValueError("means must hold at least one mean of at least one entry")
        self.means = torch.as_tensor(means, dtype=torch.float64)
        self.std = check_positive("std", std)
        self.dim = self.n_params = self.means.shape[1]

    def _log_likelihood(self, x: Tensor) -> Tensor:
        d2 = ((x[..., None, :] - self.means) ** 2).sum(-1) / self.std**2
        log_norm = -0.5 * self.dim * math.log(2 * math.pi * self.std**2)
        return torch.logsumexp(-0.5 * d2 + log_norm, -1) - math.log(len(self.means))


#: The default spread (standardised state units) of the start shooting states around each
#: particle's own rollout: about one σ_def, so the defects start at the scale they are held to.
SHOOTING_SPREAD = 0.1


def check_trajectories(trajectories, state_size: int, name: str = "trajectories") -> Tensor:
    """Reference trajectories as an (R, T, S) float64 tensor; ValueError naming ``name``.

    Accepts one (T, S) array, an (R, T, S) array or a list of (T, S) arrays (which must all
    have the same length), ``S = state_size``. Row 0 of each is the start state. Complex,
    bool, string and object values are a TypeError naming ``name``.
    """
    state_size = check_count("state_size", state_size)
    if isinstance(trajectories, list | tuple):
        arrays = [check_array(f"{name}[{i}]", a, finite=False) for i, a in enumerate(trajectories)]
        if not arrays:
            raise ValueError(f"{name} must hold at least one trajectory")
        lengths = sorted({a.shape[0] if a.ndim else -1 for a in arrays})
        if len(lengths) > 1:
            raise ValueError(f"{name} must all have the same length, got lengths {lengths}")
        trajectories = np.stack(arrays) if all(a.ndim == 2 for a in arrays) else arrays[0]
    else:
        trajectories = check_array(name, trajectories, finite=False)
    x = torch.as_tensor(trajectories, dtype=torch.float64)
    if x.ndim == 2:
        x = x[None]
    if x.ndim != 3 or x.shape[-1] != state_size or x.shape[1] < 2:
        raise ValueError(
            f"{name} must have shape (R, T, {state_size}) with T >= 2 (row 0 the start state), "
            f"got {tuple(x.shape)}"
        )
    if not torch.isfinite(x).all():
        raise ValueError(f"{name} contain NaN or infinite values")
    return x


def _check_inputs(inputs, model: Simulator, data: Tensor) -> Tensor | None:
    """The known inputs (R, T, U) of the references, or None for a simulator without input."""
    refs, n_steps, size = data.shape[0], data.shape[1] - 1, model.input_size
    if size == 0:
        if inputs is not None:
            raise ValueError(f"inputs must be None: the simulator has no input, got {inputs!r}")
        return None
    if inputs is None:
        raise ValueError(f"inputs must be given: the simulator takes an input of size {size}")
    u = torch.as_tensor(check_array("inputs", inputs), dtype=torch.float64)
    if u.ndim == 2:
        u = u[None].expand(refs, -1, -1)
    if tuple(u.shape) != (refs, n_steps, size):
        raise ValueError(
            f"inputs must have shape ({refs}, {n_steps}, {size}) (one input per reference and "
            f"step) or ({n_steps}, {size}), got {tuple(u.shape)}"
        )
    return u


def _check_scale(name: str, scale, size: int) -> tuple[Tensor, Tensor]:
    if not isinstance(scale, tuple | list) or len(scale) != 2:
        raise ValueError(f"{name} must be a pair (mean, std), got {scale!r}")
    mean = check_array(f"{name} mean", scale[0], shape=(size,))
    std = check_array(f"{name} std", scale[1], shape=(size,), positive=True)
    return torch.as_tensor(mean), torch.as_tensor(std)


def _mean_std(values: Tensor) -> tuple[Tensor, Tensor]:
    flat = values.reshape(-1, values.shape[-1])
    return flat.mean(0), flat.std(0)


class TrajectoryLikelihood(Target):
    """The Gaussian trajectory likelihood of simulation parameters, Heiden et al. (2022).

    Eq. (inf-lik) of the chapter for each reference, by single shooting or by multiple
    shooting (Eq. inf-ms, with the defects ``g_def`` as constraints or as a Gaussian), combined
    over the references by Eq. (inf-combine): the sum (Eq. 9 of the paper) or the product
    (Eq. 10). The simulator is any :class:`~physid.core.simulator.Simulator`.

    Args:
        model: the simulator; its ``param_names`` must equal ``limits.names``.
        trajectories: reference state trajectories (R, T+1, S) of real numbers (complex,
            bool, string and object values are a TypeError); row 0 of each is its start
            state, and the likelihood compares ``model.observe`` of the rest.
        limits: the parameter limits (the box prior).
        sigma_obs: observation noise, in standardised observation units.
        combine: ``"sum"`` (an equal-weight mixture over the references, Eq. 9 of the paper)
            or ``"product"`` (independent samples, Eq. 10).
        shooting_windows: 1 for single shooting; ``W > 1`` splits the T steps into W windows,
            whose start states (windows 2…W) become auxiliary variables.
        defects: ``"constraint"`` (CSVGD enforces ``g_def = 0``) or ``"likelihood"`` (a
            Gaussian ``N(s^s | s, σ_def²)`` in the density, for the other estimators).
        sigma_def: the defect scale σ_def (standardised state units).
        defect_form: the constraints CSVGD sees: ``"vector"`` (default), one signed constraint
            ``(s^s − s) / σ_def`` per state dimension and window boundary, or ``"squared"``,
            the paper's ``‖s^s − s‖² / σ_def²`` per boundary. The squared form is never
            negative, so its multipliers can only grow; the signed form lets them settle.
        state_scale: ``(mean, std)`` of the S state dimensions for the standardisation;
            default: over the reference trajectories.
        shooting_spread: the spread (standard deviation, standardised state units) of the
            start shooting states around where they start (see :meth:`auxiliary`).
        shooting_start: where the start shooting states lie: ``"rollout"``, on each
            particle's own single-shooting rollout, or ``"recorded"``, on the first
            reference's recorded states at the window boundaries (the usual start of multiple
            shooting: the defects then start at the data's distance from the model).
        inputs: the known inputs ``u(t)`` (R, T, U) of the references, or one (T, U) sequence
            for all; required when ``model.input_size > 0``, else None. Multiple shooting
            needs one input sequence shared by the references (as it needs one start state).
        observation_scale: ``(mean, std)`` of the O measured dimensions; default: over the
            references' observations. None for a model that measures the whole state
            (``observe`` returns its argument): its observations take ``state_scale``.

    States and observations are standardised by the mean and standard deviation of each
    dimension over the references (we divide by σ, not σ²).
    """

    def __init__(
        self,
        model: Simulator,
        trajectories,
        limits: Limits,
        sigma_obs: float = 0.1,
        combine: str = "sum",
        shooting_windows: int = 1,
        defects: str = "constraint",
        sigma_def: float = 0.1,
        defect_form: str = "vector",
        state_scale: tuple | None = None,
        shooting_spread: float = SHOOTING_SPREAD,
        shooting_start: str = "rollout",
        inputs=None,
        observation_scale: tuple | None = None,
    ):
        if not isinstance(model, Simulator):
            raise TypeError(
                f"model must be a Simulator (physid.core.simulator), got {type(model).__name__}"
            )
        if not isinstance(limits, Limits):
            raise TypeError(f"limits must be a Limits, got {type(limits).__name__}")
        if tuple(model.param_names) != tuple(limits.names):
            raise ValueError(
                f"limits name the parameters {limits.names}, the model estimates "
                f"{tuple(model.param_names)}"
            )
        self.combine = check_choice("combine", combine, ("sum", "product"))
        self.defects = check_choice("defects", defects, ("constraint", "likelihood"))
        self.defect_form = check_choice("defect_form", defect_form, ("vector", "squared"))
        self.sigma_obs = check_positive("sigma_obs", sigma_obs)
        self.sigma_def = check_positive("sigma_def", sigma_def)
        self.shooting_spread = check_nonnegative("shooting_spread", shooting_spread)
        self.shooting_start = check_choice(
            "shooting_start", shooting_start, ("rollout", "recorded")
        )
        self.state_size = check_count("model.state_size", model.state_size)
        self.observation_size = check_count("model.observation_size", model.observation_size)
        check_count("model.input_size", model.input_size, 0)
        data = check_trajectories(trajectories, self.state_size)
        n_steps = data.shape[1] - 1
        windows = check_count("shooting_windows", shooting_windows, maximum=n_steps)
        if n_steps % windows:
            raise ValueError(
                f"shooting_windows must divide the {n_steps} steps, got {shooting_windows!r}"
            )
        self.inputs = _check_inputs(inputs, model, data)
        if windows > 1 and not torch.allclose(data[:, 0], data[:1, 0].expand_as(data[:, 0])):
            raise ValueError(
                "trajectories must share one start state for multiple shooting over several "
                "references"
            )
        if (
            windows > 1
            and self.inputs is not None
            and not torch.equal(self.inputs, self.inputs[:1].expand_as(self.inputs))
        ):
            raise ValueError("inputs must be the same for every reference for multiple shooting")
        self.model, self.limits, self.data = model, limits, data
        self.windows = windows
        self.n_steps, self.horizon = n_steps, n_steps // windows
        self.state_mean, self.state_std = _check_scale(
            "state_scale",
            _mean_std(data) if state_scale is None else state_scale,
            self.state_size,
        )
        # A simulator whose observe() returns its argument measures the whole state: its
        # observations are the standardised states, one standardisation shared with the
        # defects (so their gradients add up before the division, as in Eq. inf-ms).
        measured = model.observe(data)
        self.measures_state = measured is data
        if self.measures_state and observation_scale is not None:
            raise ValueError(
                "observation_scale must be None: the simulator measures the whole state "
                f"(give state_scale), got {observation_scale!r}"
            )
        if self.measures_state:
            self.observation_mean, self.observation_std = self.state_mean, self.state_std
        else:
            self.observation_mean, self.observation_std = _check_scale(
                "observation_scale",
                _mean_std(measured) if observation_scale is None else observation_scale,
                self.observation_size,
            )
        self.observed = self.observations(data[:, 1:])  # (R, T, O)
        # A simulator that sums its residuals itself (ResidualSimulator) gets the measurements
        # in their own units and one weight per entry: (y − ŷ) / (std σ) is the standardised
        # residual. Multiple shooting compares one prediction with every reference, so it
        # needs one reference for that.
        self.fused = isinstance(model, ResidualSimulator) and (windows == 1 or data.shape[0] == 1)
        self._measured = measured[:, 1:]
        self._weight = 1.0 / (self.observation_std * self.sigma_obs)
        self.n_params = limits.dim
        self.n_shoot = self.state_size * (windows - 1)
        self.dim = self.n_params + self.n_shoot
        self._boundaries = torch.arange(1, windows) * self.horizon - 1  # index of s_{w h}

    # -- coordinates -----------------------------------------------------------------------
    def standardise(self, states: Tensor) -> Tensor:
        """States (..., S) in standardised units: each dimension less its mean, over its std."""
        return (states - self.state_mean) / self.state_std

    def unstandardise(self, states: Tensor) -> Tensor:
        """The inverse of :meth:`standardise`."""
        return self.state_mean + self.state_std * states

    def standardise_observations(self, measured: Tensor) -> Tensor:
        """Measurements (..., O) in standardised units, like :meth:`standardise`."""
        return (measured - self.observation_mean) / self.observation_std

    def observations(self, states: Tensor) -> Tensor:
        """The standardised measurements (..., O) of states (..., S): what the likelihood
        compares with the references (the standardised states if the model measures them)."""
        if self.measures_state:
            return self.standardise(states)
        return self.standardise_observations(self.model.observe(states))

    def parameters(self, x: Tensor) -> Tensor:
        """Physical parameters (N, M) of the particles ``x``."""
        return self.limits.denormalise(self.check_x(x, "x")[..., : self.n_params])

    def shooting_states(self, x: Tensor) -> Tensor:
        """The start states (N, W−1, S) of windows 2…W, in physical units."""
        shoot = x[..., self.n_params :].reshape(*x.shape[:-1], self.windows - 1, self.state_size)
        return self.unstandardise(shoot)

    # -- simulation ------------------------------------------------------------------------
    def _windows(self, x: Tensor) -> tuple[Tensor, Tensor, Tensor | None, Tensor | None]:
        """What the rollouts of the particles ``x`` start from: the parameters (N, 1, M), the
        start states (N, R, S) for single shooting or (N, W, S) for multiple, the inputs
        (1, R, T, U) or (1, W, h, U) (or None), and the defects' shooting states (N, W−1, S)
        in standardised units (None for single shooting)."""
        theta = self.limits.denormalise(x[..., : self.n_params])[:, None, :]
        s0, u, size = self.data[:, 0], self.inputs, self.state_size  # (R, S), (R, T, U)
        if self.windows == 1:
            return theta, s0[None], None if u is None else u[None], None
        shoot = x[:, self.n_params :].reshape(-1, self.windows - 1, size)
        starts = torch.cat((s0[:1].expand(x.shape[0], 1, size), self.unstandardise(shoot)), 1)
        if u is not None:
            u = u[0].reshape(self.windows, self.horizon, -1)[None]
        return theta, starts, u, shoot

    def _simulate_windows(self, x: Tensor) -> tuple[Tensor, Tensor | None]:
        """Predicted standardised observations (N, R', T, O) and the defects (N, W−1, S) or
        None (single shooting)."""
        theta, starts, u, shoot = self._windows(x)
        if shoot is None:
            states = self.model.rollout(theta, starts, self.n_steps, u)
            return self.observations(states), None  # (N, R, T, O)
        states = self.model.rollout(theta, starts, self.horizon, u)  # (N, W, h, S)
        if self.measures_state:
            pred = self.standardise(states)
            defects = shoot - pred[:, :-1, -1]
        else:  # standardise only the windows' ends
            pred = self.observations(states)
            defects = shoot - self.standardise(states[:, :-1, -1])
        return pred.reshape(x.shape[0], 1, self.n_steps, self.observation_size), defects

    def _fit(self, x: Tensor) -> tuple[Tensor, Tensor | None]:
        """The log-likelihood (N, R) of each reference and the defects (N, W−1, S) or None:
        :meth:`_per_reference` of :meth:`_simulate_windows`, or, for a
        :class:`~physid.core.simulator.ResidualSimulator`, the same from the sums of squared
        residuals it returns."""
        if not self.fused:
            pred, defects = self._simulate_windows(x)
            return self._per_reference(pred), defects
        theta, starts, u, shoot = self._windows(x)
        if shoot is None:
            measured, steps = self._measured[None], self.n_steps  # (1, R, T, O)
        else:
            measured = self._measured[0].reshape(self.windows, self.horizon, -1)[None]
            steps = self.horizon
        last, squares = self.model.rollout_residuals(
            theta, starts, steps, u, measured, self._weight
        )
        count = self.n_steps * self.observation_size
        log_norm = -0.5 * count * math.log(2 * math.pi * self.sigma_obs**2)
        if shoot is None:
            return -0.5 * squares + log_norm, None  # (N, R)
        per_ref = -0.5 * squares.sum(-1, keepdim=True) + log_norm  # (N, 1)
        return per_ref, shoot - self.standardise(last[:, :-1])

    def _per_reference(self, pred: Tensor) -> Tensor:
        """Log-likelihood (N, R) of each reference under the predicted observations, Eq.
        (inf-lik)."""
        squares = (pred - self.observed[None]).square().sum((-1, -2))  # (N, R)
        count = self.n_steps * self.observation_size
        log_norm = -0.5 * count * math.log(2 * math.pi * self.sigma_obs**2)
        return -0.5 * squares / self.sigma_obs**2 + log_norm

    def _combine(self, per_ref: Tensor) -> Tensor:
        """The sum (mixture, logsumexp) or the product over the references, Eq. (inf-combine)."""
        if self.combine == "product":
            return per_ref.sum(-1)
        if per_ref.shape[-1] == 1:  # one reference: the mixture is that reference
            return per_ref[..., 0]
        return torch.logsumexp(per_ref, -1) - math.log(per_ref.shape[-1])

    def _log_likelihood(self, x: Tensor) -> Tensor:
        return self._combine(self._fit(x)[0])

    def _log_density(self, x: Tensor) -> Tensor:
        return self._density_and_constraints(x)[0]

    def _defect_constraints(self, defects: Tensor) -> Tensor:
        if self.defect_form == "squared":
            return (defects**2).sum(-1) / self.sigma_def**2
        return defects.reshape(defects.shape[0], -1) / self.sigma_def

    def density_and_constraints(self, x: Tensor) -> tuple[Tensor, Tensor]:
        """The log-density and the constraints of ``x`` from one simulation."""
        return self._density_and_constraints(self.check_x(x))

    def _density_and_constraints(self, x: Tensor) -> tuple[Tensor, Tensor]:
        per_ref, defects = self._fit(x)
        value = self._combine(per_ref)
        none = x.new_zeros(x.shape[:-1] + (0,))
        if defects is None:
            return value, none
        if self.defects == "likelihood":
            value = value - 0.5 * (defects**2).sum((-1, -2)) / self.sigma_def**2
            return value, none
        return value, self._defect_constraints(defects)

    def defect_rms(self, x: Tensor) -> Tensor:
        """The root-mean-square defect (N,) of particles ``x`` in units of σ_def, over every
        window boundary and state entry: how far multiple shooting's windows are from joining
        into one trajectory (0 for single shooting; ``nan`` where a rollout is not finite).
        Particles may lie outside the limits, as a sampler's may."""
        x = self.check_x(x, "x")
        with torch.no_grad():
            _, defects = self._fit(x)
        if defects is None:
            return x.new_zeros(x.shape[0])
        return (defects / self.sigma_def).pow(2).flatten(1).mean(1).sqrt()

    # -- start particles -------------------------------------------------------------------
    def auxiliary(self, z: Tensor, seed: int = 0) -> Tensor:
        """Start shooting states (N, S(W−1)) for normalised parameters ``z`` (N, M).

        With ``shooting_start="rollout"`` each particle's shooting states are the states of
        its *own* single-shooting rollout (of its own parameters, from the recorded start) at
        the window boundaries: no reference is favoured, the data enter only through the start
        state (and the shared input). With ``"recorded"`` they are the first reference's
        recorded states at the boundaries (:meth:`on_reference`). Either way Gaussian noise of
        standard deviation ``shooting_spread`` (standardised units) drawn with ``seed`` is
        added, so that no two particles start on the same states.
        """
        z = self.check_x(torch.cat((z, z.new_zeros(z.shape[0], self.n_shoot)), 1), "z")
        if self.windows == 1:
            return z.new_zeros((z.shape[0], 0))
        if self.shooting_start == "recorded":
            shoot = self.on_reference(z[:, : self.n_params])[:, self.n_params :]
        else:
            theta = self.limits.denormalise(z[:, : self.n_params])
            u = None if self.inputs is None else self.inputs[0]
            with torch.no_grad():
                states = self.model.rollout(theta, self.data[0, 0], self.n_steps, u)
            shoot = self.standardise(states[:, self._boundaries]).reshape(z.shape[0], -1)
            if not torch.isfinite(shoot).all():
                raise ValueError("a start particle's rollout is not finite; start elsewhere")
        generator = torch.Generator().manual_seed(check_seed("seed", seed))
        noise = torch.randn(shoot.shape, generator=generator, dtype=torch.float64)
        return shoot + self.shooting_spread * noise

    def on_reference(self, z: Tensor, reference: int = 0) -> Tensor:
        """Particles (N, dim) with parameters ``z`` (N, M) and every shooting state on the
        recorded states of reference ``reference`` (the data's states at the boundaries)."""
        reference = check_count("reference", reference, 0, self.data.shape[0] - 1)
        z = self.check_x(torch.cat((z, z.new_zeros(z.shape[0], self.n_shoot)), 1), "z")
        shoot = self.standardise(self.data[reference, 1:][self._boundaries]).reshape(1, -1)
        return torch.cat((z[:, : self.n_params], shoot.expand(z.shape[0], -1)), 1)

    # -- evaluation ------------------------------------------------------------------------
    def rollouts(self, theta: Tensor) -> Tensor:
        """Single-shooting trajectories (N, R, T+1, S) of physical parameters ``theta`` (N, M)."""
        theta = self.model.check_theta(theta)
        if theta.ndim != 2:
            raise ValueError(
                f"theta must have shape (N, {self.n_params}), got {tuple(theta.shape)}"
            )
        s0, u = self.data[:, 0], None if self.inputs is None else self.inputs[None]
        with torch.no_grad():
            pred = self.model.rollout(theta[:, None, :], s0[None], self.n_steps, u)
        start = s0[None, :, None].expand(theta.shape[0], -1, 1, self.state_size)
        return torch.cat((start, pred), 2)

    def mean_log_likelihood(self, theta: Tensor) -> Tensor:
        """Per-observation single-shooting log-likelihood of each particle (N,), sum-combined."""
        rollouts = self.rollouts(theta)
        per_ref = self._per_reference(self.observations(rollouts[:, :, 1:]))
        count = self.n_steps * self.observation_size
        return (torch.logsumexp(per_ref, -1) - math.log(per_ref.shape[-1])) / count
