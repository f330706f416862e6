"""Bad input to every public entry point of Part II fails at once, naming the argument.

Each case calls one entry point with one bad value (NaN, ±inf, negative, zero, the wrong
shape, the wrong dtype or kind, out of range) and expects a ValueError (a TypeError for the
wrong kind) whose message names the argument. numpy and torch scalars are accepted where a
number is meant. Everything here runs on a pendulum of a few steps, eagerly.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from physid.core.target import Limits
from physid.inference.base import REGISTRY, AdaGrad, Scaled, register
from physid.inference.chapters import inference_synthetic as ex
from physid.inference.estimators import ESTIMATORS, make_estimator
from physid.inference.likelihood import (
    GaussianTarget,
    MixtureTarget,
    TrajectoryLikelihood,
    check_trajectories,
)
from physid.inference.metrics import gaussian_kl, knn_kl, mmd
from physid.inference.pendulum import DoublePendulum, rollout
from physid.inference.svgd import RBFKernel, median_bandwidth, svgd_direction

NAN, INF = math.nan, math.inf
F64 = torch.float64


def model() -> DoublePendulum:
    return ex.point_mass_model(compiled=False)


def refs(steps: int = 8) -> torch.Tensor:
    return ex.simulate_references(model(), np.array([[1.5, 2.0]]), steps)


def target(**options) -> TrajectoryLikelihood:
    return TrajectoryLikelihood(model(), refs(), ex.length_limits(), **options)


def ms_target() -> TrajectoryLikelihood:
    return target(shooting_windows=2, defects="constraint")


def x(n: int = 4) -> torch.Tensor:
    return torch.full((n, 2), 0.5, dtype=F64)


THETA = torch.tensor([[1.5, 2.0]], dtype=F64)
S0 = torch.tensor(ex.SIDEWAYS, dtype=F64)
TINY = ex.with_sizes(
    ex.SIZES["quick"], n_particles=8, iterations=2, n_steps=10, windows=2, multimodal_steps=10
)

# (entry point, bad call, expected error, a word the message must contain)
CASES = [
    # the simulator
    ("DoublePendulum", lambda: DoublePendulum(dt=NAN), ValueError, "dt"),
    ("DoublePendulum", lambda: DoublePendulum(dt=0.0), ValueError, "dt"),
    ("DoublePendulum", lambda: DoublePendulum(dt=-0.01), ValueError, "dt"),
    ("DoublePendulum", lambda: DoublePendulum(dt=INF), ValueError, "dt"),
    ("DoublePendulum", lambda: DoublePendulum(dt="0.01"), TypeError, "dt"),
    ("DoublePendulum", lambda: DoublePendulum(gravity=NAN), ValueError, "gravity"),
    ("DoublePendulum", lambda: DoublePendulum(gravity=-9.81), ValueError, "gravity"),
    ("DoublePendulum", lambda: DoublePendulum(fixed={"m1": -1.0}), ValueError, "m1"),
    ("DoublePendulum", lambda: DoublePendulum(fixed={"m2": NAN}), ValueError, "m2"),
    ("DoublePendulum", lambda: DoublePendulum(fixed={"l1": 0.0}), ValueError, "l1"),
    ("DoublePendulum", lambda: DoublePendulum(fixed={"d1": -0.1}), ValueError, "d1"),
    ("DoublePendulum", lambda: DoublePendulum(fixed={"mass": 1.0}), ValueError, "fixed"),
    ("DoublePendulum", lambda: DoublePendulum(names="l1"), TypeError, "names"),
    ("DoublePendulum", lambda: DoublePendulum(names=("l1", "l1")), ValueError, "names"),
    ("DoublePendulum", lambda: DoublePendulum(compiled="yes"), TypeError, "compiled"),
    ("simulate", lambda: model().simulate(torch.tensor([NAN, 2.0], dtype=F64), S0, 3),
     ValueError, "theta"),
    ("simulate", lambda: model().simulate(torch.tensor([INF, 2.0], dtype=F64), S0, 3),
     ValueError, "theta"),
    ("simulate", lambda: model().simulate(torch.tensor([-1.5, 2.0], dtype=F64), S0, 3),
     ValueError, "l1"),
    ("simulate", lambda: model().simulate(torch.tensor([1.5, 0.0], dtype=F64), S0, 3),
     ValueError, "l2"),
    ("simulate", lambda: model().simulate(torch.ones(3, dtype=F64), S0, 3), ValueError, "theta"),
    ("simulate", lambda: model().simulate(torch.ones(2), S0, 3), TypeError, "theta"),
    ("simulate", lambda: model().simulate(THETA, S0[:3], 3), ValueError, "s0"),
    ("simulate", lambda: model().simulate(THETA, S0 * NAN, 3), ValueError, "s0"),
    ("simulate", lambda: model().simulate(THETA, S0.float(), 3), TypeError, "s0"),
    ("simulate", lambda: model().simulate(THETA, S0, 0), ValueError, "n_steps"),
    ("simulate", lambda: model().simulate(THETA, S0, -2), ValueError, "n_steps"),
    ("simulate", lambda: model().simulate(THETA, S0, 3.0), TypeError, "n_steps"),
    ("simulate_autograd", lambda: model().simulate_autograd(THETA * NAN, S0, 3),
     ValueError, "theta"),
    ("energy", lambda: model().energy(THETA, torch.zeros(5, 3, dtype=F64)), ValueError, "states"),
    ("tip_positions", lambda: model().tip_positions(THETA * -1, torch.zeros(1, 5, 4, dtype=F64)),
     ValueError, "l1"),
    ("rollout", lambda: rollout(model().constants(THETA), S0, 3, dt=0.0), ValueError, "dt"),
    ("rollout", lambda: rollout(model().constants(THETA), S0, 0, dt=0.01), ValueError, "n_steps"),
    # limits, targets and likelihoods
    ("Limits", lambda: Limits(("l1", "l2"), [NAN, 0.5], [5.0, 5.0]), ValueError, "limits"),
    ("Limits", lambda: Limits(("l1", "l2"), [0.5, 0.5], [5.0, -INF]), ValueError, "limits"),
    ("Limits", lambda: Limits(("l1", "l2"), [0.5], [5.0, 5.0]), ValueError, "one entry"),
    ("Limits", lambda: Limits(("l1", "l2"), [5.0, 0.5], [0.5, 5.0]), ValueError, "min"),
    ("Limits.sobol", lambda: ex.length_limits().sobol(0), ValueError, "n"),
    ("Limits.sobol", lambda: ex.length_limits().sobol(4, seed=-1), ValueError, "seed"),
    ("Limits.sobol", lambda: ex.length_limits().sobol(4, seed=None), ValueError, "seed"),
    ("TrajectoryLikelihood", lambda: target(sigma_obs=NAN), ValueError, "sigma_obs"),
    ("TrajectoryLikelihood", lambda: target(sigma_obs=0.0), ValueError, "sigma_obs"),
    ("TrajectoryLikelihood", lambda: target(sigma_obs=-0.1), ValueError, "sigma_obs"),
    ("TrajectoryLikelihood", lambda: target(sigma_obs=INF), ValueError, "sigma_obs"),
    ("TrajectoryLikelihood", lambda: target(sigma_def=0.0), ValueError, "sigma_def"),
    ("TrajectoryLikelihood", lambda: target(shooting_spread=-0.1), ValueError, "shooting_spread"),
    ("TrajectoryLikelihood", lambda: target(shooting_spread=NAN), ValueError, "shooting_spread"),
    ("TrajectoryLikelihood", lambda: target(combine="mean"), ValueError, "combine"),
    ("TrajectoryLikelihood", lambda: target(defects="soft"), ValueError, "defects"),
    ("TrajectoryLikelihood", lambda: target(defect_form="abs"), ValueError, "defect_form"),
    ("TrajectoryLikelihood", lambda: target(shooting_windows=0), ValueError, "shooting_windows"),
    ("TrajectoryLikelihood", lambda: target(shooting_windows=3), ValueError, "shooting_windows"),
    ("TrajectoryLikelihood", lambda: target(shooting_windows=2.0), TypeError, "shooting_windows"),
    ("TrajectoryLikelihood", lambda: target(shooting_windows=16), ValueError, "shooting_windows"),
    ("TrajectoryLikelihood", lambda: target(state_scale=(np.zeros(4), np.zeros(4))),
     ValueError, "state_scale"),
    ("TrajectoryLikelihood", lambda: target(state_scale=(np.zeros(3), np.ones(3))),
     ValueError, "state_scale"),
    ("TrajectoryLikelihood", lambda: TrajectoryLikelihood("pendulum", refs(), ex.length_limits()),
     TypeError, "model"),
    ("TrajectoryLikelihood",
     lambda: TrajectoryLikelihood(model(), refs() * NAN, ex.length_limits()),
     ValueError, "trajectories"),
    ("check_trajectories", lambda: check_trajectories(np.zeros((1, 5, 3)), 4), ValueError,
     "trajectories"),
    ("check_trajectories", lambda: check_trajectories(np.zeros((1, 1, 4)), 4), ValueError,
     "trajectories"),
    ("check_trajectories", lambda: check_trajectories(np.zeros((1, 5, 4)), 0), ValueError,
     "state_size"),
    ("TrajectoryLikelihood", lambda: target(inputs=np.zeros((8, 1))), ValueError, "inputs"),
    ("TrajectoryLikelihood", lambda: target(observation_scale=(np.zeros(4), np.ones(4))),
     ValueError, "observation_scale"),
    ("log_likelihood", lambda: target().log_likelihood(torch.zeros(3, 3, dtype=F64)),
     ValueError, "x"),
    ("log_likelihood", lambda: target().log_likelihood(torch.zeros(3, 1, dtype=F64)),
     ValueError, "x"),
    ("log_likelihood", lambda: target().log_likelihood(x() * NAN), ValueError, "x"),
    ("log_likelihood", lambda: target().log_likelihood(x().float()), TypeError, "x"),
    ("log_density", lambda: target().log_density(x() * INF), ValueError, "x"),
    ("constraints", lambda: ms_target().constraints(x()), ValueError, "x"),
    ("density_and_constraints", lambda: ms_target().density_and_constraints(x()),
     ValueError, "x"),
    ("log_prior", lambda: target().log_prior(torch.zeros(2, 5, dtype=F64)), ValueError, "x"),
    ("project", lambda: target().project(x() * NAN), ValueError, "x"),
    ("initial", lambda: ms_target().initial(0), ValueError, "n"),
    ("initial", lambda: ms_target().initial(4, seed=-3), ValueError, "seed"),
    ("initial", lambda: ms_target().initial(2.0), TypeError, "n"),
    ("on_reference", lambda: ms_target().on_reference(x(), reference=1), ValueError, "reference"),
    ("rollouts", lambda: target().rollouts(torch.tensor([[1.5, -2.0]], dtype=F64)),
     ValueError, "l2"),
    ("rollouts", lambda: target().rollouts(torch.tensor([1.5, 2.0], dtype=F64)),
     ValueError, "theta"),
    ("mean_log_likelihood", lambda: target().mean_log_likelihood(THETA * NAN), ValueError,
     "theta"),
    ("GaussianTarget", lambda: GaussianTarget([0.5, NAN], np.eye(2)), ValueError, "mean"),
    ("GaussianTarget", lambda: GaussianTarget([0.5, 0.5], -np.eye(2)), ValueError, "cov"),
    ("GaussianTarget", lambda: GaussianTarget([0.5, 0.5], np.eye(3)), ValueError, "cov"),
    ("MixtureTarget", lambda: MixtureTarget([[0.3, 0.3]], std=0.0), ValueError, "std"),
    ("MixtureTarget", lambda: MixtureTarget([[0.3, INF]], std=0.1), ValueError, "means"),
    # the SVGD pieces
    ("median_bandwidth", lambda: median_bandwidth(torch.zeros(3, dtype=F64)), ValueError, "x"),
    ("RBFKernel", lambda: RBFKernel(bandwidth=0.0), ValueError, "bandwidth"),
    ("RBFKernel", lambda: RBFKernel(bandwidth=NAN), ValueError, "bandwidth"),
    ("RBFKernel", lambda: RBFKernel(-1.0), ValueError, "bandwidth_factor"),
    ("RBFKernel", lambda: RBFKernel(INF), ValueError, "bandwidth_factor"),
    ("RBFKernel", lambda: RBFKernel("wide"), TypeError, "bandwidth_factor"),
    ("RBFKernel", lambda: RBFKernel()(x() * NAN), ValueError, "x"),
    ("svgd_direction", lambda: svgd_direction(x(), torch.zeros_like(x()), kernel="rbf"),
     TypeError, "kernel"),
    ("svgd_direction", lambda: svgd_direction(x(), torch.zeros(3, 2, dtype=F64)), ValueError,
     "grad_logp"),
    ("svgd_direction", lambda: svgd_direction(x(), torch.zeros(4, 2)), TypeError, "grad_logp"),
    ("AdaGrad", lambda: AdaGrad(0.0), ValueError, "stepsize"),
    ("AdaGrad", lambda: AdaGrad(0.1, alpha=1.0), ValueError, "alpha"),
    # metrics
    ("knn_kl", lambda: knn_kl(np.full((10, 2), NAN), np.zeros((10, 2))), ValueError, "p"),
    ("knn_kl", lambda: knn_kl(np.zeros((10, 2)), np.full((10, 2), INF)), ValueError, "q"),
    ("knn_kl", lambda: knn_kl(np.zeros((10, 2)), np.zeros((10, 2)), k=0), ValueError, "k"),
    ("knn_kl", lambda: knn_kl(np.zeros((10, 2)), np.zeros((10, 2)), l=1.5), TypeError, "l"),
    ("knn_kl", lambda: knn_kl(np.zeros((10, 2)), np.zeros((10, 3))), ValueError, "dimension"),
    ("mmd", lambda: mmd(np.zeros((4, 2)), np.zeros((4, 2)), bandwidth=0.0), ValueError,
     "bandwidth"),
    ("mmd", lambda: mmd(np.zeros((4, 2)), np.zeros((4, 2)), bandwidth=NAN), ValueError,
     "bandwidth"),
    ("mmd", lambda: mmd(np.zeros((4, 2)), np.full((4, 2), NAN)), ValueError, "q"),
    ("gaussian_kl", lambda: gaussian_kl([0, 0], np.eye(2), [0, 0, 0], np.eye(2)), ValueError,
     "mean_q"),
    ("gaussian_kl", lambda: gaussian_kl([0, 0], np.zeros((2, 2)), [0, 0], np.eye(2)),
     ValueError, "cov_p"),
    # experiment drivers
    ("sizes", lambda: ex.SIZES["huge"], ValueError, "SCALE"),
    ("Sizes", lambda: ex.with_sizes(TINY, n_particles=0), ValueError, "n_particles"),
    ("Sizes", lambda: ex.with_sizes(TINY, iterations=2.5), TypeError, "iterations"),
    ("Sizes", lambda: ex.with_sizes(TINY, windows=3), ValueError, "windows"),
    ("Sizes", lambda: ex.with_sizes(TINY, seeds=()), ValueError, "seeds"),
    ("Sizes", lambda: ex.with_sizes(TINY, seeds=(0, -1)), ValueError, "seeds"),
    ("Sizes", lambda: ex.with_sizes(TINY, n_jobs=0), ValueError, "n_jobs"),
    ("synthetic_problem", lambda: ex.synthetic_problem(TINY, seed=-1), ValueError, "seed"),
    ("synthetic_problem", lambda: ex.synthetic_problem("quick"), TypeError, "s"),
    ("run_estimator", lambda: ex.run_estimator("HMC", TINY), ValueError, "name"),
    ("run_estimator", lambda: ex.run_estimator("SVGD", TINY, seed=None), ValueError, "seed"),
    ("compare_estimators", lambda: ex.compare_estimators(TINY, ("HMC",)), ValueError, "names"),
    ("compare_estimators", lambda: ex.compare_estimators(TINY, "SVGD"), ValueError, "names"),
    ("compare_estimators", lambda: ex.compare_estimators(TINY, ("SVGD",), n_jobs=0), ValueError,
     "n_jobs"),
    ("compare_estimators", lambda: ex.compare_estimators(TINY, ("SVGD",), seeds=(1.5,)),
     TypeError, "seeds"),
    ("compare_estimators", lambda: ex.compare_estimators(TINY, ("SVGD",), problem_seed=-1),
     ValueError, "problem_seed"),
    ("evaluate", lambda: ex.evaluate(ex.synthetic_problem(TINY), np.zeros((4, 3))), ValueError,
     "theta"),
    ("evaluate", lambda: ex.evaluate(ex.synthetic_problem(TINY), np.full((4, 2), NAN)),
     ValueError, "theta"),
    ("likelihood_landscape", lambda: ex.likelihood_landscape(TINY, windows=(0,)), ValueError,
     "windows"),
    ("likelihood_landscape", lambda: ex.likelihood_landscape(TINY, truth=(1.5, NAN)),
     ValueError, "truth"),
    ("multimodal_experiment", lambda: ex.multimodal_experiment(TINY, radius=0.0), ValueError,
     "radius"),
    ("multimodal_experiment", lambda: ex.multimodal_experiment(TINY, seed=-1), ValueError,
     "seed"),
    ("multimodal_experiment", lambda: ex.multimodal_experiment(TINY, runs=()), ValueError,
     "runs"),
    ("make_estimator", lambda: make_estimator("HMC", target()), ValueError, "name"),
    ("estimator_settings", lambda: ex.estimator_settings("HMC", TINY), ValueError, "name"),
    ("estimator_settings", lambda: ex.estimator_settings("SVGD", "quick"), TypeError, "s"),
    ("Sizes", lambda: ex.with_sizes(TINY, scale="huge"), ValueError, "SCALE"),
    # the registry
    ("register", lambda: register("SVGD"), ValueError, "name"),
    ("register", lambda: register(""), TypeError, "name"),
    ("register", lambda: register("new", scales={"huge": Scaled()}), ValueError, "scales"),
    ("register", lambda: register("new", scales={"quick": 3}), TypeError, "scales"),
    ("register", lambda: register("new", options=["stepsize"]), TypeError, "options"),
    ("register", lambda: register("new", multiple_shooting="yes"), TypeError,
     "multiple_shooting"),
    ("register", lambda: register("new")(dict), TypeError, "cls"),
    ("register", lambda: register("new")(REGISTRY["SVGD"].cls), TypeError, "cls"),
    ("Scaled", lambda: Scaled(0), ValueError, "iterations"),
    ("Scaled", lambda: Scaled(2.5), TypeError, "iterations"),
]


@pytest.mark.parametrize(
    "call, error, word", [c[1:] for c in CASES], ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)]
)
def test_bad_input_is_refused_naming_the_argument(call, error, word):
    with pytest.raises(error, match=rf"\b{word}\b"):
        call()


def est_target(name: str) -> TrajectoryLikelihood:
    return ms_target() if REGISTRY[name].multiple_shooting else target()


COMMON_BAD = [
    ({"n_particles": 0}, ValueError, "n_particles"),
    ({"n_particles": -4}, ValueError, "n_particles"),
    ({"n_particles": 4.0}, TypeError, "n_particles"),
    ({"seed": -1}, ValueError, "seed"),
    ({"seed": None}, ValueError, "seed"),
    ({"seed": 0.5}, TypeError, "seed"),
    ({"x0": torch.full((8, 5), 0.5, dtype=F64)}, ValueError, "x0"),
    ({"x0": torch.full((8, 2), NAN, dtype=F64)}, ValueError, "x0"),
    ({"x0": torch.full((8, 2), 0.5)}, TypeError, "x0"),
    ({"x0": torch.full((8, 2), 1.5, dtype=F64)}, ValueError, "x0"),
]


@pytest.mark.parametrize("name", list(ESTIMATORS))
@pytest.mark.parametrize("options, error, word", COMMON_BAD)
def test_every_estimator_refuses_bad_common_arguments(name, options, error, word):
    tgt = est_target(name)
    if "x0" in options and options["x0"].shape[1] == 2 and tgt.dim != 2:
        x0 = options["x0"]
        options = {"x0": torch.cat((x0, torch.zeros(8, tgt.dim - 2, dtype=x0.dtype)), 1)}
    with pytest.raises(error, match=rf"\b{word}\b"):
        make_estimator(name, tgt, **{"n_particles": 8, **options})


@pytest.mark.parametrize("name", ["SVGD", "CSVGD", "CEM", "Emcee"])
def test_start_particles_must_be_one_per_particle(name):
    tgt = est_target(name)
    x0 = tgt.initial(4)
    with pytest.raises(ValueError, match="x0 must have 8 rows"):
        make_estimator(name, tgt, n_particles=8, x0=x0)


@pytest.mark.parametrize("name", ["SGLD", "NUTS"])
def test_a_chain_starts_from_one_row(name):
    tgt = est_target(name)
    with pytest.raises(ValueError, match="x0 must have 1 rows"):
        make_estimator(name, tgt, n_particles=8, x0=tgt.initial(2))


OPTION_BAD = [
    ("SVGD", {"stepsize": 0.0}, "stepsize"),
    ("SVGD", {"stepsize": -0.1}, "stepsize"),
    ("SVGD", {"stepsize": NAN}, "stepsize"),
    ("SVGD", {"kernel": "rbf"}, "kernel"),
    ("CSVGD", {"kernel": 0.5}, "kernel"),
    ("CSVGD", {"stepsize": -INF}, "stepsize"),
    ("CSVGD", {"penalty": -1.0}, "penalty"),
    ("CSVGD", {"multiplier_stepsize": 0.0}, "multiplier_stepsize"),
    ("CSVGD", {"limit_penalty": NAN}, "limit_penalty"),
    ("CSVGD", {"limit_multiplier_stepsize": -1.0}, "limit_multiplier_stepsize"),
    ("SGLD", {"stepsize": 0.0}, "stepsize"),
    ("SGLD", {"alpha": 1.5}, "alpha"),
    ("SGLD", {"eps": 0.0}, "eps"),
    ("CEM", {"components": 0}, "components"),
    ("CEM", {"elite_fraction": 0.0}, "elite_fraction"),
    ("CEM", {"elite_fraction": 1.5}, "elite_fraction"),
    ("CEM", {"components": 8}, "n_particles"),
    ("Emcee", {"n_particles": 0}, "n_particles"),
    ("NUTS", {"warmup_steps": -1}, "warmup_steps"),
    ("NUTS", {"max_tree_depth": 0}, "max_tree_depth"),
    ("BayesSim", {"n_simulations": 1}, "n_simulations"),
    ("BayesSim", {"every": 0}, "every"),
    ("BayesSim", {"every": 9}, "every"),
    ("BayesSim", {"statistic": "wavelet"}, "statistic"),
    ("BayesSim", {"lr": 0.0}, "lr"),
    ("BayesSim", {"lr": NAN}, "lr"),
    ("BayesSim", {"batch_size": 0}, "batch_size"),
    ("BayesSim", {"hidden": 2.0}, "hidden"),
]


@pytest.mark.parametrize("name, options, word", OPTION_BAD)
def test_estimator_options_are_checked(name, options, word):
    error = TypeError if word in ("hidden", "kernel") else ValueError
    base = {"n_particles": 8, "every": 2} if name == "BayesSim" else {"n_particles": 8}
    with pytest.raises(error, match=rf"\b{word}\b"):
        make_estimator(name, est_target(name), **{**base, **options})


def test_bayessim_needs_a_single_shooting_trajectory_target():
    with pytest.raises(ValueError, match="target"):
        make_estimator("BayesSim", ms_target())
    with pytest.raises(TypeError, match="target"):
        make_estimator("SVGD", "a target")


def test_run_checks_its_arguments():
    estimator = make_estimator("SVGD", target(), n_particles=4)
    with pytest.raises(ValueError, match="n_iterations"):
        estimator.run(-1, progress=False)
    with pytest.raises(TypeError, match="n_iterations"):
        estimator.run(1.5, progress=False)
    with pytest.raises(ValueError, match="record_every"):
        estimator.run(2, record_every=0, progress=False)
    with pytest.raises(TypeError, match="callback"):
        estimator.run(2, progress=False, callback="print")


def test_numpy_and_torch_scalars_are_accepted():
    pendulum = DoublePendulum(
        ("l1", "l2"), dt=np.float32(0.01), point_mass=True, gravity=torch.tensor(9.81),
        compiled=False,
    )
    assert pendulum.simulate(THETA, S0, np.int64(3)).shape == (1, 3, 4)
    tgt = TrajectoryLikelihood(
        pendulum, refs(), ex.length_limits(), sigma_obs=np.float32(0.1),
        shooting_windows=np.int64(2), sigma_def=torch.tensor(0.1, dtype=torch.float32),
    )
    estimator = make_estimator(
        "CSVGD", tgt, n_particles=np.int64(4), seed=np.int32(1), stepsize=np.float32(0.02),
        kernel=RBFKernel(np.float16(0.5), bandwidth=None),
    )
    estimator.run(np.int64(1), record_every=np.int8(1), progress=False)
    assert torch.isfinite(estimator.particles).all()
    assert knn_kl(np.zeros((5, 1)) + np.arange(5)[:, None], np.arange(6.0), k=np.int64(2)) > -INF
