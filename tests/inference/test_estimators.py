"""Every estimator behind the shared interface, on a tiny pendulum and on a Gaussian."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from physid.inference.base import REGISTRY, History
from physid.inference.chapters.inference_synthetic import (
    SIZES,
    compare_estimators,
    length_limits,
    point_mass_model,
    simulate_references,
)
from physid.inference.estimators import ESTIMATORS, make_estimator
from physid.inference.likelihood import GaussianTarget, TrajectoryLikelihood

#: Each registered estimator's smoke-run options (the test table comes from the registry).
TINY = {name: dict(spec.smoke) for name, spec in REGISTRY.items()}


@pytest.fixture(scope="module")
def tiny_refs():
    return simulate_references(point_mass_model(compiled=False), np.array([[1.5, 2.0]]), 20)


def tiny_target(refs, name):
    multiple = REGISTRY[name].multiple_shooting
    windows, defects = (4, "constraint") if multiple else (1, "likelihood")
    return TrajectoryLikelihood(
        point_mass_model(compiled=False),
        refs,
        length_limits(),
        shooting_windows=windows,
        defects=defects,
    )


@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_interface_on_a_tiny_problem(tiny_refs, name):
    target = tiny_target(tiny_refs, name)
    estimator = make_estimator(name, target, n_particles=8, seed=3, **TINY[name])
    history = estimator.run(4, record_every=2, progress=False)
    assert isinstance(history, History) and history.name == name
    assert history.iterations == [0, 2, 4] and estimator.iteration == 4
    assert len(history.seconds) == 3 and history.seconds[-1] >= history.seconds[0]
    x = estimator.particles
    expected = 5 if estimator.single_chain else 8  # a chain reports its samples so far
    assert x.shape == (expected, target.dim) and torch.isfinite(x).all()
    theta = estimator.parameters()
    assert theta.shape == (expected, 2)
    assert np.all(theta >= 0.5 - 0.05) and np.all(theta <= 5.0 + 0.05)
    again = make_estimator(name, target, n_particles=8, seed=3, **TINY[name])
    again.run(4, progress=False)
    np.testing.assert_allclose(again.particles.numpy(), x.numpy(), rtol=1e-8, atol=1e-10)
    estimator.step()
    assert estimator.iteration == 5


@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_the_seed_fixes_every_draw_and_another_seed_changes_them(tiny_refs, name):
    target = tiny_target(tiny_refs, name)
    before = torch.get_rng_state()

    def final(seed):
        estimator = make_estimator(name, target, n_particles=8, seed=seed, **TINY[name])
        estimator.run(3, progress=False)
        return estimator.particles.numpy()

    a, b, c = final(0), final(0), final(1)
    np.testing.assert_array_equal(a, b)
    assert a.shape == c.shape and not np.allclose(a, c)
    assert torch.equal(torch.get_rng_state(), before)  # the caller's generator is untouched


def test_chain_estimators_start_at_the_centre_and_particle_methods_on_sobol(tiny_refs):
    target = tiny_target(tiny_refs, "SGLD")
    sgld = make_estimator("SGLD", target, n_particles=8)
    sgld.initialise()
    np.testing.assert_allclose(sgld.particles.numpy(), [[0.5, 0.5]])
    svgd = make_estimator("SVGD", target, n_particles=8, seed=5)
    svgd.initialise()
    np.testing.assert_allclose(
        svgd.particles.numpy(),
        length_limits().normalise(length_limits().sobol(8, seed=5)).numpy(),
    )


def test_emcee_raises_its_walkers_to_twice_the_dimension(tiny_refs):
    target = tiny_target(tiny_refs, "CSVGD")  # multiple shooting: parameters and states
    emcee = make_estimator("Emcee", target, n_particles=3, seed=1)
    emcee.run(2, progress=False)
    assert emcee.particles.shape == (2 * target.dim, target.dim)
    assert emcee.diagnostics() == {"walkers_requested": 3, "walkers": 2 * target.dim}
    assert len(torch.unique(emcee.particles[:, target.n_params :], dim=0)) == 2 * target.dim


def test_bad_estimator_arguments(tiny_refs):
    target = tiny_target(tiny_refs, "SVGD")
    with pytest.raises(ValueError, match="name must be one of"):
        make_estimator("HMC", target)
    with pytest.raises(ValueError, match="n_particles"):
        make_estimator("Emcee", target, n_particles=0)
    with pytest.raises(ValueError, match="n_particles"):
        make_estimator("SVGD", target, n_particles=0)
    with pytest.raises(ValueError, match="single-shooting"):
        make_estimator("BayesSim", tiny_target(tiny_refs, "CSVGD"))
    with pytest.raises(ValueError, match="n_iterations"):
        make_estimator("SVGD", target).run(-1, progress=False)
    with pytest.raises(ValueError, match="x0 must have 8 rows"):
        make_estimator("SVGD", target, n_particles=8, x0=target.initial(3))


GAUSS = GaussianTarget([0.4, 0.6], [[0.004, 0.001], [0.001, 0.002]])


@pytest.mark.parametrize(
    "name, options, iterations, tol",
    [
        ("SGLD", {"stepsize": 0.02}, 3000, 0.03),
        ("Emcee", {}, 300, 0.02),
        ("NUTS", {"warmup_steps": 100}, 400, 0.03),
    ],
)
def test_samplers_recover_a_gaussian_mean(name, options, iterations, tol):
    estimator = make_estimator(name, GAUSS, n_particles=400, seed=1, **options)
    estimator.run(iterations, progress=False)
    x = estimator.particles
    torch.testing.assert_close(x.mean(0), GAUSS.mean, atol=tol, rtol=0)
    assert torch.all(x.std(0) < 3 * GAUSS.cov.diagonal().sqrt())


def test_cem_collapses_onto_the_mode():
    estimator = make_estimator("CEM", GAUSS, n_particles=100, seed=0)
    estimator.run(30, progress=False)
    x = estimator.particles
    torch.testing.assert_close(x.mean(0), GAUSS.mean, atol=0.02, rtol=0)
    assert torch.all(x.std(0) < 0.2 * GAUSS.cov.diagonal().sqrt())


def test_bayessim_learns_a_posterior_near_the_truth():
    refs = simulate_references(point_mass_model(compiled=False), np.array([[1.5, 2.0]]), 100)
    target = tiny_target(refs, "BayesSim")
    estimator = make_estimator(
        "BayesSim",
        target,
        n_particles=100,
        seed=0,
        n_simulations=800,
        every=10,
        batch_size=100,
    )
    estimator.run(150, progress=False)
    theta = estimator.parameters()
    assert estimator.losses[-1] < estimator.losses[0]
    assert np.linalg.norm(np.median(theta, 0) - [1.5, 2.0]) < 0.5
    assert theta.std(0).max() < 1.0  # the prior's std is 1.3


def test_sweep_through_joblib():
    s = SIZES["quick"]
    runs = compare_estimators(s, ("SVGD", "CEM"), seeds=(0, 1), n_jobs=1)
    assert [(r.name, r.seed) for r in runs] == [("SVGD", 0), ("CEM", 0), ("SVGD", 1), ("CEM", 1)]
    assert all(np.isfinite(r.kl[-1]) and np.isfinite(r.mmd[-1]) for r in runs)
    with pytest.raises(ValueError, match="n_jobs"):
        compare_estimators(s, ("SVGD",), n_jobs=0)


def test_multimodal_runs_are_keyed_by_label_and_the_start_is_honoured():
    from physid.inference.chapters.inference_synthetic import (
        MultimodalRun,
        multimodal_experiment,
        with_sizes,
    )

    s = with_sizes(
        SIZES["quick"], n_particles=6, multimodal_iterations=2, multimodal_steps=20, windows=2
    )
    runs = (
        MultimodalRun("sum", "sum", 1.0),
        MultimodalRun("sum, on reference 1", "sum", 1.0, "reference 0"),
    )
    result = multimodal_experiment(s, seed=1, runs=runs)
    assert list(result.runs) == ["sum", "sum, on reference 1"]
    for label in result.runs:
        share = result.share_near(label)
        assert share.shape == (2,) and np.all((share >= 0) & (share <= 1))
        assert result.runs[label].final_theta.shape == (6, 2)
    with pytest.raises(ValueError, match="label"):
        result.share_near("product")


@pytest.mark.parametrize("max_noise", [0.05, 1e3])
def test_sgld_caps_the_noise_of_a_coordinate_without_gradient(max_noise):
    # Coordinate 1 is almost flat (variance 1e8): RMSprop's preconditioner 1 / (eps + √v)
    # would be ~1e5 there, and uncapped the chain jumps between the limits.
    flat = GaussianTarget([0.5, 0.5], [[0.004, 0.0], [0.0, 1e8]])
    sgld = make_estimator("SGLD", flat, seed=2, stepsize=3e-3, max_noise=max_noise)
    steps = np.diff(sgld.run(200, progress=False).particles[-1][:, 1])  # the chain
    if max_noise < 1:
        assert np.abs(steps).max() < 5 * max_noise  # a random walk of at most max_noise
        assert np.abs(steps).std() > 0.2 * max_noise
    else:
        assert np.abs(steps).max() > 0.3
