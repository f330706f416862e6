"""The generic pieces of Part II: any simulator behind the likelihood, the SVGD kernel object,
and the estimator registry.

A driven, damped oscillator with a known input force and a position-only measurement, defined
here and nowhere in the library, plugs into single and multiple shooting, the sum and the
product over references and the estimators without a change to the likelihood.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from physid.core.simulator import Simulator
from physid.core.target import Limits
from physid.inference.base import REGISTRY, Estimator, Scaled, Tensor, paper_order, register
from physid.inference.chapters import inference_synthetic as ex
from physid.inference.estimators import ESTIMATORS, make_estimator
from physid.inference.likelihood import GaussianTarget, TrajectoryLikelihood
from physid.inference.svgd import CSVGD, SVGD, Kernel, RBFKernel, median_bandwidth, svgd_direction

F64 = torch.float64


class DrivenOscillator:
    """``ẍ = u(t) − k x − c ẋ`` (unit mass), semi-implicit Euler; only ``x`` is measured."""

    param_names = ("k", "c")
    state_size = 2
    input_size = 1
    observation_size = 1
    dt = 0.05

    def check_theta(self, theta: Tensor) -> Tensor:
        theta = torch.as_tensor(theta, dtype=F64)
        if theta.shape[-1:] != (2,) or not torch.isfinite(theta).all() or (theta < 0).any():
            raise ValueError(f"theta must be finite, non-negative (k, c), got {theta}")
        return theta

    def rollout(self, theta: Tensor, s0: Tensor, n_steps: int, u: Tensor | None = None) -> Tensor:
        k, c, x, v = theta[..., 0], theta[..., 1], s0[..., 0], s0[..., 1]
        shape = torch.broadcast_shapes(k.shape, x.shape, u.shape[:-2])
        k, c, x, v = (t.expand(shape) for t in (k, c, x, v))
        states = []
        for t in range(n_steps):
            v = v + self.dt * (u[..., t, 0] - k * x - c * v)
            x = x + self.dt * v
            states.append(torch.stack((x, v), -1))
        return torch.stack(states, -2)

    def observe(self, states: Tensor) -> Tensor:
        return states[..., :1]


TRUTH = torch.tensor([4.0, 0.3], dtype=F64)
LIMITS = Limits(("k", "c"), np.array([1.0, 0.0]), np.array([9.0, 1.0]))
STEPS = 40


def forces(n_refs: int = 1) -> Tensor:
    t = torch.arange(STEPS, dtype=F64) * DrivenOscillator.dt
    return torch.stack([torch.sin((1.0 + r) * t) for r in range(n_refs)])[..., None]


def references(u: Tensor, s0=(1.0, 0.0)) -> Tensor:
    sim = DrivenOscillator()
    start = torch.tensor(s0, dtype=F64).expand(u.shape[0], 2)
    with torch.no_grad():
        states = sim.rollout(TRUTH, start, STEPS, u)
    return torch.cat((start[:, None], states), 1)


def oscillator_target(windows: int = 1, n_refs: int = 1, **options) -> TrajectoryLikelihood:
    u = forces(n_refs)
    return TrajectoryLikelihood(
        DrivenOscillator(), references(u), LIMITS, shooting_windows=windows, inputs=u, **options
    )


def test_the_oscillator_is_a_simulator_and_the_pendulum_too():
    assert isinstance(DrivenOscillator(), Simulator)
    pendulum = ex.point_mass_model(compiled=False)
    assert isinstance(pendulum, Simulator)
    assert pendulum.param_names == ("l1", "l2") and pendulum.state_size == 4
    assert pendulum.input_size == 0 and pendulum.observation_size == 4
    states = torch.zeros(3, 4, dtype=F64)
    assert pendulum.observe(states) is states
    with pytest.raises(ValueError, match=r"\bu\b"):
        pendulum.rollout(TRUTH, torch.zeros(4, dtype=F64), 3, u=torch.zeros(3, 1, dtype=F64))


def test_single_shooting_peaks_at_the_truth_and_the_input_matters():
    target = oscillator_target()
    assert target.dim == 2 and target.observed.shape == (1, STEPS, 1)
    z = LIMITS.normalise(torch.stack((TRUTH, TRUTH * 1.2, TRUTH * 0.8)))
    value = target.log_likelihood(z)
    assert value[0] > value[1] and value[0] > value[2]
    unforced = TrajectoryLikelihood(
        DrivenOscillator(), target.data, LIMITS, inputs=torch.zeros(1, STEPS, 1, dtype=F64)
    )
    assert not torch.allclose(unforced.log_likelihood(z), value)
    rollouts = target.rollouts(TRUTH[None])
    torch.testing.assert_close(rollouts[0], target.data)
    per_obs = target.mean_log_likelihood(TRUTH[None])
    assert per_obs.item() == pytest.approx(-0.5 * math.log(2 * math.pi * 0.1**2))


def test_multiple_shooting_on_the_reference_matches_single_shooting():
    single, multiple = oscillator_target(), oscillator_target(windows=4)
    assert multiple.dim == 2 + 2 * 3 and multiple.n_shoot == 6
    z = LIMITS.normalise(torch.stack((TRUTH, TRUTH * 1.1)))
    x = multiple.on_reference(z)
    value, g = multiple.density_and_constraints(x)
    assert g.shape == (2, 6)
    torch.testing.assert_close(g[0], torch.zeros(6, dtype=F64), atol=1e-9, rtol=0)
    torch.testing.assert_close(value[0], single.log_likelihood(z)[0])
    start = multiple.initial(8, seed=2)
    assert start.shape == (8, 8) and torch.isfinite(start).all()
    grad = multiple.log_density_and_grad(start)[1]
    assert grad.shape == (8, 8) and torch.isfinite(grad).all() and grad.abs().sum() > 0


def test_sum_and_product_over_references_with_their_own_inputs():
    u = forces(2)
    refs = references(u)
    z = LIMITS.normalise(torch.stack((TRUTH, TRUTH * 0.9)))
    both = {
        combine: TrajectoryLikelihood(
            DrivenOscillator(), refs, LIMITS, combine=combine, inputs=u
        ).log_likelihood(z)
        for combine in ("sum", "product")
    }
    scale = TrajectoryLikelihood(DrivenOscillator(), refs, LIMITS, inputs=u)
    scales = {
        "state_scale": (scale.state_mean, scale.state_std),
        "observation_scale": (scale.observation_mean, scale.observation_std),
    }
    each = torch.stack(
        [
            TrajectoryLikelihood(
                DrivenOscillator(), refs[r : r + 1], LIMITS, inputs=u[r : r + 1], **scales
            ).log_likelihood(z)
            for r in range(2)
        ],
        -1,
    )
    torch.testing.assert_close(both["sum"], torch.logsumexp(each, -1) - math.log(2))
    torch.testing.assert_close(both["product"], each.sum(-1))


def test_estimators_run_on_the_oscillator():
    single = oscillator_target()
    svgd = make_estimator("SVGD", single, n_particles=12, seed=0, stepsize=0.05)
    history = svgd.run(40, record_every=40, progress=False)
    start, end = (torch.as_tensor(p) for p in (history.particles[0], history.particles[-1]))
    assert single.log_density(end).mean() > single.log_density(start).mean()
    assert svgd.parameters().shape == (12, 2)
    multiple = oscillator_target(windows=4, defects="constraint")
    csvgd = make_estimator("CSVGD", multiple, n_particles=12, seed=0)
    csvgd.run(5, progress=False)
    assert csvgd.particles.shape == (12, 8) and torch.isfinite(csvgd.particles).all()
    bayessim = make_estimator(
        "BayesSim", single, n_particles=8, seed=0, **REGISTRY["BayesSim"].smoke
    )
    bayessim.run(2, progress=False)
    assert bayessim.parameters().shape == (8, 2) and len(bayessim.diagnostics()["losses"]) == 2


def test_bad_oscillator_input_is_refused_naming_the_argument():
    u, refs = forces(2), references(forces(2))
    sim = DrivenOscillator()
    with pytest.raises(ValueError, match=r"\binputs\b"):
        TrajectoryLikelihood(sim, refs, LIMITS)  # the oscillator needs its input
    with pytest.raises(ValueError, match=r"\binputs\b"):
        TrajectoryLikelihood(sim, refs, LIMITS, inputs=u[:, :-1])
    with pytest.raises(ValueError, match=r"\binputs\b"):
        TrajectoryLikelihood(sim, refs, LIMITS, inputs=u * math.nan)
    with pytest.raises(ValueError, match=r"\binputs\b"):  # multiple shooting: one shared input
        TrajectoryLikelihood(sim, references(u), LIMITS, inputs=u, shooting_windows=4)
    with pytest.raises(ValueError, match=r"\btrajectories\b"):
        TrajectoryLikelihood(sim, torch.zeros(1, STEPS + 1, 4, dtype=F64), LIMITS, inputs=u[0])
    with pytest.raises(ValueError, match=r"\bobservation_scale\b"):
        scale = (np.zeros(2), np.ones(2))
        TrajectoryLikelihood(sim, refs, LIMITS, inputs=u, observation_scale=scale)
    with pytest.raises(ValueError, match=r"\blimits\b"):
        TrajectoryLikelihood(sim, refs, ex.length_limits(), inputs=u)
    with pytest.raises(TypeError, match=r"\bmodel\b"):
        TrajectoryLikelihood(object(), refs, LIMITS, inputs=u)


# -- the SVGD kernel ---------------------------------------------------------------------------
def test_the_default_kernel_is_the_median_heuristic_rbf():
    gen = torch.Generator().manual_seed(0)
    x = torch.rand(7, 3, generator=gen, dtype=F64)
    grad = torch.randn(7, 3, generator=gen, dtype=F64)
    h = median_bandwidth(x)
    k = torch.exp(-torch.cdist(x, x).pow(2) / h)
    expected = (k.T @ grad + (2.0 / h) * (x * k.sum(0)[:, None] - k.T @ x)) / 7
    assert torch.equal(svgd_direction(x, grad), expected)
    assert torch.equal(svgd_direction(x, grad, RBFKernel(1.0)), expected)
    assert RBFKernel(0.1).gram(x)[1] == pytest.approx(0.1 * h)
    assert RBFKernel(0.1, bandwidth=torch.tensor(0.3)).gram(x)[1] == pytest.approx(0.3)
    assert isinstance(RBFKernel(), Kernel)


class IMQKernel:
    """The inverse multiquadric ``k(x, y) = (1 + ‖x − y‖²)^(−1/2)``, counting its calls."""

    def __init__(self):
        self.calls = 0

    def __call__(self, x: Tensor) -> tuple[Tensor, Tensor]:
        self.calls += 1
        base = 1.0 + torch.cdist(x, x).pow(2)
        k = base.pow(-0.5)
        # ∇_{x_j} k(x_j, x_i) = (x_i − x_j) base^(−3/2)
        w = base.pow(-1.5)
        return k, x * w.sum(0)[:, None] - w.T @ x


@pytest.mark.parametrize("cls", [SVGD, CSVGD])
def test_a_custom_kernel_is_used(cls):
    target = GaussianTarget([0.45, 0.55], [[0.01, 0.0], [0.0, 0.02]])

    def final(**options):
        estimator = cls(target, n_particles=10, seed=1, stepsize=0.02, **options)
        estimator.run(5, progress=False)
        return estimator.particles

    default, rbf = final(), final(kernel=RBFKernel())
    assert torch.equal(default, rbf)
    imq = IMQKernel()
    custom = final(kernel=imq)
    assert imq.calls == 5 and not torch.allclose(custom, default)
    assert not torch.allclose(final(kernel=RBFKernel(0.1)), default)


# -- the registry ------------------------------------------------------------------------------
class Stay(Estimator):
    """Particles that never move (an estimator for the registry test)."""

    def __init__(self, target, n_particles=100, seed=0, x0=None, jitter: float = 0.0):
        super().__init__(target, n_particles, seed, x0)
        self.jitter = jitter

    def _start(self, x0: Tensor) -> None:
        self.x = x0

    def _step(self) -> None:
        pass

    @property
    def particles(self) -> Tensor:
        return self.x


def test_registering_an_estimator_makes_it_appear_everywhere():
    s = ex.with_sizes(
        ex.SIZES["quick"], n_particles=8, n_steps=10, windows=2, multimodal_steps=10,
        truth_samples=50,
    )
    assert "Stay" not in ESTIMATORS
    register("Stay", options={"jitter": 0.5}, scales={"quick": Scaled(3)}, smoke={})(Stay)
    try:
        assert Stay.name == "Stay" and list(ESTIMATORS)[-1] == "Stay"
        assert ESTIMATORS["Stay"] is Stay and dict(ex.OPTIONS["Stay"]) == {"jitter": 0.5}
        settings = ex.estimator_settings("Stay", s)
        assert (settings.iterations, settings.windows) == (3, 1)
        assert settings.options == {"jitter": 0.5}
        assert ex.estimator_settings("Stay", ex.with_sizes(s, scale="default")).iterations == (
            s.iterations
        )
        target = ex.synthetic_problem(s).target()
        estimator = make_estimator("Stay", target, n_particles=8, **settings.options)
        assert estimator.jitter == 0.5
        (run,) = ex.compare_estimators(s, ("Stay",), seeds=(0,))
        assert run.name == "Stay" and list(run.iterations) == [0, 1, 2, 3]
        np.testing.assert_array_equal(run.theta[0], run.theta[-1])
        with pytest.raises(ValueError, match=r"\bname\b"):
            register("Stay")
        assert paper_order()[-1] == "Stay"  # the paper does not run it: last
        with pytest.raises(ValueError, match="paper_order 0 is CSVGD's"):
            register("Other", paper_order=0)
        with pytest.raises(ValueError, match="paper_order"):
            register("Other", paper_order=-1)
    finally:
        REGISTRY.remove("Stay")
    assert "Stay" not in ESTIMATORS and "Stay" not in ex.OPTIONS


def test_paper_order_is_the_papers_table_order():
    assert paper_order() == ("CSVGD", "SVGD", "Emcee", "SGLD", "NUTS", "CEM", "BayesSim")
